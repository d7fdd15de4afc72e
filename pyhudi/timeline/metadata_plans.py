"""Models of the table-service instants: compaction, clustering, clean and rollback.

Each class mirrors one Hudi Avro record (see :mod:`pyhudi.timeline.schemas`); attributes are the
record's fields in snake_case, with the schema's defaults (bound by
:func:`~pyhudi.timeline.metadata_base.avro_model`). The helpers answer the questions the file-system
view and the services ask of a plan (which file groups does it touch, which files does it delete),
so callers do not walk the nested records themselves.

Strategy class names in plans are stored verbatim for compatibility with Apache Hudi; pyhudi maps
them to its own registry and never imports code named in table metadata (DESIGN §4).
"""

from __future__ import annotations

from collections.abc import Iterator

from pyhudi.timeline import schemas
from pyhudi.timeline.metadata_base import AvroModel, avro_model

# ---------------------------------------------------------------------------------------------
# Compaction
# ---------------------------------------------------------------------------------------------


@avro_model(schemas.COMPACTION_OPERATION)
class CompactionOperation(AvroModel):
    """One file slice to compact: base file name (None for a log-only slice) + log file names."""

    base_instant_time: str | None
    delta_file_paths: list[str] | None
    data_file_path: str | None
    file_id: str | None
    partition_path: str | None
    metrics: dict[str, float] | None
    bootstrap_file_path: str | None


@avro_model(schemas.COMPACTION_STRATEGY)
class CompactionStrategy(AvroModel):
    """Execution strategy of a (log) compaction plan."""

    compactor_class_name: str | None
    strategy_params: dict[str, str] | None
    version: int | None


@avro_model(schemas.COMPACTION_PLAN)
class CompactionPlan(AvroModel):
    """``<t>.compaction.requested`` / ``<t>.logcompaction.requested``."""

    operations: list[CompactionOperation] | None
    extra_metadata: dict[str, str] | None
    version: int | None
    strategy: CompactionStrategy | None
    preserve_hoodie_metadata: bool | None
    missing_schedule_partitions: list[str] | None

    def file_groups(self) -> list[tuple[str, str]]:
        """(partition path, file id) of every file group the plan compacts, in plan order."""
        return [(op.partition_path or "", op.file_id or "") for op in self.operations or ()]


# ---------------------------------------------------------------------------------------------
# Clustering (HoodieRequestedReplaceMetadata wraps the plan)
# ---------------------------------------------------------------------------------------------


@avro_model(schemas.SLICE_INFO)
class SliceInfo(AvroModel):
    """One input file slice of a clustering group (paths as Hudi stores them; "" when absent)."""

    data_file_path: str | None
    delta_file_paths: list[str] | None
    file_id: str | None
    partition_path: str | None
    bootstrap_file_path: str | None
    version: int | None


@avro_model(schemas.CLUSTERING_GROUP)
class ClusteringGroup(AvroModel):
    """Slices rewritten together into ``num_output_file_groups`` new file groups."""

    slices: list[SliceInfo] | None
    metrics: dict[str, float] | None
    num_output_file_groups: int | None
    extra_metadata: dict[str, str] | None
    version: int | None


@avro_model(schemas.CLUSTERING_STRATEGY)
class ClusteringStrategy(AvroModel):
    """Execution strategy class name + its parameters (e.g. sort columns)."""

    strategy_class_name: str | None
    strategy_params: dict[str, str] | None
    version: int | None


@avro_model(schemas.CLUSTERING_PLAN)
class ClusteringPlan(AvroModel):
    """The clustering plan: input groups + execution strategy."""

    input_groups: list[ClusteringGroup] | None
    strategy: ClusteringStrategy | None
    extra_metadata: dict[str, str] | None
    version: int | None
    preserve_hoodie_metadata: bool | None
    missing_schedule_partitions: list[str] | None

    def slices(self) -> Iterator[SliceInfo]:
        for group in self.input_groups or ():
            yield from group.slices or ()

    def file_groups(self) -> list[tuple[str, str]]:
        """(partition path, file id) of every input file group (all are replaced on completion)."""
        return [(s.partition_path or "", s.file_id or "") for s in self.slices()]


@avro_model(schemas.REQUESTED_REPLACE_METADATA)
class RequestedReplaceMetadata(AvroModel):
    """``<t>.clustering.requested`` / ``<t>.replacecommit.requested``.

    For insert_overwrite / delete_partition Hudi writes this record with every field null; only
    clustering carries a plan.
    """

    operation_type: str | None
    clustering_plan: ClusteringPlan | None
    extra_metadata: dict[str, str] | None
    version: int | None

    @property
    def is_clustering(self) -> bool:
        """Whether this pending replace is a clustering (to be treated as pending clustering)."""
        return self.operation_type == "CLUSTER" or bool(self.clustering_plan and self.clustering_plan.input_groups)

    def file_groups(self) -> list[tuple[str, str]]:
        return self.clustering_plan.file_groups() if self.clustering_plan else []


# ---------------------------------------------------------------------------------------------
# Clean
# ---------------------------------------------------------------------------------------------


@avro_model(schemas.ACTION_INSTANT)
class ActionInstant(AvroModel):
    """An instant as the cleaner plan records it (earliest instant to retain)."""

    timestamp: str
    action: str
    state: str


@avro_model(schemas.CLEAN_FILE_INFO)
class CleanFileInfo(AvroModel):
    """A file the cleaner will delete (full path as Hudi stores it)."""

    file_path: str | None
    is_bootstrap_base_file: bool | None


@avro_model(schemas.CLEANER_PLAN)
class CleanerPlan(AvroModel):
    """``<t>.clean.requested`` (and ``.clean.inflight``, which repeats the plan)."""

    earliest_instant_to_retain: ActionInstant | None
    last_completed_commit_timestamp: str
    policy: str
    files_to_be_deleted_per_partition: dict[str, list[str]] | None
    version: int | None
    file_paths_to_be_deleted_per_partition: dict[str, list[CleanFileInfo]] | None
    partitions_to_be_deleted: list[str] | None
    extra_metadata: dict[str, str] | None

    def files_to_delete(self) -> dict[str, list[str]]:
        """Files per partition, from the current field or, for old plans, the deprecated one."""
        if self.file_paths_to_be_deleted_per_partition is not None:
            return {
                p: [f.file_path for f in infos if f.file_path]
                for p, infos in self.file_paths_to_be_deleted_per_partition.items()
            }
        return {p: list(files) for p, files in (self.files_to_be_deleted_per_partition or {}).items()}


@avro_model(schemas.CLEAN_PARTITION_METADATA)
class CleanPartitionMetadata(AvroModel):
    """What the cleaner did in one partition."""

    partition_path: str
    policy: str
    delete_path_patterns: list[str]
    success_delete_files: list[str]
    failed_delete_files: list[str]
    is_partition_deleted: bool | None


@avro_model(schemas.CLEAN_METADATA)
class CleanMetadata(AvroModel):
    """Completed ``<t>_<c>.clean``."""

    start_clean_time: str
    time_taken_in_millis: int
    total_files_deleted: int
    earliest_commit_to_retain: str
    last_completed_commit_timestamp: str
    partition_metadata: dict[str, CleanPartitionMetadata]
    version: int | None
    bootstrap_partition_metadata: dict[str, CleanPartitionMetadata] | None
    extra_metadata: dict[str, str] | None

    def deleted_files(self) -> dict[str, list[str]]:
        return {p: list(m.success_delete_files) for p, m in self.partition_metadata.items()}


# ---------------------------------------------------------------------------------------------
# Rollback
# ---------------------------------------------------------------------------------------------


@avro_model(schemas.INSTANT_INFO)
class InstantInfo(AvroModel):
    """An instant (requested time + action) named by a rollback plan or rollback metadata."""

    commit_time: str
    action: str


@avro_model(schemas.ROLLBACK_REQUEST)
class RollbackRequest(AvroModel):
    """Files to delete (and, table version ≤ 6, log blocks to roll back) for one file group."""

    partition_path: str
    file_id: str | None
    latest_base_instant: str | None
    files_to_be_deleted: list[str]
    log_blocks_to_be_deleted: dict[str, int] | None


@avro_model(schemas.ROLLBACK_PLAN)
class RollbackPlan(AvroModel):
    """``<t>.rollback.requested``."""

    instant_to_rollback: InstantInfo | None
    rollback_requests: list[RollbackRequest] | None
    version: int | None

    @property
    def instant_time(self) -> str | None:
        """Requested time of the instant being rolled back."""
        return self.instant_to_rollback.commit_time if self.instant_to_rollback else None


@avro_model(schemas.ROLLBACK_PARTITION_METADATA)
class RollbackPartitionMetadata(AvroModel):
    """What the rollback did in one partition."""

    partition_path: str
    success_delete_files: list[str]
    failed_delete_files: list[str]
    rollback_log_files: dict[str, int] | None
    log_files_from_failed_commit: dict[str, int] | None


@avro_model(schemas.ROLLBACK_METADATA)
class RollbackMetadata(AvroModel):
    """Completed ``<t>_<c>.rollback``."""

    start_rollback_time: str
    time_taken_in_millis: int
    total_files_deleted: int
    commits_rollback: list[str]
    partition_metadata: dict[str, RollbackPartitionMetadata]
    version: int | None
    instants_rollback: list[InstantInfo]

    def rolled_back_instants(self) -> list[str]:
        """Requested times of the rolled-back instants (from either of Hudi's two lists)."""
        seen = list(self.commits_rollback)
        seen += [i.commit_time for i in self.instants_rollback if i.commit_time not in seen]
        return seen


__all__ = [
    "CompactionOperation",
    "CompactionStrategy",
    "CompactionPlan",
    "SliceInfo",
    "ClusteringGroup",
    "ClusteringStrategy",
    "ClusteringPlan",
    "RequestedReplaceMetadata",
    "ActionInstant",
    "CleanFileInfo",
    "CleanerPlan",
    "CleanPartitionMetadata",
    "CleanMetadata",
    "InstantInfo",
    "RollbackRequest",
    "RollbackPlan",
    "RollbackPartitionMetadata",
    "RollbackMetadata",
]

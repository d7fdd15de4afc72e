"""Timeline instant metadata: commit models, and the decoder the timeline calls for any instant.

What is in an instant file (table version 8, timeline layout 2: all Avro containers; layout 1 /
table version 6: commit metadata as JSON, table-service instants as Avro):

==================  =================================  ====================================
action              requested / inflight               completed
==================  =================================  ====================================
commit/deltacommit  empty / workload CommitMetadata    CommitMetadata
replacecommit       RequestedReplaceMetadata / Commit  ReplaceCommitMetadata
clustering          RequestedReplaceMetadata / empty   (completes as replacecommit)
compaction          CompactionPlan / empty             (completes as commit) CommitMetadata
logcompaction       CompactionPlan / empty             (completes as deltacommit)
clean               CleanerPlan / CleanerPlan          CleanMetadata
rollback            RollbackPlan / empty               RollbackMetadata
savepoint, restore, indexing: not modelled, decoded to plain dicts
==================  =================================  ====================================

:func:`decode_instant_metadata` picks the model from (action, state) and the format from the
content, so the timeline module never needs to know which layout wrote a file.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pyhudi.errors import MetadataError
from pyhudi.timeline import schemas
from pyhudi.timeline.metadata_base import (  # noqa: F401 (SCHEMA_KEY, decode_commit_summary: re-exported)
    SCHEMA_KEY,
    AvroModel,
    avro_model,
    decode_commit_summary,
    detect_format,
    model_for_record,
    read_container,
    read_json,
)
from pyhudi.timeline.metadata_plans import (
    ActionInstant,
    CleanerPlan,
    CleanFileInfo,
    CleanMetadata,
    CleanPartitionMetadata,
    ClusteringGroup,
    ClusteringPlan,
    ClusteringStrategy,
    CompactionOperation,
    CompactionPlan,
    CompactionStrategy,
    InstantInfo,
    RequestedReplaceMetadata,
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
    SliceInfo,
)



@avro_model(schemas.RUNTIME_STATS)
class RuntimeStats(AvroModel):
    """Milliseconds spent by the write handle (informational)."""

    total_scan_time: int | None
    total_create_time: int | None
    total_upsert_time: int | None


@avro_model(schemas.WRITE_STAT)
class WriteStat(AvroModel):
    """What one write task did to one file group.

    ``path`` is relative to the table base path (``partition/fileName``; the log file for a log
    append). For a log append, ``base_file`` names the slice's base file ("" for a log-only slice)
    and ``log_files`` the log files written. ``prev_commit`` is the previous base instant, or the
    string ``"null"`` for a new file group (Hudi's convention).
    """

    file_id: str | None
    path: str | None
    prev_commit: str | None
    num_writes: int | None
    num_deletes: int | None
    num_update_writes: int | None
    total_write_bytes: int | None
    total_write_errors: int | None
    partition_path: str | None
    total_log_records: int | None
    total_log_files: int | None
    total_updated_records_compacted: int | None
    num_inserts: int | None
    total_log_blocks: int | None
    total_corrupt_log_block: int | None
    total_rollback_blocks: int | None
    file_size_in_bytes: int | None
    log_version: int | None
    log_offset: int | None
    base_file: str | None
    log_files: list[str] | None
    cdc_stats: dict[str, int] | None
    prev_base_file: str | None
    min_event_time: int | None
    max_event_time: int | None
    runtime_stats: RuntimeStats | None
    total_log_files_compacted: int | None
    total_log_read_time_ms: int | None
    total_log_size_compacted: int | None
    temp_path: str | None
    num_updates: int | None


@avro_model(schemas.COMMIT_METADATA)
class CommitMetadata(AvroModel):
    """Completed ``.commit`` / ``.deltacommit`` (also completed compaction / log compaction).

    Readers (hudi-rs included) take the table schema from ``extra_metadata["schema"]`` of the latest
    completed commit, and the files of a commit from its write stats. Every read fetches these
    records, so their containers carry a JSON copy too (a cold read then loads no Avro decoder).
    """

    __avro_json_copy__ = True

    partition_to_write_stats: dict[str, list[WriteStat]] | None
    compacted: bool | None
    extra_metadata: dict[str, str] | None
    version: int | None
    operation_type: str | None

    @classmethod
    def from_write_stats(
        cls,
        write_stats: Iterable[WriteStat],
        *,
        operation_type: str,
        schema: str | None = None,
        extra_metadata: dict[str, str] | None = None,
        compacted: bool = False,
    ) -> CommitMetadata:
        """Group stats by partition (in first-seen order) and record the writer schema."""
        by_partition: dict[str, list[WriteStat]] = {}
        for stat in write_stats:
            by_partition.setdefault(stat.partition_path or "", []).append(stat)
        extra = dict(extra_metadata or {})
        if schema is not None:
            extra[SCHEMA_KEY] = schema
        return cls(
            partition_to_write_stats=by_partition,
            compacted=compacted,
            extra_metadata=extra,
            operation_type=operation_type,
        )

    @property
    def schema(self) -> str | None:
        """The writer's Avro schema JSON (``extraMetadata["schema"]``), if recorded."""
        return (self.extra_metadata or {}).get(SCHEMA_KEY)

    def write_stats(self) -> Iterator[WriteStat]:
        """Every write stat, partition by partition."""
        for stats in (self.partition_to_write_stats or {}).values():
            yield from stats

    def partitions(self) -> list[str]:
        """Partition paths written by this commit."""
        return list(self.partition_to_write_stats or {})

    def partition_file_ids(self) -> dict[str, set[str]]:
        """File ids written, per partition (the unit of OCC conflict detection)."""
        out: dict[str, set[str]] = {}
        for partition, stats in (self.partition_to_write_stats or {}).items():
            ids = {s.file_id for s in stats if s.file_id}
            if ids:
                out[partition] = ids
        return out

    def file_ids(self) -> set[str]:
        """All file ids written (empty ids of workload profiles are skipped)."""
        return {s.file_id for s in self.write_stats() if s.file_id}

    def written_paths(self) -> list[str]:
        """Paths (relative to the base path) of the files this commit wrote, in stat order."""
        return [s.path for s in self.write_stats() if s.path]


@avro_model(schemas.REPLACE_COMMIT_METADATA)
class ReplaceCommitMetadata(CommitMetadata):
    """Completed ``.replacecommit`` (clustering, insert_overwrite, delete_partition).

    The file groups in ``partition_to_replace_file_ids`` are hidden from readers once this instant
    completes; the cleaner deletes them later.
    """

    partition_to_replace_file_ids: dict[str, list[str]] | None

    def replaced_file_groups(self) -> set[tuple[str, str]]:
        """(partition path, file id) of every replaced file group."""
        return {(p, f) for p, ids in (self.partition_to_replace_file_ids or {}).items() for f in ids}


# --- dispatch ---------------------------------------------------------------------------------

REQUESTED, INFLIGHT, COMPLETED = "REQUESTED", "INFLIGHT", "COMPLETED"
_STATES = (REQUESTED, INFLIGHT, COMPLETED)

#: action -> model per state (REQUESTED, INFLIGHT, COMPLETED); actions absent here decode to dicts
_MODELS: dict[str, tuple[type[AvroModel], type[AvroModel], type[AvroModel]]] = {
    "commit": (CommitMetadata, CommitMetadata, CommitMetadata),
    "deltacommit": (CommitMetadata, CommitMetadata, CommitMetadata),
    "replacecommit": (RequestedReplaceMetadata, ReplaceCommitMetadata, ReplaceCommitMetadata),
    "clustering": (RequestedReplaceMetadata, RequestedReplaceMetadata, ReplaceCommitMetadata),
    "compaction": (CompactionPlan, CompactionPlan, CommitMetadata),
    "logcompaction": (CompactionPlan, CompactionPlan, CommitMetadata),
    "clean": (CleanerPlan, CleanerPlan, CleanMetadata),
    "rollback": (RollbackPlan, RollbackPlan, RollbackMetadata),
}

# Records Hudi reads interchangeably by field name (a replacecommit inflight holds a plain
# HoodieCommitMetadata workload profile; the replace model is a superset).
_COMMIT_FAMILY = {CommitMetadata, ReplaceCommitMetadata}


def decode_instant_metadata(action: str, state: str, data: bytes) -> object | None:
    """Decode the content of one instant file.

    Args:
        action: timeline action (``commit``, ``deltacommit``, ``replacecommit``, ``clustering``,
            ``compaction``, ``logcompaction``, ``clean``, ``rollback``, ``savepoint``, ``restore``,
            ``indexing``).
        state: ``REQUESTED``, ``INFLIGHT`` or ``COMPLETED``.
        data: the file's bytes.

    Returns:
        The model for (action, state) (see the module table), a plain dict for actions pyhudi does
        not model, or None for empty content (e.g. ``.deltacommit.requested``, 1.x inflights).

    Raises:
        MetadataError: naming the action and state, if the bytes are neither a decodable Avro
            container nor a JSON object, or hold a record of an unexpected kind.
    """
    action_l = action.lower()
    state_u = state.upper()
    if state_u not in _STATES:
        raise MetadataError(f"{action} instant: unknown state {state!r} (expected one of {', '.join(_STATES)})")
    models = _MODELS.get(action_l)
    expected = models[_STATES.index(state_u)] if models else None
    fmt = detect_format(data)
    if fmt == "empty":
        return None
    where = f"{action_l} instant ({state_u})"
    try:
        if fmt == "avro":
            record_name, record = read_container(data)
            if record is None:
                return None
            if expected is None:
                return record
            return _model_for(expected, record_name, where).from_dict(record)
        if fmt == "json":
            obj = read_json(data)
            return obj if expected is None else expected.from_dict(obj)
    except MetadataError as exc:
        raise MetadataError(f"{where}: {exc}") from exc
    raise MetadataError(f"{where}: content is neither an Avro container nor JSON (starts with {bytes(data[:8])!r})")


def _model_for(expected: type[AvroModel], record_name: str, where: str) -> type[AvroModel]:
    """The model to decode an Avro record with: the expected one unless the file says otherwise."""
    found = model_for_record(record_name)
    if found is None:
        raise MetadataError(f"unexpected Avro record {record_name!r}, expected {expected.__avro_schema__['name']}")
    if found is expected or (found in _COMMIT_FAMILY and expected in _COMMIT_FAMILY):
        return expected
    return found  # a known record of another kind: trust the writer schema embedded in the file


def encode_instant_metadata(metadata: AvroModel | None) -> bytes:
    """Bytes of an instant file for timeline layout 2 (empty for None, e.g. a requested commit)."""
    return b"" if metadata is None else metadata.to_avro_bytes()


__all__ = [
    "decode_commit_summary",
    "SCHEMA_KEY",
    "REQUESTED",
    "INFLIGHT",
    "COMPLETED",
    "AvroModel",
    "RuntimeStats",
    "WriteStat",
    "CommitMetadata",
    "ReplaceCommitMetadata",
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
    "decode_instant_metadata",
    "encode_instant_metadata",
]

"""A write transaction: one instant being written, shippable to the workers that write its files.

The Spark writer (and any distributed engine) runs the write in phases (CONTRACTS C2):
the driver ``begin``\\ s an instant (:class:`~pyhudi.write.client.WriteClient`), executors call
:meth:`WriteTxn.write_rows` on their share of the rows — prepare, de-duplicate, sort, write
log/base files — and return :class:`~pyhudi.write.handle.WriteStatus` records, and the driver
commits exactly the statuses it received. A :class:`WriteTxn` therefore holds only plain,
picklable settings: the base URI, ``hoodie.properties``, the instant, the operation, the
schema and the write options — no open files, no threads, no table handle.

Write tokens (``<taskPartitionId>-<stageId>-<attemptId>``, the tail of every file name) keep
the files of two tasks — or two attempts of one task — apart even when they write the same
file group and family in the same instant. Only the files named by the statuses passed to
commit become part of the commit; the others (failed or duplicate attempts) are deleted at
commit time through their markers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from pyhudi.config.families import ColumnFamily, default_family
from pyhudi.config.table import TIMELINE_HISTORY_PATH, TableConfig
from pyhudi.errors import ConfigError, SchemaError
from pyhudi.fsview.view import FileSystemView
from pyhudi.index.bucket import SPLIT_ROWS, bucket_ids, integer_keys_and_bucket_ids
from pyhudi.keygen import partition_layout
from pyhudi.metadata_table import first_write_guard
from pyhudi.storage.fs import Storage
from pyhudi.storage.naming import WriteToken
from pyhudi.timeline.instant import Action
from pyhudi.timeline.lock_provider import create_lock
from pyhudi.timeline.timeline import Timeline
from pyhudi.write import prepare
from pyhudi.write.handle import FileGroupWriteTask, WriteStatus
from pyhudi.write.clustering_guard import reject_planned_overwrite, reject_planned_updates
from pyhudi.write.overwrite import INSERT_OVERWRITE_TABLE, is_overwrite, plan_overwrite, static_partitions
from pyhudi.write.plan import (
    BUCKET_COLUMN,
    PARTITION_COLUMN,
    RECORD_KEY,
    file_group_routes,
    plan_bucketed,
    plan_simple_index,
    touched_partitions,
)

OPERATIONS = {"upsert": "UPSERT", "insert": "INSERT", "bulk_insert": "BULK_INSERT", "delete": "DELETE",
              "insert_overwrite": "INSERT_OVERWRITE", "insert_overwrite_table": "INSERT_OVERWRITE_TABLE"}
DEFAULT_STAGE = 1


def check_operation(operation: str) -> str:
    if operation not in OPERATIONS:
        raise ConfigError(f"unknown write operation {operation!r}: expected one of {', '.join(OPERATIONS)}")
    return operation


def write_action(config: TableConfig) -> Action:
    """Copy-on-write tables commit ``commit`` instants, merge-on-read tables ``deltacommit``."""
    return Action.COMMIT if config.table_type == "COPY_ON_WRITE" else Action.DELTACOMMIT


@dataclass
class WriteTxn:
    """One write instant and everything a worker needs to write files for it (picklable)."""

    base_uri: str
    config: TableConfig
    instant: str
    operation: str
    schema: pa.Schema
    options: dict[str, str] = field(default_factory=dict)
    #: the declared families in effect (C3: ``Table.column_families``, read from the timeline,
    #: which may be one ALTER ahead of ``hoodie.properties`` after a crash); None = the config's
    declared_families: dict[str, ColumnFamily] | None = None
    #: when an ALTER added each family (``SchemaHistory.families_added``): the planner's view
    #: cuts a family's slices as readers do (a full-row file older than the family is not one of
    #: its files), so an update's record positions name a block the family's reads meet
    family_since: dict[str, str] | None = None

    def __post_init__(self) -> None:
        check_operation(self.operation)

    # ------------------------------------------------------------------ settings
    @property
    def action(self) -> Action:
        """``replacecommit`` for overwrites (:mod:`pyhudi.write.overwrite`), else :func:`write_action`."""
        return Action.REPLACECOMMIT if is_overwrite(self.operation) else write_action(self.config)

    @property
    def operation_type(self) -> str:
        """Hudi's ``WriteOperationType`` name recorded in the commit metadata."""
        return OPERATIONS[self.operation]

    @property
    def storage(self) -> Storage:
        """The table's storage, with the store's options when the write carries them (a task in
        another process — a Spark worker — reaches the same store; later ``Storage(base_uri)``
        calls there reuse them)."""
        memo = self.__dict__.get("_storage_memo")
        if memo is not None and memo[0] == (self.base_uri, self.options):
            return memo[1]
        from pyhudi.storage.s3 import split_storage_options

        storage = Storage(self.base_uri, options=split_storage_options(self.options)[0] or None)
        self.__dict__["_storage_memo"] = ((self.base_uri, dict(self.options)), storage)  # (a write asks often)
        return storage

    @property
    def families(self) -> dict[str, ColumnFamily]:
        """The declared families, or the implicit default family holding every column."""
        memo = self.__dict__.get("_families_memo")  # (the fields it is built from, kept: compared by identity)
        if memo is not None and memo[0] is self.declared_families and memo[1] is self.schema and memo[2] is self.config:
            return memo[3]
        declared = self.declared_families if self.declared_families is not None else self.config.column_families
        if declared:
            families = declared
        else:
            family = default_family(self.schema.names, self.config.record_key_fields, self.config.ordering_field)
            families = {family.name: family}
        self.__dict__["_families_memo"] = (self.declared_families, self.schema, self.config, families)
        return families

    def timeline(self) -> Timeline:
        config = self.config
        settings = {**config.props, **self.options}
        return Timeline(self.storage, timeline_dir=config.timeline_dir, layout_version=config.layout_version,
                        timezone=config.timezone, history_path=config.get(TIMELINE_HISTORY_PATH),
                        lock=create_lock(self.storage, settings),
                        before_first_write=first_write_guard(self.storage, config, settings)).load()

    # ------------------------------------------------------------------ phases
    def prepare(self, data: Any) -> pa.Table:
        """Validate ``data`` against the schema and add record keys, partition paths and bucket ids.

        Every check on the input happens here, before any file is written.
        """
        config = self.config
        key_fields, partition_fields = config.record_key_fields, config.partition_fields
        rows = prepare.conform(prepare.to_arrow_table(data, self.schema), self.schema, key_fields, partition_fields)
        implicit = set(key_fields) | set(partition_fields)
        if self.operation != "delete" and not [c for c in rows.column_names if c not in implicit]:
            raise SchemaError(
                "input has only record key and partition columns: nothing to write (use delete to delete)"
            )
        if _keys_with_buckets(config, rows):  # (one integer key field, many rows: both in one step)
            keys, ids = integer_keys_and_bucket_ids(rows.column(key_fields[0]), config.num_buckets)
        else:
            keys, ids = prepare.record_keys(rows, key_fields), None
        paths = prepare.partition_paths(rows, partition_fields, config.hive_style_partitioning, partition_layout(config))
        if ids is not None:
            buckets = pa.array(ids)
        elif config.num_buckets is not None:
            hash_fields = tuple(config.bucket_hash_fields)
            # one key field: its record key is the string the bucket hash is defined on
            columns = [keys] if hash_fields == tuple(key_fields) and len(key_fields) == 1 else [
                rows.column(f) for f in hash_fields]
            buckets = pa.array(bucket_ids(columns, config.num_buckets))
        else:
            buckets = pa.array(np.zeros(rows.num_rows, dtype=np.int64))
        rows = rows.append_column(RECORD_KEY, keys)
        return rows.append_column(PARTITION_COLUMN, paths).append_column(BUCKET_COLUMN, buckets)

    def plan_tasks(self, prepared: pa.Table, write_token: str | None = None,
                   timeline: Timeline | None = None) -> list[FileGroupWriteTask]:
        """One task per file group the prepared rows touch.

        ``write_token`` names every file of the tasks (one task attempt writing several file
        groups); without it each file group gets ``<index>-1-0`` (a driver-planned write whose
        tasks are file groups). ``timeline``: a listing taken since the instant was begun.
        """
        if write_token is None:
            def token_for(index: int) -> str:
                return str(WriteToken(index, DEFAULT_STAGE, 0))
        else:
            WriteToken.parse(write_token)

            def token_for(index: int) -> str:
                return write_token
        timeline = timeline if timeline is not None else self.timeline()
        if is_overwrite(self.operation):
            reject_planned_overwrite(self, _overwritten_partitions(self, prepared), timeline)
            return plan_overwrite(self, prepared, token_for)  # new file groups only: nothing to look up
        view = FileSystemView(self.storage, timeline, partition_layout(self.config).depth,
                              family_since=self.family_since)
        touched = touched_partitions(prepared.column(PARTITION_COLUMN))
        bucketed = self.config.num_buckets is not None  # (appends new log files: their sizes unused)
        existing = {(g.partition_path, g.file_id): g for g in view.file_groups(touched, log_sizes=not bucketed)}
        if bucketed:
            return plan_bucketed(self, prepared, existing, token_for, replaced=view.replaced,
                                 replace_written=view.replace_written)
        # Copy-on-write small files take a new base file version: safe only when one planner sees
        # every row (several executor tasks padding one small file would each write a version).
        small_files = write_token is None or self.config.table_type != "COPY_ON_WRITE"
        tasks = plan_simple_index(self, prepared, existing, token_for, timeline=timeline if small_files else None)
        reject_planned_updates(self, tasks, timeline)  # (updates of groups under pending clustering)
        return tasks

    def routes(self, rows: Any) -> pa.Array:
        """Executor side, before a shuffle: the file group each row of ``rows`` goes to, for a
        table without a bucket index (:func:`~pyhudi.write.plan.file_group_routes`); rows with
        equal routes must reach one task. Bucketed tables route by bucket instead."""
        if self.config.num_buckets is not None:
            raise ConfigError("a bucketed table routes rows by bucket, not by file group lookup")
        prepared = self.prepare(rows)
        existing = {}
        if prepared.num_rows and self.operation in ("upsert", "delete"):
            view = FileSystemView(self.storage, self.timeline(), partition_layout(self.config).depth)
            touched = touched_partitions(prepared.column(PARTITION_COLUMN))
            existing = {(g.partition_path, g.file_id): g for g in view.file_groups(touched)}
        return file_group_routes(self, prepared, existing)

    def write_rows(self, rows: Any, task_id: int = 0, attempt: int = 0,
                   stage: int = DEFAULT_STAGE) -> list[WriteStatus]:
        """Executor side: write ``rows`` (any subset of the commit's rows) for this instant.

        ``task_id`` / ``attempt`` / ``stage`` form the write token of every file written, so two
        tasks (or two attempts of one task) never write the same file. Returns the statuses to
        pass to :meth:`WriteClient.commit <pyhudi.write.client.WriteClient.commit>`.
        """
        token = str(WriteToken(int(task_id), int(stage), int(attempt)))
        prepared = self.prepare(rows)
        return [status for task in self.plan_tasks(prepared, token) for status in task.run()]


def _keys_with_buckets(config: TableConfig, rows: pa.Table) -> bool:
    """Whether the record keys and bucket ids of ``rows`` come from
    :func:`~pyhudi.index.bucket.integer_keys_and_bucket_ids`: a bucketed table hashing its one
    integer record key field, and enough rows to split over two cores."""
    key_fields = tuple(config.record_key_fields)
    return (config.num_buckets is not None and len(key_fields) == 1 and rows.num_rows >= SPLIT_ROWS
            and tuple(config.bucket_hash_fields) == key_fields
            and pa.types.is_integer(rows.schema.field(key_fields[0]).type))


def _overwritten_partitions(txn: WriteTxn, prepared: pa.Table) -> set[str] | None:
    """The partitions an overwrite replaces (None: every partition of the table)."""
    if txn.operation == INSERT_OVERWRITE_TABLE:
        return None
    present = touched_partitions(prepared.column(PARTITION_COLUMN))
    return present | set(static_partitions(txn.options, txn.config))

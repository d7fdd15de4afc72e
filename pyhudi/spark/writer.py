"""Writing a DataFrame to a Hudi table: the data source writer and ``pyhudi.spark.write``.

Phases (contract C2), mapped onto Spark's write protocol:

- ``writer()`` — driver side (a Spark Python worker): open the table, or create it from the
  DataFrame schema and Hudi's options on the first write; check the DataFrame's columns against
  the table before anything is written; ``WriteClient.begin`` (rollback of failed writes, the
  requested + inflight instant). The returned writer carries the picklable :class:`WriteTxn`;
- ``write()`` — one call per Spark task on an executor: ``WriteTxn.write_rows`` with the task's
  rows (dedupe, sort, log/base files), the write token ``<partition>-<stage>-<attempt>``, the
  heartbeat kept fresh while it writes; returns the write statuses as the commit message;
- ``commit()`` — driver: ``WriteClient.commit`` with the statuses of the successful tasks
  (files of failed or duplicate attempts are dropped through their markers);
- ``abort()`` — driver, when a task or the job failed: ``WriteClient.abort`` rolls the instant
  back (every file written for it is deleted; nothing became visible).

``pyhudi.spark.write`` first distributes the DataFrame so each task holds whole file groups
(:mod:`pyhudi.spark.bucketing`); a plain ``df.write.format("pyhudi")`` takes the partitioning as
it comes: several tasks may then write log files to one file group (still correct), and a bulk
insert writes log files instead of base files, since two tasks must never both create a file
group's base file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from pyhudi.config.families import families_from_properties, is_family_key
from pyhudi.errors import ConfigError, FileNameError, HudiError, SchemaError, SplitFileGroupError, TimelineError
from pyhudi.spark import options as opt
from pyhudi.spark.types import arrow_schema
from pyhudi.spark.workers import explains_worker_imports
from pyhudi.storage.naming import parse_data_file_name
from pyhudi.timeline.instant import Action
from pyhudi.write.handle import WriteStatus
from pyhudi.write.markers import delete_markers
from pyhudi.write.overwrite import OVERWRITE_LOG_FILES, is_overwrite
from pyhudi.config.concurrency import HEARTBEAT_INTERVAL_MS, HEARTBEAT_TOLERABLE_MISSES
from pyhudi.write.rollback import HEARTBEAT_DIR, Heartbeat
from pyhudi.write.txn import WriteTxn

#: Internal option set by ``pyhudi.spark.write``: every Spark task holds whole file groups.
GROUPED = "pyhudi.write.grouped"


@dataclass
class HudiCommitMessage(WriterCommitMessage):
    """What one Spark task wrote: its write statuses (possibly none), or the pyhudi error that
    stopped it (a deterministic failure: the task completes so that every task has finished
    writing before the driver rolls the instant back)."""

    statuses: list[WriteStatus] = field(default_factory=list)
    rows: int = 0
    error: HudiError | None = None


# --------------------------------------------------------------------------- late files
def rolled_back(txn: WriteTxn) -> bool:
    """Whether ``txn``'s instant is no longer being written: gone, completed (this task attempt
    was not committed) or claimed by a pending rollback."""
    timeline = txn.timeline()
    instant = timeline.get(txn.instant)
    if instant is None or not instant.is_inflight:
        return True
    for pending in timeline.pending():
        if pending.action == Action.ROLLBACK:
            plan = timeline.read_metadata(pending.as_requested())
            if getattr(plan, "instant_time", None) == txn.instant:
                return True
    return False


def discard_instant_files(storage: Any, instant: str, relpaths: Iterable[str] | None = None) -> list[str]:
    """Delete data files written for a dead ``instant`` (``relpaths``, or every data file named
    after it), its markers and its heartbeat. Spark does not wait for killed or straggling tasks
    before aborting, so files can appear after the rollback listed the markers."""
    if relpaths is None:
        relpaths = []
        for info in storage.walk_files(""):
            if info.path.startswith(".hoodie/"):
                continue
            try:
                if parse_data_file_name(info.path.rpartition("/")[2]).instant == instant:
                    relpaths.append(info.path)
            except FileNameError:
                continue
    deleted = [r for r in relpaths if storage.delete(r)]
    delete_markers(storage, instant)
    storage.delete(f"{HEARTBEAT_DIR}/{instant}")
    return deleted


# --------------------------------------------------------------------------- table on first write
def _table_settings(options: Mapping[str, str]) -> dict[str, Any]:
    """``create_table`` arguments from Hudi's write options."""
    record_key = opt.RECORD_KEY.get(options)
    if not record_key:
        raise ConfigError(f"creating a table needs the record key: option {opt.RECORD_KEY.key}")
    from pyhudi.storage.s3 import split_storage_options

    extra = {**opt.table_property_options(options), **split_storage_options(options)[0]}  # (never persisted)
    return {
        "record_key": record_key,
        "partition_fields": opt.PARTITION_PATH.get(options) or (),
        "table_type": opt.TABLE_TYPE.get(options).upper(),
        "ordering_field": opt.PRECOMBINE.get(options),
        "options": extra,
    }


def _check_matches_table(table: Any, options: Mapping[str, str]) -> None:
    """Table-shaping options given to a write must agree with the existing table."""
    checks = [
        (opt.RECORD_KEY, lambda: tuple(table.record_key_fields)),
        (opt.PARTITION_PATH, lambda: tuple(table.partition_fields)),
        (opt.PRECOMBINE, lambda: table.config.ordering_field),
        (opt.TABLE_TYPE, lambda: table.config.table_type),
    ]
    for key, actual in checks:
        given = key.get(options, None)
        if given is None:
            continue
        if key.type is tuple and given == () and actual() == ():
            continue
        if given != actual():
            raise ConfigError(f"option {key.key}={key.format(given)} does not match the table at {table.path} "
                              f"({key.format(actual())})")
    buckets = options.get("hoodie.bucket.index.num.buckets")
    if buckets is not None and str(table.num_buckets) != buckets.strip():
        raise ConfigError(f"option hoodie.bucket.index.num.buckets={buckets} does not match the table at "
                          f"{table.path} ({table.num_buckets}); the bucket count of a table cannot change")
    given = families_from_properties({k: v for k, v in options.items() if is_family_key(k)})
    existing = {name.lower(): fam for name, fam in table.column_families.items()}
    for name, family in given.items():  # Spark lower-cases option keys: compare names case-insensitively
        have = existing.get(name.lower())
        if have is None or (set(have.columns), have.ordering_field) != (set(family.columns), family.ordering_field):
            now = ", ".join(f"{f.name}={f.property_value}" for f in table.column_families.values()) or "none"
            raise ConfigError(f"option {family.property_key}={family.property_value} does not match the table's "
                              f"families ({now}); change families with ALTER TABLE / Table.alter")


def open_or_create(path: str, schema: pa.Schema, options: Mapping[str, str], overwrite: bool) -> Any:
    """The table at ``path``; created from ``schema`` and the options when there is none yet."""
    import pyhudi
    from pyhudi.errors import TableExistsError, TableNotFoundError

    try:
        table = opt.open_table(path, options)
    except TableNotFoundError:
        settings = _table_settings(options)
        # Spark declares computed columns NOT NULL freely; only record keys are never null in a
        # table (partial writes and families leave other columns null for some rows).
        schema = pa.schema([f.with_nullable(f.nullable or f.name not in settings["record_key"]) for f in schema])
        try:
            return pyhudi.create_table(path, schema, **settings)
        except TableExistsError:  # created concurrently: use it
            table = opt.open_table(path, options)
    _check_matches_table(table, options)
    return table


def check_columns(table: Any, schema: pa.Schema, operation: str) -> None:
    """The DataFrame's columns against the table, before anything is written (names the column)."""
    from pyhudi.write import prepare

    empty = schema.empty_table()
    prepare.conform(empty, table.schema, table.record_key_fields, table.partition_fields)
    implicit = set(table.record_key_fields) | set(table.partition_fields)
    if operation != "delete" and not [c for c in schema.names if c not in implicit]:
        raise SchemaError("input has only record key and partition columns: nothing to write (use delete to delete)")


# --------------------------------------------------------------------------- the data source writer
def begin(path: str, schema: StructType, options: Mapping[str, str], overwrite: bool) -> HudiDataSourceWriter:
    """Driver side of ``df.write.format("pyhudi")``: table, checks, begun instant."""
    from pyhudi.write.client import WriteClient

    operation = opt.write_operation(options, overwrite)  # mode("overwrite"): insert_overwrite_table
    data_schema = arrow_schema(schema)
    table = open_or_create(path, data_schema, options, overwrite)
    check_columns(table, data_schema, operation)
    write_options = {k: v for k, v in options.items() if k.startswith("hoodie.") and k not in opt.WRITE_ONLY_KEYS}
    client = WriteClient(table, options=write_options)
    txn = client.begin(operation)
    # This Python worker may be reused or killed at any time after planning: its heartbeat thread
    # stops here (the file stays fresh); the tasks beat while they write; commit/abort remove it.
    client.detach(txn)
    grouped = options.get(GROUPED, "false") == "true"
    task_txn = txn
    if operation == "bulk_insert" and not grouped and table.num_buckets is not None:
        task_txn = dataclasses.replace(txn, operation="insert")  # log files: no base-file collisions
    if is_overwrite(operation) and not grouped and table.num_buckets is not None:
        task_txn = dataclasses.replace(txn, options={**txn.options, OVERWRITE_LOG_FILES.key: "true"})  # same reason
    return HudiDataSourceWriter(path, txn, task_txn, grouped)


class HudiDataSourceWriter(DataSourceArrowWriter):
    """Writes one instant: tasks write files (``write``), the driver commits or aborts."""

    def __init__(self, path: str, txn: WriteTxn, task_txn: WriteTxn, grouped: bool = False) -> None:
        self.path = path
        self.txn = txn
        self.task_txn = task_txn
        self.grouped = grouped  # rows routed by pyhudi.spark.write: each file group in one task

    def write(self, iterator: Iterator[pa.RecordBatch]) -> HudiCommitMessage:
        from pyspark import TaskContext

        txn = self.task_txn
        # Beat from the start: consuming the iterator runs the upstream stage (a join, a UDF...),
        # and the instant must stay alive meanwhile. The beat is left behind detached (a long
        # timeout): the write goes on in other tasks and the driver's commit.
        heartbeat = Heartbeat(txn.storage, txn.instant, HEARTBEAT_INTERVAL_MS.get(txn.options),
                              tied_to_process=False, misses=HEARTBEAT_TOLERABLE_MISSES.get(txn.options)).start()
        try:
            batches = [b for b in iterator if b.num_rows]
            if not batches:
                return HudiCommitMessage([], 0)
            rows = pa.Table.from_batches(batches)
            context = TaskContext.get()
            task_id, stage, attempt = (0, 1, 0) if context is None else (
                context.partitionId(), context.stageId(), context.attemptNumber())
            try:
                statuses = txn.write_rows(rows, task_id=task_id, attempt=attempt, stage=stage)
            except HudiError as exc:  # bad data: retrying cannot help; the driver rolls back
                return HudiCommitMessage([], rows.num_rows, exc)
        except BaseException:
            # the input failed (another task, a UDF): Spark may abort the job and the driver clean
            # up before this beat is left — a beat of an instant already rolled back goes too
            heartbeat.untie()
            if rolled_back(txn):
                txn.storage.delete(heartbeat.relpath)
            raise
        finally:
            if not heartbeat.detached:
                heartbeat.untie()
        if rolled_back(txn):  # the job failed (or this attempt lost) while this task was writing
            discard_instant_files(txn.storage, txn.instant, [s.relpath for s in statuses])
            raise TimelineError(f"instant {txn.instant} was rolled back or committed while Spark task "
                                f"{task_id} (attempt {attempt}) wrote to it; its files are deleted")
        return HudiCommitMessage(statuses, rows.num_rows)

    def _client(self):
        import pyhudi
        from pyhudi.write.client import WriteClient

        return WriteClient(opt.open_table(self.path, self.txn.options), options=self.txn.options)

    def commit(self, messages: list[HudiCommitMessage | None]) -> None:
        errors = [m.error for m in messages if m is not None and m.error is not None]
        if errors:
            self.abort(messages)
            raise errors[0]
        statuses = [s for m in messages if m is not None for s in m.statuses]
        try:
            self._client().commit(self.txn, statuses)  # a failed commit is rolled back
        except SplitFileGroupError as exc:
            if self.grouped:
                raise
            raise SplitFileGroupError(
                f"{exc}. df.write.format('pyhudi') writes the DataFrame's partitions as they are; "
                "pyhudi.spark.write(df, path, ...) routes the rows of each file group to one task"
            ) from None

    def abort(self, messages: list[HudiCommitMessage | None]) -> None:
        self._client().abort(self.txn)
        discard_instant_files(self.txn.storage, self.txn.instant)


# --------------------------------------------------------------------------- pyhudi.spark.write
@explains_worker_imports  # routing and writing run pyhudi in Spark workers
def write(df: DataFrame, path: str, operation: str = "upsert", mode: str = "append", **options: Any) -> str | None:
    """Write ``df`` to the Hudi table at ``path`` with each file group written by one Spark task.

    ``options`` are Hudi's write options (``hoodie.*``, e.g. ``**{"hoodie.datasource.write.recordkey.field":
    "id"}``); they create the table on the first write (family names keep their case here, unlike
    Spark's case-insensitive ``.option()``). Returns the committed instant (None when nothing was
    committed).
    """
    import pyhudi
    from pyhudi.spark.bucketing import route_by_bucket, route_by_file_group
    from pyhudi.spark.conf import write_settings
    from pyhudi.spark.datasource import FORMAT, ensure_registered

    if mode not in ("append", "overwrite"):
        raise ConfigError(f"mode must be 'append' or 'overwrite', got {mode!r}")
    text = {k: v if isinstance(v, str) else str(v) for k, v in options.items()}
    text[opt.OPERATION.key] = opt.OPERATION.parse(operation)
    ensure_registered(df.sparkSession)
    table = open_or_create(path, arrow_schema(df.schema), opt.lowered(text), mode == "overwrite")
    check_columns(table, arrow_schema(df.schema), operation)
    before = _last_instant(table)
    if table.num_buckets is not None:
        df, _ = route_by_bucket(df, table.config.bucket_hash_fields, table.num_buckets, table.partition_fields)
        text[GROUPED] = "true"
    else:  # one task per file group: copy-on-write groups get one new base version each
        from pyhudi.write.client import WriteClient

        hoodie = {k: v for k, v in text.items() if k.startswith("hoodie.") and k not in opt.WRITE_ONLY_KEYS}
        operation_name = opt.write_operation(opt.lowered(text), mode == "overwrite")
        df = route_by_file_group(df, WriteClient(table, options=hoodie).unbegun(operation_name))
        text[GROUPED] = "true"
    with write_settings(df.sparkSession):  # batch limits without a per-row size check
        df.write.format(FORMAT).mode(mode).options(**text).save(path)
    after = _last_instant(opt.open_table(path, text))
    return after if after != before else None


def _last_instant(table: Any) -> str | None:
    commits = table.active_timeline().commits_timeline()
    return commits[-1].requested_time if commits else None

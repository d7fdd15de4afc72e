"""Reading a Hudi table into Spark: the data source reader and ``pyhudi.spark.read``.

Planning runs on the driver: ``pushFilters`` keeps the filters the kernel applies exactly
(:mod:`pyhudi.spark.filters`), ``partitions`` plans the scan (contract C1, ``plan_scan``) with
them — partition pruning and file skipping happen there — and returns one Spark partition per
kernel :class:`ReadTask` (a file group, or a key range of a large one). The plan pins its
snapshot instant, so a partition read later (a cached plan, a retried task) reads the same data.
Executors run ``ReadTask.batches()`` and cast each batch to the exact Arrow form of the Spark
schema. A user-given subset schema is the projection: families owning none of its columns
contribute only their record keys (DESIGN §4).

Spark limitation (4.1-4.3, measured): Spark keeps ONE pushed-down reader per loaded relation
(``PythonDataSourceV2.readInfo``), so a query scanning the same loaded DataFrame twice with
different filters (a self-join, a union of differently filtered branches) reads both branches
with the filters of the last planned one. Load the table once per branch (each ``load()`` is its
own relation), or disable ``spark.sql.python.filterPushdown.enabled`` for such queries.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition

from pyhudi.config.datasource import JVM_MERGE, NATIVE_SCAN
from pyhudi.errors import ConfigError
from pyhudi.read.plan import normalize_time, plan_scan
from pyhudi.read.split import SPLIT_ROWS
from pyhudi.spark import options as opt
from pyhudi.spark.filters import claim, to_condition
from pyhudi.spark.merge_scan import merge_frame, merge_split
from pyhudi.spark.native import (
    FILE_GROUPS,
    file_groups_option,
    native_frame,
    selected_groups,
    split_scan,
    union_all,
)
from pyhudi.spark.types import cast_batch
from pyhudi.spark.workers import explains_worker_imports


@dataclass(frozen=True)
class ReadSettings:
    """The query a read options map asks for, validated."""

    query_type: str = "snapshot"
    as_of: str | None = None
    begin: str | None = None
    end: str | None = None
    columns: tuple[str, ...] | None = None
    split_rows: str | None = None  # hoodie.pyhudi.read.split.rows: large file groups → several partitions
    file_groups: str | None = None  # FILE_GROUPS: the file groups left to this source by pyhudi.spark.read
    storage: tuple[tuple[str, str], ...] = ()  # hoodie.pyhudi.s3.* options: the store the table is on

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ReadSettings:
        query_type = opt.QUERY_TYPE.get(options)
        as_of = opt.AS_OF_INSTANT.get(options)
        begin = opt.BEGIN_INSTANT.get(options)
        end = opt.END_INSTANT.get(options)
        as_of = normalize_time(as_of, opt.AS_OF_INSTANT.key) if as_of else None
        begin = normalize_time(begin, opt.BEGIN_INSTANT.key) if begin else None
        end = normalize_time(end, opt.END_INSTANT.key) if end else None
        if query_type == "incremental":
            if begin is None:
                raise ConfigError(f"an incremental query needs {opt.BEGIN_INSTANT.key}")
            if as_of is not None:
                raise ConfigError(f"{opt.AS_OF_INSTANT.key} cannot be combined with an incremental query "
                                  f"(use {opt.END_INSTANT.key})")
        elif begin is not None or end is not None:
            key = opt.BEGIN_INSTANT.key if begin is not None else opt.END_INSTANT.key
            raise ConfigError(f"{key} is only used by incremental queries "
                              f"({opt.QUERY_TYPE.key}=incremental), not {query_type}")
        columns = opt.COLUMNS.get(options)
        if columns is not None and not columns:
            raise ConfigError(f"option {opt.COLUMNS.key!r} names no column")
        from pyhudi.storage.s3 import split_storage_options

        storage = tuple(sorted(split_storage_options(options)[0].items()))
        return cls(query_type, as_of, begin, end, columns, options.get(SPLIT_ROWS.key), options.get(FILE_GROUPS.key),
                   storage)

    @property
    def schema_instant(self) -> str | None:
        """The instant whose table schema the query returns (C3: ``table.schema_at``)."""
        return self.end if self.query_type == "incremental" else self.as_of


def table_schema_at(table: Any, instant: str | None) -> pa.Schema:
    """The table schema in effect at ``instant`` (contract C3 when present; else the latest)."""
    schema_at = getattr(table, "schema_at", None)
    return schema_at(instant) if schema_at is not None else table.schema


def latest_completion(path: str | Any, options: Mapping[str, str] | None = None) -> str | None:
    """The completion time of the table's last completed instant (None for an empty timeline);
    ``path``: the table's path, or the opened table."""
    table = opt.open_table(path, options) if isinstance(path, str) else path
    last = table.active_timeline().last_completed()
    return (last.completion_time or last.requested_time) if last is not None else None


class HudiInputPartition(InputPartition):
    """One Spark partition: one kernel read task (None: the single empty partition of an empty plan)."""

    def __init__(self, index: int, task: Any) -> None:
        super().__init__(task)
        self.index = index

    def __repr__(self) -> str:
        return f"HudiInputPartition({self.index})"


class HudiDataSourceReader(DataSourceReader):
    """Plans on the driver, reads kernel tasks on the executors (see the module docstring)."""

    def __init__(self, path: str, settings: ReadSettings, columns: Sequence[str], target: pa.Schema) -> None:
        self.path = path
        self.settings = settings
        self.columns = list(columns)
        self.target = target
        self.filters: list[tuple] = []
        self.instant: str | None = None  # the snapshot the partitions were planned at

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:
        kernel, rest = claim(filters, self.columns, self.target)
        self.filters.extend(kernel)
        return rest

    def partitions(self) -> list[HudiInputPartition]:
        table = opt.open_table(self.path, dict(self.settings.storage))
        s = self.settings
        plan = plan_scan(table, columns=self.columns, filters=self.filters or None, as_of=s.as_of,
                         query_type=s.query_type, begin=s.begin, end=s.end,
                         options={SPLIT_ROWS.key: s.split_rows} if s.split_rows else None)
        self.instant = plan.instant
        tasks = plan.tasks
        if s.file_groups is not None:  # the others are read by Spark's Parquet reader (pyhudi.spark.native)
            wanted = selected_groups(s.file_groups)
            tasks = [t for t in tasks if (t.partition_path, t.file_id) in wanted]
        if not tasks:
            return [HudiInputPartition(0, None)]  # Spark turns an empty list into one default partition
        return [HudiInputPartition(i, task) for i, task in enumerate(tasks)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        task = partition.value
        if task is None:
            return
        for batch in task.batches():
            if batch.num_rows:
                yield cast_batch(batch, self.target)


class HudiScanReader(HudiDataSourceReader):
    """The reader of a read Spark plans with filter pushdown off
    (``spark.sql.python.filterPushdown.enabled``: false by default, turned on by
    ``pyhudi.spark.register`` and ``pyhudi.spark.conf.configure``). Spark refuses to plan a reader
    that implements ``pushFilters`` then; this one does not, and Spark filters the rows itself."""

    pushFilters = DataSourceReader.pushFilters


def planned_without_pushdown() -> bool:
    """Whether Spark is planning the current read with filter pushdown off.

    A Python source is not told: PySpark's planning worker
    (``pyspark.sql.worker.plan_data_source_read``) reads the setting into its local
    ``enable_pushdown`` before it calls ``DataSource.reader()``, then fails the query if the reader
    implements ``pushFilters`` and the setting is off. That local is read off the call stack;
    any other caller (the filter pushdown worker, a PySpark that names it otherwise) gets False,
    so the pushdown reader — and at worst Spark's own error naming the setting."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_filename.endswith("plan_data_source_read.py") and "enable_pushdown" in code.co_varnames:
            return frame.f_locals.get("enable_pushdown") is False
        frame = frame.f_back
    return False


@explains_worker_imports  # load() plans the schema in a Spark worker
def read(spark: SparkSession, path: str, columns: Sequence[str] | None = None,
         filters: Sequence[Sequence[Any]] | None = None, **options: Any) -> DataFrame:
    """A DataFrame of the Hudi table at ``path``, pinned to the snapshot it was called at (Hudi's
    read options as keyword arguments, e.g. ``**{"as.of.instant": "..."}``).

    ``columns`` prunes families like ``Table.read(columns=...)``; ``filters`` are kernel filters
    ``[(column, op, value)]``: they prune partitions and files when the scan is planned, and are
    given to Spark as a condition that Spark applies (pushing it into both reads below).

    File groups whose rows are final are read by Spark's own Parquet reader, the others by the
    ``pyhudi`` Python source, in one DataFrame (:mod:`pyhudi.spark.native`;
    ``hoodie.pyhudi.read.spark.native=false``: everything through the Python source, as
    ``spark.read.format("pyhudi")``, whose Python API cannot return a native scan).
    """
    from pyhudi.spark.datasource import ensure_registered

    ensure_registered(spark)
    options = {k: v if isinstance(v, str) else str(v) for k, v in options.items()}
    native_key = next((k for k in options if k.lower() == NATIVE_SCAN.key), None)
    native = NATIVE_SCAN.parse(options.pop(native_key) if native_key else None)
    merge_key = next((k for k in options if k.lower() == JVM_MERGE.key), None)
    merge = JVM_MERGE.parse(options.pop(merge_key) if merge_key else None)
    settings = ReadSettings.from_options(opt.lowered(options))
    pin = settings.query_type != "incremental" and settings.as_of is None
    table = opt.open_table(path, options) if pin or native else None  # (once: the snapshot and the native plan)
    if pin:
        pinned = latest_completion(table)  # every action on the DataFrame reads this snapshot
        if pinned is not None:
            options[opt.AS_OF_INSTANT.key] = pinned
            settings = ReadSettings.from_options(opt.lowered(options))
    condition = to_condition(filters or [])
    read_columns = None
    if columns is not None:
        if isinstance(columns, str) or not columns:
            raise ConfigError(f"columns must be a non-empty list of column names, got {columns!r}")
        columns = list(columns)
        # filter columns are read too (and dropped after filtering): Spark resolves the condition
        read_columns = list(dict.fromkeys([*columns, *(f[0] for f in filters or [])]))
        options[opt.COLUMNS.key] = ",".join(read_columns)

    def python_source(restrict: Mapping[str, str]) -> DataFrame:
        """The ``pyhudi`` source over the file groups ``restrict`` names (built only when used:
        each option is a round trip to the JVM)."""
        return spark.read.format("pyhudi").options(**{**options, **restrict}).load(path)

    df = _native_union(spark, table, settings, read_columns, filters, python_source, merge) if native else None
    if df is None:
        df = python_source({})
    if condition is not None:
        df = df.filter(condition)
    if columns is not None and len(read_columns) != len(columns):  # (both branches return read_columns)
        df = df.select(*[f"`{c}`" for c in columns])
    return df


def _native_union(spark: SparkSession, table: Any, settings: ReadSettings, columns: list[str] | None,
                  filters: Sequence[Sequence[Any]] | None, python_source: Any, merge: bool = True) -> DataFrame | None:
    """Spark's Parquet scan of the final file groups ∪ the Python source over the others; None
    when no file group is read natively (the Python source alone)."""
    from pyhudi.spark.types import select, spark_schema

    schema = spark_schema(table_schema_at(table, settings.schema_instant), table.record_key_fields)
    if columns is not None:
        schema = select(schema, columns)
    split = split_scan(table, schema.names, [tuple(f) for f in filters or ()], as_of=settings.as_of,
                       query_type=settings.query_type)
    merged = merge_split(spark, split, schema) if split.python and merge else []
    if not split.native and not merged:
        return None
    frames = [native_frame(spark, split.native, schema)] if split.native else []
    if merged:
        frames.append(merge_frame(spark, merged, schema))
    if split.python:
        frames.append(python_source(file_groups_option(split.python)))
    return union_all(frames)

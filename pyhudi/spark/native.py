"""Spark's own Parquet reader for file groups whose rows are final (issue 15 item 5).

A Python data source cannot read faster than Spark's own Parquet scan: every row crosses from a
Python worker to the JVM. But a file group whose latest slice is one base file with nothing to
merge (no log file; or a ``read_optimized`` query, which ignores logs) holds its rows exactly as
stored, so Spark can read that file itself. :func:`split_scan` plans the scan with the kernel's
planner (contract C1: the snapshot, partition pruning and file skipping by the query's filters)
and sorts its file groups:

- **native**: after the kernel's own reduction of a task's families (a full-row base file serving
  every family is one part), one family supplies every non-key column the query reads, its slice
  is a base file without logs, every other family is read only for its keys (row existence) and its
  base file holds exactly the same keys in the same layout (the kernel's key fingerprint, DESIGN
  §4), the file has no soft-delete column, stores every column read with the table's type, and
  that type is one Spark reads from Parquet as the Python source returns it;
- **python**: everything else (log files to merge, several families to join, schema evolution
  inside the file, incremental queries, remote storage) goes through the ``pyhudi`` Python source,
  restricted to those file groups (:data:`FILE_GROUPS`) — except those the JVM merge reader
  takes (:func:`pyhudi.spark.merge_scan.merge_split`).

A whole row of a family table is native only where one full-row base file serves every family (a
full compaction, or a bulk insert with ``hoodie.pyhudi.insert.full.row``): Spark cannot zip the
aligned base files of several families. Measured on Scenario W (1M rows, 5 families, local[2]):
joining the five native family scans on (file, ``_metadata.row_index``) costs 4–6x Spark's scan
of the same rows (sort-merge or shuffled hash join: every row crosses a shuffle), more than the
Python source; Spark has no positional zip of two scans, and ``RDD.zip`` runs in Python workers.

A file group with log files is not native: Spark's reader cannot skip the rows a log block
rewrites. Measured (``bench/bench_spark_logs.py``, 1M rows, 10% updated by one family): the base
files minus the updated keys or positions by a broadcast anti-join cost 1.2-2.1x the scan's CPU
without whole-stage codegen (Spark's default for 101 columns: every extra operator copies each
row), and with codegen forced on the union with the updated rows still 1.45-1.65x
(docs/benchmarks.md, Spark). Such file groups are merged by position inside the JVM instead,
where they can be (:mod:`pyhudi.spark.merge_scan`), else by the Python source.

:func:`native_frame` reads the native files with ``spark.read.parquet`` under the exact Spark
schema of the Python source (record keys NOT NULL, everything else nullable), partition columns
the files do not store added from the path; :func:`pyhudi.spark.read` unions both. Filters given
to ``pyhudi.spark.read`` prune both plans and are applied by Spark on both branches (Spark pushes
them into its Parquet scan and to the Python source).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pyhudi.config.keys import ConfigKey
from pyhudi.read.family_reader import OpenedBase, file_key
from pyhudi.read.plan import ScanPlan, plan_scan
from pyhudi.read.sources import SOFT_DELETE
from pyhudi.read.task import ReadTask
from pyhudi.schema import stored_type

FILE_GROUPS = ConfigKey(
    "hoodie.pyhudi.read.file.groups", str, None,
    "Internal: the file groups (JSON list of [partition path, file id]) the Python source reads when "
    "pyhudi.spark.read routes the others to Spark's Parquet reader.",
    register=False,  # (set by pyhudi.spark.read only: not a user option)
)
_GLOB = frozenset("*?[]{}\\")  # Hadoop reads these in a path as a glob pattern


@dataclass(frozen=True)
class NativeFile:
    """One base file Spark reads itself, with the values of partition columns it does not store."""

    uri: str
    partition_path: str
    file_id: str
    partition_values: tuple[tuple[str, Any], ...] = ()


@dataclass
class ScanSplit:
    """Which file groups of one planned scan Spark reads natively and which the Python source reads."""

    plan: ScanPlan | None
    native: list[NativeFile] = field(default_factory=list)
    python: list[tuple[str, str]] = field(default_factory=list)
    """(partition path, file id) of the file groups left to the Python source."""
    reasons: dict[tuple[str, str], str] = field(default_factory=dict)
    """Why each Python file group is not native (for ``explain``)."""
    merged: list[tuple[str, str]] = field(default_factory=list)
    """(partition path, file id) of the file groups the JVM merge reader reads (:mod:`pyhudi.spark.merge_scan`)."""

    def explain(self) -> str:
        lines = [f"native (Spark Parquet): {len(self.native)} file groups; JVM merge: {len(self.merged)}; "
                 f"python source: {len(self.python)}"]
        lines += [f"  python {p or '.'}/{f}: {self.reasons[(p, f)]}" for p, f in self.python]
        return "\n".join(lines)


def split_scan(table: Any, columns: Sequence[str], filters: Sequence[tuple] | None, *, as_of: str | None,
               query_type: str) -> ScanSplit:
    """Plan the scan and sort its file groups into native and Python ones (see the module docstring)."""
    if query_type == "incremental":
        return ScanSplit(None)  # every file group through the kernel's window logic
    plan = plan_scan(table, columns=list(columns), filters=list(filters) if filters else None, as_of=as_of,
                     query_type=query_type)
    split = ScanSplit(plan)
    storage = table.storage
    for task in plan.tasks:
        group = (task.partition_path, task.file_id)
        reason = "remote storage" if not storage.is_local else _verdict(task, plan.schema)
        if reason is None:
            base = _reading_part(task).file_slice.base_file
            uri = storage.full_path(base.relpath)
            if any(c in _GLOB for c in uri):
                reason = "path holds glob characters"
            else:
                values = tuple((k, v.as_py()) for k, v in (task.partition_values or {}).items()
                               if k in plan.schema.names)
                split.native.append(NativeFile(uri, *group, values))
                continue
        split.python.append(group)
        split.reasons[group] = reason
    return split


_VERDICTS: dict[tuple, str | None] = {}
_VERDICTS_MAX = 4096


def _verdict(task: ReadTask, output: pa.Schema) -> str | None:
    """:func:`_why_not_native`, remembered per file group state: a read of an unchanged table
    opens no base file on the driver (measured: 0.25-0.45 ms per file group of Scenario W,
    most of ``split_scan``). The key holds everything the verdict depends on — the output
    schema, the query, each family's columns, whether it has log files and its base file's
    identity (path, size, modification time: the metadata cache's footer key)."""
    key = _verdict_key(task, output)
    if key is not None and key in _VERDICTS:
        return _VERDICTS[key]
    with ExitStack() as files:  # (footers come from the process's metadata cache when known)
        reason = _why_not_native(task, output, files)
    if key is not None:
        if len(_VERDICTS) >= _VERDICTS_MAX:
            _VERDICTS.clear()
        _VERDICTS[key] = reason
    return reason


def _verdict_key(task: ReadTask, output: pa.Schema) -> tuple | None:
    """The inputs of :func:`_why_not_native` for ``task``; None when a base file's identity is
    not fully known (no size or modification time listed): not remembered."""
    parts = []
    for part in task.families:
        base = part.file_slice.base_file
        if base is not None and (base.size is None or base.mtime_ns is None):
            return None
        parts.append((tuple(f.name for f in part.scan.fields), part.own_columns,
                      None if base is None else file_key(task.storage, base), bool(part.file_slice.log_files)))
    return output, task.settings.read_optimized, tuple(task.partition_values or ()), tuple(parts)


def _reading_part(task: ReadTask):
    """The family part supplying the task's non-key columns (the first part when none does)."""
    reading = [p for p in task.families if any(f.name in p.own_columns for f in p.scan.fields)]
    return reading[0] if reading else next(p for p in task.families if not p.file_slice.is_empty)


def _why_not_native(task: ReadTask, output: pa.Schema, files: ExitStack) -> str | None:
    """None when the task's rows are its reading family's base file rows as stored; else why not."""
    read_optimized = task.settings.read_optimized
    parts = [p for p in task.families if not p.file_slice.is_empty or any(f.name in p.own_columns for f in p.scan.fields)]
    reading = [p for p in parts if any(f.name in p.own_columns for f in p.scan.fields)]
    if len(reading) > 1:
        return "several families to join"
    lead = reading[0] if reading else parts[0]
    for part in parts:
        if part.file_slice.base_file is None:
            return "a family has no base file"
        if part.file_slice.log_files and not read_optimized:
            return "log files to merge"
    opened = OpenedBase(task.storage, lead.file_slice.base_file.relpath, files,
                        file_key=file_key(task.storage, lead.file_slice.base_file))
    metadata = opened.parquet.metadata
    stored = metadata.schema.to_arrow_schema()
    if SOFT_DELETE in stored.names:
        return "soft-delete column"
    rebuilt = set(task.partition_values or {})
    for f in output:
        if f.name in rebuilt:
            continue
        if f.name not in stored.names:
            return f"column {f.name!r} not stored in the base file"
        if stored_type(stored.field(f.name).type) != stored_type(f.type) or not spark_reads(f.type):
            return f"column {f.name!r} needs conversion"
    for part in parts:
        if part is lead or part.file_slice.base_file.relpath == lead.file_slice.base_file.relpath:
            continue
        other = OpenedBase(task.storage, part.file_slice.base_file.relpath, files,
                           file_key=file_key(task.storage, part.file_slice.base_file))
        mine, theirs = opened.key_fingerprint(), other.key_fingerprint()
        if mine is None or theirs is None or mine != theirs:
            return "families not proven to hold the same keys"
    return None


def spark_reads(type_: pa.DataType) -> bool:
    """Types Spark's Parquet reader returns as the Python source does (nested types and
    unsigned or nanosecond values are left to the Python source's exact casts)."""
    t = type_
    if pa.types.is_timestamp(t):
        return t.unit in ("us", "ms") and t.tz in (None, "UTC", "+00:00")
    return (pa.types.is_boolean(t) or pa.types.is_signed_integer(t) or pa.types.is_floating(t) and not pa.types.is_float16(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_date32(t) or pa.types.is_decimal128(t))


# --------------------------------------------------------------------------- the DataFrame
def native_frame(spark: SparkSession, files: Sequence[NativeFile], schema: T.StructType) -> DataFrame:
    """The rows of ``files`` with exactly ``schema`` (the Python source's schema of the read).

    One Parquet scan per set of partition values the files do not store — one in all for a table
    that stores its partition columns — each projected by one ``selectExpr``: building the
    DataFrame costs a few py4j round trips, not one per column (measured: ~0.1 ms each, ~400 for
    21 columns built as ``Column`` objects, 50 ms of planning before Spark starts reading)."""
    by_values: dict[tuple, list[str]] = {}
    for f in files:
        by_values.setdefault(f.partition_values, []).append(f.uri)
    return union_all([_frame(spark, uris, dict(values), schema) for values, uris in by_values.items()])


def union_all(frames: Sequence[DataFrame]) -> DataFrame:
    """One DataFrame of ``frames`` (same schema, by position)."""
    out = frames[0]
    for other in frames[1:]:
        out = out.union(other)
    return out


def partition_value(f: T.StructField, value: Any) -> Column:
    """A partition column the files do not store, from its path value, nullable as the column is
    in the Python source (``nullif(value, NULL)``: Spark 4 declares ``CASE WHEN true THEN value``
    NOT NULL, which made the native read's schema differ from the Python source's)."""
    return F.nullif(F.lit(value).cast(f.dataType), F.lit(None)).alias(f.name)


_PLACEHOLDER = T.StructField("__pyhudi_row", T.IntegerType(), True)
"""The one column a scan reading no stored column (a count) asks for: absent from the files, so
Spark reads no column chunk, yet counts every row (and infers no schema from footers)."""


def _frame(spark: SparkSession, uris: list[str], values: dict[str, Any], schema: T.StructType) -> DataFrame:
    stored = T.StructType([T.StructField(f.name, f.dataType, True) for f in schema.fields if f.name not in values])
    read = stored if stored.fields else T.StructType([_PLACEHOLDER])
    reader = spark.read.schema(read)
    paths = java_strings(spark, uris)
    df = DataFrame(reader._jreader.parquet(paths), spark) if paths is not None else reader.parquet(*uris)
    return project(df, read, values, schema)


_SEPARATOR = "\x00"  # (no path holds it; a column name that does is passed as a list)


def java_strings(spark: SparkSession, values: Sequence[str]) -> Any | None:
    """``values`` as one JVM ``String[]`` made in one py4j round trip: py4j hands a Python list
    to the JVM element by element, one round trip (30-70 µs) each — a read of 101 columns over
    1,000 files would pay 1,100. None (pass the list) for a session without a JVM in this
    process (Spark Connect), no values, or a value holding the separator."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None or not values or any(_SEPARATOR in v for v in values):
        return None
    from py4j.java_gateway import JavaClass

    split = JavaClass("org.apache.commons.lang3.StringUtils", jvm._gateway_client)  # (a Spark dependency)
    return split.splitByWholeSeparatorPreserveAllTokens(_SEPARATOR.join(values), _SEPARATOR)


def project(df: DataFrame, stored: T.StructType, values: dict[str, Any], schema: T.StructType) -> DataFrame:
    """``df`` (columns ``stored``) as exactly ``schema``: partition columns from ``values``,
    record keys declared NOT NULL where ``stored`` has them nullable; ``df`` itself when it is
    already that. One ``selectExpr`` of SQL text (a constant number of round trips to the JVM);
    ``Column`` objects only for a partition value SQL text cannot spell exactly here, or when the
    session reads back-quoted names as regular expressions."""
    if not values and [(f.name, f.dataType, f.nullable) for f in stored.fields] == \
            [(f.name, f.dataType, f.nullable) for f in schema.fields]:
        return df
    nullable = {f.name for f in stored.fields if f.nullable}
    spark = df.sparkSession
    exprs = [_sql_column(f, values, f.name in nullable) for f in schema.fields]
    if all(e is not None for e in exprs) and not _regex_names(spark):
        text = java_strings(spark, exprs)
        return DataFrame(df._jdf.selectExpr(text), spark) if text is not None else df.selectExpr(*exprs)
    return df.select(*[_column(f, values, f.name in nullable) for f in schema.fields])


REGEX_NAMES = "spark.sql.parser.quotedRegexColumnNames"


def _regex_names(spark: SparkSession) -> bool:
    """Whether Spark's SQL parser reads a back-quoted name as a regular expression (a session
    setting, off by default): then ```c(1)+``` in SQL text would select ``c1``."""
    return str(spark.conf.get(REGEX_NAMES, "false")).lower() == "true"


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _sql_column(f: T.StructField, values: dict[str, Any], nullable: bool) -> str | None:
    """The SQL text of one output column (see :func:`_column`); None: no exact SQL spelling."""
    name = _quoted(f.name)
    if f.name in values:
        value = sql_literal(values[f.name], f.dataType)
        return None if value is None else f"nullif({value}, NULL) AS {name}"  # (see partition_value)
    if f.nullable or not nullable:
        return name
    return f"coalesce({name}, {_sql_zero(f.dataType)}) AS {name}"


def sql_literal(value: Any, data_type: T.DataType) -> str | None:
    """SQL text of ``value`` cast to ``data_type``, exact for the values a partition path holds;
    None for those spelled otherwise (timestamps, non-finite floats): :func:`partition_value`."""
    if value is None:
        text = "NULL"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, str):  # (UTF-8 bytes: no quoting or escape rule to get wrong)
        text = f"CAST(X'{value.encode().hex()}' AS STRING)"
    elif isinstance(value, (bytes, bytearray)):
        text = f"X'{bytes(value).hex()}'"
    elif isinstance(value, dt.datetime):
        return None
    elif isinstance(value, dt.date):
        text = f"DATE'{value.isoformat()}'"
    elif isinstance(value, decimal.Decimal) and value.is_finite():
        text = f"{value:f}BD"
    elif isinstance(value, float) and math.isfinite(value):
        text = f"{value!r}D"
    else:
        return None
    return f"CAST({text} AS {data_type.simpleString()})"


def _sql_zero(data_type: T.DataType) -> str:
    """A non-null SQL value of ``data_type`` (record key types): it only declares NOT NULL."""
    if isinstance(data_type, T.TimestampType):
        return "TIMESTAMP'1970-01-01 00:00:00'"
    if isinstance(data_type, T.TimestampNTZType):
        return "TIMESTAMP_NTZ'1970-01-01 00:00:00'"
    return sql_literal(_zero(data_type), data_type)


def _column(f: T.StructField, values: dict[str, Any], nullable: bool = True) -> Column:
    if f.name in values:
        return partition_value(f, values[f.name])
    column = F.col(_quoted(f.name))
    if not f.nullable and nullable:  # record keys are never null in a base file; this only declares it NOT NULL
        return F.coalesce(column, F.lit(_zero(f.dataType)).cast(f.dataType)).alias(f.name)
    return column


def _zero(data_type: T.DataType) -> Any:
    if isinstance(data_type, T.StringType):
        return ""
    if isinstance(data_type, T.BinaryType):
        return bytearray()
    if isinstance(data_type, T.BooleanType):
        return False
    if isinstance(data_type, T.DecimalType):
        return decimal.Decimal(0)
    if isinstance(data_type, T.DateType):
        return dt.date(1970, 1, 1)
    if isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        return dt.datetime(1970, 1, 1)
    return 0


def file_groups_option(groups: Sequence[tuple[str, str]]) -> dict[str, str]:
    """The Python source's option restricting it to ``groups``."""
    return {FILE_GROUPS.key: json.dumps([list(g) for g in groups])}


def selected_groups(raw: str | None) -> set[tuple[str, str]] | None:
    """The file groups of :data:`FILE_GROUPS` (None: every file group)."""
    if raw is None:
        return None
    return {(p, f) for p, f in json.loads(raw)}

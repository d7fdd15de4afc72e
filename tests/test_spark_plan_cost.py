"""What ``pyhudi.spark.read`` costs the driver before Spark starts reading (issue 15 item 5: a
0.3 s read spent ~50 ms planning): round trips to the JVM that do not grow with the columns or
files read, one Parquet scan per set of partition values the files do not store, no Spark job
(footer reads) while the DataFrame is built, and no base file opened again to plan a read of an
unchanged table. Counts, never times.
"""

from __future__ import annotations

import collections
import datetime as dt
import decimal
import gc
import threading

import pyarrow as pa
import pytest
from py4j import clientserver
from py4j import protocol as proto
from pyspark.sql import types as T

import pyhudi
import pyhudi.spark
from pyhudi.read import family_reader
from pyhudi.spark import native
from pyhudi.spark.native import split_scan, sql_literal


def wide_schema(columns: int) -> pa.Schema:
    return pa.schema([pa.field("id", pa.int64(), False), *[(f"c{i}", pa.float64()) for i in range(columns)]])


def wide_rows(ids, columns: int) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), **{f"c{i}": [k * 1.5 + i for k in ids] for i in range(columns)}},
                    schema=wide_schema(columns))


def sorted_rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def table_rows(table: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


class RoundTrips:
    """Counts the commands the calling thread sends to the JVM through py4j to build something.

    Not counted: py4j's releases of proxies that earlier code dropped (``m`` memory commands,
    sent whenever the garbage they belong to is freed) and other threads' commands (a session
    that earlier tests used may still have some at work): in the whole suite they came to ~140
    commands around one build."""

    def __init__(self, monkeypatch) -> None:
        self.count = 0
        self.kinds: collections.Counter = collections.Counter()  # (what was counted: for a failure's message)
        send = clientserver.ClientServerConnection.send_command
        caller = threading.get_ident()

        def counted(connection, command):
            if threading.get_ident() == caller and not command.startswith(proto.MEMORY_COMMAND_NAME):
                self.count += 1
                self.kinds[" ".join(command.split("\n")[:3])[:60]] += 1
            return send(connection, command)

        monkeypatch.setattr(clientserver.ClientServerConnection, "send_command", counted)

    def of(self, build) -> tuple[int, object]:
        gc.collect()  # (proxies of earlier objects freed meanwhile would send their release here)
        gc.disable()
        try:
            before = self.count
            result = build()
            return self.count - before, result
        finally:
            gc.enable()


def first_commit(t) -> str:
    return next(i.completion_time for i in t.timeline if str(i.action) in ("commit", "deltacommit"))


def file_scans(df) -> int:
    return df._jdf.queryExecution().executedPlan().toString().count("FileScan parquet")


def test_round_trips_do_not_grow_with_the_columns_or_files_read(spark, tmp_path, monkeypatch):
    """Bug: each output column was a ``Column`` built through py4j (~17 round trips each) and
    each path one more: 364 round trips, ~50 ms, for one family of Scenario W (21 columns, 8 files)."""
    narrow = pyhudi.create_table(str(tmp_path / "narrow"), wide_schema(2), "id", num_buckets=1)
    narrow.bulk_insert(wide_rows(range(10), 2))
    wide = pyhudi.create_table(str(tmp_path / "wide"), wide_schema(60), "id", num_buckets=6)
    wide.bulk_insert(wide_rows(range(60), 60))
    assert len(split_scan(wide, wide.schema.names, None, as_of=None, query_type="snapshot").native) == 6
    pyhudi.spark.read(spark, narrow.path)  # (the session's first read sets up PySpark's helpers: not counted)
    trips = RoundTrips(monkeypatch)
    few, narrow_df = trips.of(lambda: pyhudi.spark.read(spark, narrow.path))
    many, wide_df = trips.of(lambda: pyhudi.spark.read(spark, wide.path))
    assert few == many and many < 20, (few, many, trips.kinds.most_common(8))
    assert wide_df.schema == spark.read.format("pyhudi").load(wide.path).schema
    assert not wide_df.schema["id"].nullable and wide_df.schema["c59"].nullable
    assert file_scans(wide_df) == 1
    assert sorted_rows(wide_df) == table_rows(wide.read())
    assert sorted_rows(narrow_df) == table_rows(narrow.read())


def test_the_python_source_is_not_set_up_for_a_read_that_does_not_use_it(spark, tmp_path, monkeypatch):
    t = pyhudi.create_table(str(tmp_path / "t"), wide_schema(3), "id", num_buckets=2)
    t.bulk_insert(wide_rows(range(10), 3))
    loads = []
    reader = type(spark.read)
    original = reader.format

    def format_(self, source):
        loads.append(source)
        return original(self, source)

    monkeypatch.setattr(reader, "format", format_)
    df = pyhudi.spark.read(spark, t.path, columns=["id", "c1"])
    assert loads == []
    assert sorted_rows(df) == table_rows(t.read(columns=["id", "c1"]))
    t.upsert(wide_rows([3], 3).set_column(2, "c1", pa.array([-1.0])))
    df = pyhudi.spark.read(spark, t.path, columns=["id", "c1"], **{"hoodie.pyhudi.read.spark.jvm.merge": "false"})
    assert loads == ["pyhudi"]  # (the updated file group: the Python source)
    assert sorted_rows(df) == table_rows(t.read(columns=["id", "c1"])) and (3, -1.0) in sorted_rows(df)


PARTITIONED = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.float64()), ("p", pa.string())])


@pytest.fixture(scope="module")
def dropped(tmp_path_factory):
    """A copy-on-write table whose files do not store the partition column (its values come from
    the path: one literal per partition), partition values with quotes and non-ASCII."""
    t = pyhudi.create_table(str(tmp_path_factory.mktemp("plan") / "dropped"), PARTITIONED, "id",
                            partition_fields=["p"], table_type="COPY_ON_WRITE",
                            options={"hoodie.datasource.write.drop.partition.columns": "true"})
    values = ["it's", 'say "hi"', "zürich"]
    t.upsert(pa.table({"id": pa.array(range(9), pa.int64()), "a": [i * 0.5 for i in range(9)],
                       "p": [values[i % 3] for i in range(9)]}, schema=PARTITIONED))
    return t


def test_partition_values_from_the_path_one_scan_per_partition(spark, dropped):
    df = pyhudi.spark.read(spark, dropped.path)
    assert file_scans(df) == 3
    assert df.schema == spark.read.format("pyhudi").load(dropped.path).schema
    assert sorted_rows(df) == table_rows(dropped.read())
    assert {r["p"] for r in df.collect()} == {"it's", 'say "hi"', "zürich"}


def test_a_read_of_no_stored_column_runs_no_spark_job_while_it_is_built(spark, dropped):
    """Bug: with no stored column to read, the files were read without a schema: Spark inferred
    it from their footers, a Spark job on the driver's thread while the DataFrame was built."""
    context = spark.sparkContext
    context.setJobGroup("pyhudi-plan-test", "building the DataFrame")
    try:
        df = pyhudi.spark.read(spark, dropped.path, columns=["p"])
        assert list(context.statusTracker().getJobIdsForGroup("pyhudi-plan-test")) == []
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    assert sorted(r["p"] for r in df.collect()) == sorted(dropped.read(columns=["p"]).column("p").to_pylist())
    assert df.count() == 9


def test_without_a_jvm_in_this_process_the_frames_are_built_through_pyspark(spark, dropped, tmp_path, monkeypatch):
    """A Spark Connect session has no JVM here: the same DataFrame through PySpark's API."""
    class Connect:
        def __getattr__(self, name):
            raise AttributeError(f"[JVM_ATTRIBUTE_NOT_SUPPORTED] {name}")

    assert native.java_strings(Connect(), ["a"]) is None
    assert native.java_strings(spark, []) is None and native.java_strings(spark, ["a\x00b"]) is None
    assert list(native.java_strings(spark, ["a", "`b c`", ""])) == ["a", "`b c`", ""]
    monkeypatch.setattr(native, "java_strings", lambda spark, values: None)
    t = pyhudi.create_table(str(tmp_path / "t"), wide_schema(3), "id", num_buckets=2)
    t.bulk_insert(wide_rows(range(6), 3))
    df = pyhudi.spark.read(spark, t.path, columns=["c2", "id"])
    assert df.columns == ["c2", "id"] and not df.schema["id"].nullable
    assert sorted_rows(df) == table_rows(t.read(columns=["c2", "id"]))
    assert sorted_rows(pyhudi.spark.read(spark, dropped.path)) == table_rows(dropped.read())


def test_sql_literals_spell_partition_values_exactly(spark):
    cases = [
        (None, T.StringType(), "CAST(NULL AS string)"),
        (True, T.BooleanType(), "CAST(true AS boolean)"),
        (-7, T.ShortType(), "CAST(-7 AS smallint)"),
        (2**40, T.LongType(), f"CAST({2**40} AS bigint)"),
        ("it's\\ü", T.StringType(), "CAST(CAST(X'697427735cc3bc' AS STRING) AS string)"),
        (b"\x00\xff", T.BinaryType(), "CAST(X'00ff' AS binary)"),
        (dt.date(2024, 2, 29), T.DateType(), "CAST(DATE'2024-02-29' AS date)"),
        (decimal.Decimal("-12.50"), T.DecimalType(6, 2), "CAST(-12.50BD AS decimal(6,2))"),
        (decimal.Decimal("1E+3"), T.DecimalType(6, 0), "CAST(1000BD AS decimal(6,0))"),
        (0.1, T.DoubleType(), "CAST(0.1D AS double)"),
        (1e-300, T.DoubleType(), "CAST(1e-300D AS double)"),
    ]
    assert [sql_literal(v, t) for v, t, _ in cases] == [text for _, _, text in cases]
    row = spark.range(1).selectExpr(*[f"{text} AS v{i}" for i, (_, _, text) in enumerate(cases)]).collect()[0]
    assert list(row) == [bytearray(v) if isinstance(v, bytes) else v for v, _, _ in cases]
    assert sql_literal(dt.datetime(2024, 1, 1), T.TimestampNTZType()) is None  # (spelled by a Column)
    assert sql_literal(float("inf"), T.DoubleType()) is None
    assert sql_literal(decimal.Decimal("NaN"), T.DecimalType(6, 2)) is None


def test_planning_an_unchanged_table_again_opens_no_base_file(tmp_path, monkeypatch):
    t = pyhudi.create_table(str(tmp_path / "t"), wide_schema(3), "id", num_buckets=3,
                            column_families={"f0": "c0,c1", "f1": "c2"})
    t.bulk_insert(wide_rows(range(30), 3), options={"hoodie.pyhudi.insert.full.row": "false"})
    opened = []
    original = family_reader.OpenedBase._open

    def counting(self):
        opened.append(self.relpath)
        return original(self)

    monkeypatch.setattr(family_reader.OpenedBase, "_open", counting)
    columns = ["id", "c0", "c1"]
    first = split_scan(pyhudi.open_table(t.path), columns, None, as_of=None, query_type="snapshot")
    assert len(first.native) == 3 and opened  # (each family's base file: the keys proven equal)
    opened.clear()
    again = split_scan(pyhudi.open_table(t.path), columns, None, as_of=None, query_type="snapshot")
    assert opened == [] and again.native == first.native
    t.upsert(wide_rows([4], 3).select(["id", "c2"]))  # (log files in one file group)
    after = split_scan(pyhudi.open_table(t.path), columns, None, as_of=None, query_type="snapshot")
    assert len(after.native) == 2 and len(after.python) == 1
    assert after.reasons[after.python[0]] == "log files to merge"
    as_of = split_scan(pyhudi.open_table(t.path), columns, None, as_of=first_commit(t),
                       query_type="snapshot")
    assert as_of.native == first.native
    other = split_scan(pyhudi.open_table(t.path), ["id", "c0", "c2"], None, as_of=None, query_type="snapshot")
    assert other.native == [] and set(other.reasons.values()) == {"several families to join"}


def test_a_value_sql_cannot_spell_is_projected_by_columns_with_the_same_schema(spark):
    stored = T.StructType([T.StructField("id", T.LongType(), True)])
    target = T.StructType([T.StructField("id", T.LongType(), False), T.StructField("at", T.TimestampNTZType(), True),
                           T.StructField("p", T.StringType(), True)])
    at = dt.datetime(2024, 1, 1, 12, 30)
    for values in ({"at": at, "p": "x"}, {"at": None, "p": "x"}):  # (a timestamp: Column objects; None: SQL)
        df = native.project(spark.range(2), stored, values, target)
        assert df.schema == target
        assert [tuple(r) for r in df.collect()] == [(0, values["at"], "x"), (1, values["at"], "x")]
    plain = spark.range(2)
    assert native.project(plain, stored, {}, stored) is plain  # (already the schema: no projection)


def test_names_spark_could_read_as_regular_expressions_are_projected_exactly(spark, tmp_path):
    """With ``spark.sql.parser.quotedRegexColumnNames`` on, a back-quoted name in a query's select
    list is a pattern (```c(1)+``` selected ``c1``): the projection is then built from ``Column`` objects."""
    names = ["a.b", "axb", "c(1)+", "c1"]
    schema = pa.schema([pa.field("id", pa.int64(), False), *[(n, pa.float64()) for n in names]])
    t = pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=1)
    t.bulk_insert(pa.table({"id": pa.array([1, 2], pa.int64()), **{n: [i + 0.5, i + 1.5] for i, n in enumerate(names)}},
                           schema=schema))
    spark.conf.set(native.REGEX_NAMES, "true")
    try:
        df = pyhudi.spark.read(spark, t.path, columns=["id", "a.b", "c(1)+"])
        assert df.columns == ["id", "a.b", "c(1)+"] and not df.schema["id"].nullable
        assert sorted_rows(df) == [(1, 0.5, 2.5), (2, 1.5, 3.5)]
    finally:
        spark.conf.unset(native.REGEX_NAMES)

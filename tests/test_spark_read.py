"""Reading through the ``pyhudi`` Spark data source (issue 5 item 1): the same rows as
``Table.read``, every read option, every pushed filter type (claimed and applied after the
merge), pruned schemas, exact Arrow casts. Planning logic is tested without Spark; Spark actions
are few (each costs ~0.3-1 s).
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)
from pyspark.sql.types import StructType

import pyhudi
import pyhudi.spark
from pyhudi.errors import ConfigError, ReadError, SchemaError
from pyhudi.spark.datasource import HudiDataSource
from pyhudi.spark.filters import claim, to_condition
from pyhudi.spark.reader import ReadSettings
from pyhudi.spark.types import cast_batch

UTC = dt.UTC
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), False),
    ("a", pa.float64()), pa.field("b", pa.string(), False), ("ts", pa.int64()),  # b: NOT NULL, yet
    ("c", pa.int64()), ("at", pa.timestamp("us", tz="UTC")),                       # null for id 20
    ("p", pa.string()),
])
FAMILIES = {"fa": "a,b;ts", "fc": "c,at"}


def when(i: int) -> dt.datetime:
    return dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(hours=i)


def full_rows(ids) -> pa.Table:
    ids = list(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()), "a": [i * 1.5 for i in ids], "b": [f"b{i:02d}x" for i in ids],
        "ts": [1] * len(ids), "c": [i * 10 for i in ids], "at": pa.array([when(i) for i in ids], SCHEMA.field("at").type),
        "p": ["x" if i % 2 else "y" for i in ids],
    }, schema=SCHEMA)


@pytest.fixture(scope="module")
def hudi_table(tmp_path_factory):
    """A partitioned family table after an insert, a partial update + new key, and a delete."""
    t = pyhudi.create_table(str(tmp_path_factory.mktemp("spark_read") / "t"), SCHEMA, "id", name="sr",
                            num_buckets=1, partition_fields=["p"], column_families=FAMILIES)
    first = t.upsert(full_rows(range(12)))
    # partial fc update: c changes for ids 0..3 (c=0,10,20,30 -> 1000+), at unchanged; new id 20 via fc only
    second = t.upsert(pa.table({"id": pa.array([0, 1, 2, 3, 20], pa.int64()), "c": [1000, 1010, 1020, 1030, 7],
                                "p": ["y", "x", "y", "x", "y"]}))
    third = t.delete(pa.table({"id": pa.array([4, 5], pa.int64()), "p": ["y", "x"]}))
    t.instants = [first, second, third]
    return t


def rows(df_or_table, key="id") -> list[dict]:
    data = df_or_table.to_pylist() if isinstance(df_or_table, pa.Table) else [r.asDict() for r in df_or_table.collect()]
    return sorted(data, key=lambda r: r[key])


def naive(rows_: list[dict]) -> list[dict]:
    """Spark returns TIMESTAMP values as naive datetimes in the session zone (UTC here)."""
    return [{k: (v.replace(tzinfo=None) if isinstance(v, dt.datetime) else v) for k, v in r.items()} for r in rows_]


def completion_times(t) -> list[str]:
    return [i.completion_time for i in t.timeline if str(i.action) == "deltacommit"]


# --------------------------------------------------------------------------- Spark: rows
def test_load_returns_the_rows_of_table_read_one_partition_per_file_group(spark, hudi_table):
    pyhudi.spark.register(spark)
    df = spark.read.format("pyhudi").load(hudi_table.path)
    assert df.schema.simpleString() == "struct<id:bigint,a:double,b:string,ts:bigint,c:bigint,at:timestamp,p:string>"
    assert [f.nullable for f in df.schema.fields] == [False] + [True] * 6
    expected = rows(hudi_table.read())
    assert len(expected) == 11 and expected[-1] == {"id": 20, "a": None, "b": None, "ts": None, "c": 7, "at": None,
                                                    "p": "y"}
    assert rows(df) == naive(expected)
    assert df.rdd.getNumPartitions() == len(hudi_table.file_groups()) == 2


def test_pruned_schemas_and_columns_option(spark, hudi_table):
    by_schema = spark.read.format("pyhudi").schema("id long, c long").load(hudi_table.path)
    assert rows(by_schema) == rows(hudi_table.read(columns=["id", "c"]))
    # the columns option: same projection, order as given; a pruned read still returns every row
    by_option = pyhudi.spark.read(spark, hudi_table.path, columns=["b", "id"])
    assert by_option.columns == ["b", "id"]
    assert rows(by_option) == rows(hudi_table.read(columns=["b", "id"]))
    assert len(rows(by_option)) == 11


def test_every_pushed_filter_type_against_expected_rows(spark, hudi_table):
    base = naive(hudi_table.read().to_pylist())

    def ids(pred):
        return sorted(r["id"] for r in base if pred(r))

    cases = {
        # c was updated after the insert: the filters see the merged values (c=0 is gone for id 0)
        "c = 0": ids(lambda r: r["c"] == 0),
        "c <=> 1010": ids(lambda r: r["c"] == 1010),
        "a <=> NULL": ids(lambda r: r["a"] is None),
        "c > 1010": ids(lambda r: r["c"] is not None and r["c"] > 1010),
        "c >= 1010 AND c < 1030": ids(lambda r: r["c"] is not None and 1010 <= r["c"] < 1030),
        "a <= 3": ids(lambda r: r["a"] is not None and r["a"] <= 3),
        "c IN (7, 60, 1020, NULL)": ids(lambda r: r["c"] in (7, 60, 1020)),
        "NOT c IN (7, 60)": ids(lambda r: r["c"] is not None and r["c"] not in (7, 60)),
        "a != 3.0": ids(lambda r: r["a"] is not None and r["a"] != 3.0),
        "b IS NULL": ids(lambda r: r["b"] is None),
        "b IS NOT NULL AND p = 'x'": ids(lambda r: r["b"] is not None and r["p"] == "x"),
        "b LIKE 'b1%'": ids(lambda r: r["b"] is not None and r["b"].startswith("b1")),
        "b LIKE '%1x'": ids(lambda r: r["b"] is not None and r["b"].endswith("1x")),
        "b LIKE '%0%'": ids(lambda r: r["b"] is not None and "0" in r["b"]),
        "at >= timestamp'2024-01-01 09:00:00'": ids(lambda r: r["at"] is not None and r["at"] >= dt.datetime(2024, 1, 1, 9)),
        "p = 'y' OR c = 7": ids(lambda r: r["p"] == "y" or r["c"] == 7),  # OR: nothing pushed, Spark filters
        "NOT b LIKE 'b1%'": ids(lambda r: r["b"] is not None and not r["b"].startswith("b1")),  # left to Spark
    }
    assert cases["c = 0"] == [] and cases["a <=> NULL"] == [20] and cases["b IS NULL"] == [20]
    # one Spark job for all cases: each case tags the rows it selects. Each case loads the table
    # itself: Spark keeps ONE pushed-down reader per loaded relation, so two differently filtered
    # scans of the same loaded DataFrame in one query would both read with the last one's filters.
    from functools import reduce

    def load():
        return spark.read.format("pyhudi").load(hudi_table.path)

    tagged = [load().filter(cond).selectExpr("id", f"{i} AS case") for i, cond in enumerate(cases)]
    got: dict[int, list[int]] = {i: [] for i in range(len(cases))}
    for row in reduce(lambda x, y: x.unionAll(y), tagged).collect():
        got[row["case"]].append(row["id"])
    assert {cond: sorted(got[i]) for i, cond in enumerate(cases)} == cases


def test_read_convenience_filters_and_pinned_snapshot(spark, tmp_path):
    t = pyhudi.create_table(str(tmp_path / "pin"), SCHEMA, "id", num_buckets=2, partition_fields=["p"],
                            column_families=FAMILIES)
    t.upsert(full_rows(range(6)))
    df = pyhudi.spark.read(spark, t.path, columns=["id", "a"], filters=[("c", ">=", 20), ("b", "ends_with", "x")])
    assert df.columns == ["id", "a"]
    assert rows(df) == [{"id": i, "a": i * 1.5} for i in range(2, 6)]
    t.upsert(full_rows(range(6, 8)))  # a later commit is not seen by the pinned DataFrame
    assert sorted(r["id"] for r in df.collect()) == [2, 3, 4, 5]
    assert spark.read.format("pyhudi").load(t.path).filter("c >= 20").count() == 6


def test_time_travel_and_empty_table(spark, hudi_table, tmp_path):
    first_done = completion_times(hudi_table)[0]
    as_of = spark.read.format("pyhudi").option("as.of.instant", first_done).load(hudi_table.path)
    assert rows(as_of) == naive(rows(hudi_table.read(as_of=first_done)))
    assert len(rows(as_of)) == 12 and {r["c"] for r in rows(as_of)} == {i * 10 for i in range(12)}
    empty = pyhudi.create_table(str(tmp_path / "empty"), SCHEMA, "id", num_buckets=2, partition_fields=["p"],
                                column_families=FAMILIES)
    assert spark.read.format("pyhudi").load(empty.path).collect() == []


def test_read_optimized_and_incremental_queries(spark, tmp_path):
    t = pyhudi.create_table(str(tmp_path / "ro"), SCHEMA, "id", num_buckets=1, partition_fields=["p"],
                            column_families=FAMILIES)
    t.bulk_insert(full_rows(range(6)))  # base files
    t.upsert(pa.table({"id": pa.array([0, 1], pa.int64()), "c": [-1, -2], "p": ["y", "x"]}))  # logs
    t.upsert(pa.table({"id": pa.array([2], pa.int64()), "a": [-3.0], "p": ["y"]}))
    done = completion_times(t)
    ro = spark.read.format("pyhudi").option("hoodie.datasource.query.type", "read_optimized").load(t.path)
    assert rows(ro) == naive(rows(full_rows(range(6))))  # base files only: the updates are not seen
    assert rows(ro) == naive(rows(t.read(query_type="read_optimized")))

    def incremental(begin, end=None):
        reader = spark.read.format("pyhudi").option("hoodie.datasource.query.type", "incremental") \
            .option("hoodie.datasource.read.begin.instanttime", begin)
        if end is not None:
            reader = reader.option("hoodie.datasource.read.end.instanttime", end)
        return rows(reader.load(t.path))

    snapshot = {r["id"]: r for r in naive(rows(t.read()))}
    assert incremental(done[0]) == [snapshot[0], snapshot[1], snapshot[2]]  # (first, latest]
    # (first, second]: ids 0 and 1 in their state as of the second commit
    assert [(r["id"], r["c"], r["a"]) for r in incremental(done[0], done[1])] == [(0, -1, 0.0), (1, -2, 1.5)]
    assert incremental(done[2]) == []


# --------------------------------------------------------------------------- planning without Spark
def test_pushed_filters_are_claimed_only_when_the_kernel_applies_them_exactly():
    cols = ["id", "a", "b", "p"]
    pushed = [
        EqualTo(("id",), 3), EqualNullSafe(("a",), 1.5), EqualNullSafe(("b",), None), GreaterThan(("id",), 1),
        GreaterThanOrEqual(("id",), 2), LessThan(("a",), 9.0), LessThanOrEqual(("a",), 8.0),
        In(("p",), ("x", None)), IsNull(("b",)), IsNotNull(("a",)), Not(EqualTo(("b",), "q")),
        Not(In(("id",), (1, 2))), StringStartsWith(("b",), "b1"), StringEndsWith(("b",), "x"),
        StringContains(("b",), "0"),
    ]
    left = [Not(In(("id",), (1, None))), Not(StringStartsWith(("b",), "z")), EqualTo(("s", "x"), 1),
            EqualTo(("zz",), 1), In(("id",), (None,))]
    kernel, rest = claim([*pushed, *left], cols)
    assert kernel == [
        ("id", "=", 3), ("a", "=", 1.5), ("b", "is null"), ("id", ">", 1), ("id", ">=", 2), ("a", "<", 9.0),
        ("a", "<=", 8.0), ("p", "in", ["x"]), ("b", "is null"), ("a", "is not null"),
        ("b", "!=", "q"), ("b", "is not null"), ("id", "not in", [1, 2]), ("id", "is not null"),
        ("b", "starts_with", "b1"), ("b", "ends_with", "x"), ("b", "contains", "0"),
    ]
    assert all(r is l for r, l in zip(rest, left)) and len(rest) == len(left)


def test_pushed_filters_the_kernel_refuses_for_their_column_are_left_to_spark():
    """A filter on a struct column, or with a value the column cannot be compared with, stays
    with Spark (the kernel refuses it; the scan must not fail)."""
    schema = pa.schema([("id", pa.int64()), ("st", pa.struct([("x", pa.float64())])), ("ts", pa.timestamp("us", "UTC"))])
    accepted = [EqualTo(("id",), 3), IsNull(("st",))]
    refused = [EqualTo(("st",), {"x": 1.0}), GreaterThan(("ts",), "not a time")]
    kernel, rest = claim([*accepted, *refused], schema.names, schema)
    assert kernel == [("id", "=", 3), ("st", "is null")]
    assert len(rest) == 2 and all(r is f for r, f in zip(rest, refused))


def test_reader_projects_the_user_schema_and_rejects_mismatches(hudi_table):
    source = HudiDataSource({"path": hudi_table.path})
    full = source.schema()
    reader = source.reader(StructType.fromDDL("c long, id long"))
    assert reader.columns == ["c", "id"]
    assert reader.target == pa.schema([("c", pa.int64()), ("id", pa.int64())])
    assert source.reader(full).columns == SCHEMA.names
    with pytest.raises(SchemaError, match="column 'nope' of the read schema is not in the table schema"):
        source.reader(StructType.fromDDL("id long, nope int"))
    with pytest.raises(SchemaError, match="column 'c' of the read schema has type int, but the table column is bigint"):
        source.reader(StructType.fromDDL("c int"))
    assert HudiDataSource({"path": hudi_table.path, "columns": "b,id"}).schema().simpleString() == "struct<b:string,id:bigint>"
    with pytest.raises(SchemaError, match="column 'zz' is not in the table schema"):
        HudiDataSource({"path": hudi_table.path, "columns": "zz"}).schema()
    with pytest.raises(ConfigError, match="needs a table path"):
        HudiDataSource({}).schema()


def test_partitions_pin_the_snapshot_and_reading_casts_exactly(hudi_table):
    reader = HudiDataSource({"path": hudi_table.path}).reader(HudiDataSource({"path": hudi_table.path}).schema())
    reader.pushFilters([GreaterThanOrEqual(("c",), 1000)])
    parts = reader.partitions()
    assert reader.instant == completion_times(hudi_table)[-1]
    batches = [b for p in parts for b in reader.read(p)]
    assert all(b.schema.equals(reader.target) for b in batches)
    assert sorted(i for b in batches for i in b.column("id").to_pylist()) == [0, 1, 2, 3]


def test_cast_batch_matches_the_spark_schema_exactly():
    batch = pa.record_batch({"x": pa.array([1, 2], pa.int32()), "t": pa.array([0, 1], pa.timestamp("ms"))})
    target = pa.schema([pa.field("t", pa.timestamp("us", tz="UTC")), pa.field("x", pa.int64(), False)])
    out = cast_batch(batch, target)
    assert out.schema.equals(target) and out.column("x").to_pylist() == [1, 2]


def test_read_options_are_validated():
    assert ReadSettings.from_options({}) == ReadSettings()
    s = ReadSettings.from_options({"hoodie.datasource.query.type": "incremental",
                                   "hoodie.datasource.read.begin.instanttime": "2024-01-02 03:04:05.006",
                                   "hoodie.datasource.read.end.instanttime": "20240102030405"})
    # Hudi's instant forms; a 14-digit instant means the end of that second (Hudi pads it with 999)
    assert (s.begin, s.end, s.schema_instant) == ("20240102030405006", "20240102030405999", "20240102030405999")
    assert ReadSettings.from_options({"as.of.instant": "2024-01-02 03:04:05.123"}).as_of == "20240102030405123"
    with pytest.raises(ReadError, match="as.of.instant 'yesterday' is not an instant time"):
        ReadSettings.from_options({"as.of.instant": "yesterday"})
    with pytest.raises(ConfigError, match="invalid value 'fast' for hoodie.datasource.query.type: expected one of"):
        ReadSettings.from_options({"hoodie.datasource.query.type": "fast"})
    with pytest.raises(ConfigError, match="an incremental query needs hoodie.datasource.read.begin.instanttime"):
        ReadSettings.from_options({"hoodie.datasource.query.type": "incremental"})
    with pytest.raises(ConfigError, match="only used by incremental queries"):
        ReadSettings.from_options({"hoodie.datasource.read.begin.instanttime": "20240102030405000"})
    with pytest.raises(ConfigError, match="cannot be combined with an incremental query"):
        ReadSettings.from_options({"hoodie.datasource.query.type": "incremental", "as.of.instant": "20240102030405000",
                                   "hoodie.datasource.read.begin.instanttime": "20240102030405000"})
    with pytest.raises(SchemaError, match="unsupported filter operator 'like'"):
        to_condition([("b", "like", "x")])


def test_register_enables_python_filter_pushdown(spark):
    # Spark refuses to plan a reader implementing pushFilters while the setting is off
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    try:
        pyhudi.spark.register(spark)
        assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")


def test_large_file_groups_split_into_several_partitions(tmp_path):
    """``hoodie.pyhudi.read.split.rows`` splits a file group by key range: more partitions, same rows."""
    t = pyhudi.create_table(str(tmp_path / "split"), SCHEMA, "id", num_buckets=1, partition_fields=["p"],
                            column_families=FAMILIES)
    t.bulk_insert(full_rows(range(40)), options={"hoodie.parquet.block.size": 64})  # tiny row groups
    t.upsert(pa.table({"id": pa.array([3, 17, 55], pa.int64()), "c": [1, 2, 3], "p": ["x", "x", "y"]}))
    t.delete(pa.table({"id": pa.array([8, 9], pa.int64()), "p": ["y", "x"]}))
    source = HudiDataSource({"path": t.path, "hoodie.pyhudi.read.split.rows": "5"})
    reader = source.reader(source.schema())
    parts = reader.partitions()
    assert len(t.file_groups()) == 2 and len(parts) > 4
    got = [r for p in parts for b in reader.read(p) for r in b.to_pylist()]
    assert sorted(r["id"] for r in got) == sorted(set(range(40)) - {8, 9} | {55})
    assert rows(pa.Table.from_pylist(got, schema=reader.target)) == rows(t.read().cast(reader.target))

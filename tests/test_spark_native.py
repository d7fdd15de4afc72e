"""``pyhudi.spark.read`` and SQL reading final file groups with Spark's own Parquet reader
(issue 15 item 5): the same rows as ``Table.read`` for the read tests of the Python source —
filters, partition pruning, time travel, read-optimized and incremental queries, families, MOR
with logs, COW, after a full compaction — and which file groups went native. Spark actions are
few (each costs ~0.3-1 s on 2 cores).
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import pyhudi
import pyhudi.spark
from pyhudi.spark.native import split_scan

UTC = dt.UTC
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), False), ("a", pa.float64()), ("b", pa.string()), ("ts", pa.int64()),
    ("c", pa.int64()), ("at", pa.timestamp("us", tz="UTC")), ("p", pa.string()),
])
FAMILIES = {"fa": "a,b;ts", "fc": "c,at"}


def full_rows(ids) -> pa.Table:
    ids = list(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()), "a": [i * 1.5 for i in ids], "b": [f"b{i:02d}x" for i in ids],
        "ts": [1] * len(ids), "c": [i * 10 for i in ids],
        "at": pa.array([dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(hours=i) for i in ids], SCHEMA.field("at").type),
        "p": ["x" if i % 2 else "y" for i in ids],
    }, schema=SCHEMA)


def rows(df_or_table) -> list[dict]:
    data = df_or_table.to_pylist() if isinstance(df_or_table, pa.Table) else [r.asDict() for r in df_or_table.collect()]
    data = [{k: (v.replace(tzinfo=None) if isinstance(v, dt.datetime) else v) for k, v in r.items()} for r in data]
    return sorted(data, key=lambda r: r["id"])


def scans(df) -> tuple[bool, bool]:
    """(Spark's Parquet scan in the plan, the Python source in the plan)."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    return "FileScan parquet" in plan, "BatchEvalPython" in plan or "PythonDataSource" in plan or "pyhudi" in plan.lower()


def completion_times(t) -> list[str]:
    return [i.completion_time for i in t.timeline if str(i.action) in ("commit", "deltacommit")]


@pytest.fixture(scope="module")
def cow(tmp_path_factory):
    """A partitioned copy-on-write table of two commits (the second rewrites one file group)."""
    t = pyhudi.create_table(str(tmp_path_factory.mktemp("native") / "cow"), SCHEMA, "id", name="cow",
                            partition_fields=["p"], table_type="COPY_ON_WRITE")
    t.upsert(full_rows(range(12)))
    t.upsert(pa.table({**full_rows([0, 2, 30]).to_pydict(), "c": [-1, -2, -3]}, schema=SCHEMA))
    return t


def test_cow_table_reads_every_file_group_natively_with_the_python_sources_schema(spark, cow):
    df = pyhudi.spark.read(spark, cow.path)
    assert df.schema == spark.read.format("pyhudi").load(cow.path).schema  # types and nullability
    assert rows(df) == rows(cow.read())
    assert [r["c"] for r in rows(df) if r["id"] in (0, 2, 30)] == [-1, -2, -3]
    assert scans(df) == (True, False)
    split = split_scan(cow, SCHEMA.names, None, as_of=None, query_type="snapshot")
    assert len(split.native) == len(cow.file_groups()) >= 2 and split.python == []
    assert all(f.uri.startswith(cow.path) and f.uri.endswith(".parquet") for f in split.native)


def test_filters_prune_partitions_and_files_and_are_applied_natively(spark, cow):
    split = split_scan(cow, SCHEMA.names, [("p", "=", "x")], as_of=None, query_type="snapshot")
    assert {f.partition_path for f in split.native} == {"x"}
    df = pyhudi.spark.read(spark, cow.path, columns=["id", "c"], filters=[("p", "=", "x"), ("c", ">=", 50)])
    assert df.columns == ["id", "c"]
    assert rows(df) == rows(cow.read(columns=["id", "c"], filters=[("p", "=", "x"), ("c", ">=", 50)]))
    assert [r["id"] for r in rows(df)] == [5, 7, 9, 11]
    assert scans(df) == (True, False)
    # filters given to Spark on the DataFrame (SQL's WHERE) are applied too
    assert sorted(r["id"] for r in pyhudi.spark.read(spark, cow.path).filter("b LIKE 'b1%'").collect()) == [10, 11]


def test_time_travel_reads_the_older_base_files_natively(spark, cow):
    first = completion_times(cow)[0]
    df = pyhudi.spark.read(spark, cow.path, **{"as.of.instant": first})
    assert rows(df) == rows(cow.read(as_of=first)) and len(rows(df)) == 12
    assert {r["c"] for r in rows(df)} == {i * 10 for i in range(12)}
    assert scans(df) == (True, False)


def test_mor_family_table_unions_native_and_merged_file_groups(spark, tmp_path):
    t = pyhudi.create_table(str(tmp_path / "mor"), SCHEMA, "id", num_buckets=2, partition_fields=["p"],
                            column_families=FAMILIES)
    # aligned family base files in every file group (not the default full-row base files: this is
    # about family files that Spark cannot join and the key-only families that prove row existence)
    t.bulk_insert(full_rows(range(8)), options={"hoodie.pyhudi.insert.full.row": "false"})
    t.upsert(pa.table({"id": pa.array([1], pa.int64()), "c": [-10], "p": ["x"]}))  # logs in one file group
    split = split_scan(t, SCHEMA.names, None, as_of=None, query_type="snapshot")
    assert split.native == [] and set(split.reasons.values()) == {"several families to join"}
    # one family's columns: aligned key-only families prove row existence, except where fc has logs
    pruned = split_scan(t, ["id", "a", "b"], None, as_of=None, query_type="snapshot")
    assert len(pruned.native) == len(split.python) - 1 >= 1 and list(pruned.reasons.values()) == ["log files to merge"]
    assert [p for p, _ in pruned.python] == ["x"]  # (id 1's partition)
    df = pyhudi.spark.read(spark, t.path, columns=["id", "a", "b"])
    assert scans(df) == (True, True)
    assert rows(df) == rows(t.read(columns=["id", "a", "b"])) and len(rows(df)) == 8
    every = pyhudi.spark.read(spark, t.path)
    assert rows(every) == rows(t.read()) and [r["c"] for r in rows(every) if r["id"] == 1] == [-10]
    # read-optimized: base files only, every file group native (logs are ignored)
    ro = pyhudi.spark.read(spark, t.path, columns=["id", "c"], **{"hoodie.datasource.query.type": "read_optimized"})
    assert rows(ro) == rows(t.read(columns=["id", "c"], query_type="read_optimized"))
    assert [r["c"] for r in rows(ro) if r["id"] == 1] == [10] and scans(ro) == (True, False)
    # incremental stays on the Python source
    done = completion_times(t)
    inc = pyhudi.spark.read(spark, t.path, **{"hoodie.datasource.query.type": "incremental",
                                              "hoodie.datasource.read.begin.instanttime": done[0]})
    assert [(r["id"], r["c"]) for r in rows(inc)] == [(1, -10)] and scans(inc) == (False, True)
    # after a full compaction every file group has a full-row base file: all native
    t.compact(full=True)
    compacted = pyhudi.spark.read(spark, t.path)
    assert rows(compacted) == rows(t.read()) and scans(compacted) == (True, False)
    assert split_scan(t, SCHEMA.names, None, as_of=None, query_type="snapshot").python == []


def test_native_scan_can_be_turned_off_and_sql_reads_natively(spark, cow, tmp_path):
    off = pyhudi.spark.read(spark, cow.path, **{"hoodie.pyhudi.read.spark.native": "false"})
    assert rows(off) == rows(cow.read()) and scans(off) == (False, True)
    sql = lambda text: pyhudi.spark.sql(spark, text)  # noqa: E731
    sql(f"""CREATE TABLE native_cow (id BIGINT NOT NULL, v STRING, p STRING) USING pyhudi PARTITIONED BY (p)
            LOCATION '{tmp_path / "sql"}' TBLPROPERTIES (primaryKey = 'id', type = 'cow')""")
    sql("INSERT INTO native_cow VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', 'x')")
    first = sql("SELECT * FROM native_cow").collect()
    sql("INSERT INTO native_cow VALUES (4, 'd', 'y')")
    df = sql("SELECT id, v FROM native_cow WHERE p = 'x' OR id = 4")
    assert sorted((r["id"], r["v"]) for r in df.collect()) == [(1, "a"), (3, "c"), (4, "d")]
    assert scans(df) == (True, False) and len(first) == 3
    instant = pyhudi.open_table(str(tmp_path / "sql")).timeline[0].requested_time
    old = sql(f"SELECT id FROM native_cow VERSION AS OF '{instant}'")
    assert sorted(r["id"] for r in old.collect()) == [1, 2, 3] and scans(old) == (True, False)


def test_full_row_insert_reads_natively_and_merges_only_updated_file_groups(spark, tmp_path):
    """A bulk insert through pyhudi.spark.write with default options (``hoodie.pyhudi.insert.full.row``
    is on): every family of a file group in one base file, so a full read of the family table is
    Spark's Parquet scan; after a one-family update only the file group with logs goes through the
    Python source."""
    path = str(tmp_path / "full_row")
    options = {"hoodie.table.name": "fr", "hoodie.datasource.write.recordkey.field": "id",
               "hoodie.datasource.write.partitionpath.field": "p", "hoodie.index.type": "BUCKET",
               "hoodie.bucket.index.num.buckets": "2", **{f"hoodie.colFamily.{k}": v for k, v in FAMILIES.items()}}
    pyhudi.spark.write(spark.createDataFrame(full_rows(range(12))), path, operation="bulk_insert", **options)
    t = pyhudi.open_table(path)
    bases = [b.name.family for g in t.file_groups() for b in g.base_files]
    assert bases == [None] * len(t.file_groups()) and len(bases) == 4  # one full-row file per file group
    split = split_scan(t, SCHEMA.names, None, as_of=None, query_type="snapshot")
    assert len(split.native) == 4 and split.python == []
    df = pyhudi.spark.read(spark, path)
    assert df.schema == spark.read.format("pyhudi").load(path).schema
    assert rows(df) == rows(t.read()) and len(rows(df)) == 12 and scans(df) == (True, False)
    first = completion_times(t)[0]
    t.upsert(pa.table({"id": pa.array([1], pa.int64()), "c": [-10], "p": ["x"]}))  # fc logs in one file group
    split = split_scan(t, SCHEMA.names, None, as_of=None, query_type="snapshot")
    assert len(split.native) == 3 and list(split.reasons.values()) == ["several families to join"]
    every = pyhudi.spark.read(spark, path)
    assert rows(every) == rows(t.read()) and [r["c"] for r in rows(every) if r["id"] == 1] == [-10]
    assert scans(every) == (True, True)
    # filters prune to the other partition (no logs): native only, pruned to two columns
    y = pyhudi.spark.read(spark, path, columns=["id", "a"], filters=[("p", "=", "y"), ("a", ">", 4)])
    assert rows(y) == rows(t.read(columns=["id", "a"], filters=[("p", "=", "y"), ("a", ">", 4)]))
    assert [r["id"] for r in rows(y)] == [4, 6, 8, 10] and scans(y) == (True, False)
    # time travel to the insert: every file group native, id 1 as inserted
    old = pyhudi.spark.read(spark, path, **{"as.of.instant": first})
    assert rows(old) == rows(t.read(as_of=first)) and [r["c"] for r in rows(old) if r["id"] == 1] == [10]
    assert scans(old) == (True, False)
    inc = pyhudi.spark.read(spark, path, **{"hoodie.datasource.query.type": "incremental",
                                             "hoodie.datasource.read.begin.instanttime": first})
    assert [(r["id"], r["a"], r["c"]) for r in rows(inc)] == [(1, 1.5, -10)] and scans(inc) == (False, True)

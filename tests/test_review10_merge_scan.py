"""Review of the JVM merge reader's later changes (:mod:`pyhudi.spark.merge_scan`, ``pyhudi/spark/java``):
Spark's column pruning reaching the reader (subsets, counts, filters on columns not selected, the key
alone, partition columns added from the path, aggregations, self-joins and unions of two projections
of one DataFrame, a cached DataFrame, SQL), aligned family base files zipped in the JVM (and left to
the Python source when their row groups differ in size), reads from several Python threads at once,
and the jar reaching executors in other JVMs — also for a new session after ``spark.stop()``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
import pyhudi.spark
from pyhudi.spark import merge_scan
from pyhudi.spark.native import split_scan
from pyhudi.spark.types import select, spark_schema

pytestmark = pytest.mark.spark
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.float64()), ("s", pa.string()), ("n", pa.int32()),
                    ("p", pa.string())])
FAMILIES = {"f0": "a,s", "f1": "n,p"}
SMALL_ROW_GROUPS = {"hoodie.parquet.block.size": str(8 << 10)}
REPO = Path(__file__).resolve().parent.parent


def data(ids, version: int = 1) -> pa.Table:
    ids = np.asarray(list(ids), dtype=np.int64)
    return pa.table({
        "id": ids, "a": ids * 1.5 * version, "s": [f"s{i}v{version}" + "x" * (i % 30) for i in ids.tolist()],
        "n": pa.array((ids * version) % 1000, pa.int32()), "p": ["x" if i % 2 else "y" for i in ids.tolist()],
    }, schema=SCHEMA)


def tuples(rows, columns) -> list[tuple]:
    """Rows (Spark Rows or dicts) as sorted tuples of ``columns``."""
    return sorted(tuple(r[c] for c in columns) for r in rows)


def scans(df) -> list[list[str]]:
    """The columns each of the plan's merge reader scans reads (Spark's pruning, as planned)."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    return [[c.split("#")[0] for c in found.split(", ")] if found else []
            for found in re.findall(r"BatchScan pyhudi_merge\[([^\]]*)\]", plan)]


def split_of(spark, t, columns=None):
    names = list(columns or t.schema.names)
    split = split_scan(t, names, [], as_of=None, query_type="snapshot")
    merge_scan.merge_split(spark, split, select(spark_schema(t.schema, t.record_key_fields), names))
    return split


def row_groups(t) -> dict[str, list[int]]:
    """The row group sizes of each family's latest base file (by the file name's family suffix)."""
    latest: dict[str, tuple[str, Path]] = {}
    for path in Path(t.path).rglob("*.parquet"):
        instant, family = path.stem.rsplit("_", 2)[-2:]
        latest[family] = max(latest.get(family, ("", path)), (instant, path))
    out = {}
    for family, (_, path) in latest.items():
        meta = pq.ParquetFile(path).metadata
        out[family] = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    return out


@pytest.fixture(scope="module")
def updated(spark, tmp_path_factory):
    """A two-family table, default insert (full-row log files), both families updated since."""
    t = pyhudi.create_table(str(tmp_path_factory.mktemp("r10") / "t"), SCHEMA, "id", num_buckets=2,
                            column_families=FAMILIES)
    t.insert(data(range(60)))
    t.upsert(data([1, 2, 7, 40], 2).select(["id", "a", "s"]))
    t.upsert(data([2, 9, 41], 3).select(["id", "n", "p"]))
    assert len(split_of(spark, t).merged) == 2
    return t


def test_projections_filters_counts_and_aggregations_read_only_the_used_columns(spark, updated):
    t = updated
    want = t.read().to_pylist()
    df = pyhudi.spark.read(spark, t.path)
    picked = df.select("n", "a")
    assert scans(picked) == [["a", "n"]]  # (no s, p, id: the f0 block of s and the others not read)
    assert tuples(picked.collect(), ["n", "a"]) == tuples(want, ["n", "a"])
    assert df.count() == 60 and scans(df.groupBy().count()) == [[]]
    # a filter on a column that is not selected: Spark reads it, then drops it
    filtered = df.filter("n > 40").select("a")
    assert scans(filtered) == [["a", "n"]]
    assert sorted(r["a"] for r in filtered.collect()) == sorted(r["a"] for r in want if r["n"] > 40)
    by_id = {r["id"]: r for r in want}
    assert [(by_id[i]["a"], by_id[i]["n"]) for i in (2, 9, 40, 41)] == [(6.0, 6), (13.5, 27), (120.0, 40), (61.5, 123)]
    keys = df.select("id")
    assert scans(keys) == [["id"]] and sorted(r["id"] for r in keys.collect()) == list(range(60))
    grouped = df.groupBy("p").agg({"a": "sum", "n": "max"}).collect()
    expected = {p: (sum(r["a"] for r in want if r["p"] == p), max(r["n"] for r in want if r["p"] == p))
                for p in ("x", "y")}
    assert {r["p"]: (r["sum(a)"], r["max(n)"]) for r in grouped} == expected


def test_a_self_join_and_a_union_of_two_projections_read_each_its_columns(spark, updated):
    t = updated
    want = t.read().to_pylist()
    df = pyhudi.spark.read(spark, t.path)
    joined = df.select("id", "a").join(df.select("id", "n", "s"), "id")
    assert sorted(scans(joined)) == [["id", "a"], ["id", "s", "n"]]
    assert tuples(joined.collect(), ["id", "a", "n", "s"]) == tuples(want, ["id", "a", "n", "s"])
    both = df.select("a").union(df.selectExpr("CAST(n AS DOUBLE) AS a"))
    assert sorted(scans(both)) == [["a"], ["n"]]
    assert sorted(r["a"] for r in both.collect()) == sorted([r["a"] for r in want] + [float(r["n"]) for r in want])


def test_a_cached_frame_and_sql_give_every_projection_exactly(spark, updated):
    t = updated
    want = t.read().to_pylist()
    cached = pyhudi.spark.read(spark, t.path).cache()
    try:
        assert tuples(cached.select("a").collect(), ["a"]) == tuples(want, ["a"])  # (fills the cache: every column)
        assert tuples(cached.select("n", "p").collect(), ["n", "p"]) == tuples(want, ["n", "p"])
        assert cached.filter("s LIKE 's2v%'").count() == 1
    finally:
        cached.unpersist()
    pyhudi.spark.sql(spark, f"CREATE TABLE r10_merged USING pyhudi LOCATION '{t.path}'")
    try:
        sql = pyhudi.spark.sql(spark, "SELECT a FROM r10_merged WHERE id > 5")
        assert scans(sql) == [["id", "a"]]
        assert sorted(r["a"] for r in sql.collect()) == sorted(r["a"] for r in want if r["id"] > 5)
        assert sorted(r["a"] for r in want if r["id"] in (7, 40)) == [21.0, 120.0]
    finally:
        pyhudi.spark.sql(spark, "DROP TABLE r10_merged")


def test_partition_columns_from_the_path_with_pruned_scans(spark, tmp_path):
    """Files without the partition column (``drop.partition.columns``): merge_frame adds it as a
    literal per partition; a query of only that column reads no stored column (a count)."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, partition_fields=["p"],
                            column_families={"f0": "a,s", "f1": "n,p"},
                            options={"hoodie.datasource.write.drop.partition.columns": "true"})
    t.insert(data(range(30)))
    t.upsert(data([3, 4], 2).select(["id", "n", "p"]))
    t.upsert(data([5, 6], 2).select(["id", "a", "p"]))
    want = t.read().to_pylist()
    assert tuples(want, ["id", "a", "n", "p"])[3:7] == [(3, 4.5, 6, "x"), (4, 6.0, 8, "y"), (5, 15.0, 5, "x"),
                                                        (6, 18.0, 6, "y")]
    df = pyhudi.spark.read(spark, t.path)
    assert len(split_of(spark, t).merged) == 2
    only_p = df.select("p")
    assert scans(only_p) == [[], []]
    assert sorted(r["p"] for r in only_p.collect()) == sorted(r["p"] for r in want)
    some = df.select("p", "a").filter("n > 5")
    assert sorted(scans(some)) == [["a", "n"], ["a", "n"]]
    assert tuples(some.collect(), ["p", "a"]) == tuples([r for r in want if r["n"] > 5], ["p", "a"])
    assert {r["p"]: r["count"] for r in df.groupBy("p").count().collect()} == {"x": 15, "y": 15}


def test_a_base_supplying_no_column_does_not_break_a_count(spark, updated):
    """The plan format allows a base that supplies no output column; a count (no column used)
    read the first base's first column — the name ``null`` when that base had none."""
    t = updated
    schema = spark_schema(t.schema, t.record_key_fields)
    split = split_scan(t, schema.names, [], as_of=None, query_type="snapshot")
    groups = merge_scan.merge_split(spark, split, schema)
    group = groups[0]
    empty = merge_scan.Source(group.bases[0].path, 0, group.bases[0].length, ())
    bare = merge_scan.MergeGroup(group.partition_path, group.file_id, group.partition_values,
                                 (empty, *group.bases), group.rows, group.patches)
    df = merge_scan.merge_frame(spark, [bare], schema)
    assert df.count() == group.rows > 0


def test_aligned_family_files_are_zipped_or_left_to_the_python_source(spark, tmp_path):
    """A bulk insert of one file per family (``insert.full.row=false``) writes the same row groups
    in every family's file: read in lockstep in the JVM, a projection of one family opens only its
    file. A compaction rewrites each family's file with row groups sized from its own bytes per
    row: not aligned, so the Python source joins them (before and after a later update)."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES,
                            options=SMALL_ROW_GROUPS)
    t.bulk_insert(data(range(3000)), options={"hoodie.pyhudi.insert.full.row": "false"})
    groups = row_groups(t)
    assert sorted(groups) == ["f0", "f1"] and groups["f0"] == groups["f1"] and len(groups["f0"]) > 4
    assert len(split_of(spark, t).merged) == 1
    df = pyhudi.spark.read(spark, t.path)
    want = t.read().to_pylist()
    assert tuples(df.collect(), SCHEMA.names) == tuples(want, SCHEMA.names)
    only_n = df.select("n")
    assert scans(only_n) == [["n"]] and sorted(r["n"] for r in only_n.collect()) == sorted(r["n"] for r in want)

    t.upsert(data(range(0, 3000, 7), 2).select(["id", "a", "s"]))
    t.upsert(data(range(0, 3000, 11), 3).select(["id", "n"]))
    t.compact()  # (with the table's row group size)
    groups = row_groups(t)
    assert groups["f0"][0] != groups["f1"][0] and sum(groups["f0"]) == sum(groups["f1"]) == 3000
    for _ in range(2):
        split = split_of(spark, t)
        assert split.merged == [] and len(split.python) == 1 and "JVM merge: merges by key: families whose files do not hold the same keys in the same rows" in split.explain()
        df = pyhudi.spark.read(spark, t.path)
        want = t.read().to_pylist()
        assert "pyhudi_merge" not in df._jdf.queryExecution().executedPlan().toString()
        assert tuples(df.collect(), SCHEMA.names) == tuples(want, SCHEMA.names)
        t.upsert(data(range(0, 3000, 13), 4).select(["id", "n"]))
    by_id = {r["id"]: r for r in t.read().to_pylist()}
    assert (by_id[77]["a"], by_id[77]["n"], by_id[143]["n"], by_id[1]["a"]) == (231.0, 231, 572, 1.5)


def test_several_python_threads_read_at_once(spark, updated):
    """Each Python thread calls through its own JVM thread; each binds it to the session's jar
    loader. A DataFrame built in one thread is collected in another too."""
    t = updated
    want = tuples(t.read().to_pylist(), SCHEMA.names)
    built = pyhudi.spark.read(spark, t.path).select("id", "a", "s", "n", "p")
    out: dict = {}

    def read(i: int) -> None:
        try:
            df = built if i == 0 else pyhudi.spark.read(spark, t.path)
            out[i] = (bool(scans(df)), tuples(df.collect(), SCHEMA.names))
        except Exception as exc:  # (reported below: an assertion in a thread would be lost)
            out[i] = repr(exc)

    threads = [threading.Thread(target=read, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert out == {i: (True, want) for i in range(3)}


SESSIONS = textwrap.dedent("""
    import sys, threading
    import pyarrow as pa
    from pyspark.sql import SparkSession
    import pyhudi, pyhudi.spark

    def session():
        s = (SparkSession.builder.master("local-cluster[1,1,1024]").config("spark.ui.enabled", "false")
             .config("spark.executor.memory", "512m").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.host", "127.0.0.1").config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
        s.sparkContext.setLogLevel("OFF")
        return s

    t = pyhudi.open_table(sys.argv[1])
    want = sorted(tuple(r.values()) for r in t.read().to_pylist())

    def check(spark, label):
        df = pyhudi.spark.read(spark, t.path)
        merged = "pyhudi_merge" in df._jdf.queryExecution().executedPlan().toString()
        print(label, merged, sorted(tuple(r) for r in df.collect()) == want, flush=True)

    spark = session()
    check(spark, "first")
    spark.stop()
    spark = session()
    check(spark, "second")  # (this thread's JVM context loader is still the stopped session's jar loader)
    threads = [threading.Thread(target=check, args=(spark, f"thread{i}")) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    jars = spark.sparkContext._jsc.sc().listJars()
    print("jars", [jars.apply(i).rsplit("/", 1)[-1] for i in range(jars.size())], flush=True)
    spark.stop()
""")


def test_executors_in_other_jvms_load_the_reader_also_after_a_new_session(tmp_path):
    """Bug: after ``spark.stop()`` a new session's SparkContext never got the jar — the driver
    thread could still load the classes through the stopped session's jar loader, so
    ``merge_source_ready`` took them as loaded — and executors in other JVMs (``local-cluster``)
    failed every task (ClassCastException deserializing the merge partitions)."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2, column_families=FAMILIES)
    t.insert(data(range(40)))
    t.upsert(data([3, 30], 2).select(["id", "a"]))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
           "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-c", SESSIONS, t.path], capture_output=True, text=True, env=env,
                          timeout=300, cwd=tmp_path)
    lines = sorted(line for line in done.stdout.splitlines() if line.split(" ")[0] in (
        "first", "second", "thread0", "thread1", "jars"))
    assert lines == ["first True True", "jars ['pyhudi-spark.jar']", "second True True", "thread0 True True",
                     "thread1 True True"], (lines, done.stderr[-2000:])

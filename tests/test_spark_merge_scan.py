"""``pyhudi.spark.read`` merging file groups with log blocks inside the JVM (issue 15 item 5;
:mod:`pyhudi.spark.merge_scan`, ``pyhudi/spark/java``): the same rows as ``Table.read`` with
default options — inserts (full-row log files), bulk inserts with one-family updates, several
updates of the same rows, nulls, strings, decimals, dates and timestamps patched in, partitions,
filters, pruned columns, time travel — which file groups took that path and why the others did
not, and the reader's own guards (a plan that does not match the files, a plan file gone).
"""

from __future__ import annotations

import datetime as dt
import decimal
import os

import pyarrow as pa
import pytest

import pyhudi
import pyhudi.spark
from pyhudi.spark import jvm, merge_scan
from pyhudi.spark.native import split_scan
from pyhudi.spark.types import spark_schema

pytestmark = pytest.mark.spark
UTC = dt.UTC
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), False), ("a", pa.float64()), ("b", pa.string()), ("d", pa.decimal128(12, 3)),
    ("day", pa.date32()), ("at", pa.timestamp("us", tz="UTC")), ("n", pa.int32()), ("p", pa.string()),
])
FAMILIES = {"f0": "a,b", "f1": "d,day,at", "f2": "n,p"}
PARTITIONED_FAMILIES = {"f0": "a,b", "f1": "d,day,at", "f2": "n"}  # (p: the partition field)


def full_rows(ids, scale: int = 1) -> pa.Table:
    ids = list(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()), "a": [i * 1.5 * scale for i in ids],
        "b": ["low" if i % 3 else "high" for i in ids],  # (few distinct values: dictionary-encoded pages)
        "d": [decimal.Decimal(i * scale) / 1000 for i in ids],
        "day": [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in ids],
        "at": [dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(hours=i * scale) for i in ids],
        "n": pa.array([i * scale for i in ids], pa.int32()), "p": ["x" if i % 2 else "y" for i in ids],
    }, schema=SCHEMA)


def rows(df_or_table) -> list[dict]:
    data = df_or_table.to_pylist() if isinstance(df_or_table, pa.Table) else [r.asDict() for r in df_or_table.collect()]
    data = [{k: (v.replace(tzinfo=None) if isinstance(v, dt.datetime) else v) for k, v in r.items()} for r in data]
    return sorted(data, key=lambda r: r["id"])


def paths(df) -> tuple[bool, bool, bool]:
    """(Spark's Parquet scan, the JVM merge reader, the Python source) in the executed plan."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    return "FileScan parquet" in plan, "pyhudi_merge" in plan, "BatchScan pyhudi[" in plan


def split_of(t, columns=None, filters=None, as_of=None, spark=None):
    names = list(columns or t.schema.names)
    split = split_scan(t, names, filters, as_of=as_of, query_type="snapshot")
    schema = spark_schema(t.schema, t.record_key_fields)
    merge_scan.merge_split(spark, split, pyhudi.spark.types.select(schema, names))
    return split


def update(ids, **columns) -> pa.Table:
    data = {"id": pa.array(list(ids), pa.int64())}
    data.update(columns)
    return pa.table(data)


def test_default_insert_and_one_family_update_are_merged_in_the_jvm(spark, tmp_path):
    """Default options: ``insert`` writes one full-row log file per file group (no base file); an
    update of one family writes that family's block with the positions of its rows."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2, column_families=FAMILIES)
    t.insert(full_rows(range(40)))
    inserted = pyhudi.spark.read(spark, t.path)
    assert paths(inserted) == (False, True, False)
    assert rows(inserted) == rows(t.read()) and len(rows(inserted)) == 40
    t.upsert(update([3, 4, 10, 39], a=[-3.0, None, -10.0, -39.0], b=["new", "high", None, "z" * 300]))
    df = pyhudi.spark.read(spark, t.path)
    assert df.schema == spark.read.format("pyhudi").load(t.path).schema  # types and nullability
    assert paths(df) == (False, True, False)
    got = rows(df)
    assert got == rows(t.read())
    assert [(r["id"], r["a"], r["b"]) for r in got if r["id"] in (3, 4, 10, 39)] == [
        (3, -3.0, "new"), (4, None, "high"), (10, -10.0, None), (39, -39.0, "z" * 300)]
    assert got[3]["n"] == 3 and got[3]["d"] == decimal.Decimal("0.003")  # (other families as inserted)
    split = split_of(t, spark=spark)
    assert len(split.merged) == 2 and split.python == [] and split.native == []
    assert "JVM merge: 2" in split.explain()
    assert df.count() == 40 and df.filter("a < 0").count() == 3


def test_bulk_insert_then_updates_of_every_type_later_block_wins(spark, tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2,
                            column_families={"f0": "a,b", "f1": "d,day,at,n,p"})
    t.bulk_insert(full_rows(range(60)))  # (default: one full-row base file per file group)
    t.upsert(update([1, 2, 50], d=pa.array([decimal.Decimal("-1.5"), None, decimal.Decimal("9.999")],
                                           pa.decimal128(12, 3)),
                    day=pa.array([dt.date(1999, 1, 1), dt.date(2000, 2, 29), None], pa.date32()),
                    at=pa.array([None, dt.datetime(1970, 1, 1, tzinfo=UTC), dt.datetime(2030, 5, 5, tzinfo=UTC)],
                                SCHEMA.field("at").type)))
    t.upsert(update([2, 3], n=pa.array([-2, None], pa.int32())))
    t.upsert(update([2, 50], d=pa.array([decimal.Decimal("2.5"), decimal.Decimal("5.5")], pa.decimal128(12, 3))))
    df = pyhudi.spark.read(spark, t.path)
    assert paths(df) == (False, True, False)
    got = rows(df)
    assert got == rows(t.read())
    by_id = {r["id"]: r for r in got}
    assert (by_id[2]["d"], by_id[2]["day"], by_id[2]["at"], by_id[2]["n"]) == (
        decimal.Decimal("2.500"), dt.date(2000, 2, 29), dt.datetime(1970, 1, 1), -2)
    assert (by_id[50]["d"], by_id[50]["day"]) == (decimal.Decimal("5.500"), None)
    assert (by_id[1]["d"], by_id[1]["at"], by_id[3]["n"]) == (decimal.Decimal("-1.500"), None, None)
    assert by_id[1]["a"] == 1.5 and by_id[1]["b"] == "low"


@pytest.mark.parametrize("write", ["insert", "bulk_insert", "per_family"])
def test_updates_of_several_families_merge_in_the_jvm(spark, tmp_path, write):
    """Writers updating different families between compactions (RFC-80's many writers): each
    family's blocks are written over its own columns at their positions."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2, column_families=FAMILIES)
    options = {"hoodie.pyhudi.insert.full.row": "false"} if write == "per_family" else None
    getattr(t, "bulk_insert" if write == "per_family" else write)(full_rows(range(50)), options=options)
    t.upsert(update([1, 2, 3], a=[-1.0, -2.0, -3.0], b=["u1", "u2", "u3"]))
    t.upsert(update([2, 3, 4], n=pa.array([-20, -30, -40], pa.int32()), p=["q", "q", "q"]))
    t.upsert(update([3, 49], d=pa.array([decimal.Decimal("3.3"), None], pa.decimal128(12, 3)),
                    day=pa.array([None, dt.date(2001, 1, 1)], pa.date32()),
                    at=pa.array([None, None], SCHEMA.field("at").type)))
    t.upsert(update([1], a=[-100.0], b=["again"]))
    split = split_of(t, spark=spark)
    assert len(split.merged) == 2 and split.python == [], split.explain()
    df = pyhudi.spark.read(spark, t.path)
    assert paths(df) == (False, True, False)
    got = rows(df)
    assert got == rows(t.read())
    by_id = {r["id"]: r for r in got}
    assert (by_id[1]["a"], by_id[1]["b"], by_id[1]["n"]) == (-100.0, "again", 1)
    assert (by_id[3]["a"], by_id[3]["n"], by_id[3]["p"], by_id[3]["d"], by_id[3]["at"]) == (
        -3.0, -30, "q", decimal.Decimal("3.300"), None)
    assert (by_id[49]["d"], by_id[49]["day"], by_id[49]["a"]) == (None, dt.date(2001, 1, 1), 73.5)
    pruned = pyhudi.spark.read(spark, t.path, columns=["id", "n"])
    assert rows(pruned) == rows(t.read(columns=["id", "n"])) and paths(pruned)[1]


def test_partitions_filters_columns_and_time_travel(spark, tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2, partition_fields=["p"],
                            column_families=PARTITIONED_FAMILIES)
    t.insert(full_rows(range(30)))
    first = [i.completion_time for i in t.timeline][-1]
    t.upsert(update([1, 2, 7], a=[100.0, 200.0, 700.0], p=["x", "y", "x"]))
    split = split_of(t, spark=spark)
    assert len(split.merged) == 4 and split.python == []  # (2 partitions x 2 buckets)
    df = pyhudi.spark.read(spark, t.path, columns=["id", "a", "p"], filters=[("p", "=", "x"), ("a", ">", 50)])
    assert df.columns == ["id", "a", "p"] and paths(df)[1]
    assert rows(df) == rows(t.read(columns=["id", "a", "p"], filters=[("p", "=", "x"), ("a", ">", 50)]))
    assert [(r["id"], r["a"]) for r in rows(df)] == [(1, 100.0), (7, 700.0)]
    old = pyhudi.spark.read(spark, t.path, **{"as.of.instant": first})
    assert rows(old) == rows(t.read(as_of=first)) and [r["a"] for r in rows(old)][:3] == [0.0, 1.5, 3.0]
    assert paths(old) == (False, True, False)
    every = pyhudi.spark.read(spark, t.path)
    assert rows(every) == rows(t.read()) and [r["a"] for r in rows(every)][:3] == [0.0, 100.0, 200.0]
    # SQL's reads go the same way
    pyhudi.spark.sql(spark, f"CREATE TABLE merged_t USING pyhudi LOCATION '{t.path}'")
    sql = pyhudi.spark.sql(spark, "SELECT id, a FROM merged_t WHERE id < 3")
    assert sorted((r["id"], r["a"]) for r in sql.collect()) == [(0, 0.0), (1, 100.0), (2, 200.0)]
    assert paths(sql)[1]


def test_merges_by_key_stay_on_the_python_source_with_their_reason(spark, tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
    t.bulk_insert(full_rows(range(10)))
    t.upsert(update([1], a=[-1.0]))
    assert len(split_of(t, spark=spark).merged) == 1
    t.upsert(full_rows([100]))  # a new key: the block adds a row, merged by key
    split = split_of(t, spark=spark)
    assert split.merged == [] and len(split.python) == 1
    assert "JVM merge: merges by key" in split.explain()
    df = pyhudi.spark.read(spark, t.path)
    assert paths(df) == (False, False, True) and rows(df) == rows(t.read()) and len(rows(df)) == 11
    u = pyhudi.create_table(str(tmp_path / "u"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
    u.bulk_insert(full_rows(range(10)))
    u.delete(pa.table({"id": pa.array([4], pa.int64())}))
    assert split_of(u, spark=spark).merged == []
    assert [r["id"] for r in rows(pyhudi.spark.read(spark, u.path))] == [0, 1, 2, 3, 5, 6, 7, 8, 9]
    off = pyhudi.spark.read(spark, t.path, **{"hoodie.pyhudi.read.spark.jvm.merge": "false"})
    assert paths(off) == (False, False, True) and rows(off) == rows(t.read())


def test_event_time_ordering_stays_on_the_python_source(spark, tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1,
                            column_families={"f0": "a,b;n", "f1": "d,day,at,p"})
    t.bulk_insert(full_rows(range(10)))
    t.upsert(update([2, 3], a=[-2.0, -3.0], b=["u", "u"], n=pa.array([0, 100], pa.int32())))  # 2 loses on n
    split = split_of(t, spark=spark)
    assert split.merged == [] and "JVM merge: merges by key" in split.explain()
    got = rows(pyhudi.spark.read(spark, t.path))
    assert got == rows(t.read()) and (got[2]["a"], got[3]["a"]) == (3.0, -3.0)


def test_without_a_jdk_reads_go_through_the_python_source(spark, tmp_path, monkeypatch):
    monkeypatch.setenv("PYHUDI_JVM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(jvm, "_javac", lambda: None)
    monkeypatch.setattr(jvm, "_built", {})
    assert jvm.merge_jar() == "no Java compiler (javac) on PATH or in JAVA_HOME: the merge reader cannot be built"
    assert jvm.session_jars("a.jar") == "a.jar"
    monkeypatch.setattr(merge_scan, "merge_source_ready", lambda spark: jvm.merge_jar())
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
    t.insert(full_rows(range(5)))
    split = split_of(t, spark=spark)
    assert split.merged == [] and "JVM merge: no Java compiler" in split.explain()
    df = pyhudi.spark.read(spark, t.path)
    assert paths(df) == (False, False, True) and rows(df) == rows(t.read())


def test_the_jar_is_built_once_per_sources_and_spark(tmp_path, monkeypatch):
    monkeypatch.setenv("PYHUDI_JVM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(jvm, "_built", {})
    jar = jvm.merge_jar()
    assert isinstance(jar, os.PathLike) and jar.exists() and jar.parent.parent == tmp_path / "cache"
    import zipfile
    names = zipfile.ZipFile(jar).namelist()
    assert "io/pyhudi/spark/MergeReader.class" in names
    assert zipfile.ZipFile(jar).read(jvm._REGISTER).decode().strip() == jvm.MERGE_SOURCE
    stamp = jar.stat().st_mtime_ns
    monkeypatch.setattr(jvm, "_built", {})
    assert jvm.merge_jar() == jar and jar.stat().st_mtime_ns == stamp  # (the cached jar, not rebuilt)
    assert jvm.session_jars("a.jar") == f"a.jar,{jar}"


def test_the_reader_refuses_a_plan_that_does_not_match_the_files(spark, tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
    t.insert(full_rows(range(5)))
    t.upsert(update([1], a=[-1.0]))
    task = t.plan_scan().tasks[0]
    schema = spark_schema(t.schema, t.record_key_fields)
    group = merge_scan.merge_group(task, schema.names, set(schema.names))
    assert isinstance(group, merge_scan.MergeGroup) and len(group.patches) == 1
    wrong_rows = group.__class__(**{**group.__dict__, "rows": 6})
    with pytest.raises(Exception, match="holds 5 rows, the plan says 6"):
        merge_scan.merge_frame(spark, [wrong_rows], schema).collect()
    block, positions = group.patches[0]
    extra = group.__class__(**{**group.__dict__, "patches": ((block, [0, 1]),)})
    with pytest.raises(Exception, match="holds 1 rows for 2 positions"):
        merge_scan.merge_frame(spark, [extra], schema).collect()
    assert rows(merge_scan.merge_frame(spark, [group], schema)) == rows(t.read())
    df = merge_scan.merge_frame(spark, [group], schema)  # (planned at its first action)
    for plan in merge_scan._plan_dir().iterdir():
        plan.unlink()
    with pytest.raises(Exception, match="is gone: the Python process that planned this read has ended"):
        df.collect()


def test_reads_from_another_python_thread_find_the_merge_reader(spark, tmp_path):
    """``ADD JAR`` binds the jar's loader to the JVM thread that ran it; each Python thread calls
    through its own JVM thread, so every read binds its thread to the session's jar loader."""
    import threading

    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
    t.insert(full_rows(range(6)))
    t.upsert(update([5], a=[-5.0]))
    assert rows(pyhudi.spark.read(spark, t.path)) == rows(t.read())
    out: dict = {}

    def read() -> None:
        try:
            df = pyhudi.spark.read(spark, t.path)
            out["rows"], out["paths"] = rows(df), paths(df)
        except Exception as exc:  # (reported below: an assertion in a thread would be lost)
            out["error"] = repr(exc)

    thread = threading.Thread(target=read)
    thread.start()
    thread.join()
    assert out.get("error") is None and out["paths"] == (False, True, False)
    assert out["rows"] == rows(t.read()) and out["rows"][5]["a"] == -5.0


def test_a_family_added_by_alter_reads_null_until_written(spark, tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
    t.insert(full_rows(range(6)))
    t.alter({"hoodie.colFamily.g": "extra"}, new_columns={"extra": pa.int64()})
    t.upsert(update([2], a=[-2.0], b=["u"]))
    split = split_of(t, spark=spark)  # (the new family has no file in the file group: merged by key)
    assert split.merged == [] and "JVM merge: merges by key" in split.explain()
    got = rows(pyhudi.spark.read(spark, t.path))
    assert got == rows(t.read()) and [r["extra"] for r in got] == [None] * 6 and got[2]["a"] == -2.0
    t.upsert(pa.table({"id": pa.array(range(6), pa.int64()), "extra": pa.array([7] * 6, pa.int64())}))
    df = pyhudi.spark.read(spark, t.path)
    assert rows(df) == rows(t.read()) and [r["extra"] for r in rows(df)] == [7] * 6


def test_spark_prunes_the_columns_the_merge_reader_reads(spark, tmp_path):
    """A projection after the read (SQL's SELECT list, ``select``, ``count``) reaches the merge
    reader: it opens only the files and blocks that supply the columns used."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
    t.insert(full_rows(range(20)))
    t.upsert(update([3, 7], a=[-3.0, -7.0], b=["u", "v"]))
    t.upsert(update([7, 8], n=pa.array([-7, -8], pa.int32()), p=["q", "q"]))
    df = pyhudi.spark.read(spark, t.path)
    assert df.count() == 20
    picked = df.select("n", "a").filter("id > 5")
    plan = picked._jdf.queryExecution().executedPlan().toString()
    import re
    scanned = re.search(r"BatchScan pyhudi_merge\[([^\]]*)\]", plan).group(1)
    assert [c.split("#")[0] for c in scanned.split(", ")] == ["id", "a", "n"]  # (not all 8 columns)
    assert sorted((r["n"], r["a"]) for r in picked.collect()) == sorted(
        (r["n"], r["a"]) for r in t.read(columns=["id", "n", "a"], filters=[("id", ">", 5)]).to_pylist())
    assert [r["b"] for r in df.select("b").collect()].count("u") == 1
    assert sorted(r["p"] for r in df.select("p").collect()) == sorted(r["p"] for r in t.read(columns=["p"]).to_pylist())


def test_a_failed_build_is_recorded_so_later_processes_do_not_compile_again(tmp_path, monkeypatch):
    """A build javac refuses is kept beside the jar: the next process (an empty in-memory cache)
    falls back at once, without running javac; another javac, or removing the record, builds
    again."""
    calls = tmp_path / "calls"
    fake = tmp_path / "javac"
    fake.write_text(f"#!/bin/sh\necho run >> {calls}\necho 'MergeReader.java:1: error: cannot find symbol' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PYHUDI_JVM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(jvm, "_javac", lambda: str(fake))
    monkeypatch.setattr(jvm, "_built", {})
    first = jvm.merge_jar()
    assert first == "javac failed to build the merge reader:\nMergeReader.java:1: error: cannot find symbol"
    assert calls.read_text().count("run") == 1
    [record] = (tmp_path / "cache").rglob(jvm._FAILED)
    monkeypatch.setattr(jvm, "_built", {})  # (a new process)
    again = jvm.merge_jar()
    assert again.startswith(first) and f"recorded by an earlier build in {record}" in again
    assert calls.read_text().count("run") == 1 and jvm.session_jars("a.jar") == "a.jar"
    other = tmp_path / "javac2"
    other.write_text(fake.read_text())
    other.chmod(0o755)
    monkeypatch.setattr(jvm, "_javac", lambda: str(other))
    monkeypatch.setattr(jvm, "_built", {})
    assert jvm.merge_jar() == first and calls.read_text().count("run") == 2  # another compiler: tried
    record.unlink()
    monkeypatch.setattr(jvm, "_javac", lambda: str(fake))
    monkeypatch.setattr(jvm, "_built", {})
    assert jvm.merge_jar() == first and calls.read_text().count("run") == 3  # record removed: tried

"""Review of the JVM merge reader for Spark (:mod:`pyhudi.spark.merge_scan`, ``pyhudi/spark/java``):
``pyhudi.spark.read`` gives exactly ``Table.read``'s rows with default options where the JVM merges
— positions crossing Spark's batches and row groups (batch sizes 5 and 4096), every flat type
(dates and timestamps before 1582, 38-digit decimals, binary, small ints), an uncommitted write
left by a crashed writer, a pending compaction, a rollback, partition columns stored or not — and
where it must not (a family added by ALTER and never written, soft deletes, key filters, Apache
Hudi's own tables); the reader's resources and its loading (no file left open when a partition
fails, Spark Connect sessions, a jar cache emptied under a running process).
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import pyhudi
import pyhudi.spark
from conftest import FIXTURES_DIR, extract_table
from pyhudi.errors import ConfigError
from pyhudi.spark import jvm, merge_scan
from pyhudi.spark.native import split_scan
from pyhudi.spark.types import select, spark_schema
from table_model import InjectedFailure, failing_file_write

pytestmark = pytest.mark.spark
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.float64()), ("s", pa.string()), ("n", pa.int32()),
                    ("p", pa.string())])
FAMILIES = {"f0": "a,s", "f1": "n,p"}
SMALL_ROW_GROUPS = {"hoodie.parquet.block.size": str(8 << 10)}


def data(ids, version: int = 1) -> pa.Table:
    ids = np.asarray(list(ids), dtype=np.int64)
    return pa.table({
        "id": ids, "a": ids * 1.5 * version,
        # (distinct strings of varying length: dictionary pages give way to plain ones)
        "s": [f"s{i}v{version}" + "x" * (i % 40) for i in ids.tolist()],
        "n": pa.array((ids * version) % 1000, pa.int32()), "p": ["x" if i % 2 else "y" for i in ids.tolist()],
    }, schema=SCHEMA)


def normal(rows: list[dict]) -> list[dict]:
    """Rows by key (timestamps without their zone: Spark returns them naive)."""
    return sorted(({k: v.replace(tzinfo=None) if isinstance(v, dt.datetime) else v for k, v in r.items()}
                   for r in rows), key=lambda r: r.get("id", r.get("key")))


def spark_rows(df) -> list[dict]:
    return normal([r.asDict() for r in df.collect()])


def split_of(spark, t, columns=None, filters=None):
    names = list(columns or t.schema.names)
    split = split_scan(t, names, [tuple(f) for f in filters or ()], as_of=None, query_type="snapshot")
    merge_scan.merge_split(spark, split, select(spark_schema(t.schema, t.record_key_fields), names))
    return split


def merged_in_jvm(df) -> bool:
    return "pyhudi_merge" in df._jdf.queryExecution().executedPlan().toString()


def test_a_family_added_by_alter_and_never_written_stays_on_the_python_source(spark, tmp_path):
    """Bug: the planner indexed the empty input list of such a family (IndexError out of every
    ``pyhudi.spark.read`` of the table, whatever the columns). Read for its columns, the kernel
    fills them with nulls (the JVM reader cannot); read for its keys only, it adds no row."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
    t.bulk_insert(data(range(50)))
    t.upsert(data([1, 2], 2).select(["id", "a"]))
    t.alter(set_properties={"hoodie.columnFamily.f2": "z"}, new_columns={"z": pa.int64()})
    split = split_of(spark, t)
    assert split.merged == [] and "JVM merge: merges by key" in split.explain()
    df = pyhudi.spark.read(spark, t.path)
    got = spark_rows(df)
    assert got == normal(t.read().to_pylist()) and len(got) == 50
    by_id = {r["id"]: dict(r) for r in got}
    assert (by_id[1]["a"], by_id[1]["z"], by_id[3]["a"], by_id[3]["n"]) == (3.0, None, 4.5, 3)
    # the old families alone still merge in the JVM (f2 is not read)
    old = pyhudi.spark.read(spark, t.path, columns=["id", "a", "n"])
    assert merged_in_jvm(old) and spark_rows(old) == normal(t.read(columns=["id", "a", "n"]).to_pylist())


def test_positions_cross_spark_batches_and_row_groups(spark, tmp_path):
    """Three file groups of 8 row groups each; updates of both families (every 4th row, every 9th,
    then a run of 100 rows), read with Spark batches of 5 rows (a block's batch spans several
    base batches and the other way round) and of 4096 (a batch spans the row group)."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=3, column_families=FAMILIES)
    t.bulk_insert(data(range(3000)), options=SMALL_ROW_GROUPS)
    t.upsert(data(range(0, 3000, 4), 2).select(["id", "a", "s"]), options=SMALL_ROW_GROUPS)
    t.upsert(data(range(5, 3000, 9), 3).select(["id", "n"]), options=SMALL_ROW_GROUPS)
    t.upsert(data(range(100, 200), 4).select(["id", "s"]), options=SMALL_ROW_GROUPS)
    import pyarrow.parquet as pq
    base = next(Path(t.path).glob("*.parquet"))
    assert pq.ParquetFile(base).metadata.num_row_groups > 4
    assert len(split_of(spark, t).merged) == 3
    want = normal(t.read().to_pylist())
    by_id = {r["id"]: dict(r) for r in want}
    assert (by_id[106]["a"], by_id[106]["s"], by_id[106]["n"]) == (159.0, "s106v4" + "x" * 26, 106)
    assert (by_id[5]["n"], by_id[8]["a"], by_id[9]["a"]) == (15, 24.0, 13.5)
    for size in ("5", "4096"):
        spark.conf.set("spark.sql.parquet.columnarReaderBatchSize", size)
        try:
            df = pyhudi.spark.read(spark, t.path)
            assert merged_in_jvm(df) and spark_rows(df) == want, size
        finally:
            spark.conf.unset("spark.sql.parquet.columnarReaderBatchSize")


TYPES = pa.schema([
    pa.field("id", pa.int64(), False), ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()),
    ("f32", pa.float32()), ("bin", pa.binary()), ("d38", pa.decimal128(38, 10)), ("d5", pa.decimal128(5, 2)),
    ("tms", pa.timestamp("ms", tz="UTC")), ("old", pa.timestamp("us")), ("ls", pa.large_string()),
    ("day", pa.date32()),
])


def typed(ids, k: int) -> pa.Table:
    ids = list(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()), "b": [(i * k) % 2 == 0 for i in ids],
        "i8": pa.array([(i * k) % 100 for i in ids], pa.int8()), "i16": pa.array([(i * k) % 1000 for i in ids], pa.int16()),
        "f32": pa.array([i * k * 0.5 for i in ids], pa.float32()), "bin": [bytes([i % 256, k]) * (i % 7) for i in ids],
        "d38": [decimal.Decimal(i * k) * 10**17 + decimal.Decimal("0.0000000001") if i % 5 else None for i in ids],
        "d5": [decimal.Decimal(i * k % 999) / 100 for i in ids],
        "tms": [dt.datetime(2020, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=i * k) for i in ids],
        "old": [dt.datetime(1500, 1, 1) + dt.timedelta(days=i * k) for i in ids],  # (before 1582: no rebase)
        "ls": [f"v{i * k}" * (i % 3) or None for i in ids],
        "day": [dt.date(1200, 1, 1) + dt.timedelta(days=i * k) for i in ids],
    }, schema=TYPES)


def test_every_flat_type_is_patched_exactly(spark, tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), TYPES, "id", num_buckets=1,
                            column_families={"f0": "b,i8,i16,f32,bin", "f1": "d38,d5,tms,old,ls,day"})
    t.bulk_insert(typed(range(5000), 1))
    t.upsert(typed(range(0, 5000, 3), 2))
    t.upsert(typed(range(4000, 4500), 3).select(["id", "b", "i8", "ls", "old"]))
    df = pyhudi.spark.read(spark, t.path)
    want = normal(t.read().to_pylist())
    assert merged_in_jvm(df) and spark_rows(df) == want
    row = want[4002]
    assert (row["id"], row["i8"], row["ls"], row["old"], row["day"]) == (
        4002, 6, None, dt.datetime(1500, 1, 1) + dt.timedelta(days=12006), dt.date(1200, 1, 1) + dt.timedelta(days=8004))
    assert row["d38"] == decimal.Decimal(8004) * 10**17 + decimal.Decimal("0.0000000001")


def test_an_uncommitted_write_of_a_crashed_writer_is_not_merged(spark, tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2, column_families=FAMILIES)
    t.bulk_insert(data(range(40)))
    t.upsert(data([1, 2, 3], 2).select(["id", "a"]))
    with pytest.raises(InjectedFailure), failing_file_write(2, crash=True):
        t.upsert(data(range(0, 40, 3), 5))  # (one log file written, the instant left inflight)
    assert len([p for p in os.listdir(t.path) if ".log." in p]) > 2  # (the committed update wrote 2)
    assert len(split_of(spark, t).merged) == 2
    df = pyhudi.spark.read(spark, t.path)
    got = spark_rows(df)
    assert merged_in_jvm(df) and got == normal(t.read().to_pylist())
    assert [r["a"] for r in got[:4]] == [0.0, 3.0, 6.0, 9.0]


def test_pending_compaction_then_rollback(spark, tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1)
    t.bulk_insert(data(range(100)))
    t.upsert(data([3, 5], 2))
    assert t.schedule_compaction() is not None
    t.upsert(data([5, 6], 3))  # (a new slice over the pending compaction's)
    df = pyhudi.spark.read(spark, t.path)
    got = spark_rows(df)
    assert merged_in_jvm(df) and got == normal(t.read().to_pylist())
    assert [got[i]["a"] for i in (3, 5, 6, 7)] == [9.0, 22.5, 27.0, 10.5]
    t.compact()
    undone = t.upsert(data([6, 9], 4))
    t.rollback(undone)
    df = pyhudi.spark.read(spark, t.path)
    got = spark_rows(df)
    assert got == normal(t.read().to_pylist()) and [got[i]["a"] for i in (6, 9)] == [27.0, 13.5]


@pytest.mark.parametrize("drop", ["false", "true"])
def test_an_int_partition_column_stored_or_not(spark, tmp_path, drop):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2, partition_fields=["n"],
                            options={"hoodie.datasource.write.drop.partition.columns": drop})
    t.bulk_insert(data(range(30)))
    t.upsert(data([3, 5]).set_column(1, "a", pa.array([-1.0, -2.0])))
    assert len(split_of(spark, t).merged) == 2
    df = pyhudi.spark.read(spark, t.path)
    got = spark_rows(df)
    assert got == normal(t.read().to_pylist()) and [(r["n"], r["a"]) for r in got[3:6]] == [
        (3, -1.0), (4, 6.0), (5, -2.0)]


def test_soft_deletes_and_key_filters_stay_on_the_python_source(spark, tmp_path):
    schema = SCHEMA.append(pa.field("_hoodie_is_deleted", pa.bool_()))
    t = pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=1)
    t.bulk_insert(data(range(20)).append_column("_hoodie_is_deleted", pa.array([False] * 20)))
    t.upsert(data([7, 8], 3).append_column("_hoodie_is_deleted", pa.array([True, False])))
    for columns in (None, ["id", "a"]):
        assert split_of(spark, t, columns).merged == []
        got = spark_rows(pyhudi.spark.read(spark, t.path, columns=columns))
        assert got == normal(t.read(columns=columns).to_pylist())
        assert [r["id"] for r in got][6:9] == [6, 8, 9] and got[7]["a"] == 36.0
    u = pyhudi.create_table(str(tmp_path / "u"), SCHEMA, "id", num_buckets=1)
    u.bulk_insert(data(range(20)))
    u.upsert(data([5], 2))
    split = split_of(spark, u, filters=[("id", "=", 5)])
    assert split.merged == [] and "JVM merge: merges by key" in split.explain()
    got = spark_rows(pyhudi.spark.read(spark, u.path, filters=[("id", "=", 5)]))
    assert got == normal(u.read(filters=[("id", "=", 5)]).to_pylist()) and got[0]["a"] == 15.0


@pytest.mark.parametrize("name", ["sample_table/mor/parquet/v6_nonpartitioned.zip",
                                  "sample_table/mor/parquet/v6_nonpartitioned_rollback.zip",
                                  "quickstart_trips_table/mor/avro/table_partial_update.zip"])
def test_apache_hudi_tables_with_log_blocks_read_exactly(spark, tmp_path, name):
    """Hudi's own Parquet and Avro log blocks (ordered by an ordering field): merged by key in the
    Python source, with the same rows as Table.read (checked against the gold rows elsewhere)."""
    t = pyhudi.open_table(str(extract_table(FIXTURES_DIR / name, tmp_path / "t")))
    columns = [f.name for f in t.schema if not pa.types.is_nested(f.type)]
    split = split_of(spark, t, columns)
    assert split.merged == [] and split.python
    got = spark_rows(pyhudi.spark.read(spark, t.path, columns=columns))
    assert got == normal(t.read(columns=columns).to_pylist()) and got


# --------------------------------------------------------------------------- the reader's resources
def _open_files(pid: int, path: str) -> list[str]:
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(path):
            found.append(target)
    return found


def test_a_partition_that_fails_to_open_leaves_no_file_open(spark, tmp_path):
    """Bug: a block whose rows did not match its positions was opened and never closed (the
    reader's constructor threw before keeping it): each failed read leaked a file handle."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
    t.bulk_insert(data(range(5)))
    t.upsert(data([1], 2).select(["id", "a"]))
    schema = spark_schema(t.schema, t.record_key_fields)
    group = merge_scan.merge_group(t.plan_scan().tasks[0], schema.names, set(schema.names))
    block, _ = group.patches[0]
    wrong = merge_scan.MergeGroup(**{**group.__dict__, "patches": ((block, np.array([0, 1])),)})
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    with pytest.raises(Exception, match="holds 1 rows for 2 positions"):
        merge_scan.merge_frame(spark, [wrong], schema).collect()
    assert _open_files(pid, t.path) == []


def test_a_spark_connect_session_reads_through_the_python_source(spark, tmp_path):
    """Bug: a Spark Connect session has no ``sparkContext`` here (it raises, out of
    ``pyhudi.spark.read``): the merge reader is not loaded and the file groups keep the Python
    source, with the reason."""
    class Connect:
        def __getattr__(self, name):  # (as pyspark.sql.connect.session.SparkSession does)
            if name in ("_jsc", "_jvm", "_jsparkSession", "sparkContext"):
                raise AttributeError(f"[JVM_ATTRIBUTE_NOT_SUPPORTED] {name}")
            raise AttributeError(name)

    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
    t.bulk_insert(data(range(5)))
    t.upsert(data([1], 2).select(["id", "a"]))
    split = split_scan(t, t.schema.names, [], as_of=None, query_type="snapshot")
    assert merge_scan.merge_split(Connect(), split, spark_schema(t.schema, t.record_key_fields)) == []
    assert split.merged == [] and len(split.python) == 1
    assert "JVM merge: a Spark Connect session has no JVM in this process" in split.explain()
    with pytest.raises(ConfigError, match="the JVM merge reader is not available: a Spark Connect session"):
        merge_scan.merge_frame(Connect(), [], spark_schema(t.schema, t.record_key_fields))


def test_a_jar_cache_emptied_meanwhile_is_built_again(tmp_path, monkeypatch):
    monkeypatch.setenv("PYHUDI_JVM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(jvm, "_built", {})
    builds = []

    def build(jars, target):
        builds.append(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"jar")
        return target

    monkeypatch.setattr(jvm, "_build", build)
    jar = jvm.merge_jar()
    assert jvm.merge_jar() == jar and len(builds) == 1  # (kept for the process)
    jar.unlink()  # (a user clears ~/.cache)
    assert jvm.merge_jar() == jar and jar.exists() and builds == [jar, jar]

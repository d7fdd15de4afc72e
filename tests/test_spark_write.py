"""Writing through Spark (issue 5 item 2): ``pyhudi.spark.write`` and ``df.write.format("pyhudi")``
with Hudi's option names; every operation; results identical to the local engine; failed tasks
leave nothing visible and nothing behind.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

import pyhudi
import pyhudi.spark
from pyhudi.errors import ConfigError, SchemaError
from pyhudi.spark import options as opt
from pyhudi.spark.writer import _table_settings, check_columns

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spark_helpers import SCHEMA, commit_stats, data_files, leftovers, timeline_states

DDL = "id bigint NOT NULL, a double, b string, ts bigint, c bigint, p string"
FAMILIES = {"fA": "a,b;ts", "fC": "c"}
HUDI_OPTIONS = {
    "hoodie.table.name": "sw",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "p",
    "hoodie.index.type": "BUCKET",
    "hoodie.bucket.index.num.buckets": "3",
    "hoodie.colFamily.fA": "a,b;ts",
    "hoodie.colFamily.fC": "c",
}


def rows_of(ids, tag: int, part=None) -> pa.Table:
    ids = list(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()), "a": [i + tag / 10 for i in ids], "b": [f"b{i}-{tag}" for i in ids],
        "ts": [tag] * len(ids), "c": [i * 100 + tag for i in ids],
        "p": [part or ("x" if i % 3 else "y") for i in ids],
    }, schema=SCHEMA)


SPARK_TYPES = {"id": "bigint", "a": "double", "b": "string", "ts": "bigint", "c": "bigint", "p": "string"}


def df_of(spark, table: pa.Table, ddl: str | None = None):
    schema = ddl or ", ".join(f"{f.name} {SPARK_TYPES[f.name]}" + (" NOT NULL" if f.name == "id" else "")
                              for f in table.schema)
    return spark.createDataFrame(table.to_pylist(), schema)


def sorted_rows(t) -> list[dict]:
    return sorted(t.read().to_pylist(), key=lambda r: r["id"])


# --------------------------------------------------------------------------- pyhudi.spark.write
def test_spark_write_every_operation_matches_the_local_engine(spark, tmp_path):
    local = pyhudi.create_table(str(tmp_path / "local"), SCHEMA, "id", name="sw", num_buckets=3,
                                partition_fields=["p"], column_families=FAMILIES)
    path = str(tmp_path / "spark")
    dups = pa.table({"id": pa.array([3, 3, 7], pa.int64()), "a": [30.0, 31.0, 70.0], "b": ["B3", "B3x", "B7"],
                     "ts": [9, 8, 9], "c": [300, 301, 700], "p": ["y", "y", "x"]}, schema=SCHEMA)
    steps = [
        ("upsert", pa.concat_tables([rows_of(range(20), 1), dups])),  # duplicate keys: deduped per family
        ("upsert", pa.table({"id": pa.array([1, 2, 40], pa.int64()), "c": [-1, -2, -40], "p": ["x", "x", "x"]})),
        ("insert", rows_of(range(20, 24), 2)),
        ("delete", pa.table({"id": pa.array([4, 5], pa.int64()), "p": ["x", "x"]})),
        ("bulk_insert", rows_of(range(50, 56), 3, part="z")),  # new partition: full-row base files
    ]
    instants: dict[str, list[str]] = {"local": [], "spark": []}
    for operation, data in steps:
        instants["local"].append(getattr(local, operation)(data))
        instants["spark"].append(pyhudi.spark.write(df_of(spark, data), path, operation=operation,
                                                    **HUDI_OPTIONS))
    remote = pyhudi.open_table(path)
    assert remote.column_families == local.column_families  # family names keep their case
    assert sorted_rows(remote) == sorted_rows(local)
    got = {r["id"]: r for r in sorted_rows(remote)}
    assert got[3]["a"] == 30.0 and got[3]["c"] == 301  # fA: highest ts wins; fC: later arrival wins
    assert got[40] == {"id": 40, "a": None, "b": None, "ts": None, "c": -40, "p": "x"}
    assert 4 not in got and 5 not in got and len(got) == 20 + 1 + 4 - 2 + 6
    spark_files = data_files(Path(path), instants["spark"], tokens=False)
    assert spark_files == data_files(Path(local.path), instants["local"], tokens=False)
    assert [f for f in spark_files if f.startswith("z/")] == [  # one full-row base file per new group (default)
        f"z/0000000{b}-0000-0000-0000-000000000000-0_<T>_<I4>.parquet"
        for b in sorted({int(x.split("/")[1][:8]) for x in spark_files if x.startswith("z/")})]
    assert commit_stats(remote, instants["spark"], tokens=False) == commit_stats(local, instants["local"], tokens=False)
    assert [s[0] for s in timeline_states(remote)] == ["deltacommit"] * 5
    assert leftovers(Path(path)) == []


# --------------------------------------------------------------------------- tables without buckets
COW_OPTIONS = {"hoodie.table.name": "cw", "hoodie.datasource.write.recordkey.field": "id",
               "hoodie.parquet.small.file.limit": "0"}


def cow_tables(tmp_path):
    """Two copies of a copy-on-write table without buckets, two file groups per partition."""
    copies = []
    for name in ("local", "spark"):
        t = pyhudi.create_table(str(tmp_path / name), SCHEMA, "id", name="cw", table_type="COPY_ON_WRITE",
                                partition_fields=["p"], ordering_field="ts",
                                options={"hoodie.parquet.small.file.limit": "0"})
        t.insert(rows_of(range(12), 1))
        t.insert(rows_of(range(12, 24), 1))
        copies.append(t)
    return copies


def base_files_of(t, instant: str) -> dict[str, int]:
    """{file id: base files of ``instant``} over the table's file groups."""
    return {g.file_id: sum(1 for b in g.base_files if b.instant == instant) for g in t.file_groups()}


def test_spark_write_routes_rows_by_file_group_on_tables_without_buckets(spark, tmp_path):
    """Copy-on-write: every file group touched gets ONE new base version, however the input is
    split, and the rows equal the local engine's (duplicate keys in different input partitions
    are de-duplicated by the ordering field in one task)."""
    local, remote = cow_tables(tmp_path)
    assert len(remote.file_groups()) == 4
    update = pa.concat_tables([rows_of(range(0, 24, 2), 5), rows_of([30, 31], 5),  # updates + new keys
                               rows_of([4], 9), rows_of([6], 3)])  # 4: ts 9 wins; 6: ts 5 wins over 3
    local.upsert(update)
    df = df_of(spark, update).repartition(4)  # rows of one file group spread over several partitions
    instant = pyhudi.spark.write(df, remote.path, operation="upsert", **COW_OPTIONS)
    assert sorted_rows(remote) == sorted_rows(local)
    got = {r["id"]: r for r in sorted_rows(remote)}
    assert got[4]["ts"] == 9 and got[6]["ts"] == 5 and got[8]["ts"] == 5 and got[9]["ts"] == 1
    assert set(base_files_of(remote, instant).values()) <= {0, 1}  # never two versions of one group
    assert sum(base_files_of(remote, instant).values()) >= 4 + 2 - 2  # all 4 groups + new groups
    deleted = pyhudi.spark.write(df_of(spark, rows_of([0, 1, 2, 3, 30], 0)).repartition(3), remote.path,
                                 operation="delete", **COW_OPTIONS)
    local.delete(rows_of([0, 1, 2, 3, 30], 0).select(["id", "p"]))
    assert sorted_rows(remote) == sorted_rows(local) and 0 not in {r["id"] for r in sorted_rows(remote)}
    assert set(base_files_of(remote, deleted).values()) <= {0, 1}
    one_row = rows_of([41], 6)  # most input partitions are empty
    pyhudi.spark.write(df_of(spark, one_row).repartition(4), remote.path, operation="upsert", **COW_OPTIONS)
    local.upsert(one_row)
    assert sorted_rows(remote) == sorted_rows(local)
    assert leftovers(Path(remote.path)) == []


def test_dataframe_writer_refuses_two_tasks_rewriting_one_file_group_and_names_the_fix(spark, tmp_path):
    """``df.write.format("pyhudi")`` keeps the DataFrame's partitions: two of them updating one
    copy-on-write file group cannot commit; the error says so, and the table is unchanged."""
    _, remote = cow_tables(tmp_path)
    before = sorted_rows(remote)
    data = rows_of([2, 4], 7)  # one file group (inserted together), one row per input partition
    df = spark.createDataFrame(spark.sparkContext.parallelize(data.to_pylist(), 2),
                               ", ".join(f"{f.name} {SPARK_TYPES[f.name]}" for f in data.schema))
    with pytest.raises(Exception, match="two tasks wrote a base file .*pyhudi.spark.write"):
        (df.write.format("pyhudi").options(**COW_OPTIONS).option("hoodie.datasource.write.operation", "upsert")
         .mode("append").save(remote.path))
    assert sorted_rows(remote) == before
    assert leftovers(Path(remote.path)) == []


# --------------------------------------------------------------------------- df.write.format("pyhudi")
def test_dataframe_writer_with_hudi_options_and_modes(spark, tmp_path):
    pyhudi.spark.register(spark)
    path = str(tmp_path / "dfw")
    options = {**HUDI_OPTIONS, "hoodie.datasource.write.precombine.field": "ts",
               "hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.datasource.write.operation": "bulk_insert",
               "hoodie.client.heartbeat.interval_in_ms": "30000"}
    data = rows_of(range(12), 1)
    df_of(spark, data).repartition(3).write.format("pyhudi").options(**options).mode("append").save(path)
    t = pyhudi.open_table(path)
    assert sorted_rows(t) == sorted(data.to_pylist(), key=lambda r: r["id"])
    props = t.properties
    assert (props["hoodie.table.recordkey.fields"], props["hoodie.table.partition.fields"]) == ("id", "p")
    assert props["hoodie.bucket.index.num.buckets"] == "3" and props["hoodie.table.precombine.field"] == "ts"
    assert "hoodie.client.heartbeat.interval_in_ms" not in props  # write settings are not table properties
    assert set(t.column_families) == {"fa", "fc"}  # Spark lower-cases option keys, so family names
    # several Spark tasks per file group: a bulk insert writes log files, never two base files
    assert all(".log." in f for f in data_files(Path(path), []))
    assert commit_stats(t, [])[0]["operation"] == "BULK_INSERT"

    delete = df_of(spark, pa.table({"id": pa.array([0, 1], pa.int64()), "p": ["y", "x"]}), "id bigint, p string")
    delete.write.format("pyhudi").option("hoodie.datasource.write.operation", "delete").mode("append").save(path)
    assert [r["id"] for r in sorted_rows(t)] == list(range(2, 12))

    before = (timeline_states(t), data_files(Path(path), []))

    def fails(df, mode="append", **extra):
        with pytest.raises(Exception) as info:
            df.write.format("pyhudi").options(**extra).mode(mode).save(path)
        assert (timeline_states(t), data_files(Path(path), [])) == before  # the table is unchanged
        return str(info.value)

    full = df_of(spark, rows_of(range(3), 2))
    assert "does not match the table" in fails(full, **{"hoodie.datasource.write.recordkey.field": "b"})
    assert "hoodie.bucket.index.num.buckets=4 does not match" in fails(full, **{"hoodie.bucket.index.num.buckets": "4"})
    assert "mode('overwrite') cannot be combined with hoodie.datasource.write.operation=delete" in fails(
        full, mode="overwrite", **{"hoodie.datasource.write.operation": "delete"})  # overwrites: test_spark_overwrite.py
    assert "invalid value 'merge' for hoodie.datasource.write.operation" in fails(
        full, **{"hoodie.datasource.write.operation": "merge"})
    assert "column 'zz' is not in the table schema" in fails(full.withColumn("zz", F.lit(1)))
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        full.write.format("pyhudi").save(path)  # Spark's default ErrorIfExists
    # overwrite where there is no table yet creates it
    fresh = str(tmp_path / "fresh")
    full.write.format("pyhudi").options(**HUDI_OPTIONS).mode("overwrite").save(fresh)
    assert [r["id"] for r in sorted_rows(pyhudi.open_table(fresh))] == [0, 1, 2]


def test_failed_task_leaves_nothing_visible_and_nothing_behind(spark, tmp_path):
    path = str(tmp_path / "fail")
    first = pyhudi.spark.write(df_of(spark, rows_of(range(6), 1)), path, **HUDI_OPTIONS)
    t = pyhudi.open_table(path)
    good_rows, good_files = sorted_rows(t), data_files(Path(path), [])

    before = len(good_files)

    def poison(value):  # runs on an executor: fails on one row once the other task has written
        import pathlib
        import time

        if value == 101302:  # column c of id 1013
            deadline = time.time() + 30
            while time.time() < deadline:
                files = [p for p in pathlib.Path(path).rglob("*.log.*") if ".hoodie" not in p.parts]
                if len(files) > before:
                    break
                time.sleep(0.05)
            raise ValueError("poisoned row 1013")
        return value

    udf = F.udf(poison, "bigint")
    df = df_of(spark, rows_of(range(1000, 1016), 2)).repartition(2).withColumn("c", udf("c"))
    with pytest.raises(Exception, match="poisoned row 1013"):
        df.write.format("pyhudi").mode("append").save(path)
    assert sorted_rows(t) == good_rows
    assert data_files(Path(path), []) == good_files  # the files the other task wrote were deleted
    assert timeline_states(t) == [("deltacommit", "COMPLETED"), ("rollback", "COMPLETED")]
    rollback = t.active_timeline().completed()[-1]
    metadata = t.active_timeline().read_metadata(rollback)
    assert metadata.commits_rollback[0] > first and metadata.total_files_deleted >= 2  # >= 1 file per family
    assert leftovers(Path(path)) == []
    # a key-level failure on an executor (null record key) is rolled back the same way
    bad = df_of(spark, pa.table({"id": pa.array([7, None], pa.int64()), "a": [1.0, 2.0], "p": ["x", "x"]}),
                "id bigint, a double, p string")
    with pytest.raises(Exception, match="null"):
        pyhudi.spark.write(bad, path)
    assert sorted_rows(t) == good_rows and data_files(Path(path), []) == good_files
    assert [s for s in timeline_states(t) if s[1] != "COMPLETED"] == [] and leftovers(Path(path)) == []


# --------------------------------------------------------------------------- without Spark
def test_table_settings_from_hudi_options():
    options = opt.lowered({**HUDI_OPTIONS, "hoodie.datasource.write.precombine.field": "ts",
                           "Hoodie.Datasource.Write.Table.Type": "merge_on_read", "hoodie.parquet.max.file.size": "9",
                           "hoodie.datasource.write.hive_style_partitioning": "true"})
    settings = _table_settings(options)
    assert settings["record_key"] == ("id",) and settings["partition_fields"] == ("p",)
    assert settings["table_type"] == "MERGE_ON_READ" and settings["ordering_field"] == "ts"
    assert settings["options"] == {
        "hoodie.table.name": "sw", "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "3",
        "hoodie.colFamily.fA": "a,b;ts", "hoodie.colFamily.fC": "c",
        "hoodie.datasource.write.hive_style_partitioning": "true",
    }
    with pytest.raises(ConfigError, match="creating a table needs the record key"):
        _table_settings({})


def test_columns_are_checked_before_anything_is_written(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "cc"), SCHEMA, "id", num_buckets=2, partition_fields=["p"],
                            column_families=FAMILIES)
    check_columns(t, pa.schema([("id", pa.int64()), ("c", pa.int64()), ("p", pa.string())]), "upsert")
    with pytest.raises(SchemaError, match="'p'"):
        check_columns(t, pa.schema([("id", pa.int64()), ("c", pa.int64())]), "upsert")
    with pytest.raises(SchemaError, match="nothing to write"):
        check_columns(t, pa.schema([("id", pa.int64()), ("p", pa.string())]), "upsert")
    with pytest.raises(SchemaError, match="column 'c'"):
        check_columns(t, pa.schema([("id", pa.int64()), ("c", pa.string()), ("p", pa.string())]), "upsert")
    assert t.timeline == []

"""Overwrites through Spark: ``df.write.mode("overwrite")`` (Hudi's insert_overwrite_table),
``pyhudi.spark.write(..., mode="overwrite")``, ``operation=insert_overwrite``; option keys that
Spark lower-cases mapped back to their spelling (family names included)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import pyhudi
import pyhudi.spark
from pyhudi.errors import ConfigError
from pyhudi.index.bucket import bucket_ids
from pyhudi.spark import options as opt
from pyhudi.write.overwrite import overwrite_bucket_file_id

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spark_helpers import data_files, timeline_states

DDL = "id bigint NOT NULL, a double, b string, ts bigint, c bigint, p string"
OPTIONS = {
    "hoodie.table.name": "so",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "p",
    "hoodie.index.type": "BUCKET",
    "hoodie.bucket.index.num.buckets": "2",
    "hoodie.colFamily.fA": "a,b;ts",
    "hoodie.colFamily.fC": "c",
}


def rows(ids, tag, part=None):
    return [{"id": i, "a": i + tag / 10, "b": f"b{i}-{tag}", "ts": tag, "c": i * 100 + tag,
             "p": part or ("x" if i % 2 else "y")} for i in ids]


def df_of(spark, data, ddl=DDL):
    return spark.createDataFrame(data, ddl)


def table_rows(t):
    return sorted(t.read().to_pylist(), key=lambda r: r["id"])


def bucket_of(key: int) -> int:
    return int(bucket_ids([pa.array([key], pa.int64())], 2)[0])


def last_replace(t):
    inst = t.timeline[-1]
    assert (str(inst.action), inst.state.value) == ("replacecommit", "COMPLETED")
    return inst, t.active_timeline().read_metadata(inst)


def test_mode_overwrite_replaces_the_table(spark, tmp_path):
    pyhudi.spark.register(spark)
    path = str(tmp_path / "ow")
    pyhudi.spark.write(df_of(spark, rows(range(6), 1)), path, **OPTIONS)
    t = pyhudi.open_table(path)
    assert set(t.column_families) == {"fA", "fC"}  # pyhudi.spark.write keeps the case of family names
    old = {(g.partition_path, g.file_id) for g in t.file_groups()}
    # plain df.write, Spark's own partitioning (several tasks may hold one bucket): log files
    new = rows([1, 7], 2, part="x")
    df_of(spark, new).repartition(2).write.format("pyhudi").mode("overwrite").save(path)
    assert table_rows(t) == sorted(new, key=lambda r: r["id"])
    inst, md = last_replace(t)
    assert md.operation_type == "INSERT_OVERWRITE_TABLE"
    assert {(p, f) for p, ids in md.partition_to_replace_file_ids.items() for f in ids} == old
    want = {overwrite_bucket_file_id(inst.requested_time, "x", bucket_of(k)) for k in (1, 7)}
    assert {g.file_id for g in t.file_groups()} == want
    for s in md.write_stats():
        # (new file groups: full-row logs, one per Spark task holding rows of the bucket)
        assert re.fullmatch(rf"x/\.{re.escape(s.file_id)}_{inst.requested_time}\.log\.1_\d+-\d+-\d+", s.path)
    # pyhudi.spark.write(mode="overwrite"): each bucket in one task, one full-row base file per new
    # file group (every family given in full: the default, no family suffix)
    newer = rows([2, 3, 4], 3)
    instant = pyhudi.spark.write(df_of(spark, newer), path, mode="overwrite")
    inst, md = last_replace(t)
    assert instant == inst.requested_time and table_rows(t) == sorted(newer, key=lambda r: r["id"])
    assert md.partition_to_replace_file_ids == {"x": sorted(want)}
    expected = {(r["p"], overwrite_bucket_file_id(instant, r["p"], bucket_of(r["id"]))) for r in newer}
    assert {(g.partition_path, g.file_id) for g in t.file_groups()} == expected
    assert len(list(md.write_stats())) == len(expected)
    assert all(re.fullmatch(rf"[xy]/{re.escape(s.file_id)}_\d+-\d+-\d+_{instant}\.parquet", s.path)
               for s in md.write_stats())
    # an empty DataFrame overwrite empties the table; a later upsert routes to fresh file groups
    df_of(spark, []).write.format("pyhudi").mode("overwrite").save(path)
    assert t.read().num_rows == 0
    pyhudi.spark.write(df_of(spark, rows([5], 4)), path)
    assert table_rows(t) == rows([5], 4)
    assert [a for a, _ in timeline_states(t)] == ["deltacommit", "replacecommit", "replacecommit",
                                                  "replacecommit", "deltacommit"]


def test_insert_overwrite_operation_replaces_partitions_only(spark, tmp_path):
    path = str(tmp_path / "iop")
    pyhudi.spark.write(df_of(spark, rows(range(6), 1)), path, **OPTIONS)
    t = pyhudi.open_table(path)
    new = rows([11], 5, part="x")
    df_of(spark, new).write.format("pyhudi").option("hoodie.datasource.write.operation", "INSERT_OVERWRITE") \
        .mode("append").save(path)
    _, md = last_replace(t)
    assert md.operation_type == "INSERT_OVERWRITE" and list(md.partition_to_replace_file_ids) == ["x"]
    assert table_rows(t) == sorted(rows([0, 2, 4], 1) + new, key=lambda r: r["id"])
    pyhudi.spark.write(df_of(spark, rows([20], 6, part="y")), path, operation="insert_overwrite", mode="overwrite")
    assert table_rows(t) == sorted(new + rows([20], 6, part="y"), key=lambda r: r["id"])


def test_lower_cased_option_keys_map_to_the_table_family_names(spark, tmp_path):
    path = str(tmp_path / "case")
    pyhudi.spark.write(df_of(spark, rows(range(4), 1)), path, **OPTIONS)
    t = pyhudi.open_table(path)
    before = (timeline_states(t), data_files(Path(path), []))
    # Spark lower-cases .option keys: fA / fC are recognised as the table's families
    df_of(spark, rows([1], 2)).write.format("pyhudi").options(**OPTIONS).mode("append").save(path)
    assert set(t.column_families) == {"fA", "fC"} and table_rows(t)[1] == rows([1], 2)[0]
    with pytest.raises(Exception, match="does not match the table's families"):
        df_of(spark, rows([1], 3)).write.format("pyhudi").option("hoodie.colFamily.fA", "a;ts").mode("append").save(path)
    assert timeline_states(t) == before[0] + [("deltacommit", "COMPLETED")]
    # families equal but for case cannot go through Spark options: refused before anything exists
    fresh = str(tmp_path / "clash")
    with pytest.raises(ConfigError, match="column families 'fA' and 'FA' differ only in case"):
        pyhudi.spark.write(df_of(spark, rows([1], 1)), fresh,
                           **{**OPTIONS, "hoodie.colFamily.FA": "c"})
    assert not Path(fresh).exists()


def test_lowered_options_unit():
    got = opt.lowered({"hoodie.datasource.write.recordkey.field": "id", "hoodie.colfamily.fa": "a",
                       "hoodie.columnfamily.fc": "c", "hoodie.colfamily.new": "z",
                       "hoodie.datasource.write.operation": "UPSERT", "hoodie.parquet.max.file.size": "10"},
                      families=["fA", "fC"])
    assert got == {"hoodie.datasource.write.recordkey.field": "id", "hoodie.colFamily.fA": "a",
                   "hoodie.columnFamily.fC": "c", "hoodie.colFamily.new": "z",
                   "hoodie.datasource.write.operation": "upsert", "hoodie.parquet.max.file.size": "10"}
    with pytest.raises(ConfigError, match=r"option hoodie.colfamily.fa is ambiguous: the table has column families fA, FA"):
        opt.lowered({"hoodie.colfamily.fa": "a"}, families=["fA", "FA"])
    assert opt.lowered({"hoodie.table.name": "x"}, families=["fA", "FA"]) == {"hoodie.table.name": "x"}
    with pytest.raises(ConfigError, match="differ only in case"):
        opt.lowered({"hoodie.colFamily.ab": "a", "hoodie.columnFamily.AB": "b"})
    assert opt.write_operation({}, True) == "insert_overwrite_table"
    assert opt.write_operation({"hoodie.datasource.write.operation": "insert_overwrite"}, True) == "insert_overwrite"
    assert opt.write_operation({"hoodie.datasource.write.operation": "bulk_insert"}, False) == "bulk_insert"

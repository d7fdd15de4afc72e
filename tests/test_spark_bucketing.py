"""Routing rows to Spark tasks by (partition, bucket): the JVM computes Hudi's bucket exactly as
``pyhudi.index.bucket`` does, and every group lands in its own Spark partition."""

from __future__ import annotations

import numpy as np
import pytest
from pyspark.sql import functions as F

from pyhudi.errors import SchemaError
from pyhudi.index.bucket import bucket_ids
from pyhudi.spark.bucketing import bucket_column, murmur3_int, route_by_bucket, routing_values


def test_jvm_bucket_ids_and_murmur3_match_the_kernel(spark):
    ids = list(range(-40, 3000, 13))
    names = [None if i % 7 == 0 else f"k{i}-é😀" for i in ids]  # UTF-16 surrogates, nulls
    df = spark.createDataFrame(list(zip(ids, names)), "id bigint, s string")
    got = df.select("id", "s", bucket_column(["id"], 7).alias("b1"), bucket_column(["id", "s"], 13).alias("b2"),
                    F.hash(F.col("id").cast("int")).alias("h")).toArrow()
    assert got.column("b1").to_pylist() == bucket_ids([got.column("id")], 7).tolist()
    assert got.column("b2").to_pylist() == bucket_ids([got.column("id"), got.column("s")], 13).tolist()
    assert got.column("h").to_pylist() == murmur3_int(np.asarray(got.column("id"), dtype=np.int32)).tolist()


def test_every_group_gets_its_own_spark_partition(spark):
    rows = [(i, "x" if i % 3 else None) for i in range(200)]  # a null partition value is a group too
    df = spark.createDataFrame(rows, "id bigint, p string")
    routed, count = route_by_bucket(df, ["id"], 4, ["p"])
    assert routed.columns == ["id", "p"]
    seen = routed.select(F.spark_partition_id().alias("task"), "p", bucket_column(["id"], 4).alias("b")) \
        .distinct().collect()
    groups = {(r["p"], r["b"]) for r in seen}
    assert count == len(groups) == 8
    assert sorted(r["task"] for r in seen) == list(range(8))  # one group per task, no task empty or shared
    plain, n = route_by_bucket(df.select("id"), ["id"], 5, [])
    by_task = plain.select(F.spark_partition_id().alias("task"), bucket_column(["id"], 5).alias("b")).distinct().collect()
    assert n == 5 and sorted((r["task"], r["b"]) for r in by_task) == [(b, b) for b in range(5)]  # task id == bucket


def test_routing_values_hit_every_partition():
    for n in (1, 2, 7, 64, 1000):
        xs = routing_values(n)
        assert len(xs) == n and min(xs) >= 0
        assert np.mod(murmur3_int(np.asarray(xs, dtype=np.int32)).astype(np.int64), n).tolist() == list(range(n))
    with pytest.raises(SchemaError, match="must be positive"):
        routing_values(0)
    with pytest.raises(SchemaError, match="at least one hash column"):
        bucket_column([], 4)

"""Distributing a DataFrame so each Spark task holds whole file groups: one (partition, bucket) each,
or — tables without a bucket index — every row of a file group in one task (:func:`route_by_file_group`).

Two facts make this exact rather than approximate:

- the Hudi bucket of a row is computed in the JVM with Java's own ``String.hashCode``
  (``java.util.Objects.hashCode`` through Spark's ``java_method``) combined like
  ``java.util.List.hashCode`` — the formula of :mod:`pyhudi.index.bucket`, in 64-bit arithmetic
  reduced modulo 2**32 (so ANSI mode never sees an overflow);
- ``repartition(n, x)`` sends a row to partition ``pmod(murmur3(x, seed 42), n)``. Hashing the
  group index itself leaves some partitions empty and doubles up others, so every group ``i`` is
  given a *routing value*: an int ``x_i`` with ``pmod(murmur3(x_i), n) == i`` (found once on the
  driver with a vectorised Murmur3). Partition ``i`` then holds exactly group ``i``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType

from pyhudi.errors import SchemaError

SPARK_HASH_SEED = 42
ROUTE_COLUMN = "__pyhudi_route"
BUCKET_COLUMN = "__pyhudi_bucket"
_TWO_32 = 1 << 32

_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def murmur3_int(values: np.ndarray, seed: int = SPARK_HASH_SEED) -> np.ndarray:
    """Spark's ``Murmur3_x86_32.hashInt`` of every int32 in ``values`` (the SQL ``hash(x)`` of an INT)."""
    with np.errstate(over="ignore"):
        k1 = np.asarray(values, dtype=np.int32).view(np.uint32).copy()
        k1 *= _C1
        k1 = _rotl(k1, 15)
        k1 *= _C2
        h1 = np.full(k1.shape, np.uint32(seed & 0xFFFFFFFF), dtype=np.uint32) ^ k1
        h1 = _rotl(h1, 13)
        h1 = h1 * np.uint32(5) + np.uint32(0xE6546B64)
        h1 ^= np.uint32(4)  # fmix with the input length in bytes
        h1 ^= h1 >> np.uint32(16)
        h1 *= np.uint32(0x85EBCA6B)
        h1 ^= h1 >> np.uint32(13)
        h1 *= np.uint32(0xC2B2AE35)
        h1 ^= h1 >> np.uint32(16)
    return h1.view(np.int32)


def routing_values(n: int) -> list[int]:
    """``x[i]`` (small non-negative ints) with ``pmod(murmur3(x[i]), n) == i`` for every ``i < n``."""
    if n <= 0:
        raise SchemaError(f"number of partitions must be positive, got {n}")
    found = np.full(n, -1, dtype=np.int64)
    start, width = 0, max(1024, 16 * n)
    while (found < 0).any():
        candidates = np.arange(start, start + width, dtype=np.int64)
        residues = np.mod(murmur3_int(candidates.astype(np.int32)).astype(np.int64), n)
        # the first candidate of every residue not found yet
        order = np.argsort(residues, kind="stable")
        first = np.ones(len(order), dtype=bool)
        first[1:] = residues[order][1:] != residues[order][:-1]
        for residue, x in zip(residues[order][first], candidates[order][first]):
            if found[residue] < 0:
                found[residue] = x
        start += width
    return [int(x) for x in found]


def _java_string_hash(column: Column) -> Column:
    """``String.hashCode`` of the column's string form as an unsigned 32-bit value (bigint)."""
    hashed = F.call_function("java_method", F.lit("java.util.Objects"), F.lit("hashCode"), column.cast("string"))
    return F.pmod(hashed.cast("bigint"), F.lit(_TWO_32))


def bucket_column(hash_fields: Sequence[str], num_buckets: int) -> Column:
    """Hudi's bucket id of each row (``pyhudi.index.bucket.bucket_ids``), computed by Spark."""
    if not hash_fields:
        raise SchemaError("bucket hashing needs at least one hash column")
    h: Column = F.lit(1).cast("bigint")
    for name in hash_fields:
        h = F.pmod(h * F.lit(31) + _java_string_hash(F.col(f"`{name}`")), F.lit(_TWO_32))
    return F.pmod(F.pmod(h, F.lit(1 << 31)), F.lit(num_buckets)).cast("int")


def route_by_bucket(df: DataFrame, hash_fields: Sequence[str], num_buckets: int,
                    partition_fields: Sequence[str]) -> tuple[DataFrame, int]:
    """``df`` repartitioned so each Spark partition holds exactly one (partition, bucket) group.

    Without partition columns every bucket is a Spark partition (buckets without rows give empty
    tasks, which write nothing). With partition columns the distinct groups are collected first
    (one Spark job) and numbered. Returns the DataFrame (helper columns dropped) and the number of
    Spark partitions.
    """
    with_bucket = df.withColumn(BUCKET_COLUMN, bucket_column(hash_fields, num_buckets))
    if not partition_fields:
        routes = routing_values(num_buckets)
        route = F.element_at(F.array(*[F.lit(x) for x in routes]), F.col(BUCKET_COLUMN) + 1)
        routed = with_bucket.withColumn(ROUTE_COLUMN, route.cast("int"))
        count = num_buckets
    else:
        keys = [*partition_fields, BUCKET_COLUMN]
        groups = with_bucket.select(*[F.col(f"`{k}`") for k in keys]).distinct().collect()
        count = max(1, len(groups))
        routes = routing_values(count)
        spark = df.sparkSession
        table = spark.createDataFrame(
            [(*tuple(g), routes[i]) for i, g in enumerate(groups)],
            schema=with_bucket.select(*[F.col(f"`{k}`") for k in keys]).schema.add(ROUTE_COLUMN, IntegerType(), False),
        )
        condition = [with_bucket[f"`{k}`"].eqNullSafe(table[f"`{k}`"]) for k in keys]
        routed = with_bucket.join(F.broadcast(table), on=condition, how="inner").select(
            *[with_bucket[f"`{c}`"] for c in df.columns], table[ROUTE_COLUMN]
        )
    repartitioned = routed.repartition(count, F.col(ROUTE_COLUMN))
    return repartitioned.drop(ROUTE_COLUMN, BUCKET_COLUMN), count


FILE_GROUP_COLUMN = "__pyhudi_file_group"


def route_by_file_group(df: DataFrame, txn) -> DataFrame:
    """``df`` repartitioned so every file group of a table without a bucket index is written by
    one Spark task (several groups may share a task).

    The simple index lives in the table's files, so the file group of each row is looked up by
    the kernel on the executors (``WriteTxn.routes`` in ``mapInArrow``: ``"<partition>\\0<file
    id>"`` for stored keys, ``"<partition>\\0"`` for new records); Spark then hash-partitions on
    that string. Each task re-plans its rows and finds the same file groups.
    """
    from pyspark.sql.types import StringType, StructField, StructType

    # a new StructType: ``df.schema.add`` would change the DataFrame's cached schema in place
    out_schema = StructType([*df.schema.fields, StructField(FILE_GROUP_COLUMN, StringType(), False)])

    def tag(batches):
        import pyarrow as pa

        batches = [b for b in batches if b.num_rows]
        if not batches:  # an empty input partition
            return
        rows = pa.Table.from_batches(batches)
        # one lookup per task: the index reads the key sets of the touched partitions
        routed = rows.append_column(pa.field(FILE_GROUP_COLUMN, pa.string(), False), txn.routes(rows))
        yield from routed.to_batches(max_chunksize=10_000)

    tagged = df.mapInArrow(tag, out_schema)
    return tagged.repartition(F.col(FILE_GROUP_COLUMN)).drop(FILE_GROUP_COLUMN)

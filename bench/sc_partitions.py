"""Date-partitioned tables with default options (``python -m bench partitions``): the layout most
Hudi tables have — a merge-on-read table without a bucket index, one partition per day — whose
costs grow with the number of partitions rather than with the rows a write or read touches.

A table of ``rows`` rows over ``PARTITIONS`` (300; 10 with ``--tiny``) days, inserted, then:

- **upsert**: 2,000 rows (1% with ``--tiny``) spread over every partition — the simple index
  looks up the stored keys of every partition the write touches, then one log file per file
  group is written — against writing the same rows with pyarrow as one Parquet file per
  partition (``pq.write_table``, the files any layout must write). Each round upserts into the
  same table, as a streaming writer does (the index keeps the keys it has read or written,
  :mod:`pyhudi.index.simple`).
- **filtered read**: the rows of 2 of the days (a filter on the partition column) against
  ``pq.read_table`` of those 2 days' Parquet files of a compacted copy (partition pruning lists
  only the matching partitions, :func:`pyhudi.read.pruning.partition_pruned_groups`).
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import pyhudi
from bench.common import Context
from bench.harness import Comparison, Variant, compare

PARTITIONS, TINY_PARTITIONS = 300, 10
SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string()), ("v", pa.float64()), ("s", pa.string())])


def days(count: int) -> list[str]:
    return [f"2024-{1 + i // 28:02d}-{1 + i % 28:02d}" for i in range(count)]


def rows_of(ids: np.ndarray, names: list[str], value: float) -> pa.Table:
    return pa.table({"id": ids, "day": pa.array(np.array(names)[ids % len(names)]),
                     "v": np.full(len(ids), value), "s": pa.array([f"s{value}"] * len(ids))}, schema=SCHEMA)


def run(ctx: Context) -> list[Comparison]:
    count = TINY_PARTITIONS if ctx.tiny else PARTITIONS
    names = days(count)
    path = ctx.path("partitioned")
    table = pyhudi.create_table(path, SCHEMA, "id", partition_fields="day")
    table.insert(rows_of(np.arange(ctx.rows, dtype=np.int64), names, 0.0))
    updated = max(count, min(2000, ctx.rows // 100))
    rng = np.random.default_rng(7)
    batches = [np.sort(rng.choice(ctx.rows, updated, replace=False)).astype(np.int64) for _ in range(ctx.repeat + 1)]
    table.upsert(rows_of(batches[-1], names, -1.0))  # (the streaming writer's first upsert, untimed)
    raw = ctx.path("raw")

    def write_raw(round_: int) -> None:
        data = rows_of(batches[round_], names, float(round_))
        for day, part in _by_day(data):
            os.makedirs(os.path.join(raw, day), exist_ok=True)
            pq.write_table(part, os.path.join(raw, day, f"{round_}.parquet"))

    upsert = compare(f"partitioned upsert: {updated} rows over {count} partitions, pyhudi / pq.write_table per partition", [
        Variant("pyhudi: upsert (default table: merge-on-read, no bucket index)",
                lambda data: {"rows": updated} if table.upsert(data) else None,
                setup=lambda r: rows_of(batches[r], names, float(r))),
        Variant("pyarrow: pq.write_table of the same rows, one file per partition", write_raw, setup=lambda r: r),
    ], ctx.repeat, target="", note="each round upserts into the same table (a streaming writer)")

    wanted = [names[count // 3], names[2 * count // 3]]
    compacted = ctx.path("compacted")
    for day, part in _by_day(pyhudi.open_table(path).read(columns=[f.name for f in SCHEMA])):
        os.makedirs(os.path.join(compacted, day), exist_ok=True)
        pq.write_table(part, os.path.join(compacted, day, "part.parquet"))
    files = [os.path.join(compacted, day, "part.parquet") for day in wanted]

    def read_pyhudi(_: object) -> dict:
        rows = pyhudi.open_table(path).read(columns=["id", "v"], filters=[("day", "in", wanted)])
        return {"rows": rows.num_rows}

    read = compare(f"filtered read: 2 of {count} partitions, pyhudi / pq.read_table of those partitions' files", [
        Variant("pyhudi: read(filters=[('day', 'in', 2 days)]) (a new handle each round)", read_pyhudi),
        Variant("pyarrow: pq.read_table of the 2 days' compacted files",
                lambda _: {"rows": pq.read_table(files, columns=["id", "v"]).num_rows}),
    ], ctx.read_repeat, target="", note="the table after its upserts, uncompacted")
    return [upsert, read]


def _by_day(data: pa.Table) -> list[tuple[str, pa.Table]]:
    data = data.sort_by("day")
    days_column = data.column("day").to_pylist()
    out, start = [], 0
    for i in range(1, len(days_column) + 1):
        if i == len(days_column) or days_column[i] != days_column[start]:
            out.append((days_column[start], data.slice(start, i - start)))
            start = i
    return out

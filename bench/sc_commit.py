"""A commit's fixed cost (issue 15 item 2): what a 1,000-row upsert costs beyond its data work,
on a young table and after ``--instants`` instants of history, against the 5 ms target.

A bucketed merge-on-read table (4 buckets) takes ``rows``-row upserts with the default services
plus inline compaction (automatic cleaning and archival are defaults; compaction keeps the data
files per file group bounded, so a long-lived table is in its steady state). Each measured upsert
is split by :mod:`bench.commit_split`: the **fixed cost** is the upsert minus its data work
(preparing the rows, writing the log files) and minus any service that actually ran (a
compaction, a clean that deleted, an archival that archived); the checks that found nothing to
do stay in it. The **young** table has 10 real commits before the measured ones; the **long-lived**
one has ``--instants`` of history: all but the last 50 are delta commits written straight into
the timeline and archived ten at a time by the real archival service (the LSM history real
commits leave), then 50 real upserts bring the services to their steady state. Both are built
first (and the builds' writes flushed); the measured upserts then go to the two tables in turns.

Comparisons: the young table's fixed cost against the 5 ms target (a ratio <= 1 meets it), and
the long-lived table's against the young one's (growth with history; target <= 1.3). The
young table's split (median ms per part, CPU) is printed beside them.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import numpy as np
import pyarrow as pa

import pyhudi
from bench.commit_split import DATA, OTHER, SERVICES_RUN, Split, timed_upsert
from bench.common import Context, fresh_path
from bench.harness import Comparison, single

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.float64()), ("s", pa.string())])
OPTIONS = {"hoodie.compact.inline": "true"}
TARGET_S = 0.005
YOUNG = 10
REAL_WARMUP = 50


def batch(i: int, rows: int) -> pa.Table:
    """``rows`` upserted keys out of ``20 x rows`` (most are updates once the table has data)."""
    rng = np.random.default_rng(i)
    ids = rng.choice(rows * 20, rows, replace=False).astype(np.int64)
    return pa.table({"id": ids, "v": rng.random(rows), "s": pa.array([f"s{i}"] * rows)}, schema=SCHEMA)


def measure(tables: list[tuple[pyhudi.Table, int]], rows: int, samples: int) -> list[list[dict[str, tuple[float, float]]]]:
    """``samples`` split upserts into each of ``tables`` (each with its next batch number), in
    turns (A B, then B A: a busy phase of the machine slows both alike)."""
    split, runs = Split(), [[] for _ in tables]
    os.sync()  # (the builds' writeback is not the measured commits' cost)
    with split.installed():
        for k in range(samples):
            order = range(len(tables)) if k % 2 == 0 else reversed(range(len(tables)))
            for i in order:
                table, first = tables[i]
                runs[i].append(timed_upsert(split, table, batch(first + k, rows), OPTIONS))
    return runs


def build(ctx: Context, instants: int, rows: int) -> tuple[pyhudi.Table, int, float]:
    """A table with ``instants`` of history (see the module docstring); returns it, the next
    batch number and the seconds it took."""
    from bench.bench_commit_cost import fabricate_history

    started = time.perf_counter()
    table = pyhudi.create_table(fresh_path(ctx, "commit"), SCHEMA, "id", num_buckets=4)
    real = min(instants, YOUNG if instants <= YOUNG else REAL_WARMUP)
    fabricate_history(table, instants - real, 10, OPTIONS)
    for i in range(real):
        table.upsert(batch(i, rows), options=OPTIONS)
    return table, real, time.perf_counter() - started


def _series(runs: list[dict[str, tuple[float, float]]], part: str) -> dict[str, list[float]]:
    return {"wall": [r.get(part, (0.0, 0.0))[0] for r in runs], "cpu": [r.get(part, (0.0, 0.0))[1] for r in runs]}


def _split_metrics(runs: list[dict[str, tuple[float, float]]]) -> dict[str, Any]:
    """Median CPU ms per part (the fixed parts, then the data work), for the JSON and the line."""
    parts = sorted({p for r in runs for p in r} - {"total", "fixed", DATA, SERVICES_RUN},
                   key=lambda p: (p == OTHER, -statistics.median(r.get(p, (0.0, 0.0))[1] for r in runs)))
    out = {f"{p} ms": round(statistics.median(r.get(p, (0.0, 0.0))[1] for r in runs) * 1000, 2) for p in parts}
    out["data work ms"] = round(statistics.median(r.get(DATA, (0.0, 0.0))[1] for r in runs) * 1000, 2)
    out["whole upsert ms"] = round(statistics.median(r["total"][1] for r in runs) * 1000, 2)
    return out


def run(ctx: Context) -> list[Comparison]:
    rows = ctx.rows
    instants = ctx.instants if ctx.instants is not None else (30 if ctx.tiny else 2000)
    samples = 5 if ctx.tiny else max(30, 10 * ctx.repeat)
    young, young_first, _ = build(ctx, YOUNG, rows)
    old, old_first, seconds = build(ctx, instants, rows)
    young_runs, old_runs = measure([(young, young_first), (old, old_first)], rows, samples)
    active, archived = len(old.timeline), len(old.archived_timeline())
    metrics = _split_metrics(young_runs)
    print(f"  split of a {rows}-row upsert on the young table (median CPU ms): "
          + ", ".join(f"{k[:-3]} {v}" for k, v in metrics.items()))
    young_name = f"fixed cost, young table ({YOUNG} commits)"
    target = single(
        f"commit fixed cost of a {rows}-row upsert: young table / 5 ms target",
        {young_name: {**_series(young_runs, "fixed"), "metrics": metrics},
         "target": {"wall": [TARGET_S], "cpu": [TARGET_S]}},
        target="<= 1.0", note="defaults + inline compaction; 4 buckets; services that ran excluded")
    growth = single(
        f"commit fixed cost: after {instants} instants / young table",
        {f"fixed cost, {instants} instants ({active} active, {archived} archived)": {
            **_series(old_runs, "fixed"), "metrics": {**_split_metrics(old_runs), "built s": round(seconds, 1)}},
         young_name: _series(young_runs, "fixed")},
        target="<= 1.3", note="history fabricated and archived, then 50 real upserts")
    return [target, growth]

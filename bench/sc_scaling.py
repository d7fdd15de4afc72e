"""Scaling: ten times the rows should cost at most ten and a half times the time, and a
streaming scan's peak memory should stay flat.

Scenario W at ``rows`` and ``10 * rows``: insert and full read timed in turns; the streaming
scan (``Table.scan``) runs in a fresh interpreter per size (``bench_read.scan_peak``) and reports
its Arrow memory-pool peak and its RSS high-water mark, at ``rows``, ``10 * rows`` and
``30 * rows``. A scan holds one row group per family file at a time (pyarrow buffers a row group's
column chunks), so its peak grows with the table only until the file groups' row groups reach
their size bound (``hoodie.parquet.block.size``); the step from ``10 * rows`` to ``30 * rows`` is
the flatness figure, the first step is printed beside it.
"""

from __future__ import annotations

import pyhudi
from bench.bench_read import build_scenario_w, scan_peak
from bench.common import Context, insert_variant
from bench.harness import Comparison, Variant, compare, single
from bench.scenario_w import make_data


def run(ctx: Context) -> list[Comparison]:
    small, big = ctx.rows, ctx.rows * 10
    insert = compare(f"insert: {big} rows / {small} rows", [
        insert_variant(ctx, f"insert {big} rows", make_data(big), True),
        insert_variant(ctx, f"insert {small} rows", make_data(small), True),
    ], ctx.repeat, target="<= 10.5")
    paths = {n: ctx.path(f"scaling-{n}") for n in (small, big)}
    for n, path in paths.items():
        build_scenario_w(path, n)
    tables = {n: pyhudi.open_table(path) for n, path in paths.items()}
    read = compare(f"full read: {big} rows / {small} rows", [
        Variant(f"read {big} rows", lambda _: tables[big].read()),
        Variant(f"read {small} rows", lambda _: tables[small].read()),
    ], ctx.read_repeat, target="<= 10.5")
    larger = big * 3
    paths[larger] = ctx.path(f"scaling-{larger}")
    build_scenario_w(paths[larger], larger)
    memory = [_memory_step(paths, big, small, ctx), _memory_step(paths, larger, big, ctx)]
    return [insert, read, *memory]


def _memory_step(paths: dict[int, str], bigger: int, smaller: int, ctx: Context) -> Comparison:
    """The streaming scan's peaks at ``bigger`` rows against ``smaller`` rows (fresh interpreters)."""
    values = {}
    for n in (bigger, smaller):
        runs = [scan_peak(paths[n]) for _ in range(max(1, min(ctx.repeat, 3)))]
        values[f"streaming scan {n} rows"] = {
            "wall": [r["seconds"] for r in runs], "cpu": [],
            "metrics": {"pool_peak_bytes": max(r["pool_peak"] for r in runs),
                        "rss_peak_bytes": max(r["rss_peak"] for r in runs), "rows": runs[0]["rows"]}}
    first, last = values[f"streaming scan {bigger} rows"]["metrics"], values[f"streaming scan {smaller} rows"]["metrics"]
    return single(f"streaming scan peak memory: {bigger} rows / {smaller} rows", values, target="<= 1.5",
                  note="ratio of the peaks; a fresh interpreter per scan",
                  ratio={"pool_peak": first["pool_peak_bytes"] / max(1, last["pool_peak_bytes"]),
                         "rss_peak": first["rss_peak_bytes"] / max(1, last["rss_peak_bytes"])})

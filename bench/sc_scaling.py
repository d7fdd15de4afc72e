"""Scaling: ten times the rows should cost at most ten and a half times the time, and a
streaming scan's peak memory should stay flat.

Scenario W at ``rows`` and ``10 * rows``: insert and full read timed in turns; the streaming
scan (``Table.scan``) runs in a fresh interpreter per size (``bench_read.scan_peak``) and reports
its Arrow memory-pool peak and its RSS high-water mark.
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
    peaks = {n: [scan_peak(paths[n]) for _ in range(max(1, min(ctx.repeat, 3)))] for n in (big, small)}
    values = {}
    for n, runs in peaks.items():
        values[f"streaming scan {n} rows"] = {
            "wall": [r["seconds"] for r in runs], "cpu": [],
            "metrics": {"pool_peak_bytes": max(r["pool_peak"] for r in runs),
                        "rss_peak_bytes": max(r["rss_peak"] for r in runs), "rows": runs[0]["rows"]}}
    first, last = values[f"streaming scan {big} rows"]["metrics"], values[f"streaming scan {small} rows"]["metrics"]
    memory = single(f"streaming scan peak memory: {big} rows / {small} rows", values, target="<= 1.5",
                    note="ratio of the peaks; a fresh interpreter per scan",
                    ratio={"pool_peak": first["pool_peak_bytes"] / max(1, last["pool_peak_bytes"]),
                           "rss_peak": first["rss_peak_bytes"] / max(1, last["rss_peak_bytes"])})
    return [insert, read, memory]

"""Cold start alone (also part of ``w``): a Scenario W table, then :func:`bench.coldstart.measure`
with more rounds than the other scenarios need, as each round is only a few processes; then what
pyhudi adds over the floor, as timed inside its children (:func:`bench.coldstart.added_cost`)."""

from __future__ import annotations

import pyarrow.parquet as pq

from bench import coldstart
from bench.bench_read import build_scenario_w
from bench.common import Context
from bench.harness import Comparison


def run(ctx: Context) -> list[Comparison]:
    path = ctx.path("w")
    expected = build_scenario_w(path, ctx.rows)
    compacted = ctx.path("compacted.parquet")
    pq.write_table(expected, compacted, use_dictionary=False)
    default_path = ctx.path("w-default")
    build_scenario_w(default_path, ctx.rows, default_layout=True)
    splits: list[dict] = []
    measured = coldstart.measure(path, ctx.repeat if ctx.tiny else max(ctx.repeat, 10), splits, compacted,
                                 default_path)
    return [measured, coldstart.against_pyarrow(measured), coldstart.added_cost(splits)]

"""Cold start alone (also part of ``w``): a Scenario W table written with default options (an
insert, then a one-family update), then :func:`bench.coldstart.measure`
with more rounds than the other scenarios need, as each round is only a few processes; then what
pyhudi adds over the floor, as timed inside its children (:func:`bench.coldstart.added_cost`)."""

from __future__ import annotations

import pyarrow.parquet as pq

from bench import coldstart
from bench.bench_read import build_scenario_w
from bench.common import Context
from bench.harness import Comparison


def run(ctx: Context) -> list[Comparison]:
    default_path = ctx.path("w-default")
    expected = build_scenario_w(default_path, ctx.rows, default_layout=True)
    compacted = ctx.path("compacted.parquet")
    pq.write_table(expected, compacted, use_dictionary=False)
    per_family = ctx.path("w")
    build_scenario_w(per_family, ctx.rows)
    splits: list[dict] = []
    measured = coldstart.measure(default_path, ctx.repeat if ctx.tiny else max(ctx.repeat, 10), splits, compacted,
                                 per_family)
    return [measured, coldstart.against_pyarrow(measured), coldstart.added_cost(splits)]

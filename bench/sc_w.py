"""Scenario W (issue 15): write, partial update, full read, pruned read, cold start.

``rows`` x (id + 100 float64) in 5 families of 20, 4 buckets; every figure against the plain
Parquet baseline of the same data (``pq.write_table`` / ``pq.read_table`` of a compacted copy).
"""

from __future__ import annotations

import pyarrow.parquet as pq

import pyhudi
from bench import coldstart
from bench.bench_read import build_scenario_w
from bench.common import Context, file_variant, insert_variant, upsert_variant
from bench.harness import Comparison, Variant, compare
from bench.scenario_w import PER, make_data
from pyhudi.read.metadata_cache import METADATA_CACHE

TWO = ["c0", "c1"]


def writes(ctx: Context) -> list[Comparison]:
    data = make_data(ctx.rows)
    raw = ctx.path("raw.parquet")
    insert = compare("insert", [
        insert_variant(ctx, "pyhudi insert, 5 families", data, True),
        insert_variant(ctx, "pyhudi insert, no families", data, False),
        # (its best settings on random doubles: no dictionary, uncompressed)
        file_variant("pq.write_table (use_dictionary=False, compression='none')",
                     lambda p: pq.write_table(data, p, use_dictionary=False, compression="none"), raw),
    ], ctx.repeat, target="<= 1.0")
    n = max(1, ctx.rows // 10)
    one_family = data.select(["id", *[f"c{c}" for c in range(PER)]]).slice(0, n)
    update = compare(f"partial update: one family of {n} rows", [
        upsert_variant(ctx, "one-family update (20 columns)", data, one_family, True),
        upsert_variant(ctx, "full-row upsert (100 columns, no families)", data, data.slice(0, n), False),
    ], ctx.repeat, target="<= 0.25")
    return [insert, update]


def reads(ctx: Context) -> tuple[list[Comparison], str, str]:
    """Full and pruned reads of the families table after a one-family update of 10%, against
    ``pq.read_table`` of a compacted copy; returns the paths of the table and the copy for the
    cold start."""
    path = ctx.path("w")
    expected = build_scenario_w(path, ctx.rows)
    compacted = ctx.path("compacted.parquet")
    pq.write_table(expected, compacted, use_dictionary=False)
    table = pyhudi.open_table(path)
    full = compare("full read", [
        Variant("pyhudi read()", lambda _: table.read()),
        Variant("pq.read_table (compacted copy)", lambda _: pq.read_table(compacted)),
    ], ctx.read_repeat, target="<= 1.0")
    pruned = compare("pruned read: 2 columns of the updated family", [
        Variant("pyhudi read(2 columns)", lambda _: table.read(columns=TWO)),
        Variant("pyhudi read(2 columns), metadata cache cleared", lambda _: (METADATA_CACHE.clear(),
                                                                              table.read(columns=TWO))),
        Variant("pq.read_table(2 columns, compacted copy)", lambda _: pq.read_table(compacted, columns=TWO)),
    ], ctx.read_repeat, target="<= 1.0")
    return [full, pruned], path, compacted


def run(ctx: Context) -> list[Comparison]:
    out = writes(ctx)
    read_results, path, compacted = reads(ctx)
    cold = coldstart.measure(path, ctx.read_repeat, compacted=compacted)
    return out + read_results + [cold, coldstart.against_pyarrow(cold)]

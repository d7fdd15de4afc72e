"""RFC-80's claims for column families, each as a ratio measured in one run.

- writing 5 families costs about what writing none does (insert, family / plain);
- a partial update (one family) beats a full-row upsert of the same rows, at ``rows // 10`` and
  ``rows`` updated rows (20k and 200k at the default size);
- a pruned read (2 columns of one family) costs a fraction of a full read;
- sort-merge reading beats hash-merge reading of the same slices;
- compacting one family beats compacting all of them (``Table.compact(families=..)`` against
  ``compact(full=True)`` with every column encoded again — ``hoodie.compaction.full.copy.chunks``
  false, what compacting all five families costs; by default a full compaction copies the chunks
  of the families without logs, and costs about what the one family does —, after rounds of
  one-family updates: ``bench_compaction.updated_table``).
"""

from __future__ import annotations

import pyhudi
from bench.bench_compaction import updated_table
from bench.bench_read import build_scenario_w
from bench.common import Context, fresh_path, insert_variant, remove, upsert_variant
from bench.harness import Comparison, Variant, compare
from bench.scenario_w import PER, make_data


def writes(ctx: Context) -> list[Comparison]:
    data = make_data(ctx.rows)
    out = [compare("insert: 5 families / no families", [
        insert_variant(ctx, "5 families", data, True),
        insert_variant(ctx, "no families", data, False),
    ], ctx.repeat, target="<= 1.05 (throughput >= 0.95)")]
    family = data.select(["id", *[f"c{c}" for c in range(PER)]])
    for n in sorted({max(1, ctx.rows // 10), ctx.rows}):
        out.append(compare(f"partial update vs full-row upsert, {n} updated rows", [
            upsert_variant(ctx, "partial update (one family, 5-family table)", data, family.slice(0, n), True),
            upsert_variant(ctx, "full-row upsert (5-family table)", data, data.slice(0, n), True),
        ], ctx.repeat, target="<= 0.25"))
    return out


def reads(ctx: Context) -> list[Comparison]:
    path = ctx.path("rfc80-read")
    build_scenario_w(path, ctx.rows)
    table = pyhudi.open_table(path)
    pruned = compare("pruned read (2 columns) / full read", [
        Variant("2 columns of the updated family", lambda _: table.read(columns=["c0", "c1"])),
        Variant("full read", lambda _: table.read()),
    ], ctx.read_repeat, target="<= 0.1")
    merge = compare("sort-merge / hash-merge read", [
        Variant("sort-merge read (default)", lambda _: table.read()),
        Variant("hash-merge read (strategy='hash')", lambda _: table.read(strategy="hash")),
    ], ctx.read_repeat, target="<= 0.7")
    return [pruned, merge]


def compaction(ctx: Context) -> Comparison:
    data = make_data(ctx.rows)

    def setup(_: int) -> tuple[str, pyhudi.Table]:
        path = fresh_path(ctx, "compact")
        return path, updated_table(path, data, 1)

    return compare("compaction: one family / all families", [
        Variant("compact(families=['f0'])", setup=setup, run=lambda pt: pt[1].compact(families=["f0"]),
                cleanup=lambda pt: remove(pt[0])),
        Variant("compact(full=True), every column encoded", setup=setup,
                run=lambda pt: pt[1].compact(full=True, options={"hoodie.compaction.full.copy.chunks": "false"}),
                cleanup=lambda pt: remove(pt[0])),
    ], ctx.repeat, target="<= 0.3")


def run(ctx: Context) -> list[Comparison]:
    return writes(ctx) + reads(ctx) + [compaction(ctx)]

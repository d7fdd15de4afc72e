"""Peers, where installed: the ``hudi`` package (hudi-rs) reading pyhudi's one-family table.

A one-family (plain) Scenario W table after a 10% full-row update, read whole by pyhudi and by
hudi-rs, in turns. Lance (``pylance``), Paimon (``pypaimon``), Delta (``deltalake``) and Iceberg
(``pyiceberg``) are not installed on the development machine, so their comparisons are not
written yet: the scenario says which are absent and which are installed but not compared.
"""

from __future__ import annotations

import importlib.util

import pyarrow as pa

import pyhudi
from bench.bench_read import build_plain
from bench.common import Context
from bench.harness import Comparison, Variant, compare
from bench.scenario_w import make_data

OTHER_PEERS = {"lance": "pylance", "pypaimon": "pypaimon", "deltalake": "deltalake", "pyiceberg": "pyiceberg"}


def missing() -> list[str]:
    """The peers' packages that are not installed (their comparisons are skipped)."""
    return [package for module, package in OTHER_PEERS.items() if importlib.util.find_spec(module) is None]


def run(ctx: Context) -> list[Comparison]:
    out = []
    absent = missing()
    present = [p for p in OTHER_PEERS.values() if p not in absent]
    if absent:
        print(f"  peers skipped, not installed: {', '.join(absent)}")
    if present:
        print(f"  peers installed but not compared yet (only hudi-rs is): {', '.join(present)}")
    if importlib.util.find_spec("hudi") is None:
        print("  hudi-rs skipped (the 'hudi' package is not installed)")
        return out
    import hudi

    path = ctx.path("peers-plain")
    build_plain(path, make_data(ctx.rows))
    table = pyhudi.open_table(path)
    rs = hudi.HudiTableBuilder.from_base_uri(path).build()
    got, want = pa.Table.from_batches(rs.read()), table.read()
    assert got.num_rows == want.num_rows == ctx.rows, (got.num_rows, want.num_rows)
    out.append(compare("one-family table, full read: pyhudi / hudi-rs", [
        Variant("pyhudi read()", lambda _: table.read()),
        Variant("hudi-rs read", lambda _: pa.Table.from_batches(rs.read())),
    ], ctx.read_repeat, target="<= 1.0"))
    return out

"""Pruned reads (issue 15 item 4): 2 columns of one family against ``pq.read_table`` of the same
2 columns of a compacted copy, warm and in a fresh process.

Scenario W (``rows`` x id + 100 float64, 5 families of 20, 4 buckets), read as ``c0, c1``:

- **with logs**: after a one-family update of 10% of the rows (one log block per file group,
  whose header carries the record positions: the read patches base rows by position);
- **with logs, default layout**: the same rows written with default options — an insert (one
  full-row log file per file group, no base file) — then the same update: the read patches the
  insert's block by position (positions learnt from the keys on the first read);
- **no logs**: right after the bulk insert (base files only);
- warm: the same table handle, reads after the first (footers, positions and key verdicts in
  the process's metadata cache; each task replays the column reads its first run worked out,
  :mod:`pyhudi.read.replay`); also the first read of a process without the import cost
  (metadata cache cleared before each read, a new table handle);
- cold: the **read step** of a fresh process (``open_table`` + ``read``, timed inside the child
  after ``import pyhudi``, ``pyarrow.parquet`` already imported), against the same step of
  ``pq.read_table`` — whose first call imports ``pyarrow.dataset`` — and of
  ``pq.ParquetFile(...).read`` (the leanest Parquet read there is).

Every comparison's baseline (last variant) is ``pq.read_table``; ratios are first / last.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq

import pyhudi
from bench.bench_read import BUCKETS, build_scenario_w
from bench.common import Context
from bench.harness import Comparison, Variant, compare, single
from bench.scenario_w import families, make_data
from pyhudi.read.metadata_cache import METADATA_CACHE

TWO = ["c0", "c1"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = """
import json, sys, time
import pyarrow.parquet as pq
import pyhudi
kind, path = sys.argv[1], sys.argv[2]
wall, cpu = time.perf_counter(), time.process_time()
if kind == "pyhudi":
    rows = pyhudi.open_table(path).read(columns=["c0", "c1"])
elif kind == "read_table":
    rows = pq.read_table(path, columns=["c0", "c1"])
else:
    rows = pq.ParquetFile(path).read(columns=["c0", "c1"])
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "rows": rows.num_rows}))
"""


def _child(kind: str, path: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    done = subprocess.run([sys.executable, "-c", _CHILD, kind, path], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"pruned-read child {kind} failed: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _tables(ctx: Context) -> tuple[str, str, str, str]:
    """(table with logs, table without logs, compacted Parquet copy of the table with logs, the
    table with logs written with default options)."""
    logs, plain, default = ctx.path("logs"), ctx.path("nologs"), ctx.path("logs-default")
    expected = build_scenario_w(logs, ctx.rows)
    build_scenario_w(default, ctx.rows, default_layout=True)
    compacted = ctx.path("compacted.parquet")
    pq.write_table(expected, compacted, use_dictionary=False)
    data = make_data(ctx.rows)
    pyhudi.create_table(plain, data.schema, "id", num_buckets=BUCKETS, column_families=families()).bulk_insert(data)
    return logs, plain, compacted, default


def _strategy(table: pyhudi.Table) -> dict:
    """The read metrics of a 2-column read, summed over its tasks (which path it took)."""
    plan = table.plan_scan(TWO)
    metrics: dict = {}
    for task in plan.tasks:
        task.run()
        for k, v in task.metrics.items():
            if k.startswith(("strategy.", "positions", "replayed")):
                metrics[k] = metrics.get(k, 0) + v
    return metrics


def warm(ctx: Context, logs: str, plain: str, compacted: str, default: str) -> list[Comparison]:
    with_logs, no_logs, with_default = pyhudi.open_table(logs), pyhudi.open_table(plain), pyhudi.open_table(default)
    METADATA_CACHE.clear()
    first = {label: _strategy(pyhudi.open_table(path)) for label, path in (("with logs", logs),
                                                                           ("with logs, default layout", default))}
    again = {}
    for label, table in (("with logs", with_logs), ("with logs, default layout", with_default)):
        _strategy(table)
        again[label] = _strategy(table)  # (a warm read: its tasks replay their column reads)
    with_logs.read(columns=TWO), no_logs.read(columns=TWO), with_default.read(columns=TWO)
    out = []
    for label, table, path in (("with logs", with_logs, logs), ("with logs, default layout", with_default, default),
                               ("no logs", no_logs, plain)):
        out.append(compare(f"pruned read, warm: 2 columns, {label}", [
            Variant("pyhudi read(2 columns)", lambda _, t=table: t.read(columns=TWO)),
            Variant("pyhudi first read (cache cleared, new handle)",
                    lambda _, p=path: (METADATA_CACHE.clear(), pyhudi.open_table(p).read(columns=TWO))),
            Variant("pq.ParquetFile(compacted).read(2 columns)",
                    lambda _: pq.ParquetFile(compacted).read(columns=TWO)),
            Variant("pq.read_table(compacted, 2 columns)", lambda _: pq.read_table(compacted, columns=TWO)),
        ], ctx.read_repeat * 5, target="<= 1.0",
            note=f"first read took {first[label]}, a warm one {again[label]}" if label in first else "base files only"))
    return [_with_ranges(c) for c in out]


def _with_ranges(comparison: Comparison) -> Comparison:
    """Each variant's range of wall and CPU times beside its medians (a shared machine)."""
    for v in comparison.variants.values():
        v["metrics"] = {"wall_range": f"{min(v['wall']):.4f}-{max(v['wall']):.4f}",
                        "cpu_range": f"{min(v['cpu']):.4f}-{max(v['cpu']):.4f}", **v["metrics"]}
    return comparison


def cold(ctx: Context, logs: str, plain: str, compacted: str, default: str) -> Comparison:
    """The read step in fresh processes, in turns; each child times its own read step."""
    kinds = [("pyhudi read step, with logs", "pyhudi", logs),
             ("pyhudi read step, with logs, default layout", "pyhudi", default),
             ("pyhudi read step, no logs", "pyhudi", plain),
             ("pq.ParquetFile(compacted).read step", "parquet_file", compacted),
             ("pq.read_table(compacted) step (imports pyarrow.dataset)", "read_table", compacted)]
    for _, kind, path in kinds:  # (warm-up: bytecode caches written)
        _child(kind, path)
    values: dict = {name: {"wall": [], "cpu": []} for name, _, _ in kinds}
    rounds = ctx.repeat if ctx.tiny else max(ctx.repeat, 5)
    for round_ in range(rounds):
        for name, kind, path in (kinds if round_ % 2 == 0 else kinds[::-1]):
            out = _child(kind, path)
            values[name]["wall"].append(out["wall"])
            values[name]["cpu"].append(out["cpu"])
    for v in values.values():
        v["metrics"] = {"wall_range": f"{min(v['wall']):.4f}-{max(v['wall']):.4f}",
                        "cpu_range": f"{min(v['cpu']):.4f}-{max(v['cpu']):.4f}"}
    return single("pruned read, cold: the read step of a fresh process", values, target="<= 1.0",
                  note="child processes; pyarrow.parquet and pyhudi imported before the timed step")


def run(ctx: Context) -> list[Comparison]:
    logs, plain, compacted, default = _tables(ctx)
    return [*warm(ctx, logs, plain, compacted, default), cold(ctx, logs, plain, compacted, default)]

"""Layout and data-skipping benchmark (issue 14, items 2-layout and 5): what a point filter reads.

The same random rows (two sort columns ``a`` int64 and ``b`` float64, plus payload) are ordered
by :func:`pyhudi.layout.curve_order` — linear, z-order and hilbert, direct and sample-built —
and written as ``--files`` file groups (one bulk insert per slice of the order) into a
copy-on-write table without buckets. For random point filters ``a = x`` and ``b = y`` the bench
prints the file groups a scan plan keeps against the total (planning skips the others by their
footers, :mod:`pyhudi.read.skipping`), and the time of the filtered read against a full scan.
Issue 14's targets after clustering: a filter on the first sort column reads <= 10% of the files,
on the second <= 25% with z-order or hilbert (linear reads all files for the second column).

Also printed: the time of ``curve_order`` against pyarrow's lexicographic sort of the same columns
(wall and CPU; the machine is shared). This is a pure layout bench: the clustering bench runs the
whole service.

Run: ``.venv/bin/python bench/bench_skipping.py [--rows 400000] [--files 64] [--probes 40]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import pyhudi  # noqa: E402
from pyhudi.layout import curve_order  # noqa: E402
from pyhudi.read.metadata_cache import METADATA_CACHE  # noqa: E402

LAYOUTS = [("linear", "direct"), ("z-order", "direct"), ("z-order", "sample"),
           ("hilbert", "direct"), ("hilbert", "sample")]


def timed(fn):
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - start, time.process_time() - cpu


def make_data(rows: int, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "id": np.arange(rows, dtype=np.int64),
        "a": rng.integers(0, 10_000_000, rows),
        "b": rng.normal(size=rows),
        **{f"p{i}": rng.random(rows) for i in range(6)},
    })


def write_layout(root: str, data: pa.Table, order: pa.Array, files: int) -> pyhudi.Table:
    """The rows in ``order``, one bulk insert (one file group) per equal slice."""
    table = pyhudi.create_table(root, data.schema, "id", table_type="COPY_ON_WRITE")
    ordered = data.take(order)
    for part in np.array_split(np.arange(ordered.num_rows), files):
        table.bulk_insert(ordered.slice(int(part[0]), len(part)))
    return table


def probe(table: pyhudi.Table, data: pa.Table, column: str, probes: int, seed: int = 9) -> tuple[float, float, float]:
    """Average fraction of file groups a point filter on ``column`` reads; filtered read time
    over full scan time (wall, CPU)."""
    values = np.random.default_rng(seed).choice(data.column(column).to_numpy(), probes)
    fractions, walls, cpus = [], [], []
    for value in values:
        plan = table.plan_scan(None, [(column, "=", value.item())])
        m = plan.metrics
        fractions.append(1 - m["file_groups_skipped"] / m["file_groups_considered"])
        got, wall, cpu = timed(plan.to_table)
        assert got.num_rows >= 1
        walls.append(wall)
        cpus.append(cpu)
    _, full_wall, full_cpu = timed(lambda: table.read())
    return float(np.mean(fractions)), float(np.mean(walls)) / full_wall, float(np.mean(cpus)) / max(full_cpu, 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--files", type=int, default=64)
    parser.add_argument("--probes", type=int, default=40)
    parser.add_argument("--sample-size", type=int, default=20_000)
    args = parser.parse_args()
    data = make_data(args.rows)
    def lexicographic():
        return pc.sort_indices(data, [("a", "ascending"), ("b", "ascending")])

    lexicographic()  # (warm-up: the first call pays for Arrow's kernels)
    _, sort_wall, sort_cpu = timed(lexicographic)
    print(f"{args.rows} rows written as {args.files} file groups per layout; {args.probes} point filters per column")
    print(f"{'layout':18} {'order/sort wall':>15} {'cpu':>6} | {'files read a=':>13} {'b=':>6} | "
          f"{'read/full a wall':>16} {'cpu':>6} {'b wall':>7} {'cpu':>6}")
    work = tempfile.mkdtemp(prefix="bench_skipping_")
    try:
        for strategy, method in LAYOUTS:
            order, wall, cpu = timed(lambda: curve_order(data, ["a", "b"], strategy, method=method,
                                                         sample_size=args.sample_size))
            root = os.path.join(work, f"{strategy}-{method}")
            table = write_layout(root, data, order, args.files)
            METADATA_CACHE.clear()
            fa, wa, ca = probe(table, data, "a", args.probes)
            fb, wb, cb = probe(table, data, "b", args.probes)
            name = strategy if strategy == "linear" else f"{strategy}/{method}"
            print(f"{name:18} {wall / sort_wall:15.2f} {cpu / max(sort_cpu, 1e-9):6.2f} | "
                  f"{fa:13.1%} {fb:6.1%} | {wa:16.2f} {ca:6.2f} {wb:7.2f} {cb:6.2f}")
            shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

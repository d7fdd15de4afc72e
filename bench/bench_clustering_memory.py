"""Clustering memory benchmark (issue 14, Performance): executing one group stays bounded.

One clustering group of ``rows`` and one of ``10 * rows`` rows (20 small files each, 10 data
columns), both larger than the execution budget (``hoodie.pyhudi.clustering.execution.buffer.bytes``,
``--budget-mb``), so both take the spill path: sorted runs in ``.hoodie/.temp/<instant>/``, merged
back streaming. Each clustering runs in a fresh child process; printed per layout: the peak RSS
growth (VmHWM after ``clear_refs``) of the 10x group over the 1x group (target <= 1.5), and the
wall and CPU time of both (CPU is shared with other processes: read the CPU column).

The bound (``pyhudi/services/clustering_sort.py``): about twice the budget (the run buffer, or a
merge's batches plus its window) + one output row group + for ``direct`` curves the distinct
values of the sort columns (the sort columns here have 1,000 and 100 distinct values).

Run: ``.venv/bin/python bench/bench_clustering_memory.py [--rows 100000] [--budget-mb 16]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pyarrow as pa

import pyhudi
from bench_compaction import PEAK_PREAMBLE

FILES = 20
COLUMNS = 10

_CLUSTER = PEAK_PREAMBLE + """
wall, cpu = time.perf_counter(), time.process_time()
t.cluster(sort_columns=["k1", "k2"], options=json.loads(sys.argv[2]))
print(status_kb("VmHWM") - before, time.perf_counter() - wall, time.process_time() - cpu)
"""


def make_table(path: str, rows: int) -> None:
    """``rows`` rows in ``FILES`` inserts (one small file each) of one partition."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("k1", pa.int64()), ("k2", pa.string()),
                        *[(f"c{i}", pa.float64()) for i in range(COLUMNS - 2)]])
    t = pyhudi.create_table(path, schema, "id")
    rng = np.random.default_rng(7)
    categories = np.array([f"cat{i:03d}" for i in range(100)], dtype=object)
    per = rows // FILES
    for f in range(FILES):
        ids = np.arange(f * per, (f + 1) * per, dtype=np.int64)
        data = {"id": ids, "k1": rng.integers(0, 1000, per), "k2": categories[rng.integers(0, 100, per)]}
        data.update({f"c{i}": rng.random(per) for i in range(COLUMNS - 2)})
        t.insert(pa.table(data, schema=schema), options={"hoodie.parquet.small.file.limit": "0"})


def measure(rows: int, budget_mb: int, layouts: list[str], work: str) -> None:
    paths = {}
    for n in (rows, rows * 10):
        paths[n] = os.path.join(work, f"group{n}")
        make_table(paths[n], n)
    for layout in layouts:
        options = {"hoodie.layout.optimize.strategy": layout,
                   "hoodie.pyhudi.clustering.execution.buffer.bytes": str(budget_mb << 20),
                   "hoodie.clustering.plan.strategy.small.file.limit": str(1 << 40),
                   "hoodie.clustering.plan.strategy.max.bytes.per.group": str(1 << 40)}
        results = []
        for n in (rows, rows * 10):
            scratch = paths[n] + f"-{layout}"
            shutil.copytree(paths[n], scratch)
            out = subprocess.run([sys.executable, "-c", _CLUSTER, scratch, json.dumps(options)],
                                 capture_output=True, text=True, check=True)
            shutil.rmtree(scratch, ignore_errors=True)
            peak, wall, cpu = out.stdout.strip().splitlines()[-1].split()
            results.append((max(1, int(peak)), float(wall), float(cpu)))
        (p1, w1, c1), (p10, w10, c10) = results
        print(f"{layout:8s} peak RSS growth {rows * 10} / {rows} rows: {p10 / p1:.2f} "
              f"({p1 // 1024} MB vs {p10 // 1024} MB; target <= 1.5); "
              f"time {w1:.1f}s / {w10:.1f}s wall, {c1:.1f}s / {c10:.1f}s CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the smaller group")
    parser.add_argument("--budget-mb", type=int, default=8, help="the execution buffer budget")
    parser.add_argument("--layouts", default="linear,z-order,hilbert")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="pyhudi-bench-clustering-memory-")
    try:
        measure(args.rows, args.budget_mb, args.layouts.split(","), work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

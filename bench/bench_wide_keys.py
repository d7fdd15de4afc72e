"""Reads of a table whose integer record keys have no key codes (snowflake-like 19-digit ids)
against the same table with small keys: ``python bench/bench_wide_keys.py [rows]``.

Both tables: ``rows`` x (``id`` + 20 float64), 4 buckets, default options otherwise (an
insert, then an upsert of 10% of the rows, c0 + 1). Small keys are ``0 .. rows-1``; wide keys
``1.8e18 + i * 4096``, outside the key codes' range ``[0, 10**17)`` (pyhudi/read/keys.py), so
held as strings where a key is needed. Printed for both: a warm read of 2 columns (one table
handle, the process's metadata cache kept) and a cold read (a fresh interpreter opening the
table and reading, timed inside it, import excluded), wall and CPU, medians over runs taken in
turns. The update's log blocks record their positions (``RECORD_POSITIONS``) for both key
kinds, so a read merges by position without decoding a key: the two should read alike.
Also printed: the read metrics of a first read.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

import pyhudi
from pyhudi.read.metadata_cache import METADATA_CACHE

ROWS = 200_000
COLS = 20
BUCKETS = 4
COLUMNS = ["c0", "c1"]
REPEAT = 7
SNOWFLAKE = 1_800_000_000_000_000_000

_COLD = (
    "import json, sys, time\n"
    "import pyhudi\n"
    "wall, cpu = time.perf_counter(), time.process_time()\n"
    "table = pyhudi.open_table(sys.argv[1])\n"
    "rows = table.read(columns=sys.argv[2].split(',')).num_rows\n"
    "print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu, rows]))\n"
)


def make_data(ids: np.ndarray, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    fields = [pa.field("id", pa.int64(), nullable=False), *[pa.field(f"c{c}", pa.float64()) for c in range(COLS)]]
    return pa.Table.from_arrays([pa.array(ids), *[pa.array(rng.random(len(ids))) for _ in range(COLS)]],
                                schema=pa.schema(fields))


def build(path: str, ids: np.ndarray) -> pa.Table:
    """The table after an insert and an update of 10% of its rows; returns the expected rows."""
    data = make_data(ids)
    table = pyhudi.create_table(path, data.schema, "id", num_buckets=BUCKETS)
    table.insert(data)
    updated = np.sort(np.random.default_rng(11).choice(len(ids), len(ids) // 10, replace=False))
    update = data.take(pa.array(updated))
    update = update.set_column(1, "c0", pa.array(np.asarray(update.column("c0")) + 1.0))
    table.upsert(update)
    c0 = np.asarray(data.column("c0")).copy()
    c0[updated] += 1.0
    return data.set_column(1, "c0", pa.array(c0))


def metrics_of(path: str) -> str:
    """The summed metrics of a first read of a process (metadata cache emptied)."""
    METADATA_CACHE.clear()
    plan = pyhudi.open_table(path).plan_scan(COLUMNS)
    summed: dict[str, int] = {}
    for task in plan.tasks:
        task.run()
        for name, value in task.metrics.items():
            summed[name] = summed.get(name, 0) + value
    return ", ".join(f"{k}={v}" for k, v in sorted(summed.items()))


def warm(table: pyhudi.Table) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    table.read(columns=COLUMNS)
    return time.perf_counter() - wall, time.process_time() - cpu


def cold(path: str) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", _COLD, path, ",".join(COLUMNS)], check=True, capture_output=True,
                         text=True, env=os.environ.copy())
    wall, cpu, _ = json.loads(out.stdout.strip().splitlines()[-1])
    return wall, cpu


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else ROWS
    root = tempfile.mkdtemp(prefix="bench_wide_keys_")
    try:
        kinds = {"small keys": np.arange(rows, dtype=np.int64),
                 "snowflake keys": SNOWFLAKE + np.arange(rows, dtype=np.int64) * 4096}
        paths, tables = {}, {}
        for name, ids in kinds.items():
            paths[name] = os.path.join(root, name.replace(" ", "_"))
            expected = build(paths[name], ids)
            tables[name] = pyhudi.open_table(paths[name])
            got = tables[name].read(columns=["id", *COLUMNS]).sort_by("id")
            assert got.equals(expected.select(["id", *COLUMNS])), f"{name}: rows differ"
            print(f"{name}: first read metrics: {metrics_of(paths[name])}")
        runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(REPEAT):  # (in turns: a busy machine slows all alike)
            for name in kinds:
                runs.setdefault((name, "warm"), []).append(warm(tables[name]))
                runs.setdefault((name, "cold"), []).append(cold(paths[name]))
        print(f"\n{rows} rows, read of {COLUMNS}, medians of {REPEAT} runs (ms)")
        print(f"{'':16} {'warm wall':>10} {'warm cpu':>10} {'cold wall':>10} {'cold cpu':>10}")
        medians = {}
        for name in kinds:
            cells = []
            for mode in ("warm", "cold"):
                wall = statistics.median(t[0] for t in runs[(name, mode)])
                cpu = statistics.median(t[1] for t in runs[(name, mode)])
                medians[(name, mode)] = (wall, cpu)
                cells += [f"{wall * 1000:10.1f}", f"{cpu * 1000:10.1f}"]
            print(f"{name:16} {' '.join(cells)}")
        for mode in ("warm", "cold"):
            (w1, c1), (w0, c0) = medians[("snowflake keys", mode)], medians[("small keys", mode)]
            print(f"snowflake / small, {mode}: wall {w1 / w0:.2f}x, cpu {c1 / c0:.2f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

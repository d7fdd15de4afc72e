"""Read benchmarks (issue 4), printed as ratios so that machine speed cancels out.

Scenario W: ``rows`` x (id + 100 float64) in 5 families of 20 columns, 4 buckets, written by
``bulk_insert`` (one base file per family and file group) and then a one-family update of 10% of
the rows (one log file per file group for that family).

- full read / ``pq.read_table`` of a compacted copy (the same rows, one Parquet file written
  with the write benchmark's faster settings: no dictionaries)                    target <= 2.0
- 2 columns of one family / full read: of the updated family (its base and log merge) and of a
  base-only family (joined with the updated family's keys)                       target <= 0.1
  (reads after the first take footers, log block layouts and key verdicts — equal key columns,
  log blocks whose keys are all in their base — from the process's metadata cache,
  :mod:`pyhudi.read.metadata_cache`; the ratio with the cache cleared before every read is
  printed too, and so are the read strategies the 2-column reads used)
- peak memory of a streaming scan, 10x rows / 1x rows (each scan in a fresh subprocess;
  Arrow memory-pool peak, and the process's RSS high-water mark, VmHWM)          target <= 1.5
- RFC-80: sort-merge read / hash-merge read of the same slices: time            target <= 0.7
  (and peak memory, lower)
- one-family (plain) table after a 10% full-row update: pyhudi read / ``hudi`` (hudi-rs)
  read of the same table                                                         target <= 1.0

Times are the best of several runs taken in turns (a busy machine slows all alike); scans
default to 16k-row batches (``Table.scan``), reads to 64k (``Table.read``).
Run: ``.venv/bin/python bench/bench_read.py [rows]`` (default 200000; the memory ratio scans
``rows`` and ``10 * rows``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (also imported by the harness)
from scenario_w import COLS, FAMILIES, PER, families, make_data  # noqa: E402

import pyhudi  # noqa: E402
from pyhudi.read.metadata_cache import METADATA_CACHE  # noqa: E402

ROWS = 200_000  # (set from argv by main())
BUCKETS = 4
REPEAT = 7






def best_of(fn, repeat: int = REPEAT) -> float:
    return interleaved([fn], repeat)[0]


def interleaved(fns: list, repeat: int = REPEAT) -> list[float]:
    """Best time of each function, run in turns (so a slow phase of the machine hits all alike)."""
    return interleaved_with_cpu(fns, repeat)[0]


def interleaved_with_cpu(fns: list, repeat: int = REPEAT) -> tuple[list[float], list[float]]:
    """Best wall time and best CPU time (all threads of the process) of each function, run in
    turns. CPU time is the steadier figure when other processes load the machine."""
    walls: list[list[float]] = [[] for _ in fns]
    cpus: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, wall, cpu in zip(fns, walls, cpus):
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
    return [min(t) for t in walls], [min(t) for t in cpus]


def strategies(table: pyhudi.Table, columns: list[str]) -> str:
    """The read metrics of the first task of a warm read of ``columns`` (strategy, skips)."""
    plan = table.plan_scan(columns)
    plan.tasks[0].run()
    return ", ".join(f"{k}={v}" for k, v in sorted(plan.tasks[0].metrics.items()))


def build_scenario_w(path: str, rows: int, default_layout: bool = False) -> pa.Table:
    """Families table after bulk insert (one base file per family, the layout measured so far)
    or, with ``default_layout``, an insert with default options (full-row log files), then a
    one-family update; returns the expected rows."""
    data = make_data(rows)
    table = pyhudi.create_table(path, data.schema, "id", num_buckets=BUCKETS, column_families=families())
    if default_layout:
        table.insert(data)
    else:
        table.bulk_insert(data, options={"hoodie.pyhudi.insert.full.row": "false"})
    rng = np.random.default_rng(11)
    updated = np.sort(rng.choice(rows, rows // 10, replace=False))
    update = data.select(["id", *[f"c{c}" for c in range(PER)]]).take(pa.array(updated))
    update = update.set_column(1, "c0", pa.array(np.asarray(update.column("c0")) + 1.0))
    table.upsert(update)
    c0 = np.asarray(data.column("c0")).copy()
    c0[updated] += 1.0
    return data.set_column(1, "c0", pa.array(c0))


def build_plain(path: str, data: pa.Table) -> None:
    table = pyhudi.create_table(path, data.schema, "id", num_buckets=BUCKETS)
    table.bulk_insert(data)
    table.upsert(data.slice(0, data.num_rows // 10))


def scan_peak(path: str, strategy: str = "auto") -> dict:
    """Stream a full scan in a fresh interpreter; report its memory peaks."""
    code = (
        "import json, sys, time, pyarrow as pa, pyhudi\n"
        "pool = pa.default_memory_pool()\n"
        "t = pyhudi.open_table(sys.argv[1]); rows = 0; start = time.perf_counter()\n"
        "for batch in t.scan(strategy=sys.argv[2]):\n"
        "    rows += batch.num_rows\n"
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
        "print(json.dumps({'rows': rows, 'pool_peak': pool.max_memory(), 'seconds': time.perf_counter() - start,\n"
        "                  'rss_peak': int(hwm) * 1024}))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", code, path, strategy], capture_output=True, text=True, env=env,
                         check=True)
    return json.loads(out.stdout)


def main() -> int:
    global ROWS
    ROWS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else ROWS
    root = tempfile.mkdtemp(prefix="pyhudi-bench-read-")
    results = []
    try:
        fam_path = f"{root}/families"
        expected = build_scenario_w(fam_path, ROWS)
        compacted = f"{root}/compacted.parquet"
        pq.write_table(expected, compacted, use_dictionary=False)
        table = pyhudi.open_table(fam_path)
        got = table.read()
        got = got.sort_by("id")
        assert got.num_rows == ROWS and all(got.column(n).equals(expected.column(n)) for n in got.column_names)
        walls, cpus = interleaved_with_cpu([
            lambda: pq.read_table(compacted),
            lambda: table.read(),
            lambda: table.read(columns=["c0", "c1"]),
            lambda: table.read(columns=[f"c{PER}", f"c{PER + 1}"]),
            lambda: table.read(strategy="hash"),
            lambda: (METADATA_CACHE.clear(), table.read()),
            lambda: (METADATA_CACHE.clear(), table.read(columns=["c0", "c1"])),
        ], REPEAT * 2)
        t_raw, t_full, t_two, t_two_base, t_hash, t_full_cold, t_two_cold = walls
        c_raw, c_full, c_two, c_two_base, c_hash = cpus[:5]
        results += [("full read / pq.read_table (compacted copy)", t_full / t_raw, "<= 2.0"),
                    ("2 columns of the updated family / full read", t_two / t_full, "<= 0.1"),
                    ("2 columns of a base-only family / full read", t_two_base / t_full, "<= 0.1"),
                    ("sort-merge read / hash-merge read (time)", t_full / t_hash, "<= 0.7")]
        print(f"Scenario W: {ROWS} rows x {COLS} float64, {FAMILIES} families, {BUCKETS} buckets, "
              f"bulk insert + one-family update of 10% (load average {os.getloadavg()[0]:.1f})")
        print(f"  wall: pq.read_table {t_raw:.3f}s, full read {t_full:.3f}s, 2 columns {t_two:.3f}s / "
              f"{t_two_base:.3f}s, hash-merge full read {t_hash:.3f}s")
        print(f"  cpu:  pq.read_table {c_raw:.3f}s, full read {c_full:.3f}s, 2 columns {c_two:.3f}s / "
              f"{c_two_base:.3f}s, hash-merge full read {c_hash:.3f}s; cpu ratios: 2 columns / full "
              f"{c_two / c_full:.3f} / {c_two_base / c_full:.3f}, full / pq.read_table {c_full / c_raw:.2f}")
        print(f"  cold metadata cache (footers, log layouts, key verdicts cleared before each read): "
              f"full read {t_full_cold:.3f}s, 2 columns {t_two_cold:.3f}s, ratio {t_two_cold / t_full_cold:.3f}")
        for label, columns in (("updated family", ["c0", "c1"]), ("base-only family", [f"c{PER}", f"c{PER + 1}"])):
            print(f"  2 columns of the {label}: per file group {strategies(table, columns)}")

        small = scan_peak(fam_path)
        hashed = scan_peak(fam_path, "hash")
        results.append(("sort-merge / hash-merge scan peak memory (pool)", small["pool_peak"] / hashed["pool_peak"],
                        "< 1.0"))
        big_path = f"{root}/families_big"
        build_scenario_w(big_path, ROWS * 10)
        big = scan_peak(big_path)
        assert big["rows"] == ROWS * 10 and small["rows"] == ROWS
        results.append((f"scan peak memory {ROWS * 10} / {ROWS} rows (pool)", big["pool_peak"] / small["pool_peak"],
                        "<= 1.5"))
        results.append((f"scan peak memory {ROWS * 10} / {ROWS} rows (RSS)", big["rss_peak"] / small["rss_peak"],
                        "<= 1.5"))
        print(f"  scan peaks: {ROWS} rows pool {small['pool_peak'] / 1e6:.0f} MB / RSS {small['rss_peak'] / 1e6:.0f} MB; "
              f"{ROWS * 10} rows pool {big['pool_peak'] / 1e6:.0f} MB / RSS {big['rss_peak'] / 1e6:.0f} MB; "
              f"hash merge {ROWS} rows pool {hashed['pool_peak'] / 1e6:.0f} MB / RSS {hashed['rss_peak'] / 1e6:.0f} MB")
        shutil.rmtree(big_path, ignore_errors=True)

        import hudi

        plain_path = f"{root}/plain"
        build_plain(plain_path, make_data(ROWS))
        plain = pyhudi.open_table(plain_path)
        rs = hudi.HudiTableBuilder.from_base_uri(plain_path).build()
        rs_rows = pa.Table.from_batches(rs.read()).num_rows
        assert rs_rows == plain.read().num_rows == ROWS
        t_py, t_rs = interleaved([lambda: plain.read(), lambda: pa.Table.from_batches(rs.read())])
        results.append(("one-family table: pyhudi / hudi-rs", t_py / t_rs, "<= 1.0"))
        print(f"  one-family table: pyhudi {t_py:.3f}s, hudi-rs {t_rs:.3f}s")
        for name, ratio, target in results:
            print(f"  {name:<52} {ratio:6.2f}   target {target}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

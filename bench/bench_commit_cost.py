"""Per-commit cost as the timeline grows, with table services on and off (issue 13).

A bucketed merge-on-read table takes 1,000-row upserts; at 10, 200 and 1,000 instants the next
``--samples`` upserts are timed (median wall and CPU seconds per commit). Without archival every
write lists, parses and reads an ever longer active timeline; with it the active timeline stays
between ``hoodie.keep.min.commits`` and ``hoodie.keep.max.commits`` (20..30) and a write pays an
archival every ~10 commits.

Measured (2 shared cores, median of 5 commits; wall / CPU ms per 1,000-row upsert):

==========  ===============  ================  ==========
instants    archival on      archival off      off / on
==========  ===============  ================  ==========
10          10.3 / 10.0      14.5 / 11.0       1.4x
200         16.5 / 16.4      38.3 / 30.6       2.3x
1,000       39.6 / 36.1      225.0 / 204.6     5.7x
==========  ===============  ================  ==========

With archival the timeline part stays flat (26..30 active instants); what still grows is the
listing of the table's log files (no compaction runs here: 4 buckets x 1,000 log files), and the
lazily loaded archived completion times those old log files need (~3 ms per commit at 1,000).

Run: ``.venv/bin/python bench/bench_commit_cost.py [--points 10,200,1000] [--samples 5]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

import pyhudi

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.float64()), ("s", pa.string())])


def batch(i: int, rows: int, keys: int) -> pa.Table:
    rng = np.random.default_rng(i)
    ids = rng.choice(keys, rows, replace=False).astype(np.int64)
    return pa.table({"id": ids, "v": rng.random(rows), "s": pa.array([f"s{i}"] * rows)}, schema=SCHEMA)


def timed_commit(table: pyhudi.Table, data: pa.Table, options: dict) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    table.upsert(data, options=options)
    return time.perf_counter() - wall, time.process_time() - cpu


MODES = {
    "all services": {"hoodie.compact.inline": "true"},  # + automatic cleaning and archival (defaults)
    "clean+archive": {},  # the defaults: no compaction, so log files pile up
    "none": {"hoodie.archive.automatic": "false", "hoodie.clean.automatic": "false"},
}


def run(points: list[int], samples: int, rows: int, mode: str, root: str) -> dict[int, tuple[float, float]]:
    options = MODES[mode]
    table = pyhudi.create_table(os.path.join(root, mode.replace(" ", "_").replace("+", "_")), SCHEMA, "id",
                                num_buckets=4)
    keys = rows * 20
    done, out = 0, {}
    for point in points:
        while done < point:
            table.upsert(batch(done, rows, keys), options=options)
            done += 1
        measured = [timed_commit(table, batch(done + k, rows, keys), options) for k in range(samples)]
        done += samples
        out[point] = (statistics.median(m[0] for m in measured), statistics.median(m[1] for m in measured))
        files = sum(1 for _, _, names in os.walk(table.path) for _ in names)
        print(f"  {mode:14s} at {point:5d} instants: wall {out[point][0] * 1000:7.1f} ms  cpu "
              f"{out[point][1] * 1000:7.1f} ms  (active instants {len(table.timeline)}, files {files})", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", default="10,200,1000")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    points = [int(p) for p in args.points.split(",")]
    root = tempfile.mkdtemp(prefix="pyhudi-bench-commit-")
    try:
        results = {mode: run(points, args.samples, args.rows, mode, root) for mode in args.modes.split(",")}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    first, last = points[0], points[-1]
    print(f"per-commit cost at {last} / at {first} instants (target with all services: <= 1.3):")
    for mode, out in results.items():
        print(f"  {mode:14s} wall {out[last][0] / out[first][0]:5.2f}x  cpu {out[last][1] / out[first][1]:5.2f}x")


if __name__ == "__main__":
    sys.exit(main())

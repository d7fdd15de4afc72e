"""Per-commit cost as the timeline grows, with table services on (issue 13) — and a commit's fixed cost (issue 15).

A bucketed merge-on-read table takes 1,000-row upserts; at 10, 1,000 and 10,000 instants of
history the next ``--samples`` upserts are timed (median wall and CPU ms per commit). Each is
split into its per-row part (preparing rows, writing data files), its fixed part (the rest of the
write: timeline listing, lock, instant times, heartbeat, markers, conflict checks, commit
metadata) and the services after it (inline compaction, cleaning, archival, or their "is it due"
checks). History is built fast (``--build fast``): all but the last 50 instants are delta commits
written straight into the timeline in the past and archived by the real archival service ten at a
time (the LSM shape real commits give); the last 50 and the measured ones are real upserts with the
services on. ``--build real`` makes every instant a real upsert (1,000 in ~40 s). ``--files 2000``
instead runs 2,000 commits with inline compaction and cleaning and checks the files per file group
against :func:`pyhudi.services.clean.files_per_group_bound` (18 with the defaults). Measured:
at most 15 files per file group and family over 2,000 commits; 52 data files at commit 1,000
and 52 at 2,000 (357 s on the loaded machine).

Measured (2 shared cores, other agents busy; median of 15 commits; wall / CPU ms):

==================  ===========  ===========  ===========  ===================
all services        10           1,000        10,000       10,000 / 10
==================  ===========  ===========  ===========  ===================
per commit          25.4 / 21.0  22.9 / 20.1  21.8 / 22.0  0.86x wall, 1.05x CPU
fixed part          5.8 / 4.9    4.6 / 4.4    5.2 / 4.9
services            9.4 / 9.0    13.7 / 9.6   9.9 / 9.9
==================  ===========  ===========  ===========  ===================

(The defaults without compaction grow 1.35x in CPU from 10 to 10,000: their log files pile up, 177
→ 384 files, which is the read side's and compaction's concern, not history's.) With
``--build real`` at 1,000 the CPU figure was 1.40x of 10 on a busier machine; a profile of 30
commits on a real 1,000-commit table against a 10-commit one made the same calls (same counts),
10% more CPU. What grew before: the schema lookup loaded the whole archive on every write (an
eagerly built fallback), the archive was re-read file by file after each archival, and cleaning
decoded the retained commits' metadata on every write — each is now read once per process.

After issue 15's commit work (``--build real --points 10,200,1000``, load 8–9, main before it run
in turns): all services 16.2 / 17.5 / 19.5 ms CPU per commit at 10 / 200 / 1,000 instants (before
21.7 / 28.5 / 29.1), its fixed part 4.7 ms CPU at each (before 6.2 / 7.1 / 7.4). The fixed cost
with the services' checks, split part by part: ``python -m bench commit`` (``bench/sc_commit.py``).

Run: ``.venv/bin/python bench/bench_commit_cost.py [--points 10,1000,10000] [--samples 15]``.
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
from pyhudi.engine.local import LocalEngine
from pyhudi.schema import avro_schema_json
from pyhudi.services.archive import archive
from pyhudi.timeline.instant import Action, Instant, State, format_instant_time_ms
from pyhudi.timeline.metadata import CommitMetadata
from pyhudi.write.client import WriteClient
from pyhudi.write.txn import WriteTxn

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.float64()), ("s", pa.string())])
REAL_WARMUP = 50
"""Real upserts (with the mode's services) before each measurement: enough for compaction,
cleaning and archival to reach their steady state whatever history was fabricated before."""


def batch(i: int, rows: int, keys: int) -> pa.Table:
    rng = np.random.default_rng(i)
    ids = rng.choice(keys, rows, replace=False).astype(np.int64)
    return pa.table({"id": ids, "v": rng.random(rows), "s": pa.array([f"s{i}"] * rows)}, schema=SCHEMA)


class Phases:
    """Wall and CPU seconds spent preparing rows and writing data files (the per-row part of a
    commit), accumulated by wrapping ``WriteTxn.prepare`` and the engine's ``run_tasks``; the rest
    of ``WriteClient.write`` is the commit's fixed cost, the rest of ``upsert`` the services'."""

    def __init__(self) -> None:
        self.data = [0.0, 0.0]
        self.write = [0.0, 0.0]
        self._wrap(WriteTxn, "prepare", self.data)
        self._wrap(LocalEngine, "run_tasks", self.data)
        self._wrap(WriteClient, "write", self.write)

    @staticmethod
    def _wrap(cls: type, name: str, into: list[float]) -> None:
        original = getattr(cls, name)

        def timed(*args, **kwargs):
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                into[0] += time.perf_counter() - wall
                into[1] += time.process_time() - cpu

        setattr(cls, name, timed)

    def reset(self) -> None:
        self.data[:] = [0.0, 0.0]
        self.write[:] = [0.0, 0.0]


PHASES = Phases()


def timed_commit(table: pyhudi.Table, data: pa.Table, options: dict) -> tuple[float, ...]:
    """(wall, cpu) of the upsert, of its fixed part (write minus data) and of the services."""
    PHASES.reset()
    wall, cpu = time.perf_counter(), time.process_time()
    table.upsert(data, options=options)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    (dw, dc), (ww, wc) = PHASES.data, PHASES.write
    return wall, cpu, ww - dw, wc - dc, wall - ww, cpu - wc


def fabricate_history(table: pyhudi.Table, count: int, chunk: int, options: dict) -> None:
    """``count`` completed delta commits written straight into the timeline, in the past, each
    ``chunk`` of them archived by the real archival service (so the LSM history has the shape
    thousands of real commits give it: L0 files of one archival each, compacted into levels).
    They write no data files: what a long history costs a commit is the timeline and the
    archive; data files are bounded by cleaning and compaction (the real upserts that follow)."""
    storage, timeline_dir = table.storage, table.config.timeline_dir
    metadata = CommitMetadata.from_write_stats(
        [], operation_type="UPSERT", schema=avro_schema_json(table.schema, table.name)).to_avro_bytes()
    base = int(time.time() * 1000) - 2 * count - 86_400_000
    tz = table.config.timezone
    for first in range(0, count, chunk):
        for i in range(first, min(count, first + chunk)):
            requested = format_instant_time_ms(base + 2 * i, tz)
            done = Instant(requested, Action.DELTACOMMIT, State.COMPLETED, format_instant_time_ms(base + 2 * i + 1, tz))
            for name in done.pending_file_names(2):
                storage.write(f"{timeline_dir}/{name}", b"")
            storage.write(f"{timeline_dir}/{done.file_name(2)}", metadata)
        archive(table.active_timeline(), {**table.config.props, **options}, table.config.table_type)


def run(points: list[int], samples: int, rows: int, mode: str, root: str, build: str) -> dict[int, tuple]:
    options = MODES[mode]
    out = {}
    keys = rows * 20
    for point in points:
        path = os.path.join(root, f"{mode.replace(' ', '_').replace('+', '_')}_{point}")
        table = pyhudi.create_table(path, SCHEMA, "id", num_buckets=4)
        started = time.perf_counter()
        real = point if build == "real" else min(point, REAL_WARMUP)
        fabricate_history(table, point - real, 10, options)
        for i in range(real):
            table.upsert(batch(i, rows, keys), options=options)
        built = time.perf_counter() - started
        measured = [timed_commit(table, batch(real + k, rows, keys), options) for k in range(samples)]
        out[point] = tuple(statistics.median(m[j] for m in measured) for j in range(6))
        files = sum(1 for _, _, names in os.walk(table.path) for _ in names)
        wall, cpu, fw, fc, sw, sc = (v * 1000 for v in out[point])
        print(f"  {mode:14s} at {point:6d} instants: wall {wall:6.1f} cpu {cpu:6.1f} ms | fixed {fw:5.1f} / {fc:5.1f} "
              f"| services {sw:5.1f} / {sc:5.1f} ms (active {len(table.timeline)}, archived "
              f"{len(table.archived_timeline())}, files {files}, built in {built:.0f} s)", flush=True)
        shutil.rmtree(path, ignore_errors=True)
    return out


def file_bound(commits: int, rows: int, root: str) -> None:
    """``commits`` one-family upserts with the defaults + inline compaction: the most data files
    any file group holds after each commit, against the stated bound
    (:func:`pyhudi.services.clean.files_per_group_bound`)."""
    from pyhudi.services.clean import files_per_group_bound
    from pyhudi.storage.naming import parse_data_file_name

    options = MODES["all services"]
    table = pyhudi.create_table(os.path.join(root, "files"), SCHEMA, "id", num_buckets=4)
    bound = files_per_group_bound({**table.properties, **options})
    started, highest, totals = time.perf_counter(), 0, []
    for i in range(commits):
        table.upsert(batch(i, rows, rows * 20), options=options)
        per_group: dict[tuple[str, str | None], int] = {}
        for name in os.listdir(table.path):
            if not name.startswith(".hoodie") and name.endswith((".parquet",)) or ".log." in name:
                parsed = parse_data_file_name(name)
                key = (parsed.file_id, parsed.family)
                per_group[key] = per_group.get(key, 0) + 1
        highest = max(highest, *per_group.values())
        totals.append(sum(per_group.values()))
    print(f"files per file group and family after {commits} commits: at most {highest} (bound {bound}); "
          f"data files at commit {commits // 2}: {totals[commits // 2 - 1]}, at {commits}: {totals[-1]} "
          f"({time.perf_counter() - started:.0f} s)")
    assert highest <= bound, (highest, bound)


MODES = {
    "all services": {"hoodie.compact.inline": "true"},  # + automatic cleaning and archival (defaults)
    "clean+archive": {},  # the defaults: no compaction, so log files pile up
    "none": {"hoodie.archive.automatic": "false", "hoodie.clean.automatic": "false"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", default="10,1000,10000")
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--modes", default="all services,clean+archive")
    parser.add_argument("--build", choices=("fast", "real"), default="fast",
                        help="fast: fabricate all but the last 50 instants of history and archive them as "
                             "they come; real: every instant of history is a real upsert")
    parser.add_argument("--files", type=int, default=0, metavar="N",
                        help="instead: N commits with inline compaction and cleaning, files per file group "
                             "against the stated bound (the issue's steady-state figure: N=2000)")
    args = parser.parse_args()
    points = [int(p) for p in args.points.split(",")]
    root = tempfile.mkdtemp(prefix="pyhudi-bench-commit-")
    if args.files:
        try:
            return file_bound(args.files, args.rows, root)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    try:
        results = {mode: run(points, args.samples, args.rows, mode, root, args.build)
                   for mode in args.modes.split(",")}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    first = points[0]
    print(f"per-commit cost at N / at {first} instants (target with all services: <= 1.3 at 10,000):")
    for mode, out in results.items():
        for point in points[1:]:
            print(f"  {mode:14s} {point:6d}: wall {out[point][0] / out[first][0]:5.2f}x  "
                  f"cpu {out[point][1] / out[first][1]:5.2f}x")
    print(f"fixed cost of a {args.rows}-row upsert at {first} instants (target <= 5 ms; wall / cpu ms): "
          + ", ".join(f"{mode} {out[first][2] * 1000:.1f} / {out[first][3] * 1000:.1f}" for mode, out in results.items()))


if __name__ == "__main__":
    sys.exit(main())

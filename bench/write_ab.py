"""Scenario W writes, old code against new, one write per table (its files removed after each).

Each process writes ``rounds`` times: ``pq.write_table`` (uncompressed, no dictionaries), then the
insert with and without 5 families and the upserts into an empty table, in an order rotated from
round to round and process to process; the first round is dropped. (The write right after
``pq.write_table`` pays more kernel time at 2M rows — the memory Arrow's pool handed back to the
system meanwhile is faulted in again, docs/benchmarks.md — so a fixed order charged it to the
5-family insert every time.)
Processes alternate between two code trees (``PYTHONPATH``), so both see the same machine.
Removing each write's files keeps the page cache out of the figures (kept, ~6.5 GB of files make
every writer pay the kernel's reclaim; docs/benchmarks.md, Scenario W).
Run: ``python bench/write_ab.py ROWS ROUNDS PROCESSES [OLD_TREE] [NEW_TREE]``; with
``WRITE_AB_DETAIL=1`` in the environment every write is listed too: wall, user and kernel CPU,
minor page faults and the process's peak RSS so far.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ("raw", "insfam", "insplain", "upsfam", "upsplain")


def child(rows: int, rounds: int, rotation: int = 0) -> None:
    sys.path.insert(0, HERE)
    import pyarrow.parquet as pq
    from scenario_w import families, make_data

    import pyhudi

    data = make_data(rows)
    root = tempfile.mkdtemp(prefix="pyhudi-ab-")
    out: dict[str, list] = {k: [] for k in KINDS}
    writers = KINDS[1:]
    for r in range(rounds):
        turn = (r + rotation) % len(writers)
        for kind in ("raw", *writers[turn:], *writers[:turn]):
            path = f"{root}/{kind}_{r}"
            if kind == "raw":
                def write():
                    pq.write_table(data, path, use_dictionary=False, compression="none")
            else:
                table = pyhudi.create_table(path, data.schema, "id", num_buckets=4,
                                            column_families=families() if kind.endswith("fam") else None)
                write = (lambda t=table: t.insert(data)) if kind.startswith("ins") else (lambda t=table: t.upsert(data))
            before = resource.getrusage(resource.RUSAGE_SELF)
            start, cpu = time.perf_counter(), time.process_time()
            write()
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
            after = resource.getrusage(resource.RUSAGE_SELF)
            out[kind].append((wall, cpu, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime,
                              after.ru_minflt - before.ru_minflt, after.ru_maxrss))
            shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else os.remove(path)
    shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(out))


def main() -> int:
    if sys.argv[1] == "--child":
        child(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 0)
        return 0
    rows, rounds, processes = sys.argv[1], sys.argv[2], int(sys.argv[3])
    trees = {"old": sys.argv[4] if len(sys.argv) > 4 else "/work/main",
             "new": sys.argv[5] if len(sys.argv) > 5 else os.path.dirname(HERE)}
    results: dict[str, dict[str, list]] = {t: {k: [] for k in KINDS} for t in trees}
    for i in range(processes):
        for name in (list(trees) if i % 2 == 0 else list(reversed(trees))):
            env = dict(os.environ, PYTHONPATH=trees[name])
            done = subprocess.run([sys.executable, __file__, "--child", rows, rounds, str(i)], env=env,
                                  capture_output=True, text=True, check=True)
            for kind, values in json.loads(done.stdout).items():
                results[name][kind].extend(values[1:] or values)  # (the first round warms up)
    print(f"load average {os.getloadavg()[0]:.1f}; medians, wall (CPU) and ratio to pq.write_table")
    for name, by_kind in results.items():
        raw_wall = statistics.median(v[0] for v in by_kind["raw"])
        raw_cpu = statistics.median(v[1] for v in by_kind["raw"])
        for kind, values in by_kind.items():
            wall, cpu = statistics.median(v[0] for v in values), statistics.median(v[1] for v in values)
            sys_cpu = statistics.median(v[3] for v in values)
            print(f"{name:4} {kind:9} {wall * 1000:8.1f} ms ({cpu * 1000:8.1f} ms, kernel {sys_cpu * 1000:6.1f})  "
                  f"{wall / raw_wall:5.2f} ({cpu / raw_cpu:4.2f})")
    if os.environ.get("WRITE_AB_DETAIL"):
        print("every write: tree kind wall user kernel (ms) minor-faults peak-RSS (MB)")
        for name, by_kind in results.items():
            for kind, values in by_kind.items():
                for wall, _, user, kernel, minflt, rss in values:
                    print(f"{name:4} {kind:9} {wall * 1000:7.0f} {user * 1000:7.0f} {kernel * 1000:7.0f} "
                          f"{minflt:8d} {rss / 1024:7.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Cost of one family file of Scenario W: what the meta columns add to a Parquet write.

One file group of Scenario W (50k rows, the 200k of ``bench_write.py`` in 4 buckets) written by
one :class:`~pyhudi.write.handle.FileGroupWriteTask` on one thread: 5 family files of ``id`` +
20 float64 each, as log blocks (``append``: upserts, inserts into buckets) and as base files
(``create``: bulk inserts). Prints CPU milliseconds per family file (min and median of
``repeat`` rounds, CPU time so that a shared machine's load does not count) beside
``pq.write_table`` of the same columns without meta columns, their ratio, and what each of the
five meta columns costs encoded alone.
Run: ``.venv/bin/python bench/bench_family_file.py [repeat]``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from scenario_w import FAMILIES, PER, make_data

from pyhudi.logformat import parquet_options_for
from pyhudi.logformat.parquet_options import encode_parquet, options_for_columns
from pyhudi.write.handle import (
    KIND_APPEND,
    KIND_CREATE,
    META_PARQUET_OPTIONS,
    RECORD_KEY,
    FamilyPayload,
    FileGroupWriteTask,
)

ROWS = 50_000
REPEAT = int(sys.argv[1]) if len(sys.argv) > 1 else 30
FILE_ID = "00000000-0000-0000-0000-000000000000-0"


def family_payloads(rows: pa.Table) -> list[tuple[str, pa.Table, dict]]:
    """(family, its rows: record key + id + 20 columns, its Parquet options) as the planner makes them."""
    options = parquet_options_for(rows, META_PARQUET_OPTIONS, ["id"])
    out = []
    for f in range(FAMILIES):
        names = [RECORD_KEY, "id", *[f"c{c}" for c in range(f * PER, (f + 1) * PER)]]
        out.append((f"f{f}", rows.select(names), options_for_columns(options, [*META_PARQUET_OPTIONS, *names])))
    return out


def task_cpu(kind: str, payloads: list, root: str, run: int) -> float:
    """CPU seconds per family file of one task writing every family (files removed afterwards)."""
    instant = f"2026010100{run:07d}"
    task = FileGroupWriteTask(
        base_uri=root, instant=instant, table_name="w", partition_path="", file_id=FILE_ID, kind=kind,
        write_token=f"{run}-1-0",
        payloads=[FamilyPayload(name, data, False, None, plan="p", parquet_options=options)
                  for name, data, options in payloads])
    start = time.process_time()
    task.run()
    spent = time.process_time() - start
    for entry in os.scandir(root):
        shutil.rmtree(entry.path) if entry.is_dir() else os.remove(entry.path)
    return spent / FAMILIES


def raw_cpu(payloads: list, root: str) -> float:
    """CPU seconds per family of ``pq.write_table`` of the same columns (no meta columns)."""
    start = time.process_time()
    for name, data, _ in payloads:
        pq.write_table(data.drop_columns([RECORD_KEY]), f"{root}/{name}.parquet", use_dictionary=False,
                       compression="none")
    spent = time.process_time() - start
    for name, _, _ in payloads:
        os.remove(f"{root}/{name}.parquet")
    return spent / FAMILIES


def meta_columns_cpu(payloads: list) -> None:
    """CPU ms of each meta column alone, encoded with the planner's options (what each adds to a
    family file; every file carries all five)."""
    _, data, options = payloads[0]
    task = FileGroupWriteTask(base_uri="", instant="20260101000000000", table_name="w", partition_path="",
                              file_id=FILE_ID, kind=KIND_APPEND, write_token="0-1-0")
    table, _ = task._with_meta(data, task._meta_columns(data.column(RECORD_KEY), FILE_ID))
    costs = []
    for name in table.column_names[:5]:
        column = table.select([name])
        narrowed = options_for_columns(options, [name])
        spent = []
        for _ in range(REPEAT):
            start = time.process_time()
            encode_parquet(column, narrowed)
            spent.append(time.process_time() - start)
        costs.append(f"{name} {min(spent) * 1e3:.2f}")
    print(f"  meta columns alone (min of {REPEAT}): " + ", ".join(costs))


def main() -> int:
    data = make_data(ROWS)
    keys = pc.cast(data.column("id"), pa.string())
    rows = data.add_column(0, RECORD_KEY, keys).take(pc.sort_indices(keys))  # sorted by key, as tasks write
    payloads = family_payloads(rows)
    root = tempfile.mkdtemp(prefix="pyhudi-bench-")
    try:
        raw = [raw_cpu(payloads, root) for _ in range(REPEAT)]
        print(f"Scenario W family file: {ROWS} rows x (id + {PER} float64), {FAMILIES} families, CPU ms "
              f"(min / median of {REPEAT})")
        print(f"  pq.write_table, no meta columns {min(raw) * 1e3:6.2f} / {statistics.median(raw) * 1e3:6.2f}")
        for kind, label in ((KIND_APPEND, "log block (append)"), (KIND_CREATE, "base file (create)")):
            spent = [task_cpu(kind, payloads, root, run) for run in range(REPEAT)]
            print(f"  {label:31} {min(spent) * 1e3:6.2f} / {statistics.median(spent) * 1e3:6.2f}"
                  f"   ratio to pq.write_table {min(spent) / min(raw):.2f}")
        meta_columns_cpu(payloads)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

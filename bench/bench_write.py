"""Scenario W (issue 3): 200k rows x (id + 100 float64) in 5 families of 20, 4 buckets.

Prints, as ratios (machine speed cancels out):
- insert time / ``pyarrow.parquet.write_table`` of the same table (faster of default settings
  and ``use_dictionary=False``)                                              target <= 1.1
- one-family update (10% of rows, 20 columns): bytes written / payload bytes  target <= 1.2
- one-family update time / full-row upsert time of the same rows             target <= 0.25
- RFC-80 claim: full-write throughput with 5 families / without families     target >= 0.95
Run: ``.venv/bin/python bench/bench_write.py [rows]``.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import pyhudi

ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
COLS, FAMILIES, BUCKETS = 100, 5, 4


def make_data(rows: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    columns = {"id": pa.array(np.arange(rows, dtype=np.int64))}
    for c in range(COLS):
        columns[f"c{c}"] = pa.array(rng.random(rows))
    return pa.table(columns)


def schema_of(table: pa.Table) -> pa.Schema:
    return pa.schema([pa.field("id", pa.int64(), nullable=False), *list(table.schema)[1:]])


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    data = make_data(ROWS)
    schema = schema_of(data)
    per = COLS // FAMILIES
    families = {f"f{f}": ",".join(f"c{c}" for c in range(f * per, (f + 1) * per)) for f in range(FAMILIES)}
    root = tempfile.mkdtemp(prefix="pyhudi-bench-")
    try:
        raw = min(
            timed(lambda: pq.write_table(data, f"{root}/raw_default.parquet")),
            timed(lambda: pq.write_table(data, f"{root}/raw_nodict.parquet", use_dictionary=False)),
        )
        fam = pyhudi.create_table(f"{root}/families", schema, "id", num_buckets=BUCKETS, column_families=families)
        plain = pyhudi.create_table(f"{root}/plain", schema, "id", num_buckets=BUCKETS)
        t_fam = timed(lambda: fam.insert(data))
        t_plain = timed(lambda: plain.insert(data))
        n_upd = ROWS // 10
        one_family = data.select(["id", *[f"c{c}" for c in range(per)]]).slice(0, n_upd)
        t_one = timed(lambda: fam.upsert(one_family))
        bytes_one = fam.last_write.bytes_written
        payload = n_upd * per * 8
        t_full = timed(lambda: plain.upsert(data.slice(0, n_upd)))
        rows = [
            ("insert (5 families) / pq.write_table", t_fam / raw, "<= 1.1"),
            ("one-family update bytes / payload", bytes_one / payload, "<= 1.2"),
            ("one-family update time / full-row upsert", t_one / t_full, "<= 0.25"),
            ("5-family throughput / no families", t_plain / t_fam, ">= 0.95"),
        ]
        print(f"Scenario W: {ROWS} rows x {COLS} float64, {FAMILIES} families, {BUCKETS} buckets")
        print(f"  raw parquet write {raw:.3f}s, families insert {t_fam:.3f}s, plain insert {t_plain:.3f}s, "
              f"one-family update {t_one:.3f}s ({bytes_one / 1e6:.1f} MB), full-row upsert {t_full:.3f}s")
        for name, ratio, target in rows:
            print(f"  {name:<44} {ratio:6.2f}   target {target}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

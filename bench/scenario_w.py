"""Scenario W, shared by the benchmarks: ``rows`` x (``id`` + 100 float64) in 5 families of 20.

The write, read and Spark benchmarks all measure this one table shape (issues 3–5), so it is
built in one place: random doubles (the worst case for dictionaries), a non-null int64 key.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

COLS, FAMILIES = 100, 5
PER = COLS // FAMILIES
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), *[pa.field(f"c{c}", pa.float64()) for c in range(COLS)]])


def make_data(rows: int, seed: int = 7) -> pa.Table:
    """``rows`` rows of Scenario W with ``id`` = 0..rows-1 and uniform random doubles."""
    rng = np.random.default_rng(seed)
    columns = [pa.array(np.arange(rows, dtype=np.int64))]
    columns += [pa.array(rng.random(rows)) for _ in range(COLS)]
    return pa.Table.from_arrays(columns, schema=SCHEMA)


def families() -> dict[str, str]:
    """The five families ``f0``..``f4`` of 20 consecutive columns each."""
    return {f"f{f}": ",".join(f"c{c}" for c in range(f * PER, (f + 1) * PER)) for f in range(FAMILIES)}

"""Whole-table reads on top of scan planning (kept for callers of the first read API)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from pyhudi.read.plan import plan_scan


def read_table(table: Any, columns: Sequence[str] | None = None, filters: Sequence[tuple] | None = None,
               as_of: Any = None, with_meta: bool = False) -> pa.Table:
    """Snapshot (or time-travel) read of a whole table as one Arrow table."""
    return plan_scan(table, columns, filters, as_of, with_meta=with_meta).to_table()

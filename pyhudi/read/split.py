"""Splitting large file groups into key ranges: several read tasks for one file group.

A read task reads one file group by default. A large file group can be split into *key
ranges* so that tasks stay small (Spark: one partition per split). Every version of a record —
in the base files and in every log block of every family — carries the same record key, so a
key range is a self-contained piece of the file group: merging and joining the versions whose
keys fall in the range gives exactly the rows of the range. The ranges are half-open,
``[low, high)`` in record-key (string) order, the first unbounded below and the last above, so
together they cover every key exactly once — also keys that only log blocks hold.

Split points come from one base file's row-group statistics of the record-key column: row
groups are taken in key order, as many as fit in ``max_rows`` rows, and each split starts at
the minimum key of its first row group. A split then reads only its own row groups of that base
(and of every base with the same layout), and keeps the rows of log blocks in its range. Base
files without record-key statistics, or whose row groups' key ranges overlap (not sorted by
key), are not split.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from pyhudi.errors import ReadError
from pyhudi.read.keys import KeySpec
from pyhudi.read.pruning import key_range_of
from pyhudi.storage.fs import Storage
from pyhudi.config.read import SPLIT_ROWS  # noqa: F401 (declared there)
from pyhudi.storage.parquet import parquet_file


KeyBounds = tuple[str | None, str | None]
"""A half-open record-key range ``[low, high)``; None: unbounded."""


def split_rows(max_rows_per_task: Any, options: Mapping[str, Any] | None) -> int | None:
    """The split size asked for: ``max_rows_per_task``, else :data:`SPLIT_ROWS` in ``options``."""
    value = max_rows_per_task
    if value is None and options:
        value = SPLIT_ROWS.get({k: v for k, v in options.items() if v is not None})
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ReadError(f"max_rows_per_task ({SPLIT_ROWS.key}) must be a positive integer, got {value!r}")
    return value


def key_splits(storage: Storage, relpath: str, keys: KeySpec, schema: pa.Schema, max_rows: int) -> list[KeyBounds]:
    """Key ranges splitting the rows of base file ``relpath`` into pieces of at most
    ``max_rows`` rows (a single row group may exceed it); ``[(None, None)]`` when it cannot be
    split (fits, no record-key statistics, or row groups not in key order)."""
    whole: list[KeyBounds] = [(None, None)]
    with storage.open_input(relpath) as source:
        metadata = parquet_file(source).metadata
    key_column = keys.stats_column(metadata.schema.names, schema)
    if key_column is None or metadata.num_rows <= max_rows or metadata.num_row_groups < 2:
        return whole
    ranges = [key_range_of(metadata, i, key_column) for i in range(metadata.num_row_groups)]
    if any(r is None for r in ranges):
        return whole
    starts = []  # split points: the minimum key of each split's first row group
    rows = 0
    for i in range(metadata.num_row_groups):
        if i and not ranges[i - 1][1] < ranges[i][0]:
            return whole  # overlapping row groups: a key could sit on both sides of a point
        count = metadata.row_group(i).num_rows
        if i and rows and rows + count > max_rows:
            starts.append(ranges[i][0])
            rows = 0
        rows += count
    bounds = [None, *starts, None]
    return [(bounds[j], bounds[j + 1]) for j in range(len(bounds) - 1)]

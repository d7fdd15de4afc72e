"""Merging record versions of one family into the latest state per key — vectorised.

Input: *versions* (a base file's rows, then each log block's rows in processing order), each
with a record key, a processing sequence, a delete flag, optionally an ordering value, and the
columns its block carries (a partial block carries some). Semantics, per key, in sequence order
(reference/hudi-on-disk.md "Merge rules", DESIGN §4):

- commit-time ordering: every version wins over the state before it;
- event-time ordering: a version wins if it has no ordering value (a partial block without the
  family's ordering column merges by commit time), or if its ordering value is >= the highest
  seen since the last default-ordering delete; a delete with the default ordering value
  (IntWrapper(0) / null) always wins and resets the ordering;
- a winning full record replaces the row; a winning partial record replaces its columns only;
  a winning delete removes the row (a later winning record creates it again).

All of this is computed with sorts, grouped cumulative maxima and ``reduceat`` over the whole
input — no per-record Python.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.read.keys import text_keys


@dataclass
class Versions:
    """One batch of versions that share a block: same sequence base, same kind, same columns."""

    keys: pa.Array  # record keys: strings, or the integers they spell (pyhudi.read.keys)
    data: pa.Table | None  # columns this block carries (None for deletes)
    is_delete: bool | np.ndarray  # per batch, or per row (soft deletes: _hoodie_is_deleted)
    ordering: pa.Array | None = None  # ordering values (None: block has none)
    default_delete: pa.Array | None = None  # bool per delete: default ordering value
    owned: bool = False  # data buffers decoded for this read alone: a merge may patch them in place
    last: bool = False  # the input's final batch: no version follows (a merge window need not stop before its end)


def cast_ordering(values: pa.Array, target: pa.DataType) -> pa.Array:
    """Ordering values of delete blocks come as Int/Long wrappers for temporal columns too."""
    if values.type == target:
        return values
    if pa.types.is_integer(values.type) and (pa.types.is_timestamp(target) or pa.types.is_date(target)):
        width = pa.int32() if pa.types.is_date32(target) else pa.int64()
        return values.cast(width).cast(target)
    return values.cast(target)


def dense_ranks(values: pa.ChunkedArray) -> np.ndarray:
    """Rank of every value (nulls → -1), equal values equal ranks."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    uniques = pc.unique(values.drop_null() if values.null_count else values)
    uniques = uniques.take(pc.sort_indices(uniques))
    ranks = pc.index_in(values, value_set=uniques)
    return np.asarray(ranks.fill_null(-1) if ranks.null_count else ranks, dtype=np.int64)


def _grouped_exclusive_cummax(values: np.ndarray, segment_start: np.ndarray) -> np.ndarray:
    """Running max of ``values`` (>= -1) before each element, restarting at segment starts."""
    n = len(values)
    if n == 0:
        return values
    seg = np.cumsum(segment_start) - 1
    width = int(values.max()) + 2
    shifted = seg * width + (values + 1)
    inclusive = np.maximum.accumulate(shifted) - seg * width - 1
    exclusive = np.empty(n, dtype=np.int64)
    exclusive[0] = -1
    exclusive[1:] = inclusive[:-1]
    exclusive[segment_start] = -1
    return exclusive


def _group_last(mask: np.ndarray, group_starts: np.ndarray) -> np.ndarray:
    """Per group: the largest index where ``mask`` holds, or -1."""
    idx = np.where(mask, np.arange(len(mask), dtype=np.int64), -1)
    return np.maximum.reduceat(idx, group_starts) if len(idx) else idx


def merge_versions(
    batches: list[Versions], columns: list[pa.Field], event_time: bool, ordering_type: pa.DataType | None = None,
    base_rows: int = 0,
) -> pa.Table:
    """The latest live row per key: a table of ``_key`` + ``columns``, sorted by key.

    ``base_rows``: how many leading versions are a base file's rows. A key the base file stores
    more than once (an ``insert`` keeps duplicates) keeps one row per stored copy, each merged
    with the key's later versions — as Hudi's merge handle updates every copy.
    """
    key_field = pa.field("_key", pa.string())
    out_schema = pa.schema([key_field, *columns])
    batches = [b for b in batches if len(b.keys)]
    if not batches:
        return out_schema.empty_table()
    sizes = [len(b.keys) for b in batches]
    total = sum(sizes)
    keys = pa.chunked_array([text_keys(b.keys) for b in batches], pa.string())
    block_of = np.repeat(np.arange(len(batches), dtype=np.int64), sizes)
    seq = block_of * (1 << 32) + np.concatenate([np.arange(s, dtype=np.int64) for s in sizes])
    is_delete = np.concatenate([np.broadcast_to(np.asarray(b.is_delete, dtype=bool), (len(b.keys),)) for b in batches])
    default_delete = np.concatenate(
        [np.asarray(b.default_delete.fill_null(True)) if b.default_delete is not None else np.broadcast_to(np.asarray(b.is_delete, dtype=bool), (len(b.keys),))
         for b in batches]
    ) if event_time else is_delete
    has_ord = np.repeat(np.array([b.ordering is not None for b in batches]), sizes)
    if event_time and ordering_type is not None and has_ord.any():
        ordering = pa.chunked_array(
            [(cast_ordering(b.ordering, ordering_type) if b.ordering is not None else pa.nulls(len(b.keys), ordering_type))
             for b in batches], ordering_type)
        rank = dense_ranks(ordering)
    else:
        rank = np.full(total, -1, dtype=np.int64)

    source, slot = _copies_of_stored_keys(keys, base_rows)
    if source is not None:  # one group per (key, stored copy): later versions are repeated per copy
        keys = keys.take(pa.array(source))
        seq, is_delete, default_delete, has_ord, rank = (a[source] for a in (seq, is_delete, default_delete, has_ord, rank))
    sort_table = {"k": keys, "s": pa.array(seq)}
    sort_keys = [("k", "ascending"), ("s", "ascending")]
    if slot is not None:
        sort_table["c"] = pa.array(slot)
        sort_keys.insert(1, ("c", "ascending"))
    order = np.asarray(pc.sort_indices(pa.table(sort_table), sort_keys=sort_keys))
    sorted_keys = keys.take(pa.array(order)).combine_chunks()
    is_delete, default_delete, has_ord, rank = is_delete[order], default_delete[order], has_ord[order], rank[order]
    total = len(order)
    new_key = np.ones(total, dtype=bool)
    if total > 1:
        new_key[1:] = np.asarray(pc.not_equal(sorted_keys.slice(1), sorted_keys.slice(0, total - 1)))
        if slot is not None:
            sorted_slot = slot[order]
            new_key[1:] |= sorted_slot[1:] != sorted_slot[:-1]
    group_starts = np.flatnonzero(new_key)
    rows_of = order if source is None else source[order]  # sorted position -> row of the batches

    if event_time:
        segment_start = new_key | default_delete
        prev_max = _grouped_exclusive_cummax(np.where(has_ord, rank, -1), segment_start)
        wins = default_delete | ~has_ord | (prev_max < 0) | (rank >= prev_max)
    else:
        wins = np.ones(total, dtype=bool)
    group_id = np.cumsum(new_key) - 1
    last_delete = _group_last(wins & is_delete, group_starts)[group_id]
    alive = wins & ~is_delete & (np.arange(total) > last_delete)
    exists = np.logical_or.reduceat(alive, group_starts)

    arrays = [sorted_keys.take(pa.array(group_starts[exists]))]
    available = [dict(zip(b.data.column_names, b.data.columns)) if b.data is not None else {} for b in batches]
    for field in columns:
        pieces = []
        present = np.zeros(len(batches), dtype=bool)
        for i, b in enumerate(batches):
            if field.name in available[i]:
                present[i] = True
                column = available[i][field.name]
                pieces.append(column if column.type == field.type else column.cast(field.type))
            else:
                pieces.append(pa.chunked_array([pa.nulls(len(b.keys), field.type)]))
        column = pa.chunked_array([c for p in pieces for c in p.chunks], field.type).combine_chunks()
        present_rows = np.repeat(present, sizes)[rows_of]
        chosen = _group_last(alive & present_rows, group_starts)[exists]
        taken = column.take(pa.array(rows_of[np.maximum(chosen, 0)]))
        arrays.append(pc.if_else(pa.array(chosen >= 0), taken, pa.nulls(len(chosen), field.type)))
    return pa.Table.from_arrays(arrays, schema=out_schema)


def _copies_of_stored_keys(keys: pa.ChunkedArray, base_rows: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(source rows, copy number)`` when the first ``base_rows`` keys hold a key twice: every
    base row keeps its place with the number of its copy, and every later version of such a
    key is repeated once per copy; ``(None, None)`` when every stored key is unique."""
    if base_rows < 2:
        return None, None
    stored = keys.slice(0, base_rows)
    unique = pc.unique(stored)
    if len(unique) == base_rows:
        return None, None
    stored_ids = np.asarray(pc.index_in(stored, value_set=unique), dtype=np.int64)
    copies = np.bincount(stored_ids, minlength=len(unique))
    by_key = np.argsort(stored_ids, kind="stable")
    starts = np.concatenate([[0], np.cumsum(copies)[:-1]])
    copy_of_base = np.empty(base_rows, dtype=np.int64)
    copy_of_base[by_key] = np.arange(base_rows, dtype=np.int64) - starts[stored_ids[by_key]]
    later = pc.index_in(keys.slice(base_rows), value_set=unique)
    later_ids = np.asarray(later.fill_null(-1) if later.null_count else later, dtype=np.int64)
    repeat = np.where(later_ids >= 0, copies[np.maximum(later_ids, 0)], 1)
    source_later = np.repeat(np.arange(base_rows, len(keys), dtype=np.int64), repeat)
    first = np.repeat(np.cumsum(repeat) - repeat, repeat)
    copy_of_later = np.arange(len(source_later), dtype=np.int64) - first
    return (np.concatenate([np.arange(base_rows, dtype=np.int64), source_later]),
            np.concatenate([copy_of_base, copy_of_later]))


def columns_of(data: pa.Table | None) -> dict[str, pa.ChunkedArray]:
    """Name → column, built once (``Table.column(name)`` searches the schema on every call)."""
    return dict(zip(data.column_names, data.columns)) if data is not None else {}

"""Merging record versions of one family into the latest state per key — vectorised.

Input: *versions* (a base file's rows, then each log block's rows in processing order), each
with a record key, a processing sequence, a delete flag, optionally an ordering value, and the
columns its block carries (a partial block carries some). The order is Apache Hudi 1.x's file
group reader's (reference/hudi-on-disk.md "Merge rules", DESIGN §4): the log versions of a key
merge with each other first, then the result merges with the base row.

- commit-time ordering: every version wins over the state before it;
- event-time ordering: a version wins if it has no ordering value (a partial block without the
  family's ordering column merges by commit time), or if its ordering value is >= the highest
  seen since the last default-ordering delete; a delete with the default ordering value
  (IntWrapper(0) / null) always wins and resets the ordering;
- among the log versions, a winning record takes the columns it carries, and a losing partial
  record still fills the columns the log record does not carry yet (Hudi's partial merge): an
  older partial update supplies a column a newer one lacks. The log record then meets the base
  row: it wins if one of its versions wins over the base row (the base row's columns fill what
  it lacks), else the base row stays whole. Applying each log version to the base row in turn
  would differ exactly there. pyhudi's own tables follow the same order (they then read the
  same under Apache Hudi's reader);
- a delete that wins over the base row removes it for good: later versions start a new row
  (pyhudi keeps this where Hudi's reader forgets a delete followed by a newer log record);
- a key the base file stores twice (an ``insert`` keeps duplicates) merges its log versions into
  its first stored copy only; the other copies come back as stored (Hudi removes the key's log
  record from its map when the first copy meets it).

Who wins between two versions (ordering values, ties, deletes, partial records) is the one
merge rule of :mod:`pyhudi.record_merge`, in its scan form
(:func:`~pyhudi.record_merge.winners_in_sequence`); this module adds the order in which a file
slice's versions meet. All of this is computed with sorts, grouped cumulative maxima and
``reduceat`` over the whole input — no per-record Python. :func:`pyhudi.read.window.merge_window`
gives the same rows from sorted inputs window by window.
"""

from __future__ import annotations


import numpy as np
import pyarrow as pa

from pyhudi.lazy import pc
from pyhudi.read.keys import text_keys
from pyhudi.value import Record
from pyhudi.record_merge import (
    cast_ordering,
    commit_time_deletes,
    group_first,
    group_last,
    ordering_ranks,
    partial_source,
    winners_in_sequence,
)


class Versions(Record):
    """One batch of versions that share a block: same sequence base, same kind, same columns."""

    keys: pa.Array  # record keys: strings, or the integers they spell (pyhudi.read.keys)
    data: pa.Table | None  # columns this block carries (None for deletes)
    is_delete: bool | np.ndarray  # per batch, or per row (soft deletes: _hoodie_is_deleted)
    ordering: pa.Array | None = None  # ordering values (None: block has none)
    default_delete: pa.Array | None = None  # bool per delete: default ordering value
    owned: bool = False  # data buffers decoded for this read alone: a merge may patch them in place
    last: bool = False  # the input's final batch: no version follows (a merge window need not stop before its end)

    def __init__(self, keys: pa.Array, data: pa.Table | None, is_delete: bool | np.ndarray,
                 ordering: pa.Array | None = None, default_delete: pa.Array | None = None, owned: bool = False,
                 last: bool = False) -> None:
        self._set(keys=keys, data=data, is_delete=is_delete, ordering=ordering, default_delete=default_delete,
                  owned=owned, last=last)


def merge_versions(
    batches: list[Versions], columns: list[pa.Field], event_time: bool, ordering_type: pa.DataType | None = None,
    base_rows: int = 0, text_keys_out: bool = True,
) -> pa.Table:
    """The latest live row per key: a table of ``_key`` + ``columns``, sorted by key.

    ``base_rows``: how many leading versions are a base file's rows. The log versions of a key
    merge with each other first, then with the base row (Hudi's order, see the module
    docstring); a key the base file stores more than once (an ``insert`` keeps duplicates)
    merges its log versions into its first stored copy only and returns the other copies as
    stored — as Hudi's file group reader, which takes a key's log record out of its map when the
    first copy meets it. ``text_keys_out=False`` keeps the batches' key type (key codes) when
    they all share it.
    """
    key_type = batches[0].keys.type if batches and not text_keys_out and \
        all(b.keys.type == batches[0].keys.type for b in batches) else pa.string()
    out_schema = pa.schema([pa.field("_key", key_type), *columns])
    batches = [b for b in batches if len(b.keys)]
    if not batches:
        return out_schema.empty_table()
    sizes = [len(b.keys) for b in batches]
    total = sum(sizes)
    keys = pa.chunked_array([b.keys if key_type != pa.string() else text_keys(b.keys) for b in batches], key_type)
    block_of = np.repeat(np.arange(len(batches), dtype=np.int64), sizes)
    seq = block_of * (1 << 32) + np.concatenate([np.arange(s, dtype=np.int64) for s in sizes])
    is_delete = np.concatenate([np.broadcast_to(np.asarray(b.is_delete, dtype=bool), (len(b.keys),)) for b in batches])
    default_delete = np.concatenate(
        [commit_time_deletes(b.is_delete, b.default_delete, len(b.keys)) for b in batches]) if event_time else is_delete
    has_ord = np.repeat(np.array([b.ordering is not None for b in batches]), sizes)
    if event_time and ordering_type is not None and has_ord.any():
        ordering = pa.chunked_array(
            [(cast_ordering(b.ordering, ordering_type) if b.ordering is not None else pa.nulls(len(b.keys), ordering_type))
             for b in batches], ordering_type)
        rank = ordering_ranks(ordering)
    else:
        rank = np.full(total, -1, dtype=np.int64)

    slot = _copy_numbers(keys, min(base_rows, total))
    sort_table = {"k": keys, "s": pa.array(seq)}
    sort_keys = [("k", "ascending"), ("s", "ascending")]
    if slot is not None:  # one group per (key, stored copy): log versions belong to copy 0
        sort_table["c"] = pa.array(slot)
        sort_keys.insert(1, ("c", "ascending"))
    order = np.asarray(pc.sort_indices(pa.table(sort_table), sort_keys=sort_keys))
    sorted_keys = keys.take(pa.array(order)).combine_chunks()
    is_delete, default_delete, has_ord, rank = is_delete[order], default_delete[order], has_ord[order], rank[order]
    is_base = order < base_rows
    new_key = np.ones(total, dtype=bool)
    if total > 1:
        new_key[1:] = np.asarray(pc.not_equal(sorted_keys.slice(1), sorted_keys.slice(0, total - 1)))
        if slot is not None:
            sorted_slot = slot[order]
            new_key[1:] |= sorted_slot[1:] != sorted_slot[:-1]
    group_starts = np.flatnonzero(new_key)
    group_id = np.cumsum(new_key) - 1
    index = np.arange(total, dtype=np.int64)

    # the base row and every later version in processing order (decides whether the row lives)
    wins = (winners_in_sequence(new_key | default_delete, has_ord, rank, default_delete) if event_time
            else np.ones(total, dtype=bool))
    last_delete = group_last(wins & is_delete, group_starts)[group_id]
    alive = wins & ~is_delete & (index > last_delete)
    exists = np.logical_or.reduceat(alive, group_starts)
    # the log versions alone (Hudi's log record of the key), then merged with the base row
    first_log = ~is_base & ~new_key & np.concatenate([[False], is_base[:-1]])
    log_wins = (winners_in_sequence(new_key | default_delete | first_log, has_ord, rank, default_delete) if event_time
                else wins)
    base_at = np.where(is_base[group_starts], group_starts, -1)[group_id]  # the group's base row, or -1
    log_delete = group_last(log_wins & is_delete & ~is_base, group_starts)[group_id]
    segment_start = np.maximum(log_delete, base_at)  # log versions after it build the log record
    in_segment = ~is_base & (index > segment_start)
    live_log = log_wins & ~is_delete & in_segment
    record_start = group_first(live_log, group_starts)[group_id]  # where the log record comes alive
    log_beats_base = np.logical_or.reduceat(wins & ~is_base, group_starts)
    killed = np.logical_or.reduceat(wins & is_delete, group_starts)  # a delete won: the base row is gone
    base_fill = ((base_at >= 0) & ~killed[group_id] & ~is_delete[np.maximum(base_at, 0)])[group_starts]
    base_only = (base_at[group_starts] >= 0) & ~log_beats_base

    rows_of = order  # sorted position -> row of the batches
    arrays = [sorted_keys.take(pa.array(group_starts[exists]))]
    available = [dict(zip(b.data.column_names, b.data.columns)) if b.data is not None else {} for b in batches]
    base_pick = np.maximum(base_at[group_starts], 0)
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
        carried = present_rows & in_segment & (index >= record_start)
        chosen = np.maximum(group_last(live_log & present_rows, group_starts), group_first(carried, group_starts))
        chosen = partial_source(chosen, base_pick, base_fill & present_rows[base_pick])  # the base row fills
        chosen = np.where(base_only, base_pick, chosen)[exists]
        taken = column.take(pa.array(rows_of[np.maximum(chosen, 0)]))
        arrays.append(pc.if_else(pa.array(chosen >= 0), taken, pa.nulls(len(chosen), field.type)))
    return pa.Table.from_arrays(arrays, schema=out_schema)


def _copy_numbers(keys: pa.ChunkedArray, base_rows: int) -> np.ndarray | None:
    """Per version, the number of the stored copy its group is (0 for every log version), when
    the first ``base_rows`` keys hold a key twice; None when every stored key is unique."""
    if base_rows < 2:
        return None
    stored = keys.slice(0, base_rows)
    unique = pc.unique(stored)
    if len(unique) == base_rows:
        return None
    stored_ids = np.asarray(pc.index_in(stored, value_set=unique), dtype=np.int64)
    copies = np.bincount(stored_ids, minlength=len(unique))
    by_key = np.argsort(stored_ids, kind="stable")  # (copies of one key in file order)
    starts = np.concatenate([[0], np.cumsum(copies)[:-1]])
    slot = np.zeros(len(keys), dtype=np.int64)
    slot[by_key] = np.arange(base_rows, dtype=np.int64) - starts[stored_ids[by_key]]
    return slot


def columns_of(data: pa.Table | None) -> dict[str, pa.ChunkedArray]:
    """Name → column, built once (``Table.column(name)`` searches the schema on every call)."""
    return dict(zip(data.column_names, data.columns)) if data is not None else {}

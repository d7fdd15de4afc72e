"""The row reader (RFC-80 "RowReader"): family streams of one file group → full rows.

Every family stream is sorted by record key with one row per key, so the families are joined
by a streaming sort-merge outer join: each step takes the keys up to the smallest "last key"
among the streams' current batches. A row exists if any family has it; a family that lacks a
key contributes nulls. Key and partition columns live in every family's files and are taken
from whichever family has the row; the ``_hoodie_*`` meta columns come from the family whose
version is the newest: written by the commit that completed last (several writers commit in
completion-time order, which a later requested time does not give; a full compaction keeps that
commit time, so an incremental read of its window still finds the row). Archived commits are
ordered by their completion times too, from the archive.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from pyhudi.lazy import pc
from pyhudi.read.keys import key_text, single_array, sorted_keys, text_keys
from pyhudi.read.window import subset_positions
from pyhudi.schema import META_FIELDS

if TYPE_CHECKING:
    from pyhudi.fsview.view import Visibility

KEY = "_key"
COMMIT_TIME, SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME = META_FIELDS


class _TableCursor:
    """The current table of one family stream (``final``: the stream says none follows it)."""

    def __init__(self, stream: Iterator[pa.Table]) -> None:
        self._stream = stream
        self.buffer: pa.Table | None = None
        self.keys: pa.Array | None = None
        self.final = False
        self._advance()

    def _advance(self) -> None:
        for table in self._stream:
            if table.num_rows:
                self.buffer = table
                self.keys = single_array(table.column(KEY))
                self.final = getattr(self._stream, "done", False)
                return
        self.buffer = self.keys = None

    @property
    def last_key(self) -> str:
        return key_text(self.keys[-1])

    def take_through(self, bound: str | None) -> pa.Table | None:
        if self.buffer is None:
            return None
        n = self.buffer.num_rows if bound is None else bisect.bisect_right(self.keys, bound, key=key_text)
        if n == 0:
            return None
        buffer = self.buffer
        if n == buffer.num_rows:
            self._advance()
            return buffer
        self.buffer, self.keys = buffer.slice(n), self.keys.slice(n)
        return buffer.slice(0, n)


def join_streams(streams: Sequence[Iterator[pa.Table]], incremental: pa.Array | None = None,
                 coverage: dict[int, set[int]] | None = None,
                 visibility: Visibility | None = None) -> Iterator[pa.Table]:
    """Outer-join sorted family streams by ``_key``; meta columns combined (see module doc).
    A window ends at the smallest last key of the streams that have more tables to come
    (:class:`~pyhudi.read.family_reader.FamilyStream` tells); with none, it takes the rest.

    With ``incremental`` (instant times), only rows whose version in some family was written
    by one of those instants are kept. ``coverage`` (optional) learns, per stream of bare keys
    (a family read for row existence), the streams whose keys held all of its keys window by
    window (-1: a window where they did not). ``visibility`` (the snapshot's
    :class:`~pyhudi.fsview.view.Visibility`) gives the completion times that order the families'
    versions of a row (:func:`combine_meta`).
    """
    if len(streams) == 1:
        for table in streams[0]:
            if incremental is not None:
                table = table.filter(pc.is_in(table.column(COMMIT_TIME), value_set=incremental))
            if table.num_rows:
                yield table
        return
    cursors = [_TableCursor(s) for s in streams]
    order = _CompletionOrder(visibility) if visibility is not None else None
    while True:
        active = [c for c in cursors if c.buffer is not None]
        if not active:
            return
        bounding = [c for c in active if not c.final]
        bound = min(c.last_key for c in bounding) if bounding else None
        window = join_window([c.take_through(bound) for c in cursors], incremental, coverage, order)
        if window.num_rows:
            yield window


def _aligned(live: list[pa.Table]) -> bool:
    first = live[0].column(KEY)
    for other in live[1:]:
        if other.num_rows != len(first):
            return False
    # (``equals`` compares values whatever the chunking, without loading pyarrow.compute)
    return all(first.equals(other.column(KEY)) for other in live[1:])


def join_window(pieces: list[pa.Table | None], incremental: pa.Array | None = None,
                coverage: dict[int, set[int]] | None = None,
                order: _CompletionOrder | None = None) -> pa.Table:
    """Join one key range of the family streams (each sorted, one row per key); ``coverage``:
    see :func:`join_streams`; ``order``: :class:`_CompletionOrder`."""
    indices = [i for i, p in enumerate(pieces) if p is not None and p.num_rows]
    live = [pieces[i] for i in indices]
    if not live:
        return pa.table({KEY: pa.array([], pa.string())})
    if len({p.schema.field(KEY).type for p in live}) > 1:  # a hash-merged family has string keys
        live = [_with_string_keys(p) for p in live]
    bare = [i for i, p in zip(indices, live) if p.num_columns == 1] if coverage is not None else []
    if len(live) > 1:
        before = len(live)
        spine = indices[max(range(len(live)), key=lambda j: live[j].num_rows)]
        live = _without_covered_keys(live)
        for i in bare:
            coverage.setdefault(i, set()).add(spine if len(live) < before else -1)
    else:
        for i in bare:
            coverage.setdefault(i, set()).add(-1)
    if len(live) == 1 or _aligned(live):
        keys = live[0].column(KEY)
        parts = [(p, None) for p in live]
    else:
        keys, parts = _union(live)
    columns: dict[str, list] = {}
    for table, index in parts:
        for name, column in zip(table.column_names[1:], table.columns[1:]):
            columns.setdefault(name, []).append(column if index is None else column.take(index))
    out = {KEY: keys}
    meta = {name: columns.pop(name) for name in META_FIELDS if name in columns}
    keep = None
    if incremental is not None and COMMIT_TIME in meta:
        changed = [pc.is_in(ct, value_set=incremental) for ct in meta[COMMIT_TIME]]
        keep = changed[0]
        for c in changed[1:]:
            keep = pc.or_(keep, c)
    out.update(combine_meta(meta, order))
    for name, arrays in columns.items():
        # key and partition columns are in every family: the first family that has the row
        out[name] = arrays[0] if len(arrays) == 1 else pc.coalesce(*arrays)
    table = pa.table(out)
    return table.filter(keep) if keep is not None else table


def _without_covered_keys(live: list[pa.Table]) -> list[pa.Table]:
    """The pieces minus those that hold only keys (families read for row existence) when every
    one of their keys is in the largest piece: they add no row and no value."""
    bare = [p for p in live if p.num_columns == 1]
    if not bare:
        return live
    spine = max(live, key=lambda p: p.num_rows)
    if spine.num_columns == 1:
        return live
    others = pa.chunked_array([c for p in bare for c in p.column(KEY).chunks], spine.schema.field(KEY).type)
    if subset_positions(spine.column(KEY), others) is None:
        return live
    return [p for p in live if p.num_columns > 1]


def _union(live: list[pa.Table]) -> tuple:
    """The sorted distinct keys of the pieces and, per piece, the take-index onto them.

    Common case: every key is in the largest piece, whose keys then are the union (no sort).
    """
    sizes = [p.num_rows for p in live]
    spine = int(np.argmax(sizes))
    spine_keys = live[spine].column(KEY)
    others = [p for i, p in enumerate(live) if i != spine]
    found = subset_positions(spine_keys, pa.chunked_array([c for p in others for c in p.column(KEY).chunks],
                                                          spine_keys.type))
    if found is not None:
        parts, at = [], 0
        for i, p in enumerate(live):
            if i == spine:
                parts.append((p, None))
                continue
            index = np.full(sizes[spine], -1, dtype=np.int64)
            index[found[at: at + p.num_rows]] = np.arange(p.num_rows)
            at += p.num_rows
            parts.append((p, pa.array(index, mask=index < 0)))
        return spine_keys, parts
    all_keys = pa.chunked_array([c for p in live for c in p.column(KEY).chunks], spine_keys.type)
    keys = sorted_keys(pc.unique(all_keys))
    return keys, [(p, pc.index_in(keys, value_set=p.column(KEY))) for p in live]


class _CompletionOrder:
    """Completion times of commit times, looked up column-wise: those of the active timeline's
    instants (:attr:`Visibility.completions`), and — asked of the visibility once per distinct
    time, when a window holds versions no active instant wrote — those of archived commits (the
    archive's; a requested time stands in only where no completion time is known)."""

    def __init__(self, visibility: Visibility) -> None:
        self._visibility = visibility
        self._known = dict(visibility.completions)
        self._arrays()

    def _arrays(self) -> None:
        self.instants = pa.array(list(self._known), pa.string())
        self.completions = pa.array(list(self._known.values()), pa.string())

    def _lookup(self, times: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
        return pc.take(self.completions, pc.index_in(times, value_set=self.instants))

    def completed_at(self, times: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
        """The completion times of commit times ``times`` (null stays null)."""
        if pa.types.is_dictionary(times.type):
            times = times.cast(pa.string())
        done = self._lookup(times)
        if done.null_count > times.null_count:  # versions of commits off the active timeline
            unknown = pc.unique(pc.filter(times, pc.and_(pc.is_null(done), pc.is_valid(times))))
            for time in unknown.to_pylist():  # (one per distinct commit time, not per row)
                self._known[time] = self._visibility.completion_of(time) or time
            self._arrays()
            done = self._lookup(times)
        return done


def _completed_at(times: pa.Array | pa.ChunkedArray, order: _CompletionOrder | None):
    """The completion times of commit times ``times`` (without ``order``: the times themselves)."""
    return times if order is None else order.completed_at(times)


def combine_meta(meta: dict[str, list],
                 order: _CompletionOrder | None = None) -> dict[str, pa.ChunkedArray | pa.Array]:
    """Meta columns of the newest family version per row: the one whose commit completed last
    (``order``: :class:`_CompletionOrder`; without it, the highest commit time), then the first."""
    if not meta:
        return {}
    if len(next(iter(meta.values()))) == 1:
        return {name: arrays[0] for name, arrays in meta.items()}
    if COMMIT_TIME not in meta:
        return {name: pc.coalesce(*arrays) for name, arrays in meta.items()}
    times = meta[COMMIT_TIME]
    best = times[0]
    best_done = _completed_at(best, order)
    chosen = np.zeros(len(best), dtype=np.int64)
    for i, candidate in enumerate(times[1:], start=1):
        done = _completed_at(candidate, order)
        newer = pc.fill_null(pc.greater(done, best_done), False)
        newer = pc.or_(newer, pc.and_(pc.is_null(best), pc.is_valid(candidate)))
        chosen[np.asarray(newer, dtype=bool)] = i
        best = pc.if_else(newer, candidate, best)
        best_done = pc.if_else(newer, done, best_done)
    out = {}
    for name, arrays in meta.items():
        if name == COMMIT_TIME:
            out[name] = best
            continue
        value = arrays[0]
        for i in range(1, len(arrays)):
            value = pc.if_else(pa.array(chosen == i), arrays[i], value)
        # record key and partition path are the same in every family: fill gaps from any
        out[name] = pc.coalesce(value, *arrays) if name in (RECORD_KEY, PARTITION_PATH) else value
    return out


def _with_string_keys(table: pa.Table) -> pa.Table:
    column = table.column(KEY)
    if pa.types.is_string(column.type):
        return table
    return table.set_column(table.column_names.index(KEY), KEY, text_keys(column))

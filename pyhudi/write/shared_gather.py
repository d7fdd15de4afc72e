"""One gather of a write's rows into (file group, record key) order, shared by its tasks.

A bucketed write sends the rows of each file group to its own task, and every file a task
writes holds its rows in key order: each task gathers its rows out of the input. Gathered per
task, every column of the input is read once per file group — 4 buckets read a 200k-row column
(1.6 MB) four times, and once the 100 other columns have passed through the cache in between,
from memory. Gathered once for all file groups, a column is read once while it is still in the
cache: Scenario W (200k rows x 100 doubles, 4 buckets) gathers in ~25 ms instead of ~45 ms.

:class:`SharedGather` does that while keeping the tasks independent: the first task that needs
a block of columns (a few columns of one family) gathers it for every file group, and hands
each task a zero-copy slice of its file group's rows. Tasks running at once on the local
engine's threads claim the blocks (and the groups' key sorts) one at a time, so two tasks asking
for the same family at once gather half of it each, and wait only for the block the other is
still gathering: both cores gather. Each task also starts on another family (its file group's
index, rotated) and puts off a family whose blocks another task is gathering
(:meth:`SharedGather.busy`), so a thread rarely waits at all (Scenario W, 5 families, two
threads: 11–15 waits per insert before, 1–2 after). Input already in (file group, key) order is sliced, not
gathered (:func:`~pyhudi.write.handle.gather`). A block is dropped once every task it serves
has taken its slice, so the gathered copy lives no longer than the files written from it.

A write whose files span several row groups (Scenario W at 2M rows: 4 row groups per bucket
file) gathers no shared copy at all: each task gathers its own rows one row group at a time,
while its log block is written (:meth:`SharedGather.streamed`, :mod:`~pyhudi.write.streamed_rows`).
The whole gathered copy (1.6 GB there) is faulted in afresh by every write, in huge pages the
kernel may have to compact memory for; a row group per thread at a time (~120 MB with the
default ``hoodie.parquet.block.size``) is mostly memory the previous row group freed.

A write of only new file groups of a family table, each written as one full-row file, plans
the gather for the full row (one column set: every family's columns, cut into blocks together),
and each group asks for all of it at once (:func:`~pyhudi.write.full_row.full_row_payload`).
:class:`Deferred` holds what the tasks need but the planner need not wait for — the Parquet
options sampled from the input, computed by the first task while the others gather.
"""

from __future__ import annotations

import threading
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.schema import SOFT_DELETE_FIELD
from pyhudi.write.prepare import integer_key_bounds, latest_sorted
from pyhudi.write.streamed_rows import StreamedRows

BLOCK_COLUMNS = 8
"""Columns gathered together: enough to keep the per-call overhead small, few enough that two
threads share the columns of one family (Scenario W without families: 13 blocks)."""


class SharedGather:
    """The rows of ``groups`` (each: positions into ``source``, in arrival order) sorted by
    record key, the latest row per key kept (:func:`~pyhudi.write.prepare.latest_sorted` with
    ``ordering``), gathered block by block on first use and served as per-group slices.

    ``column_sets``: the columns each consumer (a family's payload) asks for, in the order it
    asks; ``record_key`` is its own block (every consumer wants it)."""

    def __init__(self, source: pa.Table, groups: Sequence[pa.Array], ordering: str | None,
                 integer_key: str | None, record_key: str, column_sets: Sequence[Sequence[str]],
                 row_group_rows: int | None = None) -> None:
        self.source = source
        self.row_group_rows = row_group_rows  # the files' row groups: a larger group's rows are streamed
        self.groups = list(groups)
        self.ordering = ordering
        self.integer_key = integer_key
        self.record_key = record_key
        self._lock = threading.Lock()
        self._order: pa.Array | None = None
        self._in_bounds = False  # every index of the order is a row of the source (checked once)
        self._offsets: list[int] = []
        self._block_of: dict[str, int] = {record_key: 0}
        blocks: list[list[str]] = [[record_key]]
        for columns in column_sets:
            new = [c for c in columns if c not in self._block_of]
            for start in range(0, len(new), BLOCK_COLUMNS):
                for c in new[start:start + BLOCK_COLUMNS]:
                    self._block_of[c] = len(blocks)
                blocks.append(new[start:start + BLOCK_COLUMNS])
        self._blocks = blocks
        self._sets = [frozenset(c for c in columns if c != record_key) for columns in column_sets]
        # per block (and per group's key order): None (not claimed), an Event (being computed by
        # a task), or the result / the error it raised
        self._state: list[object] = [None] * len(blocks)
        self._sorted: list[object] = [None] * len(self.groups)
        uses = [0] * len(blocks)
        for columns in column_sets:
            for b in {self._block_of[c] for c in [record_key, *columns]}:
                uses[b] += len(self.groups)
        self._uses = uses

    # ------------------------------------------------------------------ shared work
    def _claim_next(self, state: list, items: Sequence[int]) -> tuple[int, threading.Event] | None:
        """Mark the first unclaimed item of ``items`` as this thread's work (None: all claimed).

        One at a time: a thread that claimed every unclaimed block at once would leave a thread
        arriving a moment later nothing to do but wait (two tasks starting on the same family —
        measured on Scenario W, 200k rows, two threads: ~20 ms of one thread's waiting per insert)."""
        with self._lock:
            for i in items:
                if state[i] is None:
                    event = threading.Event()
                    state[i] = event
                    return i, event
        return None

    def _work_through(self, state: list, items: Sequence[int], work: Callable[[int], object]) -> None:
        """Compute unclaimed ``items`` of ``state`` one by one until every one is claimed."""
        while (claimed := self._claim_next(state, items)) is not None:
            item, event = claimed
            self._compute(state, item, event, lambda item=item: work(item))

    def _compute(self, state: list, item: int, event: threading.Event, work: Callable[[], object]) -> None:
        try:
            result = work()
        except BaseException as exc:  # handed to every task waiting for the item
            result = exc
        with self._lock:
            state[item] = result
        event.set()

    @staticmethod
    def _result(state: list, item: int) -> object:
        found = state[item]
        if isinstance(found, threading.Event):
            found.wait()
            found = state[item]
        if isinstance(found, BaseException):
            raise found
        return found

    # ------------------------------------------------------------------ order
    def _sorted_group(self, indices: pa.Array) -> pa.Array:
        order = None
        if self.ordering is None and self.integer_key is not None:  # sorted by key codes alone:
            keys = self.source.select([self.integer_key]).take(indices)  # (the strings are not needed)
            if integer_key_bounds(keys.column(0)) is not None:
                order = latest_sorted(keys, None, self.integer_key)
        if order is None:
            columns = [self.record_key] if self.ordering is None else [self.record_key, self.ordering]
            if self.integer_key is not None and self.integer_key not in columns:
                columns.append(self.integer_key)
            if self.ordering is not None and SOFT_DELETE_FIELD in self.source.column_names:
                columns.append(SOFT_DELETE_FIELD)  # (a delete without an ordering value wins: rule 3)
            order = latest_sorted(self.source.select(columns).take(indices), self.ordering, self.integer_key)
        if len(order) == len(indices) and (len(order) < 2 or bool(np.all(order[1:] > order[:-1]))):
            return indices  # already in key order (order is 0..n-1)
        return indices.take(pa.array(order))

    def _ensure_order(self) -> pa.Array:
        """Every group's rows in key order, one after the other; the groups are sorted by the
        tasks that ask first, each group by one of them (~1 ms per 50k rows)."""
        if self._order is not None:
            return self._order
        state = self._sorted  # (a local reference: the first task done drops the shared one)
        self._work_through(state, range(len(self.groups)), lambda g: self._sorted_group(self.groups[g]))
        parts = [self._result(state, g) for g in range(len(self.groups))]
        with self._lock:
            if self._order is None:
                offsets = [0]
                for part in parts:
                    offsets.append(offsets[-1] + len(part))
                self._offsets = offsets
                order = pa.concat_arrays(parts) if parts else pa.array([], pa.int64())
                self._in_bounds = _within(order, self.source.num_rows)
                self._order = order
                self._sorted = []
            return self._order

    def group_length(self, group: int) -> int:
        self._ensure_order()
        return self._offsets[group + 1] - self._offsets[group]

    # ------------------------------------------------------------------ streamed
    def streams(self) -> bool:
        """Whether the files are written row group by row group (:mod:`~pyhudi.write.streamed_rows`):
        when some group's file spans several row groups. Then every group gathers its own rows,
        one row group at a time, and the shared blocks are never gathered: the gathered copy of
        a large write is a row group per thread instead of the whole input."""
        if self.row_group_rows is None:
            return False
        self._ensure_order()
        longest = max((b - a for a, b in zip(self._offsets, self._offsets[1:])), default=0)
        return longest > self.row_group_rows

    def streamed(self, group: int, columns: Sequence[str], plain_fields: bool = False) -> StreamedRows:
        """Group ``group``'s rows of ``columns`` (key order, latest per key): the record key and
        integer key held (small; statuses, positions and meta columns need them whole), the
        others gathered by the writer one row group at a time. ``plain_fields``: the fields
        nullable and without metadata (those of a table built from the columns alone)."""
        order = self._ensure_order()
        start, end = self._offsets[group], self._offsets[group + 1]
        indices = order.slice(start, end - start)
        held_names = [c for c in dict.fromkeys([self.record_key, self.integer_key]) if c is not None and c in columns]
        held = _gather(self.source.select(held_names), indices, self._in_bounds)
        fetched = [c for c in columns if c not in held_names]
        source = self.source.select(fetched)
        fields = [self.source.schema.field(c) for c in columns]
        schema = pa.schema([pa.field(f.name, f.type) for f in fields] if plain_fields else fields)

        def fetch(first: int, length: int) -> pa.Table:
            return _gather(source, indices.slice(first, length), self._in_bounds)

        return StreamedRows(schema, end - start, {c: held.column(c) for c in held_names}, fetch)

    # ------------------------------------------------------------------ blocks
    def serves(self, columns: Sequence[str]) -> bool:
        """Whether ``columns`` are one of the column sets the gather was planned for (a task
        asking for another set would leave its blocks' use counts, hence their memory, behind)."""
        return frozenset(c for c in columns if c != self.record_key) in self._sets

    def busy(self, columns: Sequence[str]) -> bool:
        """Whether another thread is gathering a block of ``columns`` now (asking for them
        would wait for it)."""
        with self._lock:
            return any(isinstance(self._state[self._block_of[c]], threading.Event) for c in columns)

    def _gather_block(self, block: int) -> pa.Table:
        order = self._ensure_order()
        return _gather(self.source.select(self._blocks[block]), order, self._in_bounds)

    def _take(self, block: int, group: int, counted: bool = True) -> pa.Table:
        gathered = self._result(self._state, block)
        assert isinstance(gathered, pa.Table)
        start, end = self._offsets[group], self._offsets[group + 1]
        if counted:
            with self._lock:
                self._uses[block] -= 1
                if self._uses[block] <= 0:  # every task served: the slices keep what they need alive
                    self._state[block] = _DONE
        return gathered.slice(start, end - start)

    def rows(self, group: int, columns: Sequence[str]) -> pa.Table:
        """Group ``group``'s rows (key order, latest per key) of ``columns`` (a zero-copy slice
        of the shared gather); gathers the blocks no other task has claimed, then waits for the
        rest. Columns other than a planned set (:meth:`serves`; a family's of a gather planned
        for full rows, asked by a pickled payload) are served without counting their blocks'
        uses: those blocks live until the gather is dropped, never dropped while still wanted."""
        self._ensure_order()
        wanted = list(dict.fromkeys(self._block_of[c] for c in columns))
        self._work_through(self._state, wanted, self._gather_block)
        counted = self.serves(columns)
        pieces = {b: self._take(b, group, counted) for b in wanted}
        return pa.table({c: pieces[self._block_of[c]].column(c) for c in columns},
                        schema=pa.schema([self.source.schema.field(c) for c in columns]))


class Deferred:
    """A value every task of a write needs, but only once it writes a file — the Parquet
    options sampled from the input (:func:`~pyhudi.write.plan.data_file_options`, ~2 ms at
    200k rows): computed once, by the first task thread that calls :meth:`start` as it begins,
    while the other threads gather rows, instead of by the planner while both cores wait
    (the serial part of a write is its wall time; a task's is half of it on two cores).

    ``Deferred(compute)`` is a root; ``root.then(fn)`` derives a value from it (``fn`` runs in
    the thread that asks, cheap). :meth:`start` never waits: it computes a root no thread has
    claimed, and for a derived value starts its root. :meth:`get` returns the value (computing
    it, or waiting for the thread that is), re-raising what the computation raised."""

    def __init__(self, compute: Callable[[], object], parent: "Deferred | None" = None) -> None:
        self._compute: Callable[[], object] | None = compute
        self._parent = parent
        self._lock = threading.Lock()
        self._state: object = None  # None (unclaimed), an Event (being computed), (ok, value)

    def then(self, fn: Callable[[object], object]) -> "Deferred":
        return Deferred(lambda: fn(self.get()), parent=self)

    def start(self) -> None:
        """Compute the root value now unless a thread has claimed it (never waits)."""
        if self._parent is not None:
            self._parent.start()
            return
        with self._lock:
            if self._state is not None:
                return
            event = threading.Event()
            self._state = event
        self._run(event)

    def _run(self, event: threading.Event) -> None:
        compute, self._compute = self._compute, None  # (drops the closure's rows once computed)
        try:
            state: tuple[bool, object] = (True, compute())  # type: ignore[misc]
        except BaseException as exc:  # handed to every thread asking for the value
            state = (False, exc)
        with self._lock:
            self._state = state
        event.set()

    def get(self) -> object:
        with self._lock:
            state = self._state
            if state is None:
                state = self._state = threading.Event()
                claimed = True
            else:
                claimed = False
        if claimed:
            assert isinstance(state, threading.Event)
            self._run(state)
            state = self._state
        elif isinstance(state, threading.Event):
            state.wait()
            state = self._state
        ok, value = state  # type: ignore[misc]
        if not ok:
            raise value  # type: ignore[misc]
        return value


def resolved(value: object) -> object:
    """``value``, or the value of a :class:`Deferred`."""
    return value.get() if isinstance(value, Deferred) else value


def _gather(source: pa.Table, indices: pa.Array, in_bounds: bool) -> pa.Table:
    from pyhudi.write import handle  # (handle builds payloads on this module)

    return handle.gather(source, indices, in_bounds)


def _within(order: pa.Array, rows: int) -> bool:
    """Whether every index of ``order`` is a row of a ``rows``-row table: checked once here, so
    the gather of each block need not check every index again (one pass of min/max, ~0.1 ms per
    200k rows, against ~0.5 ms per block of 8 columns)."""
    if not len(order):
        return True
    if order.null_count:
        return False
    bounds = pc.min_max(order)
    return bounds["min"].as_py() >= 0 and bounds["max"].as_py() < rows


class _Done:
    """A block every consumer has taken (asked again: a programming error)."""


_DONE = _Done()

"""Model-based test of the whole table: random writes through the public API, every read checked
against a plain-Python reference model (DESIGN §4 and §5).

The machine (:class:`TableMachine`) creates one small table — one test per layout: merge-on-read
bucketed (1-4 buckets) with or without column families, or without a bucket index (simple index)
as copy-on-write or merge-on-read; partitioned or not (hive-style, partition columns dropped or
kept), integer or string keys; ordered by an integer, a UTC timestamp, a decimal or a date, or
not; log blocks as Parquet or (as Apache Hudi writes them) Avro; columns of every type a user may
store (integers, doubles, strings, booleans, binary, decimals, dates, UTC timestamps, lists,
structs, maps, a list of structs: with nulls, empty lists and maps, null children) — then runs a
random sequence of ``upsert`` / ``insert`` / ``bulk_insert`` / ``delete`` /
``insert_overwrite(_table)`` (inputs as Arrow tables, one-row batch streams or pandas), clustering
(tables without buckets), ALTERs
that add or drop a column family, and writes whose n-th data file fails (rolled back) or crashes
the writer (left inflight for the next writer to roll back). Reads: full, column-pruned, filtered
(ANDed, SQL null semantics, also on ``_hoodie_commit_time``; values of the column's type or of
another comparable one, such as ``1.5`` for an integer or a datetime for a date; lists, structs
and maps by ``is null`` / ``is not null`` only), streamed in tiny batches, split into key-range
tasks, both merge strategies, time travel (to a random past instant and just before it, and at
the end of every sequence to every instant), incremental windows (random ones, and at the end
each instant's own), with meta columns, through a reopened handle; read-optimized on
copy-on-write. Cleaning (the ``clean`` rule with a random policy and retention, and automatic
cleaning after writes) never changes what reads of the latest snapshot or of a retained instant
return; a snapshot no clean retained reads the model's rows or is refused with
``CleanedSnapshotError`` — nothing else.

The table shapes, the reference model and the failure injection live in ``tests/table_model.py``.

Failures the machine found are kept as minimal example tests at the end of the file.
``HYPOTHESIS_PROFILE=long`` runs many more and longer sequences (the default keeps the file near
a minute on two cores; the long profile takes about 7 minutes).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import shutil
import tempfile
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from table_model import (
    ADDED_FAMILY,
    INT_KEYS,
    NESTED,
    NON_NULL,
    OTHER_TYPED,
    STR_KEYS,
    TYPES,
    VALUES,
    Family,
    InjectedFailure,
    Model,
    avro_log_blocks,
    create,
    failing_file_write,
    matches,
    model_families,
    partition_of,
    project,
    rows_of,
    shapes,
)

import pyhudi
from pyhudi.errors import CleanedSnapshotError
from read_helpers import just_before


# ------------------------------------------------------------------------------ the machine
def spell_time(instant: str) -> str:
    """``20261121120000123`` as ``2026-11-21 12:00:00.123`` (a form ``as_of`` accepts)."""
    i = instant
    return f"{i[:4]}-{i[4:6]}-{i[6:8]} {i[8:10]}:{i[10:12]}:{i[12:14]}.{i[14:]}"


class TableMachine(RuleBasedStateMachine):
    """Random writes and reads on one table, checked against :class:`Model`."""

    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.mkdtemp(prefix="pyhudi-model-")
        self.table: pyhudi.Table | None = None
        self.model: Model | None = None
        self.history: list[tuple[str, str, Model]] = []  # (instant, completion time, model after it)
        self.retained_from = ""  # requested time of the earliest commit the last clean retained
        self.retained_index = 0  # (file-versions policy: only the snapshot current at the clean is kept)

    def teardown(self) -> None:
        """Every sequence ends with :meth:`every_instant` (when it wrote anything)."""
        try:
            if self.table is not None and self.history:
                self.every_instant()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    LAYOUT = "families"  # each layout is its own test (below), so each gets its share of examples

    @initialize(data=st.data())
    def create_table(self, data: st.DataObject) -> None:
        shape = self.shape = data.draw(shapes(self.LAYOUT), label="shape")
        self.table = create(os.path.join(self.directory, "t"), shape)
        self.model = Model(shape, model_families(shape))
        self.keys = INT_KEYS if shape.int_keys else STR_KEYS
        self.dropped: set[str] = set()  # names of dropped families (re-adding one is refused)
        self.pending_compaction: str | None = None  # scheduled, to run at a later step

    @property
    def columns(self) -> list[str]:
        return self.model.columns()

    # ------------------------------------------------------------------ helpers
    def _completion(self, instant: str) -> str:
        return next(i.completion_time for i in self.table.timeline if i.requested_time == instant)

    def _base_keys(self) -> set[tuple[str, str]]:
        """(family, record key) of every record the last write put in a base file (the others
        went to log files: merge-on-read merges those with each other before the base record)."""
        out = set()
        for status in self.table.last_write.statuses:
            if status.writes_base_file:
                keys = pq.read_table(self.table.storage.full_path(status.relpath), columns=["_hoodie_record_key"])
                # a full-row base file (no family) holds the records of every family
                families = [status.family] if status.family or self.shape.layout != "families" \
                    else [f.name for f in self.model.families]
                out.update((family, k) for family in families for k in keys.column(0).to_pylist())
        return out

    def _just_before(self, completion: str) -> str:
        return just_before(self.table, completion)

    def _record(self, instant: str) -> None:
        completion = self._completion(instant)
        assert not self.history or completion > self.history[-1][1]
        self.history.append((instant, completion, copy.deepcopy(self.model)))
        self._note_cleans()

    def _note_cleans(self) -> None:
        """What the latest completed clean retained (writes clean automatically: the default
        keeps the last 10 commits; the ``clean`` rule retains fewer)."""
        timeline = self.table.active_timeline()
        cleans = [i for i in timeline.completed() if i.action.value == "clean"]
        if cleans:
            metadata = timeline.read_metadata(max(cleans, key=lambda i: i.requested_time))
            if metadata.earliest_commit_to_retain:
                self.retained_from = max(self.retained_from, metadata.earliest_commit_to_retain)
            else:  # file versions: the latest snapshot only (by completion: a compaction completes late)
                self.retained_index = max(self.retained_index, len(self.history) - 1)

    def _retained(self, index: int) -> bool:
        return self.history[index][0] >= self.retained_from and index >= self.retained_index

    def _read_or_cleaned(self, retained: bool, read, *args, **kwargs) -> pa.Table | None:
        """``read(...)``; a snapshot no clean retained may instead be refused, with the clear error
        (never other rows than the model's)."""
        try:
            return read(*args, **kwargs)
        except CleanedSnapshotError as exc:
            assert not retained, exc
            assert "no longer retained" in str(exc)
            event("time travel to a cleaned snapshot refused")
            return None

    def _frame(self, present: list[str], rows: list[dict]) -> pa.Table:
        schema = self.table.schema
        names = ["id", *(["part"] if self.shape.partitioned else []), *present]
        data = {n: [r[n] for r in rows] for n in names}
        return pa.table(data, schema=pa.schema([schema.field(n) for n in names]))

    def _input(self, data: st.DataObject, frame: pa.Table) -> Any:
        """``frame`` as a user may pass it: an Arrow table (columns in any order), a stream of
        one-row batches (chunked columns), or a pandas DataFrame (nullable ints become floats)."""
        form = data.draw(st.sampled_from(["table", "reordered", "batches", "pandas"]), label="input form")
        if form == "reordered":
            return frame.select(data.draw(st.permutations(frame.column_names), label="column order"))
        if form == "batches":
            return pa.RecordBatchReader.from_batches(frame.schema, frame.to_batches(max_chunksize=1))
        if form == "pandas":
            return frame.to_pandas()
        return frame

    # ------------------------------------------------------------------ writes
    def _batch(self, data: st.DataObject, keys: list, every_column: bool = False) -> tuple[list[str], list[dict]]:
        """Random columns (at least one besides key and partition; all with ``every_column``) and
        1-4 rows of ``keys``."""
        names = self.columns[2 if self.shape.partitioned else 1:]
        present = list(names) if every_column else data.draw(
            st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True), label="columns")
        ids = data.draw(st.lists(st.sampled_from(keys), min_size=1, max_size=4), label="ids")
        rows = []
        for key in ids:
            row = {"id": key, "part": partition_of(self.shape, key)}
            row.update({c: data.draw(VALUES[c], label=c) for c in present})
            rows.append(row)
        return present, rows

    def _attempt(self, data: st.DataObject, write, *args, **kwargs) -> str | None:
        """``write(*args, **kwargs)``, or — drawn — with its n-th data file failing (see
        :func:`failing_file_write`): then None, and the table must stay as it was for every read."""
        fail_at = data.draw(st.integers(0, 15), label="fail at data file")  # 1-3: fails (3 writes in 16)
        fail_at = fail_at if fail_at <= 3 else 0
        crash = bool(fail_at) and data.draw(st.booleans(), label="crash")
        try:
            with avro_log_blocks(self.shape.avro_logs), (failing_file_write(fail_at, crash) if fail_at
                                                         else contextlib.nullcontext()):
                return write(*args, **kwargs)
        except InjectedFailure:
            pending = [i for i in self.table.timeline if i.state.value != "COMPLETED"
                       and i.action.value not in ("rollback", "compaction")]  # (a compaction scheduled earlier)
            assert len(pending) == (1 if crash else 0), pending
            event("write crashed" if crash else "write failed and was rolled back")
            return None

    @rule(data=st.data(), operation=st.sampled_from(["upsert", "upsert", "insert", "bulk_insert"]))
    def write(self, data: st.DataObject, operation: str) -> None:
        keys = self.keys
        if self.shape.layout == "mor" and operation == "insert":
            # an insert into a merge-on-read small file merges with a stored copy of its key, one
            # into a new file group keeps both: which happens depends on file sizes — new keys only
            keys = [k for k in self.keys if k not in self.model.rows]
            if not keys:
                operation, keys = "upsert", self.keys
        full_row = operation == "bulk_insert" and data.draw(st.booleans(), label="full-row base files")
        present, rows = self._batch(data, keys, every_column=full_row)  # (a partial input keeps family files)
        method = getattr(self.table, operation)
        if operation == "bulk_insert" and not full_row:  # (full-row base files are the default)
            method = functools.partial(method, options={"hoodie.pyhudi.insert.full.row": "false"})
        instant = self._attempt(data, method, self._input(data, self._frame(present, rows)))
        if instant is None:
            return
        if full_row and self.shape.layout == "families" and any(
                b.name.family is None and b.instant == instant for g in self.table.file_groups() for b in g.base_files):
            event("full-row base file written by a bulk insert")
        self.model.write(operation, set(present), rows, instant, self._base_keys())
        self._record(instant)

    @rule(data=st.data())
    def upsert(self, data: st.DataObject) -> None:
        """One more upsert rule, so that sequences are about half writes (reads are many rules)."""
        self.write(data, "upsert")

    @rule(data=st.data(), whole_table=st.booleans())
    def overwrite(self, data: st.DataObject, whole_table: bool) -> None:
        """``insert_overwrite`` (the partitions of the rows, plus ``partitions``) or
        ``insert_overwrite_table``: those rows go, the batch's rows are the new ones."""
        present, rows = self._batch(data, self.keys)
        if data.draw(st.booleans(), label="no rows") and (whole_table or self.shape.partitioned):
            rows = []
        frame = self._input(data, self._frame(present, rows)) if rows else None
        if whole_table:
            instant = self._attempt(data, self.table.insert_overwrite_table, frame)
            replaced = None
        else:
            extra = []
            if self.shape.partitioned:
                extra = data.draw(st.lists(st.sampled_from(["p0", "p1"]), unique=True), label="partitions")
            if not rows and not extra:
                extra = ["p0"]
            paths = [self.shape.partition_path(p) for p in extra]
            instant = self._attempt(data, self.table.insert_overwrite, frame, partitions=paths or None)
            replaced = {r["part"] for r in rows} | set(extra)
        if instant is None:
            return
        for key in list(self.model.rows):
            if replaced is None or partition_of(self.shape, key) in replaced:
                del self.model.rows[key]
        self.model.write("bulk_insert", set(present), rows, instant, self._base_keys())
        self._record(instant)

    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        ids = data.draw(st.lists(st.sampled_from(self.keys), min_size=1, max_size=3), label="ids")
        rows = [{"id": k, "part": partition_of(self.shape, k)} for k in ids]
        instant = self._attempt(data, self.table.delete, self._input(data, self._frame([], rows)))
        if instant is None:
            return
        self.model.delete(ids)
        self._record(instant)

    def _alter_choices(self) -> list[tuple[str, str]]:
        if self.shape.layout != "families" or self.pending_compaction:
            return []
        names = [f.name for f in self.model.families]
        choices = [("add", ADDED_FAMILY[0])] if ADDED_FAMILY[0] not in names and ADDED_FAMILY[0] not in self.dropped else []
        return choices + ([("drop", n) for n in names] if len(names) > 1 else [])

    @precondition(lambda self: self._alter_choices())
    @rule(data=st.data())
    def alter_families(self, data: st.DataObject) -> None:
        """ALTER TABLE: add a family (new columns, null in earlier rows) or drop one (its columns
        leave the schema, its files are no longer read)."""
        name, spec, types = ADDED_FAMILY
        action, target = data.draw(st.sampled_from(self._alter_choices()), label="alter")
        if action == "add":
            instant = self.table.alter(set_properties={f"hoodie.colFamily.{name}": spec}, new_columns=types)
            columns, _, ordering = spec.partition(";")
            self.model.add_family(Family(name, tuple(columns.split(",")), ordering or None))
        else:
            instant = self.table.alter(unset_properties=[f"hoodie.colFamily.{target}"])
            self.model.drop_family(target)
            self.dropped.add(target)
        assert self.table.schema.names == self.columns
        self._record(instant)

    def _compaction_request(self, data: st.DataObject) -> tuple[list[str] | None, bool]:
        full = data.draw(st.booleans(), label="full compaction")
        families = None
        if not full and self.shape.layout == "families":
            names = [f.name for f in self.model.families]
            families = data.draw(st.none() | st.lists(st.sampled_from(names), min_size=1, unique=True),
                                 label="families")
        return families, full

    @precondition(lambda self: self.shape.layout != "cow" and not self.pending_compaction)
    @rule(data=st.data())
    def schedule_compaction(self, data: st.DataObject) -> None:
        """A compaction planned now and run at a later step: writes in between land after its
        base (completion-time slicing), and reads meanwhile see the slices as they were."""
        families, full = self._compaction_request(data)
        instant = self.table.schedule_compaction(families=families, full=full)
        if instant is None:
            return
        event("compaction scheduled, run later")
        self.model.schedule_compaction(set(families) if families else None, full)
        self.pending_compaction = instant

    @precondition(lambda self: self.pending_compaction)
    @rule()
    def run_pending_compaction(self) -> None:
        instant, self.pending_compaction = self.pending_compaction, None
        assert self.table.run_compaction(instant) == instant
        self.model.run_compaction()
        self._record(instant)

    @precondition(lambda self: self.shape.layout != "cow" and not self.pending_compaction)
    @rule(data=st.data())
    def compact(self, data: st.DataObject) -> None:
        """Compaction at a random point: of some families, of all, or full (every family into one
        full-row base file). Reads, time travel and incremental windows see the same rows."""
        families, full = self._compaction_request(data)
        instant = self.table.compact(families=families, full=full)
        if instant is None:
            return
        event("full compaction" if full else "family compaction")
        self.model.compact(set(families) if families else None, full)
        self._record(instant)

    @precondition(lambda self: not self.pending_compaction and (self.shape.layout == "cow" or (
        self.shape.layout == "mor" and all(len(c) <= 1 for c in self.model.rows.values()))))
    @rule(data=st.data())
    def cluster(self, data: st.DataObject) -> None:
        """Clustering (tables without buckets): the small file groups without log files are
        rewritten, sorted, into new ones — every row and meta value as it was, so the model is
        unchanged; time travel before it and incremental windows over it see no change either.
        (Merge-on-read only while no key is stored twice: two copies clustered into one file group
        then take a later update on the first copy only, as Hudi's file group reader merges.)"""
        orderable = [c for c in self.columns if c not in NESTED and c != "part"]
        sort = data.draw(st.sampled_from([None, *orderable]), label="sort column")
        instant = self.table.cluster(sort_columns=sort)
        if instant is None:
            return
        event("clustering")
        self._record(instant)

    @rule(data=st.data())
    def archive(self, data: st.DataObject) -> None:
        """Timeline archival with small bounds: pending instants stay, the active timeline keeps at
        least keep.min commits, and every read (time travel, incremental: the invariant and the
        teardown's :meth:`every_instant`) still sees the same rows."""
        low = data.draw(st.integers(1, 2), label="keep.min")
        high = low + data.draw(st.integers(1, 2), label="keep.max - keep.min")
        pending = {i.requested_time for i in self.table.timeline if i.is_pending}
        archived = self.table.archive(options={"hoodie.keep.min.commits": low, "hoodie.keep.max.commits": high})
        active = self.table.timeline
        commits = [i for i in active if i.is_completed and str(i.action) in ("commit", "deltacommit", "replacecommit")]
        assert {i.requested_time for i in active if i.is_pending} == pending
        assert not pending & set(archived)
        if archived:
            event("archive")
            assert len(commits) >= low
            history = {i.requested_time: i for i in self.table.archived_timeline()}
            assert set(archived) <= set(history)
            recorded = {instant: completion for instant, completion, _ in self.history}
            assert all(history[t].completion_time == recorded[t] for t in archived if t in recorded)

    @rule()
    def reopen(self) -> None:
        """A fresh handle (``pyhudi.open_table``) must see the same table: nothing lives only in
        the handle that wrote."""
        self.table = pyhudi.open_table(self.table.path)

    # ------------------------------------------------------------------ reads
    def _knobs(self, data: st.DataObject) -> dict:
        """Read options that must not change the rows: merge strategy, key-range split tasks, batch size."""
        return data.draw(st.fixed_dictionaries({}, optional={
            "strategy": st.sampled_from(["auto", "hash"]),
            "max_rows_per_task": st.integers(1, 3),
            "batch_size": st.integers(1, 3),
        }), label="read options")

    @invariant()
    def full_read_matches(self) -> None:
        if self.table is None:
            return
        got = self.table.read()
        assert got.column_names == self.columns
        assert [f.type for f in got.schema] == [self._type(c) for c in self.columns]
        expected = project(self.model.expected(), self.columns)
        assert rows_of(got) == expected

    @rule(data=st.data())
    def read_with_meta(self, data: st.DataObject) -> None:
        columns = data.draw(st.lists(st.sampled_from(self.columns), min_size=1, unique=True), label="columns")
        got = self.table.read(columns=columns, with_meta=True)
        assert got.column_names[5:] == columns
        assert rows_of(got.select(["_hoodie_commit_time", *columns])) == project(
            self.model.expected(), ["_hoodie_commit_time", *columns])

    def _type(self, column: str) -> pa.DataType:
        if column == "id":
            return pa.int64() if self.shape.int_keys else pa.string()
        return pa.string() if column == "part" else TYPES[column]

    def _filter(self, data: st.DataObject, meta: bool = False, columns: list[str] | None = None) -> tuple:
        """One random filter on a column of ``columns`` (default: the table's), or on
        ``_hoodie_commit_time`` with ``meta``."""
        names = [*(columns or self.columns), *(["_hoodie_commit_time"] if meta and self.history else [])]
        column = data.draw(st.sampled_from(names), label="filter column")
        ops = ["=", "!=", "<", ">=", "in", "not in"] if column not in NESTED else []  # lists, structs, maps: no order
        op = data.draw(st.sampled_from([*ops, "is null", "is not null"]), label="op")
        if column == "_hoodie_commit_time":
            value_strategy = st.sampled_from([instant for instant, _, _ in self.history])
        elif column in ("id", "part"):
            value_strategy = st.sampled_from(self.keys if column == "id" else ["p0", "p1"])
        else:
            value_strategy = NON_NULL[column] | OTHER_TYPED.get(column, st.nothing())
        if op in ("in", "not in"):
            return column, op, tuple(data.draw(st.lists(value_strategy, min_size=1, max_size=3), label="values"))
        if op in ("is null", "is not null"):
            return column, op
        return column, op, data.draw(value_strategy, label="value")

    @staticmethod
    def _matching(rows: list[dict], filters: list[tuple]) -> list[dict]:
        return [r for r in rows if all(matches(r[f[0]], f[1], f[2] if len(f) == 3 else None) for f in filters)]

    @rule(data=st.data())
    def read_pruned_and_filtered(self, data: st.DataObject) -> None:
        columns = data.draw(st.lists(st.sampled_from(self.columns), min_size=1, unique=True), label="columns")
        filters = [self._filter(data) for _ in range(data.draw(st.integers(0, 2), label="filters"))]
        got = self.table.read(columns=columns, filters=filters, **self._knobs(data))
        assert got.column_names == columns
        assert rows_of(got) == project(self._matching(self.model.expected(), filters), columns)

    @precondition(lambda self: self.history)
    @rule(data=st.data())
    def read_filtered_on_commit_time(self, data: st.DataObject) -> None:
        filters = [self._filter(data, meta=True)]
        got = self.table.read(columns=["id"], filters=filters, with_meta=True)
        expected = self._matching(self.model.expected(), filters)
        assert rows_of(got.select(["_hoodie_commit_time", "id"])) == project(expected, ["_hoodie_commit_time", "id"])

    @rule(batch_size=st.integers(1, 3))
    def scan_in_small_batches(self, batch_size: int) -> None:
        reader = self.table.scan(batch_size=batch_size)
        batches = list(reader)
        assert all(b.num_rows <= batch_size for b in batches)
        got = pa.Table.from_batches(batches, schema=reader.schema)
        assert rows_of(got) == project(self.model.expected(), self.columns)

    @precondition(lambda self: self.history)
    @rule(data=st.data())
    def time_travel(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, len(self.history) - 1), label="instant")
        _, completion, model = self.history[index]
        columns = data.draw(st.none() | st.lists(st.sampled_from(model.columns()), min_size=1, unique=True),
                            label="columns")
        names = columns or model.columns()
        filters = [self._filter(data, columns=model.columns())
                   for _ in range(data.draw(st.integers(0, 1), label="filters"))]
        spelled = data.draw(st.sampled_from([completion, int(completion), spell_time(completion)]), label="as_of")
        got = self._read_or_cleaned(self._retained(index), self.table.read, columns=columns, as_of=spelled,
                                    filters=filters, **self._knobs(data))
        if got is not None:
            assert rows_of(got) == project(self._matching(model.expected(), filters), names)
        before = self.history[index - 1][2] if index else Model(self.shape, model_families(self.shape))
        if columns and not set(columns) <= set(before.columns()):
            return  # the columns did not exist yet (an ALTER added them)
        just_before = self._just_before(completion)
        got = self._read_or_cleaned(index > 0 and self._retained(index - 1), self.table.read, columns=columns,
                                    as_of=just_before)
        if got is None:
            return
        assert got.column_names == (columns or before.columns())
        assert rows_of(got) == project(before.expected(), columns or before.columns())

    @precondition(lambda self: self.history)
    @rule(data=st.data())
    def incremental(self, data: st.DataObject) -> None:
        n = len(self.history)
        first = data.draw(st.integers(-1, n - 1), label="start")
        last = data.draw(st.integers(max(first, 0), n - 1) | st.none(), label="end")
        start = self.history[first][1] if first >= 0 else self._just_before(self.history[0][1])
        end = self.history[last][1] if last is not None else None
        at_end = self.history[last if last is not None else n - 1][2]
        window = {instant for instant, _, _ in self.history[first + 1:(last if last is not None else n - 1) + 1]}
        columns = data.draw(st.none() | st.lists(st.sampled_from(at_end.columns()), min_size=1, unique=True),
                            label="columns")
        names = columns or at_end.columns()
        retained = last is None or self._retained(last)
        got = self._read_or_cleaned(retained, self.table.read_incremental, start, end, columns=columns,
                                    **self._knobs(data))
        if got is None:
            return
        assert got.column_names == names
        assert [f.type for f in got.schema] == [self._type(c) for c in names]
        assert rows_of(got) == project(at_end.expected(window), names)

    def every_instant(self) -> None:
        """Time travel to every past instant, and the incremental window of each instant alone
        (instants no clean retained: the rows of the model, or the clear refusal)."""
        previous = self._just_before(self.history[0][1])
        for index, (instant, completion, model) in enumerate(self.history):
            retained = self._retained(index)
            got = self._read_or_cleaned(retained, self.table.read, as_of=completion)
            if got is not None:
                assert rows_of(got) == project(model.expected(), model.columns())
            got = self._read_or_cleaned(retained, self.table.read_incremental, previous, completion)
            if got is not None:
                assert rows_of(got) == project(model.expected({instant}), model.columns()), instant
            previous = completion

    @precondition(lambda self: self.history)
    @rule(data=st.data())
    def clean(self, data: st.DataObject) -> None:
        """Cleaning with a random policy and retention: reads of the latest snapshot and of every
        retained instant return what they returned before; older snapshots may be refused."""
        policy = data.draw(st.sampled_from(["KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS"]), label="policy")
        retained = data.draw(st.integers(1, 3), label="retained")
        key = "commits" if policy == "KEEP_LATEST_COMMITS" else "fileversions"
        before = [(i, self._retained(i)) for i in range(len(self.history))]
        instant = self.table.clean(options={"hoodie.cleaner.policy": policy, f"hoodie.cleaner.{key}.retained": retained})
        if instant is None:
            return
        event(f"clean ({policy})")
        self._note_cleans()
        timeline = self.table.active_timeline()
        commits = sorted(i.requested_time for i in timeline.completed()
                         if i.action.value in ("commit", "deltacommit", "replacecommit"))
        ectr = timeline.read_metadata(timeline.get(instant)).earliest_commit_to_retain
        if policy == "KEEP_LATEST_COMMITS":  # the last N commits (more only behind a pending write)
            assert ectr <= commits[-retained]
        for index, was_retained in before:
            if was_retained and self._retained(index):
                _, completion, model = self.history[index]
                assert rows_of(self.table.read(as_of=completion)) == project(model.expected(), model.columns())

    @precondition(lambda self: self.shape.layout == "cow")
    @rule()
    def read_optimized_is_the_snapshot_on_copy_on_write(self) -> None:
        got = self.table.read(query_type="read_optimized")
        assert rows_of(got) == project(self.model.expected(), self.columns)


# ------------------------------------------------------------------------------ regressions
# Minimal examples of failures the machine found (kept as plain tests, named after the behaviour).
NULL_ORDERING_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.int64()), ("ts", pa.int64())])


@pytest.mark.parametrize("table_kw", [{"table_type": "COPY_ON_WRITE"}, {"table_type": "MERGE_ON_READ"},
                                      {"num_buckets": 1}], ids=["cow", "mor", "mor-bucketed"])
def test_update_with_null_ordering_value_loses_to_stored_value_on_every_table_type(tmp_path, table_kw):
    """Event-time merge: an update whose ordering value is null loses to a stored row that has
    one (as de-duplication within a batch treats it); the copy-on-write merge used to let it win."""
    t = pyhudi.create_table(str(tmp_path / "t"), NULL_ORDERING_SCHEMA, "id", ordering_field="ts", **table_kw)
    t.upsert(pa.table({"id": [1, 2], "a": [1, 1], "ts": [2, None]}, schema=NULL_ORDERING_SCHEMA))
    t.upsert(pa.table({"id": [1, 2], "a": [2, 2], "ts": [None, None]}, schema=NULL_ORDERING_SCHEMA))
    by_id = lambda: sorted(t.read().to_pylist(), key=lambda r: r["id"])
    assert by_id() == [{"id": 1, "a": 1, "ts": 2}, {"id": 2, "a": 2, "ts": None}]  # stored null: update wins
    t.upsert(pa.table({"id": [1], "a": [3], "ts": [2]}, schema=NULL_ORDERING_SCHEMA))  # a tie wins
    assert by_id() == [{"id": 1, "a": 3, "ts": 2}, {"id": 2, "a": 2, "ts": None}]


@pytest.mark.parametrize("second_copy", ["bulk_insert", "insert"])
def test_upsert_does_not_reach_a_file_group_whose_copy_of_the_key_was_deleted(tmp_path, second_copy):
    """Merge-on-read without a bucket index: after a delete (a delete block in file group 1) the
    key is written again to a new file group 2; an upsert must update group 2 only. The simple
    index used to count the key's data in group 1 as held, so the upsert also went to group 1's
    log — after the delete there — and the deleted row came back as a second copy."""
    schema = pa.schema([pa.field("id", pa.string(), nullable=False), ("a", pa.int64()), ("b", pa.int64())])
    t = pyhudi.create_table(str(tmp_path / "t"), schema, "id")
    t.upsert(pa.table({"id": ["k1"], "a": [1], "b": [1]}, schema=schema))
    t.delete(pa.table({"id": ["k1"]}))
    getattr(t, second_copy)(pa.table({"id": ["k1"], "a": [2], "b": [2]}, schema=schema))
    assert len(t.file_groups()) == 2
    t.upsert(pa.table({"id": ["k1"], "a": [3]}))
    assert t.read().to_pylist() == [{"id": "k1", "a": 3, "b": 2}]
    t.delete(pa.table({"id": ["k1"]}))
    assert t.read().num_rows == 0


def test_copy_on_write_upsert_with_ordering_into_a_base_file_emptied_by_deletes(tmp_path):
    """Copy-on-write with an ordering field: a delete of every row leaves an empty base file
    (still the small file new inserts go to); an upsert into it used to fail with
    ``ArrowIndexError: Index 0 out of bounds`` (the event-time check looked up a stored row)."""
    t = pyhudi.create_table(str(tmp_path / "t"), NULL_ORDERING_SCHEMA, "id", table_type="COPY_ON_WRITE",
                            ordering_field="ts")
    t.upsert(pa.table({"id": [1], "a": [1], "ts": [1]}, schema=NULL_ORDERING_SCHEMA))
    t.delete(pa.table({"id": [1]}))
    (group,) = t.file_groups()
    t.upsert(pa.table({"id": [2], "a": [2], "ts": [1]}, schema=NULL_ORDERING_SCHEMA))
    assert t.read().to_pylist() == [{"id": 2, "a": 2, "ts": 1}]
    assert [g.file_id for g in t.file_groups()] == [group.file_id]  # the emptied small file took the insert


def test_hash_merge_keeps_every_copy_of_a_key_stored_twice(tmp_path):
    """Copy-on-write: an insert of a stored key keeps both records (``hoodie.merge.allow.duplicate.on.inserts``,
    here both in the one small base file). Every read strategy must return both rows; the hash
    merge (``strategy="hash"``, also what ``auto`` falls back to for unsorted inputs) returned one."""
    t = pyhudi.create_table(str(tmp_path / "t"), NULL_ORDERING_SCHEMA, "id", table_type="COPY_ON_WRITE")
    t.upsert(pa.table({"id": [1], "a": [1]}))
    t.insert(pa.table({"id": [1], "a": [2]}))
    assert len(t.file_groups()) == 1
    both = [{"id": 1, "a": 1, "ts": None}, {"id": 1, "a": 2, "ts": None}]
    assert sorted(t.read().to_pylist(), key=lambda r: r["a"]) == both
    assert sorted(t.read(strategy="hash").to_pylist(), key=lambda r: r["a"]) == both


PROFILES = {  # per layout; the default keeps the file near a minute on two cores
    "default": {"max_examples": 52, "stateful_step_count": 20},
    "long": {"max_examples": 300, "stateful_step_count": 25},
}
_profile = PROFILES[os.environ.get("HYPOTHESIS_PROFILE", "default")]


def _machine_test(layout: str):
    machine = type(f"TableMachine_{layout}", (TableMachine,), {"LAYOUT": layout})
    case = machine.TestCase
    case.settings = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
                             **_profile)
    return case


TestMergeOnReadBucketedWithFamilies = _machine_test("families")
TestMergeOnReadBucketed = _machine_test("bucketed")
TestCopyOnWriteSimpleIndex = _machine_test("cow")
TestMergeOnReadSimpleIndex = _machine_test("mor")

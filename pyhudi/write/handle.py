"""Write tasks: what one engine task does to one file group (all its families) at one instant.

A :class:`FileGroupWriteTask` is a plain picklable object — the unit the local and Spark
engines distribute. Depending on its kind it writes, for each family present:

- ``append``: ONE new log file named after the writing instant
  (``.<fileId>_<instant>[_<cf>].log.1_<writeToken>``) holding one Parquet data block (meta
  columns, key, partition and family columns; ``IS_PARTIAL`` when the family is only partly
  present) — merge-on-read upserts; into a new file group of a family table, one full-row log
  without suffix for every family (``full_row``);
- ``delete``: one log file with a delete block per family;
- ``create``: a new base file ``<fileId>_<writeToken>_<instant>[_<cf>].parquet`` holding every
  column of the family (columns the input lacks are null) — bulk inserts into empty bucket file
  groups, inserts into new file groups of tables without a bucket index;
- ``merge``: a new version of the file group's base file — copy-on-write upserts and deletes:
  the old base merged with the changes (:mod:`pyhudi.write.merge`).

A marker is created before every data file, so a failed task can be rolled back.

Where an insert's CPU goes (Scenario W, issue 15: 200k rows x (id + 100 float64), 5 families,
4 buckets, one thread, best of 9; ``pq.write_table`` of the same table uncompressed without
dictionaries: 0.077–0.085 s): 0.21 s in all (no families: 0.15 s) — Parquet encoding 0.10 s
(0.06 s without families; per 50k-row family file ~2.1 ms of data with statistics and ~1.8 ms
of meta columns and key: sequence numbers 0.58, record key 0.40, commit time 0.30 with
statistics, partition path and file name 0.15 each, ``id`` 0.24), writing the bytes 0.035 s
(page cache: on a loaded machine anything up to 0.2 s, as for ``pq.write_table``), the gather
into bucket and key order 0.025 s, creating 20 markers 0.004 s, preparing and planning (record
keys, bucket hashes, grouping, Parquet options) 0.015 s, meta columns 0.006 s. Measured and
kept: one gather per block of columns over all buckets, shared by the tasks
(:mod:`~pyhudi.write.shared_gather`: 46 ms -> 25 ms at 200k rows, 580 -> 355 ms at 2M), sliced
instead of gathered when the rows already come in bucket and key order; meta columns computed
once per task and shared by its families; log blocks encoded straight into their files
(:func:`~pyhudi.logformat.writer.write_log_file`: the same at 200k rows, but at 2M a freshly
allocated 85–430 MB content buffer cost 2–4x the encoding; 2M-row insert, one thread: 2.5 s ->
1.9 s of CPU); log blocks without statistics on data columns (:data:`LOG_BLOCK_STATISTICS`:
-0.5 ms per 20-double family file, -2.5 ms per 100-double file). Measured and left: uncompressed sequence numbers encode 0.3 ms faster
per file but write 1.2 MB (14%) more per 50k rows; DELTA_BYTE_ARRAY / DELTA_LENGTH_BYTE_ARRAY
record keys (1.4 / 1.0 ms) and sequence numbers (1.3 / 0.9 ms) encode 2–3x slower than plain
(pyarrow 26); sequence numbers built with NumPy instead of Arrow's cast save 0.5 ms per task.
The remaining floor is the layout: every family file carries the five meta columns and the key
(Hudi's data-file contract; ~36 ms for 20 family files against ~7 ms for 4 full-row files),
and bucket files need the gather. A new file group is therefore written as one full-row LOG file
(:mod:`~pyhudi.write.full_row`; a full-row base file would make concurrent inserts into one
bucket conflict under non-blocking concurrency control, the default of merge-on-read bucket
tables, where two full-row logs both commit).

Both cores (issue 15): the local engine runs the file groups' tasks on two threads and pyarrow
encodes without the GIL (``ParquetWriter.write_table`` releases it; the 1 MB chunks streamed into
a log file take it briefly). Tasks claim the shared gather's blocks one at a time, each starts
on another family (:func:`_rotated`) and puts off a family another task is gathering, so a
thread waits for another's gather 1–2 times per 5-family insert instead of 11–15. Measured and
left (50k-row family file unless said): pyarrow's own file stream instead of the Python sink
(4.5 ms against 3.9 ms streamed, which needs no ``open``/``close`` of a native file); constant
meta columns with int8 indices (0.13 ms either way: pyarrow's floor for a 50k-row column);
NumPy gathers (``np.take`` into preallocated columns 27 ms, fresh 86 ms, against Arrow's 24 ms
for the 200k-row table); a two-step gather (bucket, then key order; 200k rows: 10 ms against 6).
The layout's floor, ``pq.write_table`` of the same files with their meta columns on two threads
(``bench/bench_write.py``, no pyhudi code): 132 ms of CPU for 20 family files against 98 ms for
4 full-row files (0.74), where the inserts take ~195 ms and ~140 ms (0.72): the 5-family / no
family gap is the number of files, not pyhudi code.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.index.simple import remember_file_keys
from pyhudi.logformat import (
    DeleteBlock,
    block_parquet_options,
    ParquetDataBlock,
    constant_strings,
    data_block_header,
    key_sorting_columns,
    parquet_options_cover,
    parquet_options_for,
    write_log_file,
    write_parquet,
)
from pyhudi.read.damage import decoding
from pyhudi.schema import META_FIELDS, avro_schema_json, with_meta_fields
from pyhudi.storage.fs import Storage
from pyhudi.storage.naming import BaseFileName, LogFileName, WriteToken
from pyhudi.write.full_row import full_row_payload
from pyhudi.write.markers import IO_APPEND, IO_CREATE, IO_MERGE, create_marker
from pyhudi.write.merge import conform_to, merge_into_base
from pyhudi.write.soft_deletes import SOFT_DELETE, marked_rows
from pyhudi.write.meta_values import sequence_numbers
from pyhudi.write.positions import positions_header, remember_written_keys
from pyhudi.write.shared_gather import Deferred, SharedGather
from pyhudi.write.streamed_rows import StreamedRows
from pyhudi.config.write import FSYNC_DATA_FILES  # noqa: F401 (declared there)

KIND_APPEND = "append"  # log data blocks (upsert / insert on merge-on-read)
KIND_DELETE = "delete"  # delete blocks to every family of the file group
KIND_CREATE = "create"  # new base files (bulk insert into an empty file group, inserts into new groups)
KIND_MERGE = "merge"  # a new base file version: old base + changes (copy-on-write)
BASE_FILE_KINDS = (KIND_CREATE, KIND_MERGE)
RECORD_KEY = META_FIELDS[2]
META_PARQUET_OPTIONS = {
    META_FIELDS[0]: (True, "snappy"),  # commit time: constant per file
    META_FIELDS[1]: (False, "snappy"),  # sequence numbers: unique, one long common prefix
    META_FIELDS[3]: (True, "snappy"),  # partition path: constant per file
    META_FIELDS[4]: (True, "snappy"),  # file name / file id: constant per file
}
"""Parquet settings of the meta columns whose nature is known (the record key is sampled)."""


WRITE_BATCH_ROWS = 1 << 16
"""Values the Parquet writer encodes per batch (pyarrow's default: 1024). Larger batches cut the
per-batch work (levels, statistics, page-size checks): a 50k-row family file of 20 doubles
encodes in 3.1 ms instead of 3.5, a 100-double one in 10.4 ms instead of 11.9; pages are still
cut at ~1 MB (one batch of doubles is 512 KB)."""

LOG_BLOCK_STATISTICS = (META_FIELDS[0], RECORD_KEY)
"""Columns of a log data block with min/max statistics, beside the record key fields: readers
skip by the keys' statistics only (a data column's value in a log block may be changed by a later
block, so its statistics never prove anything; base files keep theirs). Leaving the others out
saves ~12% of a block's encoding (20 random doubles: 0.5 ms of 4 ms per 50k rows)."""


def log_block_options(options: dict[str, Any], key_fields: tuple[str, ...]) -> dict[str, Any]:
    """``options`` for a log data block: statistics only on :data:`LOG_BLOCK_STATISTICS` and
    ``key_fields`` (unchanged when the options name no statistics columns or no key is known)."""
    named = options.get("write_statistics")
    if not key_fields or not isinstance(named, (list, tuple)):
        return options
    keep = {*LOG_BLOCK_STATISTICS, *key_fields}
    return {**options, "write_statistics": [c for c in named if c in keep]}


def contiguous_run(indices: pa.Array) -> tuple[int, int] | None:
    """``(start, length)`` when ``indices`` are ``start, start + 1, ...`` (one vectorised check),
    else None."""
    n = len(indices)
    if n == 0 or indices.null_count:
        return None
    values = indices.to_numpy(zero_copy_only=False)
    start = int(values[0])
    if int(values[-1]) - start != n - 1 or (n > 1 and not bool(np.all(np.diff(values) == 1))):
        return None
    return start, n


def gather(source: pa.Table, indices: pa.Array, in_bounds: bool = False) -> pa.Table:
    """``source.take(indices)`` — or, when the rows wanted are already one run in the needed order
    (a table of one bucket, input grouped by bucket and sorted by key), a zero-copy slice: the
    gather copies every byte of the family (~25–45 ms of CPU per 160 MB). ``in_bounds``: the
    caller has checked that every index is a row of ``source`` (once for all its gathers), so
    ``take`` skips its own check of every index for every column (200k rows x 101 doubles:
    25 ms -> 19 ms)."""
    run = contiguous_run(indices)
    if run is not None and run[0] + run[1] <= source.num_rows:
        return source.slice(*run)
    return pc.take(source, indices, boundscheck=not in_bounds) if in_bounds else source.take(indices)


@dataclass
class FamilyPayload:
    """The rows for one family of one file group: sorted by record key, one row per key.

    ``data`` holds ``_hoodie_record_key`` plus the family's file columns present in the input
    (key, partition and family columns). ``is_partial`` marks a family whose columns were only
    partly given: the block's schema is then the present columns and the header says IS_PARTIAL.
    ``file_schema`` is every data column of the family's files (base files hold all of them).

    The rows may be given lazily as group ``group`` of a :class:`~pyhudi.write.shared_gather.SharedGather`
    (``shared``, with the ``columns`` wanted): the key sort, de-duplication and gather of every
    file group of a write happen once, inside the tasks, on the engine's workers — each task then
    holds a zero-copy slice. Pickling materialises (and compacts) them, so a shipped task carries
    only its own rows. Payloads of one task with the same ``plan`` hold the same keys in the same
    order: their meta columns are computed once.
    """

    family: str
    data: pa.Table | None = None
    is_partial: bool = False
    file_schema: pa.Schema | None = None
    plan: str | None = None
    parquet_options: dict[str, Any] | Deferred = field(default_factory=dict)  # (see options())
    integer_key: str | None = None  # the one key field, if integer: sorted by key codes (latest_sorted)
    shared: SharedGather | None = None
    group: int = 0
    columns: tuple[str, ...] = ()
    sliced: bool = False  # ``data`` is a slice of the shared gather (pickled as a compact copy)
    key_fields: tuple[str, ...] = ()  # the table's record key fields (statistics of log blocks)
    plain_fields: bool = False  # a full-row payload: its columns' fields nullable, without metadata (as built from tables)

    def rows(self, cache: dict | None = None) -> pa.Table:
        """The rows (``cache``: kept for callers sharing per-task state; the gather is shared
        through :attr:`shared`)."""
        if self.data is None:
            assert self.shared is not None
            if self.shared.streams():  # (the shared blocks are not gathered: this group's rows alone)
                self.data = self.shared.streamed(self.group, self.columns, self.plain_fields).materialize()
            else:
                self.data = self.shared.rows(self.group, self.columns)
                self.sliced = True
            self.shared = None
        return self.data

    def streamed(self) -> StreamedRows | None:
        """The rows as :class:`~pyhudi.write.streamed_rows.StreamedRows` when the shared gather
        writes this write's files row group by row group (a large write), else None."""
        if self.data is None and self.shared is not None and self.shared.streams():
            return self.shared.streamed(self.group, self.columns, self.plain_fields)
        return None

    def options(self) -> dict[str, Any]:
        """The Parquet options of the family's files. A bucketed write samples them from its
        input on the first task thread that starts (:class:`~pyhudi.write.shared_gather.Deferred`,
        :meth:`start_options`), not in the planner: the same options, off the serial part."""
        if isinstance(self.parquet_options, Deferred):
            self.parquet_options = self.parquet_options.get()
        return self.parquet_options

    def start_options(self) -> None:
        """Start computing :meth:`options` unless a task is at it already (never waits)."""
        if isinstance(self.parquet_options, Deferred):
            self.parquet_options.start()

    def busy(self) -> bool:
        """Whether another task is gathering some of these rows' columns right now."""
        return self.data is None and self.shared is not None and self.shared.busy(self.columns)

    def __getstate__(self) -> dict:
        rows = self.rows()
        if self.sliced and len(rows):  # a slice pickles its whole buffers: ship a compact copy
            rows = rows.take(pa.array(np.arange(len(rows), dtype=np.int64)))
        return {**self.__dict__, "data": rows, "sliced": False, "parquet_options": self.options()}


def _rotated(count: int, start: int) -> list[int]:
    """``0..count-1`` starting at ``start % count``: the order a task writes its families in.

    Tasks running at once on the local engine's threads each start on another family, so each
    gathers its own family's columns (:class:`~pyhudi.write.shared_gather.SharedGather`) instead
    of both asking for the same blocks and one waiting for the other's last one."""
    first = start % count if count else 0
    return [*range(first, count), *range(first)]


@dataclass
class WriteStatus:
    """What a task wrote to one (file group, family): the raw material of a write stat.

    ``num_records`` counts the records in the written file (for a merged base file: all of them,
    unchanged ones included); ``num_inserts`` / ``num_updates`` / ``num_deletes`` what changed.
    Picklable: executors return these to the driver, which commits them.
    """

    instant: str
    partition_path: str
    file_id: str
    family: str
    file_name: str
    kind: str
    num_records: int
    num_inserts: int
    num_updates: int
    num_deletes: int
    bytes_written: int
    base_file: str  # the slice's base file this write applies to ("" when none)
    prev_commit: str
    is_new_file_group: bool
    elapsed_ms: int
    min_key: str | None = None
    max_key: str | None = None

    @property
    def relpath(self) -> str:
        return f"{self.partition_path}/{self.file_name}" if self.partition_path else self.file_name

    @property
    def writes_base_file(self) -> bool:
        return self.kind in BASE_FILE_KINDS


_POSITIONS_FOUND = "positions found"  # (the task's cache: the last block's positions, FileGroupWriteTask._positions)


@dataclass
class FileGroupWriteTask:
    """Write one file group's families at ``instant`` (see module docstring)."""

    base_uri: str
    instant: str
    table_name: str
    partition_path: str
    file_id: str
    kind: str
    write_token: str
    payloads: list[FamilyPayload] = field(default_factory=list)
    delete_keys: pa.Table | None = None  # record_key (+ ordering_value): KIND_DELETE / KIND_MERGE; KIND_APPEND: soft deletes
    delete_families: tuple[str, ...] = ()
    base_file: str = ""  # the file slice's current base file (read by KIND_MERGE)
    prev_commit: str = "null"
    is_new_file_group: bool = False
    ordering_field: str | None = None  # KIND_MERGE: event-time ordering column (None = commit time)
    fsync: bool = False  # FSYNC_DATA_FILES
    parquet_options: dict[str, Any] = field(default_factory=dict)
    insert_count: int = 0  # append / merge into an existing group: rows that are new records (small files)
    concat_inserts: bool = False  # KIND_MERGE of an ``insert``: new rows never replace stored ones
    family_bases: dict = field(default_factory=dict)
    """KIND_APPEND: family → the :class:`~pyhudi.write.positions.PositionsBase` (its base file, or the
    group's first log block) to record positions against (:mod:`pyhudi.write.positions`; empty when
    ``hoodie.write.record.positions`` is off)."""
    full_row: bool = False  # every family of a new group: one full-row base or log file if they can share it (FULL_ROW_INSERT)
    index_keys: bool = False
    """Keep the record keys of the files this task writes for the simple index's next lookup in
    this process (:func:`~pyhudi.index.simple.remember_file_keys`): tables without a bucket index."""
    keep_written_keys: bool = False
    """Keep the keys of the files this task writes into new file groups for the process's next
    update of them (:func:`~pyhudi.write.positions.remember_written_keys`): set where appends
    record positions (bucketed merge-on-read tables, ``hoodie.write.record.positions`` on)."""

    def run(self) -> list[WriteStatus]:
        storage = Storage(self.base_uri)
        if self.kind == KIND_DELETE:
            return [self._write_deletes(storage, family) for family in self.delete_families]
        if self.kind == KIND_MERGE:
            return [self._merge_base(storage)]
        meta_cache: dict = {}
        payloads = self.payloads
        for payload in payloads:  # the first task samples the write's options; the others gather meanwhile
            payload.start_options()
        if self.full_row and self.kind in (KIND_CREATE, KIND_APPEND):
            merged = full_row_payload(payloads, meta_cache)
            payloads = [merged] if merged is not None else payloads
        written = {}
        waiting = _rotated(len(payloads), payloads[0].group if payloads else 0)
        while waiting:  # a family whose columns another task is gathering now goes later
            i = next((i for i in waiting if not payloads[i].busy()), waiting[0])
            waiting.remove(i)
            written[i] = self._write_family(storage, payloads[i], meta_cache)
        # soft deletes of a partial write reach the families it does not touch (pyhudi.write.soft_deletes)
        deletes = [self._write_deletes(storage, family) for family in self.delete_families] if self.delete_keys else []
        return [*(written[i] for i in range(len(payloads))), *deletes]

    def _relpath(self, name: str) -> str:
        return f"{self.partition_path}/{name}" if self.partition_path else name

    # ------------------------------------------------------------------------ data
    def _record_meta(self, keys: pa.Array | pa.ChunkedArray) -> list:
        """Commit time, sequence number, record key and partition path of ``keys``' records
        (the constant ones as one-entry dictionaries: :func:`constant_strings`)."""
        n = len(keys)
        task_partition = WriteToken.parse(self.write_token).task_partition
        seqno = sequence_numbers(f"{self.instant}_{task_partition}_", n)  # (vectorised into one buffer)
        return [constant_strings(self.instant, n), seqno, keys, constant_strings(self.partition_path, n)]

    def _meta_columns(self, keys: pa.Array | pa.ChunkedArray, file_name_value: str) -> list:
        """The five meta columns of ``len(keys)`` records written by this task."""
        return [*self._record_meta(keys), constant_strings(file_name_value, len(keys))]

    @staticmethod
    def _with_meta(data: pa.Table | StreamedRows, meta: list) -> tuple[pa.Table | StreamedRows, pa.Schema]:
        """``data`` led by its ``meta`` columns, and the schema readers see (meta columns strings)."""
        rest = [c for c in data.column_names if c != RECORD_KEY]
        streamed = isinstance(data, StreamedRows)
        schema = with_meta_fields(pa.schema([data.schema.field(c) for c in rest]) if streamed else data.select(rest).schema)
        written = schema
        for i, column in enumerate(meta):
            written = written.set(i, schema.field(i).with_type(column.type))
        if streamed:
            return data.with_schema(written, dict(zip(META_FIELDS, meta))), schema
        return pa.Table.from_arrays([*meta, *(data.column(c) for c in rest)], schema=written), schema

    def _cached_meta(self, payload: FamilyPayload, data: pa.Table, file_name_value: str, cache: dict) -> list:
        """Meta columns shared by the payloads of one plan (same keys, same order)."""
        if payload.plan is None:
            return self._meta_columns(data.column(RECORD_KEY), file_name_value)
        record = cache.get(("meta", payload.plan, len(data)))
        if record is None:
            record = cache[("meta", payload.plan, len(data))] = self._record_meta(data.column(RECORD_KEY))
        names = cache.get(("names", payload.plan, file_name_value))
        if names is None:
            names = constant_strings(file_name_value, len(data))
            cache[("names", payload.plan, file_name_value)] = names
        return [*record, names]

    def _options(self, payload: FamilyPayload | None) -> dict[str, Any]:
        # Every file a task writes holds one row per key in key order (de-duplicated and sorted
        # here), so the sort order is declared without re-checking it; readers merge by key ranges.
        sorted_by_key = {"sorting_columns": [pq.SortingColumn(META_FIELDS.index(RECORD_KEY))],
                         "write_batch_size": WRITE_BATCH_ROWS}
        return {**sorted_by_key, **(payload.options() if payload is not None else {}), **self.parquet_options}

    def _write_base(self, storage: Storage, relpath: str, table: pa.Table, options: dict[str, Any]) -> int:
        if not parquet_options_cover(options, table.schema):
            options = {**parquet_options_for(table), **options}
        with storage.open_output(relpath) as sink:
            write_parquet(table, sink, options)
        if self.fsync and storage.is_local:
            fd = os.open(storage.full_path(relpath), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        return storage.size(relpath)

    def _positions(self, storage: Storage, payload: FamilyPayload, keys: pa.Table, cache: dict) -> dict:
        """The position headers of ``payload``'s block (:mod:`pyhudi.write.positions`): found once
        for the families of the group that write the same keys against the same base (a full-row
        upsert writes one block per family, each positioned in the insert's block)."""
        base = self.family_bases.get(payload.family)
        if base is None:
            return {}
        known = cache.get(_POSITIONS_FOUND)
        if known is not None and known[0] == base and known[1].equals(keys):
            return dict(known[2])
        header = positions_header(storage, base, keys, payload.integer_key)
        cache[_POSITIONS_FOUND] = (base, keys, header)
        return dict(header)

    @staticmethod
    def _key_columns(payload: FamilyPayload, rows: pa.Table | StreamedRows) -> list[str]:
        """The columns an update's record positions are searched by (:mod:`pyhudi.write.positions`)."""
        return [RECORD_KEY] + ([payload.integer_key] if payload.integer_key in rows.column_names else [])

    def _write_family(self, storage: Storage, payload: FamilyPayload, meta_cache: dict | None = None) -> WriteStatus:
        started = time.perf_counter()
        family = payload.family or None
        cache = meta_cache if meta_cache is not None else {}
        # a large write's log blocks: rows gathered row group by row group as they are written
        data = payload.streamed() if self.kind == KIND_APPEND else None
        data = payload.rows(cache) if data is None else data
        if self.kind == KIND_CREATE:
            name = BaseFileName(self.file_id, self.write_token, self.instant, family).name
            marked = marked_rows(data)
            if marked is not None:  # a base file never holds a marked row (pyhudi.write.soft_deletes)
                data = data.filter(pa.array(~marked))
            if payload.file_schema is not None:  # a base file holds every column of its family
                data = conform_to(data, payload.file_schema)
            table, _ = self._with_meta(data, self._cached_meta(payload, data, name, cache))
            create_marker(storage, self.instant, self.partition_path, name, IO_CREATE)
            size = self._write_base(storage, self._relpath(name), table, self._options(payload))
            if self.index_keys:
                remember_file_keys(storage, self._relpath(name), size, table.column(RECORD_KEY), log=False)
            if self.keep_written_keys:
                remember_written_keys(storage, self._relpath(name), size,
                                      table.select(self._key_columns(payload, table)), payload.integer_key,
                                      lead_block=False)
        else:
            name = LogFileName(self.file_id, self.instant, 1, self.write_token, family).name
            table, schema = self._with_meta(data, self._cached_meta(payload, data, self.file_id, cache))
            key_columns = self._key_columns(payload, data)
            keys = data.select_held(key_columns) if isinstance(data, StreamedRows) else data.select(key_columns)
            positions = self._positions(storage, payload, keys, cache)
            header = data_block_header(self.instant, avro_schema_json(schema, self.table_name),
                                       table_name=self.table_name, is_partial=payload.is_partial, extra=positions)
            options = self._options(payload)
            if payload.key_fields and not parquet_options_cover(options, table.schema):
                sample = table.materialize() if isinstance(table, StreamedRows) else table
                options = {**block_parquet_options(sample), **options}  # (what the block would choose)
            options = log_block_options(options, payload.key_fields)
            block = ParquetDataBlock(table, header, table_name=self.table_name, **options)
            create_marker(storage, self.instant, self.partition_path, name, IO_APPEND)
            size = write_log_file(storage, self._relpath(name), [block], fsync=self.fsync)
            if self.index_keys and SOFT_DELETE not in data.column_names:  # (marked rows: read back)
                remember_file_keys(storage, self._relpath(name), size, keys.column(RECORD_KEY), log=True)
            if self.keep_written_keys and self.is_new_file_group:  # (its first log file: the next update's lead)
                remember_written_keys(storage, self._relpath(name), size, keys, payload.integer_key, lead_block=True)
        n = table.num_rows
        inserts = n if self.is_new_file_group else min(n, self.insert_count)
        return self._status(payload.family, name, n, inserts, n - inserts, 0, size, started, data.column(RECORD_KEY))

    def _write_deletes(self, storage: Storage, family: str) -> WriteStatus:
        started = time.perf_counter()
        assert self.delete_keys is not None
        name = LogFileName(self.file_id, self.instant, 1, self.write_token, family or None).name
        keys = self.delete_keys.column("record_key").combine_chunks()
        ordering = None
        if "ordering_value" in self.delete_keys.column_names:
            ordering = self.delete_keys.column("ordering_value").combine_chunks()
        block = DeleteBlock.from_keys(
            keys, self.instant, partition_paths=self.partition_path, ordering_values=ordering
        )
        create_marker(storage, self.instant, self.partition_path, name, IO_APPEND)
        size = write_log_file(storage, self._relpath(name), [block], fsync=self.fsync)
        return self._status(family, name, 0, 0, 0, len(keys), size, started, keys)

    def _merge_base(self, storage: Storage) -> WriteStatus:
        """Copy-on-write: rewrite the base file with the updates applied and deletes removed."""
        started = time.perf_counter()
        payload = self.payloads[0] if self.payloads else None
        name = BaseFileName(self.file_id, self.write_token, self.instant, None).name
        relpath = self._relpath(self.base_file)
        with decoding(storage, [relpath]), storage.open_input(relpath) as source:  # damage names the file
            old = pq.read_table(source)
        deletes = self.delete_keys.column("record_key") if self.delete_keys is not None else None
        file_schema = payload.file_schema if payload is not None and payload.file_schema is not None else None
        merged = merge_into_base(
            old, payload.rows() if payload is not None else None, deletes, self.ordering_field, file_schema,
            insert_only=self.concat_inserts,
        )
        table = merged.assemble(self._record_meta(merged.new_keys), name)
        options = self._options(payload)
        # the old file may hold a key twice (an insert into a small file): sorted, but not
        # strictly — the order is declared only if strict
        options = {k: v for k, v in options.items() if k != "sorting_columns"}
        sorting = key_sorting_columns(table)
        if sorting:
            options["sorting_columns"] = sorting
        create_marker(storage, self.instant, self.partition_path, name, IO_MERGE)
        size = self._write_base(storage, self._relpath(name), table, options)
        if self.index_keys:
            remember_file_keys(storage, self._relpath(name), size, table.column(RECORD_KEY), log=False)
        return self._status(
            "", name, table.num_rows, merged.num_inserts, merged.num_updates, merged.num_deletes, size, started,
            table.column(RECORD_KEY),
        )

    def _status(self, family, name, records, inserts, updates, deletes, size, started, keys) -> WriteStatus:
        keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
        # every file is sorted by record key: the first and last keys are the min and max
        return WriteStatus(
            instant=self.instant,
            partition_path=self.partition_path,
            file_id=self.file_id,
            family=family,
            file_name=name,
            kind=self.kind,
            num_records=records,
            num_inserts=inserts,
            num_updates=updates,
            num_deletes=deletes,
            bytes_written=size,
            base_file=self.base_file,
            prev_commit=self.prev_commit,
            is_new_file_group=self.is_new_file_group,
            elapsed_ms=int((time.perf_counter() - started) * 1000),
            min_key=keys[0].as_py() if len(keys) else None,
            max_key=keys[-1].as_py() if len(keys) else None,
        )

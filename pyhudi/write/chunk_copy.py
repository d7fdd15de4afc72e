"""Full compaction by copying column chunks: the families whose data is final are not re-encoded.

A full compaction joins every family of a file group into one full-row base file. Decoding all
of them and encoding the rows again costs more than writing the rows in the first place; yet a
family whose slice is a base file with no log file after it has final values, already encoded.
When every such family's base file holds the same keys in the same row groups (families written
together, or one full-row base file serving them all), the full-row file takes their column chunks byte for byte
(:mod:`pyhudi.logformat.parquet_copy`) and encodes only the rest, row group by row group with
the same boundaries: the meta columns whose values change (commit time and sequence number —
each row's newest family version —, partition path, and the file name, which names the new
file) and the columns of families that have log files, merged as the decode path merges them.
The record key and the key and partition columns are the copied families' own chunks.

It is proven, not assumed, that the copied rows are the merged rows: the copied base files have
byte-equal record-key chunks in equal row-group layouts, and each row group's merged record keys
are compared with the copied base's keys before the row group is written. Anything else — logs
in every family, keys that differ (inserts or deletes in the logs), another column type than the
table's (schema evolution), soft deletes, logs after a full-row base file's own slice, files written by
another Parquet writer — takes the decode path (:func:`~pyhudi.write.base_file.write_base_file`),
as does a mismatch found while writing: the partial file is deleted and never kept.

Row groups are written on an output thread (:class:`_Output`) while the next one is merged: the
copy (``pread``/``write`` through one buffer) and the merge (Arrow decoding) both run outside
the GIL, so with a free core the copy costs little wall time (on a machine loaded beyond its
cores it gains nothing, and costs nothing). Measured on Scenario W (200k rows x 100 doubles, f0
with 3 logs, f1..f4 copied; load 4-7, medians): the merge of f0 0.05-0.07 s CPU, encoding its 20
columns and 3 meta columns ~0.02 s, copying 130 MB ~0.03 s (0.045 s with ``copy_file_range``),
against ~0.08 s for ``pq.write_table`` of the same rows (docs/benchmarks.md, Compaction).
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from pyhudi.context import TableContext
from pyhudi.fsview.view import FileSlice, Visibility
from pyhudi.logformat.parquet_copy import (
    Footer,
    Part,
    Source,
    SplicedFileWriter,
    copy_supported,
    read_footer,
    read_range,
)
from pyhudi.logformat.parquet_options import (
    constant_strings,
    encode_parquet,
    encoded_capacity,
    parquet_options_for,
    stored_schema_metadata,
)
from pyhudi.read.file_slice import read_file_slices
from pyhudi.read.plan import _output_schema
from pyhudi.read.task import DEFAULT_BATCH_SIZE
from pyhudi.schema import META_FIELDS, SOFT_DELETE_FIELD
from pyhudi.write.handle import META_PARQUET_OPTIONS

COMMIT_TIME, SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME = META_FIELDS
SOFT_DELETE = SOFT_DELETE_FIELD  # (Hudi's soft-delete column, declared in pyhudi.schema)
_FRESH_META = (COMMIT_TIME, SEQNO, FILE_NAME)
"""Meta columns encoded anew. The record key and partition path are copied: the keys are proven
equal, and a file group's rows all have its partition's path."""


class NotAligned(Exception):
    """The copy path does not apply (internal: the caller takes the decode path)."""


@dataclass
class _Source:
    """A copied family's base file, open, with its footer and Arrow schema."""

    slice: FileSlice
    source: Source
    footer: Footer
    schema: pa.Schema

    @property
    def file(self) -> pa.NativeFile:
        return self.source.file


def copy_full_compaction(context: TableContext, slices: Sequence[FileSlice], visibility: Visibility,
                         relpath: str, file_name: str, columns: Sequence[str],
                         pipelined: bool = True) -> tuple[int, str | None, str | None] | None:
    """Write the full-row base file ``relpath`` of ``slices`` (one per family of a file group)
    with the final families' chunks copied; returns (rows, first key, last key), or None when
    the copy path does not apply (nothing is left at ``relpath`` then). ``pipelined``: write
    each row group (its chunks copied) on an output thread while the next is merged
    (:class:`_Output`; the same bytes as without)."""
    if any(s.family is None and s.log_files for s in slices):
        return None
    # (a full-row base file's own slice adds nothing: it is every family's base, in their slices)
    slices = [s for s in slices if s.family is not None]
    if len(slices) < 2 or not copy_supported():
        return None
    storage = context.storage
    with ExitStack() as files:
        try:
            sources, merged = _open_sources(storage, slices, files)
            plan = _ColumnPlan.of(context, slices, sources, merged, columns)
        except NotAligned:
            return None
        try:
            with _output(storage, relpath) as sink:
                return _write(context, slices, visibility, plan, sink, file_name, pipelined)
        except NotAligned:
            storage.delete(relpath)
            return None
        except BaseException:
            storage.delete(relpath)
            raise


def _open_sources(storage: Any, slices: Sequence[FileSlice],
                  files: ExitStack) -> tuple[list[_Source], list[_Source | None]]:
    """The final families' base files (checked to share one row-group layout and one set of
    keys), and the base file (or None) of each family that has log files."""
    sources, merged = [], []
    for s in slices:
        if s.base_file is None:
            merged.append(None)
            continue
        opened = _open(storage, s, files)
        if s.log_files:
            merged.append(opened)
            continue
        if not opened.footer.copyable or SOFT_DELETE in opened.footer.names or RECORD_KEY not in opened.footer.names:
            raise NotAligned
        sources.append(opened)
    if not sources or not sources[0].footer.row_groups:
        raise NotAligned
    first = sources[0]
    for other in sources[1:]:
        if other.footer.row_counts() != first.footer.row_counts() or other.footer.created_by != first.footer.created_by:
            raise NotAligned
        if not _same_keys(first, other):
            raise NotAligned
    return sources, merged


def _same_keys(a: _Source, b: _Source) -> bool:
    """Whether two base files hold the same record keys in the same row groups: byte-equal key
    chunks (families written together), else equal decoded keys, row group by row group (a
    family compacted on its own may have encoded them otherwise)."""
    if _same_chunks(a, b, RECORD_KEY):
        return True
    if a.footer.row_counts() != b.footer.row_counts():
        return False
    first, second = pq.ParquetFile(a.file), pq.ParquetFile(b.file)
    return all(first.read_row_group(i, [RECORD_KEY]).column(0).equals(second.read_row_group(i, [RECORD_KEY]).column(0))
               for i in range(len(a.footer.row_groups)))


def _open(storage: Any, file_slice: FileSlice, files: ExitStack) -> _Source:
    relpath = file_slice.base_file.relpath
    handle = files.enter_context(storage.open_input(relpath))  # (not mapped: mapped pages a scan
    fd = None                                                   # touches would stay resident)
    if storage.is_local:
        fd = os.open(storage.full_path(relpath), os.O_RDONLY)
        files.callback(os.close, fd)
    try:
        schema = pq.ParquetFile(handle).schema_arrow  # (pyarrow vets the footer before it is parsed again)
        footer = read_footer(handle, relpath)
    except Exception:
        raise NotAligned from None  # (the decode path reports a damaged file as it does)
    return _Source(file_slice, Source(handle, fd), footer, schema)


def _same_chunks(a: _Source, b: _Source, name: str) -> bool:
    """Whether column ``name`` is stored byte for byte alike in both files (every row group)."""
    if a.footer is b.footer or a.slice.base_file.relpath == b.slice.base_file.relpath:
        return True
    if name not in a.footer.names or name not in b.footer.names or a.footer.row_counts() != b.footer.row_counts():
        return False
    for row_group in range(len(a.footer.row_groups)):
        (start_a, size_a), (start_b, size_b) = (a.footer.chunk_extent(row_group, name),
                                                b.footer.chunk_extent(row_group, name))
        if size_a != size_b or not read_range(a.file, start_a, size_a).equals(read_range(b.file, start_b, size_b)):
            return False
    return True


@dataclass
class _ColumnPlan:
    """Where each output column comes from: a copied source, or the merged (fresh) rows."""

    output: pa.Schema  # the full-row file's Arrow schema (meta columns first)
    copied: dict[str, _Source]
    fresh: list[str]  # output columns encoded from the merged rows, in output order
    read: list[FileSlice]  # the slices the merged rows are read from
    read_columns: list[str]  # the columns asked of them (meta columns among them)
    anchor: _Source  # the copied base whose record keys every row group is checked against

    @classmethod
    def of(cls, context: TableContext, slices: Sequence[FileSlice], sources: list[_Source],
           merged: list[_Source | None], columns: Sequence[str]) -> "_ColumnPlan":
        output = _output_schema(context.schema, columns, True)
        by_family = {src.slice.family: src for src in sources}
        owner = {c: name for name, f in context.families.items() for c in f.columns}
        implicit = {*context.record_key_fields, *context.partition_fields}
        anchor = sources[0]
        copied: dict[str, _Source] = {RECORD_KEY: anchor, PARTITION_PATH: anchor}
        fresh = list(_FRESH_META)
        present = {s.family for s in slices}
        for name in columns:
            if name in implicit:
                copied[name] = anchor
            elif owner.get(name) in by_family:
                copied[name] = by_family[owner[name]]
            elif owner.get(name) in present:
                fresh.append(name)
            else:
                raise NotAligned  # a family without files in this group: its columns are all null
        for name, src in copied.items():
            if name not in src.schema.names or not _same_field(src.schema.field(name), output.field(name)):
                raise NotAligned
        read = [s for s in slices if s.family not in by_family] + _meta_sources(anchor, sources, merged, slices)
        read_columns = [COMMIT_TIME, SEQNO, *(c for c in columns if c in implicit or c in fresh)]
        return cls(output, copied, [c for c in output.names if c in fresh], read, read_columns, anchor)


def _meta_sources(anchor: _Source, sources: list[_Source], merged: list[_Source | None],
                  slices: Sequence[FileSlice]) -> list[FileSlice]:
    """The final families whose meta values the merge must still read (a row's meta values are
    its newest family version's). One base file stands for all whose commit time and sequence
    number chunks are identical. None is needed when the merged families' base files (``merged``)
    carry those very meta values too and every log file after them is newer than that base: each
    merged row then has the same meta values or newer ones."""
    same = [src for src in sources if _same_meta(anchor, src)]
    needed = [src.slice for src in sources if src is anchor or not any(src is x for x in same)]
    if len(same) < len(sources) or not merged:
        return needed
    newest = _max_commit_time(anchor.footer)
    if newest is None or any(base is None or not _same_meta(anchor, base) for base in merged):
        return needed
    logs = [lf for s in slices if s.log_files for lf in s.log_files]
    return needed if any(lf.name.instant <= newest for lf in logs) else []


def _same_meta(a: _Source, b: _Source) -> bool:
    return all(_same_chunks(a, b, name) for name in (RECORD_KEY, COMMIT_TIME, SEQNO))


def _max_commit_time(footer: Footer) -> str | None:
    """The largest ``_hoodie_commit_time`` of a file, from its chunks' statistics (None: unknown)."""
    if COMMIT_TIME not in footer.names:
        return None
    leaf = footer.leaves[COMMIT_TIME][0]
    best = None
    for rg in footer.row_groups:
        stats = rg[1][leaf][3].get(12) or {}  # ColumnChunk.meta_data.statistics
        value = stats.get(5)  # max_value
        if value is None:
            return None
        text = value.decode() if isinstance(value, bytes) else str(value)
        best = text if best is None or text > best else best
    return best


def _same_field(stored: pa.Field, wanted: pa.Field) -> bool:
    return stored.type == wanted.type and stored.nullable == wanted.nullable


def _write(context: TableContext, slices: Sequence[FileSlice], visibility: Visibility, plan: _ColumnPlan,
           sink: pa.NativeFile | int, file_name: str, pipelined: bool) -> tuple[int, str | None, str | None]:
    counts = plan.anchor.footer.row_counts()
    # pipelined, the output thread takes the other core: the merge decodes in this thread
    # (Arrow's pool on 16k-row batches costs ~20% more CPU for no gain in wall time then)
    merged = read_file_slices(context, plan.read, visibility, columns=plan.read_columns,
                              batch_size=_merge_batch_rows(counts), decode_threads=not pipelined,
                              commit_time_codes=True)  # (dictionary-encoded as it comes: _row_group)
    batches = _Rows(iter(merged))
    anchor_file = pq.ParquetFile(plan.anchor.file)
    writer = SplicedFileWriter(sink)
    state = _Encoding(file_name, list(context.record_key_fields))
    sorting = _sorting(plan.output.names)
    with _Output(pipelined) as output:
        for index, rows in enumerate(counts):
            fresh = _row_group(plan, batches, anchor_file, state, index, rows)
            output.drain()  # (the previous row group is written before this one is encoded)
            parts = _encoded_parts(plan, state, fresh, index)
            del fresh
            output.submit(writer.add_row_group, parts, rows, sorting)
        if batches.take(1).num_rows:
            raise NotAligned  # the merge has rows the copied files do not
    writer.close(state.footer, stored_schema_metadata(plan.output), sum(counts))
    return sum(counts), *_first_last_keys(anchor_file)


def _merge_batch_rows(counts: Sequence[int]) -> int:
    """Rows per batch of the merge: twice the scan's default when the output's row groups are
    that large. The merge pays per batch (each base column decoded, each block's rows written
    over it, the batches then joined into a row group), and a batch holds the base's and each
    block's rows of it. Measured on Scenario W (f0's 23 columns, 3 blocks, 155k-row groups; the
    merge alone, min of 15): 16k rows 42 ms CPU, 32k 35 ms, 64k 34 ms, a whole row group 30 ms;
    peak RSS growth of a full compaction of 2M rows with a 200k-row block / of 200k rows
    (``--only memory``): 1.05-1.2, 1.3, 1.5 and 1.9 — a big block's batches are held whole."""
    return max(DEFAULT_BATCH_SIZE, min(2 * DEFAULT_BATCH_SIZE, max(counts, default=0)))


class _Output:
    """Where row groups are written (their fresh chunks from memory, the others copied): on one
    output thread when ``pipelined`` — row group ``i`` is written (``pread``/``write``, outside
    the GIL) while row group ``i + 1`` is merged — else in the caller's thread. The caller drains
    the output before it encodes the next row group, so no more is held than without the thread
    (one row group's merged rows while the previous one's encoded bytes are written, as the
    sequential path holds them while encoding), and the file's bytes are the same either way:
    row groups are written one after another, in order."""

    def __init__(self, pipelined: bool) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="pyhudi-compaction-output") if pipelined else None
        self._pending: Future | None = None

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        if self._pool is None:
            fn(*args)
            return
        self.drain()
        self._pending = self._pool.submit(fn, *args)

    def drain(self) -> None:
        """Wait for the row group being written (its failure is raised here)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def __enter__(self) -> "_Output":
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        # the output thread is done before the file is closed, deleted or completed
        try:
            if kind is None:
                self.drain()
            elif self._pending is not None:
                wait([self._pending])  # (its own failure, if any, is secondary to the caller's)
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)


@dataclass
class _Encoding:
    """What the row groups of one file share: the new file's name, the key fields, the Parquet
    options chosen on the first row group, the last encoded row group's footer."""

    file_name: str
    key_fields: list[str]
    options: dict[str, Any] | None = None
    footer: Footer | None = None
    buffer: pa.Buffer | None = None  # where row groups are encoded, one after another (``_encode``)


def _row_group(plan: _ColumnPlan, batches: "_Rows", anchor_file: pq.ParquetFile, state: _Encoding, index: int,
               rows: int) -> pa.Table:
    """The fresh columns of row group ``index``: its merged rows, checked against the anchor's
    keys. (A function of its own: nothing of one row group is still held while the next one is
    merged — memory stays one row group in merge and one in output, whatever the file.)"""
    table = batches.take(rows)
    if rows == 0 or table.num_rows != rows:
        raise NotAligned  # (an empty row group, or the merge ended early: the decode path writes it)
    if not table.select(state.key_fields).equals(
            anchor_file.read_row_group(index, state.key_fields), check_metadata=False):
        raise NotAligned  # (equal key fields: equal record keys, the keygen is the table's)
    return pa.table({name: (constant_strings(state.file_name, rows) if name == FILE_NAME else
                            _one_dictionary(table.column(name))) for name in plan.fresh})


def _one_dictionary(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A dictionary column (the merge's commit time codes, a dictionary per batch) with one
    dictionary for all its chunks: the Parquet writer then writes that dictionary and the codes
    as they are (a chunk with another dictionary would make it fall back to plain pages)."""
    if not pa.types.is_dictionary(column.type) or column.num_chunks < 2:
        return column
    return column.unify_dictionaries()


def _encoded_parts(plan: _ColumnPlan, state: _Encoding, fresh: pa.Table, index: int) -> list[Part]:
    """The parts of row group ``index``: the fresh columns encoded (in memory), the others
    located in their sources, in the output's column order."""
    if state.options is None:
        state.options = parquet_options_for(fresh, fixed=META_PARQUET_OPTIONS, delta_columns=state.key_fields)
    buffer = _encode(fresh, state)
    state.footer = read_footer(pa.BufferReader(buffer), "(the encoded row group)")
    if state.footer.created_by != plan.anchor.footer.created_by:
        raise NotAligned  # another writer's statistics rules: do not mix them in one file
    fresh_source = Source(buffer=buffer)
    return [Part(name, state.footer, fresh_source, 0) if name not in plan.copied
            else Part(name, plan.copied[name].footer, plan.copied[name].source, index)
            for name in plan.output.names]


def _first_last_keys(parquet: pq.ParquetFile) -> tuple[str | None, str | None]:
    """The record keys of a file's first and last rows (files are written in key order)."""
    groups = [i for i in range(parquet.metadata.num_row_groups) if parquet.metadata.row_group(i).num_rows]
    if not groups:
        return None, None
    first = next(parquet.iter_batches(batch_size=1, row_groups=groups[:1], columns=[RECORD_KEY])).column(0)[0]
    last = parquet.read_row_group(groups[-1], [RECORD_KEY]).column(0)
    return first.as_py(), last[len(last) - 1].as_py()


@contextmanager
def _output(storage: Any, relpath: str) -> Iterator[pa.NativeFile | int]:
    """The new file: a descriptor for a local file (chunks are then copied in the kernel),
    else the storage's output stream."""
    if not storage.is_local:
        with storage.open_output(relpath) as sink:
            yield sink
        return
    path = storage.full_path(relpath)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        yield fd
    finally:
        os.close(fd)


def _sorting(names: list[str]) -> list[dict]:
    """Parquet ``SortingColumn``: rows ascending by record key, as the decode path declares."""
    return [{1: names.index(RECORD_KEY), 2: False, 3: False, "i32": 1}]


def _encode(table: pa.Table, state: _Encoding) -> pa.Buffer:
    """One row group of ``table`` as a Parquet file in memory (its chunks are then copied),
    written into the one buffer the file's row groups share
    (:func:`~pyhudi.logformat.parquet_options.encode_parquet`): the previous row group is
    written out before the next is encoded (``_Output.drain``), so its bytes are free to
    overwrite, and the pages of a buffer allocated afresh for each row group would be faulted in
    again each time. (A quarter more than the first row group needs: the next ones, of as many
    rows, differ in their strings' sizes.)"""
    options = {**state.options, "row_group_size": max(1, table.num_rows), "store_schema": False}
    needed = encoded_capacity(table, options)
    if state.buffer is None or state.buffer.size < needed:
        state.buffer = None  # (the old one is released before the larger one is allocated)
        state.buffer = pa.allocate_buffer(needed + needed // 4)
    return encode_parquet(table, options, into=state.buffer)


class _Rows:
    """Exactly ``n`` rows at a time from a stream of record batches."""

    def __init__(self, batches: Iterator[pa.RecordBatch]) -> None:
        self._batches = batches
        self._rest: list[pa.RecordBatch] = []
        self._schema: pa.Schema | None = None

    def take(self, n: int) -> pa.Table:
        held = list(self._rest)
        count = sum(b.num_rows for b in held)
        while count < n:
            batch = next(self._batches, None)
            if batch is None:
                break
            self._schema = batch.schema
            held.append(batch)
            count += batch.num_rows
        if not held:
            return pa.table({RECORD_KEY: pa.array([], pa.string())})
        table = pa.Table.from_batches(held)
        self._rest = table.slice(n).to_batches() if count > n else []
        return table.slice(0, n)

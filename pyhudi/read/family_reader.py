"""The family reader (RFC-80 "familyReader"): one family's file slice → its latest rows by key.

A file slice is a base file plus log files; the inputs are, in processing order, the base file
and every visible log block (blocks of instants that are not completed — or after ``as_of`` —
and blocks rolled back by a command block are skipped). The reader picks a strategy:

- **streaming sort-merge** when every input is sorted by record key (pyhudi writes every base
  file and data block sorted): inputs are read batch by batch and merged in key ranges — the
  range ends at the smallest "last key" among the current batches of the inputs that have more
  batches to come, so every version of a key in the range is in memory and nothing past it is
  (once every input holds its final batch, one range takes the rest: a small file group merges
  in one range). Memory is bounded by the batch size times the number of inputs, whatever the
  file group's size. Ranges that only one input touches pass through without a copy
  (:func:`pyhudi.read.window.merge_window`). A merge of a whole base file with its log blocks
  also learns whether every key of the blocks is a key of the base (a verdict of the metadata
  cache that lets a later read skip the blocks of a family it reads only for its keys);
- **pass-through** when the slice is a single Parquet input and no sorted output is needed;
- **hash merge** otherwise (Apache Hudi's unsorted base files, Avro blocks with repeated keys):
  every version is read and merged at once by :func:`pyhudi.read.merge.merge_versions` — correct,
  but it holds the whole slice in memory.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from contextlib import ExitStack
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from pyhudi.errors import StorageError
from pyhudi.fsview.view import BaseFile, FileSlice, LogFile, Visibility
from pyhudi.read.damage import check_log
from pyhudi.logformat import AvroDataBlock, CommandBlock, DataBlock, DeleteBlock, LogReader, ParquetDataBlock
from pyhudi.logformat.block import HeaderKey
from pyhudi.read.keys import RECORD_KEY, key_text
from pyhudi.read.lockstep import LockstepInput
from pyhudi.read.merge import Versions, columns_of, merge_versions
from pyhudi.read.metadata_cache import FOOTER, LOG_LAYOUT, METADATA_CACHE, FileKey
from pyhudi.read.sources import (
    SOFT_DELETE,
    MemoryInput,
    ParquetInput,
    ReadSpec,
    block_input,
    filter_versions,
    slice_versions,
)
from pyhudi.read.window import merge_window
from pyhudi.storage.fs import Storage
from pyhudi.storage.parquet import parquet_file
from pyhudi.value import Value

if TYPE_CHECKING:
    import pyarrow.parquet as pq

LOCAL_BUFFER, REMOTE_BUFFER = 64 << 10, 8 << 20
"""Read buffer per column chunk: column chunks are streamed, not loaded whole (small buffers
locally — measured as fast as whole-chunk reads; large ones on object stores, one request each)."""

STRATEGIES = ("auto", "hash")


class FamilyScan(Value):
    """One family's part of a scan: the columns it supplies and how its versions merge."""

    family: str | None
    fields: tuple[pa.Field, ...]
    event_time: bool
    ordering_field: str | None
    ordering_type: pa.DataType | None = None

    def __init__(self, family: str | None, fields: tuple[pa.Field, ...], event_time: bool,
                 ordering_field: str | None, ordering_type: pa.DataType | None = None) -> None:
        self._set(family=family, fields=fields, event_time=event_time, ordering_field=ordering_field,
                  ordering_type=ordering_type)


class OpenedBase:
    """A base file of one task: its footer, and a fingerprint of its key column.

    The file is opened on first use (a family proven redundant by a cached verdict is never
    opened); its footer comes from the :data:`~pyhudi.read.metadata_cache.METADATA_CACHE` when
    ``file_key`` identifies the file. The fingerprint — per row group the row count, codec and
    raw bytes of the record-key column chunk — is equal for base files holding the same keys in
    the same layout (families written by one commit). Equal fingerprints prove equal keys
    without decoding them.
    """

    def __init__(self, storage: Storage, relpath: str, files: ExitStack, memory_map: bool = False,
                 file_key: FileKey | None = None) -> None:
        self.storage, self.relpath, self.file_key = storage, relpath, file_key
        self._files, self._memory_map = files, memory_map
        self._parquet: pq.ParquetFile | None = None
        self._fingerprint: KeyFingerprint | None | bool = False

    @property
    def parquet(self) -> pq.ParquetFile:
        if self._parquet is None:
            self._parquet = self._open()
        return self._parquet

    def _open(self) -> pq.ParquetFile:
        storage, metadata = self.storage, METADATA_CACHE.footer(self.file_key)
        if self._memory_map and storage.is_local:
            self.source = self._files.enter_context(_memory_map(storage, self.relpath))
            parquet = parquet_file(self.source, pre_buffer=False, metadata=metadata)
        else:
            self.source = self._files.enter_context(storage.open_input(self.relpath))
            buffer = LOCAL_BUFFER if storage.is_local else REMOTE_BUFFER
            parquet = parquet_file(self.source, buffer_size=buffer, pre_buffer=False, metadata=metadata)
        if metadata is None:
            METADATA_CACHE.put_footer(self.file_key, parquet.metadata)
        return parquet

    @property
    def soft_deletes(self) -> bool:
        """Whether the file has Hudi's soft-delete column (its rows may be deleted)."""
        return SOFT_DELETE in self.parquet.metadata.schema.names

    def key_fingerprint(self) -> KeyFingerprint | None:
        if self._fingerprint is False:
            self._fingerprint = self._compute_fingerprint()
        return self._fingerprint

    def _compute_fingerprint(self) -> KeyFingerprint | None:
        metadata = self.parquet.metadata
        names = metadata.schema.names
        if RECORD_KEY not in names:
            return None
        leaf = names.index(RECORD_KEY)
        layout, extents = [], []
        for i in range(metadata.num_row_groups):
            chunk = metadata.row_group(i).column(leaf)
            start = chunk.data_page_offset
            if chunk.has_dictionary_page and chunk.dictionary_page_offset is not None:
                start = min(start, chunk.dictionary_page_offset)
            layout.append((metadata.row_group(i).num_rows, chunk.compression, chunk.total_compressed_size))
            extents.append((start, chunk.total_compressed_size))
        return KeyFingerprint(tuple(layout), self.source, tuple(extents), self.file_key)


def file_key(storage: Storage, data_file: BaseFile | LogFile) -> FileKey:
    """The identity of a listed data file for the metadata cache (path, size, modification time):
    the absolute local path, or the full URI of a remote file."""
    return file_identity(storage, data_file.relpath, data_file.size, data_file.mtime_ns)


def file_identity(storage: Storage, relpath: str, size: int | None, mtime_ns: int | None) -> FileKey:
    """:func:`file_key` of a file known by its path, size and modification time (as a listing
    gives them; a writer that has just written the file)."""
    where = storage.root if storage.is_local else storage.base_uri.rstrip("/")
    return f"{where}/{relpath}", size, mtime_ns


def _memory_map(storage: Storage, relpath: str) -> pa.MemoryMappedFile:
    """A local file mapped read-only: Parquet pages are read without a copy. Only for reads
    that keep their whole result anyway (the mapped pages a scan touches stay in its resident
    memory until the file is closed, which would make a streaming scan's memory grow with the
    file group)."""
    path = storage.full_path(relpath)
    try:
        return pa.memory_map(path)
    except OSError as exc:
        raise StorageError(f"cannot open {path}: {exc}") from exc


class KeyFingerprint:
    """Row-group layout plus the extents of the raw key column chunks; equal means the same keys
    in the same order.

    The chunks are compared only when two layouts are equal, piece by piece (memory stays
    bounded whatever the size of the file group's key column).
    """

    __slots__ = ("extents", "file_key", "layout", "source")

    PIECE = 1 << 20

    def __init__(self, layout: tuple, source: pa.NativeFile, extents: tuple[tuple[int, int], ...],
                 file_key: FileKey | None = None) -> None:
        self.layout, self.source, self.extents, self.file_key = layout, source, extents, file_key

    def __hash__(self) -> int:
        return hash(self.layout)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KeyFingerprint) or self.layout != other.layout:
            return False
        if self is other or (self.file_key is not None and self.file_key == other.file_key):
            return True
        known = METADATA_CACHE.same_keys(self.file_key, other.file_key)
        if known is None:
            known = self._bytes_equal(other)
            METADATA_CACHE.put_same_keys(self.file_key, other.file_key, known)
        return known

    def _bytes_equal(self, other: KeyFingerprint) -> bool:
        for (start, size), (other_start, _) in zip(self.extents, other.extents):
            for at in range(0, size, self.PIECE):
                n = min(self.PIECE, size - at)
                if not _read(self.source, start + at, n).equals(_read(other.source, other_start + at, n)):
                    return False
        return True


def _read(source: pa.NativeFile, offset: int, size: int) -> pa.Buffer:
    source.seek(offset)
    return source.read_buffer(size)


def slice_inputs(storage: Storage, file_slice: FileSlice, spec: ReadSpec, schema: pa.Schema,
                 visibility: Visibility, files: ExitStack, base_only: bool = False,
                 opened: dict[str, OpenedBase] | None = None, sorted_cache: dict | None = None,
                 with_base: bool = True, skip_corrupt: bool = False, map_logs: bool = True,
                 logs_opened: dict[str, list] | None = None) -> list:
    """The inputs of a file slice in processing order (base file, then visible log blocks).

    ``opened`` holds base files already opened (their footers read) by the caller;
    ``logs_opened`` the blocks of log files opened for another slice of the same file group (a
    full-row log is in every family's slice: opened, and its Parquet footer parsed, once);
    ``sorted_cache`` shares sortedness checks between base files with equal key fingerprints;
    ``with_base=False`` leaves the base file out (the caller adds :func:`base_input` if needed);
    ``map_logs=False`` reads log files by byte ranges instead of mapping them.
    """
    inputs: list = []
    if file_slice.base_file is not None and with_base:
        inputs.append(base_input(storage, file_slice, spec, schema, files, opened, sorted_cache))
    if base_only:
        return inputs
    blocks = []
    for log in file_slice.log_files:
        found = logs_opened.get(log.relpath) if logs_opened is not None else None
        if found is None:
            key = file_key(storage, log)
            found = [(log, key, block) for block in _log_blocks(storage, log, key, files, skip_corrupt, map_logs)]
            if logs_opened is not None:
                logs_opened[log.relpath] = found
        blocks.extend(found)
    rolled_back = {b.target_instant_time for _, _, b in blocks
                   if isinstance(b, CommandBlock) and b.target_instant_time}
    for log, key, block in blocks:
        if not isinstance(block, (DataBlock, DeleteBlock)):
            continue  # command blocks were applied above; CDC / HFile blocks hold no table rows
        instant = block.instant_time
        if instant in rolled_back or not visibility.is_visible(instant):
            continue  # written by an instant that never completed (or is after as_of)
        arrow_schema = None
        if isinstance(block, ParquetDataBlock):
            _parquet_block_footer(key, block)
            arrow_schema = _arrow_schema(f"block@{block.offset}", key, block.parquet_file())
        source = block_input(block, spec, schema, f"{log.relpath}@{block.offset}", arrow_schema)
        source.block_key, source.block_instant = (key, block.offset), instant
        if isinstance(block, ParquetDataBlock) and block.content_range is not None:  # (read.replay)
            source.content_range = (log.relpath, log.size, map_logs, *block.content_range)
        source.written_positions = written_positions(block)
        inputs.append(source)
    return inputs


def base_input(storage: Storage, file_slice: FileSlice, spec: ReadSpec, schema: pa.Schema, files: ExitStack,
               opened: dict[str, OpenedBase] | None = None, sorted_cache: dict | None = None) -> ParquetInput:
    """The input of a slice's base file (opened by the caller when in ``opened``)."""
    relpath = file_slice.base_file.relpath
    base = (opened or {}).get(relpath) or OpenedBase(storage, relpath, files,
                                                    file_key=file_key(storage, file_slice.base_file))
    parquet = base.parquet
    source = ParquetInput(parquet, relpath, spec, schema, base.key_fingerprint, sorted_cache,
                          arrow_schema=_arrow_schema(FOOTER, base.file_key, parquet))
    source.file_key = base.file_key
    source.is_base = True
    source.instant = file_slice.base_file.instant
    source.opened_as = (relpath, base._memory_map)  # (how read.replay opens it again)
    return source


def written_positions(block: DataBlock | DeleteBlock) -> tuple[str, str] | None:
    """A Parquet or Avro data block's ``RECORD_POSITIONS`` header and the instant of the base
    file it refers to (``BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS``), when the writer recorded
    both (decoded only if the positional merge applies: :mod:`pyhudi.read.positions`)."""
    if not isinstance(block, (ParquetDataBlock, AvroDataBlock)):
        return None
    text = block.header.get(HeaderKey.RECORD_POSITIONS)
    instant = block.header.get(HeaderKey.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS)
    return (text, instant) if text and instant else None


def _arrow_schema(kind: str, key: FileKey | None, parquet: pq.ParquetFile) -> pa.Schema:
    """The Arrow schema of a Parquet file's footer (``ParquetFile.schema_arrow`` converts it on
    every call), kept in the metadata cache beside the footer."""
    kind = f"arrow:{kind}"
    schema = METADATA_CACHE.get(kind, key)
    if schema is None:
        schema = parquet.schema_arrow
        METADATA_CACHE.put(kind, key, schema, 64 * len(schema))
    return schema


def _log_blocks(storage: Storage, log: LogFile, key: FileKey, files: ExitStack, skip_corrupt: bool = False,
                memory_map: bool = True) -> list:
    """The blocks of a log file; their framing read once per file (the metadata cache). A corrupt
    block inside what a completed commit wrote fails the read (:mod:`pyhudi.read.damage`)."""
    reader = files.enter_context(LogReader(storage, log.relpath, layout=METADATA_CACHE.get(LOG_LAYOUT, key),
                                           size=log.size, memory_map=memory_map))
    blocks = list(reader)
    if log.committed:
        check_log(log, blocks, reader.corrupt_blocks, skip_corrupt, storage.base_uri)
    if reader.layout is not None:
        METADATA_CACHE.put(LOG_LAYOUT, key, reader.layout, sum(entry.nbytes for entry in reader.layout))
    return blocks


def _parquet_block_footer(key: FileKey, block: ParquetDataBlock) -> None:
    """Open a Parquet data block with its footer from the metadata cache (parsed once per block)."""
    kind = f"block@{block.offset}"
    metadata = METADATA_CACHE.get(kind, key)
    parquet = block.parquet_file_with_footer(metadata)
    if metadata is None:
        METADATA_CACHE.put(kind, key, parquet.metadata, parquet.metadata.serialized_size)


def read_family(inputs: list, scan: FamilyScan, batch_size: int, need_sorted: bool,
                strategy: str = "auto", metrics: dict | None = None) -> FamilyStream:
    """The family's latest live rows (``_key`` + ``scan.fields``), in batches, sorted by key
    unless a single input is passed through with ``need_sorted=False``.

    ``metrics`` (optional) counts the strategy used under ``"strategy.<name>"``.
    """
    if not inputs:
        return FamilyStream(iter(()))
    fields = list(scan.fields)
    if strategy == "auto" and len(inputs) == 1 and inputs[0].streamable and not need_sorted:
        chosen, rows = "pass_through", _pass_through(inputs[0], fields, batch_size)
    elif strategy == "auto" and all(i.sorted_by_key(batch_size) for i in inputs):
        chosen, rows = "sort_merge", _sort_merge(inputs, scan, fields, batch_size)
    else:
        chosen, rows = "hash_merge", _hash_merge(inputs, scan, fields, batch_size)
    if metrics is not None:
        metrics[f"strategy.{chosen}"] = metrics.get(f"strategy.{chosen}", 0) + 1
    return FamilyStream(rows)


class FamilyStream:
    """A family's rows as an iterator of tables that tells, once a table is taken, whether it
    was the last one (``done``): a join need not stop its window before the end of a stream
    that has nothing more to give."""

    def __init__(self, tables: Iterator[tuple[pa.Table, bool]]) -> None:
        self._tables = tables
        self.done = False

    def __iter__(self) -> FamilyStream:
        return self

    def __next__(self) -> pa.Table:
        table, self.done = next(self._tables)
        return table


def _pass_through(source: ParquetInput | LockstepInput, fields: list[pa.Field],
                  batch_size: int) -> Iterator[tuple[pa.Table, bool]]:
    for v in source.chunks(batch_size):
        last = v.last
        if np.any(v.is_delete):  # soft-deleted rows
            v = _without_soft_deletes(v)
        if len(v.keys):
            yield _project_versions(v, fields, pa.schema([pa.field("_key", v.keys.type), *fields])), last


def _without_soft_deletes(v: Versions) -> Versions:
    return filter_versions(v, ~np.broadcast_to(np.asarray(v.is_delete, dtype=bool), (len(v.keys),)))


def _project_versions(v: Versions, fields: list[pa.Field], schema: pa.Schema) -> pa.Table:
    arrays = [v.keys]
    available = columns_of(v.data)
    for field in fields:
        column = available.get(field.name)
        if column is not None:
            arrays.append(column.cast(field.type) if column.type != field.type else column)
        else:
            arrays.append(pa.nulls(len(v.keys), field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


class _Cursor:
    """The current batch of one sorted input, consumed range by range (``final``: the input has
    no batch after it)."""

    def __init__(self, chunks: Iterator[Versions]) -> None:
        self._chunks = chunks
        self.buffer: Versions | None = None
        self.final = False
        self._advance()

    def _advance(self) -> None:
        for chunk in self._chunks:
            if len(chunk.keys):
                self.buffer, self.final = chunk, chunk.last
                return
            if chunk.last:
                break
        self.buffer = None

    @property
    def last_key(self) -> str:
        return key_text(self.buffer.keys[-1])

    def take_through(self, bound: str | None) -> Versions | None:
        """The buffered rows with key <= ``bound`` (None: all); refills when the buffer is used up."""
        buffer = self.buffer
        if buffer is None:
            return None
        keys = buffer.keys
        n = len(keys) if bound is None else bisect.bisect_right(keys, bound, key=key_text)
        if n == 0:
            return None
        if n == len(keys):
            self._advance()
            return buffer
        self.buffer = slice_versions(buffer, n, len(keys))
        return slice_versions(buffer, 0, n)


def _sort_merge(inputs: list, scan: FamilyScan, fields: list[pa.Field],
                batch_size: int) -> Iterator[tuple[pa.Table, bool]]:
    """Merge sorted inputs range by range (see the module docstring). A range ends at the
    smallest last key of the inputs that have more batches to come: once every input holds its
    final batch, one range takes the rest."""
    cursors = [_Cursor(i.chunks(batch_size)) for i in inputs]
    learning = _blocks_of_base(inputs)
    within = [True] if learning else None
    base_first = bool(getattr(inputs[0], "is_base", False))
    while True:
        active = [c for c in cursors if c.buffer is not None]
        if not active:
            break
        bounding = [c for c in active if not c.final]
        bound = min(c.last_key for c in bounding) if bounding else None
        pieces = [c.take_through(bound) for c in cursors]
        merged = merge_window(pieces, fields, scan.event_time, scan.ordering_type, within, base_first)
        if merged.num_rows:
            yield merged, all(c.buffer is None for c in cursors)
    if learning and within[0]:  # every key of the log blocks was found in the base file
        base_key, blocks = learning
        for block in blocks:
            METADATA_CACHE.put_block_within(block.block_key, base_key)


def _blocks_of_base(inputs: list) -> tuple | None:
    """(base file key, block inputs) when ``inputs`` are a whole base file and its log blocks,
    read without restriction: a merge then learns whether the blocks' keys are all the base's
    (:meth:`~pyhudi.read.metadata_cache.MetadataCache.block_within`)."""
    if len(inputs) < 2 or not isinstance(inputs[0], (ParquetInput, LockstepInput)):
        return None
    lead = inputs[0].lead if isinstance(inputs[0], LockstepInput) else inputs[0]
    if lead.file_key is None or not lead.spec.prefilter.unrestricted:
        return None
    blocks = inputs[1:]
    return (lead.file_key, blocks) if all(b.block_key is not None for b in blocks) else None


def _hash_merge(inputs: list, scan: FamilyScan, fields: list[pa.Field],
                batch_size: int) -> Iterator[tuple[pa.Table, bool]]:
    per_input = [list(i.chunks(batch_size, verify=False)) for i in inputs]
    versions = [v for chunks in per_input for v in chunks]
    base_rows = sum(len(v.keys) for v in per_input[0]) if getattr(inputs[0], "is_base", False) else 0
    merged = merge_versions(versions, fields, scan.event_time, scan.ordering_type, base_rows=base_rows)
    for start in range(0, merged.num_rows, batch_size):
        yield merged.slice(start, batch_size), start + batch_size >= merged.num_rows


__all__ = ["STRATEGIES", "FamilyScan", "FamilyStream", "MemoryInput", "OpenedBase", "ParquetInput", "base_input", "read_family",
           "slice_inputs"]

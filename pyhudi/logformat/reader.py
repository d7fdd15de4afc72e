"""Reading log files: a lazy block iterator that survives torn and corrupt blocks.

A block is accepted only if its framing checks out: magic, a block length that stays inside the
file, a trailing reverse pointer equal to ``blockLen + 6``, header/content/footer lengths that
add up, and ``#HUDI#`` (or end of file, or a torn prefix of the magic) right after it. Anything
else is a corrupt block: it is counted, never decoded, and reading resumes at the next magic
found by a forward ``bytes.find`` scan. A crash mid-append therefore costs only the torn block.
"""

from __future__ import annotations

import io
import struct
from typing import Iterator

import pyarrow as pa

from pyhudi.errors import LogFormatError
from pyhudi.logformat.block import (
    _U64,
    LOG_FORMAT_VERSION,
    MAGIC,
    BlockContent,
    BlockType,
    CorruptBlock,
    LogBlock,
    decode_header,
)
from pyhudi.logformat.data_block import block_from_content
from pyhudi.storage.fs import Storage
from pyhudi.value import Record, Value

_HEAD = len(MAGIC) + 8
"""Magic plus the u64 block length."""
_MIN_BLOCK_LEN = 4 + 4 + 4 + 8 + 4 + 8
"""Smallest blockLen: version, type, empty header, contentLen, empty footer, trailer."""
_SCAN_CHUNK = 1 << 20
_READ_AHEAD = 64 << 10
_SMALL_FILE = 8 << 20
"""Remote files up to this size are fetched whole: one request beats many ranged reads."""


class _RangeFile(io.RawIOBase):
    """A read-only, seekable window onto ``[offset, offset + length)`` of a random-access file."""

    def __init__(self, file: pa.NativeFile, offset: int, length: int) -> None:
        super().__init__()
        self._file, self._start, self._length, self._pos = file, offset, length, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._length}[whence]
        self._pos = max(0, base + pos)
        return self._pos

    def readinto(self, buffer) -> int:
        n = max(0, min(len(buffer), self._length - self._pos))
        if n == 0:
            return 0
        data = self._file.read_at(n, self._start + self._pos)
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)


class FileSource:
    """Random access to one log file's bytes.

    Bytes in memory and local files (memory-mapped, unless ``memory_map=False``) are served as
    zero-copy buffer slices; other files go through ranged reads, so a Parquet block reads only
    its footer and the row groups and columns asked for. A source given a ``Storage`` reopens its
    file if needed, so blocks can be decoded after the reader that found them was closed.
    """

    def __init__(
        self,
        storage: Storage | None = None,
        relpath: str | None = None,
        *,
        file: pa.NativeFile | None = None,
        data: bytes | pa.Buffer | None = None,
        size: int | None = None,
        memory_map: bool = True,
    ) -> None:
        self.storage, self.relpath = storage, relpath
        self._listed_size, self._memory_map = size, memory_map
        self._file: pa.NativeFile | None = file
        self._buffer: pa.Buffer | None = None
        if data is not None:
            self._buffer = data if isinstance(data, pa.Buffer) else pa.py_buffer(data)
        elif file is not None:
            self.size = file.size()
        elif storage is not None and relpath is not None:
            self._open_storage()
        else:
            raise LogFormatError("a log source needs a storage and path, a file, or bytes")
        if self._buffer is not None:
            self.size = self._buffer.size

    def _open_storage(self) -> None:
        size = self._listed_size if self._listed_size is not None else self.storage.size(self.relpath)
        if size == 0:
            self._buffer = pa.py_buffer(b"")
        elif self.storage.is_local and self._memory_map:
            with pa.memory_map(self.storage.full_path(self.relpath), "r") as mm:
                self._buffer = mm.read_buffer()  # the mapping lives as long as this buffer
        elif self.storage.is_local:
            self._file = self.storage.open_input(self.relpath)
        elif size <= _SMALL_FILE:
            self._buffer = pa.py_buffer(self.storage.read(self.relpath))
        else:
            self._file = self.storage.open_input(self.relpath)
        if self._buffer is not None and self._buffer.size > size:  # (appended since listed: read what was)
            self._buffer = self._buffer.slice(0, size)
        self.size = size if self._buffer is None else self._buffer.size

    def _handle(self) -> pa.NativeFile:
        if self._file is None or self._file.closed:
            if self.storage is None:
                raise LogFormatError("the log file was closed; reopen the reader to decode its blocks")
            self._file = self.storage.open_input(self.relpath)
        return self._file

    def read_buffer(self, offset: int, length: int) -> pa.Buffer:
        if self._buffer is not None:
            return self._buffer.slice(offset, length)
        return pa.py_buffer(self._handle().read_at(length, offset))

    def read_bytes(self, offset: int, length: int) -> bytes:
        length = max(0, min(length, self.size - offset))
        return self.read_buffer(offset, length).to_pybytes()

    def open_range(self, offset: int, length: int) -> pa.NativeFile:
        if self._buffer is not None:
            return pa.BufferReader(self._buffer.slice(offset, length))
        return pa.PythonFile(_RangeFile(self._handle(), offset, length), mode="r")

    def find(self, pattern: bytes, start: int) -> int:
        """Offset of the next ``pattern`` at or after ``start``, or -1 (chunked ``bytes.find``)."""
        overlap = len(pattern) - 1
        pos = start
        while pos < self.size:
            chunk = self.read_bytes(pos, _SCAN_CHUNK + overlap)
            hit = chunk.find(pattern)
            if hit >= 0:
                return pos + hit
            pos += _SCAN_CHUNK
        return -1

    def close(self) -> None:
        if self._file is not None and self.storage is not None:
            self._file.close()


class _Corrupt(Exception):
    """Internal: the block at the current position fails a framing check."""


class _Cursor:
    """Sequential reads inside one block's bounds, with read-ahead."""

    def __init__(self, source: FileSource, pos: int, end: int) -> None:
        self.source, self.pos, self.end = source, pos, end
        self._buf, self._buf_start = b"", pos

    def take(self, n: int) -> bytes:
        if self.pos + n > self.end:
            raise _Corrupt(f"field runs past the block end ({self.pos}+{n} > {self.end})")
        rel = self.pos - self._buf_start
        if rel < 0 or rel + n > len(self._buf):
            self._buf_start = self.pos
            self._buf = self.source.read_bytes(self.pos, min(max(n, _READ_AHEAD), self.end - self.pos))
            rel = 0
        self.pos += n
        return self._buf[rel : rel + n]

    def u32(self) -> int:
        return struct.unpack(">I", self.take(4))[0]

    def u64(self) -> int:
        return struct.unpack(">Q", self.take(8))[0]

    def header(self) -> dict:
        count = self.u32()
        raw = [struct.pack(">I", count)]
        for _ in range(count):
            key_len = self.take(8)
            raw.append(key_len)
            raw.append(self.take(struct.unpack(">II", key_len)[1]))
        try:
            return decode_header(b"".join(raw))[0]
        except LogFormatError as exc:
            raise _Corrupt(str(exc)) from exc


class BlockLayout(Value):
    """Where one block of a log file sits and what its framing said: enough to rebuild the block
    over the same bytes without reading its framing again (``block_type`` None: corrupt bytes)."""

    offset: int
    size: int
    block_type: int | None
    header: dict
    footer: dict
    content_offset: int
    content_length: int

    def __init__(self, offset: int, size: int, block_type: int | None, header: dict, footer: dict,
                 content_offset: int, content_length: int) -> None:
        self._set(offset=offset, size=size, block_type=block_type, header=header, footer=footer,
                  content_offset=content_offset, content_length=content_length)

    @property
    def nbytes(self) -> int:
        """About how much memory the layout holds (headers carry the block's schema)."""
        return 96 + sum(len(v) for v in self.header.values()) + sum(len(v) for v in self.footer.values())


class LogReader(Record):
    """Iterate the blocks of one log file, lazily and in file order.

    ``LogReader(storage, relpath)``, ``LogReader(file=native_file)`` or ``LogReader(data=bytes)``.
    Corrupt blocks are skipped and recorded in :attr:`corrupt_blocks` (yielded too when
    ``include_corrupt``); an empty file has no blocks. Use as a context manager to close a
    remote file (or a local one read with ``memory_map=False``); mapped and in-memory sources
    need no closing.

    A complete iteration leaves the file's :attr:`layout` (every block's place and framing);
    given back as ``layout`` for the same bytes, the blocks are rebuilt from it without reading
    their framing again (readers keep layouts per file, :mod:`pyhudi.read.metadata_cache`).

    Raises (while iterating):
        LogFormatError: a well-framed block of an unknown type or framing version.
    """

    storage: Storage | None = None
    relpath: str | None = None
    file: pa.NativeFile | None = None
    data: bytes | pa.Buffer | None = None
    include_corrupt: bool = False
    layout: list[BlockLayout] | None = None
    size: int | None = None
    """The file's size when listed (saves asking the storage; a file that grew since is read up
    to that size, as listed)."""
    memory_map: bool = True
    """Map a local file (blocks served as zero-copy slices); False reads the byte ranges asked
    for, which costs less when only a few columns of its blocks are read."""

    def __init__(self, storage: Storage | None = None, relpath: str | None = None, file: pa.NativeFile | None = None,
                 data: bytes | pa.Buffer | None = None, include_corrupt: bool = False,
                 layout: list[BlockLayout] | None = None, size: int | None = None, memory_map: bool = True) -> None:
        self._set(storage=storage, relpath=relpath, file=file, data=data, include_corrupt=include_corrupt,
                  layout=layout, size=size, memory_map=memory_map)
        self.corrupt_blocks: list[CorruptBlock] = []
        self.source = FileSource(storage, relpath, file=file, data=data, size=size, memory_map=memory_map)

    def __enter__(self) -> LogReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.source.close()

    @property
    def corrupt_count(self) -> int:
        return len(self.corrupt_blocks)

    def __iter__(self) -> Iterator[LogBlock]:
        if self.layout is not None:
            yield from self._rebuilt()
            return
        self.corrupt_blocks = []
        layout: list[BlockLayout] = []
        source, pos = self.source, 0
        while pos < source.size:
            try:
                block = self._read_block_at(pos)
            except _Corrupt:
                next_magic = source.find(MAGIC, pos + 1)
                end = next_magic if next_magic >= 0 else source.size
                corrupt = CorruptBlock(pos, end - pos, source)
                self.corrupt_blocks.append(corrupt)
                layout.append(BlockLayout(pos, end - pos, None, {}, {}, pos, end - pos))
                if self.include_corrupt:
                    yield corrupt
                pos = end
                continue
            content = block._content
            layout.append(BlockLayout(block.offset, block.size, int(block.block_type), dict(block.header),
                                      dict(block.footer), content.offset, content.length))
            yield block
            pos = block.offset + block.size
        self.layout = layout

    def _rebuilt(self) -> Iterator[LogBlock]:
        self.corrupt_blocks = []
        for entry in self.layout:
            if entry.block_type is None:
                corrupt = CorruptBlock(entry.offset, entry.size, self.source)
                self.corrupt_blocks.append(corrupt)
                if self.include_corrupt:
                    yield corrupt
                continue
            block = block_from_content(entry.block_type, entry.header, entry.footer,
                                       BlockContent(self.source, entry.content_offset, entry.content_length))
            block.offset, block.size = entry.offset, entry.size
            yield block

    def blocks(self) -> list[LogBlock]:
        """All blocks (corrupt ones only if ``include_corrupt``)."""
        return list(self)

    def _read_block_at(self, pos: int) -> LogBlock:
        source = self.source
        head = source.read_bytes(pos, _HEAD)
        if len(head) < _HEAD or head[: len(MAGIC)] != MAGIC:
            raise _Corrupt("no magic / torn block start")
        (block_len,) = _U64.unpack_from(head, len(MAGIC))
        end = pos + _HEAD + block_len
        if block_len < _MIN_BLOCK_LEN or end > source.size:
            raise _Corrupt(f"block length {block_len} runs past the end of the file")
        (total,) = _U64.unpack(source.read_bytes(end - 8, 8))
        if total != block_len + len(MAGIC):
            raise _Corrupt(f"reverse pointer {total} != block length {block_len} + 6")
        following = source.read_bytes(end, len(MAGIC))
        torn_next = end + len(following) == source.size and MAGIC.startswith(following)
        if following and following != MAGIC and not torn_next:
            raise _Corrupt("block is not followed by a magic or the end of the file")
        cursor = _Cursor(source, pos + _HEAD, end - 8)
        version = cursor.u32()
        block_type = cursor.u32()
        header = cursor.header()
        content_len = cursor.u64()
        content_offset = cursor.pos
        if content_offset + content_len > cursor.end:
            raise _Corrupt(f"content length {content_len} runs past the block end")
        cursor.pos = content_offset + content_len
        footer = cursor.header()
        if cursor.pos != cursor.end:
            raise _Corrupt("header, content and footer do not add up to the block length")
        if version != LOG_FORMAT_VERSION:
            raise LogFormatError(f"log block at offset {pos} has unsupported format version {version}")
        if block_type == BlockType.CORRUPT:
            raise _Corrupt("a block stored with the CORRUPT type")
        block = block_from_content(block_type, header, footer, BlockContent(source, content_offset, content_len))
        block.offset, block.size = pos, end - pos
        return block


def read_log_blocks(storage: Storage, relpath: str, *, include_corrupt: bool = True) -> list[LogBlock]:
    """Every block of a log file, corrupt ones included as :class:`CorruptBlock` by default."""
    return LogReader(storage, relpath, include_corrupt=include_corrupt).blocks()


__all__ = ["BlockLayout", "FileSource", "LogReader", "read_log_blocks"]

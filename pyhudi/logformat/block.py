"""Log blocks: the type and header enums, and the content codec of every block type.

A block is a header map plus content. Blocks built for writing hold their data (an Arrow table,
delete keys); blocks returned by :mod:`pyhudi.logformat.reader` hold only a :class:`BlockContent`
byte range and decode it on first use, so listing the blocks of a file never parses a Parquet
footer or an Avro record. The data blocks (Parquet, Avro) are in
:mod:`pyhudi.logformat.data_block`. The framing around the content (magic, lengths, reverse pointer) is in
:mod:`pyhudi.logformat.writer` and :mod:`pyhudi.logformat.reader`.
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import Any, ClassVar, Mapping, Protocol, Sequence

import pyarrow as pa

from pyhudi.errors import LogFormatError, SchemaError
from pyhudi.logformat.deletes import decode_delete_records, encode_delete_records

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1
"""The only framing version written since Hudi 0.x: block length first, reverse pointer last."""
CONTENT_VERSION = 3
"""Version word at the head of AVRO_DATA and DELETE content."""

_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")


class BlockType(IntEnum):
    """Block type ordinals (``HoodieLogBlockType``); append-only in Hudi."""

    COMMAND = 0
    DELETE = 1
    CORRUPT = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC = 6


class HeaderKey(IntEnum):
    """Header/footer key ordinals (``HeaderMetadataType``); append-only in Hudi."""

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


class CommandType(IntEnum):
    """Values of the COMMAND_BLOCK_TYPE header (stored as the decimal ordinal string)."""

    ROLLBACK = 0


def normalize_header(header: Mapping[HeaderKey | int, str] | None) -> dict:
    """Copy a header map with enum keys (unknown ordinals kept as ints) and str values."""
    out: dict = {}
    for key, value in (header or {}).items():
        if isinstance(key, str):
            try:
                key = HeaderKey[key]
            except KeyError:
                raise LogFormatError(f"unknown log block header key {key!r}") from None
        key = int(key)
        if not isinstance(value, str):
            raise LogFormatError(f"header {key} value must be a string, got {type(value).__name__}")
        out[HeaderKey(key) if key in HeaderKey._value2member_map_ else key] = value
    return out


def encode_header(header: Mapping[HeaderKey | int, str]) -> bytes:
    """``u32 count`` then per entry ``u32 key, u32 byteLen, UTF-8 bytes``, keys in ordinal order."""
    parts = [_U32.pack(len(header))]
    for key in sorted(header, key=int):
        data = header[key].encode("utf-8")
        parts.append(_U32.pack(int(key)))
        parts.append(_U32.pack(len(data)))
        parts.append(data)
    return b"".join(parts)


def decode_header(data: bytes | memoryview, pos: int = 0) -> tuple[dict, int]:
    """Parse a header/footer map at ``pos``; returns (map, position after it).

    Raises:
        LogFormatError: the map runs past ``data`` or holds invalid UTF-8.
    """
    try:
        (count,) = _U32.unpack_from(data, pos)
        pos += 4
        out: dict = {}
        for _ in range(count):
            key, length = struct.unpack_from(">II", data, pos)
            pos += 8
            if pos + length > len(data):
                raise LogFormatError("header value runs past the end of the block")
            value = bytes(data[pos : pos + length]).decode("utf-8")
            pos += length
            out[HeaderKey(key) if key in HeaderKey._value2member_map_ else key] = value
        return out, pos
    except (struct.error, UnicodeDecodeError) as exc:
        raise LogFormatError(f"malformed log block header: {exc}") from exc


# ------------------------------------------------------------------------------ content access
class ContentSource(Protocol):
    """Random access to the bytes of a log file (see ``reader.FileSource``)."""

    def read_buffer(self, offset: int, length: int) -> pa.Buffer: ...

    def open_range(self, offset: int, length: int) -> pa.NativeFile: ...


class BlockContent:
    """The content byte range of a block that was read; loaded only when asked for."""

    __slots__ = ("source", "offset", "length")

    def __init__(self, source: ContentSource, offset: int, length: int) -> None:
        self.source, self.offset, self.length = source, offset, length

    def buffer(self) -> pa.Buffer:
        return self.source.read_buffer(self.offset, self.length)

    def open(self) -> pa.NativeFile:
        """A random-access file over just the content (Parquet reads only what it needs)."""
        return self.source.open_range(self.offset, self.length)


# ------------------------------------------------------------------------------ blocks
class LogBlock:
    """Base of all blocks: type, header, footer, and where a read block sits in its file.

    ``offset`` is the position of the block's magic and ``size`` the framed length (magic through
    reverse pointer); both are ``None`` for blocks built in memory.
    """

    block_type: ClassVar[BlockType]

    def __init__(self, header: Mapping[HeaderKey | int, str] | None = None, *, footer: Mapping | None = None):
        self.header: dict = normalize_header(header)
        self.footer: dict = normalize_header(footer)
        self.offset: int | None = None
        self.size: int | None = None
        self._content: BlockContent | None = None

    @classmethod
    def _from_content(cls, header: dict, footer: dict, content: BlockContent) -> LogBlock:
        block = cls.__new__(cls)
        LogBlock.__init__(block, header, footer=footer)
        block._content = content
        block._init_read()
        return block

    def _init_read(self) -> None:
        """Hook for subclasses to clear writer-side state on read blocks."""

    def __repr__(self) -> str:
        where = f" @{self.offset}+{self.size}" if self.offset is not None else ""
        return f"{type(self).__name__}(instant={self.instant_time!r}{where})"

    @property
    def instant_time(self) -> str | None:
        return self.header.get(HeaderKey.INSTANT_TIME)

    @property
    def content_length(self) -> int | None:
        return self._content.length if self._content is not None else None

    @property
    def content_range(self) -> tuple[int, int] | None:
        """Where a read block's content sits in its file: (offset, length); None when built in memory."""
        return (self._content.offset, self._content.length) if self._content is not None else None

    def content_bytes(self) -> bytes | pa.Buffer:
        """The raw content: as read from the file, or freshly encoded for a block to write."""
        if self._content is not None:
            return self._content.buffer()
        return self.encode_content()

    def encode_content(self) -> bytes | pa.Buffer:
        raise LogFormatError(f"{type(self).__name__} cannot be encoded")


class CommandBlock(LogBlock):
    """A command (rollback of an earlier block's instant); content is empty."""

    block_type = BlockType.COMMAND

    @classmethod
    def rollback(cls, instant_time: str, target_instant_time: str) -> CommandBlock:
        return cls(
            {
                HeaderKey.INSTANT_TIME: instant_time,
                HeaderKey.TARGET_INSTANT_TIME: target_instant_time,
                HeaderKey.COMMAND_BLOCK_TYPE: str(int(CommandType.ROLLBACK)),
            }
        )

    @property
    def command_type(self) -> CommandType | None:
        value = self.header.get(HeaderKey.COMMAND_BLOCK_TYPE)
        return CommandType(int(value)) if value is not None else None

    @property
    def target_instant_time(self) -> str | None:
        return self.header.get(HeaderKey.TARGET_INSTANT_TIME)

    def encode_content(self) -> bytes:
        return b""


class CorruptBlock(LogBlock):
    """Bytes between a bad block start and the next magic (or EOF); never decoded."""

    block_type = BlockType.CORRUPT

    def __init__(self, offset: int, size: int, source: ContentSource | None = None) -> None:
        super().__init__()
        self.offset, self.size = offset, size
        if source is not None:
            self._content = BlockContent(source, offset, size)


class HFileDataBlock(LogBlock):
    """An HFILE_DATA block (metadata-table logs); pyhudi keeps its content opaque."""

    block_type = BlockType.HFILE_DATA


class CdcDataBlock(LogBlock):
    """A CDC block; pyhudi keeps its content opaque."""

    block_type = BlockType.CDC


class DeleteBlock(LogBlock):
    """DELETE: ``u32 version=3, u32 length`` + one ``HoodieDeleteRecordList`` Avro datum.

    ``deletes`` (for writing) is an Arrow table with ``record_key`` and optional
    ``partition_path`` and ``ordering_value`` columns; see :mod:`pyhudi.logformat.deletes` for
    the decoded layout and the ordering-value rules.
    """

    block_type = BlockType.DELETE

    def __init__(
        self,
        deletes: pa.Table | None,
        header: Mapping[HeaderKey | int, str] | None = None,
        *,
        footer: Mapping | None = None,
    ) -> None:
        super().__init__(header, footer=footer)
        if deletes is not None and "record_key" not in deletes.column_names:
            raise SchemaError(f"delete table needs a 'record_key' column, got {deletes.column_names}")
        self._deletes = deletes

    def _init_read(self) -> None:
        self._deletes = None

    @classmethod
    def from_keys(
        cls,
        record_keys: Sequence[str] | pa.Array,
        instant_time: str,
        *,
        partition_paths: Sequence[str | None] | pa.Array | str | None = "",
        ordering_values: Sequence[Any] | pa.Array | None = None,
        header: Mapping[HeaderKey | int, str] | None = None,
    ) -> DeleteBlock:
        """Build a delete block; without ordering values every delete is IntWrapper(0)."""
        keys = pa.array(record_keys, pa.string()) if not isinstance(record_keys, pa.Array) else record_keys
        if partition_paths is None or isinstance(partition_paths, str):
            parts = pa.array([partition_paths] * len(keys), pa.string())
        else:
            parts = partition_paths if isinstance(partition_paths, pa.Array) else pa.array(partition_paths, pa.string())
        columns = {"record_key": keys, "partition_path": parts}
        if ordering_values is not None:
            columns["ordering_value"] = (
                ordering_values if isinstance(ordering_values, pa.Array) else pa.array(ordering_values)
            )
        full_header = {HeaderKey.INSTANT_TIME: instant_time, **normalize_header(header)}
        return cls(pa.table(columns), full_header)

    def encode_content(self) -> bytes:
        if self._deletes is None:
            raise LogFormatError("a delete block needs a table of keys to encode")
        datum = encode_delete_records(self._deletes)
        return _U32.pack(CONTENT_VERSION) + _U32.pack(len(datum)) + datum

    def deletes(self) -> pa.Table:
        """The deletes as Arrow: record_key, partition_path, ordering_type, ordering_value,
        is_default_ordering (see :func:`pyhudi.logformat.deletes.decode_delete_records`)."""
        data = self._content.buffer().to_pybytes() if self._content is not None else self.encode_content()
        if len(data) < 8:
            raise LogFormatError(f"delete block content too short ({len(data)} bytes)")
        version, length = struct.unpack_from(">II", data, 0)
        if version != CONTENT_VERSION:
            raise LogFormatError(f"unsupported delete block content version {version} (only 3 is read)")
        if 8 + length > len(data):
            raise LogFormatError(f"delete block datum length {length} runs past its content ({len(data)} bytes)")
        return decode_delete_records(data[8 : 8 + length])

    @property
    def num_rows(self) -> int:
        return self._deletes.num_rows if self._deletes is not None else self.deletes().num_rows


__all__ = [
    "MAGIC",
    "LOG_FORMAT_VERSION",
    "CONTENT_VERSION",
    "BlockType",
    "HeaderKey",
    "CommandType",
    "normalize_header",
    "encode_header",
    "decode_header",
    "ContentSource",
    "BlockContent",
    "LogBlock",
    "CommandBlock",
    "CorruptBlock",
    "HFileDataBlock",
    "CdcDataBlock",
    "DeleteBlock",
]

"""Log blocks: the type and header enums, and the content codec of every block type.

A block is a header map plus content. Blocks built for writing hold their data (an Arrow table,
delete keys); blocks returned by :mod:`pyhudi.logformat.reader` hold only a :class:`BlockContent`
byte range and decode it on first use, so listing the blocks of a file never parses a Parquet
footer or an Avro record. The framing around the content (magic, lengths, reverse pointer) is in
:mod:`pyhudi.logformat.writer` and :mod:`pyhudi.logformat.reader`.
"""

from __future__ import annotations

import io
import struct
from enum import IntEnum
from typing import Any, ClassVar, Iterator, Mapping, Protocol, Sequence

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.errors import LogFormatError, SchemaError
from pyhudi.logformat.deletes import decode_delete_records, encode_delete_records
from pyhudi.logformat.parquet_options import (  # noqa: F401  (re-exported)
    default_parquet_options,
    encode_parquet,
    parquet_options_cover,
    parquet_options_for,
)
from pyhudi.schema import (
    META_FIELDS,
    arrow_schema_from_avro,
    arrow_table_from_avro_records,
    avro_records_from_arrow,
    avro_schema_json,
    parse_avro_schema,
)

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


def _schema_json(header: Mapping, table: pa.Table | None, table_name: str) -> str:
    schema = header.get(HeaderKey.SCHEMA)
    if schema is not None:
        return schema
    if table is None:
        raise LogFormatError("a data block needs a SCHEMA header or a table to derive it from")
    return avro_schema_json(table.schema, table_name)


def _check_columns(table: pa.Table, schema_json: str) -> None:
    """Meta columns lead (or are absent), and the SCHEMA header names the table's columns."""
    names = table.schema.names
    present = [n for n in META_FIELDS if n in names]
    if present and tuple(names[: len(META_FIELDS)]) != META_FIELDS:
        raise SchemaError(f"meta columns must be the first five columns in order {list(META_FIELDS)}, got {names[:5]}")
    fields = [f["name"] for f in parse_avro_schema(schema_json).get("fields", [])]
    if fields != names:
        raise SchemaError(f"SCHEMA header fields {fields} differ from the block's columns {names}")


class DataBlock(LogBlock):
    """Common part of Parquet and Avro data blocks: an Arrow table plus its Avro SCHEMA header.

    For writing, pass the table (meta columns first) and a header with INSTANT_TIME; SCHEMA is
    derived from the table when absent (record naming from ``table_name``, as Hudi does).
    """

    def __init__(
        self,
        table: pa.Table | pa.RecordBatch | None,
        header: Mapping[HeaderKey | int, str] | None = None,
        *,
        footer: Mapping | None = None,
        table_name: str = "pyhudi",
    ) -> None:
        super().__init__(header, footer=footer)
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        self._table = table
        if table is not None:
            self.header[HeaderKey.SCHEMA] = _schema_json(self.header, table, table_name)
            _check_columns(table, self.header[HeaderKey.SCHEMA])

    def _init_read(self) -> None:
        self._table = None

    @property
    def schema_json(self) -> str | None:
        return self.header.get(HeaderKey.SCHEMA)

    @property
    def avro_schema(self) -> dict:
        if self.schema_json is None:
            raise LogFormatError(f"{self!r} has no SCHEMA header")
        return parse_avro_schema(self.schema_json)

    @property
    def is_partial(self) -> bool:
        return self.header.get(HeaderKey.IS_PARTIAL, "false").lower() == "true"

    def arrow_schema(self) -> pa.Schema:
        """The block's Arrow schema from its SCHEMA header (no content read)."""
        return arrow_schema_from_avro(self.avro_schema)

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        """Decoded rows; every concrete data block (Parquet, Avro) overrides this."""
        raise LogFormatError(f"{type(self).__name__} content cannot be decoded by pyhudi")

    def iter_batches(self, columns: Sequence[str] | None = None, batch_size: int = 65536) -> Iterator[pa.RecordBatch]:
        yield from self.read(columns).to_batches(max_chunksize=batch_size)

    @property
    def num_rows(self) -> int:
        return self.read().num_rows


def key_sorting_columns(table: pa.Table) -> list[pq.SortingColumn] | None:
    """``sorting_columns`` declaring the rows sorted by ``_hoodie_record_key``, if they are.

    Checked on the data (strictly increasing keys, one vectorised comparison), never assumed:
    readers trust the declaration to merge inputs by key ranges without re-reading the keys.
    Pass the result as ``sorting_columns=`` to ``pyarrow.parquet.write_table``.
    """
    names = table.schema.names
    if META_FIELDS[2] not in names:
        return None
    keys = table.column(META_FIELDS[2])
    if keys.null_count or not (pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type)):
        return None
    n = len(keys)
    if n > 1:
        keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
        if not pc.all(pc.less(keys.slice(0, n - 1), keys.slice(1))).as_py():
            return None
    return [pq.SortingColumn(names.index(META_FIELDS[2]))]


class ParquetDataBlock(DataBlock):
    """PARQUET_DATA: the content is a complete Parquet file (meta columns first).

    Extra keyword arguments are ``pyarrow.parquet.write_table`` options and override
    :func:`parquet_options_for` (e.g. ``compression="zstd"``, ``use_dictionary=[...]``).
    """

    block_type = BlockType.PARQUET_DATA

    def __init__(
        self,
        table: pa.Table | pa.RecordBatch | None,
        header: Mapping[HeaderKey | int, str] | None = None,
        *,
        footer: Mapping | None = None,
        table_name: str = "pyhudi",
        **parquet_options: Any,
    ) -> None:
        super().__init__(table, header, footer=footer, table_name=table_name)
        self.parquet_options = parquet_options
        self._parquet_file: pq.ParquetFile | None = None

    def _init_read(self) -> None:
        super()._init_read()
        self.parquet_options = {}
        self._parquet_file = None

    def encode_content(self) -> pa.Buffer:
        if self._table is None:
            raise LogFormatError("a Parquet data block needs a table to encode")
        options = dict(self.parquet_options)
        if not parquet_options_cover(options, self._table.schema):
            options = {**parquet_options_for(self._table), **options}
        if "sorting_columns" not in options:
            sorting = key_sorting_columns(self._table)
            if sorting:
                options["sorting_columns"] = sorting
        return encode_parquet(self._table, options)

    def parquet_file(self) -> pq.ParquetFile:
        """The content as a ``ParquetFile``: footer parsed once, row groups read on demand."""
        if self._parquet_file is None:
            if self._content is not None:
                self._parquet_file = pq.ParquetFile(self._content.open())
            else:
                self._parquet_file = pq.ParquetFile(pa.BufferReader(self.encode_content()))
        return self._parquet_file

    def parquet_file_with_footer(self, metadata: pq.FileMetaData | None) -> pq.ParquetFile:
        """:meth:`parquet_file`, given the footer of these same bytes parsed before (readers keep
        footers of immutable log files; None: parse it)."""
        if self._parquet_file is None and self._content is not None and metadata is not None:
            self._parquet_file = pq.ParquetFile(self._content.open(), metadata=metadata)
        return self.parquet_file()

    @property
    def num_rows(self) -> int:
        if self._table is not None:
            return self._table.num_rows
        return self.parquet_file().metadata.num_rows

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        if self._table is not None:
            return self._table.select(list(columns)) if columns is not None else self._table
        return self.parquet_file().read(columns=list(columns) if columns is not None else None)

    def read_row_group(self, index: int, columns: Sequence[str] | None = None) -> pa.Table:
        return self.parquet_file().read_row_group(index, columns=list(columns) if columns is not None else None)

    def iter_batches(self, columns: Sequence[str] | None = None, batch_size: int = 65536) -> Iterator[pa.RecordBatch]:
        """Stream the rows, reading one row group at a time."""
        if self._table is not None:
            yield from super().iter_batches(columns, batch_size)
            return
        cols = list(columns) if columns is not None else None
        yield from self.parquet_file().iter_batches(batch_size=batch_size, columns=cols)


class AvroDataBlock(DataBlock):
    """AVRO_DATA: ``u32 version=3, u32 count``, then per record ``u32 length`` + Avro datum.

    Apache Hudi's default log format; pyhudi reads it and can write it for compatibility, but
    its own hot path is Parquet blocks (Avro decoding is row by row).
    """

    block_type = BlockType.AVRO_DATA

    def encode_content(self) -> bytes:
        if self._table is None:
            raise LogFormatError("an Avro data block needs a table to encode")
        parsed = fastavro.parse_schema(self.avro_schema)
        records = avro_records_from_arrow(self._table)
        out = io.BytesIO()
        out.write(_U32.pack(CONTENT_VERSION))
        out.write(_U32.pack(len(records)))
        for record in records:
            start = out.tell()
            out.write(b"\0\0\0\0")
            fastavro.schemaless_writer(out, parsed, record)
            end = out.tell()
            out.seek(start)
            out.write(_U32.pack(end - start - 4))
            out.seek(end)
        return out.getvalue()

    def records(self, columns: Sequence[str] | None = None) -> list[dict]:
        """The records as fastavro decodes them (logical types applied)."""
        data = self._content.buffer().to_pybytes() if self._content is not None else self.encode_content()
        if len(data) < 8:
            raise LogFormatError(f"Avro data block content too short ({len(data)} bytes)")
        version, count = struct.unpack_from(">II", data, 0)
        if version != CONTENT_VERSION:
            raise LogFormatError(f"unsupported Avro data block content version {version}")
        writer = fastavro.parse_schema(self.avro_schema)
        reader = None
        if columns is not None:
            projected = dict(self.avro_schema)
            projected["fields"] = [f for f in projected["fields"] if f["name"] in set(columns)]
            reader = fastavro.parse_schema(projected)
        stream = io.BytesIO(data)
        stream.seek(8)
        out = []
        for _ in range(count):
            (length,) = _U32.unpack(stream.read(4))
            start = stream.tell()
            out.append(fastavro.schemaless_reader(stream, writer, reader))
            if stream.tell() != start + length:
                raise LogFormatError(f"Avro record length {length} disagrees with its datum")
        return out

    @property
    def num_rows(self) -> int:
        if self._table is not None:
            return self._table.num_rows
        return struct.unpack(">II", self._content.buffer().slice(0, 8).to_pybytes())[1]

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        if self._table is not None:
            return self._table.select(list(columns)) if columns is not None else self._table
        schema = self.arrow_schema()
        if columns is not None:
            schema = pa.schema([schema.field(c) for c in columns])
        return arrow_table_from_avro_records(self.records(columns), schema)


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


BLOCK_CLASSES: dict[BlockType, type[LogBlock]] = {
    BlockType.COMMAND: CommandBlock,
    BlockType.DELETE: DeleteBlock,
    BlockType.CORRUPT: CorruptBlock,
    BlockType.AVRO_DATA: AvroDataBlock,
    BlockType.HFILE_DATA: HFileDataBlock,
    BlockType.PARQUET_DATA: ParquetDataBlock,
    BlockType.CDC: CdcDataBlock,
}
"""The one mapping from block type to the class that reads and writes it."""


def block_from_content(block_type: int, header: dict, footer: dict, content: BlockContent) -> LogBlock:
    """Instantiate the read-side block of ``block_type`` over its content range."""
    try:
        cls = BLOCK_CLASSES[BlockType(block_type)]
    except ValueError:
        raise LogFormatError(f"unknown log block type {block_type}") from None
    return cls._from_content(header, footer, content)


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
    "DataBlock",
    "ParquetDataBlock",
    "AvroDataBlock",
    "DeleteBlock",
    "BLOCK_CLASSES",
    "default_parquet_options",
    "block_from_content",
]

"""Data blocks (Parquet and Avro records) and the block-type registry the reader dispatches on.

A data block's content is a table of records: a Parquet file (pyhudi's default, and Hudi's for
``hoodie.logfile.data.block.format=parquet``) or Avro records, each with its SCHEMA header.
Blocks built for writing hold an Arrow table; blocks read from a file hold a
:class:`~pyhudi.logformat.block.BlockContent` range and decode it on first use.
"""

from __future__ import annotations

import io
import struct
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import pyarrow as pa

from pyhudi.errors import LogFormatError, SchemaError
from pyhudi.lazy import pc
from pyhudi.logformat.block import (
    _U32,
    CONTENT_VERSION,
    BlockContent,
    BlockType,
    CdcDataBlock,
    CommandBlock,
    CorruptBlock,
    DeleteBlock,
    HeaderKey,
    HFileDataBlock,
    LogBlock,
)
from pyhudi.logformat.parquet_options import (
    block_parquet_options,
    encode_parquet,
    parquet_options_cover,
    write_parquet,
)
from pyhudi.schema import (
    META_FIELDS,
    arrow_schema_from_avro,
    arrow_table_from_avro_records,
    avro_records_from_arrow,
    avro_schema_json,
    parse_avro_schema,
)
from pyhudi.storage.parquet import parquet_file

if TYPE_CHECKING:
    import pyarrow.parquet as pq


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
    import pyarrow.parquet as pq  # (writes only: a read of blocks imports less, issue 15)

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

    def _write_options(self) -> dict[str, Any]:
        if self._table is None:
            raise LogFormatError("a Parquet data block needs a table to encode")
        options = dict(self.parquet_options)
        if not parquet_options_cover(options, self._table.schema):
            sample = self._table if isinstance(self._table, pa.Table) else self._table.materialize()  # (streamed rows)
            options = {**block_parquet_options(sample), **options}
        if "sorting_columns" not in options:
            sorting = key_sorting_columns(self._table)
            if sorting:
                options["sorting_columns"] = sorting
        return options

    def encode_content(self) -> pa.Buffer:
        options = self._write_options()
        assert self._table is not None
        return encode_parquet(self._table, options)

    @property
    def streamable(self) -> bool:
        """A block to write (not one read from a file): :meth:`write_content` can stream it."""
        return self._content is None and self._table is not None

    def write_content(self, sink: Any) -> None:
        """Encode the content straight into ``sink`` (a stream whose position starts at 0): the
        same bytes as :meth:`encode_content`, without holding them in memory first."""
        options = self._write_options()
        assert self._table is not None
        write_parquet(self._table, sink, options)

    def parquet_file(self) -> pq.ParquetFile:
        """The content as a ``ParquetFile``: footer parsed once, row groups read on demand."""
        if self._parquet_file is None:
            if self._content is not None:
                self._parquet_file = _parquet_over(self._content.open())
            else:
                self._parquet_file = parquet_file(pa.BufferReader(self.encode_content()))
        return self._parquet_file

    def parquet_file_with_footer(self, metadata: pq.FileMetaData | None) -> pq.ParquetFile:
        """:meth:`parquet_file`, given the footer of these same bytes parsed before (readers keep
        footers of immutable log files; None: parse it)."""
        if self._parquet_file is None and self._content is not None and metadata is not None:
            self._parquet_file = _parquet_over(self._content.open(), metadata)
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
        import fastavro  # (imported on first use: Parquet blocks, pyhudi's default, need none)

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
        import fastavro

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
    "DataBlock",
    "ParquetDataBlock",
    "AvroDataBlock",
    "key_sorting_columns",
    "BLOCK_CLASSES",
    "block_from_content",
]


_BLOCK_READ_BUFFER = 64 << 10


def _parquet_over(content: pa.NativeFile, metadata: pq.FileMetaData | None = None) -> pq.ParquetFile:
    """A block's content as a ``ParquetFile``. Content in memory (or mapped) is read zero-copy;
    content in a file is read through a buffered stream, page by page, rather than a column
    chunk at a time: a block is written as one row group, so reading whole chunks would hold
    the whole decoded-size block for as long as it is read (a streaming merge reads it batch by
    batch, in step with its base file)."""
    if isinstance(content, pa.BufferReader):
        return parquet_file(content, metadata=metadata)
    return parquet_file(content, metadata=metadata, buffer_size=_BLOCK_READ_BUFFER, pre_buffer=False)

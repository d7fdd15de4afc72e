"""Hudi log files: block types, the block codec, a writer and a corruption-tolerant reader."""

from __future__ import annotations

from pyhudi.logformat.block import (
    CONTENT_VERSION,
    LOG_FORMAT_VERSION,
    MAGIC,
    BlockContent,
    BlockType,
    CdcDataBlock,
    CommandBlock,
    CommandType,
    CorruptBlock,
    DeleteBlock,
    HeaderKey,
    HFileDataBlock,
    LogBlock,
    decode_header,
    encode_header,
)
from pyhudi.logformat.data_block import (
    BLOCK_CLASSES,
    AvroDataBlock,
    DataBlock,
    ParquetDataBlock,
    key_sorting_columns,
)
from pyhudi.logformat.deletes import (
    DELETE_RECORD_LIST_SCHEMA,
    OrderingType,
    decode_delete_records,
    encode_delete_records,
)
from pyhudi.logformat.parquet_options import (
    constant_strings,
    constant_value,
    default_parquet_options,
    parquet_options_cover,
    block_parquet_options,
    parquet_options_for,
    write_parquet,
)
from pyhudi.logformat.reader import FileSource, LogReader, read_log_blocks

_WRITER_NAMES = frozenset({"BlockLocation", "LogWriter", "append_log_blocks", "data_block_header", "encode_block",
                           "encode_blocks", "write_log_file"})


def __getattr__(name: str) -> object:
    """The writer's names, imported on first use (a read never writes a log file: issue 15)."""
    if name in _WRITER_NAMES:
        from pyhudi.logformat import writer

        return getattr(writer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BLOCK_CLASSES",
    "CONTENT_VERSION",
    "LOG_FORMAT_VERSION",
    "MAGIC",
    "AvroDataBlock",
    "BlockContent",
    "BlockType",
    "CdcDataBlock",
    "CommandBlock",
    "CommandType",
    "CorruptBlock",
    "DataBlock",
    "DeleteBlock",
    "HeaderKey",
    "HFileDataBlock",
    "LogBlock",
    "ParquetDataBlock",
    "decode_header",
    "default_parquet_options",
    "key_sorting_columns",
    "parquet_options_cover",
    "block_parquet_options",
    "parquet_options_for",
    "constant_strings",
    "constant_value",
    "write_parquet",
    "encode_header",
    "DELETE_RECORD_LIST_SCHEMA",
    "OrderingType",
    "decode_delete_records",
    "encode_delete_records",
    "FileSource",
    "LogReader",
    "read_log_blocks",
    "BlockLocation",
    "LogWriter",
    "append_log_blocks",
    "data_block_header",
    "encode_block",
    "encode_blocks",
    "write_log_file",
]

"""Log files whose one Parquet data block is encoded straight into the file (local storage):
byte for byte the framed block the in-memory path writes, created exclusively, and no partial
file left behind by a failed encoding."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from pyhudi.errors import AlreadyExistsError
from pyhudi.logformat import LogReader, ParquetDataBlock, data_block_header, write_log_file
from pyhudi.logformat.block import HeaderKey
from pyhudi.logformat.parquet_options import constant_strings
from pyhudi.logformat import writer
from pyhudi.logformat.writer import encode_block
from pyhudi.storage.fs import Storage

META = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
        "_hoodie_file_name"]
INSTANT = "20260101000000000"


def _rows(n: int) -> pa.Table:
    keys = [f"k{i:06d}" for i in range(n)]
    return pa.table({
        "_hoodie_commit_time": constant_strings(INSTANT, n),  # (a one-entry dictionary, as the writer hands it)
        "_hoodie_commit_seqno": pa.array([f"{INSTANT}_0_{i}" for i in range(n)], pa.string()),
        "_hoodie_record_key": pa.array(keys, pa.string()),
        "_hoodie_partition_path": constant_strings("p=1", n),
        "_hoodie_file_name": constant_strings("00000000-0000-0000-0000-000000000000-0", n),
        "id": np.arange(n, dtype=np.int64), "x": np.random.default_rng(n).random(n), "s": pa.array([f"s{i % 7}" for i in range(n)], pa.string()),
    })


def _block(rows: pa.Table, **options) -> ParquetDataBlock:
    schema = pa.schema([pa.field(m, pa.string()) for m in META] + list(rows.schema)[5:])
    header = data_block_header(INSTANT, schema, is_partial=True, extra={HeaderKey.RECORD_POSITIONS: "AAAA"})
    return ParquetDataBlock(rows, header, **options)


@pytest.mark.parametrize("n", [0, 1, 3000, 70_000])
@pytest.mark.parametrize("fsync", [False, True])
def test_streamed_file_is_the_framed_block_byte_for_byte(tmp_path, n, fsync):
    storage = Storage(str(tmp_path))
    rows = _rows(n)
    size = write_log_file(storage, "p=1/.f.log.1_0-1-0", [_block(rows, row_group_size=20_000)], fsync=fsync)
    written = (tmp_path / "p=1" / ".f.log.1_0-1-0").read_bytes()
    expected = encode_block(_block(rows, row_group_size=20_000))  # the in-memory path
    assert written == expected and size == len(expected)
    with LogReader(storage, "p=1/.f.log.1_0-1-0") as reader:
        (block,) = reader.blocks()
        assert block.header[HeaderKey.IS_PARTIAL] == "true"
        read = block.read()
    assert read.column("_hoodie_record_key").to_pylist() == rows.column("_hoodie_record_key").to_pylist()
    assert read.column("x").equals(rows.column("x"))
    assert read.column("_hoodie_commit_time").to_pylist() == [INSTANT] * n


def test_an_existing_file_is_never_overwritten(tmp_path):
    storage = Storage(str(tmp_path))
    (tmp_path / "f.log").write_bytes(b"theirs")
    with pytest.raises(AlreadyExistsError, match="already exists"):
        write_log_file(storage, "f.log", [_block(_rows(10))])
    assert (tmp_path / "f.log").read_bytes() == b"theirs"


def test_a_failed_encoding_leaves_no_partial_file(tmp_path, monkeypatch):
    storage = Storage(str(tmp_path))
    block = _block(_rows(5000))

    def failing(sink):
        sink.write(b"PAR1" + b"\0" * 100)
        raise OSError("disk full")

    monkeypatch.setattr(block, "write_content", failing)
    with pytest.raises(OSError, match="disk full"):
        write_log_file(storage, "f.log", [block])
    assert not (tmp_path / "f.log").exists()


def test_blocks_read_from_a_file_and_several_blocks_take_the_framed_path(tmp_path, monkeypatch):
    storage = Storage(str(tmp_path))
    streamed = []
    real = writer._create_local_streamed
    monkeypatch.setattr(writer, "_create_local_streamed", lambda *a: streamed.append(a[0]) or real(*a))
    write_log_file(storage, "a.log", [_block(_rows(10))])
    with LogReader(storage, "a.log") as reader:
        (read_back,) = reader.blocks()
    assert not read_back.streamable  # its content is bytes of a file: copied as they are
    write_log_file(storage, "b.log", [read_back])
    write_log_file(storage, "c.log", [_block(_rows(10)), _block(_rows(20))])
    assert streamed == [str(tmp_path / "a.log")]
    assert (tmp_path / "b.log").read_bytes() == (tmp_path / "a.log").read_bytes()
    with LogReader(storage, "c.log") as reader:
        assert [b.read().num_rows for b in reader.blocks()] == [10, 20]

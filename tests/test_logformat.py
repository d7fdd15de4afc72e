"""Hudi log files: framing bytes, block round trips, Apache-Hudi-written fixtures, corruption."""

from __future__ import annotations

import collections
import datetime
import decimal
import json
import pathlib
import re
import struct

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyhudi.errors import AlreadyExistsError, LogFormatError, SchemaError
from pyhudi.logformat import (
    BLOCK_CLASSES,
    MAGIC,
    AvroDataBlock,
    BlockType,
    CommandBlock,
    CommandType,
    CorruptBlock,
    DataBlock,
    DeleteBlock,
    HeaderKey,
    LogReader,
    LogWriter,
    OrderingType,
    ParquetDataBlock,
    append_log_blocks,
    data_block_header,
    decode_header,
    default_parquet_options,
    encode_block,
    encode_blocks,
    encode_header,
    parquet_options_for,
    read_log_blocks,
    write_log_file,
)
from pyhudi.schema import META_FIELDS
from pyhudi.storage.fs import Storage

T1, T2, T3 = "20250101000000001", "20250101000000002", "20250101000000003"


def u32(v: int) -> bytes:
    return struct.pack(">I", v)


def u64(v: int) -> bytes:
    return struct.pack(">Q", v)


def data_table(n: int = 3, instant: str = T1, start: int = 0) -> pa.Table:
    keys = [f"k{i:04d}" for i in range(start, start + n)]
    meta = {
        "_hoodie_commit_time": [instant] * n,
        "_hoodie_commit_seqno": [f"{instant}_0_{i}" for i in range(n)],
        "_hoodie_record_key": keys,
        "_hoodie_partition_path": [""] * n,
        "_hoodie_file_name": ["00000000-0000-0000-0000-000000000000-0"] * n,
    }
    data = {
        "id": pa.array(keys, pa.string()),
        "ts": pa.array(range(start, start + n), pa.int64()),
        "price": pa.array([float(i) / 4 for i in range(n)], pa.float64()),
        "note": pa.array([None if i % 2 else f"n{i}" for i in range(n)], pa.string()),
    }
    return pa.table({**{k: pa.array(v, pa.string()) for k, v in meta.items()}, **data})


# ------------------------------------------------------------------------------ enums + header
def test_enum_ordinals():
    assert [(t.name, t.value) for t in BlockType] == [
        ("COMMAND", 0),
        ("DELETE", 1),
        ("CORRUPT", 2),
        ("AVRO_DATA", 3),
        ("HFILE_DATA", 4),
        ("PARQUET_DATA", 5),
        ("CDC", 6),
    ]
    assert [k.value for k in HeaderKey] == list(range(9))
    assert HeaderKey.IS_PARTIAL == 7 and HeaderKey.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS == 8
    assert set(BLOCK_CLASSES) == set(BlockType)
    assert all(cls.block_type == t for t, cls in BLOCK_CLASSES.items())


def test_header_codec_exact_bytes():
    header = {HeaderKey.SCHEMA: "é", HeaderKey.INSTANT_TIME: T1}
    data = encode_header(header)
    assert data == u32(2) + u32(0) + u32(17) + T1.encode() + u32(2) + u32(2) + "é".encode()
    assert decode_header(data) == ({HeaderKey.INSTANT_TIME: T1, HeaderKey.SCHEMA: "é"}, len(data))
    assert decode_header(u32(1) + u32(42) + u32(1) + b"x")[0] == {42: "x"}  # future keys survive
    with pytest.raises(LogFormatError):
        decode_header(u32(1) + u32(0) + u32(10) + b"short")


# ------------------------------------------------------------------------------ exact framing
def test_rollback_command_block_exact_bytes():
    block = CommandBlock.rollback("20250126040936578", "20250126040826878")
    header = (
        u32(3)
        + u32(0) + u32(17) + b"20250126040936578"
        + u32(1) + u32(17) + b"20250126040826878"
        + u32(3) + u32(1) + b"0"
    )  # fmt: skip
    block_len = 4 + 4 + len(header) + 8 + 0 + 4 + 8
    expected = MAGIC + u64(block_len) + u32(1) + u32(0) + header + u64(0) + u32(0) + u64(block_len + 6)
    assert encode_block(block) == expected
    assert block_len == 91 and len(expected) == 105  # same sizes as Hudi's own rollback block


def test_parquet_block_framing(tmp_path):
    table = data_table(5)
    block = ParquetDataBlock(table, {HeaderKey.INSTANT_TIME: T1})
    data = encode_block(block)
    header = encode_header(block.header)
    content = block.encode_content().to_pybytes()
    assert data[:6] == b"#HUDI#"
    (block_len,) = struct.unpack(">Q", data[6:14])
    assert len(data) == 6 + 8 + block_len
    assert data[14:22] == u32(1) + u32(5)
    assert data[22 : 22 + len(header)] == header
    pos = 22 + len(header)
    assert data[pos : pos + 8] == u64(len(content))
    assert data[pos + 8 : pos + 8 + len(content)] == content
    assert content[:4] == b"PAR1" and content[-4:] == b"PAR1"
    assert data[-12:] == u32(0) + u64(block_len + 6)
    schema = json.loads(block.header[HeaderKey.SCHEMA])
    assert [f["name"] for f in schema["fields"]] == table.schema.names
    assert schema["fields"][0] == {"name": "_hoodie_commit_time", "type": ["null", "string"], "default": None}


def test_avro_and_delete_content_layout():
    table = data_table(2)
    avro = AvroDataBlock(table, {HeaderKey.INSTANT_TIME: T1}).encode_content()
    assert avro[:8] == u32(3) + u32(2)
    (first_len,) = struct.unpack(">I", avro[8:12])
    assert avro[12 + first_len : 16 + first_len] != b""  # second record's length follows the first
    delete = DeleteBlock.from_keys(["4"], T2).encode_content()
    # version 3, datum length, then: array block of 1 item, key "4" (branch 1), partition ""
    # (branch 1), orderingVal branch 2 = IntWrapper with value 0, end of array.
    datum = b"\x02" + b"\x02\x024" + b"\x02\x00" + b"\x04\x00" + b"\x00"
    assert delete == u32(3) + u32(len(datum)) + datum


# ------------------------------------------------------------------------------ round trips
def read_back(data: bytes, **kw) -> list:
    return LogReader(data=data, **kw).blocks()


def test_round_trip_every_block_type():
    table = data_table(4)
    blocks = [
        ParquetDataBlock(table, data_block_header(T1, table.schema, table_name="trips")),
        AvroDataBlock(table, data_block_header(T1, table.schema, table_name="trips")),
        DeleteBlock.from_keys(["k0001", "k0002"], T2, ordering_values=pa.array([7, 9], pa.int64())),
        CommandBlock.rollback(T3, T1),
    ]
    data, locations = encode_blocks(blocks)
    back = read_back(data)
    kinds = [BlockType.PARQUET_DATA, BlockType.AVRO_DATA, BlockType.DELETE, BlockType.COMMAND]
    assert [b.block_type for b in back] == kinds
    assert [(b.offset, b.size) for b in back] == [(loc.offset, loc.size) for loc in locations]
    assert back[0].read().equals(table) and back[1].read().equals(table)
    assert back[0].num_rows == back[1].num_rows == 4
    assert json.loads(back[0].header[HeaderKey.SCHEMA])["name"] == "trips_record"
    deletes = back[2].deletes()
    assert deletes.to_pydict() == {
        "record_key": ["k0001", "k0002"],
        "partition_path": ["", ""],
        "ordering_type": [OrderingType.LONG, OrderingType.LONG],
        "ordering_value": [7, 9],
        "is_default_ordering": [False, False],
    }
    assert back[3].command_type == CommandType.ROLLBACK and back[3].target_instant_time == T1
    assert back[3].instant_time == T3
    # a block read from a file re-encodes to the same bytes (headers are written in key order)
    assert b"".join(encode_block(b) for b in back) == data


@pytest.mark.parametrize(
    "values,code,arrow_type",
    [
        (pa.array([True, False]), OrderingType.BOOLEAN, pa.bool_()),
        (pa.array([1, 0], pa.int32()), OrderingType.INT, pa.int32()),
        (pa.array([2**40, -1], pa.int64()), OrderingType.LONG, pa.int64()),
        (pa.array([1.5, -2.0], pa.float32()), OrderingType.FLOAT, pa.float32()),
        (pa.array([1.5, -2.0], pa.float64()), OrderingType.DOUBLE, pa.float64()),
        (pa.array([b"a", b""]), OrderingType.BYTES, pa.binary()),
        (pa.array(["ord_4", "ord_3"]), OrderingType.STRING, pa.string()),
        (pa.array([datetime.date(2024, 1, 2), datetime.date(1969, 1, 1)]), OrderingType.DATE, pa.date32()),
        (
            pa.array([decimal.Decimal("12.5"), decimal.Decimal("-0.001")], pa.decimal128(10, 3)),
            OrderingType.DECIMAL,
            pa.decimal128(30, 15),
        ),
        (pa.array([1, 86_399_999_999], pa.time64("us")), OrderingType.TIME_MICROS, pa.time64("us")),
        (
            pa.array([0, 1_700_000_000_000_000], pa.timestamp("us", "UTC")),
            OrderingType.TIMESTAMP_MICROS,
            pa.timestamp("us", "UTC"),
        ),
    ],
)
def test_delete_ordering_wrappers_round_trip(values, code, arrow_type):
    block = DeleteBlock.from_keys(["a", "b"], T1, partition_paths=["p=1", None], ordering_values=values)
    deletes = read_back(encode_block(block))[0].deletes()
    assert deletes.column("ordering_type").to_pylist() == [code, code]
    assert deletes.column("ordering_value").type == arrow_type
    assert deletes.column("ordering_value").cast(values.type).equals(pa.chunked_array([values]))
    assert deletes.column("partition_path").to_pylist() == ["p=1", None]
    expected_default = [code == OrderingType.INT and v == 0 for v in values.to_pylist()]
    assert deletes.column("is_default_ordering").to_pylist() == expected_default


def test_plain_delete_writes_int_wrapper_zero_and_nulls_default():
    deletes = read_back(encode_block(DeleteBlock.from_keys(["x"], T1)))[0].deletes()
    assert deletes.to_pylist() == [
        {"record_key": "x", "partition_path": "", "ordering_type": 2, "ordering_value": 0, "is_default_ordering": True}
    ]
    mixed = DeleteBlock.from_keys(["a", "b"], T1, ordering_values=pa.array([None, 5], pa.int64()))
    deletes = read_back(encode_block(mixed))[0].deletes()
    assert deletes.column("ordering_type").to_pylist() == [OrderingType.INT, OrderingType.LONG]
    assert deletes.column("ordering_value").type == pa.int64()  # IntWrapper(0) widened with longs
    assert deletes.column("is_default_ordering").to_pylist() == [True, False]
    with pytest.raises(SchemaError, match="record_key"):
        DeleteBlock(pa.table({"key": ["a"]}), {HeaderKey.INSTANT_TIME: T1})


def test_parquet_block_projection_row_groups_and_batches():
    table = data_table(100)
    block = ParquetDataBlock(table, {HeaderKey.INSTANT_TIME: T1}, row_group_size=10)
    back = read_back(encode_block(block))[0]
    assert back.parquet_file().metadata.num_row_groups == 10
    assert back.read(columns=["id", "ts"]).equals(table.select(["id", "ts"]))
    assert back.read_row_group(3, columns=["ts"]).column("ts").to_pylist() == list(range(30, 40))
    batches = list(back.iter_batches(columns=["_hoodie_record_key"], batch_size=25))
    assert sum(b.num_rows for b in batches) == 100 and batches[0].schema.names == ["_hoodie_record_key"]
    assert back.arrow_schema().equals(table.schema)


def test_parquet_options_default_and_override():
    table = data_table(50)
    assert default_parquet_options(table.schema) == {
        "compression": "snappy",
        "use_dictionary": [META_FIELDS[0], META_FIELDS[3], META_FIELDS[4], "id", "note"],
    }  # the record key and sequence number are unique per row: written plain
    content = ParquetDataBlock(table, {HeaderKey.INSTANT_TIME: T1}).encode_content()
    meta = pq.ParquetFile(pa.BufferReader(content)).metadata
    columns = {meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i) for i in range(meta.num_columns)}
    # chosen from the data: constant meta columns get dictionaries, unique keys and distinct
    # prices do not, and the record key is declared as the sort order
    assert columns["_hoodie_commit_time"].has_dictionary_page
    assert not columns["price"].has_dictionary_page and not columns["id"].has_dictionary_page
    assert not columns["_hoodie_record_key"].has_dictionary_page
    assert [c.column_index for c in meta.row_group(0).sorting_columns] == [table.schema.names.index("_hoodie_record_key")]
    tuned = ParquetDataBlock(table, {HeaderKey.INSTANT_TIME: T1}, compression="zstd", use_dictionary=False)
    meta = pq.ParquetFile(pa.BufferReader(tuned.encode_content())).metadata
    assert meta.row_group(0).column(0).compression == "ZSTD" and not meta.row_group(0).column(0).has_dictionary_page


def test_parquet_options_are_chosen_per_column_from_the_data():
    """Dictionary only where values repeat, snappy only where it shrinks the sample."""
    n = 5000
    rng = np.random.default_rng(3)
    table = pa.table({
        "const": pa.array(["20250101000000000"] * n),
        "key": pa.array([f"{i:08d}" for i in range(n)]),
        "random": pa.array(rng.random(n)),
        "category": pa.array(rng.integers(0, 5, n).astype(np.float64)),
        "seq": pa.array(np.arange(n, dtype=np.int64)),
        "flag": pa.array(rng.random(n) > 0.5),
        "nested": pa.array([{"a": i} for i in range(n)]),
        "nulls": pa.nulls(n, pa.string()),
    })
    options = parquet_options_for(table)
    assert options == {
        "use_dictionary": ["const", "category", "nulls"],
        "compression": {"const": "snappy", "key": "snappy", "random": "none", "category": "snappy", "seq": "snappy",
                        "flag": "snappy", "nested": "snappy", "nulls": "snappy"},
    }
    content = ParquetDataBlock(table, {HeaderKey.INSTANT_TIME: T1}).encode_content()
    meta = pq.ParquetFile(pa.BufferReader(content)).metadata.row_group(0)
    columns = {meta.column(i).path_in_schema: meta.column(i) for i in range(meta.num_columns)}
    assert columns["random"].compression == "UNCOMPRESSED" and not columns["random"].has_dictionary_page
    assert columns["key"].compression == "SNAPPY" and not columns["key"].has_dictionary_page
    assert columns["const"].has_dictionary_page and columns["category"].has_dictionary_page
    assert pq.read_table(pa.BufferReader(content)).equals(table)
    assert parquet_options_for(table.slice(0, 0)) == default_parquet_options(table.schema)


def test_avro_block_projection_and_partial_header():
    table = data_table(3)
    header = data_block_header(T1, table.schema, is_partial=True, extra={HeaderKey.BLOCK_IDENTIFIER: "0,1"})
    back = read_back(encode_block(AvroDataBlock(table, header)))[0]
    assert back.is_partial and back.header[HeaderKey.BLOCK_IDENTIFIER] == "0,1"
    assert back.read(columns=["ts", "id"]).equals(table.select(["ts", "id"]))


def test_block_validation_errors():
    table = data_table(2)
    with pytest.raises(LogFormatError, match="INSTANT_TIME"):
        encode_block(ParquetDataBlock(table, {}))
    with pytest.raises(SchemaError, match="first five"):
        ParquetDataBlock(table.select(["id", *META_FIELDS]), {HeaderKey.INSTANT_TIME: T1})
    wrong = data_block_header(T1, table.select(META_FIELDS).schema)
    with pytest.raises(SchemaError, match="SCHEMA header"):
        ParquetDataBlock(table, wrong)
    with pytest.raises(LogFormatError, match="corrupt"):
        encode_block(CorruptBlock(0, 10))
    nometa = table.select(["id", "ts"])  # hoodie.populate.meta.fields=false: no meta columns at all
    assert read_back(encode_block(ParquetDataBlock(nometa, {HeaderKey.INSTANT_TIME: T1})))[0].read().equals(nometa)


# ------------------------------------------------------------------------------ writer + storage
def test_write_log_file_is_create_if_absent_and_append(tmp_path):
    storage = Storage(str(tmp_path))
    rel = "p/.f1-0_20250101000000001.log.1_0-1-0"
    first = ParquetDataBlock(data_table(3), {HeaderKey.INSTANT_TIME: T1})
    size = write_log_file(storage, rel, [first])
    assert size == storage.size(rel)
    with pytest.raises(AlreadyExistsError):
        write_log_file(storage, rel, [first])
    locations = append_log_blocks(storage, rel, [DeleteBlock.from_keys(["k0000"], T1)])
    assert locations[0].offset == size
    blocks = read_log_blocks(storage, rel)
    assert [b.block_type for b in blocks] == [BlockType.PARQUET_DATA, BlockType.DELETE]
    assert blocks[1].offset == size and blocks[1].size == locations[0].size
    with pytest.raises(LogFormatError, match="empty"):
        write_log_file(storage, "other.log", [])


def test_log_writer(tmp_path):
    storage = Storage(str(tmp_path))
    writer = LogWriter(storage, ".f_1.log.1_0-1-0")
    writer.append(AvroDataBlock(data_table(2), {HeaderKey.INSTANT_TIME: T1}))
    writer.append(DeleteBlock.from_keys(["k0000"], T1), CommandBlock.rollback(T2, T1))
    assert writer.bytes_written == storage.size(".f_1.log.1_0-1-0")
    assert [loc.offset for loc in writer.locations][0] == 0
    with LogReader(storage, ".f_1.log.1_0-1-0") as reader:
        assert [b.block_type for b in reader] == [BlockType.AVRO_DATA, BlockType.DELETE, BlockType.COMMAND]
        assert reader.corrupt_count == 0
    with pytest.raises(AlreadyExistsError):
        LogWriter(storage, ".f_1.log.1_0-1-0").append(DeleteBlock.from_keys(["a"], T3))


def test_empty_file_reads_as_no_blocks(tmp_path):
    (tmp_path / "empty.log").write_bytes(b"")
    reader = LogReader(Storage(str(tmp_path)), "empty.log")
    assert reader.blocks() == [] and reader.corrupt_count == 0
    assert LogReader(data=b"").blocks() == []


def test_native_file_source_reads_parquet_lazily(tmp_path):
    storage = Storage(str(tmp_path))
    table = data_table(40)
    write_log_file(storage, "a.log", [ParquetDataBlock(table, {HeaderKey.INSTANT_TIME: T1}, row_group_size=8)])
    with pa.OSFile(storage.full_path("a.log")) as fh:
        block = LogReader(file=fh).blocks()[0]
        assert block.read(columns=["ts"]).column("ts").to_pylist() == list(range(40))
        assert block.parquet_file().metadata.num_row_groups == 5


# ------------------------------------------------------------------------------ fixtures
LOG_FILES = {
    "valid_log_avro_data": BlockType.AVRO_DATA,
    "valid_log_delete": BlockType.DELETE,
    "valid_log_parquet_data": BlockType.PARQUET_DATA,
    "valid_log_rollback": BlockType.COMMAND,
}


def fixture_log(fixtures_dir, name):
    (path,) = (fixtures_dir / "log_files" / name).iterdir()
    storage = Storage(str(path.parent))
    return LogReader(storage, path.name)


@pytest.mark.parametrize("name", sorted(LOG_FILES))
def test_fixture_log_files_block_types(fixtures_dir, name):
    reader = fixture_log(fixtures_dir, name)
    blocks = reader.blocks()
    assert [b.block_type for b in blocks] == [LOG_FILES[name]]
    assert reader.corrupt_count == 0
    assert blocks[0].offset == 0 and blocks[0].size == reader.source.size


def test_fixture_avro_data_log(fixtures_dir):
    (block,) = fixture_log(fixtures_dir, "valid_log_avro_data").blocks()
    assert block.instant_time == "20250316025828811"
    table = block.read()
    assert table.num_rows == 1 and table.schema.names[:5] == list(META_FIELDS)
    row = table.to_pylist()[0]
    assert row["_hoodie_record_key"] == "334e26e9-8355-45cc-97c6-c31daf0df330"
    assert row["_hoodie_file_name"] == "ff32ab89-5ad0-4968-83b4-89a34c95d32f-0"  # file id in log records
    assert (row["rider"], row["driver"], row["fare"], row["ts"]) == ("rider-A", "driver-K", 29.1, 1695159649088)


def test_fixture_delete_log(fixtures_dir):
    (block,) = fixture_log(fixtures_dir, "valid_log_delete").blocks()
    assert block.instant_time == "20250618054714114"
    deletes = block.deletes()
    assert deletes.column("record_key").to_pylist() == [
        "e96c4396-3fad-413a-a942-4cb36106d721",
        "9909a8b1-2d15-4d3d-8ec9-efc48c536a00",
        "334e26e9-8355-45cc-97c6-c31daf0df330",
    ]
    assert set(deletes.column("partition_path").to_pylist()) == {"city=san_francisco"}
    assert deletes.column("ordering_type").to_pylist() == [OrderingType.INT] * 3
    assert deletes.column("is_default_ordering").to_pylist() == [True] * 3


def test_fixture_parquet_log(fixtures_dir):
    (block,) = fixture_log(fixtures_dir, "valid_log_parquet_data").blocks()
    assert block.instant_time == "20250113230424191"
    assert block.num_rows == 1
    table = block.read(columns=["_hoodie_commit_seqno", "uuid", "fare", "city"])
    assert table.to_pylist() == [
        {
            "_hoodie_commit_seqno": "20250113230424191_0_8",
            "uuid": "334e26e9-8355-45cc-97c6-c31daf0df330",
            "fare": 29.1,
            "city": "san_francisco",
        }
    ]
    assert block.arrow_schema().equals(block.read().schema)


def test_fixture_rollback_log(fixtures_dir):
    (block,) = fixture_log(fixtures_dir, "valid_log_rollback").blocks()
    assert block.header == {
        HeaderKey.INSTANT_TIME: "20250126040936578",
        HeaderKey.COMMAND_BLOCK_TYPE: "0",
        HeaderKey.TARGET_INSTANT_TIME: "20250126040826878",
    }
    assert block.command_type == CommandType.ROLLBACK and block.content_length == 0
    path = next((fixtures_dir / "log_files" / "valid_log_rollback").iterdir())
    assert len(encode_block(block)) == len(path.read_bytes()) == 105


def index_rows(fixtures_dir) -> dict[str, tuple[int, dict[str, int]]]:
    """zip -> (logs, {block type: count}) from INDEX.md."""
    rows = {}
    for line in (fixtures_dir / "INDEX.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 14 and cells[0].endswith(".zip"):
            blocks = {}
            if cells[14] != "—":
                for part in cells[14].split(","):
                    kind, count = part.strip().split(":")
                    blocks[kind] = int(count)
            rows[cells[0]] = (int(cells[13]), blocks)
    return rows


def data_log_files(table_dir):
    return sorted(
        p
        for p in table_dir.rglob(".*.log.*")
        if ".hoodie" not in p.relative_to(table_dir).parts and not p.name.endswith(".crc")
    )


def test_index_parsed(fixtures_dir):
    rows = index_rows(fixtures_dir)
    assert len(rows) == 21
    assert rows["quickstart_trips_table/mor/avro/table_corrupt_tail_block.zip"] == (2, {"AVRO_DATA": 1, "corrupt": 1})


_FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "hudi"
ZIP_NAMES = sorted(str(p.relative_to(_FIXTURES)) for p in _FIXTURES.glob("**/*.zip"))


@pytest.mark.parametrize("zip_name", ZIP_NAMES)
def test_every_log_file_in_every_fixture_zip(fixtures_dir, unzip_fixture, zip_name):
    table_dir = unzip_fixture(zip_name)
    logs, expected = index_rows(fixtures_dir)[zip_name]
    files = data_log_files(table_dir)
    assert len(files) == logs
    per_block, per_file = collections.Counter(), collections.Counter()
    for path in files:
        reader = LogReader(Storage(str(path.parent)), path.name, include_corrupt=True)
        blocks = reader.blocks()
        for block in blocks:
            per_block["corrupt" if block.block_type == BlockType.CORRUPT else block.block_type.name] += 1
            if isinstance(block, DataBlock):
                assert block.read().num_rows == block.num_rows > 0
                assert block.read().schema.names[:5] == list(META_FIELDS)
            elif isinstance(block, DeleteBlock):
                assert block.deletes().num_rows > 0
        # INDEX.md classifies each log FILE: a file holding a torn block counts as "corrupt".
        per_file["corrupt" if reader.corrupt_count else blocks[0].block_type.name] += 1
    assert dict(per_file) == expected
    if zip_name.endswith("table_corrupt_tail_block.zip"):
        # Block level: the second file holds a valid AVRO_DATA block and then a torn one, so
        # the table has two readable AVRO_DATA blocks (gold data: k2 = "v2_upd" comes from it).
        assert dict(per_block) == {"AVRO_DATA": 2, "corrupt": 1}
    else:
        assert dict(per_block) == expected
    # metadata-table logs (HFILE/DELETE blocks) must read without errors too
    for path in sorted((table_dir / ".hoodie").rglob(".*.log.*")):
        if not path.name.endswith(".crc"):
            reader = LogReader(Storage(str(path.parent)), path.name)
            assert reader.blocks() and reader.corrupt_count == 0


def test_fixture_corrupt_tail(unzip_fixture):
    table_dir = unzip_fixture("quickstart_trips_table/mor/avro/table_corrupt_tail_block.zip")
    path = next(p for p in data_log_files(table_dir) if "20260607061228578" in p.name)
    reader = LogReader(Storage(str(path.parent)), path.name, include_corrupt=True)
    good, corrupt = reader.blocks()
    assert good.read().select(["key", "value", "num"]).to_pylist() == [{"key": "k2", "value": "v2_upd", "num": 22}]
    assert isinstance(corrupt, CorruptBlock) and (corrupt.offset, corrupt.size) == (884, 18)
    assert corrupt.offset + corrupt.size == path.stat().st_size


@pytest.mark.parametrize(
    "zip_name,values,arrow_type",
    [
        ("table_delete_ord_long.zip", [4000, 3000], pa.int64()),
        ("table_delete_ord_string.zip", ["ord_4", "ord_3"], pa.string()),
    ],
)
def test_fixture_delete_ordering_values(unzip_fixture, zip_name, values, arrow_type):
    table_dir = unzip_fixture(f"quickstart_trips_table/mor/avro/{zip_name}")
    (path,) = data_log_files(table_dir)
    (block,) = LogReader(Storage(str(path.parent)), path.name).blocks()
    deletes = block.deletes()
    assert deletes.column("record_key").to_pylist() == ["4", "3"]
    assert deletes.column("ordering_value").type == arrow_type
    assert deletes.column("ordering_value").to_pylist() == values
    assert deletes.column("is_default_ordering").to_pylist() == [False, False]


def test_fixture_event_time_deletes_and_partial_block(unzip_fixture):
    table_dir = unzip_fixture("quickstart_trips_table/mor/avro/table_event_time_stale.zip")
    deletes = []
    for path in data_log_files(table_dir):
        for block in LogReader(Storage(str(path.parent)), path.name):
            if isinstance(block, DeleteBlock):
                deletes.extend(block.deletes().select(["record_key", "ordering_type", "ordering_value"]).to_pylist())
                assert block.header[HeaderKey.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS] == "20260815150804768"
    assert deletes == [
        {"record_key": "c", "ordering_type": OrderingType.LONG, "ordering_value": 50},
        {"record_key": "d", "ordering_type": OrderingType.LONG, "ordering_value": 300},
    ]
    table_dir = unzip_fixture("quickstart_trips_table/mor/avro/table_partial_update.zip")
    (path,) = data_log_files(table_dir)
    (block,) = LogReader(Storage(str(path.parent)), path.name).blocks()
    assert block.is_partial and block.header[HeaderKey.IS_PARTIAL] == "true"
    table = block.read()
    assert table.schema.names == [*META_FIELDS, "value"]
    assert table.column("value").to_pylist() == ["v2_partial", "v1_partial"]


def test_fixture_decimals_and_timestamps_in_avro_block(unzip_fixture):
    table_dir = unzip_fixture("sample_table/mor/avro/v9_txns_simple_nometa.zip")
    path = next(p for p in data_log_files(table_dir) if "region=apac" in str(p))
    (block,) = LogReader(Storage(str(path.parent)), path.name).blocks()
    row = block.read().to_pylist()[0]
    assert block.read().schema.field("amount").type == pa.decimal128(15, 2)
    assert row["amount"] == decimal.Decimal("8900.00")
    assert row["txn_datetime"] == datetime.datetime(2024, 1, 16, 8, 15, tzinfo=datetime.timezone.utc)
    assert row["txn_date"] == datetime.date(2024, 1, 16)


# ------------------------------------------------------------------------------ corruption
def three_blocks() -> tuple[bytes, list]:
    return encode_blocks(
        [
            ParquetDataBlock(data_table(5), {HeaderKey.INSTANT_TIME: T1}),
            DeleteBlock.from_keys(["k0001"], T2),
            AvroDataBlock(data_table(2, T3), {HeaderKey.INSTANT_TIME: T3}),
        ]
    )


@pytest.mark.parametrize("last", ["avro", "parquet"])
def test_torn_tail_at_every_offset(last):
    blocks = [DeleteBlock.from_keys(["k0001"], T2), AvroDataBlock(data_table(2), {HeaderKey.INSTANT_TIME: T1})]
    final = (
        AvroDataBlock(data_table(3, T3), {HeaderKey.INSTANT_TIME: T3})
        if last == "avro"
        else ParquetDataBlock(data_table(3, T3), {HeaderKey.INSTANT_TIME: T3})
    )
    data, locations = encode_blocks([*blocks, final])
    start = locations[-1].offset
    for cut in range(start, len(data)):
        reader = LogReader(data=data[:cut], include_corrupt=True)
        got = reader.blocks()
        good = [b for b in got if b.block_type != BlockType.CORRUPT]
        assert [b.block_type for b in good] == [BlockType.DELETE, BlockType.AVRO_DATA], cut
        assert good[1].read().num_rows == 2
        assert reader.corrupt_count == (0 if cut == start else 1), cut
        if cut > start:
            assert (got[-1].offset, got[-1].size) == (start, cut - start)
    assert len(read_back(data)) == 3


def test_torn_tail_in_local_file(tmp_path):
    data, locations = three_blocks()
    storage = Storage(str(tmp_path))
    storage.write("torn.log", data[: locations[2].offset + 40])
    reader = LogReader(storage, "torn.log")
    assert [b.block_type for b in reader] == [BlockType.PARQUET_DATA, BlockType.DELETE]
    assert reader.corrupt_count == 1


def test_garbage_block_between_valid_blocks():
    data, locations = three_blocks()
    garbage = MAGIC + u64(10**9) + b"\x01\x02garbage"
    spliced = data[: locations[1].offset] + garbage + data[locations[1].offset :]
    reader = LogReader(data=spliced, include_corrupt=True)
    kinds = [b.block_type for b in reader]
    assert kinds == [BlockType.PARQUET_DATA, BlockType.CORRUPT, BlockType.DELETE, BlockType.AVRO_DATA]
    assert reader.corrupt_blocks[0].offset == locations[1].offset and reader.corrupt_blocks[0].size == len(garbage)


def test_bad_reverse_pointer_and_bad_magic():
    data, locations = three_blocks()
    second_end = locations[1].offset + locations[1].size
    broken = bytearray(data)
    broken[second_end - 1] ^= 0xFF  # reverse pointer of block 2
    reader = LogReader(data=bytes(broken))
    assert [b.block_type for b in reader] == [BlockType.PARQUET_DATA, BlockType.AVRO_DATA]
    assert reader.corrupt_count == 1
    broken = bytearray(data)
    broken[0:6] = b"#HUDX#"
    reader = LogReader(data=bytes(broken))
    assert [b.block_type for b in reader] == [BlockType.DELETE, BlockType.AVRO_DATA]
    assert reader.corrupt_count == 1


def test_block_not_followed_by_magic_is_corrupt():
    data, locations = three_blocks()
    first_end = locations[0].size
    spliced = data[:first_end] + b"junk" + data[first_end:]
    reader = LogReader(data=spliced, include_corrupt=True)
    assert [b.block_type for b in reader] == [BlockType.CORRUPT, BlockType.DELETE, BlockType.AVRO_DATA]
    assert reader.corrupt_blocks[0].size == first_end + 4


def test_only_garbage():
    reader = LogReader(data=b"no magic anywhere in here" * 10)
    assert reader.blocks() == [] and reader.corrupt_count == 1


def test_unsupported_version_raises():
    data = bytearray(encode_block(DeleteBlock.from_keys(["a"], T1)))
    data[14:18] = u32(2)
    with pytest.raises(LogFormatError, match="version 2"):
        LogReader(data=bytes(data)).blocks()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_property_random_damage_never_raises(data):
    raw, locations = three_blocks()
    raw = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if action == "flip":
            raw[pos] ^= data.draw(st.integers(1, 255))
        elif action == "cut":
            del raw[pos : pos + data.draw(st.integers(1, 64))]
        else:
            raw[pos:pos] = data.draw(st.binary(min_size=1, max_size=32))
    reader = LogReader(data=bytes(raw), include_corrupt=True)
    try:
        blocks = reader.blocks()
    except LogFormatError as exc:  # only a well-framed block with a damaged type/version word
        assert re.search("unknown log block type|unsupported format version", str(exc))
        return
    covered = sum(b.size for b in blocks)
    assert covered == len(raw)  # every byte is in exactly one block, good or corrupt


_COLUMN_KINDS = {
    "long": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "int": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "double": (pa.float64(), st.floats(allow_nan=False)),
    "string": (pa.string(), st.text(max_size=12)),
    "bool": (pa.bool_(), st.booleans()),
    "bytes": (pa.binary(), st.binary(max_size=12)),
    "ts": (pa.timestamp("us", tz="UTC"), st.integers(-(2**50), 2**50)),
}


@st.composite
def block_tables(draw):
    n = draw(st.integers(0, 12))
    kinds = draw(st.lists(st.sampled_from(sorted(_COLUMN_KINDS)), min_size=1, max_size=5))
    columns = {m: pa.array([draw(st.text(max_size=8)) for _ in range(n)], pa.string()) for m in META_FIELDS}
    for i, kind in enumerate(kinds):
        arrow_type, values = _COLUMN_KINDS[kind]
        columns[f"c{i}"] = pa.array(draw(st.lists(st.none() | values, min_size=n, max_size=n)), arrow_type)
    return pa.table(columns)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block_tables(), st.sampled_from([ParquetDataBlock, AvroDataBlock]))
def test_property_data_block_round_trip(table, cls):
    block = cls(table, data_block_header(T1, table.schema))
    (back,) = read_back(encode_block(block))
    assert type(back) is cls
    assert back.read().equals(table)
    assert back.num_rows == table.num_rows


def test_parquet_blocks_declare_key_order_only_when_keys_increase():
    table = data_table(5)  # keys in increasing order
    meta = pq.ParquetFile(pa.BufferReader(ParquetDataBlock(table, {HeaderKey.INSTANT_TIME: T1}).encode_content())).metadata
    assert meta.row_group(0).sorting_columns == (pq.SortingColumn(2),)
    shuffled = table.take([1, 0, 2, 3, 4])
    meta = pq.ParquetFile(pa.BufferReader(ParquetDataBlock(shuffled, {HeaderKey.INSTANT_TIME: T1}).encode_content())).metadata
    assert meta.row_group(0).sorting_columns == ()


def test_reader_with_the_listed_size_reads_only_the_listed_blocks(tmp_path):
    """A reader given the size the file had when listed neither asks the storage for it nor
    reads blocks appended since (a scan reads the log as its snapshot listed it)."""
    storage = Storage(str(tmp_path))
    first = encode_block(ParquetDataBlock(data_table(3), {HeaderKey.INSTANT_TIME: T1}))
    second = encode_block(ParquetDataBlock(data_table(2), {HeaderKey.INSTANT_TIME: T1}))
    (tmp_path / ".f.log.1_0-1-0").write_bytes(first + second)
    listed = LogReader(storage, ".f.log.1_0-1-0", size=len(first)).blocks()
    assert [b.num_rows for b in listed] == [3]
    assert [b.num_rows for b in LogReader(storage, ".f.log.1_0-1-0").blocks()] == [3, 2]
    (tmp_path / ".e.log.1_0-1-0").write_bytes(b"")
    assert LogReader(storage, ".e.log.1_0-1-0", size=0).blocks() == []

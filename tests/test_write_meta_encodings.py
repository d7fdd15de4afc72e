"""The footer of every family file of an insert declares the meta columns' encodings the write
path chose for them (handle.META_PARQUET_OPTIONS, parquet_options.NO_STATISTICS; log blocks: handle.LOG_BLOCK_STATISTICS)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import pyhudi

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_write import only_block  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), *[pa.field(f"c{c}", pa.float64()) for c in range(4)]])


def _chunks(block) -> dict:
    group = block.parquet_file().metadata.row_group(0)
    return {group.column(i).path_in_schema: group.column(i) for i in range(group.num_columns)}


def test_insert_family_files_declare_the_meta_column_encodings(tmp_path):
    n = 4000
    rng = np.random.default_rng(2)
    rows = pa.table({"id": np.arange(n), **{f"c{c}": rng.random(n) for c in range(4)}}, schema=SCHEMA)
    t = pyhudi.create_table(str(tmp_path / "w"), SCHEMA, "id", num_buckets=2,
                            column_families={"f0": "c0,c1", "f1": "c2,c3"})
    instant = t.insert(rows, options={"hoodie.pyhudi.insert.full.row": "false"})  # (full-row: test_full_row_logs.py)
    files = sorted(t.last_write.files)
    assert len(files) == 4  # 2 buckets x 2 families
    for name in files:
        block = only_block(t, name)
        chunks = _chunks(block)
        assert list(chunks)[:6] == ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                                    "_hoodie_partition_path", "_hoodie_file_name", "id"]
        for constant in ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_file_name"):
            assert (chunks[constant].has_dictionary_page, chunks[constant].compression) == (True, "SNAPPY"), constant
        seqno, key, ident = chunks["_hoodie_commit_seqno"], chunks["_hoodie_record_key"], chunks["id"]
        assert (seqno.has_dictionary_page, seqno.compression, seqno.is_stats_set) == (False, "SNAPPY", False)
        assert (key.has_dictionary_page, key.is_stats_set) == (False, True)
        assert (ident.compression, "DELTA_BINARY_PACKED" in ident.encodings) == ("UNCOMPRESSED", True)
        assert not chunks["_hoodie_partition_path"].is_stats_set and not chunks["_hoodie_file_name"].is_stats_set
        assert chunks["_hoodie_commit_time"].statistics.min == chunks["_hoodie_commit_time"].statistics.max == instant
        # the key field keeps its statistics (readers skip by key); random doubles: plain, uncompressed and,
        # in a log block, without statistics (a later block may change a value: never used to skip)
        assert ident.is_stats_set and (ident.statistics.min, ident.statistics.max) == (min(map(int, block.read().column(
            "_hoodie_record_key").to_pylist())), max(map(int, block.read().column("_hoodie_record_key").to_pylist())))
        for data in [c for c in chunks if c.startswith("c")]:
            assert (chunks[data].has_dictionary_page, chunks[data].compression, chunks[data].is_stats_set) == \
                (False, "UNCOMPRESSED", False)
        table = block.read()
        keys = table.column("_hoodie_record_key").to_pylist()
        assert keys == sorted(keys) and (key.statistics.min, key.statistics.max) == (keys[0], keys[-1])
        assert [c.column_index for c in block.parquet_file().metadata.row_group(0).sorting_columns] == [2]
        task = int(name.rsplit("_", 1)[1].split("-")[0])
        assert table.column("_hoodie_commit_seqno").to_pylist() == [f"{instant}_{task}_{i}" for i in range(len(keys))]
    assert t.read().sort_by("id").equals(rows)


def test_base_files_keep_every_data_columns_statistics_and_log_blocks_only_the_keys(tmp_path):
    n = 3000
    rng = np.random.default_rng(4)
    rows = pa.table({"id": np.arange(n), **{f"c{c}": rng.random(n) for c in range(4)}}, schema=SCHEMA)
    t = pyhudi.create_table(str(tmp_path / "b"), SCHEMA, "id", num_buckets=1)
    t.bulk_insert(rows)
    (base,) = t.last_write.files
    metadata = pq.read_metadata(f"{t.path}/{base}")
    stats = {metadata.schema.column(i).name: metadata.row_group(0).column(i).is_stats_set for i in range(metadata.num_columns)}
    assert stats == {"_hoodie_commit_time": True, "_hoodie_commit_seqno": False, "_hoodie_record_key": True,
                     "_hoodie_partition_path": False, "_hoodie_file_name": False, "id": True,
                     "c0": True, "c1": True, "c2": True, "c3": True}
    update = rows.slice(0, 10).set_column(1, "c0", pa.array(np.full(10, 7.0)))
    t.upsert(update)
    (log,) = t.last_write.files
    chunks = _chunks(only_block(t, log))
    assert {name: chunk.is_stats_set for name, chunk in chunks.items()} == {
        "_hoodie_commit_time": True, "_hoodie_commit_seqno": False, "_hoodie_record_key": True,
        "_hoodie_partition_path": False, "_hoodie_file_name": False, "id": True,
        "c0": False, "c1": False, "c2": False, "c3": False}
    # a filter on a data column still reads the updated values (log statistics were never used for it)
    got = t.read(filters=[("c0", "=", 7.0)]).sort_by("id")
    assert got.column("id").to_pylist() == list(range(10))
    assert t.read(filters=[("id", "=", 5)]).column("c0").to_pylist() == [7.0]


def test_log_blocks_of_tables_without_buckets_keep_only_the_key_statistics(tmp_path):
    rows = pa.table({"id": np.arange(100), **{f"c{c}": np.arange(100.0) + c for c in range(4)}}, schema=SCHEMA)
    t = pyhudi.create_table(str(tmp_path / "s"), SCHEMA, "id")  # merge-on-read, simple index
    t.insert(rows)
    t.upsert(rows.slice(0, 5))
    (log,) = [f for f in t.last_write.files if ".log." in f]
    chunks = _chunks(only_block(t, log))
    assert [name for name, chunk in chunks.items() if chunk.is_stats_set] == ["_hoodie_commit_time",
                                                                              "_hoodie_record_key", "id"]

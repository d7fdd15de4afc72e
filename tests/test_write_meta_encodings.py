"""The footer of every family file of an insert declares the meta columns' encodings the write
path chose for them (handle.META_PARQUET_OPTIONS, parquet_options.NO_STATISTICS)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

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
    instant = t.insert(rows)
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
        for data in [c for c in chunks if c.startswith("c")]:  # random doubles: plain, uncompressed, with statistics
            assert (chunks[data].has_dictionary_page, chunks[data].compression, chunks[data].is_stats_set) == \
                (False, "UNCOMPRESSED", True)
        table = block.read()
        keys = table.column("_hoodie_record_key").to_pylist()
        assert keys == sorted(keys) and (key.statistics.min, key.statistics.max) == (keys[0], keys[-1])
        assert [c.column_index for c in block.parquet_file().metadata.row_group(0).sorting_columns] == [2]
        task = int(name.rsplit("_", 1)[1].split("-")[0])
        assert table.column("_hoodie_commit_seqno").to_pylist() == [f"{instant}_{task}_{i}" for i in range(len(keys))]
    assert t.read().sort_by("id").equals(rows)

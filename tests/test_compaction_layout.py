"""How compaction lays out the base files it writes: row groups of a bounded size (the writer's
memory bound), whatever the size of the file group. Structural checks, not timings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import pyhudi
from pyhudi.logformat.parquet_options import constant_strings
from pyhudi.schema import META_FIELDS
from pyhudi.storage.fs import Storage
from pyhudi.write.base_file import ROW_GROUP_BUFFER_BYTES, write_base_file

NAME = "f1_0-0-0_20250101000000000.parquet"


def meta_batches(rows: int, per_batch: int) -> list[pa.RecordBatch]:
    """Rows with meta values (keys "000000".. in key order), ``_hoodie_file_name`` already the
    target's name (as the one-entry dictionary the writer hands Parquet), in batches of
    ``per_batch``."""
    keys = [f"{i:06d}" for i in range(rows)]
    table = pa.table({
        META_FIELDS[0]: pa.array(["20240101000000000" if i % 2 else "20240202000000000" for i in range(rows)]),
        META_FIELDS[1]: pa.array([f"20240101000000000_0_{i}" for i in range(rows)]),
        META_FIELDS[2]: pa.array(keys),
        META_FIELDS[3]: pa.array([""] * rows),
        META_FIELDS[4]: constant_strings(NAME, rows),
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "x": pa.array(np.arange(rows, dtype=np.float64) / 2),
    })
    return table.to_batches(max_chunksize=per_batch)


def test_the_base_file_writer_never_buffers_more_than_its_row_group_cap(tmp_path):
    batches = meta_batches(10_000, 700)
    per_row = batches[0].nbytes // batches[0].num_rows
    cap = 50 * per_row + per_row // 2  # room for 50 rows
    storage = Storage(str(tmp_path))
    out = write_base_file(storage, NAME, lambda: pa.RecordBatchReader.from_batches(batches[0].schema, batches),
                          NAME, ["id"], buffer_bytes=cap)
    assert out == (10_000, "000000", "009999")
    metadata = pq.ParquetFile(tmp_path / NAME).metadata
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [50] * 200
    written = pq.read_table(tmp_path / NAME)
    assert written.schema.field(META_FIELDS[4]).type == pa.string()  # stored as plain strings
    expected = pa.Table.from_batches(batches)
    expected = expected.set_column(4, META_FIELDS[4], expected.column(4).cast(pa.string()))
    assert written.equals(expected)  # every meta value kept as it was


def test_row_groups_are_capped_by_bytes_not_by_the_120mb_block_size(tmp_path):
    batches = meta_batches(100_000, 16_384)
    per_row = batches[0].nbytes // batches[0].num_rows
    storage = Storage(str(tmp_path))
    write_base_file(storage, NAME, lambda: pa.RecordBatchReader.from_batches(batches[0].schema, batches), NAME, ["id"])
    metadata = pq.ParquetFile(tmp_path / NAME).metadata
    sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    per_group = ROW_GROUP_BUFFER_BYTES // per_row
    assert sizes == [per_group] * (100_000 // per_group) + [100_000 % per_group]


SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.float64()), ("b", pa.float64())])


def test_a_compaction_writes_row_groups_of_the_table_block_size(tmp_path):
    """``hoodie.parquet.block.size`` set small: the compacted base file has row groups of at most
    that many bytes of Arrow data, all of one size but the last, and the same rows."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families={"fa": "a", "fb": "b"},
                            options={"hoodie.parquet.block.size": "20000"})
    ids = np.arange(3000, dtype=np.int64)
    t.bulk_insert(pa.table({"id": ids, "a": ids / 2, "b": ids / 4}, schema=SCHEMA))
    t.upsert(pa.table({"id": ids[::3], "a": ids[::3] + 0.5}))
    expected = t.read().sort_by("id")
    instant = t.compact(families=["fa"])
    (path,) = Path(t.path).glob(f"*_{instant}_fa.parquet")
    parquet = pq.ParquetFile(path)
    sizes = [parquet.metadata.row_group(i).num_rows for i in range(parquet.metadata.num_row_groups)]
    first = parquet.read_row_group(0).drop_columns([META_FIELDS[4]])  # (the writer holds it as a dictionary)
    per_row = first.nbytes // first.num_rows
    assert len(set(sizes[:-1])) == 1 and sizes[0] * per_row <= 20000 and sum(sizes) == 3000
    assert len(sizes) >= 3000 * per_row // 20000
    assert t.read().sort_by("id").equals(expected)

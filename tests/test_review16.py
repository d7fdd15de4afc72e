"""Review of the session's later kernel changes (session 17, helper review16).

``Table.delete`` learned to take plain key values (``t.delete(["a", "b"])``) on unpartitioned
one-key tables; the check that tells key values from rows took any list for key values, so a
list of record batches — rows, as every write accepts them — was refused (partitioned tables)
or converted as keys (unpartitioned). And keys in NumPy arrays or a pandas Series, the usual
forms of a column of keys, were refused with an unrelated message (or an AttributeError).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import SchemaError

SCHEMA = pa.schema([("id", pa.string()), ("day", pa.string()), ("v", pa.float64())])


def _ids(t) -> list[str]:
    return sorted(r["id"] for r in pyhudi.open_table(t.path).read(columns=["id"]).to_pylist())


def _table(tmp_path, name, partitioned):
    t = pyhudi.create_table(str(tmp_path / name), SCHEMA, "id", partition_fields="day" if partitioned else None)
    t.insert(pa.table({"id": ["a", "b", "c", "d"], "day": ["x", "y", "x", "y"], "v": [1.0, 2.0, 3.0, 4.0]},
                      schema=SCHEMA))
    return t


@pytest.mark.parametrize("partitioned", [True, False])
@pytest.mark.parametrize("container", [list, tuple])
def test_delete_takes_a_list_of_record_batches_as_rows(tmp_path, partitioned, container):
    t = _table(tmp_path, "t", partitioned)
    columns = {"id": ["a"], "day": ["x"]} if partitioned else {"id": ["a"]}
    more = {"id": ["d"], "day": ["y"]} if partitioned else {"id": ["d"]}
    t.delete(container([pa.record_batch(columns), pa.record_batch(more)]))
    assert _ids(t) == ["b", "c"]


def test_delete_takes_keys_as_a_numpy_array_or_a_pandas_series(tmp_path):
    pd = pytest.importorskip("pandas")
    t = _table(tmp_path, "t", partitioned=False)
    t.delete(np.array(["a", "zz"]))  # (a key not in the table: nothing to delete)
    assert _ids(t) == ["b", "c", "d"]
    frame = pd.DataFrame({"id": ["b", "c", "q"], "v": [0.0, 1.0, 2.0]})
    t.delete(frame["id"][frame["v"] < 1.5])
    assert _ids(t) == ["d"]


def test_keys_as_an_array_on_a_partitioned_table_are_refused_naming_the_columns(tmp_path):
    t = _table(tmp_path, "t", partitioned=True)
    with pytest.raises(SchemaError, match="delete of plain key values needs an unpartitioned table with one record "
                                          "key field; table 't' needs rows with columns id, day"):
        t.delete(np.array(["a"]))
    assert _ids(t) == ["a", "b", "c", "d"]


# ------------------------------------------------------------------------------ compaction's options
def _meta_rows(rows: int) -> pa.Table:
    """Merged rows as compaction streams them (meta values, keys in order), with a category
    column (dictionary-worthy) and random doubles (incompressible)."""
    from pyhudi.logformat.parquet_options import constant_strings
    from pyhudi.schema import META_FIELDS

    rng = np.random.default_rng(7)
    return pa.table({
        META_FIELDS[0]: pa.array(["20240101000000000"] * rows),
        META_FIELDS[1]: pa.array([f"20240101000000000_0_{i}" for i in range(rows)]),
        META_FIELDS[2]: pa.array([f"{i:06d}" for i in range(rows)]),
        META_FIELDS[3]: pa.array([""] * rows),
        META_FIELDS[4]: constant_strings("f1_0-0-0_20250101000000000.parquet", rows),
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "cat": pa.array([("alpha", "beta", "gamma")[i % 3] for i in range(rows)]),
        "v": pa.array(rng.random(rows)),
    })


def _column_settings(path) -> dict[str, tuple[str, tuple[str, ...]]]:
    import pyarrow.parquet as pq

    group = pq.ParquetFile(path).metadata.row_group(0)
    return {group.column(i).path_in_schema: (group.column(i).compression, tuple(sorted(group.column(i).encodings)))
            for i in range(group.num_columns)}


def test_a_compacted_file_whose_first_merged_batch_has_few_rows_is_written_with_the_settings_of_its_rows(tmp_path):
    """The base file writer chose the whole file's Parquet settings from the merge's first batch.
    A merge whose first batch is a handful of rows (the base file's first row group almost all
    deleted) wrote a file of any size with the few-rows settings: snappy on every column (random
    doubles too), no dictionary for repeated values, no delta encoding of the integer key."""
    from pyhudi.storage.fs import Storage
    from pyhudi.write.base_file import write_base_file

    rows = _meta_rows(20_000)
    name = "f1_0-0-0_20250101000000000.parquet"
    settings = {}
    for label, first in (("large first batch", 16_384), ("8-row first batch", 8)):
        batches = rows.slice(0, first).to_batches() + rows.slice(first).to_batches(max_chunksize=16_384)
        folder = tmp_path / label.replace(" ", "_")
        folder.mkdir()
        out = write_base_file(Storage(str(folder)), name,
                              lambda b=batches: pa.RecordBatchReader.from_batches(b[0].schema, b), name, ["id"])
        assert out == (20_000, "000000", "019999")
        settings[label] = _column_settings(folder / name)
    assert settings["large first batch"]["cat"][1] == ("PLAIN", "RLE", "RLE_DICTIONARY")
    assert settings["large first batch"]["v"][0] == "UNCOMPRESSED"
    assert settings["8-row first batch"] == settings["large first batch"]


def test_a_base_file_of_few_rows_in_several_batches_and_one_of_empty_batches_are_written(tmp_path):
    import pyarrow.parquet as pq

    from pyhudi.storage.fs import Storage
    from pyhudi.write.base_file import write_base_file

    rows = _meta_rows(20)
    name = "f1_0-0-0_20250101000000000.parquet"
    batches = rows.to_batches(max_chunksize=3)
    out = write_base_file(Storage(str(tmp_path)), name, lambda: pa.RecordBatchReader.from_batches(batches[0].schema,
                                                                                                  batches), name, ["id"])
    assert out == (20, "000000", "000019")
    written = pq.read_table(tmp_path / name)
    assert written.column("id").to_pylist() == list(range(20))
    assert pq.ParquetFile(tmp_path / name).metadata.num_row_groups == 1
    empty = [rows.slice(0, 0).to_batches()[0]] if rows.slice(0, 0).to_batches() else [
        pa.RecordBatch.from_pylist([], schema=rows.schema)]
    (tmp_path / "e").mkdir()
    out = write_base_file(Storage(str(tmp_path / "e")), name,
                          lambda: pa.RecordBatchReader.from_batches(rows.schema, empty * 2), name, ["id"])
    assert out == (0, None, None)
    read = pq.read_table(tmp_path / "e" / name)
    assert read.num_rows == 0 and read.schema.field("id").type == pa.int64()

"""Parquet read without ``pyarrow.parquet`` (:mod:`pyhudi.storage.parquet`): the reader answers
as ``pyarrow.parquet.ParquetFile`` does, and where pyarrow's private reader is not usable a
whole read goes through ``pyarrow.parquet`` with the same rows."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyhudi.storage import parquet as sp

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture
def path(tmp_path) -> str:
    table = pa.table({
        "id": pa.array(np.arange(1000, dtype=np.int64)),
        "nested": pa.array([{"x": i, "y": str(i)} for i in range(1000)]),
        "v": pa.array(np.arange(1000) / 4),
    })
    where = str(tmp_path / "f.parquet")
    pq.write_table(table, where, row_group_size=300)
    return where


def test_the_private_reader_is_used_with_this_pyarrow():
    assert sp.NATIVE and sp.reader_class() is sp.ParquetFile


def test_reads_equal_pyarrow_parquet(path):
    ours, theirs = sp.parquet_file(pa.OSFile(path, "r")), pq.ParquetFile(path)
    assert ours.metadata.equals(theirs.metadata) and ours.schema_arrow.equals(theirs.schema_arrow)
    assert ours.num_row_groups == theirs.num_row_groups == 4
    assert ours.read().equals(theirs.read())
    for columns in (["v"], ["nested"], ["nested.y", "id"], ["missing"], []):
        assert ours.read(columns=columns).equals(theirs.read(columns=columns)), columns
        assert ours.read_row_groups([1, 3], columns=columns).equals(theirs.read_row_groups([1, 3], columns=columns))
    assert ours.read_row_group(2, columns=["id"]).equals(theirs.read_row_group(2, columns=["id"]))
    mine = [b.num_rows for b in ours.iter_batches(batch_size=128, row_groups=[0, 1], columns=["v"])]
    assert mine == [b.num_rows for b in theirs.iter_batches(batch_size=128, row_groups=[0, 1], columns=["v"])]
    with pytest.raises(ValueError, match="batch_size must be greater than zero"):
        ours.iter_batches(batch_size=0)


def test_a_footer_read_before_is_reused(path):
    footer = pq.read_metadata(path)
    reader = sp.parquet_file(pa.OSFile(path, "r"), metadata=footer, pre_buffer=False, buffer_size=1 << 16)
    assert reader.metadata.equals(footer) and reader.read(columns=["id"]).num_rows == 1000


def test_a_callers_file_stays_open_and_a_path_opened_here_is_closed(path):
    source = pa.OSFile(path, "r")
    with sp.parquet_file(source) as reader:
        reader.read(columns=["id"])
    assert not source.closed
    own = sp.ParquetFile(path)
    own.close()
    assert own.closed


_FALLBACK = """
import json, sys
import pyarrow.parquet  # (binds the real reader before the private one is replaced)
import pyarrow._parquet as native

class Other(native.ParquetReader):  # an `open` without the arguments pyhudi passes
    def open(self, source):
        raise AssertionError("never called")

native.ParquetReader = Other
import pyhudi
from pyhudi.storage import parquet
rows = pyhudi.open_table(sys.argv[1]).read(columns=["id", "a", "b"]).sort_by("id")
print(json.dumps({"native": parquet.NATIVE, "reader": parquet.reader_class().__module__,
                  "rows": rows.to_pydict()}))
"""


def test_without_a_usable_private_reader_reads_go_through_pyarrow_parquet(tmp_path):
    import pyhudi

    ids = np.arange(40, dtype=np.int64)
    data = pa.table({"id": ids, "a": ids * 1.0, "b": ids * 2.0})
    table = pyhudi.create_table(str(tmp_path / "t"), data.schema, "id", num_buckets=2,
                                column_families={"fa": "a", "fb": "b"})
    table.insert(data)
    table.upsert(pa.table({"id": pa.array([3, 30], pa.int64()), "a": [-1.0, -2.0]}))
    expected = table.read(columns=["id", "a", "b"]).sort_by("id").to_pydict()
    assert expected["a"][3] == -1.0 and expected["a"][30] == -2.0
    done = subprocess.run([sys.executable, "-c", _FALLBACK, str(tmp_path / "t")], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["native"] is False and out["reader"] == "pyarrow.parquet.core"
    assert out["rows"] == expected

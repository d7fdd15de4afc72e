"""Large writes gathered row group by row group as they are written (:mod:`pyhudi.write.streamed_rows`):
the same bytes as the whole table gathered first and written at once."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.logformat import constant_strings
from pyhudi.logformat.parquet_options import row_group_rows, write_parquet
from pyhudi.timeline.timeline import Timeline
from pyhudi.write import shared_gather
from pyhudi.write.shared_gather import SharedGather
from pyhudi.write.streamed_rows import StreamedRows

KEY = "_hoodie_record_key"
INSTANT = "20261124101500123"


def _table(n: int) -> pa.Table:
    rng = np.random.default_rng(3)
    return pa.table({"k": pa.array([f"k{i:05d}" for i in range(n)]), "x": rng.random(n),
                     "y": pa.array(rng.integers(0, 9, n)), "c": constant_strings("p=1", n)})


def _streamed(table: pa.Table, held: list[str], fetched: list) -> StreamedRows:
    def fetch(start: int, length: int) -> pa.Table:
        fetched.append((start, length))
        return table.slice(start, length)

    return StreamedRows(table.schema, table.num_rows, {c: table.column(c) for c in held}, fetch)


def _written(table, options) -> bytes:
    sink = io.BytesIO()
    write_parquet(table, sink, options)
    return sink.getvalue()


@pytest.mark.parametrize("rows,row_group", [(1000, 300), (1000, 1000), (1000, None), (7, 2)])
@pytest.mark.parametrize("with_dictionary", [True, False])
def test_streamed_rows_write_the_bytes_of_the_whole_table(rows, row_group, with_dictionary):
    table = _table(rows) if with_dictionary else _table(rows).drop_columns(["c"])
    options = {"compression": "none", "use_dictionary": ["c"], "write_batch_size": 128}
    if row_group is not None:
        options["row_group_size"] = row_group
    fetched: list = []
    streamed = _written(_streamed(table, ["k"], fetched), options)
    assert streamed == _written(table, options)
    per_group = row_group_rows(row_group, rows)
    assert fetched == [(s, min(per_group, rows - s)) for s in range(0, rows, per_group)]
    back = pq.read_table(io.BytesIO(streamed))
    assert back.num_rows == rows and back.column("x").equals(table.column("x"))
    assert pq.ParquetFile(io.BytesIO(streamed)).metadata.num_row_groups == -(-rows // per_group)


def test_row_groups_follow_pyarrow():
    assert row_group_rows(300, 1000) == 300
    assert row_group_rows(None, 1000) == 1000
    assert row_group_rows(5_000_000, 3_000_000) == 1 << 20  # (Arrow's cap on a row group)
    assert row_group_rows(None, 0) == 1


def test_a_streamed_group_holds_its_keys_and_gathers_the_rest_per_range():
    source = pa.table({KEY: ["b", "a", "d", "c", "e", "f"], "id": [2, 1, 4, 3, 5, 6],
                       "x": [0.2, 0.1, 0.4, 0.3, 0.5, 0.6]})
    groups = [pa.array([0, 1, 4], pa.int64()), pa.array([2, 3, 5], pa.int64())]
    shared = SharedGather(source, groups, None, "id", KEY, [["id", "x"]], row_group_rows=2)
    assert shared.streams()
    rows = shared.streamed(0, [KEY, "id", "x"])
    assert sorted(rows.held) == [KEY, "id"] and rows.num_rows == 3
    assert rows.column(KEY).to_pylist() == ["a", "b", "e"]
    assert rows.slice_rows(1, 2).to_pylist() == [{KEY: "b", "id": 2, "x": 0.2}, {KEY: "e", "id": 5, "x": 0.5}]
    assert rows.materialize().equals(shared.rows(0, [KEY, "id", "x"]))
    assert not SharedGather(source, groups, None, "id", KEY, [["x"]], row_group_rows=3).streams()
    assert not SharedGather(source, groups, None, "id", KEY, [["x"]]).streams()


def _insert(path: Path, data: pa.Table, families, streams: bool, monkeypatch, operation: str = "insert") -> dict:
    """The files of ``data`` inserted at :data:`INSTANT` with row groups of 150 rows, streamed
    or (``streams=False``) gathered whole first; ``{relative path: bytes}``."""
    monkeypatch.setattr(Timeline, "new_instant_time", lambda self, *a, **k: INSTANT)
    if not streams:
        monkeypatch.setattr(SharedGather, "streams", lambda self: False)
    calls = []
    real = SharedGather.streamed
    monkeypatch.setattr(SharedGather, "streamed", lambda self, *a: calls.append(a[0]) or real(self, *a))
    table = pyhudi.create_table(str(path), data.schema, "id", num_buckets=3, column_families=families, name="w",
                                options={"hoodie.parquet.block.size": 150 * 40})
    getattr(table, operation)(data)
    monkeypatch.undo()
    assert bool(calls) == streams
    files = {}
    for root, _, names in os.walk(path):
        for name in names:
            if ".log." in name:
                files[os.path.relpath(os.path.join(root, name), path)] = Path(root, name).read_bytes()
    assert files
    return files


@pytest.mark.parametrize("families", [None, {"f0": "a,b", "f1": "c"}])
@pytest.mark.parametrize("operation", ["insert", "upsert"])
def test_a_large_insert_streamed_writes_the_files_of_the_whole_gather(tmp_path, monkeypatch, families, operation):
    rng = np.random.default_rng(11)
    n = 2000
    data = pa.table({"id": pa.array(rng.permutation(n)), "a": rng.random(n), "b": pa.array(rng.integers(0, 99, n)),
                     "c": pa.array([f"v{i}" for i in range(n)])})
    streamed = _insert(tmp_path / "streamed", data, families, True, monkeypatch, operation)
    whole = _insert(tmp_path / "whole", data, families, False, monkeypatch, operation)
    assert streamed.keys() == whole.keys()
    for name in streamed:
        assert streamed[name] == whole[name], name
    back = pyhudi.open_table(str(tmp_path / "streamed")).read().sort_by("id")
    assert back.select(data.column_names).equals(data.sort_by("id"))


def test_a_large_bulk_insert_gathers_whole(tmp_path, monkeypatch):
    """Base files of a bulk insert keep the shared gather (nothing streamed)."""
    data = pa.table({"id": pa.array(np.arange(1000)), "a": np.arange(1000, dtype=np.float64)})
    calls = []
    monkeypatch.setattr(shared_gather.SharedGather, "streamed", lambda self, *a: calls.append(a) or None)
    table = pyhudi.create_table(str(tmp_path / "t"), data.schema, "id", num_buckets=2,
                                options={"hoodie.parquet.block.size": 100 * 16})
    table.bulk_insert(data)
    assert calls == []
    assert table.read().sort_by("id").equals(data)

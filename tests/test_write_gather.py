"""The write task's gather: rows already in the needed order are sliced (zero copy), any other
order is gathered — with exactly the same rows in the files either way."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.write import handle
from pyhudi.write.handle import contiguous_run, gather

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_write import only_block  # noqa: E402


def test_contiguous_run_recognises_exactly_one_ascending_run():
    assert contiguous_run(pa.array([3, 4, 5, 6], pa.int64())) == (3, 4)
    assert contiguous_run(pa.array([7], pa.int32())) == (7, 1)
    assert contiguous_run(pa.array([], pa.int64())) is None
    assert contiguous_run(pa.array([3, 5, 4, 6], pa.int64())) is None  # same ends, not a run
    assert contiguous_run(pa.array([3, 4, 4, 6], pa.int64())) is None
    assert contiguous_run(pa.array([6, 5, 4], pa.int64())) is None
    assert contiguous_run(pa.array([1, None, 3], pa.int64())) is None


def _buffer_address(table: pa.Table, name: str) -> int:
    return table.column(name).chunk(0).buffers()[1].address


def test_gather_slices_a_run_without_copying_and_takes_any_other_order():
    source = pa.table({"k": ["a", "b", "c", "d", "e"], "x": [1.0, 2.0, 3.0, 4.0, 5.0]})
    run = gather(source, pa.array(np.arange(1, 4)))
    assert run.to_pylist() == source.slice(1, 3).to_pylist()
    assert _buffer_address(run, "x") == _buffer_address(source, "x")  # the same memory: no copy
    shuffled = gather(source, pa.array([4, 0, 2]))
    assert shuffled.to_pylist() == [{"k": "e", "x": 5.0}, {"k": "a", "x": 1.0}, {"k": "c", "x": 3.0}]
    assert _buffer_address(shuffled, "x") != _buffer_address(source, "x")


def test_a_gather_of_checked_indices_takes_the_same_rows_and_unchecked_ones_are_refused():
    """The shared gather checks its order once (``in_bounds``): the take then skips its own
    check of every index; an order that is not checked keeps Arrow's check (and its error)."""
    from pyhudi.write.shared_gather import _within

    source = pa.table({"k": ["a", "b", "c", "d", "e"], "x": [1.0, 2.0, 3.0, 4.0, 5.0]})
    order = pa.array([4, 0, 2, 2], pa.int64())
    assert gather(source, order, in_bounds=True).equals(source.take(order))
    assert _within(order, 5) and _within(pa.array([], pa.int64()), 0)
    assert not _within(pa.array([0, 5]), 5) and not _within(pa.array([-1, 2]), 5)
    assert not _within(pa.array([0, None], pa.int64()), 5)
    with pytest.raises(IndexError):
        gather(source, pa.array([0, 5]))


SCHEMA = pa.schema([pa.field("k", pa.string(), False), ("a", pa.float64()), ("b", pa.int64())])


@pytest.mark.parametrize("arrival", ["sorted", "shuffled"])
def test_one_bucket_insert_writes_the_exact_rows_sorted_whether_or_not_the_input_was(tmp_path, monkeypatch, arrival):
    runs = []
    real = handle.contiguous_run
    monkeypatch.setattr(handle, "contiguous_run", lambda indices: runs.append(real(indices)) or runs[-1])
    n = 500
    keys = [f"key-{i:04d}" for i in range(n)]  # zero-padded: arrival order is the string order
    order = np.arange(n) if arrival == "sorted" else np.random.default_rng(3).permutation(n)
    rows = pa.table({"k": [keys[i] for i in order], "a": [float(i) for i in order], "b": order.tolist()},
                    schema=SCHEMA)
    t = pyhudi.create_table(str(tmp_path / arrival), SCHEMA, "k", num_buckets=1,
                            column_families={"fa": "a", "fb": "b"})
    t.insert(rows, options={"hoodie.pyhudi.insert.full.row": "false"})  # (one file per family: one gather each)
    # the shortcut is taken exactly when the input was in key order (the families share one gather plan)
    assert runs and all((run is not None) == (arrival == "sorted") for run in runs)
    expected = [{"k": keys[i], "a": float(i), "b": i} for i in range(n)]
    assert t.read().sort_by("k").to_pylist() == expected
    files = sorted(t.last_write.files)
    assert len(files) == 2 and all(".log." in f for f in files)
    for name in files:  # every log block holds its family's rows in key order, with their own values
        block = only_block(t, name).read()
        assert block.column("_hoodie_record_key").to_pylist() == keys
        column = "a" if "_fa.log." in name else "b"
        assert block.column(column).to_pylist() == [e[column] for e in expected]


def test_one_bucket_bulk_insert_base_files_hold_the_sorted_rows(tmp_path):
    n = 300
    rows = pa.table({"k": [f"key-{i:04d}" for i in range(n)], "a": [i / 2 for i in range(n)], "b": list(range(n))},
                    schema=SCHEMA)
    t = pyhudi.create_table(str(tmp_path / "bulk"), SCHEMA, "k", num_buckets=1)
    instant = t.bulk_insert(rows)
    (name,) = t.last_write.files
    written = pq.read_table(f"{t.path}/{name}")
    assert written.column("_hoodie_record_key").to_pylist() == rows.column("k").to_pylist()
    assert written.select(["k", "a", "b"]).to_pylist() == rows.to_pylist()
    assert written.column("_hoodie_commit_seqno").to_pylist() == [f"{instant}_0_{i}" for i in range(n)]


def test_sorted_input_in_several_chunks_is_sliced_and_read_back_exactly(tmp_path):
    parts = [pa.table({"k": [f"key-{i:04d}" for i in range(s, s + 100)], "a": [float(i) for i in range(s, s + 100)],
                       "b": list(range(s, s + 100))}, schema=SCHEMA) for s in (0, 100, 200)]
    rows = pa.concat_tables(parts)
    assert rows.column("k").num_chunks == 3
    t = pyhudi.create_table(str(tmp_path / "chunks"), SCHEMA, "k", num_buckets=1, column_families={"fa": "a", "fb": "b"})
    t.insert(rows)
    assert t.read().sort_by("k").equals(rows)
    for name in t.last_write.files:
        block = only_block(t, name).read()
        assert block.column("_hoodie_record_key").to_pylist() == rows.column("k").to_pylist()

"""Positional merging (pyhudi/read/positions.py): a pruned read of one family learns where its
log blocks' records sit in the base file, and later reads patch the base rows by position
without decoding a key. Every case checks exact rows, and which path the read took."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.errors import ReadError
from pyhudi.read import positions as positions_module
from pyhudi.schema import META_FIELDS
from read_helpers import POSITIONS_FAMILIES as FAMILIES
from read_helpers import POSITIONS_SCHEMA as SCHEMA
from read_helpers import fresh_metadata_cache
from read_helpers import positions_rows as _rows

N = 40
pytestmark = pytest.mark.usefixtures(fresh_metadata_cache.__name__)


PER_FAMILY_FILES = {"hoodie.pyhudi.insert.full.row": "false"}


def _table(tmp_path, key_type=pa.int64(), families=None, insert_options=PER_FAMILY_FILES, **options) -> pyhudi.Table:
    """One base file per family unless asked (not the default full-row base file): positions are
    learnt against the updated family's own base file."""
    schema = SCHEMA.set(0, pa.field("id", key_type))
    table = pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=1,
                                column_families=families or FAMILIES, **options)
    table.bulk_insert(_rows(range(N)).cast(schema), options=insert_options)
    return table


def _update(table, ids, a1, a2=None, written_positions=False) -> None:
    """An update of family fa; its log block carries no written positions unless asked (these
    tests are about positions learnt from the keys: tests/test_read_written_positions.py covers
    the written ones)."""
    key_type = table.schema.field("id").type
    columns = {"id": pa.array(ids if pa.types.is_integer(key_type) else [str(i) for i in ids], key_type),
               "a1": pa.array(a1, pa.float64())}
    if a2 is not None:
        columns["a2"] = pa.array(a2, pa.string())
    table.upsert(pa.table(columns), options=None if written_positions else {"hoodie.write.record.positions": "false"})


def _read(table, columns, **options):
    plan = table.plan_scan(columns, **options)
    parts = [task.run() for task in plan.tasks]
    metrics = {}
    for task in plan.tasks:
        for name, value in task.metrics.items():
            metrics[name] = metrics.get(name, 0) + value
    return pa.concat_tables(parts).sort_by("a2" if "a2" in columns else columns[0]), metrics


def _expected(changes: dict[int, tuple[float, str]]) -> list[dict]:
    rows = [{"a1": changes.get(i, (float(i), f"s{i}"))[0], "a2": changes.get(i, (float(i), f"s{i}"))[1]}
            for i in range(N)]
    return sorted(rows, key=lambda r: r["a2"])


def test_first_read_learns_positions_and_later_reads_decode_no_key(tmp_path, monkeypatch):
    table = _table(tmp_path)
    _update(table, [3, 17, 39], [30.0, 170.0, 390.0], ["x3", "x17", "x39"])
    expected = _expected({3: (30.0, "x3"), 17: (170.0, "x17"), 39: (390.0, "x39")})
    got, metrics = _read(table, ["a1", "a2"])
    assert got.to_pylist() == expected
    assert metrics["strategy.positions"] == 1 and metrics["positions_learnt"] == 1

    decoded = []
    original = positions_module._keys_of
    monkeypatch.setattr(positions_module, "_keys_of", lambda source: decoded.append(source.label) or original(source))
    monkeypatch.setattr("pyhudi.read.sources.KeySpec.keys", lambda *a, **k: pytest.fail("a key was decoded"))
    got, metrics = _read(table, ["a1", "a2"])
    assert got.to_pylist() == expected
    assert metrics["strategy.positions"] == 1 and "positions_learnt" not in metrics and decoded == []


def test_positions_are_learnt_against_the_default_full_row_base_file(tmp_path, monkeypatch):
    table = _table(tmp_path, insert_options=None)
    (base,) = next(iter(table.file_groups())).base_files
    assert base.name.family is None  # (one full-row base file: fa's update is merged into it)
    _update(table, [3, 17, 39], [30.0, 170.0, 390.0], ["x3", "x17", "x39"])
    expected = _expected({3: (30.0, "x3"), 17: (170.0, "x17"), 39: (390.0, "x39")})
    got, metrics = _read(table, ["a1", "a2"])
    assert got.to_pylist() == expected
    assert metrics["strategy.positions"] == 1 and metrics["positions_learnt"] == 1
    monkeypatch.setattr("pyhudi.read.sources.KeySpec.keys", lambda *a, **k: pytest.fail("a key was decoded"))
    got, metrics = _read(table, ["a1", "a2"])
    assert got.to_pylist() == expected and "positions_learnt" not in metrics


@pytest.mark.parametrize("key_type", [pa.int64(), pa.string()])
def test_later_blocks_win_and_partial_blocks_keep_the_columns_they_lack(tmp_path, key_type):
    table = _table(tmp_path, key_type)
    _update(table, [2, 5, 9], [20.0, 50.0, 90.0], ["x2", "x5", "x9"])
    _update(table, [5, 30], [500.0, 300.0])  # partial: a2 keeps x5 and s30
    expected = _expected({2: (20.0, "x2"), 5: (500.0, "x5"), 9: (90.0, "x9"), 30: (300.0, "s30")})
    for _ in range(2):  # learning, then from the cache
        got, metrics = _read(table, ["a1", "a2"])
        assert got.to_pylist() == expected
        assert metrics["strategy.positions"] == 1


def test_null_values_of_an_update_overwrite_by_position(tmp_path):
    table = _table(tmp_path)
    _update(table, [4, 6], [None, 60.0], [None, "x6"])
    for _ in range(2):
        got, metrics = _read(table, ["id", "a1", "a2"])
        by_id = {r["id"]: (r["a1"], r["a2"]) for r in got.to_pylist()}
        assert by_id[4] == (None, None) and by_id[6] == (60.0, "x6") and by_id[7] == (7.0, "s7")
        assert len(by_id) == N and metrics["strategy.positions"] == 1


def test_a_block_with_a_new_key_merges_by_key_and_is_not_learnt_again(tmp_path):
    table = _table(tmp_path)
    _update(table, [1, 100], [10.0, 1000.0], ["x1", "x100"])
    for attempt in range(2):
        got, metrics = _read(table, ["id", "a1"])
        assert got.sort_by("id").to_pylist() == [{"id": i, "a1": 10.0 if i == 1 else float(i)} for i in range(N)] + \
            [{"id": 100, "a1": 1000.0}]
        assert "strategy.positions" not in metrics
        assert metrics.get("positions_learnt", 0) == (1 if attempt == 0 else 0)


def test_deletes_and_event_time_ordering_merge_by_key(tmp_path):
    table = _table(tmp_path)
    _update(table, [1], [10.0], ["x1"])
    table.delete(pa.table({"id": pa.array([2], pa.int64())}))
    got, metrics = _read(table, ["id", "a1"])
    assert got.sort_by("id").column("id").to_pylist() == [i for i in range(N) if i != 2]
    assert got.sort_by("id").column("a1").to_pylist()[1] == 10.0 and "strategy.positions" not in metrics

    ordered = _table(tmp_path / "ordered", families={"fa": "a1,a2,ts;ts", "fb": "b"})
    ordered.upsert(pa.table({"id": pa.array([3, 4], pa.int64()), "a1": [30.0, 40.0], "a2": ["x3", "x4"],
                             "ts": pa.array([5, -1], pa.int64())}))  # the -1 update loses to the stored ts 0
    got, metrics = _read(ordered, ["id", "a1"])
    assert got.sort_by("id").column("a1").to_pylist()[3:5] == [30.0, 4.0]
    assert "strategy.positions" not in metrics


def test_streamed_in_small_batches_positions_cross_batch_boundaries(tmp_path):
    table = _table(tmp_path)
    ids = [0, 3, 4, 5, 11, 12, 13, 38, 39]
    _update(table, ids, [i * 100.0 for i in ids], [f"x{i}" for i in ids])
    _update(table, [4, 12, 20], [-4.0, -12.0, -20.0])
    changes = {i: (i * 100.0, f"x{i}") for i in ids}
    changes.update({4: (-4.0, "x4"), 12: (-12.0, "x12"), 20: (-20.0, "s20")})
    _read(table, ["a1", "a2"])  # learn
    plan = table.plan_scan(["a1", "a2"], batch_size=4)
    (task,) = plan.tasks
    batches = list(task.batches())
    assert max(b.num_rows for b in batches) <= 4 and task.metrics["strategy.positions"] == 1
    assert pa.Table.from_batches(batches).sort_by("a2").to_pylist() == _expected(changes)


def test_time_travel_reads_each_slice_by_its_own_positions(tmp_path):
    table = _table(tmp_path)
    _update(table, [7], [70.0], ["x7"])
    first = table.timeline[-1].completion_time
    _update(table, [7, 8], [700.0, 80.0], ["y7", "x8"])
    for _ in range(2):
        got, _ = _read(table, ["a1", "a2"], as_of=first)
        assert got.to_pylist() == _expected({7: (70.0, "x7")})
        got, metrics = _read(table, ["a1", "a2"])
        assert got.to_pylist() == _expected({7: (700.0, "y7"), 8: (80.0, "x8")})
        assert metrics["strategy.positions"] == 1


def test_a_base_file_lying_about_its_key_order_is_still_refused(tmp_path):
    table = _table(tmp_path)
    _update(table, [3], [30.0], ["x3"])
    base = next(b for b in next(iter(table.file_groups())).base_files if b.name.family == "fa")
    path = table.storage.full_path(base.relpath)
    rows = pq.read_table(path)
    stat = os.stat(path)
    liar = rows.take(list(reversed(range(rows.num_rows))))
    pq.write_table(liar, path, sorting_columns=[pq.SortingColumn(liar.schema.names.index(META_FIELDS[2]))])
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    with pytest.raises(ReadError, match="declares its rows sorted"):
        _read(table, ["a1", "a2"])


def test_cached_positions_belong_to_one_base_file(tmp_path):
    """Positions are kept for one version of the base file's bytes: the same rows rewritten in
    another layout (new size and modification time) are learnt again."""
    table = _table(tmp_path)
    _update(table, [5, 33], [50.0, 330.0], ["x5", "x33"])
    _read(table, ["a1", "a2"])
    for base in next(iter(table.file_groups())).base_files:  # (both families alike: equal key columns)
        path = table.storage.full_path(base.relpath)
        rows = pq.read_table(path)
        stat = os.stat(path)
        pq.write_table(rows, path, row_group_size=7,
                       sorting_columns=[pq.SortingColumn(rows.schema.names.index(META_FIELDS[2]))])
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    got, metrics = _read(table, ["a1", "a2"])
    assert got.to_pylist() == _expected({5: (50.0, "x5"), 33: (330.0, "x33")})
    assert metrics["row_groups"] == 6 + 1 and metrics["strategy.positions"] == 1 and metrics["positions_learnt"] == 1


def test_base_files_too_large_to_learn_merge_by_key(tmp_path, monkeypatch):
    table = _table(tmp_path)
    _update(table, [8], [80.0], ["x8"])
    monkeypatch.setattr(positions_module, "LEARN_MAX_KEY_BYTES", 12 * N - 1)  # (below 8 + 4 bytes per key)
    got, metrics = _read(table, ["a1", "a2"])
    assert got.to_pylist() == _expected({8: (80.0, "x8")})
    assert "strategy.positions" not in metrics and "positions_learnt" not in metrics


def test_a_block_with_more_rows_than_the_base_is_not_decoded_to_learn(tmp_path, monkeypatch):
    """Found in review: learning decoded a block's keys whatever its size (a block inserting 1M
    keys into a small file group), only to merge by key anyway."""
    table = _table(tmp_path)
    _update(table, list(range(N + 5)), [float(-i) for i in range(N + 5)])
    decoded = []
    original = positions_module._keys_of
    monkeypatch.setattr(positions_module, "_keys_of", lambda source: decoded.append(source.label) or original(source))
    for _ in range(2):
        got, metrics = _read(table, ["id", "a1"])
        assert got.sort_by("id").to_pylist() == [{"id": i, "a1": float(-i)} for i in range(N + 5)]
        assert decoded == [] and "strategy.positions" not in metrics


def test_a_block_carrying_none_of_the_columns_read_leaves_the_base_rows(tmp_path):
    """Found by the model test: a partial block of other columns than those read."""
    table = _table(tmp_path, families={"fa": "a1,a2,b,ts"})
    _update(table, [9, 10], [90.0, 100.0])  # a partial block: a1 only
    for _ in range(2):
        got, metrics = _read(table, ["b"])
        assert got.column("b").to_pylist() == [i * 2.0 for i in range(N)]
        assert metrics["strategy.positions"] == 1

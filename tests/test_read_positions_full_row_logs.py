"""Positional merging where a file group has no base file yet: the default insert writes one
full-row log file per new file group (docs/format.md), so after an update of one family the
read of that family's columns has the insert's block first and the update's block after it.

With default options such a read merges by position, as over a base file: the other families
(read only for their keys) hold no block the updated family does not read too, so they are not
read; the update block's positions in the insert's block are those its writer recorded (or,
written without them, learnt once and kept), and later reads replay the column reads. Every case checks exact rows against the merge by key
(``strategy="hash"``) and which path the read took.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import pyhudi
from read_helpers import POSITIONS_FAMILIES as FAMILIES
from read_helpers import POSITIONS_SCHEMA as SCHEMA
from read_helpers import fresh_metadata_cache, run_plan_tasks
from read_helpers import positions_rows as _rows

N = 60
pytestmark = pytest.mark.usefixtures(fresh_metadata_cache.__name__)


def _inserted(tmp_path, buckets: int = 2) -> pyhudi.Table:
    """A table written with default options: an insert, so each file group is one full-row log file."""
    table = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=buckets, column_families=FAMILIES)
    table.insert(_rows(range(N)))
    assert not [f for f in (tmp_path / "t").rglob("*.parquet")]  # (no base file anywhere)
    return table


def _update_fa(table: pyhudi.Table, ids: list[int], a1: float, written: bool = True) -> None:
    """Update family fa of ``ids``; ``written=False``: without record positions in the header."""
    options = None if written else {"hoodie.write.record.positions": "false"}
    table.upsert(pa.table({"id": pa.array(ids, pa.int64()), "a1": pa.array([a1] * len(ids)),
                           "a2": pa.array([f"u{i}" for i in ids])}), options=options)


POSITIONS_FROM = pytest.mark.parametrize("written", [True, False], ids=["written", "learnt"])
"""Positions recorded by the update's writer (the default), or learnt from the keys."""


def _read(table: pyhudi.Table, columns: list[str], **options) -> tuple[list[dict], dict]:
    rows, metrics = run_plan_tasks(table, columns, **options)
    return rows.sort_by("id").to_pylist(), metrics


def _expected(changed: dict[int, tuple[float, str]], columns: list[str]) -> list[dict]:
    rows = []
    for i in range(N):
        a1, a2 = changed.get(i, (float(i), f"s{i}"))
        full = {"id": i, "a1": a1, "a2": a2, "b": i * 2.0, "ts": 0}
        rows.append({c: full[c] for c in columns})
    return rows


@POSITIONS_FROM
def test_a_read_of_the_updated_family_merges_by_position_and_replays(tmp_path, written):
    table = _inserted(tmp_path)
    updated = [3, 4, 10, 41, 58]
    _update_fa(table, updated, 0.5, written)
    columns = ["id", "a1", "a2"]
    expected = _expected({i: (0.5, f"u{i}") for i in updated}, columns)
    rows, metrics = _read(table, columns)
    assert rows == expected
    found, other = ("positions_written", "positions_learnt") if written else ("positions_learnt", "positions_written")
    assert metrics["strategy.positions"] == 2 and metrics[found] == 2 and other not in metrics  # (both groups)
    assert metrics["families_skipped"] == 2 and "strategy.sort_merge" not in metrics
    assert table.read(columns=columns).sort_by("id").to_pylist() == expected  # (Table.read: collected, kept plan)
    again = table.plan_scan(columns)
    assert pa.concat_tables([t.run() for t in again.tasks]).sort_by("id").to_pylist() == expected
    assert sum(t.metrics.get("replayed", 0) for t in again.tasks) == 2  # (the column reads alone)
    assert _read(table, columns, strategy="hash")[0] == expected


def test_the_other_families_columns_and_whole_rows_read_the_same(tmp_path):
    table = _inserted(tmp_path)
    _update_fa(table, [0, 59], 9.0)
    changed = {0: (9.0, "u0"), 59: (9.0, "u59")}
    for columns in (["id", "b"], ["id", "a1", "b"], ["id", "a1", "a2", "b", "ts"]):
        assert _read(table, columns)[0] == _expected(changed, columns) == _read(table, columns, strategy="hash")[0]


def test_later_updates_win_by_position(tmp_path):
    table = _inserted(tmp_path, buckets=1)
    _update_fa(table, [1, 2, 3], 1.5)
    _update_fa(table, [2, 7], 2.5)
    rows, metrics = _read(table, ["id", "a1", "a2"])
    assert rows == _expected({1: (1.5, "u1"), 2: (2.5, "u2"), 3: (1.5, "u3"), 7: (2.5, "u7")}, ["id", "a1", "a2"])
    assert metrics["strategy.positions"] == 1


def test_an_update_adding_keys_merges_by_key(tmp_path):
    table = _inserted(tmp_path, buckets=1)
    table.upsert(pa.table({"id": pa.array([5, N + 1], pa.int64()), "a1": [0.25, 0.75], "a2": ["u5", "new"]}))
    rows, metrics = _read(table, ["id", "a1", "a2"])
    expected = _expected({5: (0.25, "u5")}, ["id", "a1", "a2"]) + [{"id": N + 1, "a1": 0.75, "a2": "new"}]
    assert rows == expected == _read(table, ["id", "a1", "a2"], strategy="hash")[0]
    assert "strategy.positions" not in metrics


def test_a_delete_keeps_the_other_families_and_merges_by_key(tmp_path):
    """A delete block removes rows: the key-only families are read, nothing merges by position."""
    table = _inserted(tmp_path, buckets=1)
    _update_fa(table, [8], 4.0)
    table.delete(pa.table({"id": pa.array([9, 11], pa.int64())}))
    rows, metrics = _read(table, ["id", "a1", "a2"])
    expected = [r for r in _expected({8: (4.0, "u8")}, ["id", "a1", "a2"]) if r["id"] not in (9, 11)]
    assert rows == expected == _read(table, ["id", "a1", "a2"], strategy="hash")[0]
    assert "strategy.positions" not in metrics


def test_a_key_only_family_with_its_own_update_adds_no_row_when_its_keys_are_known(tmp_path):
    """fb updated too (existing keys only): its update block's positions in the insert's block
    are learnt, so fb is still not read for a read of fa's columns; fa merges by position."""
    table = _inserted(tmp_path, buckets=1)
    _update_fa(table, [6], 3.0)
    table.upsert(pa.table({"id": pa.array([6, 12], pa.int64()), "b": [-1.0, -2.0], "ts": pa.array([1, 1])}))
    rows, metrics = _read(table, ["id", "a1", "a2"])
    assert rows == _expected({6: (3.0, "u6")}, ["id", "a1", "a2"]) == _read(table, ["id", "a1", "a2"], strategy="hash")[0]
    assert metrics["families_skipped"] == 1 and metrics["strategy.positions"] == 1


def test_a_replay_after_the_cache_was_cleared_reads_in_full(tmp_path, fresh_metadata_cache):
    table = _inserted(tmp_path, buckets=1)
    _update_fa(table, [20], 7.0)
    expected = _expected({20: (7.0, "u20")}, ["id", "a1"])
    assert table.read(columns=["id", "a1"]).sort_by("id").to_pylist() == expected
    fresh_metadata_cache.clear()
    assert table.read(columns=["id", "a1"]).sort_by("id").to_pylist() == expected
    rows, metrics = _read(table, ["id", "a1"])
    assert rows == expected and metrics["strategy.positions"] == 1


@POSITIONS_FROM
def test_a_read_of_a_family_not_updated_reads_the_insert_block_alone(tmp_path, written):
    """fa updated, fb read: fa (read for its keys) adds no row once its update block's positions
    in the insert's block are known — recorded by its writer, or learnt by this first read;
    kept for the next."""
    table = _inserted(tmp_path)
    _update_fa(table, [2, 30, 31], 5.0, written)
    columns = ["id", "b", "ts"]
    expected = _expected({}, columns)
    rows, metrics = _read(table, columns)
    assert rows == expected == _read(table, columns, strategy="hash")[0]
    assert metrics["families_skipped"] == 2 and metrics["strategy.keyless"] == 2
    assert metrics["positions_written" if written else "positions_learnt"] == 2
    assert "strategy.sort_merge" not in metrics
    rows, metrics = _read(table, columns)
    assert rows == expected and metrics["families_skipped"] == 2
    assert "positions_learnt" not in metrics and "positions_written" not in metrics  # (kept)


def test_an_update_adding_keys_keeps_the_updated_family_for_a_read_of_another(tmp_path):
    """A new key in fa's update is a row with fb's columns null: fa must be read for its keys."""
    table = _inserted(tmp_path, buckets=1)
    table.upsert(pa.table({"id": pa.array([4, N + 3], pa.int64()), "a1": [0.5, 0.5], "a2": ["u4", "new"]}))
    rows, metrics = _read(table, ["id", "b"])
    assert rows == _expected({}, ["id", "b"]) + [{"id": N + 3, "b": None}]
    assert rows == _read(table, ["id", "b"], strategy="hash")[0]
    assert metrics.get("families_skipped", 0) == 0


ALL = ["id", "a1", "a2", "b", "ts"]


def test_a_full_read_reads_the_insert_block_once_for_every_family_and_patches_by_position(tmp_path):
    """The families' slices start with the same block: read side by side as one wide input
    (lockstep), the update's columns written over it by position."""
    table = _inserted(tmp_path)
    _update_fa(table, [0, 13, 57], 6.0)
    expected = _expected({i: (6.0, f"u{i}") for i in (0, 13, 57)}, ALL)
    rows, metrics = _read(table, ALL)
    assert rows == expected == _read(table, ALL, strategy="hash")[0]
    # (ids 0, 13 and 57 fall in one of the two file groups; the other reads its block alone)
    assert (metrics["families_lockstep"], metrics["strategy.positions"], metrics["strategy.keyless"]) == (2, 1, 1)
    assert table.read().sort_by("id").to_pylist() == expected


def test_a_full_read_with_new_keys_in_the_update_merges_the_wide_rows_by_key(tmp_path):
    """Positions do not apply (a new key): the lockstep input merges by key, the update touching
    only its family's columns and adding a row whose other family is null."""
    table = _inserted(tmp_path, buckets=1)
    table.upsert(pa.table({"id": pa.array([7, N + 5], pa.int64()), "a1": [0.5, 1.5], "a2": ["u7", "new"]}))
    rows, metrics = _read(table, ALL)
    expected = _expected({7: (0.5, "u7")}, ALL) + [{"id": N + 5, "a1": 1.5, "a2": "new", "b": None, "ts": None}]
    assert rows == expected == _read(table, ALL, strategy="hash")[0]
    assert metrics["families_lockstep"] == 2 and "strategy.positions" not in metrics


@pytest.mark.parametrize("second", ["update fb", "delete", "meta"])
def test_full_reads_of_other_shapes_equal_the_merge_by_key(tmp_path, second):
    table = _inserted(tmp_path, buckets=1)
    _update_fa(table, [3, 30], 2.0)
    columns, options = ALL, {}
    if second == "update fb":  # (two families with their own blocks: one leads, the other is joined)
        table.upsert(pa.table({"id": pa.array([30, 31], pa.int64()), "b": [-1.0, -2.0], "ts": pa.array([5, 5])}))
    elif second == "delete":
        table.delete(pa.table({"id": pa.array([4, 30], pa.int64())}))
    else:
        options = {"with_meta": True}
    rows = table.read(**options).sort_by("id").to_pylist()
    assert rows == table.read(strategy="hash", **options).sort_by("id").to_pylist()
    by_id = {r["id"]: r for r in rows}
    if second == "delete":
        assert 4 not in by_id and 30 not in by_id and by_id[3]["a1"] == 2.0 and len(rows) == N - 2
    else:
        assert by_id[30]["a1"] == 2.0 and by_id[3]["a2"] == "u3" and len(rows) == N
    if second == "update fb":
        assert (by_id[30]["b"], by_id[31]["b"], by_id[31]["a1"]) == (-1.0, -2.0, 31.0)


def test_a_full_row_log_is_opened_once_for_all_the_families_reading_it(tmp_path, monkeypatch):
    """fa's slice and fb's both hold the insert's full-row log: a read of both families' columns
    opens it (and parses its block's footer) once per task."""
    import pyhudi.read.family_reader as family_reader

    table = _inserted(tmp_path)
    _update_fa(table, [1, 30], 2.0)
    opened = []
    real = family_reader._log_blocks
    monkeypatch.setattr(family_reader, "_log_blocks", lambda storage, log, *a, **k: opened.append(log.relpath)
                        or real(storage, log, *a, **k))
    columns = ["id", "a1", "b"]
    rows, _ = _read(table, columns)
    assert rows == _expected({1: (2.0, "u1"), 30: (2.0, "u30")}, columns)
    logs = [f.name for f in (tmp_path / "t").iterdir() if ".log." in f.name]
    assert sorted(opened) == sorted(logs) and len(logs) > 2  # (each once: the inserts' and fa's update)

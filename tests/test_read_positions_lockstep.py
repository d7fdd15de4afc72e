"""Positional merging across families read in lockstep (pyhudi/read/positions.py with
``LockstepInput``): a read of several families whose base files hold the same keys, one of them
updated through log blocks with written record positions, reads every base file without its key
column and writes the blocks' columns over the rows at their positions — each column once for
all blocks, the newest block winning a row several blocks rewrite. Every case checks exact rows
and which path the read took; cases the positions cannot express (new keys, deletes) keep the
merge by key."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import pyhudi
from pyhudi.read.metadata_cache import METADATA_CACHE
from pyhudi.read.positions import _last_writes, _overwrite

SCHEMA = pa.schema([("id", pa.int64()), ("a1", pa.float64()), ("a2", pa.string()), ("b", pa.float64()),
                    ("c", pa.int64())])
FAMILIES = {"fa": "a1,a2", "fb": "b", "fc": "c"}
N = 50


@pytest.fixture(autouse=True)
def cache():
    METADATA_CACHE.clear()
    yield METADATA_CACHE
    METADATA_CACHE.clear()


def _base_row(i: int) -> dict:
    return {"id": i, "a1": float(i), "a2": f"s{i}", "b": i * 2.0, "c": i * 3}


def _table(tmp_path) -> pyhudi.Table:
    table = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
    # one base file per family (not the default full-row base file): the families are zipped in lockstep
    table.bulk_insert(pa.Table.from_pylist([_base_row(i) for i in range(N)], schema=SCHEMA),
                      options={"hoodie.pyhudi.insert.full.row": "false"})
    return table


def _update(table, changes: dict[int, tuple], columns=("a1", "a2")) -> None:
    ids = sorted(changes)
    data = {"id": pa.array(ids, pa.int64())}
    for j, name in enumerate(columns):
        data[name] = pa.array([changes[i][j] for i in ids], SCHEMA.field(name).type)
    table.upsert(pa.table(data))


def _read(table, **options):
    plan = table.plan_scan(**options)
    parts = [task.run() for task in plan.tasks]
    metrics = {}
    for task in plan.tasks:
        for name, value in task.metrics.items():
            metrics[name] = metrics.get(name, 0) + value
    return pa.concat_tables(parts).sort_by("id"), metrics


def test_updated_family_merges_by_position_into_the_lockstep_rows(tmp_path):
    table = _table(tmp_path)
    _update(table, {3: (30.0, "x3"), 17: (170.0, "x17")})
    _update(table, {17: (171.0, "y17"), 40: (400.0, "y40")})  # 17 rewritten by both blocks: the newer wins
    _update(table, {0: (-1.0, "z0"), 49: (490.0, "z49")})
    expected = [_base_row(i) for i in range(N)]
    for i, (a1, a2) in {3: (30.0, "x3"), 17: (171.0, "y17"), 40: (400.0, "y40"), 0: (-1.0, "z0"),
                        49: (490.0, "z49")}.items():
        expected[i].update(a1=a1, a2=a2)
    got, metrics = _read(table)
    assert got.to_pylist() == expected
    assert metrics["strategy.positions"] == 1 and metrics["families_lockstep"] == 3
    assert metrics["positions_written"] == 3
    with pytest.MonkeyPatch.context() as patch:  # (no key is decoded: every base file read without its keys)
        patch.setattr("pyhudi.read.sources.KeySpec.keys", lambda *a, **k: pytest.fail("a key was decoded"))
        assert _read(table)[0].to_pylist() == expected
    assert table.read().sort_by("id").to_pylist() == expected  # (the collected read: mapped files, threads)
    assert table.read(strategy="hash").sort_by("id").to_pylist() == expected


def test_small_batches_cut_every_member_and_block_alike(tmp_path):
    table = _table(tmp_path)
    _update(table, {i: (i + 0.5, f"u{i}") for i in range(0, N, 3)})
    _update(table, {i: (i + 0.25, f"v{i}") for i in range(0, N, 4)})
    expected = [_base_row(i) for i in range(N)]
    for i in range(0, N, 3):
        expected[i].update(a1=i + 0.5, a2=f"u{i}")
    for i in range(0, N, 4):
        expected[i].update(a1=i + 0.25, a2=f"v{i}")
    got, metrics = _read(table, batch_size=7)
    assert got.to_pylist() == expected
    assert metrics["strategy.positions"] == 1


def test_partial_block_keeps_the_columns_it_lacks(tmp_path):
    table = _table(tmp_path)
    _update(table, {5: (50.0, "x5"), 6: (60.0, "x6")})
    _update(table, {5: (55.0,), 7: (77.0,)}, columns=("a1",))  # a2 not written: the earlier value stays
    got, metrics = _read(table)
    rows = {r["id"]: (r["a1"], r["a2"], r["b"], r["c"]) for r in got.to_pylist()}
    assert rows[5] == (55.0, "x5", 10.0, 15) and rows[6] == (60.0, "x6", 12.0, 18)
    assert rows[7] == (77.0, "s7", 14.0, 21) and rows[8] == (8.0, "s8", 16.0, 24)
    assert got.num_rows == N and metrics["strategy.positions"] == 1


def test_pruned_read_of_other_families_beside_the_updated_one(tmp_path):
    table = _table(tmp_path)
    _update(table, {2: (20.0, "x2"), 9: (90.0, "x9")})
    got, metrics = _read(table, columns=["id", "a2", "c"])
    assert got.to_pylist() == [{"id": i, "a2": {2: "x2", 9: "x9"}.get(i, f"s{i}"), "c": 3 * i} for i in range(N)]
    assert metrics["strategy.positions"] == 1


def test_new_keys_keep_the_merge_by_key(tmp_path):
    table = _table(tmp_path)
    _update(table, {4: (40.0, "x4")})
    table.upsert(pa.table({"id": pa.array([N + 1], pa.int64()), "a1": [1.5], "a2": ["new"]}))
    got, metrics = _read(table)
    assert "strategy.positions" not in metrics
    assert got.num_rows == N + 1
    assert got.slice(N).to_pylist() == [{"id": N + 1, "a1": 1.5, "a2": "new", "b": None, "c": None}]
    assert got.slice(4, 1).to_pylist() == [{"id": 4, "a1": 40.0, "a2": "x4", "b": 8.0, "c": 12}]


def test_deletes_keep_the_merge_by_key(tmp_path):
    table = _table(tmp_path)
    _update(table, {4: (40.0, "x4")})
    table.delete(pa.table({"id": pa.array([4, 8], pa.int64())}))
    got, metrics = _read(table)
    assert "strategy.positions" not in metrics
    assert got["id"].to_pylist() == [i for i in range(N) if i not in (4, 8)]


def test_overwrite_combines_blocks_once_per_column():
    table = pa.table({"x": pa.array(np.arange(6, dtype=np.float64)), "y": pa.array(list("abcdef"))})
    first = (np.array([1, 3]), pa.table({"x": [10.0, 30.0], "y": ["B", "D"]}))
    second = (np.array([3, 5]), pa.table({"x": [33.0, 55.0]}))
    third = (np.array([0, 1]), pa.table({"x": [-0.5, 11.0], "y": ["A", "BB"]}))
    out = _overwrite(table, [first, second, third])
    assert out.column("x").to_pylist() == [-0.5, 11.0, 2.0, 33.0, 4.0, 55.0]
    assert out.column("y").to_pylist() == ["A", "BB", "c", "D", "e", "f"]


def test_last_writes_keep_the_newest_write_of_each_row():
    at, winners = _last_writes([np.array([1, 4, 7]), np.array([0, 4]), np.array([4, 9])])
    assert at.tolist() == [0, 1, 4, 7, 9]
    assert winners.to_pylist() == [3, 0, 5, 2, 6]
    single, none = _last_writes([np.array([2, 5])])
    assert single.tolist() == [2, 5] and none is None


def test_file_slice_read_with_commit_times_merges_by_position(tmp_path, monkeypatch):
    """What a compaction reads of the updated family — its columns with the commit time and
    sequence number — merges by position: each rewritten row carries its block's meta values."""
    from pyhudi.context import TableContext
    from pyhudi.read import positions as positions_module
    from pyhudi.read.file_slice import read_file_slices

    table = _table(tmp_path)
    first = table.upsert(pa.table({"id": pa.array([3, 17], pa.int64()), "a1": [30.0, 170.0], "a2": ["x3", "x17"]}))
    second = table.upsert(pa.table({"id": pa.array([17, 40], pa.int64()), "a1": [171.0, 400.0], "a2": ["y17", "y40"]}))
    taken = []
    original = positions_module.positional_stream

    def spy(*args, **kwargs):
        stream = original(*args, **kwargs)
        taken.append(stream is not None)
        return stream

    monkeypatch.setattr("pyhudi.read.task.positional_stream", spy)
    timeline = table.active_timeline()
    task = table.plan_scan().tasks[0]
    fa = [p.file_slice for p in task.families if p.scan.family == "fa"]
    columns = ["_hoodie_commit_time", "_hoodie_commit_seqno", "id", "a1", "a2"]
    got = read_file_slices(TableContext.of(table, timeline), fa, task.settings.visibility, columns=columns).read_all()
    assert taken == [True]
    rows = {r["id"]: r for r in got.to_pylist()}
    assert got.num_rows == N
    times = {r["_hoodie_commit_time"] for i, r in rows.items() if i not in (3, 17, 40)}
    assert len(times) == 1 and times.pop() < first  # (the bulk insert's)
    assert (rows[3]["_hoodie_commit_time"], rows[3]["a2"]) == (first, "x3")
    assert (rows[17]["_hoodie_commit_time"], rows[17]["a1"]) == (second, 171.0)
    assert (rows[40]["_hoodie_commit_time"], rows[40]["a2"]) == (second, "y40")
    assert rows[17]["_hoodie_commit_seqno"].startswith(second)
    monkeypatch.setattr("pyhudi.read.task.positional_stream", lambda *args, **kwargs: None)  # (the merge by key)
    by_key = read_file_slices(TableContext.of(table, timeline), fa, task.settings.visibility, columns=columns)
    assert by_key.read_all().sort_by("id").equals(got.sort_by("id"))


def test_scatter_of_strings_keeps_nulls_on_both_sides():
    from pyhudi.read.window import scatter

    base = pa.array(["a", None, "c", "d", None])
    out = scatter(base, np.array([0, 2, 4]), pa.array([None, "C", "E"]))
    assert out.to_pylist() == [None, None, "C", "d", "E"]
    assert base.to_pylist() == ["a", None, "c", "d", None]
    widened = scatter(pa.array(["x", "y"], pa.large_string()), np.array([1]), pa.array(["z"], pa.large_string()))
    assert widened.to_pylist() == ["x", "z"]


def test_scatter_in_turn_writes_blocks_in_order_and_declines_other_columns():
    from pyhudi.read.window import scatter_in_turn

    base = pa.array([1.0, 2.0, 3.0, 4.0])
    writes = [(np.array([0, 2]), pa.array([10.0, 30.0])), (np.array([2, 3]), pa.array([33.0, 44.0]))]
    out = scatter_in_turn(base, writes)
    assert out.to_pylist() == [10.0, 2.0, 33.0, 44.0]
    assert base.to_pylist() == [1.0, 2.0, 3.0, 4.0]  # (not in place unless asked)
    assert scatter_in_turn(pa.array(["a"]), [(np.array([0]), pa.array(["b"]))]) is None
    assert scatter_in_turn(base, [(np.array([0]), pa.array([None], pa.float64()))]) is None
    assert scatter_in_turn(pa.array([1.0, None]), [(np.array([0]), pa.array([5.0]))]) is None

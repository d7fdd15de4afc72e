"""A warm read replays the positional merge of its file groups (pyhudi/read/replay.py): the
tasks of a kept scan plan keep the reads their first run worked out, and later runs read only
the columns — exact rows, and read anew as soon as a file or the timeline changed."""

from __future__ import annotations

import gc
import glob
import os
import pickle
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest
from conftest import extract_table, fixture_zips

import pyhudi
from pyhudi.logformat import LogReader, ParquetDataBlock
from pyhudi.logformat.writer import encode_block
from pyhudi.read import kept_readers
from pyhudi.read import task as task_module
from pyhudi.read.metadata_cache import METADATA_CACHE
from pyhudi.storage.fs import Storage
from read_helpers import run_plan_tasks

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a1", pa.float64()), ("a2", pa.string()),
                    ("a3", pa.float64()), ("b", pa.float64())])
FAMILIES = {"fa": "a1,a2,a3", "fb": "b"}
N = 60


@pytest.fixture(autouse=True)
def cache():
    METADATA_CACHE.clear()
    yield METADATA_CACHE
    METADATA_CACHE.clear()


def _table(tmp_path) -> pyhudi.Table:
    """Default options (one file group: one task): a full-row base file; updates of fa go to log files."""
    table = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
    ids = list(range(N))
    table.bulk_insert(pa.table({"id": ids, "a1": [float(i) for i in ids], "a2": [f"s{i}" for i in ids],
                                "a3": [i * 3.0 for i in ids], "b": [i * 2.0 for i in ids]}, schema=SCHEMA))
    return table


def _update(table, changes: dict[int, float]) -> str:
    ids = sorted(changes)
    return table.upsert(pa.table({"id": pa.array(ids, pa.int64()), "a1": [changes[i] for i in ids],
                                  "a2": [f"x{i}" for i in ids], "a3": [i * 3.0 for i in ids]}))


def _read(table, columns=("a1", "a2")):
    """The rows of one run of the plan's tasks and their summed metrics."""
    return run_plan_tasks(table, columns)


def _expected(changes: dict[int, float], columns=("a1", "a2")) -> list[dict]:
    rows = [{"id": i, "a1": changes.get(i, float(i)), "a2": f"x{i}" if i in changes else f"s{i}", "a3": i * 3.0,
             "b": i * 2.0} for i in range(N)]
    return [{c: r[c] for c in columns} for r in rows]


def _sorted(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: int(r["a2"][1:]))


def _fail_on_planning(monkeypatch) -> None:
    """A replayed run opens no log file's framing and builds no input: only column reads."""
    monkeypatch.setattr(task_module, "slice_inputs", lambda *a, **k: pytest.fail("the task planned its inputs"))
    monkeypatch.setattr(LogReader, "__iter__", lambda self: pytest.fail("a log file's blocks were walked"))


def test_a_warm_read_replays_the_positional_merge_reading_only_columns(tmp_path, monkeypatch):
    table = _table(tmp_path)
    changes = {3: 30.0, 17: 170.0, 40: 400.0}
    _update(table, changes)
    got, first = _read(table)
    assert _sorted(got) == _expected(changes)
    assert first["strategy.positions"] == 1 and first["positions_written"] == 1 and "replayed" not in first

    assert _sorted(table.read(["a1", "a2"])) == _expected(changes)  # (a collected read: its own settings)

    _fail_on_planning(monkeypatch)
    got, warm = _read(table)
    assert _sorted(got) == _expected(changes)
    assert warm["replayed"] == 1 and warm["strategy.positions"] == 1 and "positions_written" not in warm
    assert {k: v for k, v in warm.items() if k != "replayed"} == \
        {k: v for k, v in first.items() if not k.startswith("positions_")}
    assert _sorted(table.read(["a1", "a2"])) == _expected(changes)


def test_a_warm_read_of_base_files_alone_replays_too(tmp_path, monkeypatch):
    table = _table(tmp_path)
    got, first = _read(table, ("id", "b"))
    assert got.sort_by("id").to_pylist() == _expected({}, ("id", "b"))
    assert first["strategy.keyless"] == 1 and "replayed" not in first
    _fail_on_planning(monkeypatch)
    got, warm = _read(table, ("id", "b"))
    assert got.sort_by("id").to_pylist() == _expected({}, ("id", "b"))
    assert warm == {**first, "replayed": 1}


def test_a_replay_needs_the_cached_footers_and_positions(tmp_path):
    """Cleared (or turned off), the metadata cache no longer holds the facts a replay reads by:
    the full read runs again, checking the written positions before using them."""
    table = _table(tmp_path)
    changes = {5: 50.0, 6: 60.0}
    _update(table, changes)
    _read(table)
    METADATA_CACHE.clear()
    got, metrics = _read(table)
    assert _sorted(got) == _expected(changes)
    assert "replayed" not in metrics and metrics["positions_written"] == 1
    METADATA_CACHE.max_bytes = 0
    try:
        got, metrics = _read(table)
        assert _sorted(got) == _expected(changes) and "replayed" not in metrics
    finally:
        METADATA_CACHE.max_bytes = 64 << 20


def test_another_write_to_the_file_group_is_read_anew(tmp_path):
    table = _table(tmp_path)
    _update(table, {3: 30.0})
    _read(table), _read(table)
    other = pyhudi.open_table(table.storage.root)
    _update(other, {3: 31.0, 4: 41.0})  # (another handle: a second block in the log files)
    got, metrics = _read(table)
    assert _sorted(got) == _expected({3: 31.0, 4: 41.0}) and "replayed" not in metrics
    got, metrics = _read(table)
    assert _sorted(got) == _expected({3: 31.0, 4: 41.0}) and metrics["replayed"] == 1


def test_a_log_file_rewritten_from_outside_is_read_anew(tmp_path):
    """Someone rewrites a log file in place (same block, other values): its size and modification
    time change, the kept plan and its recipes are dropped, the new bytes are read."""
    table = _table(tmp_path)
    _update(table, {3: 30.0, 20: 200.0})
    _read(table), _read(table)
    for path in glob.glob(os.path.join(table.storage.root, ".*.log.*")):
        with LogReader(Storage(os.path.dirname(path)), os.path.basename(path)) as reader:
            (block,) = list(reader)
            rows = block.read()
        a1 = rows.column("a1").to_pylist()
        rows = rows.set_column(rows.column_names.index("a1"), "a1", pa.array([v + 1000.0 for v in a1]))
        data = encode_block(ParquetDataBlock(rows, dict(block.header)))
        with open(path, "wb") as out:
            out.write(data)
        stat = os.stat(path)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # (a later write: a coarse clock may not tell)
    got, metrics = _read(table)
    assert _sorted(got) == _expected({3: 1030.0, 20: 1200.0}) and "replayed" not in metrics
    assert _sorted(table.read(["a1", "a2"])) == _expected({3: 1030.0, 20: 1200.0})


def test_a_rollback_and_a_clean_are_read_anew(tmp_path):
    table = _table(tmp_path)
    _update(table, {3: 30.0})
    second = _update(table, {3: 31.0, 50: 500.0})
    _read(table), _read(table)
    table.rollback(second)
    got, metrics = _read(table)
    assert _sorted(got) == _expected({3: 30.0}) and "replayed" not in metrics
    _read(table)
    table.compact()
    _update(table, {7: 70.0})
    table.clean(options={"hoodie.cleaner.commits.retained": "1"})
    got, _ = _read(table)
    assert _sorted(got) == _expected({3: 30.0, 7: 70.0})
    got, metrics = _read(table)
    assert _sorted(got) == _expected({3: 30.0, 7: 70.0}) and metrics.get("replayed") == 1


def test_a_copy_of_a_task_for_a_key_range_does_not_replay_the_whole_file(tmp_path):
    """Copies of a task share its kept recipes (a split of a file group into key ranges is such a
    copy): each replays only a recipe kept for its own key range and settings."""
    table = _table(tmp_path)
    _update(table, {3: 30.0, 40: 400.0})
    _read(table, ("id", "a1")), _read(table, ("id", "a1"))
    (task,) = table.plan_scan(["id", "a1"]).tasks
    assert task.replays
    for _ in range(2):
        split = task.replace(key_range=(None, "3"), metrics={})
        got = split.run().sort_by("id").to_pylist()
        assert got == [r for r in _expected({3: 30.0, 40: 400.0}, ("id", "a1")) if str(r["id"]) < "3"]
        assert "replayed" not in split.metrics


def test_a_replay_reads_each_column_from_the_file_of_its_family(tmp_path):
    """A full-row base file still stores fc's old values once fc was compacted on its own: read in
    lockstep with fc's new base file (and fa's log block), c comes from fc's file, replayed too."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.float64()), ("b", pa.float64()),
                        ("c", pa.float64())])
    table = pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=1,
                                column_families={"fa": "a", "fb": "b", "fc": "c"})
    ids = list(range(20))
    table.bulk_insert(pa.table({"id": ids, "a": [float(i) for i in ids], "b": [2.0 * i for i in ids],
                                "c": [3.0 * i for i in ids]}, schema=schema))
    table.upsert(pa.table({"id": pa.array([1, 2], pa.int64()), "c": [100.0, 200.0]}))
    table.compact("fc")
    table.upsert(pa.table({"id": pa.array([3, 4], pa.int64()), "a": [30.0, 40.0]}))
    expected = [{"id": i, "a": {3: 30.0, 4: 40.0}.get(i, float(i)), "b": 2.0 * i,
                 "c": {1: 100.0, 2: 200.0}.get(i, 3.0 * i)} for i in ids]
    runs = []
    for _ in range(3):
        got, metrics = _read(table, ("id", "a", "b", "c"))
        assert got.sort_by("id").to_pylist() == expected
        runs.append(metrics)
    assert runs[0]["families_lockstep"] == 3 and runs[0]["strategy.positions"] == 1
    assert "replayed" not in runs[0] and runs[1]["replayed"] == runs[2]["replayed"] == 1


# --------------------------------------------------------------------------- kept readers
# (collected reads of a1 alone, one of fa's three columns: the base file and the log block are
# read, not memory-mapped — what kept readers are for)
def _read_a1(table) -> list[float]:
    return table.read(["id", "a1"]).sort_by("id").column("a1").to_pylist()


def _a1(changes: dict[int, float]) -> list[float]:
    return [changes.get(i, float(i)) for i in range(N)]


def test_a_replay_keeps_its_files_open_until_its_plan_is_replaced(tmp_path):
    table = _table(tmp_path)
    _update(table, {3: 30.0})
    before = kept_readers.kept_count()
    _read_a1(table), _read_a1(table)
    assert kept_readers.kept_count() == before + 2  # (the base file and the log block)
    assert _read_a1(table) == _a1({3: 30.0})
    assert kept_readers.kept_count() == before + 2  # (borrowed and given back: not opened again)
    _update(table, {4: 40.0})  # (a new listing: the next read replaces the kept plan, its recipes close)
    assert _read_a1(table) == _a1({3: 30.0, 4: 40.0})
    gc.collect()
    assert kept_readers.kept_count() == before
    kept_readers.close_all()


def test_kept_readers_are_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(kept_readers, "MAX_KEPT", kept_readers.kept_count() + 1)
    table = _table(tmp_path)
    _update(table, {3: 30.0})
    for _ in range(3):
        assert _read_a1(table) == _a1({3: 30.0})
    assert kept_readers.kept_count() == kept_readers.MAX_KEPT
    kept_readers.close_all()
    assert kept_readers.kept_count() == 0
    assert _read_a1(table) == _a1({3: 30.0})


def test_concurrent_replays_of_one_handle_read_exact_rows(tmp_path):
    table = _table(tmp_path)
    changes = {i: i * 10.0 for i in range(0, N, 3)}
    _update(table, changes)
    _read_a1(table), _read_a1(table)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: _read_a1(table), range(40)))
    assert all(r == _a1(changes) for r in results)
    kept_readers.close_all()


def test_a_task_with_kept_readers_ships_without_them(tmp_path):
    table = _table(tmp_path)
    _update(table, {3: 30.0})
    _read_a1(table), _read_a1(table)
    (task,) = table.plan_scan(["id", "a1"], batch_size=task_module.READ_BATCH_SIZE).tasks  # (read()'s kept plan)
    (recipe,) = [r for _, r in task.replays if len(r.readers)]
    assert len(recipe.readers) == 2
    shipped = pickle.loads(pickle.dumps(task))
    assert all(not len(r.readers) for _, r in shipped.replays)
    assert shipped.run().sort_by("id").column("a1").to_pylist() == _a1({3: 30.0})
    kept_readers.close_all()


@pytest.mark.parametrize("zip_path", fixture_zips(), ids=lambda p: p.stem)
def test_apache_hudi_tables_read_the_same_warm(zip_path, tmp_path):
    """Apache Hudi's fixture tables: the warm reads (replayed where a task allows it) return the
    first read's rows, all columns and a pruned pair."""
    table = pyhudi.open_table(str(extract_table(zip_path, tmp_path)))
    key = table.record_key_fields[0]
    data = [c for c in table.schema.names if not c.startswith("_hoodie") and c != key][:2]
    for columns in (None, [key, *data]):
        first = table.read(columns).sort_by(key)
        for _ in range(2):
            assert table.read(columns).sort_by(key).equals(first)

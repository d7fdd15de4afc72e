"""The shared gather of a bucketed write (:mod:`pyhudi.write.shared_gather`): every file group's
rows sorted by key (latest per key), each column gathered once for all file groups, served to
the tasks as slices — with exactly the rows, meta values and file names of a per-group sort and
gather (the reference computed here the plain way)."""

from __future__ import annotations

import pickle
import sys
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import pyhudi
from pyhudi.engine.local import LocalEngine
from pyhudi.write import handle, shared_gather
from pyhudi.write.shared_gather import SharedGather

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_write import bucket_of, fid, hudi_rows, only_block  # noqa: E402

KEY = "_hoodie_record_key"


def _source(n: int = 40, seed: int = 5) -> pa.Table:
    """Keys with repeats (``k07`` arrives several times), a value per arrival, an ordering column."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, n // 2, n)
    return pa.table({KEY: [f"k{i:02d}" for i in ids], "x": np.arange(n, dtype=np.float64),
                     "y": [f"y{i}" for i in range(n)], "ts": rng.integers(0, 5, n)})


def _groups(n: int, count: int) -> list[pa.Array]:
    """Positions split into ``count`` groups by position modulo ``count`` (arrival order kept)."""
    return [pa.array(np.arange(g, n, count, dtype=np.int64)) for g in range(count)]


def _reference(source: pa.Table, positions: pa.Array, ordering: str | None, columns: list[str]) -> list[dict]:
    """The latest row per key of ``positions`` in key order, by plain Python: highest ordering
    value, ties (and no ordering) to the later arrival."""
    rows = source.take(positions).to_pylist()
    best: dict[str, tuple] = {}
    for arrival, row in enumerate(rows):
        rank = (row[ordering] if ordering else 0, arrival)
        if row[KEY] not in best or rank >= best[row[KEY]][0]:
            best[row[KEY]] = (rank, row)
    return [{c: best[k][1][c] for c in columns} for k in sorted(best)]


@pytest.mark.parametrize("ordering", [None, "ts"])
def test_every_group_gets_its_latest_rows_per_key_in_key_order(ordering):
    source = _source()
    groups = _groups(source.num_rows, 3)
    sets = [["x"], ["y", "ts"]]
    shared = SharedGather(source, groups, ordering, None, KEY, sets)
    for g, positions in enumerate(groups):
        for columns in sets:
            got = shared.rows(g, [KEY, *columns])
            assert got.column_names == [KEY, *columns]
            assert got.to_pylist() == _reference(source, positions, ordering, [KEY, *columns])
            assert shared.group_length(g) == len(got)


@pytest.mark.parametrize("ids", [[5, 10, 1, 100, 10, 7, 0, 99, 5], [-3, 12, 2, 12, 0], [10**17, 3, 3]])
def test_integer_keys_are_sorted_by_their_column_alone_with_the_string_order_and_winners(ids, monkeypatch):
    """One integer key field: a group is sorted from the key column alone (the strings are not
    taken) when every key has a code; negative or 18-digit keys sort by their strings."""
    source = pa.table({KEY: pc.cast(pa.array(ids, pa.int64()), pa.string()), "id": pa.array(ids, pa.int64()),
                       "x": np.arange(len(ids), dtype=np.float64)})
    sorted_columns = []
    real = shared_gather.latest_sorted
    monkeypatch.setattr(shared_gather, "latest_sorted",
                        lambda rows, *a: sorted_columns.append(rows.column_names) or real(rows, *a))
    groups = _groups(len(ids), 2)
    shared = SharedGather(source, groups, None, "id", KEY, [["id", "x"]])
    for g, positions in enumerate(groups):
        assert shared.rows(g, [KEY, "id", "x"]).to_pylist() == _reference(source, positions, None, [KEY, "id", "x"])
    coded = [all(0 <= ids[i] < 10**17 for i in positions.to_pylist()) for positions in groups]
    assert sorted_columns == [["id"] if codes else [KEY, "id"] for codes in coded]


def test_each_column_block_is_gathered_once_for_all_groups_and_served_as_slices(monkeypatch):
    calls = []
    real = handle.gather
    monkeypatch.setattr(handle, "gather", lambda table, order, *checked: calls.append(table.column_names) or real(table, order, *checked))
    monkeypatch.setattr(shared_gather, "BLOCK_COLUMNS", 2)
    source = pa.table({KEY: [f"k{i:02d}" for i in range(30)][::-1], **{f"c{j}": np.arange(30.0) + j for j in range(5)}})
    groups = _groups(30, 3)
    shared = SharedGather(source, groups, None, None, KEY, [["c0", "c1", "c2"], ["c3", "c4"]])
    pieces = [shared.rows(g, [KEY, "c0", "c1", "c2"]) for g in range(3)]
    pieces += [shared.rows(g, [KEY, "c3", "c4"]) for g in range(3)]
    # the key once, then blocks of at most two columns, each gathered once whatever the groups
    assert calls == [[KEY], ["c0", "c1"], ["c2"], ["c3", "c4"]]
    # the groups' slices of one column share one gathered buffer
    addresses = {p.column("c0").chunk(0).buffers()[1].address for p in pieces[:3]}
    assert len(addresses) == 1
    for g in range(3):
        assert pieces[g].column("c0").to_pylist() == sorted(groups[g].to_pylist(), reverse=True)
        assert pieces[g].column(KEY).equals(pieces[3 + g].column(KEY))


def test_rows_already_in_group_and_key_order_are_sliced_without_a_copy():
    source = pa.table({KEY: [f"k{i:02d}" for i in range(12)], "x": np.arange(12.0)})
    groups = [pa.array(np.arange(0, 5)), pa.array(np.arange(5, 12))]
    shared = SharedGather(source, groups, None, None, KEY, [["x"]])
    first, second = shared.rows(0, [KEY, "x"]), shared.rows(1, [KEY, "x"])
    assert first.column("x").to_pylist() == list(range(5)) and second.column("x").to_pylist() == list(range(5, 12))
    source_address = source.column("x").chunk(0).buffers()[1].address
    assert first.column("x").chunk(0).buffers()[1].address == source_address  # the input itself


@pytest.mark.parametrize("round_", range(10))  # (repeated: races show up as flaky failures)
def test_threads_share_the_key_sort_and_the_blocks_and_see_the_same_rows(monkeypatch, round_):
    monkeypatch.setattr(shared_gather, "BLOCK_COLUMNS", 1)
    gathered_by: dict[str, str] = {}
    sorted_groups: list[int] = []
    real_gather, real_sort = handle.gather, SharedGather._sorted_group

    def tracking(table, order, *checked):
        gathered_by.setdefault(table.column_names[0], threading.current_thread().name)
        return real_gather(table, order, *checked)

    def sorting(self, indices):
        sorted_groups.append(int(indices[0].as_py()))
        return real_sort(self, indices)

    monkeypatch.setattr(handle, "gather", tracking)
    monkeypatch.setattr(SharedGather, "_sorted_group", sorting)
    source = pa.table({KEY: [f"k{i:03d}" for i in range(200)][::-1], **{f"c{j}": np.arange(200.0) * j for j in range(8)}})
    groups = _groups(200, 3)
    columns = [KEY, *[f"c{j}" for j in range(8)]]
    shared = SharedGather(source, groups, None, None, KEY, [columns[1:]])
    out: dict[int, pa.Table] = {}
    barrier = threading.Barrier(3)

    def task(g: int) -> None:
        barrier.wait()
        out[g] = shared.rows(g, columns)

    threads = [threading.Thread(target=task, args=(g,), name=f"t{g}") for g in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(sorted_groups) == [0, 1, 2]  # each group's key order computed once
    assert sorted(gathered_by) == columns  # every block gathered exactly once, by one thread or another
    for g in range(3):
        assert out[g].to_pylist() == _reference(source, groups[g], None, columns)


def test_two_tasks_asking_for_the_same_columns_split_their_gather(monkeypatch):
    """A task claims one block at a time: a second task arriving while the first gathers takes
    the next block instead of waiting for the first to gather them all."""
    monkeypatch.setattr(shared_gather, "BLOCK_COLUMNS", 1)
    real_gather = handle.gather
    gathered_by: dict[str, str] = {}
    second_started = threading.Event()

    def gather(table, order, *checked):
        name = threading.current_thread().name
        gathered_by[table.column_names[0]] = name
        if name == "t1":
            second_started.set()
        elif table.column_names[0] == "c0":  # t0's first data block: held until t1 gathers one too
            assert second_started.wait(10), "the second task never gathered a block: it waited instead"
        return real_gather(table, order, *checked)

    monkeypatch.setattr(handle, "gather", gather)
    source = pa.table({KEY: [f"k{i:03d}" for i in range(60)][::-1], **{f"c{j}": np.arange(60.0) * j for j in range(4)}})
    groups = _groups(60, 2)
    columns = [KEY, "c0", "c1", "c2", "c3"]
    shared = SharedGather(source, groups, None, None, KEY, [columns[1:]])
    out: dict[int, pa.Table] = {}
    first = threading.Thread(target=lambda: out.__setitem__(0, shared.rows(0, columns)), name="t0")
    first.start()
    while "c0" not in gathered_by:
        threading.Event().wait(0.001)
    second = threading.Thread(target=lambda: out.__setitem__(1, shared.rows(1, columns)), name="t1")
    second.start()
    first.join()
    second.join()
    assert gathered_by["c0"] == "t0" and gathered_by["c1"] == "t1"
    for g in range(2):
        assert out[g].to_pylist() == _reference(source, groups[g], None, columns)


def test_a_task_starts_on_its_own_family_and_puts_off_one_another_task_is_gathering(tmp_path, monkeypatch):
    source = pa.table({KEY: [f"k{i:02d}" for i in range(30)], "a": np.arange(30.0), "b": np.arange(30.0),
                       "c": np.arange(30.0)})
    shared = SharedGather(source, _groups(30, 3), None, None, KEY, [["a"], ["b"], ["c"]])
    written: list[str] = []
    monkeypatch.setattr(handle.FileGroupWriteTask, "_write_family",
                        lambda self, storage, payload, cache=None: written.append(payload.family) or f"status {payload.family}")

    def task(group: int) -> handle.FileGroupWriteTask:
        payloads = [handle.FamilyPayload(f, shared=shared, group=group, columns=(KEY, f), plan="p") for f in "abc"]
        return handle.FileGroupWriteTask(str(tmp_path), "20260101000000000", "t", "", "fid", handle.KIND_APPEND,
                                         f"{group}-1-0", payloads=payloads)

    # file group 1 starts on the second family; statuses come back in family order all the same
    assert task(1).run() == ["status a", "status b", "status c"]
    assert written == ["b", "c", "a"]
    written.clear()
    shared._state[shared._block_of["c"]] = threading.Event()  # another task is gathering "c" now
    assert shared.busy([KEY, "c"]) and not shared.busy([KEY, "a"])
    assert task(2).run() == ["status a", "status b", "status c"]
    assert written == ["a", "b", "c"]  # (its own, "c", last: nothing else left to do)
    assert handle._rotated(3, 4) == [1, 2, 0] and handle._rotated(0, 2) == []


def test_a_failed_gather_fails_every_task_waiting_for_its_block(monkeypatch):
    monkeypatch.setattr(handle, "gather", lambda table, order, *checked: (_ for _ in ()).throw(MemoryError("no room")))
    source = _source()
    shared = SharedGather(source, _groups(source.num_rows, 2), None, None, KEY, [["x"]])
    with pytest.raises(MemoryError, match="no room"):
        shared.rows(0, [KEY, "x"])
    with pytest.raises(MemoryError, match="no room"):  # the other group gets the block's error, not a hang
        shared.rows(1, [KEY, "x"])


# ------------------------------------------------------------------------- end to end
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), *[pa.field(f"c{i}", pa.float64()) for i in range(6)]])
FAMILIES = {"f0": "c0,c1", "f1": "c2,c3", "f2": "c4,c5"}


def _input(n: int = 400) -> pa.Table:
    """Ids in random arrival order with repeats; the later arrival of an id carries higher values."""
    rng = np.random.default_rng(11)
    ids = rng.integers(0, n // 2, n)
    return pa.table({"id": ids, **{f"c{i}": np.arange(n, dtype=np.float64) + 1000 * i for i in range(6)}}, schema=SCHEMA)


def _expected(data: pa.Table) -> dict[int, dict]:
    latest = {}
    for row in data.to_pylist():
        latest[row["id"]] = row  # later arrival wins
    return latest


@pytest.mark.parametrize("families", [FAMILIES, None], ids=["families", "plain"])
@pytest.mark.parametrize("parallelism", [1, 2])
def test_bucketed_upsert_files_hold_exact_rows_keys_and_sequence_numbers(tmp_path, families, parallelism):
    data = _input()
    latest = _expected(data)
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=4, column_families=families)
    # (one file per family, each its own slice of the shared gather; the default writes new file
    # groups as one full-row log: tests/test_full_row_logs.py)
    instant = t.upsert(data, engine=LocalEngine(parallelism), options={"hoodie.pyhudi.insert.full.row": "false"})
    by_bucket: dict[int, list[int]] = {}
    for key in latest:
        by_bucket.setdefault(bucket_of(key, 4), []).append(key)
    names = families or {None: ",".join(f"c{i}" for i in range(6))}
    expected_files = {f".{fid(b)}_{instant}{'_' + f if f else ''}.log.1_{task}-1-0"
                      for task, b in enumerate(sorted(by_bucket)) for f in names}
    assert set(t.last_write.files) == expected_files
    for task, bucket in enumerate(sorted(by_bucket)):
        keys = sorted(str(k) for k in by_bucket[bucket])  # string order
        for family, columns in names.items():
            name = f".{fid(bucket)}_{instant}{'_' + family if family else ''}.log.1_{task}-1-0"
            block = only_block(t, name).read()
            assert block.column(KEY).to_pylist() == keys
            assert block.column("_hoodie_commit_seqno").to_pylist() == [f"{instant}_{task}_{i}" for i in range(len(keys))]
            assert set(block.column("_hoodie_commit_time").to_pylist()) == {instant}
            assert set(block.column("_hoodie_file_name").to_pylist()) == {fid(bucket)}
            assert block.column("id").to_pylist() == [int(k) for k in keys]
            for c in columns.split(","):
                assert block.column(c).to_pylist() == [latest[int(k)][c] for k in keys]
    assert t.read().sort_by("id").to_pylist() == [latest[k] for k in sorted(latest)]


def test_one_family_insert_reads_the_same_rows_in_hudi_rs(tmp_path):
    data = _input()
    latest = _expected(data)
    t = pyhudi.create_table(str(tmp_path / "one"), SCHEMA, "id", num_buckets=4)
    t.upsert(data)
    assert hudi_rows(t.path, ["id", *[f"c{i}" for i in range(6)]]) == [latest[k] for k in sorted(latest)]


def test_insert_with_an_ordering_family_keeps_each_familys_own_latest_rows(tmp_path):
    schema = SCHEMA.append(pa.field("ts", pa.int64()))
    data = _input().append_column("ts", pa.array(np.random.default_rng(2).integers(0, 3, 400)))
    t = pyhudi.create_table(str(tmp_path / "ord"), schema, "id", num_buckets=4,
                            column_families={"f0": "c0,c1,ts;ts", "f1": "c2,c3,c4,c5"})
    t.upsert(data)
    rows = data.to_pylist()
    by_ts: dict[int, tuple] = {}
    by_arrival: dict[int, dict] = {}
    for arrival, row in enumerate(rows):
        if row["id"] not in by_ts or (row["ts"], arrival) >= by_ts[row["id"]][0]:
            by_ts[row["id"]] = ((row["ts"], arrival), row)
        by_arrival[row["id"]] = row
    expected = [{"id": k, "c0": by_ts[k][1]["c0"], "c1": by_ts[k][1]["c1"], "c2": by_arrival[k]["c2"],
                 "c3": by_arrival[k]["c3"], "c4": by_arrival[k]["c4"], "c5": by_arrival[k]["c5"],
                 "ts": by_ts[k][1]["ts"]} for k in sorted(by_ts)]
    assert t.read().sort_by("id").to_pylist() == expected


def test_a_pickled_payload_ships_only_its_own_rows(tmp_path):
    data = pa.table({"id": np.arange(4000), **{f"c{i}": np.arange(4000.0) for i in range(6)}}, schema=SCHEMA)
    t = pyhudi.create_table(str(tmp_path / "p"), SCHEMA, "id", num_buckets=4, column_families=FAMILIES)
    from pyhudi.write.client import WriteClient

    client = WriteClient(t)
    txn = client.unbegun("upsert")
    tasks = txn.plan_tasks(txn.prepare(data))
    payload = tasks[0].payloads[0]
    shipped = pickle.loads(pickle.dumps(payload))
    rows = shipped.data
    assert shipped.shared is None and rows.num_rows == payload.rows().num_rows < 4000
    assert rows.column(KEY).to_pylist() == sorted(rows.column(KEY).to_pylist())
    # compact: a few bytes per row of its own, not the whole gathered column
    assert len(pickle.dumps(payload)) < 4000 * 8 * 3 / 2
    assert pc.all(pc.equal(rows.column("id"), pc.cast(rows.column(KEY), pa.int64()))).as_py()


@pytest.mark.parametrize("operation", ["insert", "upsert"])
def test_keys_and_buckets_computed_in_halves_write_the_same_files_as_one_pass(tmp_path, monkeypatch, operation):
    """Record keys and bucket hashes of many rows are computed in two halves on two cores (here
    from 8 rows on): the same files, keys, sequence numbers and rows, read by pyhudi and hudi-rs
    alike, as the one-pass computation (default options, a bucketed merge-on-read table)."""
    from pyhudi import keygen
    from pyhudi.index import bucket

    data = _input()
    monkeypatch.setattr(keygen, "SPLIT_ROWS", 1 << 30)
    monkeypatch.setattr(bucket, "SPLIT_ROWS", 1 << 30)
    one_pass = pyhudi.create_table(str(tmp_path / "one"), SCHEMA, "id", num_buckets=4)
    first = getattr(one_pass, operation)(data)
    monkeypatch.setattr(keygen, "SPLIT_ROWS", 8)
    monkeypatch.setattr(bucket, "SPLIT_ROWS", 8)
    assert keygen.as_strings(data.column("id")).num_chunks == 2  # (the halves reach the write as two chunks)
    halves = pyhudi.create_table(str(tmp_path / "halves"), SCHEMA, "id", num_buckets=4)
    instant = getattr(halves, operation)(data)
    files = sorted(halves.last_write.files)
    assert [f.replace(instant, "I") for f in files] == sorted(f.replace(first, "I") for f in one_pass.last_write.files)
    for name in files:
        block = only_block(halves, name).read()
        expected = only_block(one_pass, name.replace(instant, first)).read()
        keys = block.column(KEY).to_pylist()
        assert keys == expected.column(KEY).to_pylist() == sorted(keys)
        assert {bucket_of(int(k), 4) for k in keys} == {int(name[1:9])}
        task = name.rsplit("_", 1)[1].split("-")[0]
        assert block.column("_hoodie_commit_seqno").to_pylist() == [f"{instant}_{task}_{i}" for i in range(len(keys))]
        assert block.drop_columns(["_hoodie_commit_time", "_hoodie_commit_seqno"]).equals(
            expected.drop_columns(["_hoodie_commit_time", "_hoodie_commit_seqno"]))
    latest = _expected(data)
    columns = ["id", *[f"c{i}" for i in range(6)]]
    assert halves.read().sort_by("id").to_pylist() == [latest[k] for k in sorted(latest)]
    assert hudi_rows(halves.path, columns) == [latest[k] for k in sorted(latest)]


def test_the_order_is_checked_once_and_every_block_is_gathered_without_rechecking_it(monkeypatch):
    checked = []
    real = handle.gather
    monkeypatch.setattr(handle, "gather", lambda table, order, *flags: checked.append(flags) or real(table, order, *flags))
    monkeypatch.setattr(shared_gather, "BLOCK_COLUMNS", 1)
    source = _source()
    shared = SharedGather(source, _groups(source.num_rows, 2), None, None, KEY, [["x", "y"]])
    assert shared.rows(0, [KEY, "x", "y"]).to_pylist() == _reference(source, _groups(source.num_rows, 2)[0], None,
                                                                     [KEY, "x", "y"])
    assert checked == [(True,)] * 3  # the key block and one block per column


def test_a_deferred_value_is_computed_once_by_the_first_thread_and_start_never_waits():
    """``Deferred``: ``start`` computes a root no thread has claimed and returns at once when
    another thread is at it; ``get`` waits for that thread; derived values start their root."""
    from pyhudi.write.shared_gather import Deferred, resolved

    release, computing = threading.Event(), threading.Event()
    calls = []

    def compute():
        calls.append(threading.current_thread().name)
        computing.set()
        assert release.wait(5)
        return {"a": 1}

    root = Deferred(compute)
    derived = root.then(lambda found: {**found, "b": 2})
    worker = threading.Thread(target=derived.start, name="first")
    worker.start()
    assert computing.wait(5)
    root.start()  # (claimed by the worker: returns without waiting)
    got = []
    asker = threading.Thread(target=lambda: got.append(root.get()))
    asker.start()
    assert not got
    release.set()
    worker.join(5)
    asker.join(5)
    assert got == [{"a": 1}] and calls == ["first"]
    assert derived.get() == {"a": 1, "b": 2} and resolved(derived) == {"a": 1, "b": 2} and resolved(3) == 3


def test_a_deferred_value_that_failed_raises_in_every_thread_asking():
    from pyhudi.write.shared_gather import Deferred

    calls = []

    def compute():
        calls.append(1)
        raise ValueError("no sample")

    root = Deferred(compute)
    root.start()
    for value in (root, root.then(lambda found: found)):
        with pytest.raises(ValueError, match="no sample"):
            value.get()
    assert calls == [1]


@pytest.mark.parametrize("families", [None, "five"])
def test_options_sampled_in_the_tasks_write_the_files_of_options_sampled_by_the_planner(tmp_path, monkeypatch,
                                                                                        families):
    """The same bytes whether the first task or the planner samples the options (default options,
    a family table's full-row logs included)."""
    from pyhudi.timeline.timeline import Timeline
    from pyhudi.write import plan

    rng = np.random.default_rng(4)
    n = 3000
    data = pa.table({"id": pa.array(rng.permutation(n)), **{f"c{i}": rng.random(n) for i in range(10)},
                     "few": pa.array(rng.integers(0, 3, n)), "name": pa.array([f"n{i % 7}" for i in range(n)])})
    declared = {"f0": "c0,c1,c2,c3,c4", "f1": "c5,c6,c7,c8,c9,few,name"} if families else None

    def files(path: Path, eager: bool) -> dict:
        monkeypatch.setattr(Timeline, "new_instant_time", lambda self, *a, **k: "20261124101500123")
        if eager:  # (the value computed where it is planned)
            real = plan.Deferred
            monkeypatch.setattr(plan, "Deferred", lambda compute: real(lambda value=compute(): value))
        table = pyhudi.create_table(str(path), data.schema, "id", num_buckets=4, column_families=declared, name="w")
        table.insert(data)
        monkeypatch.undo()
        out = {str(f.relative_to(path)): f.read_bytes() for f in path.rglob("*.log.*")}
        assert len(out) == 4
        return out

    deferred, eager = files(tmp_path / "deferred", False), files(tmp_path / "eager", True)
    assert deferred == eager
    back = pyhudi.open_table(str(tmp_path / "deferred")).read().sort_by("id")
    assert back.select(data.column_names).equals(data.sort_by("id"))


def _scenario_w_like(n: int = 3000) -> tuple[pa.Table, dict]:
    rng = np.random.default_rng(8)
    data = pa.table({"id": pa.array(rng.permutation(n)), **{f"c{i}": rng.random(n) for i in range(12)},
                     "name": pa.array([f"n{i % 7}" for i in range(n)])})
    return data, {"f0": "c0,c1,c2,c3,c4", "f1": "c5,c6,c7,c8,c9,c10", "f2": "c11,name"}


@pytest.mark.parametrize("operation", ["insert", "upsert", "bulk_insert"])
def test_full_rows_gathered_at_once_write_the_files_of_the_families_put_together(tmp_path, monkeypatch, operation):
    """A write of new groups of a family table plans its gather for full rows (all columns at
    once): the same files, byte for byte, as each family gathered and the full row assembled."""
    from pyhudi.timeline.timeline import Timeline
    from pyhudi.write import full_row, plan

    data, declared = _scenario_w_like()
    asked = []

    def files(path: Path, at_once: bool) -> dict:
        monkeypatch.setattr(Timeline, "new_instant_time", lambda self, *a, **k: "20261124101500123")
        if not at_once:
            monkeypatch.setattr(plan, "_full_rows_only", lambda *a: False)
        real = full_row._gathered_payload
        monkeypatch.setattr(full_row, "_gathered_payload", lambda p: asked.append(at_once) or real(p))
        table = pyhudi.create_table(str(path), data.schema, "id", num_buckets=4, column_families=declared, name="w")
        getattr(table, operation)(data)
        monkeypatch.undo()
        out = {str(f.relative_to(path)): f.read_bytes() for f in path.rglob("*") if f.is_file() and
               (".log." in f.name or f.name.endswith(".parquet")) and ".hoodie" not in f.parts}
        assert len(out) == 4
        return out

    at_once = files(tmp_path / "at_once", True)
    assert asked == [True] * 4
    assert at_once == files(tmp_path / "families", False)
    back = pyhudi.open_table(str(tmp_path / "at_once")).read().sort_by("id")
    assert back.select(data.column_names).equals(data.sort_by("id"))


def test_a_full_row_plan_serves_pickled_family_payloads_their_own_rows(tmp_path):
    """Payloads of a gather planned for full rows, pickled one family at a time (a shipped task),
    each carry exactly their family's rows: blocks shared by two families are not dropped after
    the first asks."""
    from pyhudi.write.client import WriteClient

    data, declared = _scenario_w_like(400)
    table = pyhudi.create_table(str(tmp_path / "t"), data.schema, "id", num_buckets=2, column_families=declared)
    txn = WriteClient(table).unbegun("insert")
    prepared = txn.prepare(data)
    tasks = txn.plan_tasks(prepared)
    assert all(task.full_row for task in tasks) and tasks[0].payloads[0].shared.serves(
        ["id", *[f"c{i}" for i in range(12)], "name"])
    by_key = {r["id"]: r for r in data.to_pylist()}
    for task in tasks:
        for payload in task.payloads:
            shipped = pickle.loads(pickle.dumps(payload))
            rows = shipped.data.to_pylist()
            assert [r[KEY] for r in rows] == sorted(r[KEY] for r in rows)
            assert rows and all(r[c] == by_key[r["id"]][c] for r in rows for c in shipped.data.column_names if c != KEY)
            assert set(shipped.data.column_names) == {KEY, "id", *declared[payload.family].split(",")}

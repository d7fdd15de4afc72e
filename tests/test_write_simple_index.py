"""Tables without a bucket index (Hudi's SIMPLE index): copy-on-write and merge-on-read.

Upserts and deletes look keys up in the latest base files of the partitions they touch;
updates go to the key's file group (merge-on-read: a log file; copy-on-write: a new base file
version), inserts to new file groups. Rows are read back with ``t.read()`` and with the
independent reader ``hudi`` (hudi-rs 0.5.0).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
import pyhudi.write.handle as handle
from pyhudi.errors import CommitConflictError, ConfigError, SchemaError
from pyhudi.write.client import WriteClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_write import data_files, hudi_rows, snapshot  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.float64()), ("s", pa.string()), ("p", pa.string())])
COLS = ["id", "v", "s", "p"]
NO_SMALL_FILES = {"hoodie.parquet.small.file.limit": 0}


def rows(ids, tag, columns=COLS):
    ids = list(ids)
    data = {"id": pa.array(ids, pa.int64()), "v": [i + tag / 10 for i in ids], "s": [f"s{i}-{tag}" for i in ids],
            "p": ["x" if i % 2 else "y" for i in ids]}
    return pa.table({c: data[c] for c in columns}, schema=pa.schema([SCHEMA.field(c) for c in columns]))


def apply(state, data):
    for r in data.to_pylist():
        state[r["id"]] = {**state.get(r["id"], {c: None for c in COLS}), **r}


def make_table(tmp_path, table_type, partitioned, name="nb", **kw):
    kw.setdefault("partition_fields", ["p"] if partitioned else [])
    return pyhudi.create_table(str(tmp_path / name), SCHEMA, "id", name=name, table_type=table_type, **kw)


def check_rows(t, state):
    expected = [state[k] for k in sorted(state)]
    assert t.read().sort_by("id").to_pylist() == expected
    assert hudi_rows(t.path, COLS) == expected


def latest_bases(t):
    """{file id: latest base file name}"""
    return {g.file_id: max(g.base_files, key=lambda b: b.instant).name.name for g in t.file_groups() if g.base_files}


def group_of(t, key):
    for g in t.file_groups():
        base = max(g.base_files, key=lambda b: b.instant)
        if str(key) in pq.read_table(Path(t.path) / base.relpath, columns=["_hoodie_record_key"]).column(0).to_pylist():
            return g
    raise AssertionError(f"key {key} in no file group")


# ------------------------------------------------------------------------------ sequences
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_insert_upsert_delete_sequence(tmp_path, table_type, partitioned):
    t = make_table(tmp_path, table_type, partitioned)
    cow = table_type == "COPY_ON_WRITE"
    action = "commit" if cow else "deltacommit"
    parts = ["x", "y"] if partitioned else [""]
    state: dict = {}

    i1 = t.insert(rows(range(10), 1))
    apply(state, rows(range(10), 1))
    check_rows(t, state)
    groups = t.file_groups()
    assert sorted(g.partition_path for g in groups) == parts  # one new file group per partition
    assert all(len(g.base_files) == 1 and not g.log_files for g in groups)
    first_bases = latest_bases(t)
    for g in groups:
        assert g.file_id.endswith("-0") and len(g.file_id) == 38
        assert g.base_files[0].name.name.startswith(f"{g.file_id}_") and g.base_files[0].instant == i1

    # updates of 2 and 3 without column s (kept), inserts of 10 and 11 (s null) — to new file
    # groups: small-file handling is off here (tests below cover it)
    update = rows([2, 3, 10, 11], 2, ["id", "v", "p"])
    g2, g3 = group_of(t, 2), group_of(t, 3)
    i2 = t.upsert(update, options=NO_SMALL_FILES)
    apply(state, update)
    check_rows(t, state)
    after = {g.file_id: g for g in t.file_groups()}
    new_ids = set(after) - set(first_bases)
    assert len(new_ids) == len(parts)  # inserts: a new file group per partition
    for fid in new_ids:
        assert [b.instant for b in after[fid].base_files] == [i2] and not after[fid].log_files
    for g in {g2.file_id: g2, g3.file_id: g3}.values():
        if cow:  # a new version of the base file, same file group
            assert sorted(b.instant for b in after[g.file_id].base_files) == [i1, i2]
            assert not after[g.file_id].log_files
        else:  # a log file on the existing group
            assert [b.instant for b in after[g.file_id].base_files] == [i1]
            assert [lf.instant for lf in after[g.file_id].log_files] == [i2]
    untouched = set(first_bases) - {g2.file_id, g3.file_id}
    assert all(latest_bases(t)[f] == first_bases[f] for f in untouched)

    i3 = t.delete(pa.table({"id": pa.array([3, 4, 99], pa.int64()), "p": ["x", "y", "x"]}))
    del state[3], state[4]
    check_rows(t, state)
    assert [(str(i.action), str(i.state)) for i in t.timeline] == [(action, "COMPLETED")] * 3
    ops = [t.active_timeline().read_metadata(i).operation_type for i in t.timeline]
    assert ops == ["INSERT", "UPSERT", "DELETE"]
    # the commit time of every row is the commit that last wrote it
    got = {r["id"]: r["_hoodie_commit_time"] for r in hudi_rows(t.path, ["id", "_hoodie_commit_time"])}
    assert got == {k: (i2 if k in (2, 10, 11) else i1) for k in state}
    assert i3 > i2


def test_copy_on_write_rewrite_keeps_meta_of_untouched_rows_and_records_stats(tmp_path):
    t = make_table(tmp_path, "COPY_ON_WRITE", False)
    i1 = t.insert(rows(range(5), 1))
    (fid,) = latest_bases(t)
    old_base = latest_bases(t)[fid]
    i2 = t.upsert(rows([1, 3], 2))
    new_base = latest_bases(t)[fid]
    assert new_base == f"{fid}_0-1-0_{i2}.parquet"
    table = pq.read_table(Path(t.path) / new_base)
    assert table.column_names == ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                                  "_hoodie_partition_path", "_hoodie_file_name", "id", "v", "s", "p"]
    assert table.column("_hoodie_record_key").to_pylist() == ["0", "1", "2", "3", "4"]
    assert table.column("_hoodie_commit_time").to_pylist() == [i1, i2, i1, i2, i1]
    assert table.column("_hoodie_commit_seqno").to_pylist() == [
        f"{i1}_0_0", f"{i2}_0_0", f"{i1}_0_2", f"{i2}_0_1", f"{i1}_0_4"]
    assert table.column("_hoodie_file_name").to_pylist() == [new_base] * 5
    sorting = pq.read_metadata(Path(t.path) / new_base).row_group(0).sorting_columns
    assert [c.column_index for c in sorting] == [2]  # rows sorted by _hoodie_record_key, declared
    assert table.column("s").to_pylist() == ["s0-1", "s1-2", "s2-1", "s3-2", "s4-1"]
    [stat] = t.active_timeline().read_metadata(t.timeline[-1]).partition_to_write_stats[""]
    assert (stat.file_id, stat.path, stat.prev_commit, stat.prev_base_file) == (fid, new_base, i1, old_base)
    assert (stat.num_writes, stat.num_update_writes, stat.num_inserts, stat.num_deletes) == (5, 2, 0, 0)
    assert stat.base_file is None and stat.log_files is None
    assert stat.total_write_bytes == (Path(t.path) / new_base).stat().st_size
    i3 = t.delete(pa.table({"id": pa.array([0, 4], pa.int64())}))
    [stat] = t.active_timeline().read_metadata(t.timeline[-1]).partition_to_write_stats[""]
    assert (stat.path, stat.prev_commit, stat.num_writes, stat.num_deletes) == (f"{fid}_0-1-0_{i3}.parquet", i2, 3, 2)
    assert t.last_write.operation == "DELETE"


def test_deleting_every_row_of_a_file_leaves_an_empty_base_file(tmp_path):
    t = make_table(tmp_path, "COPY_ON_WRITE", True)
    t.insert(rows(range(4), 1))
    t.delete(pa.table({"id": pa.array([1, 3], pa.int64()), "p": ["x", "x"]}))
    state: dict = {}
    apply(state, rows([0, 2], 1))
    check_rows(t, state)
    x_group = next(g for g in t.file_groups() if g.partition_path == "x")
    latest = max(x_group.base_files, key=lambda b: b.instant)
    assert pq.read_metadata(Path(t.path) / latest.relpath).num_rows == 0


# ------------------------------------------------------------------------------ routing
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_inserts_are_split_into_file_groups_of_max_file_size(tmp_path, table_type):
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.float64())])
    t = pyhudi.create_table(str(tmp_path / "sz"), schema, "id", name="sz", table_type=table_type)
    data = pa.table({"id": pa.array(range(25), pa.int64()), "v": [float(i) for i in range(25)]}, schema=schema)
    # 16 bytes per row in memory (two 8-byte columns, no nulls): 160 bytes = 10 rows per file
    t.insert(data, options={"hoodie.parquet.max.file.size": 160})
    counts = {}
    for g in t.file_groups():
        keys = pq.read_table(Path(t.path) / g.base_files[0].relpath).column("_hoodie_record_key").to_pylist()
        counts[keys[0]] = keys
    in_key_order = sorted(str(i) for i in range(25))
    assert sorted(counts.values()) == [in_key_order[0:10], in_key_order[10:20], in_key_order[20:25]]
    assert t.read().sort_by("id").to_pylist() == data.to_pylist()
    # upserts keep routing updates to the groups that hold their keys
    t.upsert(pa.table({"id": pa.array([0, 24], pa.int64()), "v": [-1.0, -2.0]}, schema=schema))
    assert len(t.file_groups()) == 3
    expected = data.to_pylist()
    expected[0]["v"], expected[24]["v"] = -1.0, -2.0
    assert t.read().sort_by("id").to_pylist() == expected
    assert hudi_rows(t.path, ["id", "v"]) == expected


@pytest.mark.parametrize("num_buckets", [None, 1])
def test_row_groups_follow_parquet_block_size(tmp_path, num_buckets):
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.float64())])
    t = pyhudi.create_table(str(tmp_path / "rg"), schema, "id", name="rg", num_buckets=num_buckets)
    data = pa.table({"id": pa.array(range(12), pa.int64()), "v": [float(i) for i in range(12)]}, schema=schema)
    t.bulk_insert(data, options={"hoodie.parquet.block.size": 80})  # 16 bytes per row: 5 rows per group
    (f,) = t.last_write.files
    meta = pq.read_metadata(Path(t.path) / f)
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [5, 5, 2]
    assert t.read().sort_by("id").equals(data)


@pytest.mark.parametrize("small_files", [True, False], ids=["small-file", "new-group"])
def test_insert_does_not_look_keys_up_like_hudi(tmp_path, small_files):
    """``insert`` skips the index (Hudi's semantics): an existing key is stored again — in a new
    file group, or beside the stored one in the small file's next version
    (``hoodie.merge.allow.duplicate.on.inserts``, true by default as in Hudi)."""
    t = make_table(tmp_path, "COPY_ON_WRITE", False)
    t.insert(rows([1, 2], 1))
    t.insert(rows([2], 2), options=None if small_files else NO_SMALL_FILES)
    assert len(t.file_groups()) == (1 if small_files else 2)
    got = sorted((r["id"], r["s"]) for r in t.read().to_pylist())
    assert got == [(1, "s1-1"), (2, "s2-1"), (2, "s2-2")]
    assert sorted((r["id"], r["s"]) for r in hudi_rows(t.path, ["id", "s"])) == got
    if small_files:
        (status,) = t.last_write.statuses
        assert (status.kind, status.num_records, status.num_inserts, status.num_updates) == ("merge", 3, 1, 0)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_event_time_ordering_on_tables_without_buckets(tmp_path, table_type):
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), ("ts", pa.int64())])
    t = pyhudi.create_table(str(tmp_path / "ev"), schema, "id", name="ev", table_type=table_type, ordering_field="ts")
    t.upsert(pa.table({"id": [1, 2, 3, 1], "v": ["a", "b", "c", "a-old"], "ts": [10, 10, 10, 5]}, schema=schema))
    t.upsert(pa.table({"id": [1, 2, 3], "v": ["late", "new", "tie"], "ts": [1, 20, 10]}, schema=schema))
    expected = [{"id": 1, "v": "a", "ts": 10}, {"id": 2, "v": "new", "ts": 20}, {"id": 3, "v": "tie", "ts": 10}]
    assert t.read().sort_by("id").to_pylist() == expected
    assert hudi_rows(t.path, ["id", "v", "ts"]) == expected


def test_bad_input_leaves_a_copy_on_write_table_unchanged(tmp_path):
    t = make_table(tmp_path, "COPY_ON_WRITE", True)
    t.insert(rows(range(4), 1))
    snap, timeline = snapshot(t.path), t.timeline
    with pytest.raises(SchemaError, match=r"^input is missing the column 'p' \(record key and partition"):
        t.upsert(pa.table({"id": pa.array([1], pa.int64()), "v": [1.0]}))
    assert snapshot(t.path) == snap and t.timeline == timeline


def test_failed_copy_on_write_merge_is_rolled_back_old_version_stays(tmp_path, monkeypatch):
    t = make_table(tmp_path, "COPY_ON_WRITE", False)
    t.insert(rows(range(6), 1))
    before = data_files(t.path)
    original = handle.FileGroupWriteTask._write_base

    def failing(self, storage, relpath, *args):
        original(self, storage, relpath, *args)
        raise OSError("disk full")

    monkeypatch.setattr(handle.FileGroupWriteTask, "_write_base", failing)
    with pytest.raises(OSError, match="^disk full$"):
        t.upsert(rows([1, 2, 30], 2))
    monkeypatch.setattr(handle.FileGroupWriteTask, "_write_base", original)
    assert data_files(t.path) == before
    assert [str(i.action) for i in t.timeline] == ["commit", "rollback"]
    state: dict = {}
    apply(state, rows(range(6), 1))
    check_rows(t, state)


# ------------------------------------------------------------------------------ phases
def test_write_phases_copy_on_write_one_task_per_partition(tmp_path):
    t = make_table(tmp_path, "COPY_ON_WRITE", True)
    t.insert(rows(range(8), 1))
    client = WriteClient(t, options=NO_SMALL_FILES)
    txn = client.begin("upsert")
    assert str(txn.action) == "commit"
    x = txn.write_rows(rows([1, 3, 9], 2), task_id=0)
    y = txn.write_rows(rows([2, 4, 10], 2), task_id=1)
    assert sorted((s.partition_path, s.kind, s.num_updates, s.num_inserts) for s in x + y) == [
        ("x", "create", 0, 1), ("x", "merge", 2, 0), ("y", "create", 0, 1), ("y", "merge", 2, 0)]
    client.commit(txn, x + y)
    state: dict = {}
    apply(state, rows(range(8), 1))
    apply(state, rows([1, 3, 9, 2, 4, 10], 2))
    check_rows(t, state)


def test_write_phases_two_tasks_rewriting_one_copy_on_write_file_group_are_refused(tmp_path):
    t = make_table(tmp_path, "COPY_ON_WRITE", False)
    t.insert(rows(range(4), 1))
    (fid,) = latest_bases(t)
    client = WriteClient(t)
    txn = client.begin("upsert")
    statuses = txn.write_rows(rows([1], 2), task_id=0) + txn.write_rows(rows([2], 2), task_id=1)
    with pytest.raises(CommitConflictError, match=f"^two tasks wrote a base file for file group {fid} "):
        client.commit(txn, statuses)
    state: dict = {}
    apply(state, rows(range(4), 1))
    check_rows(t, state)


def test_write_phases_merge_on_read_tasks_may_share_a_file_group(tmp_path):
    t = make_table(tmp_path, "MERGE_ON_READ", False)
    t.insert(rows(range(4), 1))
    client = WriteClient(t)
    txn = client.begin("upsert")
    statuses = txn.write_rows(rows([1], 2), task_id=0) + txn.write_rows(rows([2], 3), task_id=1)
    client.commit(txn, statuses)
    (group,) = t.file_groups()
    assert sorted(lf.name.write_token for lf in group.log_files) == ["0-1-0", "1-1-0"]
    state: dict = {}
    apply(state, rows(range(4), 1))
    apply(state, rows([1], 2))
    apply(state, rows([2], 3))
    check_rows(t, state)


# ------------------------------------------------------------------------------ routing
def test_routes_name_the_file_group_of_each_stored_key_and_the_partition_of_new_ones(tmp_path):
    """``WriteTxn.routes`` (what ``pyhudi.spark.write`` shuffles on): the file group holding a
    key for upserts and deletes, the bare partition for new keys and for every row of inserts."""
    t = make_table(tmp_path, "COPY_ON_WRITE", True, options={"hoodie.parquet.small.file.limit": "0"})
    t.insert(rows(range(6), 1))
    t.insert(rows(range(6, 10), 1))  # no small files: new file groups in both partitions
    data = rows([9, 1, 20, 2, 7, 21], 2)  # 20, 21: new keys
    routes = WriteClient(t).unbegun("upsert").routes(data).to_pylist()
    assert routes == [f"x\x00{group_of(t, 9).file_id}", f"x\x00{group_of(t, 1).file_id}", "y\x00",
                      f"y\x00{group_of(t, 2).file_id}", f"x\x00{group_of(t, 7).file_id}", "x\x00"]
    assert group_of(t, 9).file_id != group_of(t, 1).file_id
    assert WriteClient(t).unbegun("delete").routes(rows([1, 20], 2, ["id", "p"])).to_pylist() == [
        f"x\x00{group_of(t, 1).file_id}", "y\x00"]
    assert WriteClient(t).unbegun("insert").routes(data).to_pylist() == ["x\x00", "x\x00", "y\x00", "y\x00",
                                                                          "x\x00", "x\x00"]
    with pytest.raises(SchemaError, match="null"):  # bad input is refused before any lookup
        WriteClient(t).unbegun("upsert").routes(pa.table({"id": pa.array([None], pa.int64()), "p": ["x"]}))


def test_routes_are_for_tables_without_buckets(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "b"), SCHEMA, "id", num_buckets=2)
    with pytest.raises(ConfigError, match="bucketed table routes rows by bucket"):
        WriteClient(t).unbegun("upsert").routes(rows([1], 1))


def test_commit_from_another_client_is_no_conflict_with_the_commits_that_wrote_the_merged_bases(tmp_path):
    """A driver that commits what executors wrote (no listing of its own from ``begin``) checks
    each rewritten file group against the commits after ITS base version: groups whose bases
    come from different commits are no conflict, a group rewritten meanwhile is."""
    t = make_table(tmp_path, "COPY_ON_WRITE", False, options={"hoodie.parquet.small.file.limit": "0"})
    t.insert(rows(range(4), 1))
    t.insert(rows(range(4, 8), 1))  # a second file group, based on a later commit
    txn = WriteClient(t).begin("upsert")
    statuses = txn.write_rows(rows([1, 5], 2), task_id=0)  # rewrites both groups
    assert sorted(s.kind for s in statuses) == ["merge", "merge"]
    WriteClient(t).commit(txn, statuses)  # another client object: no listing from begin
    state: dict = {}
    apply(state, rows(range(8), 1))
    apply(state, rows([1, 5], 2))
    check_rows(t, state)

    lazy = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL", "hoodie.parquet.small.file.limit": "0"}
    txn = WriteClient(t, options=lazy).begin("upsert")
    statuses = txn.write_rows(rows([2], 3), task_id=0)
    other = WriteClient(t, options=lazy).write(rows([3], 4), "upsert")  # rewrites the group meanwhile
    with pytest.raises(CommitConflictError, match=f"^write {txn.instant} conflicts with commit {other.instant}, "):
        WriteClient(t, options=lazy).commit(txn, statuses)
    apply(state, rows([3], 4))
    check_rows(t, state)


def test_groups_sharing_a_stored_key_share_one_route_so_one_task_rewrites_them(tmp_path):
    """An ``insert`` of a stored key into a new file group leaves the key in two groups; an
    update of it rewrites both, so every row of either group must reach the same task — each
    task routes them alike, from the stored keys alone."""
    t = make_table(tmp_path, "COPY_ON_WRITE", False)
    t.insert(rows([1, 2], 1))
    t.insert(rows([2, 3], 2), options=NO_SMALL_FILES)  # 2 is now stored in two groups
    assert len(t.file_groups()) == 2
    client = WriteClient(t)
    update = rows([1, 2, 3], 3)
    assert client.unbegun("upsert").routes(update).to_pylist() == ["\x00*"] * 3
    assert client.unbegun("upsert").routes(rows([1], 3)).to_pylist() == ["\x00*"]  # same route from any task
    txn = client.begin("upsert")
    by_route: dict = {}
    for row, route in zip(update.to_pylist(), txn.routes(update).to_pylist()):
        by_route.setdefault(route, []).append(row)
    statuses = [s for i, group in enumerate(by_route.values())
                for s in txn.write_rows(pa.Table.from_pylist(group, schema=SCHEMA), task_id=i)]
    client.commit(txn, statuses)
    got = sorted((r["id"], r["v"]) for r in t.read().to_pylist())
    assert got == [(1, 1.3), (2, 2.3), (2, 2.3), (3, 3.3)]  # every stored copy updated


def test_a_delete_that_loses_on_event_time_keeps_its_key_located(tmp_path):
    """A delete block carrying an ordering value lower than the stored one deletes nothing under
    event-time ordering; the index keeps the key there, so a later upsert updates that record
    instead of storing a second live copy in another file group."""
    t = make_table(tmp_path, "MERGE_ON_READ", False, ordering_field="v", options=NO_SMALL_FILES)
    t.insert(rows([1, 2], 1))
    client = WriteClient(t)
    txn = client.begin("delete")
    tasks = txn.plan_tasks(txn.prepare(pa.table({"id": pa.array([1], pa.int64())})))
    for task in tasks:  # a delete as Hudi writes it with an ordering value (pyhudi writes default ones)
        task.delete_keys = task.delete_keys.append_column("ordering_value", pa.array([0.5]))
    client.commit(txn, [s for task in tasks for s in task.run()])
    assert sorted(r["id"] for r in t.read().to_pylist()) == [1, 2]  # 0.5 < 1.1: the delete lost
    t.upsert(rows([1], 7))
    assert len(t.file_groups()) == 1
    assert sorted((r["id"], r["v"]) for r in t.read().to_pylist()) == [(1, 1.7), (2, 2.1)]

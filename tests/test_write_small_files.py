"""Small-file handling and log-only keys on tables without a bucket index (Hudi's SIMPLE index).

Inserts fill the small file groups of their partition before new file groups are opened
(copy-on-write: the small base file's next version; merge-on-read: a log file on a file group
that has no log files yet); the simple index finds keys that live only in log files, so upserts
of them update their file group instead of inserting a duplicate.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.storage.naming import new_file_id
from pyhudi.write.client import WriteClient
from pyhudi.write.handle import KIND_APPEND, FamilyPayload, FileGroupWriteTask
from pyhudi.write.small_files import average_record_size

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_write import hudi_rows
from test_write_simple_index import COLS, NO_SMALL_FILES, SCHEMA, apply, check_rows, make_table, rows


def shape(t):
    """{file id: ([base file instants], [log file instants])} of the visible file groups."""
    return {g.file_id: (sorted(b.instant for b in g.base_files), sorted(lf.instant for lf in g.log_files))
            for g in t.file_groups()}


def stats(t):
    return sorted((s.partition_path, s.file_id, s.kind, s.num_records, s.num_inserts, s.num_updates)
                  for s in t.last_write.statuses)


# ------------------------------------------------------------------------------ copy-on-write
def test_copy_on_write_inserts_are_merged_into_the_small_files_of_their_partition(tmp_path):
    t = make_table(tmp_path, "COPY_ON_WRITE", True)
    state: dict = {}
    i1 = t.insert(rows(range(6), 1))
    apply(state, rows(range(6), 1))
    before = {g.partition_path: g.file_id for g in t.file_groups()}
    assert sorted(before) == ["x", "y"]

    change = rows([1, 2, 10, 11, 13], 2)  # updates 1 (x), 2 (y); inserts 10 (y), 11 and 13 (x)
    i2 = t.upsert(change)
    apply(state, change)
    check_rows(t, state)
    # no new file group: each partition's small file got its next version with the inserts
    assert shape(t) == {before["x"]: ([i1, i2], []), before["y"]: ([i1, i2], [])}
    assert stats(t) == [("x", before["x"], "merge", 5, 2, 1), ("y", before["y"], "merge", 4, 1, 1)]
    got = {r["id"]: r["_hoodie_commit_time"] for r in hudi_rows(t.path, ["id", "_hoodie_commit_time"])}
    assert got == {k: (i2 if k in (1, 2, 10, 11, 13) else i1) for k in state}


def test_copy_on_write_small_file_takes_what_fits_and_the_rest_opens_a_new_group(tmp_path):
    t = make_table(tmp_path, "COPY_ON_WRITE", False)
    t.insert(rows(range(4), 1))
    (group,) = t.file_groups()
    size = group.base_files[0].size
    # room for exactly 3 records of 100 bytes; the other 5 inserts go to one new file group
    options = {"hoodie.copyonwrite.record.size.estimate": 100, "hoodie.parquet.max.file.size": size + 399}
    inserts = rows(range(10, 18), 2)
    i2 = t.insert(inserts, options=options)
    state: dict = {}
    apply(state, rows(range(4), 1))
    apply(state, inserts)
    check_rows(t, state)
    groups = shape(t)
    assert len(groups) == 2 and groups[group.file_id] == ([group.base_files[0].instant, i2], [])
    (new_id,) = set(groups) - {group.file_id}
    assert groups[new_id] == ([i2], [])
    in_key_order = sorted(str(i) for i in range(10, 18))  # inserts are given out in key order
    new_keys = pq.read_table(Path(t.path) / t.last_write.files[[s.file_id for s in t.last_write.statuses].index(new_id)],
                             columns=["_hoodie_record_key"]).column(0).to_pylist()
    assert new_keys == in_key_order[3:]
    assert stats(t) == sorted([("", group.file_id, "merge", 7, 3, 0), ("", new_id, "create", 5, 5, 0)])


def test_files_at_or_over_the_small_file_limit_and_a_zero_limit_get_no_inserts(tmp_path):
    t = make_table(tmp_path, "COPY_ON_WRITE", False)
    t.insert(rows(range(4), 1))
    (group,) = t.file_groups()
    size = group.base_files[0].size
    t.insert(rows([20], 2), options={"hoodie.parquet.small.file.limit": size})  # not smaller than the limit
    t.insert(rows([21], 2), options={"hoodie.parquet.small.file.limit": 0})
    assert len(t.file_groups()) == 3
    assert shape(t)[group.file_id] == ([group.base_files[0].instant], [])
    t.insert(rows([22], 3), options={"hoodie.parquet.small.file.limit": size + 1})
    assert len(t.file_groups()) == 3  # now it is small: the insert went into the smallest candidates
    assert sorted(r["id"] for r in t.read().to_pylist()) == [0, 1, 2, 3, 20, 21, 22]


def test_bulk_insert_never_fills_small_files(tmp_path):
    t = make_table(tmp_path, "COPY_ON_WRITE", False)
    t.insert(rows(range(4), 1))
    t.bulk_insert(rows(range(4, 6), 1))
    assert len(t.file_groups()) == 2


# ------------------------------------------------------------------------------ merge-on-read
def test_merge_on_read_pads_a_small_file_group_without_logs_and_upserts_find_the_logged_keys(tmp_path):
    t = make_table(tmp_path, "MERGE_ON_READ", False)
    state: dict = {}
    i1 = t.insert(rows(range(6), 1))
    apply(state, rows(range(6), 1))
    (fid,) = shape(t)

    # inserts 10, 11 and update 3 go to the small group as ONE log file
    change = rows([3, 10, 11], 2)
    i2 = t.upsert(change)
    apply(state, change)
    check_rows(t, state)
    assert shape(t) == {fid: ([i1], [i2])}
    assert stats(t) == [("", fid, "append", 3, 2, 1)]

    # the group has a log file now: the next inserts open a new file group
    i3 = t.insert(rows([20, 21], 3))
    apply(state, rows([20, 21], 3))
    groups = shape(t)
    assert len(groups) == 2 and groups[fid] == ([i1], [i2])
    (other,) = set(groups) - {fid}
    assert groups[other] == ([i3], [])

    # 10 and 11 are only in fid's log file: the simple index finds them there (no duplicates)
    change = rows([10, 11, 20], 4)
    i4 = t.upsert(change)
    apply(state, change)
    check_rows(t, state)
    assert shape(t) == {fid: ([i1], [i2, i4]), other: ([i3], [i4])}
    assert stats(t) == sorted([("", fid, "append", 2, 0, 2), ("", other, "append", 1, 0, 1)])
    assert len(t.read().to_pylist()) == len(state) == 10

    # deletes find logged keys too
    t.delete(pa.table({"id": pa.array([11], pa.int64()), "p": ["x"]}))
    del state[11]
    check_rows(t, state)


def test_merge_on_read_fills_the_smallest_small_file_first(tmp_path):
    t = make_table(tmp_path, "MERGE_ON_READ", False)
    t.insert(rows(range(10), 1), options=NO_SMALL_FILES)
    t.insert(rows([50, 51], 1), options=NO_SMALL_FILES)
    sizes = {g.file_id: g.base_files[0].size for g in t.file_groups()}
    smallest = min(sizes, key=sizes.get)
    i3 = t.insert(rows([60, 61, 62], 2))
    assert shape(t)[smallest][1] == [i3]
    assert [s.file_id for s in t.last_write.statuses] == [smallest]
    state: dict = {}
    for data in (rows(range(10), 1), rows([50, 51], 1), rows([60, 61, 62], 2)):
        apply(state, data)
    check_rows(t, state)


def test_upsert_updates_a_log_only_file_group(tmp_path):
    """A file group with log files and no base file (as Apache Hudi writes them, e.g. with a
    bucket index or Flink): its keys are found, so an upsert appends to it."""
    t = make_table(tmp_path, "MERGE_ON_READ", False)
    t.insert(rows(range(4), 1))
    client = WriteClient(t)
    txn = client.begin("upsert")
    data = pa.table({"_hoodie_record_key": pa.array(["7", "8"]), "id": pa.array([7, 8], pa.int64()),
                     "v": [7.5, 8.5], "s": ["s7-1", "s8-1"], "p": ["x", "y"]})
    fid = new_file_id(0)
    task = FileGroupWriteTask(
        base_uri=t.storage.base_uri, instant=txn.instant, table_name=t.name, partition_path="", file_id=fid,
        kind=KIND_APPEND, write_token="0-1-0", is_new_file_group=True,
        payloads=[FamilyPayload("", data, False, pa.schema([SCHEMA.field(c) for c in COLS]))],
    )
    i2 = client.commit(txn, task.run()).instant
    groups = shape(t)
    assert groups[fid] == ([], [i2])  # log-only
    state: dict = {}
    apply(state, rows(range(4), 1))
    apply(state, rows([7, 8], 1).set_column(1, "v", pa.array([7.5, 8.5])))
    check_rows(t, state)

    change = rows([8, 9], 2)  # 8 lives only in the log-only group; 9 is new
    i3 = t.upsert(change, options=NO_SMALL_FILES)
    apply(state, change)
    check_rows(t, state)
    assert shape(t)[fid] == ([], [i2, i3])
    by_group = {s.file_id: (s.kind, s.num_updates, s.num_inserts) for s in t.last_write.statuses}
    assert by_group[fid] == ("append", 1, 0)
    assert len(t.file_groups()) == 3  # 9 opened a new group


def test_average_record_size_comes_from_the_latest_commit_big_enough_to_tell(tmp_path):
    t = make_table(tmp_path, "COPY_ON_WRITE", False)
    t.insert(rows(range(40), 1))
    t.insert(rows(range(100, 103), 1), options=NO_SMALL_FILES)
    timeline = t.active_timeline()
    first, second = timeline.commits_timeline()
    big = timeline.read_metadata(first)
    written = sum(s.total_write_bytes for s in big.write_stats())
    small = sum(s.total_write_bytes for s in timeline.read_metadata(second).write_stats())
    assert small < written
    # a limit between the two commits' sizes: only the first one measures
    options = {"hoodie.parquet.small.file.limit": (small + written) // 2}
    assert average_record_size(timeline, options) == math.ceil(written / 40)
    # no commit wrote more than the threshold: the configured estimate
    assert average_record_size(timeline, {"hoodie.copyonwrite.record.size.estimate": 77}) == 77
    with_threshold = {**options, "hoodie.record.size.estimation.threshold": 0.0001}
    assert average_record_size(timeline, with_threshold) == math.ceil(small / 3)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_small_file_limit_is_a_declared_config_key(tmp_path, table_type):
    from pyhudi.config.keys import lookup

    key = lookup("hoodie.parquet.small.file.limit")
    assert key is not None and key.default == 104_857_600 and key.type is int
    t = make_table(tmp_path, table_type, False)
    t.insert(rows(range(2), 1))
    with pytest.raises(pyhudi.errors.ConfigError, match="invalid value 'lots' for hoodie.parquet.small.file.limit"):
        t.insert(rows([5], 1), options={"hoodie.parquet.small.file.limit": "lots"})
    assert sorted(r["id"] for r in t.read().to_pylist()) == [0, 1]
    assert len(t.timeline) == 1


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_file_groups_in_a_pending_clustering_get_no_inserts(tmp_path, table_type):
    from pyhudi.timeline.metadata import encode_instant_metadata
    from pyhudi.timeline.metadata_plans import ClusteringGroup, ClusteringPlan, RequestedReplaceMetadata, SliceInfo
    from pyhudi.write.small_files import pending_clustering_groups

    t = make_table(tmp_path, table_type, False)
    t.insert(rows(range(2), 1))
    (clustered,) = shape(t)  # the smaller group: the first candidate but for the clustering
    t.insert(rows(range(2, 6), 1), options=NO_SMALL_FILES)
    (free,) = set(shape(t)) - {clustered}
    plan = RequestedReplaceMetadata(operation_type="CLUSTER", clustering_plan=ClusteringPlan(
        input_groups=[ClusteringGroup(slices=[SliceInfo(file_id=clustered, partition_path="")])]))
    timeline = t.active_timeline()
    pending = timeline.create_requested("clustering", content=encode_instant_metadata(plan))
    assert pending_clustering_groups(t.active_timeline()) == {("", clustered)}
    i3 = t.insert(rows([10, 11], 2), options={"hoodie.merge.small.file.group.candidates.limit": 5})
    (status,) = t.last_write.statuses
    assert status.file_id == free and status.num_inserts == 2
    assert shape(t)[clustered][1:] == ([],) and len(shape(t)[clustered][0]) == 1
    assert i3 in shape(t)[free][0] + shape(t)[free][1]
    assert t.active_timeline().get(pending.requested_time).is_pending  # the clustering is left alone
    assert sorted(r["id"] for r in t.read().to_pylist()) == [0, 1, 2, 3, 4, 5, 10, 11]


def test_executor_planned_copy_on_write_inserts_open_new_groups_merge_on_read_ones_pad(tmp_path):
    """Tasks that plan their own rows (``write_rows``) cannot share a copy-on-write small file
    (each would write a version of it): their inserts open new groups. Merge-on-read tasks may
    each append a log file to the small group."""
    for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        t = make_table(tmp_path, table_type, False, name=f"ex_{table_type}")
        t.insert(rows(range(4), 1))
        (small,) = shape(t)
        client = WriteClient(t)
        txn = client.begin("insert")
        statuses = txn.write_rows(rows([10, 11], 2), task_id=0) + txn.write_rows(rows([12, 13], 2), task_id=1)
        i2 = client.commit(txn, statuses).instant
        groups = shape(t)
        if table_type == "COPY_ON_WRITE":
            assert len(groups) == 3 and groups[small] == (groups[small][0], []) and len(groups[small][0]) == 1
            assert sorted(s.kind for s in statuses) == ["create", "create"]
        else:
            assert groups == {small: (groups[small][0], [i2, i2])}
            assert sorted((s.kind, s.num_inserts) for s in statuses) == [("append", 2), ("append", 2)]
        assert sorted(r["id"] for r in t.read().to_pylist()) == [0, 1, 2, 3, 10, 11, 12, 13]


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_partial_upsert_pads_small_files_with_new_keys_whose_absent_columns_are_null(tmp_path, table_type):
    t = make_table(tmp_path, table_type, True)
    state: dict = {}
    t.insert(rows(range(6), 1))
    apply(state, rows(range(6), 1))
    before = set(shape(t))
    change = rows([2, 3, 10, 11], 2, ["id", "v", "p"])  # no column s: kept for 2, 3; null for 10, 11
    t.upsert(change)
    apply(state, change)
    check_rows(t, state)
    assert set(shape(t)) == before
    kind = "merge" if table_type == "COPY_ON_WRITE" else "append"
    assert sorted((s.partition_path, s.kind, s.num_inserts, s.num_updates) for s in t.last_write.statuses) == [
        ("x", kind, 1, 1), ("y", kind, 1, 1)]
    assert {r["id"]: r["s"] for r in t.read().to_pylist()}[10] is None


# ------------------------------------------------------------------------------ concurrent writers
def _planned(client, data, operation):
    """A write begun and its files written, not committed (what a concurrent writer holds)."""
    timeline = client.table.active_timeline()
    prepared = client._txn(operation, client.table.schema, instant="", families={}).prepare(data)
    txn = client.begin(operation, timeline=timeline)
    statuses = [s for task in txn.plan_tasks(prepared, timeline=timeline) for s in task.run()]
    return txn, statuses


@pytest.mark.parametrize("committer", ["planner", "other client"])
@pytest.mark.parametrize("operation", ["insert", "upsert"])
def test_concurrent_copy_on_write_writers_padding_one_small_file_the_later_commit_fails(tmp_path, operation,
                                                                                       committer):
    from pyhudi.errors import CommitConflictError

    t = make_table(tmp_path, "COPY_ON_WRITE", False)
    t.insert(rows(range(4), 1))
    (group,) = t.file_groups()
    lazy = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL"}  # two writers at once
    a, b = WriteClient(t, options=lazy), WriteClient(t, options=lazy)
    txn_a, statuses_a = _planned(a, rows([10, 11], 2), operation)
    txn_b, statuses_b = _planned(b, rows([20, 21], 3), operation)
    assert {s.file_id for s in statuses_a} == {s.file_id for s in statuses_b} == {group.file_id}
    a.commit(txn_a, statuses_a)
    # b merged its inserts into the version a replaced: committing it would drop rows 10 and 11
    with pytest.raises(CommitConflictError, match=f"^write {txn_b.instant} conflicts with commit {txn_a.instant}, "
                                                  f"which wrote a new version of file group {group.file_id} "):
        (b if committer == "planner" else WriteClient(t, options=lazy)).commit(txn_b, statuses_b)
    state: dict = {}
    apply(state, rows(range(4), 1))
    apply(state, rows([10, 11], 2))
    check_rows(t, state)
    assert t.active_timeline().get(txn_b.instant) is None  # rolled back


def test_upsert_of_a_key_an_insert_stored_twice_in_a_small_file_updates_both_copies(tmp_path):
    """``insert`` keeps a key the small file already holds as a second record (Hudi's default);
    an upsert of that key merges it into every stored copy (Hudi's merge handle) and the file
    stays readable (it may not declare strictly sorted keys)."""
    t = make_table(tmp_path, "COPY_ON_WRITE", False)
    t.insert(rows(range(4), 1))
    t.insert(rows([1], 2))
    (group,) = t.file_groups()
    assert [(r["id"], r["v"]) for r in t.read().sort_by([("id", "ascending"), ("v", "ascending")]).to_pylist()] == [
        (0, 0.1), (1, 1.1), (1, 1.2), (2, 2.1), (3, 3.1)]
    i3 = t.upsert(rows([1, 2], 3))
    assert [g.file_id for g in t.file_groups()] == [group.file_id]
    expected = [(0, 0.1, "s0-1"), (1, 1.3, "s1-3"), (1, 1.3, "s1-3"), (2, 2.3, "s2-3"), (3, 3.1, "s3-1")]
    assert [(r["id"], r["v"], r["s"]) for r in t.read().sort_by("id").to_pylist()] == expected
    assert [(r["id"], r["v"], r["s"]) for r in hudi_rows(t.path, COLS)] == expected
    assert stats(t) == [("", group.file_id, "merge", 5, 0, 3)]
    base = Path(t.path) / t.last_write.files[0]
    assert pq.ParquetFile(base).metadata.row_group(0).sorting_columns == ()
    assert t.last_write.instant == i3


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_updates_and_deletes_reach_every_file_group_holding_a_key(tmp_path, table_type):
    """Inserts keep duplicates, so one key can live in two file groups of its partition; as in
    Hudi's simple index, an upsert updates and a delete removes it in every one of them."""
    t = make_table(tmp_path, table_type, True)
    t.insert(rows([1, 3], 1), options=NO_SMALL_FILES)
    t.insert(rows([1, 5], 2), options=NO_SMALL_FILES)  # key 1 again, in a second file group of "x"
    holders = {g.file_id for g in t.file_groups() if g.partition_path == "x"}
    assert len(holders) == 2
    assert sorted((r["id"], r["s"]) for r in t.read().to_pylist()) == [(1, "s1-1"), (1, "s1-2"), (3, "s3-1"),
                                                                       (5, "s5-2")]
    t.upsert(rows([1], 3))
    assert {s.file_id for s in t.last_write.statuses} == holders  # both holders got the update
    assert sorted((r["id"], r["s"]) for r in t.read().to_pylist()) == [(1, "s1-3"), (1, "s1-3"), (3, "s3-1"),
                                                                       (5, "s5-2")]
    assert sorted((r["id"], r["s"]) for r in hudi_rows(t.path, COLS)) == [(1, "s1-3"), (1, "s1-3"), (3, "s3-1"),
                                                                          (5, "s5-2")]
    t.delete(pa.table({"id": pa.array([1], pa.int64()), "p": ["x"]}))
    assert {s.file_id for s in t.last_write.statuses} == holders
    assert sorted(r["id"] for r in t.read().to_pylist()) == [3, 5]
    assert sorted(r["id"] for r in hudi_rows(t.path, COLS)) == [3, 5]

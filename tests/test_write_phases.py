"""Write phases (CONTRACTS C2): begin → WriteTxn.write_rows per task → commit / abort.

Tasks are simulated in process (each ``write_rows`` call is one executor task; the txn and the
statuses cross a pickle round trip like they do on Spark). Rows are read back with ``t.read()``
(family tables) and with the independent reader ``hudi`` (hudi-rs) for a plain bucket table.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import CommitConflictError, SchemaError, SplitFileGroupError, TimelineError
from pyhudi.write.client import WriteClient, WriteResult
from pyhudi.write.txn import WriteTxn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_write import (  # noqa: E402
    FAM_SCHEMA,
    FAMILIES,
    PLAIN_SCHEMA,
    _plain_expected,
    bucket_of,
    data_files,
    fid,
    full_rows,
    hudi_rows,
    snapshot,
    timeline_files,
)
from write_helpers import make_rows  # noqa: E402


def fam_table(tmp_path, name="ph", buckets=2, options=None):
    return pyhudi.create_table(str(tmp_path / name), FAM_SCHEMA, "id", name=name, num_buckets=buckets,
                               column_families=FAMILIES, options=options)


def shipped(obj):
    """What an executor / the driver receives: a pickle round trip."""
    return pickle.loads(pickle.dumps(obj))


def ids_in_bucket(bucket, n, count, start=0):
    out, i = [], start
    while len(out) < count:
        if bucket_of(i, n) == bucket:
            out.append(i)
        i += 1
    return out


def expected_rows(ids, tag=0):
    return sorted(full_rows(ids, tag).to_pylist(), key=lambda r: r["id"])


def read_sorted(t):
    return t.read().sort_by("id").to_pylist()


def token_of(relpath):
    return relpath.rsplit("_", 1)[-1].rsplit(".", 1)[0] if relpath.endswith(".parquet") else relpath.rsplit("_", 1)[-1]


# ------------------------------------------------------------------------------ commit
def test_two_tasks_on_disjoint_buckets_commit_reads_back_exactly(tmp_path):
    t = fam_table(tmp_path)
    client = WriteClient(t)
    txn = client.begin("upsert")
    assert isinstance(txn, WriteTxn) and txn.operation == "upsert" and txn.schema == FAM_SCHEMA
    assert [(str(i.action), str(i.state)) for i in t.timeline] == [("deltacommit", "INFLIGHT")]
    b0, b1 = ids_in_bucket(0, 2, 5), ids_in_bucket(1, 2, 5)
    statuses = shipped(shipped(txn).write_rows(full_rows(b0), task_id=0)) + \
        shipped(shipped(txn).write_rows(full_rows(b1), task_id=1))
    # nothing is visible before the commit
    assert t.read().num_rows == 0
    result = client.commit(txn, statuses)
    assert isinstance(result, WriteResult) and result.instant == txn.instant
    assert read_sorted(t) == expected_rows(b0 + b1)
    # new file groups: one full-row log each (every family's columns, no suffix)
    assert sorted(result.files) == sorted(f".{fid(b)}_{txn.instant}.log.1_{task}-1-0" for b, task in ((0, 0), (1, 1)))
    assert result.rows_per_family == {"": 10}
    assert result.discarded_files == []
    assert [(str(i.action), str(i.state)) for i in t.timeline] == [("deltacommit", "COMPLETED")]
    md = t.active_timeline().read_metadata(t.timeline[0])
    assert md.operation_type == "UPSERT"
    assert sorted(s.path for stats in md.partition_to_write_stats.values() for s in stats) == sorted(result.files)
    assert not (Path(t.path) / ".hoodie" / ".temp" / txn.instant).exists()
    assert not (Path(t.path) / ".hoodie" / ".heartbeat" / txn.instant).exists()


def test_two_tasks_on_the_same_bucket_write_distinct_log_files(tmp_path):
    t = fam_table(tmp_path, buckets=1)
    t.upsert(full_rows(range(4)))
    client = WriteClient(t)
    txn = client.begin("upsert")
    s1 = txn.write_rows(full_rows([10, 11, 2], tag=1), task_id=3, attempt=0, stage=7)
    s2 = txn.write_rows(full_rows([12, 13, 3], tag=2), task_id=4, attempt=1, stage=7)
    assert {token_of(s.file_name) for s in s1} == {"3-7-0"}
    assert {token_of(s.file_name) for s in s2} == {"4-7-1"}
    assert {s.file_id for s in s1 + s2} == {fid(0)}
    client.commit(txn, s1 + s2)
    group = t.file_groups()[0]
    assert len(group.latest_slice("fa", True).log_files) == 3  # first upsert + one per task
    expected = {r["id"]: r for r in expected_rows(range(4))}
    expected.update({r["id"]: r for r in expected_rows([10, 11, 2], tag=1)})
    expected.update({r["id"]: r for r in expected_rows([12, 13, 3], tag=2)})
    assert read_sorted(t) == [expected[k] for k in sorted(expected)]


def test_plain_table_phases_read_by_hudi_rs(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "pl"), PLAIN_SCHEMA, "id", name="pl", num_buckets=2)
    client = WriteClient(t)
    txn = client.begin("upsert")
    statuses = []
    for task, ids in enumerate((range(0, 10), range(10, 20), range(20, 30))):  # every task hits both buckets
        statuses += txn.write_rows(make_rows(PLAIN_SCHEMA, ["id", "v", "s"], ids, task + 1), task_id=task)
    assert sorted((s.file_id, token_of(s.file_name)) for s in statuses) == sorted(
        (fid(b), f"{task}-1-0") for b in (0, 1) for task in range(3))
    client.commit(txn, statuses)
    expected = _plain_expected((range(10), 1), (range(10, 20), 2), (range(20, 30), 3))
    assert hudi_rows(t.path, ["id", "v", "s"]) == expected


# ------------------------------------------------------------------------------ abort
def test_abort_deletes_everything_and_rolls_the_instant_back(tmp_path):
    t = fam_table(tmp_path)
    i1 = t.upsert(full_rows(range(6)))
    before = data_files(t.path)
    client = WriteClient(t)
    txn = client.begin("upsert")
    written = txn.write_rows(full_rows(range(4), tag=5), task_id=0) + txn.write_rows(full_rows([40]), task_id=1)
    assert {s.relpath for s in written} <= data_files(t.path)
    client.abort(txn)
    assert data_files(t.path) == before
    assert read_sorted(t) == expected_rows(range(6))
    assert [(str(i.action), str(i.state)) for i in t.timeline] == [
        ("deltacommit", "COMPLETED"), ("rollback", "COMPLETED")]
    md = t.active_timeline().read_metadata(t.timeline[1])
    assert md.commits_rollback == [txn.instant]
    assert sorted(f for p in md.partition_metadata.values() for f in p.success_delete_files) == sorted(
        s.relpath for s in written)
    assert not any(name.startswith(txn.instant) for name in timeline_files(t.path))
    assert not (Path(t.path) / ".hoodie" / ".heartbeat" / txn.instant).exists()
    with pytest.raises(TimelineError, match=f"^cannot commit instant {txn.instant}: it is not on the timeline"):
        client.commit(txn, written)
    assert {lf.instant for g in t.file_groups() for lf in g.log_files} == {i1}


def test_bad_rows_in_a_task_write_nothing(tmp_path):
    t = fam_table(tmp_path)
    client = WriteClient(t)
    txn = client.begin("upsert")
    snap = snapshot(t.path)
    with pytest.raises(SchemaError, match="^input column 'zz' is not in the table schema"):
        txn.write_rows(pa.table({"id": [1], "zz": [2]}), task_id=0)
    with pytest.raises(SchemaError, match="^record key column 'id' has 1 null value"):
        txn.write_rows(pa.table({"id": pa.array([None], pa.int64()), "a": [1.0]}), task_id=1)
    assert snapshot(t.path) == snap  # no marker, no file
    client.abort(txn)
    assert data_files(t.path) == set() and t.read().num_rows == 0


# ------------------------------------------------------------------------------ retried attempts
def test_commit_keeps_only_the_reported_attempt_and_deletes_other_attempts(tmp_path):
    """Task 0 attempt 0 wrote its files, then was lost; attempt 1 re-ran it. Only the statuses
    handed to commit count: attempt 0's files are deleted at commit through their markers."""
    t = fam_table(tmp_path)
    client = WriteClient(t)
    txn = client.begin("upsert")
    lost = txn.write_rows(full_rows(range(8), tag=1), task_id=0, attempt=0)
    retried = txn.write_rows(full_rows(range(8), tag=2), task_id=0, attempt=1)
    other = txn.write_rows(full_rows(range(8, 12), tag=3), task_id=1, attempt=0)
    assert {token_of(s.file_name) for s in lost} == {"0-1-0"}
    assert {token_of(s.file_name) for s in retried} == {"0-1-1"}
    assert {s.relpath for s in lost} <= data_files(t.path)
    result = client.commit(txn, retried + other)
    assert result.discarded_files == sorted(s.relpath for s in lost)
    assert data_files(t.path) == {s.relpath for s in retried + other}
    assert read_sorted(t) == sorted(expected_rows(range(8), 2) + expected_rows(range(8, 12), 3), key=lambda r: r["id"])
    md = t.active_timeline().read_metadata(t.timeline[0])
    assert sorted(s.path for stats in md.partition_to_write_stats.values() for s in stats) == sorted(
        s.relpath for s in retried + other)


def test_commit_refuses_foreign_or_repeated_statuses_and_rolls_back(tmp_path):
    t = fam_table(tmp_path)
    client = WriteClient(t)
    first = client.begin("upsert")
    foreign = first.write_rows(full_rows([1]))
    client.abort(first)
    txn = client.begin("upsert")
    mine = txn.write_rows(full_rows([2]))
    with pytest.raises(CommitConflictError, match=f"belongs to instant {first.instant}, not {txn.instant}$"):
        client.commit(txn, mine + foreign)
    assert data_files(t.path) == set()
    assert [str(i.action) for i in t.timeline] == ["rollback", "rollback"]
    txn = client.begin("upsert")
    mine = txn.write_rows(full_rows([2]))
    with pytest.raises(CommitConflictError, match="is given twice$"):
        client.commit(txn, mine + mine[:1])
    assert data_files(t.path) == set()


def test_two_tasks_bulk_inserting_the_same_new_file_group_is_refused(tmp_path):
    t = fam_table(tmp_path, buckets=1)
    client = WriteClient(t)
    txn = client.begin("bulk_insert")
    s1 = txn.write_rows(full_rows([1, 2]), task_id=0)
    s2 = txn.write_rows(full_rows([3]), task_id=1)
    assert {s.kind for s in s1 + s2} == {"create"}
    with pytest.raises(CommitConflictError) as err:
        client.commit(txn, s1 + s2)
    assert str(err.value) == (  # (full rows: one full-row base file per task, the default)
        f"two tasks wrote a base file for file group {fid(0)} (full row) of partition '' in instant "
        f"{txn.instant}: {fid(0)}_0-1-0_{txn.instant}.parquet and {fid(0)}_1-1-0_{txn.instant}.parquet; "
        "give all rows of a file group to one task")
    assert data_files(t.path) == set()
    assert [str(i.action) for i in t.timeline] == ["rollback"]
    # one base file per family: the same family twice
    per_family = WriteClient(t, options={"hoodie.pyhudi.insert.full.row": "false"})
    txn = per_family.begin("bulk_insert")
    s1 = txn.write_rows(full_rows([1, 2]), task_id=0)
    s2 = txn.write_rows(full_rows([3]), task_id=1)
    with pytest.raises(CommitConflictError) as err:
        per_family.commit(txn, s1 + s2)
    assert str(err.value) == (
        f"two tasks wrote a base file for file group {fid(0)} (family 'fa') of partition '' in instant "
        f"{txn.instant}: {fid(0)}_0-1-0_{txn.instant}_fa.parquet and {fid(0)}_1-1-0_{txn.instant}_fa.parquet; "
        "give all rows of a file group to one task")
    assert data_files(t.path) == set()


def test_a_full_row_base_file_and_a_family_base_file_of_one_new_file_group_are_refused(tmp_path):
    """One task holds every family (a full-row base file), another only family fa (fa's own base
    file): committed together, fa's file would hide the first task's fa columns."""
    t = fam_table(tmp_path, buckets=1)
    client = WriteClient(t)
    txn = client.begin("bulk_insert")
    s1 = txn.write_rows(full_rows([1, 2]), task_id=0)
    s2 = txn.write_rows(full_rows([3]).select(["id", "a", "b", "ts"]), task_id=1)
    assert sorted(s.family for s in s1 + s2) == ["", "fa"]
    with pytest.raises(SplitFileGroupError) as err:
        client.commit(txn, s1 + s2)
    assert str(err.value) == (
        f"two tasks wrote a base file for file group {fid(0)} (full row and family 'fa') of partition '' in "
        f"instant {txn.instant}: {fid(0)}_0-1-0_{txn.instant}.parquet and {fid(0)}_1-1-0_{txn.instant}_fa.parquet; "
        "give all rows of a file group to one task")
    assert data_files(t.path) == set()
    assert [str(i.action) for i in t.timeline] == ["rollback"]
    assert t.read().num_rows == 0


# ------------------------------------------------------------------------------ callbacks, clients
def test_commit_from_another_client_and_on_commit_callbacks(tmp_path):
    t = fam_table(tmp_path)
    seen = []
    txn = WriteClient(t).begin("upsert")  # e.g. a driver that restarted between phases
    statuses = txn.write_rows(full_rows([1, 2]))
    result = WriteClient(t, on_commit=seen.append).commit(shipped(txn), shipped(statuses))
    assert seen == [result]
    assert not (Path(t.path) / ".hoodie" / ".heartbeat" / txn.instant).exists()
    calls = []
    instant = t.upsert(full_rows([3]), on_commit=calls.append)
    t.delete(pa.table({"id": [3]}), on_commit=calls.append)
    t.insert(full_rows([4]), on_commit=calls.append)
    t.bulk_insert(full_rows([5]), on_commit=calls.append)
    assert [(c.operation, c.rows_per_family) for c in calls] == [
        ("UPSERT", {f: 1 for f in FAMILIES}), ("DELETE", {f: 0 for f in FAMILIES}),
        ("INSERT", {f: 1 for f in FAMILIES}), ("BULK_INSERT", {f: 1 for f in FAMILIES})]
    assert calls[0].instant == instant and calls[-1] is t.last_write
    assert read_sorted(t) == expected_rows([1, 2, 4, 5])


def test_detached_txn_is_committed_by_a_new_client_and_lazy_heartbeats(tmp_path):
    lazy = {"hoodie.cleaner.policy.failed.writes": "LAZY"}
    t = pyhudi.create_table(str(tmp_path / "dt"), FAM_SCHEMA, "id", name="dt", num_buckets=2,
                            column_families=FAMILIES, options=lazy)
    client = WriteClient(t)
    txn = client.begin("upsert")
    beat = Path(t.path) / ".hoodie" / ".heartbeat" / txn.instant
    assert beat.exists()  # the lazy policy keeps heartbeats: a pending instant may be alive
    client.detach(txn)
    assert beat.exists() and txn.instant not in client._open
    statuses = txn.write_rows(full_rows([1, 2]))
    WriteClient(pyhudi.open_table(t.path)).commit(txn, statuses)
    assert not beat.exists()
    assert read_sorted(t) == expected_rows([1, 2])
    single = fam_table(tmp_path, "eager", options={"hoodie.write.concurrency.mode": "SINGLE_WRITER"})
    txn = WriteClient(single).begin("upsert")
    # every writer keeps a heartbeat, single writers too: its live instant is never rolled back
    assert (Path(single.path) / ".hoodie" / ".heartbeat" / txn.instant).exists()



def test_latest_sorted_by_integer_key_codes_matches_the_string_order():
    """One integer key field: the task sorts key codes instead of strings — same order, same
    winners (the last arrival per key), and the string path when codes cannot hold a key."""
    import numpy as np
    import pyarrow.compute as pc

    from pyhudi.write.prepare import latest_sorted

    rng = np.random.default_rng(5)
    ids = rng.integers(0, 3000, size=5000)  # many duplicates, 1 to 4 digits
    for values in (ids, np.concatenate([ids, [-7, 10**17]])):
        column = pa.array(values, pa.int64())
        rows = pa.table({"_hoodie_record_key": pc.cast(column, pa.string()), "id": column,
                         "arrival": pa.array(np.arange(len(values)))})
        by_codes = latest_sorted(rows, None, "id")
        by_strings = latest_sorted(rows, None)
        assert by_codes.tolist() == by_strings.tolist()
        keys = rows.column("_hoodie_record_key").take(pa.array(by_codes)).to_pylist()
        assert keys == sorted(set(keys)) and len(keys) == len(set(values.tolist()))


def test_latest_sorted_keeps_input_that_is_already_in_key_order():
    from pyhudi.write.prepare import latest_sorted

    keys = pa.array(["1", "10", "2", "3"])  # string order
    rows = pa.table({"_hoodie_record_key": keys, "id": pa.array([1, 10, 2, 3], pa.int64()), "ts": [1, 2, 3, 4]})
    assert latest_sorted(rows, None).tolist() == [0, 1, 2, 3]
    assert latest_sorted(rows, None, "id").tolist() == [0, 1, 2, 3]
    assert latest_sorted(rows, "ts").tolist() == [0, 1, 2, 3]
    repeated = pa.table({"_hoodie_record_key": ["1", "1", "2"], "id": pa.array([1, 1, 2], pa.int64()), "ts": [5, 4, 1]})
    assert latest_sorted(repeated, None).tolist() == [1, 2]  # a repeated key is no sorted input: last one wins
    assert latest_sorted(repeated, None, "id").tolist() == [1, 2]
    assert latest_sorted(repeated, "ts").tolist() == [0, 2]  # highest ordering value wins

"""Insert overwrite (``Table.insert_overwrite`` / ``insert_overwrite_table``): replacecommit instants,
new file groups, routing of later writes, families, rollback, time travel, incremental reads and
interop with hudi-rs (``hudi`` 0.5.0)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import CommitConflictError, ConfigError, PathEscapeError
from pyhudi.index.bucket import bucket_ids
from pyhudi.timeline.metadata import ReplaceCommitMetadata, RequestedReplaceMetadata
from pyhudi.write import handle
from pyhudi.write.client import WriteClient
from pyhudi.write.overwrite import overwrite_bucket_file_id

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("p", pa.string()), ("a", pa.float64()),
                    ("b", pa.string()), ("ts", pa.int64())])
FAMILIES = {"fa": "a;ts", "fb": "b"}
PLAIN = pa.schema([pa.field("id", pa.int64(), False), ("p", pa.string()), ("v", pa.string())])


def fixed_id(bucket: int, n: int = 0) -> str:
    return f"{bucket:08d}-0000-0000-0000-000000000000-{n}"


def bucket_of(key: int, n: int) -> int:
    return int(bucket_ids([pa.array([key], pa.int64())], n)[0])


def rows(ids, p, tag=0, columns=("a", "b", "ts")):
    ids = list(ids)
    data = {"id": pa.array(ids, pa.int64()), "p": [p] * len(ids)}
    if "a" in columns:
        data["a"] = [i + tag / 10 for i in ids]
    if "b" in columns:
        data["b"] = [f"b{i}-{tag}" for i in ids]
    if "ts" in columns:
        data["ts"] = [tag] * len(ids)
    return pa.table(data)


def family_table(tmp_path, buckets=2):
    return pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", name="t", partition_fields="p",
                               num_buckets=buckets, column_families=FAMILIES)


def read(t, **kw):
    return t.read(**kw).sort_by("id").to_pylist()


def timeline_files(t) -> set[str]:
    return set(os.listdir(Path(t.path) / ".hoodie" / "timeline")) - {"history"}


def data_files(t) -> set[str]:
    root = Path(t.path)
    return {str(f.relative_to(root)) for f in root.rglob("*") if f.is_file() and not str(f.relative_to(root)).startswith(".hoodie")
            and f.name != ".hoodie_partition_metadata"}


def row(i, p, a=None, b=None, ts=None):
    return {"id": i, "p": p, "a": a, "b": b, "ts": ts}


# ============================================================ replacecommit on a family table
def test_insert_overwrite_replaces_partitions_of_the_input(tmp_path):
    t = family_table(tmp_path)
    i1 = t.upsert(pa.concat_tables([rows(range(1, 5), "x"), rows(range(5, 9), "y")]))
    before_y = {f for f in data_files(t) if f.startswith("y/")}
    new = pa.table({"id": pa.array([1, 10], pa.int64()), "p": ["x", "x"], "a": [100.0, 110.0], "ts": [7, 7]})
    i2 = t.insert_overwrite(new)
    assert i2 > i1
    # x holds only the new rows; family fb was not in the input: b reads null; y is untouched
    assert read(t) == [row(1, "x", 100.0, None, 7)] + [row(i, "y", float(i), f"b{i}-0", 0) for i in range(5, 9)] + [
        row(10, "x", 110.0, None, 7)]
    # timeline: requested (HoodieRequestedReplaceMetadata), inflight, completed replacecommit
    inst = t.timeline[-1]
    assert (str(inst.action), str(inst.state)) == ("replacecommit", "COMPLETED")
    assert {f"{i2}.replacecommit.requested", f"{i2}.replacecommit.inflight",
            f"{i2}_{inst.completion_time}.replacecommit"} <= timeline_files(t)
    tl = t.active_timeline()
    requested = tl.read_metadata(inst.as_requested())
    assert isinstance(requested, RequestedReplaceMetadata)
    assert (requested.operation_type, requested.clustering_plan) == ("INSERT_OVERWRITE", None)
    md = tl.read_metadata(inst)
    assert isinstance(md, ReplaceCommitMetadata) and md.operation_type == "INSERT_OVERWRITE"
    old_x = sorted({fixed_id(bucket_of(i, 2)) for i in range(1, 5)})
    assert md.partition_to_replace_file_ids == {"x": old_x}
    # new file groups: bucket-prefixed ids of this instant, one base file of family fa each
    new_ids = {b: overwrite_bucket_file_id(i2, "x", b) for b in {bucket_of(1, 2), bucket_of(10, 2)}}
    for fid in new_ids.values():
        assert fid[:8].isdigit() and fid != fixed_id(int(fid[:8])) and fid.endswith("-0")
    expected_files = {f"x/{fid}_{task}-1-0_{i2}_fa.parquet" for task, (_, fid) in enumerate(sorted(new_ids.items()))}
    assert sorted(s.path for s in md.write_stats()) == sorted(expected_files)
    assert {s.file_id for s in md.write_stats()} == set(new_ids.values())
    assert sum(s.num_inserts for s in md.write_stats()) == 2
    assert [f["name"] for f in json.loads(md.schema)["fields"]] == SCHEMA.names  # the table schema
    # replaced files stay on storage (the cleaner deletes them), hidden from readers
    assert {f for f in data_files(t) if f.startswith("y/")} == before_y
    assert {g.file_id for g in t.file_groups() if g.partition_path == "x"} == set(new_ids.values())
    assert any(f"x/.{fixed_id(bucket_of(1, 2))}_{i1}.log.1_" in f for f in data_files(t))  # (i1's full-row log)


def test_later_upserts_and_deletes_route_to_the_new_file_groups(tmp_path):
    t = family_table(tmp_path, buckets=4)
    keys = list(range(1, 13))
    t.upsert(rows(keys, "x"))
    kept = [k for k in keys if bucket_of(k, 4) == bucket_of(1, 4)]
    other = next(k for k in keys if bucket_of(k, 4) != bucket_of(1, 4))
    i2 = t.insert_overwrite(rows(kept, "x", tag=5))
    new_fid = overwrite_bucket_file_id(i2, "x", bucket_of(1, 4))
    # an upsert to an overwritten bucket goes to its new file group; a bucket the overwrite did not
    # write gets the fixed id with the next suffix (the -0 group is replaced)
    i3 = t.upsert(pa.table({"id": pa.array([1, other], pa.int64()), "p": ["x", "x"], "b": ["B1", "Bo"]}))
    stats = {(s.file_id, s.path) for s in t.active_timeline().read_metadata(t.timeline[-1]).write_stats()}
    assert stats == {
        (new_fid, f"x/.{new_fid}_{i3}_fb.log.1_0-1-0"),
        (fixed_id(bucket_of(other, 4), 1), f"x/.{fixed_id(bucket_of(other, 4), 1)}_{i3}_fb.log.1_1-1-0"),
    }
    expected = {k: row(k, "x", k + 0.5, f"b{k}-5", 5) for k in kept}
    expected[1]["b"] = "B1"
    expected[other] = row(other, "x", None, "Bo", None)
    assert read(t) == [expected[k] for k in sorted(expected)]
    t.delete(pa.table({"id": pa.array([1], pa.int64()), "p": ["x"]}))
    assert [r["id"] for r in read(t)] == sorted(k for k in expected if k != 1)
    assert {g.file_id for g in t.file_groups()} == {new_fid, fixed_id(bucket_of(other, 4), 1)}


def test_insert_overwrite_table_replaces_every_file_group_and_empty_input_empties(tmp_path):
    t = family_table(tmp_path)
    t.upsert(pa.concat_tables([rows([1, 2, 3], "x"), rows([4, 5], "y")]))
    old = {(g.partition_path, g.file_id) for g in t.file_groups()}
    i2 = t.insert_overwrite_table(rows([7], "z", tag=3, columns=("b",)))
    assert read(t) == [row(7, "z", None, "b7-3", None)]
    md = t.active_timeline().read_metadata(t.timeline[-1])
    assert md.operation_type == "INSERT_OVERWRITE_TABLE"
    assert {(p, f) for p, ids in md.partition_to_replace_file_ids.items() for f in ids} == old
    assert [s.path for s in md.write_stats()] == [f"z/{overwrite_bucket_file_id(i2, 'z', bucket_of(7, 2))}_0-1-0_{i2}_fb.parquet"]
    i3 = t.insert_overwrite_table(pa.table({"id": pa.array([], pa.int64()), "p": pa.array([], pa.string()),
                                            "a": pa.array([], pa.float64())}))
    assert t.read().num_rows == 0
    md = t.active_timeline().read_metadata(t.timeline[-1])
    assert md.partition_to_replace_file_ids == {"z": [overwrite_bucket_file_id(i2, "z", bucket_of(7, 2))]}
    assert list(md.write_stats()) == []
    assert t.insert_overwrite_table() > i3  # None = empty
    assert t.read().num_rows == 0 and t.file_groups() == []
    t.upsert(rows([1], "x"))
    assert read(t) == [row(1, "x", 1.0, "b1-0", 0)]


def test_static_partitions_are_replaced_without_rows(tmp_path):
    t = family_table(tmp_path)
    t.upsert(pa.concat_tables([rows([1, 2], "x"), rows([3], "y"), rows([4], "w")]))
    t.insert_overwrite(rows([9], "x", tag=1), partitions=["y", {"p": "w"}])
    assert read(t) == [row(9, "x", 9.1, "b9-1", 1)]
    t.insert_overwrite(None, partitions=["x"])
    assert t.read().num_rows == 0
    snapshot = (timeline_files(t), data_files(t))
    with pytest.raises(ConfigError, match="mapping of every partition field"):
        t.insert_overwrite(rows([1], "x"), partitions=[{"q": "x"}])
    with pytest.raises(PathEscapeError, match="cannot be used"):
        t.insert_overwrite(rows([1], "x"), partitions=["../etc"])
    assert (timeline_files(t), data_files(t)) == snapshot


def test_unpartitioned_table_refuses_partitions(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "u"), PLAIN, "id", num_buckets=2)
    t.upsert(pa.table({"id": pa.array([1], pa.int64()), "p": ["a"], "v": ["1"]}))
    with pytest.raises(ConfigError, match="is not partitioned"):
        t.insert_overwrite(None, partitions=["a"])
    t.insert_overwrite(pa.table({"id": pa.array([2], pa.int64()), "p": ["b"], "v": ["2"]}))
    assert read(t) == [{"id": 2, "p": "b", "v": "2"}]


# ============================================================ time travel, incremental
def test_time_travel_and_incremental_across_an_overwrite(tmp_path):
    t = family_table(tmp_path)
    i1 = t.upsert(rows([1, 2], "x"))
    i2 = t.upsert(rows([3], "y"))
    done2 = t.timeline[-1].completion_time
    i3 = t.insert_overwrite(rows([5], "x", tag=9))
    assert read(t, as_of=done2) == [row(1, "x", 1.0, "b1-0", 0), row(2, "x", 2.0, "b2-0", 0), row(3, "y", 3.0, "b3-0", 0)]
    assert read(t) == [row(3, "y", 3.0, "b3-0", 0), row(5, "x", 5.9, "b5-9", 9)]
    # incremental after i2: the overwrite's rows (commit time i3); the replaced rows are gone
    inc = t.read_incremental(done2, with_meta=True).to_pylist()
    assert [(r["id"], r["_hoodie_commit_time"]) for r in inc] == [(5, i3)]
    # a window that ends before the overwrite still returns the rows of that window
    first_done = t.timeline[0].completion_time
    inc = t.read_incremental(first_done, end=done2, with_meta=True).to_pylist()
    assert [(r["id"], r["_hoodie_commit_time"]) for r in inc] == [(3, i2)]
    assert i1 < i2 < i3


# ============================================================ failures, rollback, conflicts
def test_failed_overwrite_is_rolled_back_and_old_rows_stay(tmp_path, monkeypatch):
    t = family_table(tmp_path)
    t.upsert(rows([1, 2, 3], "x"))
    before, expected = data_files(t), read(t)
    original = handle.FileGroupWriteTask.run
    calls = []
    lock = threading.Lock()

    def failing(self):
        out = original(self)
        with lock:
            calls.append(self.file_id)
            if len(calls) == 1:
                raise RuntimeError("disk on fire")
        return out

    monkeypatch.setattr(handle.FileGroupWriteTask, "run", failing)
    with pytest.raises(RuntimeError, match="^disk on fire$"):
        t.insert_overwrite(rows([1, 2, 3], "x", tag=4))
    monkeypatch.setattr(handle.FileGroupWriteTask, "run", original)
    assert data_files(t) == before and read(t) == expected
    actions = [(str(i.action), str(i.state)) for i in t.timeline]
    assert actions == [("deltacommit", "COMPLETED"), ("rollback", "COMPLETED")]
    md = t.active_timeline().read_metadata(t.timeline[1])
    assert [(i.action) for i in md.instants_rollback] == ["replacecommit"]
    assert md.total_files_deleted >= 1


def test_pending_overwrite_is_invisible_and_rolled_back_by_the_next_writer(tmp_path):
    t = family_table(tmp_path)
    t.upsert(rows([1, 2], "x"))
    expected = read(t)
    client = WriteClient(t)
    txn = client.begin("insert_overwrite")
    statuses = txn.write_rows(rows([8], "x", tag=2))  # a writer killed here: never committed
    client.detach(txn)
    # one full-row base file in the new file group (the default), not one base file per family
    assert [(s.file_id, s.family) for s in statuses] == [(overwrite_bucket_file_id(txn.instant, "x", bucket_of(8, 2)),
                                                          "")]
    assert {f"{txn.instant}.replacecommit.requested", f"{txn.instant}.replacecommit.inflight"} <= timeline_files(t)
    assert read(t) == expected  # the new files are invisible, the old groups are not replaced
    (Path(t.path) / ".hoodie" / ".heartbeat" / txn.instant).unlink()  # its writer is gone
    t.upsert(rows([3], "x"))  # the pending replacecommit of a gone writer is rolled back first
    assert t.last_write.rolled_back == [txn.instant]
    assert not any(txn.instant in f for f in data_files(t))
    assert not any(f.startswith(txn.instant) for f in timeline_files(t))
    assert [r["id"] for r in read(t)] == [1, 2, 3]


def test_overwrite_conflicts_with_a_file_group_created_meanwhile(tmp_path):
    t = family_table(tmp_path, buckets=4)
    t.upsert(rows([1], "x"))
    other = next(k for k in range(2, 50) if bucket_of(k, 4) != bucket_of(1, 4))
    client = WriteClient(t)
    txn = client.begin("insert_overwrite")
    statuses = txn.write_rows(rows([1], "x", tag=3))
    # another writer (not rolling back pending writes) creates a new file group in partition x
    t.upsert(rows([other], "x"), options={"hoodie.cleaner.policy.failed.writes": "NEVER"})
    expected = read(t)
    with pytest.raises(CommitConflictError, match=f"file group {fixed_id(bucket_of(other, 4))} of partition 'x' was created"):
        client.commit(txn, statuses)
    assert read(t) == expected
    assert not any(f.startswith(txn.instant) and "rollback" not in f for f in timeline_files(t))
    assert not any(txn.instant in f for f in data_files(t))


def test_write_into_a_file_group_replaced_meanwhile_is_refused(tmp_path):
    t = family_table(tmp_path)
    t.upsert(rows([1, 2], "x"))
    client = WriteClient(t, options={"hoodie.cleaner.policy.failed.writes": "NEVER"})
    txn = client.begin("upsert")
    statuses = txn.write_rows(rows([1], "x", tag=7))  # a log file for the fixed-id group of key 1
    t.insert_overwrite(rows([3], "x", tag=8), options={"hoodie.cleaner.policy.failed.writes": "NEVER"})
    expected = read(t)
    overwrite = t.timeline[-1].requested_time
    with pytest.raises(CommitConflictError, match=f"write {txn.instant} conflicts with replacecommit {overwrite} "
                                                  f"\\(INSERT_OVERWRITE\\), which replaced file group "
                                                  f"{fixed_id(bucket_of(1, 2))} of partition 'x'"):
        client.commit(txn, statuses)
    assert read(t) == expected == [row(3, "x", 3.8, "b3-8", 8)]
    assert not any(txn.instant in f for f in data_files(t))


# ============================================================ tables without a bucket index
@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_simple_index_ignores_replaced_file_groups(tmp_path, table_type):
    t = pyhudi.create_table(str(tmp_path / "s"), PLAIN, "id", partition_fields="p", table_type=table_type)
    t.upsert(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": ["x", "x", "y"], "v": ["a", "b", "c"]}))
    old = {g.file_id for g in t.file_groups() if g.partition_path == "x"}
    i2 = t.insert_overwrite(pa.table({"id": pa.array([1, 4], pa.int64()), "p": ["x", "x"], "v": ["A", "D"]}))
    md = t.active_timeline().read_metadata(t.timeline[-1])
    assert md.partition_to_replace_file_ids == {"x": sorted(old)}
    (new,) = {g.file_id for g in t.file_groups() if g.partition_path == "x"}
    assert new not in old and [s.path for s in md.write_stats()] == [f"x/{new}_0-1-0_{i2}.parquet"]
    # the upsert finds key 1 in the new file group (never in the replaced one): no duplicate
    t.upsert(pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["x", "x"], "v": ["AA", "BB"]}))
    assert read(t) == [{"id": 1, "p": "x", "v": "AA"}, {"id": 2, "p": "x", "v": "BB"},
                       {"id": 3, "p": "y", "v": "c"}, {"id": 4, "p": "x", "v": "D"}]
    upsert_md = t.active_timeline().read_metadata(t.timeline[-1])
    assert new in {s.file_id for s in upsert_md.write_stats()} and not old & {s.file_id for s in upsert_md.write_stats()}
    assert hudi_rows(t.path) == read(t)


# ============================================================ hudi-rs reads overwritten tables
def hudi_rows(path) -> list[dict]:
    import hudi  # hudi-rs 0.5.0, the independent reader (a test dependency)

    batches = hudi.HudiTableBuilder.from_base_uri(str(path)).build().read()
    if not batches:
        return []
    table = pa.Table.from_batches(batches)
    return table.select([c for c in table.column_names if not c.startswith("_hoodie_")]).sort_by("id").to_pylist()


def test_one_family_overwritten_table_read_by_hudi_rs(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "h"), PLAIN, "id", name="h", partition_fields="p", num_buckets=2)
    t.upsert(pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "p": ["x", "x", "y", "y"], "v": list("abcd")}))
    t.insert_overwrite(pa.table({"id": pa.array([1, 5], pa.int64()), "p": ["x", "x"], "v": ["A", "E"]}))
    t.upsert(pa.table({"id": pa.array([5, 3], pa.int64()), "p": ["x", "y"], "v": ["EE", "CC"]}))
    expected = [{"id": 1, "p": "x", "v": "A"}, {"id": 3, "p": "y", "v": "CC"}, {"id": 4, "p": "y", "v": "d"},
                {"id": 5, "p": "x", "v": "EE"}]
    assert read(t) == expected
    assert hudi_rows(t.path) == expected
    t.insert_overwrite_table(pa.table({"id": pa.array([9], pa.int64()), "p": ["z"], "v": ["Z"]}))
    assert hudi_rows(t.path) == read(t) == [{"id": 9, "p": "z", "v": "Z"}]


# ============================================================ review: races with writers planned on a stale view
def test_write_planned_before_an_overwrite_completed_is_refused(tmp_path, monkeypatch):
    """An overwrite that completes after an upsert listed the timeline but before it took its
    instant time (so the overwrite's completion time is lower than the upsert's instant) must not
    let the upsert commit into the replaced file group (its row would silently vanish)."""
    from pyhudi.write import client as client_module

    t = pyhudi.create_table(str(tmp_path / "r"), PLAIN, "id", partition_fields="p", num_buckets=1)
    t.upsert(pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["x", "x"], "v": ["a", "b"]}))
    original = client_module.rollback_failed_writes
    armed = [True]

    def overwrite_meanwhile(*args, **kwargs):  # runs after the upsert listed its timeline
        if armed[0]:
            armed[0] = False
            t.insert_overwrite(pa.table({"id": pa.array([3], pa.int64()), "p": ["x"], "v": ["c"]}))
        return original(*args, **kwargs)

    monkeypatch.setattr(client_module, "rollback_failed_writes", overwrite_meanwhile)
    with pytest.raises(CommitConflictError, match=f"which replaced file group {fixed_id(0)} of partition 'x'"):
        t.upsert(pa.table({"id": pa.array([4], pa.int64()), "p": ["x"], "v": ["d"]}))
    overwrite = t.timeline[1]
    assert (str(overwrite.action), str(overwrite.state)) == ("replacecommit", "COMPLETED")
    assert [str(i.action) for i in t.timeline] == ["deltacommit", "replacecommit", "rollback"]
    assert read(t) == [{"id": 3, "p": "x", "v": "c"}]
    t.upsert(pa.table({"id": pa.array([4], pa.int64()), "p": ["x"], "v": ["d"]}))  # the retry lands
    assert read(t) == [{"id": 3, "p": "x", "v": "c"}, {"id": 4, "p": "x", "v": "d"}]


def test_new_bucket_file_group_racing_an_overwrite_of_that_bucket_is_refused(tmp_path):
    """An upsert that creates bucket b's file group while an overwrite writes a new file group
    for the same bucket would leave two file groups for one bucket (the key twice)."""
    t = pyhudi.create_table(str(tmp_path / "c"), PLAIN, "id", partition_fields="p", num_buckets=1)
    t.upsert(pa.table({"id": pa.array([1], pa.int64()), "p": ["y"], "v": ["a"]}))
    never = {"hoodie.cleaner.policy.failed.writes": "NEVER"}
    client = WriteClient(t, options=never)
    txn = client.begin("upsert")
    statuses = txn.write_rows(pa.table({"id": pa.array([5], pa.int64()), "p": ["x"], "v": ["A"]}))
    assert [s.file_id for s in statuses] == [fixed_id(0)]
    i2 = t.insert_overwrite(pa.table({"id": pa.array([5], pa.int64()), "p": ["x"], "v": ["O"]}), options=never)
    expected = read(t)
    with pytest.raises(CommitConflictError, match=(
            f"write {txn.instant} conflicts with replacecommit {i2} \\(INSERT_OVERWRITE\\), which wrote file group "
            f"{overwrite_bucket_file_id(i2, 'x', 0)} for bucket 0 of partition 'x'")):
        client.commit(txn, statuses)
    assert read(t) == expected == [{"id": 1, "p": "y", "v": "a"}, {"id": 5, "p": "x", "v": "O"}]
    assert {(g.partition_path, g.file_id) for g in t.file_groups()} == {
        ("y", fixed_id(0)), ("x", overwrite_bucket_file_id(i2, "x", 0))}
    assert not any(txn.instant in f for f in data_files(t))


def test_partition_paths_of_a_hive_style_table_must_name_the_fields(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "hv"), PLAIN, "id", partition_fields="p",
                            options={"hoodie.datasource.write.hive_style_partitioning": "true"})
    t.upsert(pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["x", "y"], "v": ["a", "b"]}))
    snapshot = (timeline_files(t), data_files(t))
    # "x" is not a partition path of this table ("p=x" is): refused, not silently a no-op
    with pytest.raises(ConfigError, match="partition path 'x' does not match the table's hive-style partitioning: "
                                          "expected p=<value>"):
        t.insert_overwrite(None, partitions=["x"])
    with pytest.raises(ConfigError, match="partition path 'q=x' does not match"):
        t.insert_overwrite(None, partitions=["q=x"])
    assert (timeline_files(t), data_files(t)) == snapshot
    t.insert_overwrite(None, partitions=["p=x"])
    assert read(t) == [{"id": 2, "p": "y", "v": "b"}]
    t.insert_overwrite(None, partitions=[{"p": "y"}])
    assert t.read().num_rows == 0


def test_partition_mappings_are_spelled_as_the_rows_partition_paths(tmp_path):
    """``{field: value}`` of a non-string partition column names the folder the table's rows
    went to (``true``, Arrow's timestamp text), not Python's ``str`` of the value."""
    import datetime

    schema = pa.schema([pa.field("id", pa.int64(), False), ("f", pa.bool_()), ("ts", pa.timestamp("us")),
                        ("v", pa.string())])
    t = pyhudi.create_table(str(tmp_path / "typed"), schema, "id", partition_fields=["f", "ts"])
    day1, day2 = datetime.datetime(2024, 1, 1), datetime.datetime(2024, 1, 2)
    t.upsert(pa.table({"id": pa.array([1, 2], pa.int64()), "f": [True, False],
                       "ts": pa.array([day1, day2], pa.timestamp("us")), "v": ["a", "b"]}))
    groups = {g.partition_path: g.file_id for g in t.file_groups()}
    assert sorted(groups) == ["false/2024-01-02 00:00:00.000000", "true/2024-01-01 00:00:00.000000"]
    t.insert_overwrite(None, partitions=[{"f": True, "ts": day1}])
    md = t.active_timeline().read_metadata(t.timeline[-1])
    assert md.partition_to_replace_file_ids == {"true/2024-01-01 00:00:00.000000": [groups["true/2024-01-01 00:00:00.000000"]]}
    assert t.read().to_pylist() == [{"id": 2, "f": False, "ts": day2, "v": "b"}]
    with pytest.raises(ConfigError, match="partition value 'soon' of field 'ts' is not a timestamp"):
        t.insert_overwrite(None, partitions=[{"f": False, "ts": "soon"}])


def test_bad_overwrite_partitions_option_is_refused_before_any_file_is_written(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "o"), PLAIN, "id", partition_fields="p")
    t.upsert(pa.table({"id": pa.array([1], pa.int64()), "p": ["x"], "v": ["a"]}))
    before, expected = data_files(t), read(t)
    key = "hoodie.pyhudi.overwrite.partitions"
    for value, error, message in [
            ('["../evil"]', PathEscapeError, "partition path '../evil' built from columns p cannot be used"),
            ('["x/y"]', PathEscapeError, "partition path 'x/y' built from columns p cannot be used"),
            ('[1]', ConfigError, "must be a JSON list of partition paths, got '\\[1\\]'")]:
        with pytest.raises(error, match=message):
            t.insert_overwrite(pa.table({"id": pa.array([2], pa.int64()), "p": ["x"], "v": ["b"]}),
                               options={key: value})
        assert data_files(t) == before and read(t) == expected
    u = pyhudi.create_table(str(tmp_path / "u"), PLAIN, "id")
    with pytest.raises(ConfigError, match=f"{key}: the table is not partitioned"):
        u.insert_overwrite(None, options={key: '["x"]'})


def test_partitions_must_be_a_collection_not_one_path_or_mapping(tmp_path):
    """A bare string would be iterated character by character (``"x1"`` → partitions ``x`` and
    ``1``), a bare mapping by its keys: both must be refused, never replace other partitions."""
    t = pyhudi.create_table(str(tmp_path / "one"), PLAIN, "id", partition_fields="p")
    t.upsert(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": ["x", "1", "p"], "v": ["a", "b", "c"]}))
    expected, snapshot = read(t), (timeline_files(t), data_files(t))
    with pytest.raises(ConfigError, match="partitions must be a list of partition paths or mappings, got 'x1'"):
        t.insert_overwrite(None, partitions="x1")
    with pytest.raises(ConfigError, match="partitions must be a list of partition paths or mappings, got \\{'p': 'x'\\}"):
        t.insert_overwrite(None, partitions={"p": "x"})
    assert read(t) == expected and (timeline_files(t), data_files(t)) == snapshot
    t.insert_overwrite(None, partitions=("x1",))  # a tuple of one path: partition "x1" (absent) only
    assert read(t) == expected


def test_a_bucket_keeps_the_group_an_overwrite_wrote_after_a_clean_removed_its_files(tmp_path):
    """An insert overwrite writes a new file group for bucket 0; once the family it held is
    dropped and a clean has removed its files, a later write to bucket 0 still goes to that group
    (not to the bucket's first id, which two groups of one bucket would then claim) and commits."""
    schema = pa.schema([pa.field("id", pa.string(), nullable=False), ("a", pa.int64()), ("c", pa.string())])
    t = pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=1, column_families={"f1": "a", "f2": "c"})
    t.insert_overwrite(pa.table({"id": ["k0"], "a": pa.array([0], pa.int64())}))
    (group,) = [g.file_id for g in t.file_groups()]
    assert not group.startswith("00000000-0000-")
    t.alter(unset_properties=["hoodie.colFamily.f1"])
    assert t.clean(options={"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
                            "hoodie.cleaner.fileversions.retained": 1}) is not None
    assert t.file_groups() == [] and t.read().to_pylist() == []
    t.bulk_insert(pa.table({"id": ["k0", "k2"], "c": ["x", "y"]}))
    assert [g.file_id for g in t.file_groups()] == [group]
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [{"id": "k0", "c": "x"}, {"id": "k2", "c": "y"}]

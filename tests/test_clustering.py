"""Clustering (issue 14, RFC-19): plan, execute, replacecommit, and writers during a pending clustering.

Default options unless a test is about an option; exact rows, file names, timeline states, plan
fields (as Hudi spells them) and error messages.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.errors import ClusteringConflictError, ConcurrentWriteError, ConfigError, TimelineError
from pyhudi.services.clustering import COLUMN_RANGES_KEY, column_ranges

PY = sys.executable
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("p", pa.string()), ("x", pa.int64()), ("s", pa.string())])
NO_SMALL_FILES = {"hoodie.parquet.small.file.limit": "0"}  # every insert opens a file group
EXECUTION = "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"


def batch(first: int, n: int, partition: str) -> pa.Table:
    ids = list(range(first, first + n))
    return pa.table({"id": ids, "p": [partition] * n, "x": [(i * 37) % 101 for i in ids],
                     "s": [f"s{i}" for i in ids]})


def seeded(tmp_path, table_type="COPY_ON_WRITE", name="t", inserts=3):
    t = pyhudi.create_table(str(tmp_path / name), SCHEMA, "id", partition_fields="p", table_type=table_type)
    for k in range(inserts):
        for partition in ("a", "b"):
            t.insert(batch(k * 100 + (0 if partition == "a" else 50), 5, partition), options=NO_SMALL_FILES)
    return t


def rows(t, **kw):
    return t.read(**kw).sort_by("id").to_pylist()


def without_file_name(records):
    return [{k: v for k, v in r.items() if k != "_hoodie_file_name"} for r in records]


def group_ids(t, **kw):
    return sorted((g.partition_path, g.file_id) for g in t.file_groups(**kw))


def data_files(t) -> list[str]:
    root = Path(t.path)
    return sorted(p.name for p in root.rglob("*.parquet") if ".hoodie" not in p.relative_to(root).parts)


def timeline_files(t) -> list[str]:
    return sorted(os.listdir(Path(t.path) / ".hoodie" / "timeline"))


# ------------------------------------------------------------------------------ plan
def test_the_plan_is_hudis_requested_replace_metadata_with_a_clustering_plan(tmp_path):
    t = seeded(tmp_path)
    groups = group_ids(t)
    instant = t.schedule_clustering(sort_columns=["x"])
    assert f"{instant}.clustering.requested" in timeline_files(t)
    with open(Path(t.path) / ".hoodie" / "timeline" / f"{instant}.clustering.requested", "rb") as f:
        reader = fastavro.reader(f)
        assert reader.writer_schema["name"] == "org.apache.hudi.avro.model.HoodieRequestedReplaceMetadata"
        (record,) = list(reader)
    assert record["operationType"] == "CLUSTER"
    plan = record["clusteringPlan"]
    assert plan["preserveHoodieMetadata"] is True
    assert plan["strategy"]["strategyClassName"] == EXECUTION
    assert plan["strategy"]["strategyParams"] == {"hoodie.clustering.plan.strategy.sort.columns": "x"}
    assert [g["numOutputFileGroups"] for g in plan["inputGroups"]] == [1, 1]  # one group per partition
    slices = [s for g in plan["inputGroups"] for s in g["slices"]]
    assert sorted((s["partitionPath"], s["fileId"]) for s in slices) == groups
    for s in slices:
        assert s["dataFilePath"] == t.storage.uri(f"{s['partitionPath']}/{s['dataFilePath'].rsplit('/', 1)[-1]}")
        assert s["deltaFilePaths"] == [] and s["bootstrapFilePath"] == ""
    assert set(plan["inputGroups"][0]["metrics"]) == {"TOTAL_IO_READ_MB", "TOTAL_IO_WRITE_MB", "TOTAL_IO_MB",
                                                      "TOTAL_LOG_FILES_SIZE", "TOTAL_LOG_FILES"}
    assert t.plan_clustering() == []  # every group is held by the pending plan now


def test_nothing_eligible_writes_no_plan_and_bad_requests_change_nothing(tmp_path):
    t = seeded(tmp_path)
    before = timeline_files(t)
    assert t.schedule_clustering(options={"hoodie.clustering.plan.strategy.small.file.limit": "1"}) is None
    with pytest.raises(ConfigError, match="unknown sort column 'nope' for clustering"):
        t.schedule_clustering(sort_columns="x,nope")
    with pytest.raises(ConfigError, match="unknown clustering execution strategy 'com.example.Mine'.*never loaded"):
        t.schedule_clustering(options={"hoodie.clustering.execution.strategy.class": "com.example.Mine"})
    assert timeline_files(t) == before


def test_merge_on_read_groups_with_log_files_are_left_out_unless_included(tmp_path):
    t = seeded(tmp_path, "MERGE_ON_READ")
    t.upsert(pa.table({"id": [0], "p": ["a"], "x": [500], "s": ["u"]}))  # a log file in one group of 'a'
    with_logs = [g for g in t.file_groups() if g.log_files]
    assert len(with_logs) == 1
    planned = {r["file_id"] for r in t.plan_clustering()}
    assert with_logs[0].file_id not in planned and len(planned) == 5
    included = t.plan_clustering(options={"hoodie.pyhudi.clustering.plan.include.log.files": "true"})
    assert with_logs[0].file_id in {r["file_id"] for r in included}
    [row] = [r for r in included if r["file_id"] == with_logs[0].file_id]
    assert row["log_files"] == [with_logs[0].log_files[0].name.name]
    expected = rows(t)
    t.cluster(options={"hoodie.pyhudi.clustering.plan.include.log.files": "true"})
    assert rows(t) == expected and [r for r in expected if r["id"] == 0] == [
        {"id": 0, "p": "a", "x": 500, "s": "u"}]
    assert len(t.file_groups()) == 2


@pytest.mark.parametrize("families", [None, {"fa": "x", "fb": "s"}])
def test_bucketed_tables_are_refused_naming_rfc80s_constraint(tmp_path, families):
    t = pyhudi.create_table(str(tmp_path / "b"), SCHEMA, "id", partition_fields="p", num_buckets=2,
                            column_families=families)
    t.upsert(batch(0, 5, "a"))
    before = timeline_files(t)
    kind = r"with column families \(fa, fb\)" if families else "without column families"
    for call in (t.schedule_clustering, t.cluster):
        with pytest.raises(ConfigError, match=rf"clustering is refused on table 'b': it uses the bucket index \(2 "
                                              rf"buckets, {kind}\), and RFC-80 fixes the file group of every record key"):
            call()
    assert timeline_files(t) == before


# ------------------------------------------------------------------------------ execute
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_clustering_rewrites_small_files_sorted_keeping_every_row_and_meta_value(tmp_path, table_type):
    t = seeded(tmp_path, table_type)
    before_meta = without_file_name(rows(t, with_meta=True))
    old_groups = group_ids(t)
    last_write = t.timeline[-1].requested_time
    instant = t.cluster(sort_columns="x")
    assert without_file_name(rows(t, with_meta=True)) == before_meta  # commit times, seqnos, keys kept
    [done] = [i for i in t.timeline if i.requested_time == instant]
    assert (str(done.action), str(done.state)) == ("replacecommit", "COMPLETED")
    assert f"{instant}_{done.completion_time}.replacecommit" in timeline_files(t)
    new_groups = group_ids(t)
    assert len(new_groups) == 2 and not set(new_groups) & set(old_groups)
    metadata = t.active_timeline().read_metadata(t.active_timeline().get(instant))
    assert metadata.operation_type == "CLUSTER"
    assert metadata.replaced_file_groups() == set(old_groups)
    assert "schema" in metadata.extra_metadata and COLUMN_RANGES_KEY in metadata.extra_metadata
    ranges = column_ranges(metadata)
    for group in t.file_groups():
        (base,) = group.base_files
        assert base.name.instant == instant
        data = pq.read_table(Path(t.path) / base.relpath)
        xs = data.column("x").to_pylist()
        assert xs == sorted(xs)  # ordered by the sort column
        assert set(data.column("_hoodie_file_name").to_pylist()) == {base.name.name}
        assert ranges[base.name.name] == {"x": (min(xs), max(xs))}
    # data skipping reads the ranges the replacecommit recorded, not the footers, and skips files
    low_x = min(low for low, _ in (columns["x"] for columns in ranges.values()))
    plan = t.plan_scan(None, [("x", "=", low_x)])
    assert plan.metrics["ranges_from_commit_metadata"] == 2 and plan.metrics["footers_read"] == 0
    assert plan.metrics["file_groups_skipped"] >= 1
    assert plan.to_table().sort_by("id").to_pylist() == [r for r in rows(t) if r["x"] == low_x]
    stats = {s.path: s for s in metadata.write_stats()}
    assert sorted(stats) == sorted(g.base_files[0].relpath for g in t.file_groups())
    assert all(s.prev_commit == "null" and s.num_inserts == s.num_writes for s in stats.values())
    # time travel before the replacecommit sees the old groups and the same rows
    assert group_ids(t, as_of=last_write) == old_groups
    assert without_file_name(rows(t, with_meta=True, as_of=last_write)) == before_meta
    # an incremental query does not report clustered rows as changed
    assert t.read_incremental(last_write).num_rows == 0
    # later writes land in the new groups and read right (MOR: logs over a file not in key order)
    t.upsert(pa.table({"id": [1, 102, 999], "p": ["a", "a", "b"], "x": [7, 8, 9], "s": ["u1", "u2", "n"]}))
    t.delete(pa.table({"id": [3], "p": ["a"]}))
    expected = {r["id"]: r for r in (without_meta(r) for r in before_meta)}
    expected.update({1: {"id": 1, "p": "a", "x": 7, "s": "u1"}, 102: {"id": 102, "p": "a", "x": 8, "s": "u2"},
                     999: {"id": 999, "p": "b", "x": 9, "s": "n"}})
    del expected[3]
    assert rows(t) == [expected[k] for k in sorted(expected)]


def without_meta(record):
    return {k: v for k, v in record.items() if not k.startswith("_hoodie")}


def test_without_sort_columns_files_keep_record_key_order_and_declare_it(tmp_path):
    t = seeded(tmp_path, "MERGE_ON_READ")
    expected = rows(t)
    t.cluster()
    for group in t.file_groups():
        path = Path(t.path) / group.base_files[0].relpath
        keys = pq.read_table(path).column("_hoodie_record_key").to_pylist()
        assert keys == sorted(keys)
        declared = pq.ParquetFile(path).metadata.row_group(0).sorting_columns
        assert [c.column_index for c in declared] == [2]  # _hoodie_record_key
    t.upsert(pa.table({"id": [2], "p": ["a"], "x": [0], "s": ["z"]}))
    assert rows(t) == [dict(r, x=0, s="z") if r["id"] == 2 else r for r in expected]


def test_output_files_are_split_to_the_target_size(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "big"), SCHEMA, "id", partition_fields="p")
    for k in range(6):
        t.insert(batch(k * 1000, 1000, "a"), options=NO_SMALL_FILES)
    sizes = [g.base_files[0].size for g in t.file_groups()]
    target = int(sum(sizes) / 2.5)
    expected = rows(t)
    instant = t.cluster(sort_columns=["x", "s"], options={
        "hoodie.clustering.plan.strategy.target.file.max.bytes": str(target)})
    outputs = t.file_groups()
    assert len(outputs) == 3  # ceil(total / target)
    assert rows(t) == expected
    written = [pq.read_table(Path(t.path) / g.base_files[0].relpath) for g in outputs]
    assert sorted(w.num_rows for w in written) == [2000, 2000, 2000]
    assert all(g.base_files[0].size <= target for g in outputs)
    # together the files are one ordered run of (x, s): each file holds one range
    ordered = sorted(written, key=lambda w: (pc.min(w.column("x")).as_py()))
    xs = [x for w in ordered for x in w.column("x").to_pylist()]
    assert xs == sorted(xs)
    assert instant is not None


# ------------------------------------------------------------------------------ failure, kill, recovery
def test_a_failed_clustering_is_undone_and_runs_again_from_its_plan(tmp_path, monkeypatch):
    from pyhudi.services import clustering_run

    t = seeded(tmp_path)
    expected = rows(t, with_meta=True)
    instant = t.schedule_clustering(sort_columns="x")
    plan_bytes = (Path(t.path) / ".hoodie" / "timeline" / f"{instant}.clustering.requested").read_bytes()
    original = clustering_run.ClusteringTask._write
    calls = []

    def failing(self, file_id, chunk):
        out = original(self, file_id, chunk)
        calls.append(file_id)
        if len(calls) == 2:
            raise OSError("disk full")
        return out

    monkeypatch.setattr(clustering_run.ClusteringTask, "_write", failing)
    monkeypatch.setattr("pyhudi.engine.local.LocalEngine.run_tasks", lambda self, tasks: [x.run() for x in tasks])
    with pytest.raises(OSError, match="disk full"):
        t.run_clustering(instant)
    monkeypatch.setattr(clustering_run.ClusteringTask, "_write", original)
    assert not [n for n in data_files(t) if instant in n]
    assert [(str(i.action), str(i.state)) for i in t.timeline if i.requested_time == instant] == [
        ("clustering", "REQUESTED")]
    assert rows(t, with_meta=True) == expected
    t.run_clustering(instant)
    assert (Path(t.path) / ".hoodie" / "timeline" / f"{instant}.clustering.requested").read_bytes() == plan_bytes
    assert len([n for n in data_files(t) if instant in n]) == 2
    assert without_file_name(rows(t, with_meta=True)) == without_file_name(expected)


KILL_SCRIPT = """
import os, sys, pyhudi
from pyhudi.services import clustering_run
from pyhudi.timeline.timeline import Timeline
from pyhudi.write import commit

step = sys.argv[3]


def dying(owner, name, after):
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        if not after:
            os._exit(9)
        out = original(*args, **kwargs)
        os._exit(9)
    setattr(owner, name, wrapper)


if step == "after inflight":
    dying(Timeline, "transition_to_inflight", True)
elif step == "after the first file":
    dying(clustering_run.ClusteringTask, "_write", True)
elif step == "before completion":
    dying(Timeline, "complete", False)
from pyhudi.engine.local import LocalEngine
pyhudi.open_table(sys.argv[1]).run_clustering(sys.argv[2], engine=LocalEngine(1))  # groups one after another
"""


@pytest.mark.parametrize("step", ["after inflight", "after the first file", "before completion"])
def test_a_killed_clustering_is_invisible_then_re_executed_from_its_plan(tmp_path, step):
    t = seeded(tmp_path)
    expected = without_file_name(rows(t, with_meta=True))
    groups = group_ids(t)
    instant = t.schedule_clustering(sort_columns="x")
    proc = subprocess.run([PY, "-c", KILL_SCRIPT, t.path, instant, step], capture_output=True, text=True)
    assert proc.returncode == 9, proc.stderr
    assert [str(i.state) for i in t.timeline if i.requested_time == instant] == ["INFLIGHT"]
    written = {"after inflight": 0, "after the first file": 1, "before completion": 2}[step]
    assert len([n for n in data_files(t) if instant in n]) == written
    assert group_ids(t) == groups and without_file_name(rows(t, with_meta=True)) == expected  # outputs invisible
    t.cluster(options={"hoodie.clustering.plan.strategy.small.file.limit": "1"})  # runs pending ones first
    # (its executor died: rolled back to requested and run from the plan; nothing new is planned)
    assert [(str(i.action), str(i.state)) for i in t.timeline if i.is_clustering] == [("replacecommit", "COMPLETED")]
    assert len([n for n in data_files(t) if instant in n]) == 2
    assert without_file_name(rows(t, with_meta=True)) == expected
    with pytest.raises(TimelineError, match=f"no pending clustering at {instant}: it completed already"):
        t.run_clustering(instant)


def test_an_inflight_clustering_with_a_live_executor_is_not_run_twice(tmp_path):
    from pyhudi.timeline.heartbeat import Heartbeat

    t = seeded(tmp_path)
    instant = t.schedule_clustering()
    timeline = t.active_timeline()
    timeline.transition_to_inflight(timeline.get(instant))
    beat = Heartbeat(t.storage, instant, 60_000).start()
    try:
        with pytest.raises(ConcurrentWriteError, match=f"clustering {instant} is being executed by another live"):
            t.run_clustering(instant)
        assert t.cluster() is None  # nothing else to plan; the live one is left alone
    finally:
        beat.stop()


# ------------------------------------------------------------------------------ writers during a pending clustering
WRITER = """
import sys, pyarrow as pa, pyhudi
t = pyhudi.open_table(sys.argv[1])
try:
    t.upsert(pa.table({"id": [int(sys.argv[2])], "p": ["a"], "x": [1], "s": ["other process"]}))
except Exception as e:
    print(type(e).__name__ + ": " + str(e))
    sys.exit(3)
"""


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_reject_mode_refuses_updates_of_groups_under_clustering_and_inserts_go_elsewhere(tmp_path, table_type):
    t = seeded(tmp_path, table_type)
    expected = rows(t)
    instant = t.schedule_clustering()
    [holder] = [g.file_id for g in t.file_groups() if g.base_files[0].instant == t.timeline[0].requested_time]
    proc = subprocess.run([PY, "-c", WRITER, t.path, "1"], capture_output=True, text=True)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout.startswith("ClusteringConflictError: upsert ")
    assert (f"updates file group {holder} of partition 'a', which pending clustering {instant} is rewriting "
            "(hoodie.clustering.updates.strategy=SparkRejectUpdateStrategy); the table is unchanged") in proc.stdout
    with pytest.raises(ClusteringConflictError, match=f"pending clustering {instant} is rewriting"):
        t.delete(pa.table({"id": [2], "p": ["a"]}))
    with pytest.raises(ClusteringConflictError, match=f"insert_overwrite .* conflicts with pending clustering "
                                                      f"{instant}, which is rewriting file group .* of partition 'b'"):
        t.insert_overwrite(batch(700, 2, "b"))
    assert rows(t) == expected
    t.insert(batch(900, 2, "a"))  # inserts: a new file group, never one under clustering
    t.cluster()
    assert rows(t) == sorted(expected + batch(900, 2, "a").to_pylist(), key=lambda r: r["id"])
    t.upsert(pa.table({"id": [1], "p": ["a"], "x": [1], "s": ["after"]}))  # allowed once it completed
    assert [r for r in rows(t) if r["id"] == 1] == [{"id": 1, "p": "a", "x": 1, "s": "after"}]


def test_a_clustering_scheduled_while_a_write_runs_fails_that_writes_commit(tmp_path):
    from pyhudi.write.client import WriteClient

    t = seeded(tmp_path, "MERGE_ON_READ")
    expected = rows(t)
    client = WriteClient(t)
    txn = client.begin("upsert")
    statuses = [s for task in txn.plan_tasks(txn.prepare(pa.table({"id": [1], "p": ["a"], "x": [3], "s": ["w"]})))
                for s in task.run()]
    instant = t.schedule_clustering()
    with pytest.raises(ClusteringConflictError, match=rf"upsert {txn.instant} updates file group .* pending "
                                                      rf"clustering {instant} is rewriting .*scheduled while the write"):
        client.commit(txn, statuses)
    assert rows(t) == expected
    t.run_clustering(instant)
    assert rows(t) == expected


ALLOW = {"hoodie.clustering.updates.strategy":
         "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_allow_mode_carries_updates_and_deletes_over_into_the_clustered_file_groups(tmp_path, table_type):
    t = seeded(tmp_path, table_type)
    before = group_ids(t)
    instant = t.schedule_clustering(sort_columns="x")
    t.upsert(pa.table({"id": [1, 152], "p": ["a", "b"], "x": [3, 99], "s": ["kept", "kept too"]}), options=ALLOW)
    t.delete(pa.table({"id": [2, 250], "p": ["a", "b"]}), options=ALLOW)
    t.upsert(pa.table({"id": [1], "p": ["a"], "x": [5], "s": ["latest"]}), options=ALLOW)
    expected = rows(t)
    assert [r["s"] for r in expected if r["id"] in (1, 152)] == ["latest", "kept too"]
    assert not [r for r in expected if r["id"] in (2, 250)]
    with pytest.raises(ClusteringConflictError, match=f"insert_overwrite .* conflicts with pending clustering "
                                                      f"{instant}"):
        t.insert_overwrite(batch(700, 2, "b"), options=ALLOW)  # overwrites conflict whatever the strategy
    assert t.run_clustering(instant) == instant
    [done] = [i for i in t.timeline if i.requested_time == instant]
    assert (str(done.action), done.is_completed) == ("replacecommit", True)
    assert rows(t) == expected  # every update and delete carried over, meta values as the writes stored them
    after = group_ids(t)
    assert not set(after) & set(before) and len(after) == 2
    for path in data_files(t):
        if instant in path:  # one version per new file group, sorted by x, with its own name in every row
            [table] = [pq.read_table(p) for p in Path(t.path).rglob(path)]
            assert table.column("x").to_pylist() == sorted(table.column("x").to_pylist())
            assert set(table.column("_hoodie_file_name").to_pylist()) == {path}
    assert len([n for n in data_files(t) if instant in n]) == 2
    t.upsert(pa.table({"id": [1], "p": ["a"], "x": [6], "s": ["after"]}))
    assert [r["s"] for r in rows(t) if r["id"] == 1] == ["after"]


def test_allow_mode_rolls_the_clustering_back_when_asked_to_instead_of_carrying_over(tmp_path):
    t = seeded(tmp_path, "MERGE_ON_READ")
    instant = t.schedule_clustering()
    t.upsert(pa.table({"id": [1], "p": ["a"], "x": [3], "s": ["kept"]}), options=ALLOW)
    expected = rows(t)
    with pytest.raises(ClusteringConflictError, match=rf"clustering {instant} cannot complete: deltacommit \d+ "
                                                      r"changed its input file group .* after the plan was made "
                                                      r"\(hoodie.clustering.rollback.pending.replacecommit.on."
                                                      r"conflict=true\); the clustering is rolled back .*nothing "
                                                      r"that write wrote is lost"):
        t.run_clustering(instant, options={"hoodie.clustering.rollback.pending.replacecommit.on.conflict": "true"})
    assert [i for i in t.timeline if i.requested_time == instant] == []  # rolled back, plan dropped
    assert any(str(i.action) == "rollback" for i in t.timeline)
    assert not [n for n in data_files(t) if instant in n]
    assert rows(t) == expected
    t.cluster(options={"hoodie.pyhudi.clustering.plan.include.log.files": "true"})
    assert rows(t) == expected and len(t.file_groups()) == 2


def test_allow_mode_writer_asked_to_rolls_the_pending_clustering_back_as_hudi_does(tmp_path):
    t = seeded(tmp_path, "MERGE_ON_READ")
    instant = t.schedule_clustering()
    t.upsert(pa.table({"id": [1], "p": ["a"], "x": [4], "s": ["won"]}),
             options={**ALLOW, "hoodie.clustering.rollback.pending.replacecommit.on.conflict": "true"})
    assert [i for i in t.timeline if i.requested_time == instant] == []
    assert sorted(str(i.action) for i in t.timeline if i.requested_time > instant) == ["deltacommit", "rollback"]
    assert [r for r in rows(t) if r["id"] == 1] == [{"id": 1, "p": "a", "x": 4, "s": "won"}]
    second = t.schedule_clustering(options={"hoodie.pyhudi.clustering.plan.include.log.files": "true"})
    t.insert(batch(800, 1, "b"), options={**ALLOW, "hoodie.clustering.rollback.pending.replacecommit.on."
                                          "conflict": "true"})  # inserts roll nothing back
    assert t.active_timeline().get(second).is_pending


class ClusteringMidWrite:
    """An engine that completes a clustering after the write's first tasks ran, before its commit."""

    name = "local"

    def __init__(self, clustering):
        self.clustering, self.planned = clustering, []

    def run_tasks(self, tasks):
        self.planned.append(sorted(t.file_id for t in tasks))
        out = [task.run() for task in tasks]
        if len(self.planned) == 1:
            self.clustering()
        return out


def written_instants(t) -> set[str]:
    """The instant times named by the table's data files (base and log files)."""
    root = Path(t.path)
    names = [p.name for p in root.rglob("*") if p.is_file() and ".hoodie" not in p.relative_to(root).parts
             and not p.name.startswith(".hoodie_partition")]
    return {m for n in names for m in re.findall(r"\d{17}", n)}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_allow_mode_a_write_in_flight_when_the_clustering_completes_is_planned_again_on_its_groups(tmp_path,
                                                                                                   table_type):
    from pyhudi.write.client import WriteClient

    t = seeded(tmp_path, table_type)
    instant = t.schedule_clustering()
    engine = ClusteringMidWrite(lambda: t.run_clustering(instant))
    result = WriteClient(t, engine=engine, options=ALLOW).write(
        pa.table({"id": [1, 151], "p": ["a", "b"], "x": [7, 8], "s": ["in flight", "in flight too"]}), "upsert")
    clustered = sorted(g.file_id for g in t.file_groups())
    assert len(engine.planned) == 2 and engine.planned[1] == clustered  # the second plan: the new groups
    assert not set(engine.planned[0]) & set(clustered)
    actions = [(str(i.action), i.state.value) for i in t.timeline if i.requested_time > instant]
    assert ("rollback", "COMPLETED") in actions  # the first attempt, rolled back
    assert result.instant > instant and all(s.file_id in clustered for s in result.statuses)
    got = {r["id"]: r["s"] for r in rows(t)}
    assert (got[1], got[151], len(got)) == ("in flight", "in flight too", 30)
    committed = {i.requested_time for i in t.timeline if i.is_completed}
    assert written_instants(t) <= committed  # the first attempt's files are gone


def test_reject_mode_a_write_in_flight_when_the_clustering_completes_fails_as_in_hudi(tmp_path):
    from pyhudi.errors import ClusteredMeanwhileError
    from pyhudi.write.client import WriteClient

    t = seeded(tmp_path, "MERGE_ON_READ")
    expected = rows(t)
    engine = ClusteringMidWrite(t.cluster)  # scheduled and completed after the write was planned
    with pytest.raises(ClusteredMeanwhileError, match=r"write \d+ conflicts with replacecommit \d+ \(CLUSTER\), "
                                                      r"which replaced file group .* while this write ran; the write "
                                                      r"is rolled back, retry it"):
        WriteClient(t, engine=engine).write(pa.table({"id": [1], "p": ["a"], "x": [7], "s": ["lost?"]}), "upsert")
    assert len(engine.planned) == 1 and rows(t) == expected
    assert written_instants(t) <= {i.requested_time for i in t.timeline if i.is_completed}


# ------------------------------------------------------------------------------ triggers and faces
def test_inline_clustering_every_max_commits(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "i"), SCHEMA, "id", partition_fields="p")
    opts = {**NO_SMALL_FILES, "hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "2"}
    t.insert(batch(0, 3, "a"), options=opts)
    assert not [i for i in t.timeline if i.is_clustering]
    t.insert(batch(10, 3, "a"), options=opts)
    [clustering] = [i for i in t.timeline if i.is_clustering]
    assert str(clustering.state) == "COMPLETED" and len(t.file_groups()) == 1
    t.insert(batch(20, 3, "a"), options=opts)  # one commit since: not due
    assert len([i for i in t.timeline if i.is_clustering]) == 1
    assert [r["id"] for r in rows(t)] == [0, 1, 2, 10, 11, 12, 20, 21, 22]


def test_sql_call_run_clustering_schedules_and_runs(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from sql_fake import FakeBackend

    from pyhudi.spark.sql import SqlSession

    t = seeded(tmp_path)
    expected = rows(t)
    session = SqlSession(FakeBackend(str(tmp_path / "warehouse")))
    [scheduled] = session.execute(
        f"CALL run_clustering(table => '{t.path}', op => 'schedule', order => 'x')").to_pylist()
    assert scheduled["state"] == "REQUESTED"
    ran = session.execute(f"CALL run_clustering(table => '{t.path}', op => 'run')").to_pylist()
    assert ran == [{"instant": scheduled["instant"], "state": "COMPLETED"}]
    [again] = session.execute(f"CALL run_clustering(table => '{t.path}')").to_pylist()  # still small files:
    assert again["state"] == "COMPLETED" and again["instant"] > scheduled["instant"]  # (single-group clustering)
    assert rows(t) == expected


def test_clean_removes_replaced_file_groups_once_no_retained_instant_needs_them(tmp_path):
    t = seeded(tmp_path)
    expected = rows(t)
    old = set(data_files(t))
    instant = t.cluster(sort_columns="x")
    opts = {"hoodie.cleaner.commits.retained": "1", "hoodie.clean.automatic": "false", **NO_SMALL_FILES}
    t.insert(batch(5000, 2, "b"), options=opts)
    t.insert(batch(6000, 2, "b"), options=opts)
    assert t.clean(opts) is not None
    remaining = set(data_files(t))
    assert not old & remaining  # every replaced group's files are gone
    assert len([n for n in remaining if instant in n]) == 2
    assert rows(t) == sorted(expected + batch(5000, 2, "b").to_pylist() + batch(6000, 2, "b").to_pylist(),
                             key=lambda r: r["id"])


@pytest.mark.spark
def test_spark_runs_the_groups_as_the_local_engine_does(tmp_path, spark):
    local = seeded(tmp_path, name="local")
    remote = seeded(tmp_path, name="remote")
    local.cluster(sort_columns="x")
    remote.cluster(sort_columns="x", engine="spark")
    assert rows(remote) == rows(local)

    def files(t):  # per output file: its rows (ties of x may come in any order) and its x order
        out = []
        for g in t.file_groups():
            data = pq.read_table(Path(t.path) / g.base_files[0].relpath)
            out.append((g.partition_path, data.column("x").to_pylist(), sorted(data.column("id").to_pylist())))
        return sorted(out)

    assert files(remote) == files(local)


# ------------------------------------------------------------------------------ Apache Hudi's tables
@pytest.mark.parametrize("kind", ["cow", "mor/avro"])
def test_apache_hudi_clustering_replacecommits_read_and_pyhudi_clusters_those_tables(tmp_path, kind):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from conftest import FIXTURES_DIR, extract_table

    path = extract_table(FIXTURES_DIR / f"sample_table/{kind}/v9_txns_simple_nometa.zip", tmp_path)
    gold = pq.read_table(next((path.parent / "gold_data").rglob("*.parquet"))) if (
        path.parent / "gold_data").exists() else None
    t = pyhudi.open_table(str(path))
    timeline = t.active_timeline()
    [clustering] = [i for i in timeline.completed() if i.is_clustering]
    replaced = timeline.read_metadata(clustering).replaced_file_groups()
    before = max((i for i in timeline.completed() if i.sort_time < clustering.sort_time), key=lambda i: i.sort_time)
    assert not replaced & set(group_ids(t))  # hidden once the replacecommit completed
    assert replaced <= set(group_ids(t, as_of=before.requested_time))  # time travel before it sees them
    by_key = {r["txn_id"]: r for r in rows_by(t, "txn_id")}
    assert len(by_key) == 12
    if gold is not None:
        assert sorted(by_key) == sorted(gold.column("txn_id").to_pylist())
    expected = without_file_name(rows_by(t, "txn_id", with_meta=True))
    instant = t.cluster(sort_columns="txn_ts", options={"hoodie.pyhudi.clustering.plan.include.log.files": "true"})
    assert [g.base_files[0].instant for g in t.file_groups()] == [instant] * 3  # one per region
    assert without_file_name(rows_by(t, "txn_id", with_meta=True)) == expected


def rows_by(t, key, **kw):
    return t.read(**kw).sort_by(key).to_pylist()


def test_schedule_inline_only_plans_and_is_refused_together_with_inline(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "s"), SCHEMA, "id", partition_fields="p")
    opts = {**NO_SMALL_FILES, "hoodie.clustering.schedule.inline": "true", "hoodie.clustering.inline.max.commits": "2"}
    for k in range(3):
        t.insert(batch(k * 10, 2, "a"), options=opts)
    pending = [i for i in t.timeline if i.is_clustering]
    assert [str(i.state) for i in pending] == ["REQUESTED"]  # planned after the 2nd commit, to run elsewhere
    before = timeline_files(t)
    with pytest.raises(ConfigError, match="hoodie.clustering.inline and hoodie.clustering.schedule.inline cannot "
                                          "both be true"):
        t.insert(batch(100, 2, "a"), options={**opts, "hoodie.clustering.inline": "true"})
    assert timeline_files(t) == before
    t.run_clustering(pending[0].requested_time)
    assert [r["id"] for r in rows(t)] == [0, 1, 10, 11, 20, 21]


def test_a_pending_clustering_can_be_rolled_back_and_writers_then_update_freely(tmp_path):
    t = seeded(tmp_path, "MERGE_ON_READ")
    instant = t.schedule_clustering()
    with pytest.raises(ClusteringConflictError, match=f"pending clustering {instant}"):
        t.upsert(pa.table({"id": [1], "p": ["a"], "x": [2], "s": ["w"]}))
    t.rollback(instant)
    assert [i for i in t.timeline if i.requested_time == instant] == []
    t.upsert(pa.table({"id": [1], "p": ["a"], "x": [2], "s": ["w"]}))
    assert [r for r in rows(t) if r["id"] == 1] == [{"id": 1, "p": "a", "x": 2, "s": "w"}]

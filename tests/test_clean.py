"""Cleaning (issue 13): policies, plans and metadata as Hudi's Avro records, what is never deleted
(retained snapshots, pending compaction/clustering, pinned readers), replaced file groups,
dropped families, incremental listing, re-execution, automatic cleaning, faces (CLI, SQL).

Every test checks the exact files deleted and kept, and the rows of every snapshot it keeps.
"""

from __future__ import annotations

import json
from datetime import timedelta
import subprocess
import sys
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import CleanedSnapshotError, ConfigError, TimelineError
from pyhudi.read.retention import READERS_DIR
from pyhudi.services.clean_plan import plan_clean
from pyhudi.storage.fs import Storage
from pyhudi.timeline.instant import format_instant_time, parse_instant_time
from write_helpers import data_files, of

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.float64()), ("b", pa.string())])
PSCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("p", pa.string()), ("a", pa.float64())])
FID = "00000000-0000-0000-0000-000000000000-0"
MANUAL = {"hoodie.clean.automatic": "false"}


def table(tmp_path, name="t", options=None, **kw):
    kw.setdefault("num_buckets", 1)
    return pyhudi.create_table(str(tmp_path / name), SCHEMA, "id", options={**MANUAL, **(options or {})}, **kw)


def upsert(t, i, ids=(1, 2)):
    return t.upsert(pa.table({"id": list(ids), "a": [float(i)] * len(ids), "b": [str(i)] * len(ids)}))



def snapshots(t, instants):
    return {i: t.read(as_of=i).sort_by("id") for i in instants}


def avro_record(path: Path, name: str) -> dict:
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        assert reader.writer_schema["name"] == f"org.apache.hudi.avro.model.{name}"
        (record,) = list(reader)
    return record


def timeline_file(t, suffix: str) -> Path:
    (found,) = [p for p in (Path(t.path) / ".hoodie" / "timeline").iterdir() if p.name.endswith(suffix)]
    return found


# ------------------------------------------------------------------------------ policies
def test_keep_latest_commits_deletes_exactly_what_no_retained_snapshot_reads(tmp_path):
    t = table(tmp_path, options={"hoodie.cleaner.commits.retained": "2"})
    u1, u2 = upsert(t, 1), upsert(t, 2)
    k1 = t.compact()
    u3 = upsert(t, 3)
    k2 = t.compact()
    u4 = upsert(t, 4)
    instants = [u1, u2, k1, u3, k2, u4]
    before, files = snapshots(t, instants), data_files(t)
    assert t.plan_clean() == [{"partition": "", "file": f} for f in sorted(of(files, u1, u2, k1, u3))]
    c = t.clean()
    assert data_files(t) == of(files, k2, u4)  # the base of k2 and the log after it
    for instant in (k2, u4):  # the last 2 commits: time travel reads what it read before
        assert t.read(as_of=instant).sort_by("id").equals(before[instant])
    for instant in (u1, u2, k1, u3):
        with pytest.raises(CleanedSnapshotError, match=f"as of .*: clean {c} deleted data files that snapshot reads"):
            t.read(as_of=instant)
    assert t.read().sort_by("id").to_pylist() == [{"id": 1, "a": 4.0, "b": "4"}, {"id": 2, "a": 4.0, "b": "4"}]

    plan = avro_record(timeline_file(t, f"{c}.clean.requested"), "HoodieCleanerPlan")
    assert plan["policy"] == "KEEP_LATEST_COMMITS"
    assert plan["earliestInstantToRetain"] == {"timestamp": k2, "action": "commit", "state": "COMPLETED"}
    assert plan["lastCompletedCommitTimestamp"] == u4
    assert plan["filePathsToBeDeletedPerPartition"] == {
        "": [{"filePath": Storage(t.path).uri(f), "isBootstrapBaseFile": False} for f in sorted(of(files, u1, u2, k1, u3))]}
    done = avro_record(timeline_file(t, ".clean"), "HoodieCleanMetadata")
    assert done["startCleanTime"] == c and done["totalFilesDeleted"] == 4 and done["earliestCommitToRetain"] == k2
    assert sorted(done["partitionMetadata"][""]["successDeleteFiles"]) == sorted(of(files, u1, u2, k1, u3))
    assert done["partitionMetadata"][""]["failedDeleteFiles"] == []
    assert [(i.action.value, i.state.value) for i in t.timeline][-1] == ("clean", "COMPLETED")
    assert t.clean() is None  # nothing left to delete: no instant
    assert [i.action.value for i in t.timeline].count("clean") == 1


def test_keep_latest_file_versions_keeps_the_newest_slices_of_each_file_group(tmp_path):
    t = table(tmp_path, options={"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
                                 "hoodie.cleaner.fileversions.retained": "2"})
    u1 = upsert(t, 1)
    k1 = t.compact()
    u2 = upsert(t, 2)
    k2 = t.compact()
    u3 = upsert(t, 3)
    k3 = t.compact()
    u4 = upsert(t, 4)
    files = data_files(t)
    t.clean()
    # slices: [u1], [k1 u2], [k2 u3], [k3 u4]: the newest two stay
    assert data_files(t) == of(files, k2, u3, k3, u4)
    assert t.read().sort_by("id").column("a").to_pylist() == [4.0, 4.0]
    assert t.read(as_of=k2).sort_by("id").column("a").to_pylist() == [2.0, 2.0]
    with pytest.raises(CleanedSnapshotError):
        t.read(as_of=u2)


def test_keep_latest_by_hours_retains_the_commits_of_the_last_hours(tmp_path):
    t = table(tmp_path, options={"hoodie.cleaner.policy": "KEEP_LATEST_BY_HOURS", "hoodie.cleaner.hours.retained": "2"})
    u1 = upsert(t, 1)
    k1 = t.compact()
    u2 = upsert(t, 2)
    k2 = t.compact()
    files = data_files(t)
    hours_after = lambda instant: format_instant_time(parse_instant_time(instant) + timedelta(hours=2))
    timeline = t.active_timeline()
    # a clean at k1 + 2 hours: the first commit requested in the last 2 hours is k1
    plan = plan_clean(t.table_context(timeline), timeline, hours_after(k1), {})
    assert plan.earliest_instant_to_retain.timestamp == k1
    assert sorted(plan.files_to_delete()[""]) == sorted(Storage(t.path).uri(f) for f in of(files, u1))
    plan = plan_clean(t.table_context(timeline), timeline, hours_after(k2), {})  # ECTR = k2
    assert sorted(plan.files_to_delete()[""]) == sorted(Storage(t.path).uri(f) for f in of(files, u1, k1, u2))
    assert t.clean() is None  # now: every commit is younger than 2 hours
    assert data_files(t) == files


# ------------------------------------------------------------------------------ never deleted
def test_files_of_a_pending_compaction_and_a_pending_clustering_are_kept(tmp_path):
    from pyhudi.timeline.metadata import encode_instant_metadata
    from pyhudi.timeline.metadata_plans import ClusteringGroup, ClusteringPlan, RequestedReplaceMetadata, SliceInfo

    options = {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.cleaner.fileversions.retained": "1"}
    t = table(tmp_path, options=options, num_buckets=2)
    ids = list(range(8))
    u1 = t.upsert(pa.table({"id": ids, "a": [0.0] * 8, "b": ["0"] * 8}))
    t.compact()
    u2 = t.upsert(pa.table({"id": ids, "a": [2.0] * 8, "b": ["2"] * 8}))
    k2 = t.schedule_compaction()  # pending: names the base files of k1 and the logs of u2
    files = data_files(t)
    clustered, other = "00000001-0000-0000-0000-000000000000-0", FID
    assert {f.lstrip(".")[:len(FID)] for f in files} == {clustered, other}
    plan = RequestedReplaceMetadata(operation_type="CLUSTER", clustering_plan=ClusteringPlan(
        input_groups=[ClusteringGroup(slices=[SliceInfo(file_id=clustered, partition_path="")])]))
    t.active_timeline().create_requested("clustering", content=encode_instant_metadata(plan))
    before = t.read().sort_by("id")
    assert t.clean() is not None
    # group 0: its first slice (u1's logs) goes; the compaction's inputs stay. Group 1: all of it stays
    assert files - data_files(t) == {f for f in of(files, u1) if f.startswith("." + other)}
    assert t.read().sort_by("id").equals(before)
    assert t.run_compaction(k2) == k2
    assert t.read().sort_by("id").equals(before)


def test_replaced_file_groups_are_deleted_once_no_retained_snapshot_reads_them(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "p"), PSCHEMA, "id", partition_fields="p",
                            options={**MANUAL, "hoodie.cleaner.commits.retained": "2"})
    i1 = t.insert(pa.table({"id": [1, 2], "p": ["x", "y"], "a": [1.0, 2.0]}))
    files = data_files(t)
    o1 = t.insert_overwrite(pa.table({"id": [3], "p": ["x"], "a": [3.0]}))
    assert t.clean() is None  # 2 commits: the snapshot of i1 is retained, so is x's old file group
    i2 = t.insert(pa.table({"id": [4], "p": ["y"], "a": [4.0]}))
    replaced = {f for f in of(files, i1) if f.startswith("p=x/") or f.startswith("x/")}
    assert len(replaced) == 1
    before, present = snapshots(t, [o1, i2]), data_files(t)
    c = t.clean()  # ECTR = o1: every retained snapshot is after the overwrite
    assert c is not None
    assert data_files(t) == present - replaced
    for instant in (o1, i2):
        assert t.read(as_of=instant).sort_by("id").equals(before[instant])
    with pytest.raises(CleanedSnapshotError):
        t.read(as_of=i1)
    assert t.read().sort_by("id").to_pylist() == [{"id": 2, "p": "y", "a": 2.0}, {"id": 3, "p": "x", "a": 3.0},
                                                   {"id": 4, "p": "y", "a": 4.0}]


def test_files_of_a_dropped_family_are_deleted_after_the_alter_is_no_longer_retained(tmp_path):
    t = table(tmp_path, column_families={"fa": "a", "fb": "b"}, options={"hoodie.cleaner.commits.retained": "3",
                                                                       # (one log per family: fb's own files)
                                                                       "hoodie.pyhudi.insert.full.row": "false"})
    u1 = upsert(t, 1)
    fb_files = {f for f in data_files(t) if f.endswith("_fb.log.1_0-1-0")}
    assert len(fb_files) == 1
    alter = t.alter(unset_properties=["hoodie.colFamily.fb"])
    u2 = t.upsert(pa.table({"id": [1], "a": [5.0]}))
    assert t.clean() is None  # the snapshot of u1 (retained) still reads fb's files
    assert t.read(as_of=u1).sort_by("id").column("b").to_pylist() == ["1", "1"]
    u3 = t.upsert(pa.table({"id": [2], "a": [6.0]}))
    c = t.clean()  # retained: the ALTER, u2, u3: none reads fb's files; fa's are still read
    assert c is not None
    assert data_files(t) & fb_files == set()
    assert t.read().sort_by("id").to_pylist() == [{"id": 1, "a": 5.0}, {"id": 2, "a": 6.0}]
    assert t.read(as_of=u2).sort_by("id").to_pylist() == [{"id": 1, "a": 5.0}, {"id": 2, "a": 1.0}]
    assert t.read(as_of=alter).sort_by("id").to_pylist() == [{"id": 1, "a": 1.0}, {"id": 2, "a": 1.0}]
    with pytest.raises(CleanedSnapshotError):
        t.read(as_of=u1)


def test_a_pinned_reader_keeps_its_snapshot_until_it_is_closed(tmp_path):
    t = table(tmp_path, options={"hoodie.cleaner.commits.retained": "1"})
    u1 = upsert(t, 1)
    t.compact()
    reader = t.scan(batch_size=1)  # pins the latest snapshot (k1's base file)
    assert len(list((Path(t.path) / READERS_DIR).iterdir())) == 1
    files = data_files(t)
    k1_base = files - of(files, u1)
    u2 = upsert(t, 2)
    k2 = t.compact()
    u3 = upsert(t, 3)
    assert t.clean() is not None  # retained: u3 only — but the pin reads k1's base file
    assert data_files(t) == k1_base | of(data_files(t), k2, u3)
    assert not of(files, u1) & data_files(t)
    rows = pa.Table.from_batches(list(reader)).sort_by("id").to_pylist()
    assert rows == [{"id": 1, "a": 1.0, "b": "1"}, {"id": 2, "a": 1.0, "b": "1"}]
    assert list((Path(t.path) / READERS_DIR).iterdir()) == []  # exhausted: released
    assert t.clean() is not None  # (its partition was kept back for the pin: listed again)
    assert data_files(t) == of(data_files(t), k2, u3) and not data_files(t) & k1_base


def test_a_pin_older_than_its_expiry_protects_nothing(tmp_path):
    import os
    import time

    t = table(tmp_path, options={"hoodie.cleaner.commits.retained": "1"})
    upsert(t, 1)
    reader = t.scan()
    (pin,) = (Path(t.path) / READERS_DIR).iterdir()
    old = time.time() - 7200
    os.utime(pin, (old, old))  # its reader stopped refreshing it two hours ago
    files = data_files(t)
    upsert(t, 2)
    t.compact()
    assert t.clean() is not None
    assert data_files(t) & files == set()
    del reader


# ------------------------------------------------------------------------------ incremental, re-execution
def test_incremental_mode_lists_only_partitions_written_since_the_last_clean(tmp_path, monkeypatch):
    t = pyhudi.create_table(str(tmp_path / "p"), PSCHEMA, "id", partition_fields="p", num_buckets=1,
                            options={**MANUAL, "hoodie.cleaner.commits.retained": "1"})
    t.upsert(pa.table({"id": [1, 2], "p": ["x", "y"], "a": [1.0, 2.0]}))
    t.compact()
    t.upsert(pa.table({"id": [1], "p": ["x"], "a": [2.0]}))
    t.compact()  # (compacts x only)
    assert t.clean() is not None  # the first clean lists every partition; it retains the last compaction
    listed = []
    original = Storage.list_files
    monkeypatch.setattr(Storage, "list_files",
                        lambda self, rel="", **kw: listed.append(rel) or original(self, rel, **kw))
    walk = Storage.walk_files
    monkeypatch.setattr(Storage, "walk_files", lambda self, rel="": listed.append("(every partition)") or walk(self, rel))
    t.upsert(pa.table({"id": [1], "p": ["x"], "a": [3.0]}))
    t.compact()
    listed.clear()
    assert t.clean() is not None
    assert [p for p in listed if not p.startswith(".hoodie")] == ["x"]  # y was not written since
    listed.clear()
    assert t.clean(options={"hoodie.cleaner.incremental.mode": "false"}) is None
    assert [p for p in listed if not p.startswith(".hoodie")] == ["(every partition)"]
    assert t.read().sort_by("id").column("a").to_pylist() == [3.0, 2.0]


def test_a_killed_clean_is_executed_again_from_its_plan(tmp_path):
    t = table(tmp_path, options={"hoodie.cleaner.commits.retained": "1"})
    u1 = upsert(t, 1)
    t.compact()
    files = data_files(t)
    c = t.schedule_clean()
    timeline = t.active_timeline()
    timeline.transition_to_inflight(timeline.get(c))  # its executor died after this (no heartbeat left)
    victim = sorted(of(files, u1))[0]
    (Path(t.path) / victim).unlink()  # ... and after deleting one file
    upsert(t, 2)  # a later commit: the stored plan is executed, not a new one
    assert t.clean() == c
    assert data_files(t) & of(files, u1) == set()
    done = avro_record(timeline_file(t, ".clean"), "HoodieCleanMetadata")
    assert sorted(done["partitionMetadata"][""]["successDeleteFiles"]) == sorted(of(files, u1))
    with pytest.raises(TimelineError, match=f"no pending clean at {c}: it completed already"):
        t.run_clean(c)


def test_bad_settings_are_refused_and_change_nothing(tmp_path):
    t = table(tmp_path)
    upsert(t, 1)
    before = sorted((i.requested_time, i.action.value, i.state.value) for i in t.timeline)
    with pytest.raises(ConfigError, match="hoodie.cleaner.commits.retained=0: the cleaner must retain at least 1"):
        t.clean(options={"hoodie.cleaner.commits.retained": "0"})
    with pytest.raises(ConfigError, match="invalid value 'KEEP_ALL' for hoodie.cleaner.policy"):
        t.clean(options={"hoodie.cleaner.policy": "KEEP_ALL"})
    with pytest.raises(TimelineError, match="no pending clean at 20200101000000000"):
        t.run_clean("20200101000000000")
    assert sorted((i.requested_time, i.action.value, i.state.value) for i in t.timeline) == before


# ------------------------------------------------------------------------------ automatic
def test_writes_clean_automatically_with_default_options(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1)  # default options
    instants = []
    for i in range(5):
        instants.append(upsert(t, i))
        instants.append(t.compact())
    files = data_files(t)
    before = snapshots(t, instants)
    assert not [i for i in t.timeline if i.action.value == "clean"]  # 10 commits: all retained
    assert t.plan_clean() == []
    instants.append(upsert(t, 5))  # the 11th commit cleans: the last 10 are retained
    (clean,) = [i for i in t.timeline if i.action.value == "clean"]
    assert clean.is_completed
    assert files - data_files(t) == of(files, instants[0])  # the first upsert's log, read by no retained snapshot
    for instant in instants[1:-1]:
        assert t.read(as_of=instant).sort_by("id").equals(before[instant])
    with pytest.raises(CleanedSnapshotError):
        t.read(as_of=instants[0])


def test_async_cleaning_runs_after_the_write_in_the_background(tmp_path):
    t = table(tmp_path, options={"hoodie.clean.automatic": "true", "hoodie.clean.async": "true",
                                 "hoodie.cleaner.commits.retained": "1"})
    u1 = upsert(t, 1)
    t.compact()
    files = data_files(t)
    upsert(t, 2)
    t.wait_for_clean()
    assert [(i.action.value, i.state.value) for i in t.timeline if i.action.value == "clean"] == [("clean", "COMPLETED")]
    assert data_files(t) & of(files, u1) == set()


# ------------------------------------------------------------------------------ other readers, faces
def test_after_full_compaction_and_clean_hudi_rs_reads_a_family_table_as_pyhudi_does(tmp_path):
    import hudi

    t = table(tmp_path, column_families={"fa": "a", "fb": "b"}, options={"hoodie.cleaner.commits.retained": "1"})
    t.upsert(pa.table({"id": [1, 2, 3], "a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"]}))
    t.upsert(pa.table({"id": [2], "b": ["Y"]}))
    t.delete(pa.table({"id": [3]}))
    k = t.compact(full=True)
    assert t.clean() is not None
    assert data_files(t) == {f"{FID}_0-0-0_{k}.parquet"}  # one full-row base file, nothing else
    expected = t.read().sort_by("id").to_pylist()
    assert expected == [{"id": 1, "a": 1.0, "b": "x"}, {"id": 2, "a": 2.0, "b": "Y"}]
    got = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(t.path).build().read()).sort_by("id")
    assert got.select(SCHEMA.names).to_pylist() == expected


def test_cli_clean_dry_run_schedule_and_run(tmp_path):
    t = table(tmp_path, options={"hoodie.cleaner.commits.retained": "1"})
    u1 = upsert(t, 1)
    t.compact()
    files = data_files(t)

    def cli(*args):
        out = subprocess.run([sys.executable, "-m", "pyhudi.cli", "clean", t.path, *args, "--json"],
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout)

    assert cli("--dry-run") == {"plan": [{"partition": "", "file": f} for f in sorted(of(files, u1))]}
    assert data_files(t) == files
    scheduled = cli("--schedule")
    assert scheduled["state"] == "REQUESTED"
    assert cli("--run", scheduled["clean"]) == {"clean": scheduled["clean"], "state": "COMPLETED"}
    assert data_files(t) & of(files, u1) == set()
    assert cli() == {"clean": None, "state": None}


def test_sql_call_run_clean(tmp_path):
    from pyhudi.spark.sql import SqlSession
    from sql_fake import FakeBackend

    t = table(tmp_path, options={"hoodie.cleaner.commits.retained": "1"})
    u1 = upsert(t, 1)
    t.compact()
    files = data_files(t)
    session = SqlSession(FakeBackend(str(tmp_path / "warehouse")))
    (row,) = session.execute(f"CALL run_clean(table => '{t.path}')").to_pylist()
    assert row["total_files_deleted"] == len(of(files, u1)) and row["state"] == "COMPLETED"
    assert data_files(t) & of(files, u1) == set()


def files_per_group(t) -> dict[tuple[str, str], int]:
    """(file id, family) -> data files on disk."""
    from pyhudi.storage.naming import parse_data_file_name

    out: dict[tuple[str, str], int] = {}
    for path in data_files(t):
        name = parse_data_file_name(path.rpartition("/")[2])
        key = (name.file_id, name.family or "")
        out[key] = out.get(key, 0) + 1
    return out


def test_files_per_file_group_stay_below_the_stated_bound_in_steady_state(tmp_path):
    """Defaults + inline compaction: R = 10 retained commits, a compaction every D = 5 delta
    commits, so at most (ceil(9 / 6) + 1) x 6 = 18 files per file group and family
    (pyhudi.services.clean.files_per_group_bound); bench_commit_cost.py --files runs 2,000 commits."""
    from pyhudi.services.clean import files_per_group_bound

    options = {"hoodie.compact.inline": "true"}
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2, options=options)
    bound = files_per_group_bound({**t.properties, **options})
    assert bound == 18
    highest, counts = 0, []
    for i in range(150):
        t.upsert(pa.table({"id": [2 * i, 2 * i + 1, 1000], "a": [float(i)] * 3, "b": [str(i)] * 3}))
        per_group = files_per_group(t)
        assert set(per_group) == {("00000000-0000-0000-0000-000000000000-0", ""),
                                  ("00000001-0000-0000-0000-000000000000-0", "")}
        highest = max(highest, *per_group.values())
        counts.append(sum(per_group.values()))
    assert 12 <= highest <= bound, highest
    assert max(counts[100:]) == max(counts[40:100])  # flat: no growth after the first slices retire
    assert t.read().num_rows == 301


def test_a_clean_trigger_strategy_hudi_does_not_have_is_refused_and_changes_nothing(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1)
    with pytest.raises(ConfigError, match="invalid value 'TIME_ELAPSED' for hoodie.clean.trigger.strategy: "
                                          "expected one of NUM_COMMITS"):
        t.upsert(pa.table({"id": [1], "a": [1.0], "b": ["x"]}), options={"hoodie.clean.trigger.strategy": "TIME_ELAPSED"})
    assert t.timeline == [] and data_files(t) == set()


def test_an_instant_archived_after_the_listing_is_reported_stale_and_the_clean_plans_again(tmp_path, monkeypatch):
    """Another process archives instants of this process's listing while the clean plans (its own
    clean moved on): the read names the instant, and the clean lists again and plans anew."""
    import pyhudi.services.clean as clean_service
    from pyhudi.errors import StaleTimelineError

    t = table(tmp_path, options={"hoodie.cleaner.commits.retained": "1"})
    first, _ = upsert(t, 1), upsert(t, 2)
    compaction, third = t.compact(), upsert(t, 3)
    timeline = t.active_timeline()
    gone = next(i for i in timeline.completed() if i.requested_time == first)
    content = t.storage.read(timeline.path_of(gone))
    t.storage.delete(timeline.path_of(gone))  # what archival does to the active file
    with pytest.raises(StaleTimelineError, match=f"instant {first} \\(deltacommit\\) left the active timeline"):
        timeline.read_bytes(gone)
    t.storage.write(timeline.path_of(gone), content)

    calls = []
    real = clean_service.plan_clean

    def stale_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise StaleTimelineError("archived meanwhile")
        return real(*args, **kwargs)

    monkeypatch.setattr(clean_service, "plan_clean", stale_once)
    files = data_files(t)
    assert t.clean() is not None and len(calls) == 2
    assert data_files(t) == of(files, compaction, third)

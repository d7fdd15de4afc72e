"""Timeline archival into the LSM history (``.hoodie/timeline/history``) and reads across it."""

from __future__ import annotations

import json
import os
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.cli import main
from pyhudi.errors import ConfigError
from pyhudi.services import archive as archive_service
from pyhudi.timeline.archived import ARROW_SCHEMA, LsmFileName, load_archived
from pyhudi.timeline.instant import Action, State
from pyhudi.timeline.metadata import CleanMetadata, CommitMetadata, CompactionPlan, encode_instant_metadata
from read_helpers import just_before

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64()), ("s", pa.string())])
COMMITS = ("commit", "deltacommit", "replacecommit")
OFF = {"hoodie.archive.automatic": "false"}


def _batch(i: int) -> pa.Table:
    """Commit i updates key i % 7 and inserts key 100 + i."""
    return pa.table({"id": [i % 7, 100 + i], "v": [i, i], "s": [f"u{i}", f"n{i}"]}, schema=SCHEMA)


def _rows(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def _history(t: pyhudi.Table) -> str:
    return os.path.join(t.path, ".hoodie", "timeline", "history")


def _active_commits(t: pyhudi.Table) -> list:
    return [i for i in t.timeline if i.is_completed and str(i.action) in COMMITS]


def _write(t: pyhudi.Table, n: int, start: int = 0, options: dict | None = None) -> list[str]:
    return [t.upsert(_batch(i), options=options) for i in range(start, start + n)]


@pytest.fixture
def table(tmp_path) -> pyhudi.Table:
    return pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2)


def _snapshot_reads(t: pyhudi.Table) -> dict:
    """Time travel to every completed write (by its instant, its completion time and just before
    that) and the incremental window of each write alone."""
    done = [i for i in [*t.archived_timeline(), *t.timeline] if i.is_completed and str(i.action) in COMMITS]
    done.sort(key=lambda i: i.completion_time)
    out = {}
    previous = just_before(t, done[0].completion_time)
    for i in done:
        before = just_before(t, i.completion_time)
        out[i.requested_time] = (
            _rows(t.read(as_of=i.requested_time)),
            _rows(t.read(as_of=i.completion_time)),
            _rows(t.read(as_of=before)),
            _rows(t.read_incremental(previous, i.completion_time)),
        )
        previous = i.completion_time
    out["incremental-all"] = _rows(t.read_incremental(just_before(t, done[0].completion_time)))
    out["incremental-mid"] = _rows(t.read_incremental(done[1].requested_time, done[-2].requested_time))
    return out


# ------------------------------------------------------------------------------ defaults
def test_forty_commits_with_defaults_keep_the_active_timeline_within_keep_min_and_keep_max(table):
    _write(table, 40)
    commits = _active_commits(table)
    assert 20 <= len(commits) <= 30
    archived = table.archived_timeline()
    assert len(archived) + len(commits) == 40
    assert all(a.requested_time < commits[0].requested_time for a in archived)
    assert _rows(table.read()) == _rows(pa.concat_tables([_batch(i) for i in range(33, 40)] + [
        _batch(i).slice(1) for i in range(33)]))


def test_history_files_have_hudi_names_manifest_version_and_parquet_schema(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2)
    _write(t, 31, options=OFF)
    before = {i.requested_time: (i, t.active_timeline().read_bytes(i)) for i in _active_commits(t)}
    archived = t.archive()
    assert len(archived) == 11  # 31 commits > keep.max 30: archived down to keep.min 20
    name = f"{archived[0]}_{archived[-1]}_0.parquet"
    assert sorted(os.listdir(_history(t))) == sorted([name, "_version_", "manifest_1"])
    assert open(os.path.join(_history(t), "_version_")).read() == "1"
    manifest = json.load(open(os.path.join(_history(t), "manifest_1")))
    assert manifest == {"files": [{"fileName": name, "fileLen": os.path.getsize(os.path.join(_history(t), name))}]}
    lsm = pq.read_table(os.path.join(_history(t), name))
    assert lsm.schema.names == ["instantTime", "completionTime", "action", "metadata", "plan", "version"]
    assert [f.type for f in lsm.schema] == [pa.string(), pa.string(), pa.string(), pa.binary(), pa.binary(), pa.int32()]
    assert json.loads(lsm.schema.metadata[b"parquet.avro.schema"])["name"] == "HoodieLSMTimelineInstant"
    assert lsm.column("instantTime").to_pylist() == archived
    for row in lsm.to_pylist():
        instant, content = before[row["instantTime"]]
        assert (row["completionTime"], row["action"], row["metadata"], row["plan"], row["version"]) == (
            instant.completion_time, "deltacommit", content, None, 1)
    # the archived instants' files left the active timeline; the history decodes the same metadata
    timeline = os.listdir(os.path.join(t.path, ".hoodie", "timeline"))
    assert not [f for f in timeline if f.split(".")[0].split("_")[0] in set(archived)]
    history = t.active_timeline().archived()
    first = history.get(archived[0])
    assert history.read_metadata(first) == CommitMetadata.from_avro_bytes(before[archived[0]][1])
    assert history.read_metadata(first).operation_type == "UPSERT"


def test_time_travel_and_incremental_reads_over_archived_ranges_equal_the_reads_before(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2)
    _write(t, 40, options=OFF)
    expected = _snapshot_reads(t)
    archived = t.archive()
    assert len(archived) == 20
    assert _snapshot_reads(pyhudi.open_table(t.path)) == expected


def test_archival_runs_after_commits_by_default_and_not_when_automatic_is_off(tmp_path):
    on = pyhudi.create_table(str(tmp_path / "on"), SCHEMA, "id")
    off = pyhudi.create_table(str(tmp_path / "off"), SCHEMA, "id", options=OFF)
    _write(on, 31)
    _write(off, 31)
    assert len(_active_commits(on)) == 20 and len(on.archived_timeline()) == 11
    assert len(_active_commits(off)) == 31 and off.archived_timeline() == []
    assert _rows(on.read()) == _rows(off.read())


# ------------------------------------------------------------------------------ what is kept
def test_pending_instants_and_the_commit_before_them_are_never_archived(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2)
    first = _write(t, 5)
    pending = t.schedule_compaction()
    assert pending is not None
    _write(t, 35, start=5)
    archived = [i.requested_time for i in t.archived_timeline()]
    assert archived == first[:4]  # the last commit before the pending compaction stays
    assert t.active_timeline().get(pending).state is State.REQUESTED
    t.run_compaction(pending)
    assert _rows(t.read()) == _rows(pa.concat_tables([_batch(i) for i in range(33, 40)] + [
        _batch(i).slice(1) for i in range(33)]))


def _complete_clean(t: pyhudi.Table, earliest_commit_to_retain: str) -> str:
    timeline = t.active_timeline()
    requested = timeline.create_requested(Action.CLEAN)
    inflight = timeline.transition_to_inflight(requested)
    metadata = CleanMetadata(
        start_clean_time=requested.requested_time, time_taken_in_millis=1, total_files_deleted=0,
        earliest_commit_to_retain=earliest_commit_to_retain, last_completed_commit_timestamp="",
        partition_metadata={}, version=2, bootstrap_partition_metadata=None, extra_metadata=None,
    )
    timeline.complete(inflight, encode_instant_metadata(metadata))
    return requested.requested_time


def test_archival_stops_at_the_last_cleans_earliest_commit_to_retain(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2)
    times = _write(t, 5, options=OFF)
    old_clean = _complete_clean(t, times[2])
    times += _write(t, 35, start=5, options=OFF)
    clean = _complete_clean(t, times[9])
    archived = t.archive()
    assert archived == [*times[:5], old_clean, *times[5:9]]  # cleans older than the cut go along
    assert clean in {i.requested_time for i in t.timeline}
    assert str(t.active_timeline().archived().get(old_clean).action) == "clean"


def test_bad_keep_options_are_refused_and_leave_the_table_unchanged(table):
    _write(table, 3)
    before = sorted(os.listdir(os.path.join(table.path, ".hoodie", "timeline")))
    with pytest.raises(ConfigError, match=r"hoodie.keep.max.commits \(5\) must be greater than hoodie.keep.min.commits \(5\)"):
        table.archive(options={"hoodie.keep.min.commits": "5", "hoodie.keep.max.commits": "5"})
    with pytest.raises(ConfigError, match="hoodie.keep.min.commits must be at least 1, got 0"):
        table.archive(options={"hoodie.keep.min.commits": "0", "hoodie.keep.max.commits": "2"})
    with pytest.raises(ConfigError, match="invalid value 'x' for hoodie.keep.max.commits"):
        table.archive(options={"hoodie.keep.max.commits": "x"})
    assert sorted(os.listdir(os.path.join(table.path, ".hoodie", "timeline"))) == before


# ------------------------------------------------------------------------------ crashes
class _Crash(Exception):
    pass


def test_crash_before_the_manifest_leaves_a_readable_timeline_and_the_next_archival_finishes(tmp_path, monkeypatch):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2)
    times = _write(t, 31, options=OFF)
    expected = _snapshot_reads(t)

    def crash(*_args):
        raise _Crash()

    monkeypatch.setattr(archive_service, "publish", crash)
    with pytest.raises(_Crash):
        t.archive()
    assert [n for n in os.listdir(_history(t)) if n.endswith(".parquet")]  # the LSM file was written
    assert t.archived_timeline() == [] and len(_active_commits(t)) == 31
    assert _snapshot_reads(t) == expected
    monkeypatch.undo()
    assert t.archive() == times[:11]
    assert open(os.path.join(_history(t), "_version_")).read() == "1"
    assert _snapshot_reads(t) == expected


def test_crash_after_the_manifest_before_the_version_file_keeps_the_published_version(tmp_path, monkeypatch):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2)
    options = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "4"}
    times = _write(t, 5, options=OFF)
    assert t.archive(options=options) == times[:3]
    times += _write(t, 3, start=5, options=OFF)
    expected = _snapshot_reads(t)
    real_rename = t.storage.rename

    def crash_on_version(src, dst):
        if dst.endswith("_version_"):
            raise _Crash()
        real_rename(src, dst)

    monkeypatch.setattr(type(t.storage), "rename", lambda self, src, dst: crash_on_version(src, dst))
    with pytest.raises(_Crash):
        t.archive(options=options)
    monkeypatch.undo()
    assert "manifest_2" in os.listdir(_history(t))
    assert open(os.path.join(_history(t), "_version_")).read() == "1"
    assert [i.requested_time for i in t.archived_timeline()] == times[:3]
    assert _snapshot_reads(t) == expected
    assert t.archive(options=options) == times[3:6]
    assert open(os.path.join(_history(t), "_version_")).read() == "2"
    assert _snapshot_reads(t) == expected


# ------------------------------------------------------------------------------ LSM levels, schema history
def test_lsm_levels_compact_into_the_next_level_and_old_manifests_are_cleaned(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2)
    options = {"hoodie.keep.min.commits": "1", "hoodie.keep.max.commits": "2",
               "hoodie.timeline.compaction.batch.size": "2", **OFF}
    times = []
    for i in range(8):
        times.append(t.upsert(_batch(i), options=OFF))
        if i >= 2:
            t.archive(options=options)
    expected = _rows(pa.concat_tables([_batch(i) for i in range(1, 8)] + [_batch(0).slice(1)]))
    history = t.active_timeline().archived()
    names = [LsmFileName.parse(n) for n in history.manifest.file_names]
    assert max(n.level for n in names) >= 1
    assert [i.requested_time for i in history.instants] == times[:6]  # archived at commits 3, 5 and 7
    parquet = sorted(n for n in os.listdir(_history(t)) if n.endswith(".parquet"))
    manifests = sorted(n for n in os.listdir(_history(t)) if n.startswith("manifest_"))
    assert len(manifests) <= 5 and set(history.manifest.file_names) <= set(parquet)
    assert _rows(t.read()) == expected
    for i, instant in enumerate(times):
        assert {r["id"] for r in t.read(as_of=instant).to_pylist()} >= {100 + i}


def test_schema_and_families_at_archived_instants_come_from_the_archived_commits(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.int64()), ("b", pa.string())])
    t = pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=1,
                            column_families={"one": "a", "two": "b"})
    first = t.upsert(pa.table({"id": [1], "a": [1], "b": ["x"]}, schema=schema), options=OFF)
    alter = t.alter({"hoodie.colFamily.three": "c"}, new_columns={"c": pa.float64()})
    second = t.upsert(pa.table({"id": [2], "a": [2], "b": ["y"], "c": [2.5]}), options=OFF)
    options = {"hoodie.keep.min.commits": "1", "hoodie.keep.max.commits": "2"}
    t.upsert(pa.table({"id": [3], "a": [3], "b": ["z"], "c": [3.5]}), options=OFF)
    assert t.archive(options=options) == [first, alter, second]
    t = pyhudi.open_table(t.path)
    assert t.read(as_of=first).to_pylist() == [{"id": 1, "a": 1, "b": "x"}]
    assert sorted(t.families_at(t.active_timeline().lookup(first).completion_time)) == ["one", "two"]
    assert _rows(t.read(as_of=second)) == [{"id": 1, "a": 1, "b": "x", "c": None}, {"id": 2, "a": 2, "b": "y", "c": 2.5}]
    assert sorted(t.column_families) == ["one", "three", "two"]


# ------------------------------------------------------------------------------ Hudi-written history
def _hudi_style_history(t: pyhudi.Table, rows: list[dict]) -> None:
    """A history folder as Apache Hudi 1.x writes it: two manifests (the version file names the
    second), an L1 and an L0 file, a leftover file and a newer unpublished manifest."""
    history = _history(t)
    os.makedirs(history, exist_ok=True)

    def lsm(name: str, part: list[dict]) -> dict:
        pq.write_table(pa.Table.from_pylist(part, schema=ARROW_SCHEMA), os.path.join(history, name),
                       compression="gzip")
        return {"fileName": name, "fileLen": os.path.getsize(os.path.join(history, name))}

    level1 = lsm(f"{rows[0]['instantTime']}_{rows[2]['instantTime']}_1.parquet", rows[:3])
    level0 = lsm(f"{rows[3]['instantTime']}_{rows[-1]['instantTime']}_0.parquet", rows[3:])
    lsm("00000000000001_00000000000002_0.parquet", rows[:1])  # not in any manifest: ignored

    def jackson(files: list[dict]) -> str:  # Jackson's default pretty printer
        entries = ", ".join('{\n    "fileName" : "%s",\n    "fileLen" : %d\n  }' % (f["fileName"], f["fileLen"])
                            for f in files)
        return '{\n  "files" : [ %s ]\n}' % entries

    open(os.path.join(history, "manifest_1"), "w").write(jackson([level1]))
    open(os.path.join(history, "manifest_2"), "w").write(jackson([level1, level0]))
    open(os.path.join(history, "manifest_3"), "w").write(jackson([level1]))  # a crashed writer's
    open(os.path.join(history, "_version_"), "w").write("2")


def test_history_written_by_apache_hudi_reads(tmp_path, capsys):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id")
    commit = CommitMetadata.from_write_stats([], operation_type="UPSERT", schema=None)
    plan = CompactionPlan(operations=[], extra_metadata={"k": "v"}, version=2, strategy=None,
                          preserve_hoodie_metadata=None, missing_schedule_partitions=None)
    rows = [
        {"instantTime": f"2025010100000{i}000", "completionTime": f"2025010100000{i}500",
         "action": action, "metadata": encode_instant_metadata(commit), "plan": None, "version": 1}
        for i, action in enumerate(["deltacommit", "deltacommit", "clean", "deltacommit", "commit"])
    ]
    rows[4]["plan"] = encode_instant_metadata(plan)
    _hudi_style_history(t, rows)
    history = load_archived(t.storage, ".hoodie/timeline/history")
    assert history.version == 2
    assert [(i.requested_time, str(i.action), i.completion_time) for i in t.archived_timeline()] == [
        (r["instantTime"], r["action"], r["completionTime"]) for r in rows]
    assert all(i.state is State.COMPLETED for i in history.instants)
    last = history.get(rows[4]["instantTime"])
    assert history.read_metadata(last).operation_type == "UPSERT"
    assert last.is_compaction and history.read_plan(last) == plan
    assert main(["timeline", t.path, "--archived", "--json"]) == 0
    listed = [r for r in json.loads(capsys.readouterr().out) if r["archived"]]  # (active ones follow)
    assert [(r["requested_time"], r["action"], r["state"], r["completion_time"]) for r in listed] == [
        (r["instantTime"], r["action"], "COMPLETED", r["completionTime"]) for r in rows]


def test_archived_compaction_keeps_its_plan_which_round_trips_through_avro(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2)
    _write(t, 3, options=OFF)
    compaction = t.schedule_compaction()
    plan = t.active_timeline().read_metadata(t.active_timeline().get(compaction))
    t.run_compaction(compaction)
    times = _write(t, 3, start=3, options=OFF)
    expected = _snapshot_reads(t)
    archived = t.archive(options={"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3"})
    assert compaction in archived and times[0] in archived
    history = t.active_timeline().archived()
    instant = history.get(compaction)
    assert (str(instant.action), instant.is_compaction) == ("commit", True)
    assert history.read_plan(instant) == plan and history.read_plan(instant).file_groups() == plan.file_groups()
    assert history.read_metadata(instant).operation_type == "COMPACT"
    assert _snapshot_reads(pyhudi.open_table(t.path)) == expected


def test_the_schema_after_archival_left_only_table_service_commits_active(tmp_path):
    """Found by the model test: archival moved the last write and the ALTER away, leaving only
    compaction commits active (which never change the schema): the schema is looked up in the
    archive, not taken from the table's creation."""
    import pyarrow as pa

    import pyhudi

    schema = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.float64()), ("c", pa.int64())])
    t = pyhudi.create_table(str(tmp_path / "s"), schema, "id", num_buckets=1, column_families={"fa": "a", "fc": "c"})
    t.upsert(pa.table({"id": [1], "a": [1.0], "c": [1]}))
    t.alter(unset_properties=["hoodie.colFamily.fc"])
    t.upsert(pa.table({"id": [2], "a": [2.0]}))
    for _ in range(3):
        t.compact(full=True)
        t.upsert(pa.table({"id": [3], "a": [3.0]}))
        t.compact()
    t.archive(options={"hoodie.keep.min.commits": "1", "hoodie.keep.max.commits": "2"})
    assert [str(i.action) for i in t.timeline if i.is_completed][-1] == "commit"
    fresh = pyhudi.open_table(t.path)
    assert fresh.schema.names == ["id", "a"]
    assert fresh.read().sort_by("id").to_pylist() == [{"id": 1, "a": 1.0}, {"id": 2, "a": 2.0}, {"id": 3, "a": 3.0}]


def test_a_custom_history_path_is_written_and_read(tmp_path):
    """``hoodie.timeline.history.path`` names the archive folder inside the timeline folder."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2,
                            options={"hoodie.timeline.history.path": "lsm"})
    _write(t, 40, options=OFF)
    expected = _snapshot_reads(t)
    archived = t.archive()
    assert len(archived) == 20
    custom = os.path.join(t.path, ".hoodie", "timeline", "lsm")
    assert sorted(n for n in os.listdir(custom) if n.startswith(("manifest_", "_version_"))) == ["_version_", "manifest_1"]
    assert not os.path.exists(_history(t))  # nothing in the default folder
    reopened = pyhudi.open_table(t.path)
    assert [i.requested_time for i in reopened.archived_timeline()] == archived
    assert _snapshot_reads(reopened) == expected


@pytest.mark.parametrize("path", ["../elsewhere", "/abs/history", "s3://bucket/history", "", "a/../b"])
def test_an_unsupported_history_path_is_refused_before_the_table_is_created(tmp_path, path):
    with pytest.raises(ConfigError, match="hoodie.timeline.history.path"):
        pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", options={"hoodie.timeline.history.path": path})
    assert not os.path.exists(tmp_path / "t" / ".hoodie" / "hoodie.properties")

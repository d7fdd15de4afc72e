"""Compaction (issue 12): RFC-80 family-level and full compaction, scheduled and executed as Hudi does.

Every test checks exact rows before and after, file names, timeline states and plan contents.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import ConcurrentWriteError, ConfigError, TimelineError
from pyhudi.storage.fs import Storage
from pyhudi.timeline import schemas
from pyhudi.timeline.metadata_plans import CompactionPlan
from pyhudi.write.client import WriteClient

PY = sys.executable
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.float64()), ("b", pa.string()), ("c", pa.int64()),
                    ("ts", pa.int64())])
FAMILIES = {"fa": "a,b", "fc": "c,ts;ts"}
FID = "00000000-0000-0000-0000-000000000000-0"


def family_table(tmp_path, name="t", **kw):
    return pyhudi.create_table(str(tmp_path / name), SCHEMA, "id", num_buckets=1, column_families=FAMILIES, **kw)


def rows(t, **kw):
    return t.read(**kw).sort_by("id").to_pylist()


def without_file_name(records):
    """Rows with meta values, but ``_hoodie_file_name`` (the file a record sits in) left out."""
    return [{k: v for k, v in r.items() if k != "_hoodie_file_name"} for r in records]


def data_files(t) -> list[str]:
    root = Path(t.path)
    return sorted(p.name for p in root.rglob("*") if p.is_file() and ".hoodie" not in p.relative_to(root).parts
                  and p.name != ".hoodie_partition_metadata")


def family_logs(t, family: str) -> list[str]:
    """The log files ``family`` reads: its own and the full-row logs (no suffix) of the first
    upsert, which wrote the new file group one full-row log (``hoodie.pyhudi.insert.full.row``)."""
    return sorted(n for n in data_files(t) if n.endswith(f"_{family}.log.1_0-1-0")
                  or (".log." in n and n.split(".log.")[0].count("_") == 1))


def seeded(tmp_path, **kw):
    t = family_table(tmp_path, **kw)
    i1 = t.upsert(pa.table({"id": [1, 2, 3], "a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"], "c": [10, 20, 30],
                            "ts": [1, 1, 1]}))
    i2 = t.upsert(pa.table({"id": [1, 4], "c": [11, 40], "ts": [2, 2]}))  # fc only (4 is a new row)
    i3 = t.upsert(pa.table({"id": [2], "a": [2.5]}))  # a partial fa write (b missing)
    i4 = t.delete(pa.table({"id": [3]}))
    completions = {i.requested_time: i.completion_time for i in t.timeline}
    return t, [completions[i] for i in (i1, i2, i3, i4)]  # as_of compares completion times


EXPECTED = [
    {"id": 1, "a": 1.0, "b": "x", "c": 11, "ts": 2},
    {"id": 2, "a": 2.5, "b": "y", "c": 20, "ts": 1},
    {"id": 4, "a": None, "b": None, "c": 40, "ts": 2},
]


# ------------------------------------------------------------------------------ family compaction
def test_compacting_one_family_writes_its_base_file_and_keeps_every_row_and_meta_value(tmp_path):
    t, instants = seeded(tmp_path)
    before = without_file_name(rows(t, with_meta=True))
    history = {i: rows(t, as_of=i) for i in instants}
    instant = t.schedule_compaction(families=["fc"])
    assert [(str(i.action), str(i.state)) for i in t.timeline][-1] == ("compaction", "REQUESTED")
    assert rows(t) == EXPECTED  # a pending compaction changes nothing
    assert t.run_compaction(instant) == instant
    last = t.timeline[-1]
    assert (last.requested_time, str(last.action), str(last.state)) == (instant, "commit", "COMPLETED")
    assert f"{FID}_0-0-0_{instant}_fc.parquet" in data_files(t)
    assert not any(n.endswith(f"{instant}_fa.parquet") for n in data_files(t))  # fa is not rewritten
    assert rows(t) == EXPECTED
    assert without_file_name(rows(t, with_meta=True)) == before  # commit times and seqnos preserved
    for i, expected in history.items():
        assert rows(t, as_of=i) == expected  # time travel across the compaction
    metadata = t.active_timeline().read_metadata(last)
    assert metadata.operation_type == "COMPACT" and metadata.compacted is True
    [stat] = metadata.write_stats()
    assert (stat.path, stat.num_writes, stat.prev_commit) == (f"{FID}_0-0-0_{instant}_fc.parquet", 3, "null")  # 3 was deleted
    # the fc slice is now the base alone; fa still merges its logs
    group = t.file_groups()[0]
    assert group.latest_slice("fc", True).log_files == []
    assert len(group.latest_slice("fa", True).log_files) == 3


def test_the_plan_is_hudis_avro_compaction_plan(tmp_path):
    t, _ = seeded(tmp_path)
    instant = t.schedule_compaction(families=["fa", "fc"])
    raw = (Path(t.path) / ".hoodie" / "timeline" / f"{instant}.compaction.requested").read_bytes()
    with open(Path(t.path) / ".hoodie" / "timeline" / f"{instant}.compaction.requested", "rb") as f:
        reader = fastavro.reader(f)
        assert reader.writer_schema["name"] == "org.apache.hudi.avro.model.HoodieCompactionPlan"
        [record] = list(reader)
    ops = sorted(record["operations"], key=lambda op: op["deltaFilePaths"][0])
    assert [op["fileId"] for op in ops] == [FID, FID]
    assert [op["dataFilePath"] for op in ops] == [None, None]  # log-only slices (NBCC writes logs)
    fa_logs, fc_logs = family_logs(t, "fa"), family_logs(t, "fc")
    assert fa_logs[0] == fc_logs[0] and "_fa" not in fa_logs[0]  # the first upsert's full-row log serves both
    assert sorted(op["deltaFilePaths"] for op in ops) == sorted([fa_logs, fc_logs])
    assert set(ops[0]["metrics"]) == {"TOTAL_IO_READ_MB", "TOTAL_IO_WRITE_MB", "TOTAL_IO_MB", "TOTAL_LOG_FILES_SIZE",
                                      "TOTAL_LOG_FILES"}
    assert record["extraMetadata"]["pyhudi.compaction.full"] == "false"
    assert sorted(record["extraMetadata"]["pyhudi.compaction.families"].split(",")) == ["fa", "fc"]
    plan = CompactionPlan.from_avro_bytes(raw)
    assert CompactionPlan.from_avro_bytes(plan.to_avro_bytes()) == plan
    assert schemas.COMPACTION_PLAN["name"] == "HoodieCompactionPlan"


def test_a_family_compaction_never_opens_another_familys_files(tmp_path, monkeypatch):
    from pyhudi.services import compaction

    t, _ = seeded(tmp_path)
    read = []
    original = compaction.read_file_slices

    def spy(context, slices, *args, **kwargs):  # every data file a compaction reads goes through here
        read.extend(f.name.name for s in slices for f in ([s.base_file] if s.base_file else []) + s.log_files)
        return original(context, slices, *args, **kwargs)

    monkeypatch.setattr(compaction, "read_file_slices", spy)
    t.compact(families="fc")
    assert read == family_logs(t, "fc")  # (the first upsert's full-row log, then fc's own)


def test_writes_during_a_pending_compaction_land_after_the_new_base(tmp_path):
    t, instants = seeded(tmp_path)
    history = {i: rows(t, as_of=i) for i in instants}
    instant = t.schedule_compaction(families=["fc"])
    during = t.upsert(pa.table({"id": [1, 2], "c": [12, 21], "ts": [5, 0]}))  # ts 0 loses to 2's ts 1
    expected = [dict(EXPECTED[0], c=12, ts=5), EXPECTED[1], EXPECTED[2]]
    assert rows(t) == expected  # the pending compaction's slices + the new log
    t.run_compaction(instant)
    assert rows(t) == expected
    group = t.file_groups()[0]
    fc = group.latest_slice("fc", True)
    assert fc.base_file.name.instant == instant and [lf.instant for lf in fc.log_files] == [during]
    assert {i: rows(t, as_of=i) for i in instants} == history
    assert history[instants[-1]] == EXPECTED


def test_a_family_without_log_files_is_not_compacted_and_nothing_to_do_is_none(tmp_path):
    t = family_table(tmp_path)
    t.bulk_insert(pa.table({"id": [1], "a": [1.0], "b": ["x"], "c": [1], "ts": [1]}))  # base files only
    assert t.schedule_compaction() is None
    assert [str(i.action) for i in t.timeline] == ["deltacommit"]
    t.upsert(pa.table({"id": [1], "a": [2.0]}))
    instant = t.compact()
    assert [n for n in data_files(t) if instant in n] == [f"{FID}_0-0-0_{instant}_fa.parquet"]
    assert t.compact() is None  # compacted slices have no log files left
    assert rows(t) == [{"id": 1, "a": 2.0, "b": "x", "c": 1, "ts": 1}]


def test_a_slice_whose_rows_were_all_deleted_compacts_to_an_empty_base(tmp_path):
    t = family_table(tmp_path)
    t.upsert(pa.table({"id": [1, 2], "a": [1.0, 2.0], "b": ["x", "y"], "c": [1, 2], "ts": [1, 1]}))
    t.delete(pa.table({"id": [1, 2]}))
    instant = t.compact(families=["fa"])
    assert [s.num_writes for s in t.active_timeline().read_metadata(t.timeline[-1]).write_stats()] == [0]
    assert rows(t) == []
    t.upsert(pa.table({"id": [3], "a": [3.0]}))
    assert rows(t) == [{"id": 3, "a": 3.0, "b": None, "c": None, "ts": None}]
    assert instant is not None


# ------------------------------------------------------------------------------ full compaction
def test_full_compaction_writes_one_full_row_base_file_and_later_writes_apply_on_top(tmp_path):
    t, instants = seeded(tmp_path)
    history = {i: rows(t, as_of=i) for i in instants}
    before = without_file_name(rows(t, with_meta=True))
    instant = t.compact(full=True)
    assert [n for n in data_files(t) if instant in n] == [f"{FID}_0-0-0_{instant}.parquet"]
    assert without_file_name(rows(t, with_meta=True)) == before
    assert rows(t) == EXPECTED
    group = t.file_groups()[0]
    for family in ("fa", "fc"):
        assert group.latest_slice(family, True).base_file.name.name == f"{FID}_0-0-0_{instant}.parquet"
    t.upsert(pa.table({"id": [4], "a": [4.0], "b": ["w"]}))
    t.upsert(pa.table({"id": [1], "c": [99], "ts": [0]}))  # loses on event time to ts 2
    assert rows(t) == [EXPECTED[0], EXPECTED[1], {"id": 4, "a": 4.0, "b": "w", "c": 40, "ts": 2}]
    assert t.compact(full=True) is not None
    assert rows(t) == [EXPECTED[0], EXPECTED[1], {"id": 4, "a": 4.0, "b": "w", "c": 40, "ts": 2}]
    assert t.compact(full=True) is None  # already one full base per group, no logs
    assert {i: rows(t, as_of=i) for i in instants} == history
    assert history[instants[-1]] == EXPECTED


def test_a_fully_compacted_one_family_table_reads_the_same_in_hudi_rs(tmp_path):
    import hudi

    t = pyhudi.create_table(str(tmp_path / "plain"), SCHEMA, "id", num_buckets=2, ordering_field="ts")
    t.upsert(pa.table({"id": [1, 2, 3], "a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"], "c": [1, 2, 3], "ts": [1, 1, 1]}))
    t.upsert(pa.table({"id": [2, 5], "a": [2.5, 5.0], "b": ["Y", "v"], "c": [2, 5], "ts": [2, 2]}))
    t.delete(pa.table({"id": [1]}))
    instant = t.compact()
    assert instant is not None
    assert sorted(n for n in data_files(t) if n.endswith(".parquet")) == sorted(
        f"0000000{b}-0000-0000-0000-000000000000-0_{b}-0-0_{instant}.parquet" for b in (0, 1)
        if any(n.startswith(f"0000000{b}") for n in data_files(t)))
    expected = rows(t)
    assert [r["id"] for r in expected] == [2, 3, 5]
    got = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(t.path).build().read()).sort_by("id")
    assert got.select(SCHEMA.names).to_pylist() == expected
    assert got.column("_hoodie_commit_time").to_pylist() == [r["_hoodie_commit_time"] for r in rows(t, with_meta=True)]


# ------------------------------------------------------------------------------ strategies and options
def test_strategies_choose_slices_as_hudis_do(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "s"), SCHEMA, "id", num_buckets=2)
    t.upsert(pa.table({"id": [0, 1], "a": [0.0, 1.0]}))
    for k in range(3):
        t.upsert(pa.table({"id": [1], "a": [float(k)]}))  # bucket of key 1 gets more log files
    counts = {g.file_id: len(g.latest_slice(None, False).log_files) for g in t.file_groups()}
    busy = max(counts, key=counts.get)
    num = {"hoodie.compaction.strategy": "LogFileNumBasedCompactionStrategy", "hoodie.compaction.logfile.num.threshold": 3}
    instant = t.schedule_compaction(options=num)
    plan = t.active_timeline().read_metadata(next(i for i in t.timeline if i.requested_time == instant))
    assert [op.file_id for op in plan.operations] == [busy]
    t.run_compaction(instant)
    size = {"hoodie.compaction.logfile.size.threshold": 10**9}
    assert t.schedule_compaction(options=size) is None
    bounded = {"hoodie.compaction.strategy": "org.apache.hudi.table.action.compact.strategy.BoundedIOCompactionStrategy",
               "hoodie.compaction.target.io": 0}
    assert t.schedule_compaction(options=bounded) is None
    with pytest.raises(ConfigError, match="unknown compaction strategy 'Fancy' for hoodie.compaction.strategy"):
        t.schedule_compaction(options={"hoodie.compaction.strategy": "Fancy"})


def test_bad_requests_are_refused_and_change_nothing(tmp_path):
    t, _ = seeded(tmp_path)
    before = sorted(os.listdir(Path(t.path) / ".hoodie" / "timeline"))
    with pytest.raises(ConfigError, match="unknown column family 'fz': the table's families are fa, fc"):
        t.schedule_compaction(families=["fz"])
    with pytest.raises(ConfigError, match="a full compaction merges every family"):
        t.schedule_compaction(families=["fa"], full=True)
    with pytest.raises(TimelineError, match="no pending compaction at 20200101000000000"):
        t.run_compaction("20200101000000000")
    assert sorted(os.listdir(Path(t.path) / ".hoodie" / "timeline")) == before
    cow = pyhudi.create_table(str(tmp_path / "cow"), SCHEMA, "id", table_type="COPY_ON_WRITE")
    with pytest.raises(ConfigError, match="compaction applies to MERGE_ON_READ tables"):
        cow.compact()


def test_inline_compaction_after_max_delta_commits(tmp_path):
    opts = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "3"}
    t = family_table(tmp_path)
    for k in range(3):
        t.upsert(pa.table({"id": [1], "a": [float(k)], "b": ["x"]}), options=opts)
    assert [str(i.action) for i in t.timeline] == ["deltacommit"] * 3 + ["commit"]
    for k in range(2):
        t.upsert(pa.table({"id": [1], "c": [k], "ts": [k]}), options=opts)
    assert [str(i.action) for i in t.timeline][-1] == "deltacommit"
    t.upsert(pa.table({"id": [1], "c": [7], "ts": [7]}), options=opts)
    assert [str(i.action) for i in t.timeline][-1] == "commit"
    assert rows(t) == [{"id": 1, "a": 2.0, "b": "x", "c": 7, "ts": 7}]


# ------------------------------------------------------------------------------ failures
def test_a_failed_compaction_is_undone_and_runs_again_from_its_plan(tmp_path, monkeypatch):
    from pyhudi.services import compaction

    t, _ = seeded(tmp_path)
    instant = t.schedule_compaction()
    plan_bytes = (Path(t.path) / ".hoodie" / "timeline" / f"{instant}.compaction.requested").read_bytes()
    original = compaction.write_base_file
    calls = []

    def failing(storage, relpath, *args, **kwargs):
        calls.append(relpath)
        out = original(storage, relpath, *args, **kwargs)
        if len(calls) == 2:
            raise OSError("disk full")
        return out

    monkeypatch.setattr(compaction, "write_base_file", failing)
    with pytest.raises(OSError, match="disk full"):
        t.run_compaction(instant)
    monkeypatch.setattr(compaction, "write_base_file", original)
    assert not any(instant in n for n in data_files(t))  # what it wrote is gone
    assert [(str(i.action), str(i.state)) for i in t.timeline][-1] == ("compaction", "REQUESTED")
    assert rows(t) == EXPECTED
    t.run_compaction(instant)
    assert (Path(t.path) / ".hoodie" / "timeline" / f"{instant}.compaction.requested").read_bytes() == plan_bytes
    assert sorted(n for n in data_files(t) if instant in n) == [f"{FID}_0-0-0_{instant}_fa.parquet",
                                                               f"{FID}_0-0-0_{instant}_fc.parquet"]
    assert rows(t) == EXPECTED


KILL_SCRIPT = """
import os, sys, pyhudi
from pyhudi.services import compaction
from pyhudi.timeline.timeline import Timeline
from pyhudi.write import commit

step = sys.argv[3]


def dying_after(owner, name, when):
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        if when == "before":
            os._exit(9)
        out = original(*args, **kwargs)
        os._exit(9)
    setattr(owner, name, wrapper)


if step == "before inflight":  # the plan is read, nothing moved yet
    dying_after(Timeline, "transition_to_inflight", "before")
elif step == "after inflight":  # inflight, no file written
    dying_after(Timeline, "transition_to_inflight", "after")
elif step == "after the first base file":
    dying_after(compaction, "write_base_file", "after")
elif step == "before completion":  # every file written
    dying_after(Timeline, "complete", "before")
elif step == "after completion":  # completed; markers and heartbeat left behind
    dying_after(commit, "delete_markers", "before")
pyhudi.open_table(sys.argv[1]).run_compaction(sys.argv[2])
"""

STEPS = ["before inflight", "after inflight", "after the first base file", "before completion", "after completion"]


@pytest.mark.parametrize("step", STEPS)
def test_a_compaction_killed_at_any_step_is_recovered_never_run_twice(tmp_path, step):
    t, _ = seeded(tmp_path)
    instant = t.schedule_compaction()
    proc = subprocess.run([PY, "-c", KILL_SCRIPT, t.path, instant, step], capture_output=True, text=True)
    assert proc.returncode == 9, proc.stderr
    state = {"before inflight": "REQUESTED", "after completion": "COMPLETED"}.get(step, "INFLIGHT")
    last = [i for i in t.timeline if i.requested_time == instant][0]
    assert str(last.state) == state
    written = {"after the first base file": 1, "before completion": 2, "after completion": 2}.get(step, 0)
    assert len([n for n in data_files(t) if instant in n]) == written
    assert rows(t) == EXPECTED  # half done is invisible; completed is the same rows
    if state != "COMPLETED":
        t.run_compaction(instant)  # its executor died on this host: rolled back and re-executed
    else:
        with pytest.raises(TimelineError, match="it completed already"):
            t.run_compaction(instant)
    assert sorted(n for n in data_files(t) if instant in n) == [f"{FID}_0-0-0_{instant}_fa.parquet",
                                                               f"{FID}_0-0-0_{instant}_fc.parquet"]
    assert rows(t) == EXPECTED
    assert [(str(i.action), str(i.state)) for i in t.timeline if i.requested_time == instant] == [
        ("commit", "COMPLETED")]
    t.upsert(pa.table({"id": [9], "a": [9.0]}))  # the next write goes ahead; nothing is left pending
    assert all(i.is_completed for i in t.timeline)


def test_an_inflight_compaction_with_a_live_executor_is_not_run_twice(tmp_path):
    from pyhudi.timeline.heartbeat import Heartbeat

    t, _ = seeded(tmp_path)
    instant = t.schedule_compaction()
    timeline = t.active_timeline()
    timeline.transition_to_inflight(timeline.get(instant))
    beat = Heartbeat(t.storage, instant, 60_000).start()  # another executor, alive
    try:
        with pytest.raises(ConcurrentWriteError, match=f"compaction {instant} is being executed by another live"):
            t.run_compaction(instant)
    finally:
        beat.stop()
    assert rows(t) == EXPECTED


def test_compaction_never_conflicts_with_writers_under_any_mode(tmp_path):
    """A compaction commit between a write's begin and its commit is no conflict (completion-time
    slicing puts the write's log after the new base) — also on single-writer and OCC tables."""
    for mode in ("SINGLE_WRITER", "OPTIMISTIC_CONCURRENCY_CONTROL"):
        t = pyhudi.create_table(str(tmp_path / mode), SCHEMA, "id", options={"hoodie.write.concurrency.mode": mode})
        t.upsert(pa.table({"id": [1, 2], "a": [1.0, 2.0]}))
        t.upsert(pa.table({"id": [1], "a": [1.5]}))
        client = WriteClient(t)
        txn = client.begin("upsert")
        statuses = txn.write_rows(pa.table({"id": [2], "a": [2.5]}))
        assert t.compact() is not None  # a table service (in single-writer mode it runs between writes)
        client.commit(txn, statuses)
        assert [(r["id"], r["a"]) for r in rows(t)] == [(1, 1.5), (2, 2.5)]


# ------------------------------------------------------------------------------ faces: CLI, SQL, Spark
def test_cli_schedules_runs_and_dry_runs_compactions(tmp_path, capsys):
    import json

    from pyhudi.cli import main

    t, _ = seeded(tmp_path)
    timeline_before = [str(i) for i in t.timeline]
    assert main(["compact", t.path, "--dry-run", "--families", "fc", "--json"]) == 0
    [op] = json.loads(capsys.readouterr().out)["plan"]
    assert (op["family"], op["file_id"], op["base_file"]) == ("fc", FID, None)
    assert op["log_files"] == family_logs(t, "fc")
    assert [str(i) for i in t.timeline] == timeline_before  # a dry run writes nothing
    assert main(["compact", t.path, "--schedule", "--json"]) == 0
    scheduled = json.loads(capsys.readouterr().out)
    assert scheduled["state"] == "REQUESTED"
    assert main(["compact", t.path, "--run", scheduled["compaction"]]) == 0
    assert capsys.readouterr().out.strip() == f"compaction {scheduled['compaction']} completed"
    assert main(["compact", t.path]) == 0
    assert capsys.readouterr().out.strip() == "nothing to compact"
    assert main(["compact", t.path, "--families", "nope"]) == 2
    assert "unknown column family 'nope'" in capsys.readouterr().err
    assert rows(t) == EXPECTED


def test_sql_call_run_compaction_schedules_and_runs(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from sql_fake import FakeBackend

    from pyhudi.spark.sql import SqlSession

    t, _ = seeded(tmp_path)
    session = SqlSession(FakeBackend(str(tmp_path / "warehouse")))
    [scheduled] = session.execute(f"CALL run_compaction(table => '{t.path}', op => 'schedule')").to_pylist()
    assert scheduled["state"] == "REQUESTED"
    ran = session.execute(f"CALL run_compaction(table => '{t.path}', op => 'run')").to_pylist()
    assert ran == [{"instant": scheduled["instant"], "state": "COMPLETED"}]
    assert session.execute(f"CALL run_compaction(table => '{t.path}')").to_pylist() == []  # nothing left
    assert rows(t) == EXPECTED


@pytest.mark.spark
def test_spark_runs_a_plan_as_the_local_engine_does(tmp_path, spark):
    local, _ = seeded(tmp_path / "local")
    remote, _ = seeded(tmp_path / "spark")
    a = local.compact()
    b = remote.compact(engine="spark")
    assert rows(remote) == rows(local) == EXPECTED
    assert [n.replace(b, "T") for n in data_files(remote) if b in n] == [
        n.replace(a, "T") for n in data_files(local) if a in n]

    def by_write(t):  # meta values with each instant replaced by its position on the timeline
        index = {i.requested_time: str(k) for k, i in enumerate(t.timeline)}
        out = []
        for r in without_file_name(rows(t, with_meta=True)):
            time = r["_hoodie_commit_time"]
            out.append(dict(r, _hoodie_commit_time=index[time],
                            _hoodie_commit_seqno=r["_hoodie_commit_seqno"].replace(time, index[time])))
        return out

    assert by_write(remote) == by_write(local)


# ------------------------------------------------------------------------------ the file-system view for services
def test_the_view_gives_services_every_slice_and_the_groups_pending_services_hold(tmp_path):
    from pyhudi.fsview.view import FileSystemView

    t, _ = seeded(tmp_path)
    first = t.compact(families=["fc"])
    after = t.upsert(pa.table({"id": [1], "c": [5], "ts": [9]}))
    pending = t.schedule_compaction(families=["fc"])
    timeline = t.active_timeline()
    view = FileSystemView(t.storage, timeline, 0)
    assert view.pending_compaction_file_groups() == {("", FID): pending}
    assert view.pending_clustering_file_groups() == {}
    (group,) = view.file_groups()
    slices = group.all_slices("fc", True)
    assert [s.base_instant for s in slices] == [None, first]
    assert [lf.instant for lf in slices[0].log_files] == [n.split("_")[1].split(".")[0] for n in family_logs(t, "fc")
                                                          if n.split("_")[1] < first]
    assert [lf.instant for lf in slices[1].log_files] == [after]
    assert slices[-1].log_files == group.latest_slice("fc", True).log_files
    # a second schedule leaves the group of the pending compaction alone
    assert t.schedule_compaction(families=["fc"]) is None


def test_inline_compaction_time_elapsed_triggers(tmp_path):
    def actions(t):
        return [str(i.action) for i in t.timeline]

    elapsed = {"hoodie.compact.inline": "true", "hoodie.compact.inline.trigger.strategy": "TIME_ELAPSED",
               "hoodie.compact.inline.max.delta.seconds": "0"}
    t = family_table(tmp_path, "time")
    t.upsert(pa.table({"id": [1], "a": [1.0]}), options=elapsed)
    assert actions(t) == ["deltacommit", "commit"]  # 0 s since the first delta commit: due at once
    both = {"hoodie.compact.inline": "true", "hoodie.compact.inline.trigger.strategy": "NUM_AND_TIME",
            "hoodie.compact.inline.max.delta.commits": "2", "hoodie.compact.inline.max.delta.seconds": "3600"}
    t2 = family_table(tmp_path, "both")
    for k in range(3):
        t2.upsert(pa.table({"id": [1], "a": [float(k)]}), options=both)
    assert actions(t2) == ["deltacommit"] * 3  # enough commits, not enough time
    either = dict(both, **{"hoodie.compact.inline.trigger.strategy": "NUM_OR_TIME"})
    t2.upsert(pa.table({"id": [1], "a": [9.0]}), options=either)
    assert actions(t2) == ["deltacommit"] * 4 + ["commit"]
    assert rows(t2) == [{"id": 1, "a": 9.0, "b": None, "c": None, "ts": None}]


def test_a_family_added_after_a_full_compaction_does_not_read_the_full_row_base_file(tmp_path):
    """The full-row base file holds no record of a family added later: rows deleted before, or
    kept alive only by families dropped since, do not come back through the new family."""
    t = family_table(tmp_path)
    t.upsert(pa.table({"id": [1, 2], "a": [1.0, 2.0], "b": ["x", "y"]}))  # fa only
    t.compact(full=True)
    t.delete(pa.table({"id": [2]}))
    t.alter({"hoodie.colFamily.fd": "d"}, new_columns={"d": pa.string()})
    assert rows(t) == [{"id": 1, "a": 1.0, "b": "x", "c": None, "ts": None, "d": None}]
    t.upsert(pa.table({"id": [3], "d": ["new"]}))
    t.alter(unset_properties=["hoodie.colFamily.fa", "hoodie.colFamily.fc"])
    assert rows(t) == [{"id": 3, "d": "new"}]  # row 1 lived only in fa (and the full-row file)
    assert t.compact(full=True) is not None
    assert rows(t) == [{"id": 3, "d": "new"}]


def test_a_pending_compaction_of_a_file_group_replaced_meanwhile_skips_it(tmp_path):
    """Found by the model test: an insert overwrite replaced (and a clean deleted) the file group a
    pending compaction planned; the run skips it instead of failing on its missing files."""
    t = pyhudi.create_table(str(tmp_path / "o"), SCHEMA, "id", partition_fields="b")
    t.upsert(pa.table({"id": [1, 2], "a": [1.0, 2.0], "b": ["x", "x"]}))
    t.upsert(pa.table({"id": [1], "a": [1.5], "b": ["x"]}))
    instant = t.schedule_compaction()
    t.insert_overwrite(pa.table({"id": [3], "a": [3.0], "b": ["x"]}))
    t.clean(options={"hoodie.cleaner.commits.retained": "1"})
    assert t.run_compaction(instant) == instant
    assert [(r["id"], r["a"]) for r in rows(t)] == [(3, 3.0)]
    assert not any(instant in n for n in data_files(t))

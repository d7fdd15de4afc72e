"""Timeline loading (every fixture table), views, transitions, and instant-time generation."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from pyhudi.errors import TimelineError
from pyhudi.storage.fs import Storage
from pyhudi.timeline.instant import (
    Action,
    Instant,
    State,
    format_instant_time_ms,
    is_valid_instant_time,
    parse_instant_time,
)
from pyhudi.timeline.timegen import InstantTimeGenerator
from pyhudi.timeline.timeline import Timeline

# zip (relative to the fixtures dir) -> (layout, completed instants per action), from INDEX.md
FIXTURE_ACTIONS = {
    "quickstart_trips_table/mor/avro/table_corrupt_tail_block.zip": (2, {"deltacommit": 3}),
    "quickstart_trips_table/mor/avro/table_delete_ord_long.zip": (2, {"deltacommit": 2}),
    "quickstart_trips_table/mor/avro/table_delete_ord_string.zip": (2, {"deltacommit": 2}),
    "quickstart_trips_table/mor/avro/table_event_time_stale.zip": (2, {"deltacommit": 5}),
    "quickstart_trips_table/mor/avro/table_log_only.zip": (2, {"deltacommit": 3}),
    "quickstart_trips_table/mor/avro/table_parquet_log_block.zip": (2, {"deltacommit": 4}),
    "quickstart_trips_table/mor/avro/table_partial_update.zip": (2, {"deltacommit": 2}),
    "quickstart_trips_table/mor/avro/table_uncommitted_log_v9.zip": (2, {"deltacommit": 2}),
    "quickstart_trips_table/mor/avro/v8_mor_boundary_windows.zip": (2, {"deltacommit": 4}),
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip": (2, {"commit": 1, "deltacommit": 6, "indexing": 1}),
    "quickstart_trips_table/mor/avro/v9_mor_nonpart_3commits.zip": (2, {"deltacommit": 3}),
    "sample_table/cow/v6_nonpartitioned.zip": (1, {"commit": 2}),
    "sample_table/cow/v8_empty.zip": (2, {}),
    "sample_table/cow/v8_nonpartitioned.zip": (2, {"commit": 2}),
    "sample_table/cow/v8_simplekeygen_nonhivestyle.zip": (2, {"commit": 2}),
    "sample_table/cow/v9_timebasedkeygen_epochmillis.zip": (2, {"commit": 4}),  # (INDEX.md says 3: four completed)
    "sample_table/cow/v9_txns_simple_nometa.zip": (2, {"commit": 10, "replacecommit": 2}),
    "sample_table/mor/avro/v9_nonpartitioned_rollback.zip": (2, {"deltacommit": 2, "rollback": 1}),
    "sample_table/mor/avro/v9_txns_simple_nometa.zip": (2, {"commit": 1, "deltacommit": 10, "replacecommit": 2}),
    "sample_table/mor/parquet/v6_nonpartitioned.zip": (1, {"deltacommit": 2}),
    "sample_table/mor/parquet/v6_nonpartitioned_rollback.zip": (1, {"deltacommit": 2, "rollback": 1}),
}
PENDING = {"quickstart_trips_table/mor/avro/table_uncommitted_log_v9.zip": [("20260815174515144", "deltacommit")]}


def _open_fixture(unzip_fixture, name: str) -> tuple[Path, Timeline]:
    table = unzip_fixture(name)
    layout = FIXTURE_ACTIONS[name][0]
    timeline_dir = ".hoodie/timeline" if layout == 2 else ".hoodie"
    return table, Timeline(Storage(str(table)), timeline_dir=timeline_dir, layout_version=layout).load()


def test_every_fixture_is_listed(fixtures_dir):
    assert sorted(str(p.relative_to(fixtures_dir)) for p in fixtures_dir.glob("**/*.zip")) == sorted(FIXTURE_ACTIONS)


@pytest.mark.parametrize("name", sorted(FIXTURE_ACTIONS))
def test_fixture_timeline_counts(unzip_fixture, name):
    _, timeline = _open_fixture(unzip_fixture, name)
    expected = FIXTURE_ACTIONS[name][1]
    assert dict(Counter(i.action.value for i in timeline.completed())) == expected
    assert [(i.requested_time, i.action.value) for i in timeline.pending()] == PENDING.get(name, [])
    assert timeline.instants == sorted(timeline.instants)
    for inst in timeline.completed():
        assert inst.completion_time is not None and is_valid_instant_time(inst.completion_time)
        assert timeline.read_bytes(inst) is not None


def test_uncommitted_instant_is_inflight(unzip_fixture):
    _, tl = _open_fixture(unzip_fixture, "quickstart_trips_table/mor/avro/table_uncommitted_log_v9.zip")
    assert tl.get("20260815174515144") == Instant("20260815174515144", "deltacommit", "INFLIGHT")
    assert [i.requested_time for i in tl.commits_timeline()] == ["20260815174513688", "20260815174516261"]
    assert len(tl.commits_timeline(completed_only=False)) == 3


def test_completed_compaction_keeps_commit_action_and_knows_its_origin(unzip_fixture):
    _, tl = _open_fixture(unzip_fixture, "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip")
    compaction = tl.get("20251220210129235")
    assert compaction == Instant("20251220210129235", "commit", "COMPLETED", "20251220210129883")
    assert compaction.pending_action is Action.COMPACTION and compaction.is_compaction
    assert tl.get("20251220210108078").completion_time == "20251220210109593"
    indexing = tl.get("20251220210117766")
    assert indexing.action is Action.INDEXING and indexing.completion_time == "20251220210118628"
    # indexing does not write data files
    assert [i.action.value for i in tl.commits_timeline()].count("indexing") == 0
    assert len(tl.commits_timeline()) == 7
    assert tl.last_completed().requested_time == "20251220210130911"
    assert tl.filter(actions="commit") == [compaction]
    assert tl.filter(actions=["compaction"]) == []


def test_completed_clustering_is_a_replacecommit(unzip_fixture):
    _, tl = _open_fixture(unzip_fixture, "sample_table/cow/v9_txns_simple_nometa.zip")
    clustering = tl.get("20260307135709297")
    assert clustering.action is Action.REPLACECOMMIT and clustering.completion_time == "20260307135709818"
    assert clustering.is_clustering
    overwrite = tl.get("20260307135707243")
    assert overwrite.action is Action.REPLACECOMMIT and not overwrite.is_clustering
    assert tl.read_bytes(clustering.as_requested())  # the clustering plan is still readable


def test_completed_before_is_by_completion_time(unzip_fixture):
    _, tl = _open_fixture(unzip_fixture, "sample_table/cow/v8_nonpartitioned.zip")
    first, second = tl.completed()
    assert (first.requested_time, first.completion_time) == ("20250713010535797", "20250713010536200")
    assert (second.requested_time, second.completion_time) == ("20250713010536861", "20250713010537206")
    assert tl.completed_before("20250713010536199") == []
    assert tl.completed_before("20250713010536200") == [first]
    assert tl.completed_before("20250713010536861") == [first]  # requested but not yet completed then
    assert tl.completed_before("20250713010537206") == [first, second]
    assert tl.completion_times() == {"20250713010535797": "20250713010536200", "20250713010536861": "20250713010537206"}


def test_layout1_completion_time_comes_from_mtime(unzip_fixture):
    table, _ = _open_fixture(unzip_fixture, "sample_table/cow/v6_nonpartitioned.zip")
    completed_file = table / ".hoodie" / "20240418173551906.commit"
    mtime = datetime(2024, 4, 18, 17, 35, 53, 250000, tzinfo=timezone.utc).timestamp()
    os.utime(completed_file, (mtime, mtime))
    tl = Timeline(Storage(str(table)), ".hoodie", layout_version=1).load()
    inst = tl.get("20240418173551906")
    assert inst.completion_time == "20240418173553250"
    assert tl.file_name_of(inst) == "20240418173551906.commit"
    assert tl.read_bytes(inst).startswith(b"{")  # layout-1 commit metadata is JSON
    assert [i.requested_time for i in tl.completed()] == ["20240418173550988", "20240418173551906"]
    with pytest.raises(TimelineError, match="writing layout 1 timelines is not supported"):
        tl.create_requested("commit")


def test_loading_ignores_non_instant_files(tmp_path):
    tdir = tmp_path / ".hoodie" / "timeline"
    (tdir / "history").mkdir(parents=True)
    (tdir / "history" / "20240101000000000_20240101000000001_0.parquet").write_bytes(b"x")
    for name in [
        "20240101000000000.commit.requested",
        "20240101000000000.inflight",
        "20240101000000000_20240101000000005.commit",
        ".20240101000000000_20240101000000005.commit.crc",
        "20240101000000000.commit.requested.crc",
        ".20240101000000009.deltacommit.requested.0a1b.tmp",
        "20240101000000009.deltacommit.requested.tmp",
        "hoodie.properties",
        "README",
    ]:
        (tdir / name).write_bytes(b"")
    tl = Timeline(Storage(str(tmp_path))).load()
    assert tl.instants == [Instant("20240101000000000", "commit", "COMPLETED", "20240101000000005")]


def test_read_metadata_decodes_the_file_for_the_state(unzip_fixture):
    _, tl = _open_fixture(unzip_fixture, "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip")
    compaction = tl.get("20251220210129235")
    assert type(tl.read_metadata(compaction)).__name__ == "CommitMetadata"
    assert type(tl.read_metadata(compaction.as_requested())).__name__ == "CompactionPlan"
    assert tl.read_bytes(compaction).startswith(b"Obj\x01")  # layout 2: Avro container files


# --------------------------------------------------------------------------- transitions
@pytest.fixture
def timeline(tmp_path):
    return Timeline(Storage(str(tmp_path))).load()


def _files(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / ".hoodie" / "timeline").iterdir())


@pytest.mark.parametrize(
    "action, requested, inflight, completed",
    [
        ("deltacommit", "{t}.deltacommit.requested", "{t}.deltacommit.inflight", "{t}_{c}.deltacommit"),
        ("commit", "{t}.commit.requested", "{t}.inflight", "{t}_{c}.commit"),
        ("compaction", "{t}.compaction.requested", "{t}.compaction.inflight", "{t}_{c}.commit"),
        ("logcompaction", "{t}.logcompaction.requested", "{t}.logcompaction.inflight", "{t}_{c}.deltacommit"),
        ("clustering", "{t}.clustering.requested", "{t}.clustering.inflight", "{t}_{c}.replacecommit"),
        ("replacecommit", "{t}.replacecommit.requested", "{t}.replacecommit.inflight", "{t}_{c}.replacecommit"),
        ("clean", "{t}.clean.requested", "{t}.clean.inflight", "{t}_{c}.clean"),
        ("rollback", "{t}.rollback.requested", "{t}.rollback.inflight", "{t}_{c}.rollback"),
    ],
)
def test_transitions_create_exactly_the_expected_files(tmp_path, timeline, action, requested, inflight, completed):
    req = timeline.create_requested(action, content=b"plan")
    t = req.requested_time
    assert is_valid_instant_time(t) and len(t) == 17
    assert _files(tmp_path) == [requested.format(t=t)]
    infl = timeline.transition_to_inflight(req, b"profile")
    assert infl == Instant(t, action, "INFLIGHT")
    assert _files(tmp_path) == sorted([requested.format(t=t), inflight.format(t=t)])
    done = timeline.complete(infl, b"metadata")
    c = done.completion_time
    assert c > t and is_valid_instant_time(c)
    assert done.state is State.COMPLETED and done.origin_action is Action(action)
    names = {requested.format(t=t), inflight.format(t=t), completed.format(t=t, c=c)}
    assert set(_files(tmp_path)) == names
    assert (tmp_path / ".hoodie" / "timeline" / completed.format(t=t, c=c)).read_bytes() == b"metadata"
    assert (tmp_path / ".hoodie" / "timeline" / requested.format(t=t)).read_bytes() == b"plan"
    # a fresh load sees the same instant, with its origin
    fresh = Timeline(Storage(str(tmp_path))).load()
    assert fresh.instants == [done]
    assert fresh.instants[0].origin_action is Action(action)
    assert fresh.read_bytes(done) == b"metadata"
    assert fresh.read_bytes(done.as_requested()) == b"plan"


def test_invalid_transitions_are_refused(tmp_path, timeline):
    req = timeline.create_requested("deltacommit", requested_time="20240101000000000")
    with pytest.raises(TimelineError, match="20240101000000000.*not INFLIGHT"):
        timeline.complete(req, b"")
    with pytest.raises(TimelineError, match="20240101000000000.*already exists"):
        timeline.create_requested("deltacommit", requested_time="20240101000000000")
    infl = timeline.transition_to_inflight(req)
    with pytest.raises(TimelineError, match="20240101000000000"):
        timeline.transition_to_inflight(req)
    with pytest.raises(TimelineError, match="20240101000000000.*not REQUESTED"):
        timeline.transition_to_inflight(infl)
    done = timeline.complete(infl, b"x")
    with pytest.raises(TimelineError, match="20240101000000000.*already completed"):
        timeline.complete(infl, b"x")
    with pytest.raises(TimelineError, match="20240101000000000.*not INFLIGHT"):
        timeline.complete(done, b"x")
    with pytest.raises(TimelineError, match="cannot delete completed instant .*20240101000000000"):
        timeline.delete_pending(done)
    with pytest.raises(TimelineError, match="cannot revert completed"):
        timeline.revert_to_requested(done)
    with pytest.raises(TimelineError, match="invalid instant time"):
        timeline.create_requested("commit", requested_time="2024")
    with pytest.raises(TimelineError, match="unknown timeline action"):
        timeline.create_requested("merge")


def test_completing_twice_from_two_writers_fails_once(tmp_path):
    a = Timeline(Storage(str(tmp_path))).load()
    infl = a.transition_to_inflight(a.create_requested("deltacommit"))
    b = Timeline(Storage(str(tmp_path))).load()
    a.complete(infl, b"a")
    with pytest.raises(TimelineError, match=f"{infl.requested_time}.*already completed"):
        b.complete(infl, b"b")
    assert len([n for n in _files(tmp_path) if "_" in n]) == 1


def test_delete_pending_removes_requested_and_inflight(tmp_path, timeline):
    keep = timeline.transition_to_inflight(timeline.create_requested("deltacommit"))
    doomed = timeline.transition_to_inflight(timeline.create_requested("commit"))
    timeline.delete_pending(doomed)
    assert _files(tmp_path) == sorted([keep.file_name(), keep.as_requested().file_name()])
    assert timeline.instants == [keep]
    with pytest.raises(TimelineError, match="not on the timeline"):
        timeline.complete(doomed, b"")
    requested_only = timeline.create_requested("clean")
    timeline.delete_pending(requested_only)
    assert timeline.get(requested_only.requested_time) is None


def test_revert_to_requested_then_retry(tmp_path, timeline):
    infl = timeline.transition_to_inflight(timeline.create_requested("compaction", content=b"plan"))
    req = timeline.revert_to_requested(infl)
    assert req == Instant(infl.requested_time, "compaction", "REQUESTED")
    assert _files(tmp_path) == [f"{infl.requested_time}.compaction.requested"]
    with pytest.raises(TimelineError, match="not INFLIGHT"):
        timeline.revert_to_requested(infl)
    done = timeline.complete(timeline.transition_to_inflight(req), b"m")
    assert done.action is Action.COMMIT and done.is_compaction


def test_views_after_writes(tmp_path, timeline):
    first = timeline.complete(timeline.transition_to_inflight(timeline.create_requested("deltacommit")), b"1")
    pending = timeline.transition_to_inflight(timeline.create_requested("compaction"))
    second = timeline.complete(timeline.transition_to_inflight(timeline.create_requested("deltacommit")), b"2")
    clean = timeline.complete(timeline.transition_to_inflight(timeline.create_requested("clean")), b"3")
    assert timeline.completed() == [first, second, clean]
    assert timeline.pending() == [pending]
    assert timeline.commits_timeline() == [first, second]
    assert timeline.commits_timeline(completed_only=False) == [first, pending, second]
    assert timeline.last_completed() == clean
    assert timeline.filter(actions=["deltacommit"], states=["COMPLETED"]) == [first, second]
    assert timeline.filter(states=State.INFLIGHT) == [pending]
    assert timeline.completed_before(second.completion_time) == [first, second]
    assert timeline.latest_time() == clean.completion_time
    assert first.requested_time < pending.requested_time < second.requested_time < clean.requested_time
    assert first.completion_time < second.completion_time < clean.completion_time


# --------------------------------------------------------------------------- time generation
def _frozen_clock(moment: datetime):
    return lambda: moment


def test_generator_steps_past_a_frozen_clock(tmp_path):
    storage = Storage(str(tmp_path))
    moment = datetime(2030, 1, 1, 0, 0, 0, 999000, tzinfo=timezone.utc)
    gen = InstantTimeGenerator(storage, clock=_frozen_clock(moment))
    times = [gen.next_time() for _ in range(5)]
    assert times[0] >= "20300101000000999"
    assert times == sorted(set(times)) and len(times) == 5
    assert storage.read(".hoodie/.aux/.instant_time").decode() == times[-1]
    assert not list((tmp_path / ".hoodie" / ".aux").glob("*.tmp"))


def test_generator_respects_persisted_time_and_floor(tmp_path):
    storage = Storage(str(tmp_path))
    storage.write(".hoodie/.aux/.instant_time", b"29991231235959998")  # e.g. another host ahead of us
    gen = InstantTimeGenerator(storage)
    assert gen.next_time() == "29991231235959999"
    assert gen.next_time() == "30000101000000000"
    assert gen.next_time(floor="30000101000000005") == "30000101000000006"
    assert gen.next_time(floor="30000101000000005000") == "30000101000000007"  # longer times trimmed


def test_generator_uses_the_table_timezone(tmp_path):
    moment = datetime(2024, 7, 1, 0, 0, 0, tzinfo=timezone.utc)
    gen = InstantTimeGenerator(Storage(str(tmp_path)), timezone="America/New_York", clock=_frozen_clock(moment))
    assert gen.next_time().startswith("20240630200000")
    local = InstantTimeGenerator(Storage(str(tmp_path / "l")), timezone="LOCAL")
    issued = parse_instant_time(local.next_time(), "LOCAL")
    assert abs((issued - datetime.now(timezone.utc)).total_seconds()) < 5
    now_local = format_instant_time_ms(int(datetime.now(timezone.utc).timestamp() * 1000), "LOCAL")
    assert local.next_time()[:8] in (now_local[:8], issued.astimezone().strftime("%Y%m%d"))


def test_generator_is_monotonic_across_a_dst_fall_back(tmp_path):
    # 01:30 EDT and then 01:10 EST: the wall clock goes back, issued times must not
    tz = "America/New_York"
    first = datetime(2024, 11, 3, 5, 30, tzinfo=timezone.utc)  # 01:30 EDT
    clock = [first]
    gen = InstantTimeGenerator(Storage(str(tmp_path)), timezone=tz, clock=lambda: clock[0])
    a = gen.next_time()
    clock[0] = first + timedelta(minutes=40)  # 01:10 EST
    b = gen.next_time()
    assert a == "20241103013000000" and b > a


_TIMEGEN_WORKER = r"""
import os, sys, time
from pyhudi.storage.fs import Storage
from pyhudi.timeline.timegen import InstantTimeGenerator
base, n, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
gen = InstantTimeGenerator(Storage(base))
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.001)
print(" ".join(gen.next_time() for _ in range(n)), flush=True)
"""


def _run_workers(script: str, args: list[list[str]], go: Path) -> list[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    procs = [
        subprocess.Popen([sys.executable, "-c", script, *a], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
        for a in args
    ]
    for proc in procs:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    go.write_text("go")
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        outs.append(out)
    return outs


def test_generator_is_unique_and_monotonic_across_processes(tmp_path):
    go = tmp_path / "go"
    outs = _run_workers(_TIMEGEN_WORKER, [[str(tmp_path), "200", str(go)] for _ in range(4)], go)
    sequences = [out.split() for out in outs]
    assert [len(s) for s in sequences] == [200] * 4
    for seq in sequences:
        assert seq == sorted(seq) and len(set(seq)) == len(seq)
        assert all(is_valid_instant_time(t) and len(t) == 17 for t in seq)
    assert len({t for seq in sequences for t in seq}) == 800


_COMPLETE_WORKER = r"""
import os, sys, time
from pyhudi.storage.fs import Storage
from pyhudi.timeline.timeline import Timeline
base, n, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
tl = Timeline(Storage(base)).load()
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.001)
for i in range(n):
    inflight = tl.transition_to_inflight(tl.create_requested("deltacommit"))
    done = tl.complete(inflight, ("%d-%d" % (os.getpid(), i)).encode())
    print(done.requested_time, done.completion_time, flush=True)
"""


def test_concurrent_complete_from_processes(tmp_path):
    go = tmp_path / "go"
    outs = _run_workers(_COMPLETE_WORKER, [[str(tmp_path), "15", str(go)] for _ in range(4)], go)
    pairs = [tuple(line.split()) for out in outs for line in out.splitlines()]
    assert len(pairs) == 60
    assert all(c > t for t, c in pairs)
    all_times = [t for pair in pairs for t in pair]
    assert len(set(all_times)) == 120  # every requested and completion time is unique
    tl = Timeline(Storage(str(tmp_path))).load()
    assert len(tl.completed()) == 60 and tl.pending() == []
    assert sorted((i.requested_time, i.completion_time) for i in tl.completed()) == sorted(pairs)
    assert not (tmp_path / ".hoodie" / ".lock").exists()

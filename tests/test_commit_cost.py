"""What a commit's cheaper machinery must still do (issue 15 item 2): the files a commit leaves,
the timeline every handle sees, the heartbeat thread shared by writes, the instant-time state,
the lock's exclusive create, and the bench scenario that measures the fixed cost."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import AlreadyExistsError, LockError, TimelineError
from pyhudi.storage.fs import Storage
from pyhudi.timeline import heartbeat as hb
from pyhudi.timeline.instant import Action, State
from pyhudi.timeline.lock import FileLock
from pyhudi.timeline.timegen import DEFAULT_STATE_PATH, InstantTimeGenerator
from pyhudi.timeline.listing import _BUILT, _LISTED
from pyhudi.timeline.timeline import Timeline

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.float64())])
ROOT = pathlib.Path(__file__).resolve().parents[1]


def rows(ids, v=1.0) -> pa.Table:
    return pa.table({"id": list(ids), "v": [float(v)] * len(ids)}, schema=SCHEMA)


def table(tmp_path, name="t", **kwargs) -> pyhudi.Table:
    return pyhudi.create_table(str(tmp_path / name), SCHEMA, "id", num_buckets=2, **kwargs)


# ------------------------------------------------------------------------------ what a commit leaves
def test_an_upsert_leaves_its_three_instant_files_and_nothing_else(tmp_path):
    t = table(tmp_path)
    first = t.upsert(rows(range(10)))
    instant = t.upsert(rows(range(5), 2.0))
    timeline_dir = tmp_path / "t" / ".hoodie" / "timeline"
    mine = sorted(n for n in os.listdir(timeline_dir) if n.startswith(instant))
    done = t.active_timeline().get(instant)
    assert done.state is State.COMPLETED and done.action is Action.DELTACOMMIT
    assert mine == [f"{instant}.deltacommit.inflight", f"{instant}.deltacommit.requested",
                    f"{instant}_{done.completion_time}.deltacommit"]
    assert (timeline_dir / f"{instant}.deltacommit.requested").read_bytes() == b""  # (an upsert plans nothing)
    assert not [n for n in os.listdir(timeline_dir) if n.endswith(".tmp") or n.startswith(".")]
    hoodie = tmp_path / "t" / ".hoodie"
    assert not (hoodie / ".lock").exists()  # released
    assert os.listdir(hoodie / ".heartbeat") == []  # stopped and deleted
    assert not (hoodie / ".temp" / instant).exists() and not (hoodie / ".temp" / first).exists()  # markers
    # the instant-time state holds the last time issued: this commit's completion time, 17 digits
    assert (tmp_path / "t" / DEFAULT_STATE_PATH).read_bytes() == done.completion_time.encode()
    assert t.read().sort_by("id").column("v").to_pylist() == [2.0] * 5 + [1.0] * 5


def test_the_compaction_trigger_takes_no_instant_time(tmp_path):
    """Asking whether a compaction is due reads the clock: the last time issued stays the commit's."""
    t = table(tmp_path)
    instant = t.upsert(rows(range(4)), options={"hoodie.compact.inline": "true"})
    done = t.active_timeline().get(instant)
    assert (tmp_path / "t" / DEFAULT_STATE_PATH).read_bytes() == done.completion_time.encode()
    assert [i.action for i in t.timeline] == [Action.DELTACOMMIT]
    # ... and it still compacts when due (5 delta commits by default)
    for i in range(4):
        t.upsert(rows([i], 3.0), options={"hoodie.compact.inline": "true"})
    assert any(i.is_compaction for i in t.active_timeline().completed())
    assert t.read().sort_by("id").column("v").to_pylist() == [3.0, 3.0, 3.0, 3.0]


# ------------------------------------------------------------------------------ the shared timeline
def test_a_handle_sees_what_another_handle_committed(tmp_path):
    a = table(tmp_path)
    a.upsert(rows(range(3)))
    b = pyhudi.open_table(str(tmp_path / "t"))
    held = a.active_timeline()
    before = [i.requested_time for i in held.completed()]
    instant = b.upsert(rows([7], 5.0))
    assert [i.requested_time for i in a.active_timeline().completed()] == [*before, instant]
    assert [i.requested_time for i in held.completed()] == before  # a listing is a snapshot ...
    assert [i.requested_time for i in held.reload().completed()] == [*before, instant]  # ... until reloaded
    assert a.read().sort_by("id").column("id").to_pylist() == [0, 1, 2, 7]


def test_a_transition_through_one_timeline_does_not_change_another(tmp_path):
    t = table(tmp_path)
    t.upsert(rows(range(3)))
    one, two = t.active_timeline(), t.active_timeline()
    assert one.instants == two.instants  # (built once, shared)
    seen = list(one.instants)
    requested = two.create_requested(Action.CLEAN, two.new_instant_time())
    assert one.instants == seen and one.get(requested.requested_time) is None
    assert two.get(requested.requested_time).state is State.REQUESTED
    assert t.active_timeline().get(requested.requested_time) == requested
    two.delete_pending(requested)
    assert t.active_timeline().instants == seen


def test_a_timeline_built_from_the_memo_equals_one_built_afresh(tmp_path):
    t = table(tmp_path)
    for i in range(4):
        t.upsert(rows([i]))
    t.compact()
    memo = t.active_timeline()
    _BUILT.clear()
    _LISTED.clear()
    fresh = t.active_timeline()
    assert memo.instants == fresh.instants and memo.listing == fresh.listing
    assert [i.pending_action for i in memo.instants] == [i.pending_action for i in fresh.instants]
    assert [memo.file_name_of(i) for i in memo.instants] == [fresh.file_name_of(i) for i in fresh.instants]


def test_a_file_added_behind_the_timeline_is_seen_on_reload(tmp_path):
    """Other processes' transitions are files the next listing finds (the memo is per listing)."""
    t = table(tmp_path)
    t.upsert(rows([1]))
    timeline = t.active_timeline()
    stray = "20300101000000000.deltacommit.requested"
    (tmp_path / "t" / ".hoodie" / "timeline" / stray).write_bytes(b"")
    assert timeline.get("20300101000000000") is None
    found = timeline.reload().get("20300101000000000")
    assert found.state is State.REQUESTED and found.action is Action.DELTACOMMIT
    os.remove(tmp_path / "t" / ".hoodie" / "timeline" / stray)
    assert timeline.reload().get("20300101000000000") is None


# ------------------------------------------------------------------------------ heartbeats
def _beat_time(storage: Storage, instant: str) -> int:
    return int(storage.read(f"{hb.HEARTBEAT_DIR}/{instant}").decode().split("\n")[0])


def test_one_thread_beats_every_running_heartbeat_and_none_after_stop(tmp_path):
    storage = Storage(str(tmp_path))
    fast = hb.Heartbeat(storage, "20240101000000001", interval_ms=20).start()
    slow = hb.Heartbeat(storage, "20240101000000002", interval_ms=60_000).start()
    first_fast, first_slow = _beat_time(storage, fast.relpath[-17:]), _beat_time(storage, slow.relpath[-17:])
    time.sleep(0.3)
    assert _beat_time(storage, "20240101000000001") > first_fast  # beaten again
    assert _beat_time(storage, "20240101000000002") == first_slow  # not due yet
    assert [t.name for t in threading.enumerate()].count("pyhudi-heartbeats") == 1
    fast.stop()
    assert not storage.exists(fast.relpath)
    time.sleep(0.15)
    assert not storage.exists(fast.relpath)  # no beat came after the stop
    slow.stop(delete=False)
    assert storage.exists(slow.relpath) and _beat_time(storage, "20240101000000002") == first_slow
    assert [t.name for t in threading.enumerate()].count("pyhudi-heartbeats") == 1  # kept for the next


def test_untie_leaves_a_detached_beat(tmp_path):
    storage = Storage(str(tmp_path))
    beat = hb.Heartbeat(storage, "20240101000000003", interval_ms=20).start()
    beat.untie()
    assert beat.detached
    text = storage.read(beat.relpath).decode()
    assert f"timeout_ms={hb.DETACHED_TIMEOUT_MS}" in text and "owner=" not in text
    before = _beat_time(storage, "20240101000000003")
    time.sleep(0.1)
    assert _beat_time(storage, "20240101000000003") == before  # no longer beaten here


# ------------------------------------------------------------------------------ instant times and the lock
def test_instant_time_state_is_rewritten_in_place_and_trimmed(tmp_path):
    storage = Storage(str(tmp_path))
    storage.write(DEFAULT_STATE_PATH, b"20991231235959999\n")  # longer, and far ahead
    # (zones no other test uses: the process remembers its last time per zone)
    generator = InstantTimeGenerator(storage, timezone="Pacific/Kiritimati")
    t = generator.next_time()
    assert len(t) == 17 and t >= "21000101000000000"  # after the persisted time (this process may know later)
    assert storage.read(DEFAULT_STATE_PATH) == t.encode()  # exactly the 17 digits (the newline trimmed)
    later = generator.next_time()
    assert later > t and storage.read(DEFAULT_STATE_PATH) == later.encode()
    fresh = Storage(str(tmp_path / "other"))
    fresh.write(DEFAULT_STATE_PATH, b"29991231235959998")
    assert InstantTimeGenerator(fresh, timezone="Pacific/Chatham").next_time() == "29991231235959999"
    assert fresh.read(DEFAULT_STATE_PATH) == b"29991231235959999"


def test_a_lock_file_not_yet_written_counts_as_a_fresh_unknown_holder(tmp_path):
    storage = Storage(str(tmp_path))
    storage.makedirs(".hoodie")
    (tmp_path / ".hoodie" / ".lock").write_bytes(b"")  # (created, its holder not yet written)
    waiter = FileLock(storage, wait_timeout_s=0.2, retry_interval_s=0.01)
    with pytest.raises(LockError, match="held by an unreadable lock file"):
        waiter.acquire()
    assert (tmp_path / ".hoodie" / ".lock").exists()  # not broken: it is fresh
    os.remove(tmp_path / ".hoodie" / ".lock")
    waiter.acquire()
    holder = json.loads((tmp_path / ".hoodie" / ".lock").read_text())
    assert holder["pid"] == os.getpid() and holder["owner"] == waiter._owner_id
    other = FileLock(storage, wait_timeout_s=0.05, retry_interval_s=0.01)
    with pytest.raises(LockError, match=f"pid={os.getpid()}"):
        other.acquire()
    waiter.release()
    assert not (tmp_path / ".hoodie" / ".lock").exists()


def test_an_empty_file_is_created_exclusively(tmp_path):
    storage = Storage(str(tmp_path))
    storage.create_if_absent("a/empty", b"", durable=False)
    assert (tmp_path / "a" / "empty").read_bytes() == b""
    with pytest.raises(AlreadyExistsError, match="file already exists"):
        storage.create_if_absent("a/empty", b"")
    with pytest.raises(AlreadyExistsError, match="file already exists"):
        storage.create_if_absent("a/empty", b"x")
    assert os.listdir(tmp_path / "a") == ["empty"]  # no temp file left behind


# ------------------------------------------------------------------------------ the bench scenario
def test_the_commit_scenario_splits_a_commit_and_states_its_ratios(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run([sys.executable, "-m", "bench", "commit", "--tiny", "--instants", "25",
                           "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(next(p for p in tmp_path.iterdir() if p.suffix == ".json").read_text())
    assert report["command"] == f"commit --tiny --instants 25 --out {tmp_path}"
    target, growth = report["scenarios"]["commit"]["comparisons"]
    assert target["name"] == "commit fixed cost of a 1000-row upsert: young table / 5 ms target"
    assert list(target["variants"]) == ["fixed cost, young table (10 commits)", "target"]
    assert target["variants"]["target"]["wall"] == [0.005] and target["target"] == "<= 1.0"
    young = target["variants"]["fixed cost, young table (10 commits)"]
    assert len(young["wall"]) == 5 and all(0 < f for f in young["wall"])
    split = young["metrics"]
    for part in ("timeline listing ms", "instant files ms", "lock ms", "heartbeat ms", "markers ms",
                 "commit metadata ms", "clean check ms", "archival check ms", "data work ms", "whole upsert ms"):
        assert split[part] >= 0, part
    assert split["whole upsert ms"] > split["data work ms"] > 0
    assert growth["name"] == "commit fixed cost: after 25 instants / young table"
    old = next(iter(growth["variants"]))
    assert old.startswith("fixed cost, 25 instants (") and growth["target"] == "<= 1.3"
    assert set(growth["ratio"]) == {"wall", "cpu"}


def test_an_empty_lock_file_left_by_a_dead_holder_is_broken_after_the_grace_even_without_expiry(tmp_path):
    """A holder that dies between the exclusive create and its write leaves an empty file: with
    ``expiry_s=0`` (never break by age) it would block the table forever, so an EMPTY file older
    than ``EMPTY_LOCK_GRACE_S`` is stale; a written holder is still never broken by age."""
    from pyhudi.timeline.lock import EMPTY_LOCK_GRACE_S

    storage = Storage(str(tmp_path))
    storage.makedirs(".hoodie")
    lock_file = tmp_path / ".hoodie" / ".lock"
    lock_file.write_bytes(b"")
    waiter = FileLock(storage, wait_timeout_s=0.1, retry_interval_s=0.01, expiry_s=0)
    os.utime(lock_file, (time.time() - EMPTY_LOCK_GRACE_S / 2,) * 2)
    with pytest.raises(LockError, match="held by an unreadable lock file"):
        waiter.acquire()  # (younger than the grace: a holder may be about to write it)
    os.utime(lock_file, (time.time() - EMPTY_LOCK_GRACE_S - 5,) * 2)
    with waiter:
        assert waiter.broken_count == 1
        assert json.loads(lock_file.read_text())["owner"] == waiter._owner_id
    lock_file.write_bytes(b"not a holder record")  # (unreadable but not empty: only its age breaks it)
    os.utime(lock_file, (time.time() - 3600,) * 2)
    with pytest.raises(LockError, match="held by an unreadable lock file"):
        waiter.acquire()


def test_an_unexpected_error_in_one_heartbeat_does_not_stop_the_others(tmp_path, monkeypatch):
    storage = Storage(str(tmp_path))
    broken = hb.Heartbeat(storage, "20240101000000004", interval_ms=20)
    healthy = hb.Heartbeat(storage, "20240101000000005", interval_ms=20)

    def fail() -> None:
        raise RuntimeError("a store's unexpected error")

    broken.start()
    monkeypatch.setattr(broken, "_beat", fail)
    healthy.start()
    first = _beat_time(storage, "20240101000000005")
    time.sleep(0.3)
    assert _beat_time(storage, "20240101000000005") > first  # still beaten after the other's errors
    assert [t.name for t in threading.enumerate()].count("pyhudi-heartbeats") == 1
    broken.stop()
    healthy.stop()


def test_empty_pending_instant_files_are_names_of_the_tables_one_empty_file(tmp_path):
    """Locally an empty requested or inflight file is a hard link of ``.hoodie/.aux/.empty_instant``
    (no inode of its own); deleting one name leaves the others, a plan is a file of its own, and
    an existing name is refused as before."""
    t = table(tmp_path)
    first, instant = t.upsert(rows(range(3))), t.upsert(rows(range(2)))
    timeline_dir = tmp_path / "t" / ".hoodie" / "timeline"
    shared = tmp_path / "t" / ".hoodie" / ".aux" / ".empty_instant"
    names = [timeline_dir / f"{i}.deltacommit.{s}" for i in (first, instant) for s in ("requested", "inflight")]
    assert {os.stat(n).st_ino for n in names} == {os.stat(shared).st_ino}
    assert all(n.read_bytes() == b"" for n in [*names, shared])
    links = os.stat(shared).st_nlink
    assert links >= 5
    timeline = t.active_timeline()
    clean = timeline.create_requested(Action.CLEAN, timeline.new_instant_time(), content=b"plan")
    moved = timeline.transition_to_inflight(clean)
    plan, started = (timeline_dir / f"{clean.requested_time}.clean.{s}" for s in ("requested", "inflight"))
    assert os.stat(plan).st_ino != os.stat(shared).st_ino and plan.read_bytes() == b"plan"
    assert os.stat(started).st_ino == os.stat(shared).st_ino and started.read_bytes() == b""
    assert moved.state is State.INFLIGHT and t.active_timeline().get(clean.requested_time).is_inflight
    other = timeline.create_requested(Action.CLEAN, timeline.new_instant_time())
    (timeline_dir / f"{other.requested_time}.clean.inflight").write_bytes(b"")  # (another process's)
    with pytest.raises(TimelineError, match=f"instant .*{other.requested_time}.* already exists"):
        timeline.transition_to_inflight(other)
    os.unlink(names[3])  # one name goes, the others stay
    assert names[2].exists() and os.stat(shared).st_nlink == links + 2 - 1  # (+ the clean's inflight and other)


def test_a_missing_full_or_exhausted_empty_instant_file_is_replaced(tmp_path, monkeypatch):
    import errno

    from pyhudi.timeline import empty_instant

    storage = Storage(str(tmp_path))
    (tmp_path / ".hoodie" / "timeline").mkdir(parents=True)
    shared = tmp_path / ".hoodie" / ".aux" / ".empty_instant"
    assert empty_instant.link_empty(storage, ".hoodie/timeline/a.deltacommit.requested")  # made on first use
    made = os.stat(shared).st_ino
    assert os.stat(tmp_path / ".hoodie" / "timeline" / "a.deltacommit.requested").st_ino == made
    shared.unlink()
    shared.write_bytes(b"not empty")  # (pyhudi never writes it: a stranger's file is replaced, not linked)
    assert empty_instant.link_empty(storage, ".hoodie/timeline/b.deltacommit.requested")
    assert (tmp_path / ".hoodie" / "timeline" / "b.deltacommit.requested").read_bytes() == b""
    full = os.stat(shared).st_ino
    link = os.link
    calls = []

    def at_the_limit(src, dst, *args, **kwargs):
        calls.append(src)
        if len(calls) == 1:
            raise OSError(errno.EMLINK, "Too many links")
        return link(src, dst, *args, **kwargs)

    monkeypatch.setattr(empty_instant.os, "link", at_the_limit)
    assert empty_instant.link_empty(storage, ".hoodie/timeline/c.deltacommit.requested")
    assert len(calls) == 2 and os.stat(shared).st_ino != full
    assert os.stat(tmp_path / ".hoodie" / "timeline" / "c.deltacommit.requested").st_ino == os.stat(shared).st_ino
    with pytest.raises(AlreadyExistsError, match="file already exists"):
        empty_instant.link_empty(storage, ".hoodie/timeline/c.deltacommit.requested")
    assert not list((tmp_path / ".hoodie" / ".aux").glob("*.tmp"))


def test_instant_containers_decode_as_fastavros_reader_decodes_them():
    """Instant files are decoded with their writer schema parsed once per process; every Avro
    instant file of the Hudi-written fixtures decodes to what fastavro's reader gives, and
    containers of another shape (a codec, several records) still decode through the reader."""
    import io

    import fastavro

    from pyhudi.timeline.metadata_base import read_container

    import zipfile

    fixtures = pathlib.Path("/work/shared/fixtures/hudi")
    files = [(str(p), p.read_bytes()) for p in fixtures.glob("commit_metadata/*.avro")]
    for archive in sorted(fixtures.glob("**/*.zip")):
        with zipfile.ZipFile(archive) as z:
            files += [(f"{archive}:{n}", z.read(n)) for n in z.namelist()
                      if "/.hoodie/" in f"/{n}" and not n.endswith("/")]
    decoded = 0
    for where, data in files:
        if data[:4] != b"Obj\x01":
            continue
        reader = fastavro.reader(io.BytesIO(data))
        assert read_container(data) == (reader.writer_schema["name"], next(iter(reader), None)), where
        decoded += 1
    assert decoded >= 100, decoded
    schema = fastavro.parse_schema({"type": "record", "name": "R", "namespace": "x.y",
                                    "fields": [{"name": "a", "type": "long"}]})
    for codec, records in (("deflate", [{"a": 1}]), ("null", [{"a": 2}, {"a": 3}]), ("null", [])):
        buf = io.BytesIO()
        fastavro.writer(buf, schema, records, codec=codec)
        assert read_container(buf.getvalue()) == ("x.y.R", records[0] if records else None)


def test_the_checks_after_a_write_reuse_its_listing_until_a_service_runs(tmp_path, monkeypatch):
    """An upsert lists the timeline twice (planning, completion under the lock): compaction,
    clean and archival checks decide on the completion's listing; once a compaction ran, the
    clean check lists again and sees it (the clean that follows it deletes what it retired)."""
    from pyhudi.timeline import listing

    t = table(tmp_path, options={"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2",
                                 "hoodie.cleaner.commits.retained": "1"})
    calls = []
    real = listing.os.listdir
    monkeypatch.setattr(listing.os, "listdir", lambda p: calls.append(p) or real(p))
    t.upsert(rows(range(4)))
    # (+ 1: a table's first write lists once more after its instant exists: WriteClient._overtaken_while_young)
    assert [c.rpartition("/")[2] for c in calls] == ["timeline", "timeline", "timeline"]
    calls.clear()
    t.upsert(rows(range(4), 2.0))  # + compaction: its services list on their own, then the clean check
    timeline = t.active_timeline()
    assert [i.action.value for i in timeline.completed()] == ["deltacommit", "deltacommit", "commit", "clean"]
    assert len(calls) > 2
    assert t.read().sort_by("id").column("v").to_pylist() == [2.0] * 4

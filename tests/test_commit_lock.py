"""The timeline lock per commit (issue 15 item 2): a write's requested time is issued under the
instant-time state file's own ``flock``, so a commit takes the timeline lock (creates and
deletes ``.hoodie/.lock``) once — around its completion — and every guarantee the second
acquisition gave still holds: unique, increasing times (across processes: ``test_timeline``),
a write blocked by a held lock fails before it writes anything, and optimistic concurrency
still refuses the later of two conflicting commits."""

from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import CommitConflictError, LockError
from pyhudi.storage.fs import Storage
from pyhudi.timeline import timegen
from pyhudi.timeline.lock import FileLock
from pyhudi.timeline.timeline import Timeline
from pyhudi.write.client import WriteClient
from process_helpers import wait_child

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.float64())])


@pytest.fixture
def lock_files(monkeypatch):
    """Every lock a :class:`FileLock` took: ``("create", path)`` for a lock file of its own,
    ``("link", path)`` for one linked to a holder file, in order."""
    made: list[tuple[str, str]] = []
    create, link = FileLock._create, FileLock._link

    def created(self, payload):
        create(self, payload)
        made.append(("create", self.path))

    def linked(self, holder_file):
        done = link(self, holder_file)
        if done:
            made.append(("link", self.path))
        return done

    monkeypatch.setattr(FileLock, "_create", created)
    monkeypatch.setattr(FileLock, "_link", linked)
    return made


LOCK = ".hoodie/.lock"


def read_rows(table):
    return table.read().sort_by("id").to_pylist()


def rows(ids, value):
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [float(value)] * len(ids)}, schema=SCHEMA)


def test_an_upsert_takes_the_lock_once_as_a_link_of_its_heartbeat(tmp_path, lock_files, monkeypatch):
    """One lock per commit — the completion's (the requested time takes none) — and its file is
    the writer's heartbeat file under a second name: no inode of its own, and a waiter still
    learns which process holds it."""
    from pyhudi.write import client

    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=4)
    t.upsert(rows([1, 2, 3], 1))
    lock_files.clear()
    seen = []
    check = client.check_write_conflicts

    def under_the_lock(instant, *args, **kwargs):  # (runs in the completion's precondition)
        lock, beat = Path(t.path) / LOCK, Path(t.path) / ".hoodie" / ".heartbeat" / instant
        seen.append(os.stat(lock).st_ino == os.stat(beat).st_ino)
        waiter = FileLock(t.storage, wait_timeout_s=0.05, retry_interval_s=0.01)
        with pytest.raises(LockError, match=f"held by owner=the writer {os.getpid()}@.* pid={os.getpid()}"):
            waiter.acquire()
        return check(instant, *args, **kwargs)

    monkeypatch.setattr(client, "check_write_conflicts", under_the_lock)
    instant = t.upsert(rows([2, 3, 4], 2))
    assert seen == [True]
    assert lock_files == [("link", LOCK)]
    done = t.active_timeline().get(instant)
    assert done.is_completed and done.completion_time > instant
    state = (Path(t.path) / ".hoodie" / ".aux" / ".instant_time").read_text()
    assert state == done.completion_time  # the last time issued
    assert not (Path(t.path) / ".hoodie" / ".lock").exists()
    assert [(r["id"], r["v"]) for r in read_rows(t)] == [(1, 1.0), (2, 2.0), (3, 2.0), (4, 2.0)]


def test_a_requested_time_takes_no_lock_and_is_past_every_time_issued(tmp_path, lock_files):
    storage = Storage(str(tmp_path))
    # (a zone no other test uses: the process remembers its last time per zone)
    timeline = Timeline(storage, timezone="Asia/Kathmandu").load()
    storage.write(".hoodie/.aux/.instant_time", b"29991231235959998")  # another process's last time
    first = timeline.new_instant_time()
    second = timeline.new_instant_time()
    assert (first, second) == ("29991231235959999", "30000101000000000")
    assert lock_files == []
    assert storage.read(".hoodie/.aux/.instant_time") == b"30000101000000000"


def test_a_held_timeline_lock_is_waited_for_before_a_write_begins(tmp_path):
    """A lock file of a live holder: the requested time waits for the lock as before (a stuck
    lock fails the write before its instant exists), naming the holder."""
    storage = Storage(str(tmp_path))
    timeline = Timeline(storage, lock=FileLock(storage, wait_timeout_s=0.2, retry_interval_s=0.01)).load()
    (tmp_path / ".hoodie").mkdir(exist_ok=True)
    (tmp_path / ".hoodie" / ".lock").write_text(json.dumps(
        {"owner": "another-writer", "pid": os.getpid(), "host": os.uname().nodename,
         "acquired_at_ms": int(time.time() * 1000)}))
    with pytest.raises(LockError, match="held by owner=another-writer"):
        timeline.new_instant_time()
    assert not (tmp_path / ".hoodie" / ".aux" / ".instant_time").exists()  # no time issued
    (tmp_path / ".hoodie" / ".lock").unlink()
    assert timeline.new_instant_time()


def test_a_file_system_refusing_flock_issues_requested_times_under_the_timeline_lock(tmp_path, lock_files,
                                                                                    monkeypatch):
    def refused(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(timegen.fcntl, "flock", refused)
    timeline = Timeline(Storage(str(tmp_path))).load()
    first, second = timeline.new_instant_time(), timeline.new_instant_time()
    assert first < second
    assert lock_files == [("create", LOCK), ("create", LOCK)]  # one timeline lock per time


def test_writers_begun_together_still_conflict_under_occ(tmp_path, lock_files):
    """Both writers issue their requested times without the lock; the conflict check still runs
    under it at completion, on a fresh listing, and refuses the later commit."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=4,
                            options={"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL"})
    t.upsert(rows([1, 2], 1))
    first, second = WriteClient(t), WriteClient(t)
    lock_files.clear()
    txn_a, txn_b = first.begin("upsert"), second.begin("upsert")
    assert lock_files == [] and txn_a.instant < txn_b.instant
    statuses_b = txn_b.write_rows(rows([2], 3))  # the same key: the same bucket
    statuses_a = txn_a.write_rows(rows([2], 2))
    second.commit(txn_b, statuses_b)
    with pytest.raises(CommitConflictError, match=f"^write {txn_a.instant} conflicts with .*{txn_b.instant}"):
        first.commit(txn_a, statuses_a)
    assert lock_files[:2] == [("link", LOCK), ("link", LOCK)]  # one per completion attempt (then the rollback's)
    assert [(r["id"], r["v"]) for r in read_rows(t)] == [(1, 1.0), (2, 3.0)]
    assert t.active_timeline().get(txn_a.instant) is None  # rolled back


def test_a_network_file_system_issues_requested_times_under_the_timeline_lock(tmp_path, lock_files, monkeypatch):
    """flock may stay local to one NFS client (``nolock``): there the exclusive lock file is
    what excludes other hosts, so each requested time takes it."""
    monkeypatch.setattr(timegen, "_FLOCK_SHARED", {})
    monkeypatch.setattr(timegen, "_file_system_type", lambda path: "nfs4")
    timeline = Timeline(Storage(str(tmp_path))).load()
    assert not timegen.flock_is_shared(str(tmp_path))
    first, second = timeline.new_instant_time(), timeline.new_instant_time()
    assert first < second
    assert lock_files == [("create", LOCK), ("create", LOCK)]
    monkeypatch.setattr(timegen, "_FLOCK_SHARED", {})
    monkeypatch.setattr(timegen, "_file_system_type", lambda path: "ext4")
    timeline.new_instant_time()
    assert len(lock_files) == 2  # a disk's file system: the state file's flock alone


def test_a_fork_waits_for_a_time_being_issued_and_the_child_issues_times(tmp_path):
    """A fork never copies the state file's descriptor while its flock is held (the child would
    keep the lock for its whole life): it waits for the time being issued; the child then issues
    its own times."""
    import threading

    storage = Storage(str(tmp_path))
    timeline = Timeline(storage, timezone="Asia/Kathmandu").load()
    first = timeline.new_instant_time()
    issuing = threading.Event()
    release = threading.Event()
    original = timegen.InstantTimeGenerator._step

    def slow_step(self, persisted, floor):
        issuing.set()
        release.wait(5)
        return original(self, persisted, floor)

    timegen.InstantTimeGenerator._step = slow_step
    try:
        worker = threading.Thread(target=timeline.new_instant_time)
        worker.start()
        assert issuing.wait(5)
        threading.Timer(0.2, release.set).start()
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the child: its own time, under a lock nobody else holds
            timegen.InstantTimeGenerator._step = original
            os._exit(0 if Timeline(storage, timezone="Asia/Kathmandu").load().new_instant_time() > first else 3)
        waited = time.monotonic() - started
        worker.join(5)
    finally:
        timegen.InstantTimeGenerator._step = original
    status = wait_child(pid, 10, "the child could not issue a time: the fork copied a taken guard")
    assert status == 0
    assert waited >= 0.1  # the fork waited for the time being issued
    assert timeline.new_instant_time() > first


def _heartbeat_lock(tmp_path, owner):
    from pyhudi.timeline.heartbeat import _HOST

    (tmp_path / ".hoodie").mkdir(exist_ok=True)
    lines = [str(int(time.time() * 1000)), "timeout_ms=120000"] + ([f"owner={owner}@{_HOST}"] if owner else [])
    (tmp_path / LOCK).write_text("\n".join(lines))


def test_a_lock_held_as_a_heartbeat_names_its_writer_and_is_broken_once_it_died(tmp_path):
    import subprocess
    import sys

    storage = Storage(str(tmp_path))
    _heartbeat_lock(tmp_path, os.getpid())  # a live writer: waited for, named
    waiter = FileLock(storage, wait_timeout_s=0.05, retry_interval_s=0.01)
    with pytest.raises(LockError, match=f"held by owner=the writer {os.getpid()}@"):
        waiter.acquire()
    assert waiter.broken_count == 0
    _heartbeat_lock(tmp_path, None)  # a heartbeat naming no process: only its age breaks it
    with pytest.raises(LockError, match="held by owner=a writer whose heartbeat names no process"):
        waiter.acquire()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    _heartbeat_lock(tmp_path, int(dead.stdout))  # a writer that died holding it: broken at once
    waiter.acquire()
    assert waiter.broken_count == 1 and json.loads((tmp_path / LOCK).read_text())["pid"] == os.getpid()
    waiter.release()
    assert not (tmp_path / LOCK).exists()


def test_a_missing_holder_file_gives_the_lock_a_file_of_its_own(tmp_path, lock_files):
    storage = Storage(str(tmp_path))
    beat = tmp_path / ".hoodie" / ".heartbeat" / "20240101000000000"
    beat.parent.mkdir(parents=True)
    beat.write_text("1\ntimeout_ms=1000")
    os.utime(beat, (time.time() - 3600,) * 2)  # (beaten an hour ago)
    lock = FileLock(storage)
    lock.acquire(holder_file=".hoodie/.heartbeat/20240101000000000")
    assert os.stat(tmp_path / LOCK).st_ino == os.stat(beat).st_ino
    assert time.time() - os.stat(tmp_path / LOCK).st_mtime < 60  # (its age counts from the acquisition)
    os.unlink(beat)  # (the heartbeat may go while the lock is held: the lock keeps the file)
    lock.release()
    assert not (tmp_path / LOCK).exists()
    lock.acquire(holder_file=".hoodie/.heartbeat/20240101000000000")  # gone: a JSON record of its own
    assert json.loads((tmp_path / LOCK).read_text())["pid"] == os.getpid()
    lock.release()
    assert lock_files == [("link", LOCK), ("create", LOCK)]


def test_a_write_committed_by_another_client_takes_a_lock_file_of_its_own(tmp_path, lock_files):
    """A detached write's heartbeat names no process (its tasks beat it): its completion's lock
    is a JSON record naming the committing process, so a holder that dies is known at once."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=4)
    client = WriteClient(t)
    txn = client.begin("upsert")
    client.detach(txn)
    statuses = txn.write_rows(rows([1, 2], 1))
    lock_files.clear()
    WriteClient(pyhudi.open_table(t.path)).commit(txn, statuses)
    assert lock_files == [("create", LOCK)]
    assert [(r["id"], r["v"]) for r in read_rows(t)] == [(1, 1.0), (2, 1.0)]


_STATE_HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_a_stuck_holder_of_the_instant_time_state_fails_a_time_after_the_lock_wait(tmp_path):
    """A process stopped while it holds the state file's flock (frozen, stopped, a hung disk)
    must not hang every other writer, and a completion holding the timeline lock with them: a
    time waits for the flock as long as for the timeline lock, then fails naming the file."""
    import subprocess
    import sys

    storage = Storage(str(tmp_path))
    (tmp_path / ".hoodie" / ".aux").mkdir(parents=True)
    state = tmp_path / ".hoodie" / ".aux" / ".instant_time"
    holder = subprocess.Popen([sys.executable, "-c", _STATE_HOLDER, str(state), "4"], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        timeline = Timeline(storage, lock=FileLock(storage, wait_timeout_s=0.3, retry_interval_s=0.01)).load()
        started = time.monotonic()
        with pytest.raises(LockError, match=r"could not lock the instant time state .*\.instant_time within 0\.300s"):
            timeline.new_instant_time()
        assert time.monotonic() - started < 2.0
        assert not (tmp_path / ".hoodie" / ".lock").exists()  # (the requested time took no timeline lock)
    finally:
        holder.kill()
        holder.wait()
    assert timeline.new_instant_time()  # the holder gone, times are issued again

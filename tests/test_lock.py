"""The file-based timeline lock: exclusion across real processes, timeouts, stale-lock breaking."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pyhudi.errors import LockError
from pyhudi.storage.fs import Storage
from pyhudi.timeline.lock import (
    DEFAULT_LOCK_PATH,
    LOCK_EXPIRE_MINUTES,
    LOCK_WAIT_TIME_MS,
    FileLock,
)


def _dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _write_lock_file(base: Path, *, pid: int, host: str | None = None, age_s: float = 0.0, owner: str = "x") -> Path:
    path = base / DEFAULT_LOCK_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    acquired = int((time.time() - age_s) * 1000)
    holder = {"owner": owner, "pid": pid, "host": host or socket.gethostname(), "acquired_at_ms": acquired}
    path.write_text(json.dumps(holder))
    if age_s:
        os.utime(path, (time.time() - age_s, time.time() - age_s))
    return path


def _run_workers(script: str, args_per_worker: list[list[str]], go_file: Path, timeout: float = 30.0) -> list[str]:
    """Start one Python process per argument list, release them together, return their stdout."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for args in args_per_worker
    ]
    for proc in procs:  # each worker prints "ready" once imported; then all start at once
        line = proc.stdout.readline()
        assert line.strip() == "ready", proc.stderr.read()
    go_file.write_text("go")
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, err
        outputs.append(out)
    return outputs


# --------------------------------------------------------------------------- single process
def test_acquire_writes_holder_and_release_deletes(tmp_path):
    storage = Storage(str(tmp_path))
    lock = FileLock(storage)
    with lock:
        assert lock.held and lock.held_by_current_thread()
        content = json.loads((tmp_path / ".hoodie" / ".lock").read_text())
        assert set(content) == {"owner", "pid", "host", "acquired_at_ms"}
        assert content["pid"] == os.getpid() and content["host"] == socket.gethostname()
        assert lock.holder().owner == content["owner"]
    assert not lock.held
    assert not (tmp_path / ".hoodie" / ".lock").exists()
    assert lock.holder() is None


def test_acquiring_twice_from_same_object_raises(tmp_path):
    lock = FileLock(Storage(str(tmp_path)), wait_timeout_s=0.2)
    lock.acquire()
    with pytest.raises(LockError, match="already held by this thread"):
        lock.acquire()
    lock.release()
    with pytest.raises(LockError, match="not held"):
        lock.release()


def test_timeout_names_the_holder(tmp_path):
    storage = Storage(str(tmp_path))
    first = FileLock(storage)
    second = FileLock(storage, wait_timeout_s=0.15)
    with first:
        start = time.monotonic()
        with pytest.raises(LockError) as err:
            second.acquire()
        elapsed = time.monotonic() - start
    message = str(err.value)
    assert first.holder() is None
    assert "within 0.150s" in message and f"pid={os.getpid()}" in message and socket.gethostname() in message
    assert ".hoodie/.lock" in message
    assert 0.14 <= elapsed < 1.5
    second.acquire()  # free again
    second.release()


def test_num_retries_bounds_the_wait(tmp_path):
    storage = Storage(str(tmp_path))
    with FileLock(storage):
        quick = FileLock(storage, wait_timeout_s=30, num_retries=2, retry_interval_s=0.001)
        start = time.monotonic()
        with pytest.raises(LockError, match="2 retries"):
            quick.acquire()
        assert time.monotonic() - start < 1.0


def test_stale_lock_by_age_is_broken(tmp_path):
    _write_lock_file(tmp_path, pid=os.getpid(), age_s=120, owner="old")
    lock = FileLock(Storage(str(tmp_path)), wait_timeout_s=1.0, expiry_s=60)
    lock.acquire()
    assert lock.broken_count == 1
    assert lock.holder().owner != "old"
    lock.release()


def test_stale_lock_of_dead_pid_is_broken(tmp_path):
    _write_lock_file(tmp_path, pid=_dead_pid(), age_s=0, owner="crashed")
    lock = FileLock(Storage(str(tmp_path)), wait_timeout_s=1.0, expiry_s=3600)
    with lock:
        assert lock.broken_count == 1
        assert lock.holder().owner != "crashed"


def test_live_lock_on_other_host_is_not_broken(tmp_path):
    # pid liveness can only be checked on this host: elsewhere only the expiry applies
    _write_lock_file(tmp_path, pid=_dead_pid(), host="some-other-host", owner="remote")
    lock = FileLock(Storage(str(tmp_path)), wait_timeout_s=0.1, expiry_s=60)
    with pytest.raises(LockError, match="owner=remote .*host=some-other-host"):
        lock.acquire()
    assert lock.broken_count == 0


def test_zero_expiry_never_breaks_by_age(tmp_path):
    _write_lock_file(tmp_path, pid=os.getpid(), age_s=10_000, owner="ancient")
    lock = FileLock(Storage(str(tmp_path)), wait_timeout_s=0.1, expiry_s=0)
    with pytest.raises(LockError, match="ancient"):
        lock.acquire()


def test_unreadable_lock_file_breaks_only_by_age(tmp_path):
    path = tmp_path / DEFAULT_LOCK_PATH
    path.parent.mkdir(parents=True)
    path.write_bytes(b"garbage")
    lock = FileLock(Storage(str(tmp_path)), wait_timeout_s=0.1, expiry_s=60)
    with pytest.raises(LockError, match="unreadable lock file"):
        lock.acquire()
    os.utime(path, (time.time() - 120, time.time() - 120))
    with lock:
        assert lock.broken_count == 1


def test_release_after_long_hold_goes_through_breaker(tmp_path):
    lock = FileLock(Storage(str(tmp_path)), expiry_s=0.05)
    lock.acquire()
    time.sleep(0.06)  # longer than half the expiry: the careful release path
    lock.release()
    assert not (tmp_path / ".hoodie" / ".lock").exists()
    assert not (tmp_path / ".hoodie" / ".lock.break").exists()


def test_release_does_not_delete_a_lock_that_was_taken_over(tmp_path):
    storage = Storage(str(tmp_path))
    slow = FileLock(storage, expiry_s=3600)
    slow.acquire()
    lock_file = tmp_path / DEFAULT_LOCK_PATH
    lock_file.unlink()  # as if broken as stale ...
    _write_lock_file(tmp_path, pid=os.getpid(), owner="newcomer")  # ... and re-taken
    slow.release()
    assert lock_file.exists() and storage.read(DEFAULT_LOCK_PATH).find(b"newcomer") > 0


def test_config_keys_use_hudi_names(tmp_path):
    assert LOCK_WAIT_TIME_MS.key == "hoodie.write.lock.wait_time_ms"
    assert LOCK_EXPIRE_MINUTES.key == "hoodie.write.lock.filesystem.expire"
    lock = FileLock.from_config(
        Storage(str(tmp_path)),
        {
            "hoodie.write.lock.wait_time_ms": "1500",
            "hoodie.write.lock.filesystem.expire": "0.5",
            "hoodie.write.lock.num_retries": "7",
            "hoodie.write.lock.wait_time_ms_between_retry": "20",
        },
    )
    assert lock.wait_timeout_s == 1.5 and lock.expiry_s == 30.0 and lock.num_retries == 7
    assert lock.retry_interval_s == 0.02
    default = FileLock.from_config(Storage(str(tmp_path)), {})
    assert default.expiry_s == 60.0 and default.wait_timeout_s == 60.0 and default.num_retries is None


def test_threads_sharing_one_lock_object_take_turns(tmp_path):
    lock = FileLock(Storage(str(tmp_path)), wait_timeout_s=10)
    inside = []
    errors = []

    def work():
        try:
            for _ in range(20):
                with lock:
                    inside.append(1)
                    assert len(inside) == 1
                    inside.pop()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# --------------------------------------------------------------------------- real processes
_COUNTER_WORKER = r"""
import os, sys, time
from pyhudi.storage.fs import Storage
from pyhudi.timeline.lock import FileLock
base, n, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.001)
lock = FileLock(Storage(base), wait_timeout_s=30)
counter = os.path.join(base, "counter")
for _ in range(n):
    with lock:
        value = int(open(counter).read()) if os.path.exists(counter) else 0
        with open(counter, "w") as fh:
            fh.write(str(value + 1))
"""


def test_mutual_exclusion_across_processes(tmp_path):
    go = tmp_path / "go"
    _run_workers(_COUNTER_WORKER, [[str(tmp_path), "50", str(go)] for _ in range(4)], go)
    assert (tmp_path / "counter").read_text() == "200"
    assert not (tmp_path / ".hoodie" / ".lock").exists()


_STALE_WORKER = r"""
import os, sys, time
from pyhudi.storage.fs import Storage
from pyhudi.timeline.lock import FileLock
base, go = sys.argv[1], sys.argv[2]
lock = FileLock(Storage(base), wait_timeout_s=30, expiry_s=60)
print("ready", flush=True)
while not os.path.exists(go):
    pass
lock.acquire()
start = time.time()
time.sleep(0.05)
end = time.time()
lock.release()
print(lock.broken_count, start, end, flush=True)
"""


def test_concurrent_stale_breaking_has_one_winner(tmp_path):
    _write_lock_file(tmp_path, pid=_dead_pid(), age_s=300, owner="crashed")
    go = tmp_path / "go"
    outputs = _run_workers(_STALE_WORKER, [[str(tmp_path), str(go)] for _ in range(4)], go)
    rows = [line.split() for out in outputs for line in out.splitlines() if line.strip()]
    assert len(rows) == 4
    assert sum(int(r[0]) for r in rows) == 1  # exactly one process broke the stale lock
    spans = sorted((float(r[1]), float(r[2])) for r in rows)
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert start >= end, f"two processes held the lock at once: {spans}"

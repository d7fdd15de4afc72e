"""Monotonic instant-time generation that holds across threads and processes.

Every instant time (requested and completion) must be unique and strictly increasing, because
Hudi orders file slices and merges by them (NBCC orders writes by completion time). Java Hudi
relies on a process-wide "last time" plus sleeping out the maximum clock skew. pyhudi instead
makes the step explicit and durable: under the timeline lock,

    t = max(now, last + 1 ms)

where ``last`` is the maximum of the last time persisted in ``.hoodie/.aux/.instant_time``,
this process's last issued time (per timezone) and an optional caller floor (e.g. the greatest
time already on the timeline, or the requested time when generating a completion time). The new
time is written back before the lock is released, so two processes can never issue the same
time even when their clocks disagree or they issue many times within one millisecond.

Locally the state file is also locked itself (``flock`` on it while it is read and rewritten:
no file is created or deleted), and that lock alone serializes the times. So a time that is not
a completion — a write's requested time — does not take the timeline lock there (the local
:class:`~pyhudi.timeline.lock.FileLock`: creating and deleting its file cost a commit a second
inode allocation); a completion time still is generated under the timeline lock, which makes it
atomic with the completed file. While the lock file exists the generator waits for the timeline
lock as before, so a write blocked by a stuck lock fails before it writes anything.

"+ 1 ms" is calendar arithmetic on the wall-clock digits (:func:`next_instant_time`), so the
result is greater *as a string* even across a DST fall-back in LOCAL timelines.
"""

from __future__ import annotations

import os
import threading
import time
import uuid

try:
    import fcntl
except ImportError:  # (no flock: the timeline lock serializes every time)
    fcntl = None  # type: ignore[assignment]
from datetime import datetime
from datetime import timezone as dt_timezone
from typing import Callable

from pyhudi.config.lock import LOCK_WAIT_TIME_MS
from pyhudi.errors import LockError, StorageError
from pyhudi.storage.fs import Storage, open_local
from pyhudi.timeline.instant import comparable_time, format_instant_time, latest_time_of, next_instant_time, resolve_timezone
from pyhudi.timeline.lock import FileLock, Locked, TimelineLock  # noqa: F401 (re-exported)

DEFAULT_STATE_PATH = ".hoodie/.aux/.instant_time"
_STATE_WAIT_S = LOCK_WAIT_TIME_MS.default / 1000.0  # type: ignore[operator]  (a lock that names no wait time)

_PROCESS_LAST: dict[str, str] = {}
_PROCESS_GUARD = threading.Lock()
# No fork while a thread is between opening and closing the state file: the child's copy of the
# descriptor would hold its flock for as long as the child lives (and the guard would stay taken).
os.register_at_fork(before=_PROCESS_GUARD.acquire, after_in_parent=_PROCESS_GUARD.release,
                    after_in_child=_PROCESS_GUARD.release)


def _tz_key(timezone: str) -> str:
    """The process-level "last time" is kept per timezone: times in different zones don't compare."""
    name = str(timezone).strip()
    return name.upper() if name.upper() in ("UTC", "LOCAL") else name


class InstantTimeGenerator:
    """Issues strictly increasing 17-digit instant times for one table.

    ``lock`` must be the same lock object the timeline uses, so a caller already holding it
    (e.g. while completing an instant) can generate without re-acquiring.
    """

    def __init__(
        self,
        storage: Storage,
        lock: TimelineLock | None = None,
        timezone: str = "UTC",
        state_path: str = DEFAULT_STATE_PATH,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        resolve_timezone(timezone)  # fail early on a bad zone name
        self.storage = storage
        self.lock: TimelineLock = lock if lock is not None else FileLock(storage)
        self.timezone = timezone
        self.state_path = state_path
        self._clock = clock or (lambda: datetime.now(dt_timezone.utc))
        self._key = _tz_key(timezone)

    def next_time(self, floor: str | None = None) -> str:
        """A new instant time greater than every time issued before and than ``floor``.

        Takes the lock unless the current thread already holds it or the state file's own lock
        serializes times (:meth:`_state_lock_suffices`).
        """
        if self.lock.held_by_current_thread():
            return self._next_locked(floor)
        if self._state_lock_suffices():
            try:
                return self._next_locked(floor, state_lock_only=True)
            except _NoStateLock:
                pass  # (this file system refuses flock: the timeline lock serializes the time)
        self.lock.acquire()
        try:
            return self._next_locked(floor)
        finally:
            self.lock.release()

    def _state_lock_suffices(self) -> bool:
        """Whether a time may be issued under the state file's lock alone: a local table whose
        timeline lock is the local file lock, not held now (a held lock is waited for, as before:
        one held for long belongs to a stuck writer, and a write should fail before it begins).
        Other lock providers (an external lock, one that could not be built) are always taken."""
        lock = self.lock
        return (fcntl is not None and self.storage.is_local and isinstance(lock, FileLock)
                and lock.storage.is_local and flock_is_shared(self.storage.root) and not lock.looks_held())

    def observe(self, value: str) -> None:
        """Record an externally chosen time so later generated times exceed it (this process)."""
        norm = comparable_time(value)
        if norm is None:
            return
        with _PROCESS_GUARD:
            if norm > _PROCESS_LAST.get(self._key, ""):
                _PROCESS_LAST[self._key] = norm

    def last_persisted(self) -> str | None:
        """The last time written to the state file, or None if absent or unreadable."""
        try:
            raw = self.storage.read(self.state_path)
        except StorageError:
            return None
        return comparable_time(raw.decode("ascii", errors="replace").strip())

    # ------------------------------------------------------------------ internals
    def _now(self) -> str:
        return format_instant_time(self._clock(), self.timezone)

    def _next_locked(self, floor: str | None, state_lock_only: bool = False) -> str:
        """The next time, persisted. Locally under the state file's ``flock`` (``state_lock_only``:
        the only lock held, so a file system without flock raises :class:`_NoStateLock`)."""
        with _PROCESS_GUARD:
            if fcntl is not None and self.storage.is_local:
                t = self._next_local(floor, state_lock_only)
            else:
                t = self._step(self.last_persisted(), floor)
                self._persist(t)
            _PROCESS_LAST[self._key] = t
            return t

    def _step(self, persisted: str | None, floor: str | None) -> str:
        last = latest_time_of(_PROCESS_LAST.get(self._key), persisted, floor)
        now = self._now()
        return now if last is None or now > last else next_instant_time(last)

    def _next_local(self, floor: str | None, state_lock_only: bool) -> str:
        """Read, step and rewrite the local state file in place under its exclusive ``flock``
        (released by the close, or by the kernel if the process dies)."""
        path = self.storage.full_path(self.state_path)
        try:
            fd = open_local(path, os.O_RDWR | os.O_CREAT)
        except OSError as exc:
            raise StorageError(f"cannot open the instant time state {path}: {exc}") from exc
        try:
            self._flock(fd, path, state_lock_only)
            raw = os.pread(fd, 64, 0)
            t = self._step(comparable_time(raw.decode("ascii", errors="replace").strip()), floor)
            os.pwrite(fd, t.encode("ascii"), 0)
            if len(raw) > len(t):  # (an older, longer content)
                os.ftruncate(fd, len(t))
            return t
        finally:
            os.close(fd)

    def _flock(self, fd: int, path: str, state_lock_only: bool) -> None:
        """Take the state file's exclusive ``flock``, waiting no longer than for the timeline lock
        (its ``wait_timeout_s``): a holder stopped while it holds the flock (frozen, stopped, on a
        hung disk) then fails this time with :class:`LockError` instead of hanging the writer — and,
        for a completion, every writer waiting for the timeline lock it holds. A file system that
        refuses ``flock`` raises :class:`_NoStateLock` when the flock is the only lock
        (``state_lock_only``), else leaves the time to the timeline lock held."""
        deadline, delay = None, 0.0002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            except OSError as exc:
                if state_lock_only:
                    raise _NoStateLock() from exc
                return
            timeout = float(getattr(self.lock, "wait_timeout_s", _STATE_WAIT_S))
            now = time.monotonic()
            if deadline is None:
                deadline = now + timeout
            elif now >= deadline:
                raise LockError(f"could not lock the instant time state {path} within {timeout:.3f}s: another "
                                "process holds its flock (stopped or stuck while issuing a time)")
            time.sleep(min(delay, max(0.0, deadline - now)))
            delay = min(delay * 2, 0.05)

    def _persist(self, value: str) -> None:
        """Record ``value`` (always 17 digits) in the state file without ever tearing it.

        Locally the file is overwritten in place — one write of 17 bytes at offset 0, within one
        disk sector, under the lock every reader holds: a reader sees the old value or the new
        one. Replacing it by rename (or truncating it) made ext4 flush it on every instant time
        (``auto_da_alloc``), milliseconds per time; other stores replace it (temp file + rename)."""
        data = value.encode("ascii")
        if self.storage.is_local and len(data) == 17:
            path = self.storage.full_path(self.state_path)
            fd = open_local(path, os.O_WRONLY | os.O_CREAT)
            try:
                os.pwrite(fd, data, 0)
                if os.fstat(fd).st_size > len(data):  # (an older, longer content)
                    os.ftruncate(fd, len(data))
            finally:
                os.close(fd)
            return
        tmp = f"{self.state_path}.{uuid.uuid4().hex}.tmp"
        self.storage.write(tmp, value.encode("ascii"))
        try:
            self.storage.rename(tmp, self.state_path)
        except OSError:
            self.storage.delete(tmp)
            raise


_DISK_FILE_SYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "zfs", "f2fs", "overlay", "apfs"})
_FLOCK_SHARED: dict[str, bool] = {}


def flock_is_shared(path: str) -> bool:
    """Whether ``flock`` on files under ``path`` excludes every process that can reach them: a
    file system of one machine's disks or memory (from ``/proc/self/mountinfo``; answered once
    per path). A network file system may keep ``flock`` local to each client (NFS mounted
    ``nolock``) where the lock file's exclusive create still excludes them all, so there — and
    wherever the mount is unknown — every time is issued under the timeline lock."""
    found = _FLOCK_SHARED.get(path)
    if found is None:
        if len(_FLOCK_SHARED) >= 1024:
            _FLOCK_SHARED.clear()
        found = _FLOCK_SHARED[path] = _file_system_type(path) in _DISK_FILE_SYSTEMS
    return found


def _file_system_type(path: str) -> str | None:
    """The type of the file system mounted deepest above ``path`` (None if unknown)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            mounts = fh.read().splitlines()
    except OSError:
        return None
    real, best, kind = os.path.realpath(path), "", None
    for line in mounts:
        fields = line.split(" ")
        if " - " not in line or len(fields) < 5:
            continue
        point = fields[4].replace("\\040", " ")
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, line.split(" - ", 1)[1].split(" ", 1)[0]
    return kind


class _NoStateLock(Exception):
    """The local file system refused ``flock`` on the state file."""


__all__ = ["InstantTimeGenerator", "TimelineLock", "DEFAULT_STATE_PATH"]

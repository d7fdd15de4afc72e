"""A file-based timeline lock for tables on local (and POSIX-like shared) file systems.

Hudi needs a lock for exactly two short critical sections under non-blocking concurrency:
generating instant times and, atomically with it, generating a completion time and creating the
completed instant file (hudi-internals-core §4, "What the lock is for under NBCC"). So the lock
is held for milliseconds and a simple lock file is enough:

* **Acquire** = create ``.hoodie/.lock`` exclusively (locally ``open(O_CREAT | O_EXCL)``, else
  :meth:`Storage.create_if_absent`: exactly one creator wins; a waiter that reads the file before
  its holder wrote it sees an unknown, fresh holder and waits). Its content is
  JSON ``{owner, pid, host, acquired_at_ms}`` so a waiter can name the holder in its error.
  A completing writer instead takes it as a hard link of its own heartbeat file (``link(2)`` is
  exclusive too, and allocates no inode): its ``owner=<pid>@<host>`` line names the holder.
  Losers retry with exponential backoff (plus jitter) until the wait timeout.
* **Stale locks** (the holder crashed): a lock older than the expiry, or held by a pid that no
  longer exists on this host, is broken. Breaking is the dangerous step: two waiters that both
  saw the same stale lock must not both delete "it" (the second would delete the first one's
  *fresh* lock). So a breaker first takes a second, tiny lock file (``.lock.break``), re-reads the
  lock under it and deletes it only if it is still the same stale owner; then everybody races on
  the atomic create again and exactly one wins. Releases that might race with a breaker (the
  holder kept the lock longer than half the expiry) go through the breaker lock too.
* ``.hoodie/.lock`` is outside ``.hoodie/timeline/`` and does not match the instant-name grammar,
  so neither hudi-rs nor Java Hudi mistake it for an instant (also in layout-1 tables).

The lock is only as good as the create: it is correct where :attr:`Storage.atomic_create` holds
(local file systems, S3 stores with conditional put). Elsewhere the lock provider picks another
lock (:mod:`pyhudi.timeline.lock_provider`, ``hoodie.write.lock.provider``).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from typing import Any, Mapping, Protocol


from pyhudi.errors import AlreadyExistsError, LockError, StorageError
from pyhudi.storage.fs import Storage, open_local
from pyhudi.value import Value
from pyhudi.config.lock import LOCK_WAIT_TIME_MS, LOCK_NUM_RETRIES, LOCK_RETRY_WAIT_MS, LOCK_MAX_RETRY_WAIT_MS, LOCK_EXPIRE_MINUTES  # noqa: F401 (declared there)

DEFAULT_LOCK_PATH = ".hoodie/.lock"

# ---------------------------------------------------------------------------------------- keys


EMPTY_LOCK_GRACE_S = 10.0
"""A lock file still empty this long after it was made is stale whatever the expiry: a holder
writes its record right after the exclusive create (:meth:`FileLock._create`), so only a holder
that died in between leaves it empty."""


class LockHolder(Value):
    """What a lock file says about its holder."""

    owner: str
    pid: int | None
    host: str | None
    acquired_at_ms: int | None

    def __init__(self, owner: str, pid: int | None, host: str | None, acquired_at_ms: int | None) -> None:
        self._set(owner=owner, pid=pid, host=host, acquired_at_ms=acquired_at_ms)

    def describe(self) -> str:
        when = ""
        if self.acquired_at_ms is not None:
            when = f", acquired {max(0, _now_ms() - self.acquired_at_ms) / 1000:.1f}s ago"
        return f"owner={self.owner} pid={self.pid} host={self.host}{when}"

    @classmethod
    def from_bytes(cls, data: bytes) -> LockHolder | None:
        try:
            raw = json.loads(data.decode("utf-8"))
            return cls(
                owner=str(raw["owner"]),
                pid=int(raw["pid"]) if raw.get("pid") is not None else None,
                host=str(raw["host"]) if raw.get("host") is not None else None,
                acquired_at_ms=int(raw["acquired_at_ms"]) if raw.get("acquired_at_ms") is not None else None,
            )
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            return _heartbeat_holder(data)


def _heartbeat_holder(data: bytes) -> LockHolder | None:
    """The holder of a lock file that is a writer's heartbeat file (a lock taken with
    ``holder_file``): the process its ``owner=<pid>@<host>`` line names, with this host's name
    when the heartbeat's host identity (name and pid namespace) is this process's — so a dead
    holder is recognised as with a JSON record. None for text that is not a heartbeat's."""
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return None
    fields = dict(line.split("=", 1) for line in lines[1:] if "=" in line)
    if not lines[0].strip().isdigit() or "timeout_ms" not in fields:
        return None
    pid, _, host = fields.get("owner", "").partition("@")
    if not pid.isdigit():
        return LockHolder(owner="a writer whose heartbeat names no process", pid=None, host=None, acquired_at_ms=None)
    from pyhudi.timeline.heartbeat import _HOST as HEARTBEAT_HOST  # (heartbeat imports this module)

    here = host == HEARTBEAT_HOST
    return LockHolder(owner=f"the writer {pid}@{host}", pid=int(pid), host=socket.gethostname() if here else host,
                      acquired_at_ms=None)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (pid reuse makes this conservative)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return True
    return True


class FileLock:
    """A cross-process lock backed by one write-once file in ``.hoodie/``.

    Not re-entrant: acquiring again from the thread that holds it raises :class:`LockError`
    instead of deadlocking. Other threads sharing the object wait their turn.
    """

    def __init__(
        self,
        storage: Storage,
        path: str = DEFAULT_LOCK_PATH,
        *,
        wait_timeout_s: float = LOCK_WAIT_TIME_MS.default / 1000.0,  # type: ignore[operator]
        expiry_s: float = 60.0,
        retry_interval_s: float = LOCK_RETRY_WAIT_MS.default / 1000.0,  # type: ignore[operator]
        max_retry_interval_s: float = LOCK_MAX_RETRY_WAIT_MS.default / 1000.0,  # type: ignore[operator]
        num_retries: int | None = None,
    ) -> None:
        self.storage = storage
        self.path = path
        self.break_path = f"{path}.break"
        self.wait_timeout_s = float(wait_timeout_s)
        self.expiry_s = float(expiry_s)
        self.retry_interval_s = max(0.0005, float(retry_interval_s))
        self.max_retry_interval_s = max(self.retry_interval_s, float(max_retry_interval_s))
        self.num_retries = num_retries
        #: How many stale locks this object broke (observability; tests count winners with it).
        self.broken_count = 0
        self._thread_lock = threading.Lock()
        self._owner_thread: int | None = None
        self._owner_id: str | None = None
        self._acquired_mono: float | None = None
        self._fd: int | None = None  # the lock file this object created, kept open while held (locally)
        self._host = socket.gethostname()

    @classmethod
    def from_config(cls, storage: Storage, props: Mapping[str, str], path: str = DEFAULT_LOCK_PATH) -> FileLock:
        """Build a lock from ``hoodie.write.lock.*`` options."""
        expire_min = LOCK_EXPIRE_MINUTES.get(props)
        return cls(
            storage,
            path,
            wait_timeout_s=LOCK_WAIT_TIME_MS.get(props) / 1000.0,
            expiry_s=expire_min * 60.0 if expire_min else 0.0,
            retry_interval_s=LOCK_RETRY_WAIT_MS.get(props) / 1000.0,
            max_retry_interval_s=LOCK_MAX_RETRY_WAIT_MS.get(props) / 1000.0,
            num_retries=LOCK_NUM_RETRIES.get(props),
        )

    def __repr__(self) -> str:
        return f"FileLock({self.storage.base_uri!r}, {self.path!r}, held={self.held})"

    # ------------------------------------------------------------------ state
    @property
    def held(self) -> bool:
        """Whether this object currently holds the lock (from any thread)."""
        return self._owner_id is not None

    def held_by_current_thread(self) -> bool:
        return self._owner_id is not None and self._owner_thread == threading.get_ident()

    def looks_held(self) -> bool:
        """Whether the lock file exists now (a glance, not a guarantee: it may come or go the
        next moment). Elsewhere than locally: True."""
        if not self.storage.is_local:
            return True
        return os.path.lexists(self.storage.full_path(self.path))

    def holder(self) -> LockHolder | None:
        """The current holder according to the lock file, or None if unlocked / unreadable."""
        try:
            return LockHolder.from_bytes(self.storage.read(self.path))
        except StorageError:
            return None

    # ------------------------------------------------------------------ acquire / release
    def acquire(self, timeout_s: float | None = None, *, holder_file: str | None = None) -> None:
        """Take the lock, waiting up to ``timeout_s`` (default: the configured wait time).

        ``holder_file``: an existing file that names this process (a writer's heartbeat file) to
        hold the lock with — locally the lock file is then a hard link of it (``link(2)`` is as
        exclusive as the create and allocates no inode); else, or where no link can be made, a
        file of its own holding a JSON record.

        Raises :class:`LockError` naming the holder when the wait times out, and when this
        thread already holds the lock through this object (the lock is not re-entrant).
        """
        if self.held_by_current_thread():
            raise LockError(f"lock {self.storage.full_path(self.path)} is already held by this thread (not re-entrant)")
        timeout = self.wait_timeout_s if timeout_s is None else float(timeout_s)
        deadline = time.monotonic() + timeout
        if not self._thread_lock.acquire(timeout=max(0.0, timeout)):
            raise LockError(
                f"could not acquire lock {self.storage.full_path(self.path)} within {timeout:.3f}s: "
                f"held by another thread of this process"
            )
        try:
            self._acquire_file(deadline, timeout, holder_file)
        except BaseException:
            self._thread_lock.release()
            raise
        self._owner_thread = threading.get_ident()

    def _acquire_file(self, deadline: float, timeout: float, holder_file: str | None = None) -> None:
        delay = self.retry_interval_s
        retries = 0
        while True:
            owner = uuid.uuid4().hex
            try:
                if holder_file is None or not self._link(holder_file):
                    holder_file = None  # (no link here: a file of its own from now on)
                    self._create(json.dumps({"owner": owner, "pid": os.getpid(), "host": self._host,
                                             "acquired_at_ms": _now_ms()}).encode("utf-8"))
            except AlreadyExistsError:
                pass
            else:
                self._owner_id = owner
                self._acquired_mono = time.monotonic()
                return
            holder = self.holder()
            if holder is None and not self.storage.exists(self.path):
                continue  # released between our attempt and the read: retry at once
            if self._is_stale(holder):
                self._break(holder)
                continue
            now = time.monotonic()
            if now >= deadline or (self.num_retries is not None and retries >= self.num_retries):
                who = holder.describe() if holder is not None else "an unreadable lock file"
                raise LockError(
                    f"could not acquire lock {self.storage.full_path(self.path)} within {timeout:.3f}s "
                    f"({retries} retries): held by {who}"
                )
            retries += 1
            import random  # (only a contended lock waits: a read never does)

            time.sleep(min(delay * random.uniform(0.5, 1.0), max(0.0, deadline - now)))
            delay = min(delay * 2.0, self.max_retry_interval_s)

    def _create(self, payload: bytes) -> None:
        """Create the lock file holding ``payload`` (unsynced: a lock never outlives a crash).

        Locally one exclusive ``open`` and a write: a waiter that reads the file in between
        finds it empty — an unknown holder whose lock is fresh, so it waits as for any other.
        The file stays open until the release, which recognises it by its inode (an open file's
        inode is never reused) instead of reading the holder back. Elsewhere
        :meth:`Storage.create_if_absent`."""
        if not self.storage.is_local:
            self.storage.create_if_absent(self.path, payload, durable=False)
            return
        path = self.storage.full_path(self.path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        try:
            fd = open_local(path, flags)
        except FileExistsError as exc:
            raise AlreadyExistsError(f"file already exists: {path}") from exc
        except OSError as exc:
            raise StorageError(f"cannot create {path}: {exc}") from exc
        try:
            os.write(fd, payload)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _link(self, holder_file: str) -> bool:
        """Take the lock as a hard link of ``holder_file`` (raises :class:`AlreadyExistsError` when
        it is held); False where no link can be made (not local, no such file, no hard links).
        The holder file's modification time is set to now first, so the lock is fresh the moment
        it appears (its age counts from the acquisition, not from the holder's last write), and
        the lock is kept open: the release knows it by its inode."""
        if not self.storage.is_local:
            return False
        path, holder = self.storage.full_path(self.path), self.storage.full_path(holder_file)
        try:
            os.utime(holder)
            os.link(holder, path)
        except FileExistsError:
            raise AlreadyExistsError(f"file already exists: {path}") from None
        except OSError:
            return False
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            os.unlink(path)
            raise StorageError(f"cannot open the lock {path}: {exc}") from exc
        self._fd = fd
        return True

    def release(self) -> None:
        """Release the lock; raises :class:`LockError` if this object does not hold it."""
        if not self.held:
            raise LockError(f"lock {self.storage.full_path(self.path)} is not held by this object")
        if self._owner_thread is not None and self._owner_thread != threading.get_ident():
            raise LockError(f"lock {self.storage.full_path(self.path)} is held by another thread")
        owner = self._owner_id
        held_for = time.monotonic() - (self._acquired_mono or time.monotonic())
        try:
            # Quick path: nobody can consider a lock held for less than half the expiry stale
            # (dead-pid breaking cannot apply: we are alive), so no breaker can race with us.
            if self.expiry_s <= 0 or held_for < self.expiry_s / 2:
                self._delete_if_owner(owner)
            else:
                with _BreakerGuard(self):
                    self._delete_if_owner(owner)
        finally:
            self._owner_id = None
            self._owner_thread = None
            self._acquired_mono = None
            self._close_file()
            self._thread_lock.release()

    def _delete_if_owner(self, owner: str | None) -> None:
        """Delete the lock file if it is still the one this object created: locally, the file
        at the path has the inode of the file it holds open; elsewhere, it names ``owner``."""
        if self._fd is not None:
            try:
                ours, there = os.fstat(self._fd), os.stat(self.storage.full_path(self.path))
            except FileNotFoundError:
                return  # (broken as stale and not taken since)
            if (ours.st_ino, ours.st_dev) == (there.st_ino, there.st_dev):
                self.storage.delete(self.path)
            return
        current = self.holder()
        if current is not None and current.owner == owner:
            self.storage.delete(self.path)

    def _close_file(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    # ------------------------------------------------------------------ stale locks
    def _lock_age_s(self, holder: LockHolder | None) -> float | None:
        """Age of the lock file: from its modification time, else from its content."""
        mtime_ns = self._mtime_ns(self.path)
        if mtime_ns is not None:
            return (time.time_ns() - mtime_ns) / 1e9
        if holder is not None and holder.acquired_at_ms is not None:
            return (_now_ms() - holder.acquired_at_ms) / 1000.0
        return None

    def _empty(self) -> bool:
        try:
            return self.storage.size(self.path) == 0
        except StorageError:
            return False

    def _mtime_ns(self, path: str) -> int | None:
        import pyarrow.fs as pafs  # (writes only: a read imports less, issue 15)

        try:
            info = self.storage.fs.get_file_info(self.storage.full_path(path))
        except OSError:
            return None
        if info.type == pafs.FileType.NotFound:
            return None
        return info.mtime_ns

    def _is_stale(self, holder: LockHolder | None) -> bool:
        if holder is not None and holder.host == self._host and holder.pid is not None:
            if holder.pid != os.getpid() and not pid_alive(holder.pid):
                return True
        age = self._lock_age_s(holder)
        if holder is None and age is not None and age > EMPTY_LOCK_GRACE_S and self._empty():
            return True  # (a holder that died between creating the file and writing it)
        if self.expiry_s <= 0:
            return False
        return age is not None and age > self.expiry_s

    def _break(self, seen: LockHolder | None) -> None:
        """Delete the stale lock ``seen`` if it is still there, under the breaker lock."""
        try:
            guard = _BreakerGuard(self, wait=False)
            guard.__enter__()
        except _BreakerBusy:
            time.sleep(self.retry_interval_s)
            return
        try:
            current = self.holder()
            same = (current is None and seen is None) or (
                current is not None and seen is not None and current.owner == seen.owner
            )
            if same and self.storage.exists(self.path) and self._is_stale(current):
                self.storage.delete(self.path)
                self.broken_count += 1
        finally:
            guard.__exit__()


class _BreakerBusy(Exception):
    pass


class _BreakerGuard:
    """The short second lock that serialises breaking (and late releases) of the main lock."""

    _BREAKER_EXPIRY_S = 10.0

    def __init__(self, lock: FileLock, wait: bool = True) -> None:
        self.lock = lock
        self.wait = wait

    def __enter__(self) -> _BreakerGuard:
        lock = self.lock
        deadline = time.monotonic() + max(lock.wait_timeout_s, 1.0)
        while True:
            try:
                lock.storage.create_if_absent(lock.break_path, str(os.getpid()).encode())
                return self
            except AlreadyExistsError:
                pass
            mtime = lock._mtime_ns(lock.break_path)
            # The breaker is held for microseconds; one this old belongs to a crashed breaker.
            if mtime is not None and (time.time_ns() - mtime) / 1e9 > self._BREAKER_EXPIRY_S:
                lock.storage.delete(lock.break_path)
                continue
            if not self.wait:
                raise _BreakerBusy()
            if time.monotonic() >= deadline:
                raise LockError(f"could not acquire lock breaker {lock.storage.full_path(lock.break_path)}")
            time.sleep(lock.retry_interval_s)

    def __exit__(self, *exc: Any) -> None:
        self.lock.storage.delete(self.lock.break_path)


__all__ = [
    "FileLock",
    "LockHolder",
    "DEFAULT_LOCK_PATH",
    "LOCK_WAIT_TIME_MS",
    "LOCK_NUM_RETRIES",
    "LOCK_RETRY_WAIT_MS",
    "LOCK_MAX_RETRY_WAIT_MS",
    "LOCK_EXPIRE_MINUTES",
]


class TimelineLock(Protocol):
    """What the generator and the timeline need from a lock provider."""

    def acquire(self, timeout_s: float | None = None) -> None: ...

    def release(self) -> None: ...

    def held_by_current_thread(self) -> bool: ...


class Locked:
    """Hold ``lock`` for a block unless the current thread already holds it (callers may nest)."""

    def __init__(self, lock: TimelineLock, holder_file: str | None = None) -> None:
        self.lock = lock
        self.holder_file = holder_file  # (the local file lock's: see FileLock.acquire)
        self.taken = False

    def __enter__(self) -> Locked:
        if not self.lock.held_by_current_thread():
            if self.holder_file is not None and isinstance(self.lock, FileLock):
                self.lock.acquire(holder_file=self.holder_file)
            else:
                self.lock.acquire()
            self.taken = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.taken:
            self.lock.release()

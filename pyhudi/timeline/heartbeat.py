"""Writer heartbeats: how a pending instant of a live writer is told from one of a dead writer.

Every writer touches ``.hoodie/.heartbeat/<instant>`` from a daemon thread while its instant is
pending (Hudi's ``HoodieHeartbeatClient``). A pending instant whose heartbeat is fresh belongs to
a live writer and is never rolled back; one whose heartbeat expired (interval × tolerable
misses), was never written, or names a dead process of this host is a failed write.
"""

from __future__ import annotations

import os
import socket
import threading
import time

from pyhudi.errors import StorageError
from pyhudi.storage.fs import Storage, open_local
from pyhudi.timeline.lock import pid_alive

HEARTBEAT_DIR = ".hoodie/.heartbeat"
def _host_identity() -> str:
    """This host's name plus its pid namespace: containers sharing a host name (host networking)
    but not their pids must not judge each other's writers by pid."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")  # e.g. "pid:[4026531836]"
    except OSError:
        return socket.gethostname()
    return f"{socket.gethostname()}/{namespace.strip('pid:[]')}"


_HOST = _host_identity()


DETACHED_TIMEOUT_MS = 3_600_000
"""The timeout a detached heartbeat records (:meth:`Heartbeat.untie`): the write goes on in tasks
that beat only while they run — between the driver's begin and the first task (a shuffle, an
upstream stage) nobody beats, so the instant counts as alive for an hour at least."""


class Heartbeat:
    """Touches ``.hoodie/.heartbeat/<instant>`` while a write runs (from :data:`_BEATER`, the one
    daemon thread of the process that beats every running heartbeat when it is due: a thread per
    write cost each commit a thread start and join).

    The file holds the time of the last beat in epoch ms on its first line (Java Hudi reads the
    file's modification time, which the rename sets too), then ``timeout_ms=<n>`` — how long the
    writer may go without a beat (its interval x tolerable misses): every writer judges another
    writer's heartbeat by the timeout *that* writer set, never by its own settings — and, with
    ``tied_to_process``, ``owner=<pid>@<host>``: a writer that dies on this host is then seen as
    gone at once. Beats from processes that may end while the write goes on (a Spark planning
    worker, a task) are not tied.
    """

    def __init__(self, storage: Storage, instant: str, interval_ms: int, tied_to_process: bool = True,
                 misses: int = 2, timeout_ms: int | None = None) -> None:
        self.storage = storage
        self.relpath = f"{HEARTBEAT_DIR}/{instant}"
        self.interval_s = max(interval_ms, 10) / 1000.0
        self.timeout_ms = timeout_ms if timeout_ms is not None else max(interval_ms, 10) * max(misses, 1)
        self.tied_to_process = tied_to_process
        self._guard = threading.Lock()  # held by a beat in progress: stop waits for it
        self._beating = False

    def start(self) -> "Heartbeat":
        self._beat()
        self._beating = True
        _BEATER.add(self)
        return self

    def _beat(self) -> None:
        # write-then-rename: a reader never sees an empty (torn) heartbeat
        lines = [str(int(time.time() * 1000)), f"timeout_ms={self.timeout_ms}"]
        if self.tied_to_process:
            lines.append(f"owner={os.getpid()}@{_HOST}")
        tmp = f"{self.relpath}.{os.getpid()}.{threading.get_ident()}.tmp"  # unique across processes too
        data = "\n".join(lines).encode()
        if not self.storage.is_local:
            self.storage.write(tmp, data)
            self.storage.rename(tmp, self.relpath)
            return
        path, tmp_path = self.storage.full_path(self.relpath), self.storage.full_path(tmp)
        try:
            fd = open_local(tmp_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp_path, path)
        except OSError as exc:
            raise StorageError(f"cannot write heartbeat {path}: {exc}") from exc

    def _beat_if_running(self) -> None:
        """A beat from the beater thread, unless the heartbeat stopped meanwhile."""
        with self._guard:
            if self._beating:
                try:
                    self._beat()
                except StorageError:
                    pass  # a missed beat is tolerated; enough of them mark the writer failed

    def stop(self, delete: bool = True) -> None:
        """Stop beating (a beat in progress finishes first: none comes after this returns);
        ``delete=False`` leaves the file as it is (fresh, for whoever goes on)."""
        _BEATER.remove(self)
        took = self._guard.acquire(timeout=5)
        self._beating = False
        if took:
            self._guard.release()
        if delete:
            self.storage.delete(self.relpath)

    @property
    def detached(self) -> bool:
        """Whether :meth:`untie` left the beat (no process named, the long timeout)."""
        return not self.tied_to_process and self.timeout_ms >= DETACHED_TIMEOUT_MS and not self._beating

    def untie(self) -> None:
        """Stop beating and leave a fresh beat that names no process and a long timeout
        (:data:`DETACHED_TIMEOUT_MS`): the write goes on elsewhere, so this process ending says
        nothing about it."""
        self.stop(delete=False)
        self.tied_to_process = False
        self.timeout_ms = max(self.timeout_ms, DETACHED_TIMEOUT_MS)
        self._beat()


class _Beater:
    """The process's heartbeat thread: beats each running :class:`Heartbeat` every interval.
    Started on the first heartbeat and kept (waking every :data:`_IDLE_S` at most, to look for
    new ones) for the next: a heartbeat due later than that wakes nobody when it starts."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:  # (also in a forked child: the parent's thread and beats are not its own)
        self._wake = threading.Condition()
        self._due: dict[Heartbeat, float] = {}  # heartbeat -> when its next beat is due (monotonic)
        self._wakes_at = 0.0  # when the thread looks at ``_due`` next (0: now)
        self._thread: threading.Thread | None = None

    def add(self, heartbeat: Heartbeat) -> None:
        with self._wake:
            at = self._due[heartbeat] = time.monotonic() + heartbeat.interval_s
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="pyhudi-heartbeats", daemon=True)
                self._thread.start()
            elif at < self._wakes_at:
                self._wake.notify()

    def remove(self, heartbeat: Heartbeat) -> None:
        with self._wake:
            self._due.pop(heartbeat, None)

    def _run(self) -> None:
        while True:
            with self._wake:
                now = time.monotonic()
                due = [h for h, at in self._due.items() if at <= now]
                for heartbeat in due:
                    self._due[heartbeat] = now + heartbeat.interval_s
                if not due:
                    self._wakes_at = min([*self._due.values(), now + _IDLE_S])
                    self._wake.wait(self._wakes_at - now)
                    self._wakes_at = 0.0
                    continue
            for heartbeat in due:  # (outside the condition: a slow store delays no start or stop)
                try:
                    heartbeat._beat_if_running()
                except Exception:  # (one store's unexpected error must not stop every other heartbeat)
                    pass  # a missed beat is tolerated, as in _beat_if_running


_IDLE_S = 5.0
_BEATER = _Beater()
os.register_at_fork(after_in_child=_BEATER._reset)


def heartbeat_expired(storage: Storage, instant: str, interval_ms: int, misses: int, now_ms: int | None = None) -> bool:
    """True if the writer of ``instant`` is gone: it stopped beating (or never started) for longer
    than the timeout it recorded (``interval_ms`` x ``misses`` for heartbeats that record none,
    e.g. Java Hudi's), or its heartbeat names a process of this host that no longer exists."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    try:
        lines = storage.read(f"{HEARTBEAT_DIR}/{instant}").decode().split("\n")
        last = int(lines[0].strip() or 0)
    except (StorageError, ValueError, UnicodeDecodeError):
        return True
    fields = dict(line.split("=", 1) for line in lines[1:] if "=" in line)
    try:
        timeout = int(fields.get("timeout_ms", interval_ms * misses))
    except ValueError:
        timeout = interval_ms * misses
    if now_ms - last > timeout:
        return True
    pid, _, host = fields.get("owner", "").partition("@")
    if host == _HOST and pid.isdigit():
        return not pid_alive(int(pid))
    return False

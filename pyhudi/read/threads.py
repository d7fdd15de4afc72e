"""The process's read threads: helpers that run a collected read's tasks beside the caller.

``concurrent.futures`` would do, but importing it (and ``logging`` with it) costs a cold read
more than its threads save (issue 15), and a read needs little of it: hand a callable to an idle
thread, cancel it if it is still queued when the read is over, wait for it if it runs. The
threads are daemons waiting on a queue, started once per process (a forked child starts its
own): starting threads on every read costs as much as a small read.
"""

from __future__ import annotations

import os
import threading
from queue import SimpleQueue
from typing import Callable


class Helper:
    """One callable handed to a read thread: queued, then running or cancelled, then done."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self._fn = fn
        self._lock = threading.Lock()
        self._state = "queued"
        self._done = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        with self._lock:
            if self._state != "queued":
                return
            self._state = "running"
        try:
            self._fn()
        except BaseException as exc:  # (handed to the waiting caller by result())
            self.error = exc
        finally:
            self._done.set()

    def cancel(self) -> bool:
        """Withdraw the callable if no thread has started it; whether it was withdrawn."""
        with self._lock:
            if self._state == "queued":
                self._state = "cancelled"
                self._done.set()
                return True
            return False

    def wait(self) -> None:
        self._done.wait()

    def result(self) -> None:
        """Wait for the callable; raise what it raised."""
        self._done.wait()
        if self.error is not None:
            raise self.error


class ReadThreads:
    """``count`` daemon threads running handed-over callables in turn."""

    def __init__(self, count: int, name: str = "pyhudi-read") -> None:
        self._jobs: SimpleQueue = SimpleQueue()
        for i in range(count):
            threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True).start()

    def _work(self) -> None:
        while True:
            self._jobs.get().run()

    def submit(self, fn: Callable[[], None]) -> Helper:
        helper = Helper(fn)
        self._jobs.put(helper)
        return helper


_THREADS: tuple[int, ReadThreads] | None = None
_LOCK = threading.Lock()


def shared_threads() -> ReadThreads:
    """The process's read threads (one per CPU), started on first use."""
    global _THREADS
    with _LOCK:
        if _THREADS is None or _THREADS[0] != os.getpid():
            _THREADS = (os.getpid(), ReadThreads(os.cpu_count() or 1))
        return _THREADS[1]


def own_thread(fn: Callable[[], None]) -> Helper:
    """A helper on a thread of its own (more helpers than the shared threads): started now."""
    helper = Helper(fn)
    threading.Thread(target=helper.run, name="pyhudi-read-extra", daemon=True).start()
    return helper

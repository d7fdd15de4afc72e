"""The read's helper threads, without ``concurrent.futures`` (issue 15: a cold read).

A collected read runs its tasks on the caller's thread and on helper threads (Arrow releases
the GIL while it decodes). ``concurrent.futures`` would cost a fresh process ~3 ms to import
(it loads ``logging``, ``traceback`` and ``string``), and all the read needs of it is: start a
few threads once per process, hand them a function, cancel it if no thread took it yet, and
wait for it. :class:`HelperThreads` is that, on ``threading`` and ``queue.SimpleQueue`` (which
pyarrow has imported already).
"""

from __future__ import annotations

import queue
import threading
from typing import Callable

_QUEUED, _RUNNING, _CANCELLED = 0, 1, 2


class Job:
    """One function handed to the helpers: cancelled while queued, or run once."""

    def __init__(self, fn: Callable[[], object]) -> None:
        self._fn, self._state, self._error = fn, _QUEUED, None
        self._lock, self._done = threading.Lock(), threading.Event()

    def cancel(self) -> bool:
        """Withdraw the job if no thread has taken it yet; whether it was withdrawn."""
        with self._lock:
            if self._state != _QUEUED:
                return self._state == _CANCELLED
            self._state = _CANCELLED
        self._done.set()
        return True

    @property
    def cancelled(self) -> bool:
        return self._state == _CANCELLED

    def exception(self) -> BaseException | None:
        """Wait until the job ended; what it raised (None: it returned, or was cancelled)."""
        self._done.wait()
        return self._error

    def _run(self) -> None:
        with self._lock:
            if self._state != _QUEUED:
                return
            self._state = _RUNNING
        try:
            self._fn()
        except BaseException as exc:  # (handed to the waiting caller)
            self._error = exc
        finally:
            self._done.set()


class HelperThreads:
    """Up to ``workers`` daemon threads, started as jobs arrive, taking jobs in order."""

    def __init__(self, workers: int, name: str) -> None:
        self.workers, self.name = workers, name
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def submit(self, fn: Callable[[], object]) -> Job:
        job = Job(fn)
        self._jobs.put(job)
        with self._lock:
            if len(self._threads) < self.workers:
                thread = threading.Thread(target=self._work, name=f"{self.name}_{len(self._threads)}", daemon=True)
                self._threads.append(thread)
                thread.start()
        return job

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            job._run()

    def shutdown(self) -> None:
        """Stop the threads once the queued jobs are done, and wait for them."""
        with self._lock:
            threads, self._threads = self._threads, []
        for _ in threads:
            self._jobs.put(None)
        for thread in threads:
            thread.join()

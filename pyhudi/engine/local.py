"""The in-process engine: a thread pool (Arrow and Parquet release the GIL), fork-safe.

One pool per worker count lives for the process and is shared by every :class:`LocalEngine`
(a write client makes a new engine per table handle, and a commit runs tasks once or twice):
starting and joining fresh threads on each call cost ~1–20 ms of a 200k-row insert on a
loaded 2-core machine, where the work itself is ~0.1–0.2 s of CPU. Two rules keep sharing safe:

- after a fork (PySpark workers fork) the child forgets the parent's pools — their threads do
  not exist there — and makes new ones on first use;
- a task that itself calls :meth:`LocalEngine.run_tasks` (nested engines) runs its inner tasks
  on its own thread: waiting on a shared, bounded pool from inside it could deadlock.

The same pool runs the halves of a write's serial vectorised steps (:func:`run_split`: record
keys and bucket hashes before the tasks start, which bound the wall time on two cores).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable, Sequence, TypeVar

from pyhudi.engine.base import Task

R = TypeVar("R")

_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()
_IN_WORKER = threading.local()


def _forget_pools() -> None:
    """In a forked child: the parent's worker threads are gone, so are its pools."""
    global _POOLS_LOCK
    _POOLS.clear()
    _POOLS_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)


def shared_pool(workers: int) -> ThreadPoolExecutor:
    """The process's pool of ``workers`` threads (created on first use)."""
    with _POOLS_LOCK:
        pool = _POOLS.get(workers)
        if pool is None:
            pool = _POOLS[workers] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pyhudi-local")
        return pool


def _run_marked(task: Task[R]) -> R:
    _IN_WORKER.active = True
    try:
        return task.run()
    finally:
        _IN_WORKER.active = False


class LocalEngine:
    """Runs tasks on a thread pool sized to the machine (or ``parallelism``)."""

    name = "local"

    def __init__(self, parallelism: int | None = None) -> None:
        self.parallelism = max(1, parallelism or os.cpu_count() or 1)

    def run_tasks(self, tasks: Sequence[Task[R]]) -> list[R]:
        if len(tasks) <= 1 or self.parallelism == 1 or getattr(_IN_WORKER, "active", False):
            return [task.run() for task in tasks]
        pool = shared_pool(self.parallelism)
        futures = [pool.submit(_run_marked, task) for task in tasks]
        wait(futures)  # (as before pools were shared: every task finishes before a failure is raised)
        return [future.result() for future in futures]


def run_split(pieces: Sequence[Callable[[], R]]) -> list[R]:
    """The results of ``pieces`` — parts of one vectorised step of the calling thread (a write's
    record keys and bucket hashes, half of the rows each) — computed on the machine's cores: the
    caller computes the first piece and the process's pool the others (Arrow and NumPy release
    the GIL). Serial on one core, inside a worker (no waiting on the bounded pool from inside
    it), and for a piece no worker has started by the time the caller is done with its own: the
    caller takes it back (a pool busy with another write's tasks never delays this one)."""
    workers = os.cpu_count() or 1
    if len(pieces) <= 1 or workers == 1 or getattr(_IN_WORKER, "active", False):
        return [piece() for piece in pieces]
    pool = shared_pool(workers)
    futures = [pool.submit(_run_piece, piece) for piece in pieces[1:]]
    try:
        results = [pieces[0]()]
        for piece, future in zip(pieces[1:], futures):
            results.append(piece() if future.cancel() else future.result())
    except BaseException:
        for future in futures:  # (the step failed: the pieces no worker has started are dropped)
            future.cancel()
        raise
    return results


def _run_piece(piece: Callable[[], R]) -> R:
    _IN_WORKER.active = True
    try:
        return piece()
    finally:
        _IN_WORKER.active = False

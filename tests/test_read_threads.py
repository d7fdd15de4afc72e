"""The read threads (:mod:`pyhudi.read.threads`) that run a collected read's tasks beside the
caller, without ``concurrent.futures`` (cold start, issue 15): results in task order, the first
error raised after every running helper stopped, queued helpers withdrawn."""

from __future__ import annotations

import os
import threading
import time

import pytest

from pyhudi.read.plan import run_tasks
from pyhudi.read.threads import Helper, ReadThreads, shared_threads


class _Task:
    def __init__(self, value: int, fail: bool = False, delay: float = 0.0) -> None:
        self.value, self.fail, self.delay = value, fail, delay
        self.thread = None

    def run(self) -> int:
        self.thread = threading.current_thread()
        time.sleep(self.delay)
        if self.fail:
            raise ValueError(f"task {self.value} failed")
        return self.value * 10


def test_tasks_run_on_the_caller_and_the_shared_daemon_threads_in_order():
    tasks = [_Task(i, delay=0.01) for i in range(8)]
    assert run_tasks(tasks, 2) == [i * 10 for i in range(8)]
    threads = {t.thread for t in tasks}
    helpers = [t for t in threads if t is not threading.current_thread()]
    assert all(t.daemon and t.name.startswith("pyhudi-read-") for t in helpers)
    assert shared_threads() is shared_threads()


def test_more_workers_than_cpus_start_threads_of_their_own():
    workers = (os.cpu_count() or 1) + 2
    tasks = [_Task(i, delay=0.01) for i in range(workers * 2)]
    assert run_tasks(tasks, workers) == [i * 10 for i in range(workers * 2)]
    assert any(t.thread.name == "pyhudi-read-extra" for t in tasks)


def test_the_first_error_is_raised_and_later_tasks_do_not_start():
    tasks = [_Task(0, fail=True), *[_Task(i, delay=0.05) for i in range(1, 6)]]
    with pytest.raises(ValueError, match="task 0 failed"):
        run_tasks(tasks, 2)
    assert sum(t.thread is not None for t in tasks) < len(tasks)  # (the rest were never run)


def test_a_helper_queued_behind_busy_threads_is_withdrawn():
    pool = ReadThreads(1, name="pyhudi-read-test")
    release = threading.Event()
    busy = pool.submit(release.wait)
    ran = []
    queued = pool.submit(lambda: ran.append(1))
    assert queued.cancel() is True
    release.set()
    busy.result()
    queued.result()  # (a withdrawn helper is done: nothing to wait for, nothing raised)
    time.sleep(0.01)
    assert ran == []
    started = Helper(lambda: None)
    started.run()
    assert started.cancel() is False

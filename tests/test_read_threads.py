"""A collected read's tasks on helper threads (:mod:`pyhudi.read.threads`, ``plan.run_tasks``):
results in task order, the first error raised after every running helper ended, jobs
cancelled while queued, more workers than cores on threads of their own."""

from __future__ import annotations

import os
import threading
import time

import pytest

from pyhudi.errors import ReadError
from pyhudi.read import plan
from pyhudi.read.threads import HelperThreads


class _Task:
    def __init__(self, value: int, fail: bool = False, pause: float = 0.0) -> None:
        self.value, self.fail, self.pause = value, fail, pause
        self.thread: str | None = None

    def run(self) -> int:
        self.thread = threading.current_thread().name
        time.sleep(self.pause)
        if self.fail:
            raise ReadError(f"task {self.value} failed")
        return self.value * 10


def test_results_come_in_task_order_from_several_threads():
    tasks = [_Task(i, pause=0.01) for i in range(8)]
    assert plan.run_tasks(tasks, 2) == [i * 10 for i in range(8)]
    assert {t.thread for t in tasks} >= {threading.current_thread().name}
    assert any(t.thread.startswith("pyhudi-read_") for t in tasks)


def test_the_first_error_is_raised_and_stops_the_remaining_tasks():
    tasks = [_Task(0, fail=True), *[_Task(i, pause=0.02) for i in range(1, 20)]]
    with pytest.raises(ReadError, match="task 0 failed"):
        plan.run_tasks(tasks, 2)
    assert sum(t.thread is not None for t in tasks) < 20


def test_a_helper_error_is_raised_by_the_caller():
    tasks = [_Task(0, pause=0.05), _Task(1, fail=True)]
    with pytest.raises(ReadError, match="task 1 failed"):
        plan.run_tasks(tasks, 2)


def test_more_workers_than_cores_run_on_threads_started_for_the_read():
    workers = (os.cpu_count() or 1) + 2
    tasks = [_Task(i, pause=0.01) for i in range(workers * 2)]
    assert plan.run_tasks(tasks, workers) == [i * 10 for i in range(workers * 2)]
    assert not [t for t in threading.enumerate() if t.name.startswith("pyhudi-read-own")]  # (shut down)


def test_a_queued_job_is_cancelled_and_a_running_one_is_not():
    helpers = HelperThreads(1, "test-helpers")
    started, release = threading.Event(), threading.Event()
    ran = []
    first = helpers.submit(lambda: (started.set(), release.wait(), ran.append(1)))
    second = helpers.submit(lambda: ran.append(2))
    assert started.wait(5)
    assert not first.cancel() and second.cancel() and second.cancelled
    release.set()
    assert first.exception() is None and second.exception() is None
    helpers.shutdown()
    assert ran == [1]

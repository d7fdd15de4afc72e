"""The local engine: one shared thread pool per worker count, fork-safe, nesting-safe, and files
written in parallel byte-identical to files written one task after another."""

from __future__ import annotations

import os
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pyhudi.engine.local import LocalEngine, shared_pool
from process_helpers import wait_child
from pyhudi.logformat import parquet_options_for
from pyhudi.logformat.parquet_options import options_for_columns
from pyhudi.write.handle import KIND_APPEND, KIND_CREATE, META_PARQUET_OPTIONS, RECORD_KEY, FamilyPayload, \
    FileGroupWriteTask


class Named:
    """A task returning its value and the name of the thread that ran it."""

    def __init__(self, value, effect=None, fail=False):
        self.value, self.effect, self.fail = value, effect, fail

    def run(self):
        time.sleep(0.01)
        if self.effect is not None:
            self.effect.append(self.value)
        if self.fail:
            raise ValueError(f"task {self.value} failed")
        return self.value, threading.current_thread().name


def test_engines_share_one_pool_and_return_results_in_task_order():
    first = LocalEngine(2).run_tasks([Named(i) for i in range(6)])
    second = LocalEngine(2).run_tasks([Named(i) for i in range(3)])
    assert [v for v, _ in first] == list(range(6)) and [v for v, _ in second] == [0, 1, 2]
    assert all(name.startswith("pyhudi-local") for _, name in first + second)
    assert shared_pool(2) is shared_pool(2)
    assert len({name for _, name in first + second}) <= 2  # the same two workers serve both engines


def test_a_single_task_or_one_worker_runs_on_the_calling_thread():
    me = threading.current_thread().name
    assert LocalEngine(2).run_tasks([Named(1)]) == [(1, me)]
    assert LocalEngine(1).run_tasks([Named(1), Named(2)]) == [(1, me), (2, me)]


def test_every_task_finishes_before_the_first_failure_is_raised():
    done: list[int] = []
    tasks = [Named(0, done), Named(1, done, fail=True), Named(2, done, fail=True), Named(3, done)]
    with pytest.raises(ValueError, match="task 1 failed"):
        LocalEngine(2).run_tasks(tasks)
    assert sorted(done) == [0, 1, 2, 3]


class Nested:
    """A task that runs tasks of its own on a local engine (as a service inside a task could)."""

    def __init__(self, value):
        self.value = value

    def run(self):
        inner = LocalEngine(2).run_tasks([Named(self.value * 10 + i) for i in range(3)])
        return [v for v, _ in inner], {name for _, name in inner} == {threading.current_thread().name}


def test_nested_run_tasks_run_inline_on_the_worker_without_deadlock():
    results = LocalEngine(2).run_tasks([Nested(v) for v in range(4)])  # 4 tasks > 2 workers, all nesting
    assert results == [([v * 10, v * 10 + 1, v * 10 + 2], True) for v in range(4)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_gets_its_own_pool():
    LocalEngine(2).run_tasks([Named(i) for i in range(4)])  # the parent's pool exists and has threads
    with warnings.catch_warnings():  # (Python 3.12+ warns about forking a process with threads: that is the point)
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # child: the parent's worker threads do not exist here
        code = 1
        try:
            out = LocalEngine(2).run_tasks([Named(i) for i in range(4)])
            code = 0 if [v for v, _ in out] == [0, 1, 2, 3] else 2
        finally:
            os._exit(code)
    status = wait_child(pid, 60, "the forked child hung waiting on the parent's pool")
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _tasks(root: Path, kind: str) -> list[FileGroupWriteTask]:
    """Four file groups of 3 families (id + 4 doubles each), the planner's Parquet options."""
    rng = np.random.default_rng(11)
    n = 4000
    data = {"id": pa.array(np.arange(n, dtype=np.int64)), **{f"c{c}": pa.array(rng.random(n)) for c in range(12)}}
    rows = pa.table(data)
    keys = pc.cast(rows.column("id"), pa.string())
    rows = rows.add_column(0, RECORD_KEY, keys).take(pc.sort_indices(keys))
    options = parquet_options_for(rows, META_PARQUET_OPTIONS, ["id"])
    tasks = []
    for group in range(4):
        part = rows.slice(group * 1000, 1000)
        payloads = []
        for f in range(3):
            names = [RECORD_KEY, "id", *[f"c{c}" for c in range(f * 4, f * 4 + 4)]]
            payloads.append(FamilyPayload(f"f{f}", part.select(names), False, None, plan="p",
                                          parquet_options=options_for_columns(options, [*META_PARQUET_OPTIONS, *names])))
        tasks.append(FileGroupWriteTask(base_uri=str(root), instant="20260101000000000", table_name="t",
                                        partition_path="", file_id=f"0000000{group}-0000-0000-0000-000000000000-0",
                                        kind=kind, write_token=f"{group}-1-0", payloads=payloads))
    return tasks


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and ".hoodie" not in p.parts}


@pytest.mark.parametrize("kind", [KIND_APPEND, KIND_CREATE])
def test_files_written_in_parallel_are_byte_identical_to_serial(tmp_path, kind):
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    one = LocalEngine(1).run_tasks(_tasks(serial, kind))
    two = LocalEngine(2).run_tasks(_tasks(parallel, kind))
    written, again = _files(serial), _files(parallel)
    assert len(written) == 12 and written == again
    assert [(s.file_name, s.num_records, s.bytes_written, s.min_key, s.max_key) for batch in one for s in batch] == \
        [(s.file_name, s.num_records, s.bytes_written, s.min_key, s.max_key) for batch in two for s in batch]


def test_run_split_returns_the_pieces_results_in_order_computing_the_first_on_the_caller():
    from pyhudi.engine.local import run_split

    me = threading.current_thread().name
    results = run_split([lambda: ("a", threading.current_thread().name), lambda: ("b", threading.current_thread().name)])
    assert [value for value, _ in results] == ["a", "b"]
    assert results[0][1] == me
    assert run_split([]) == [] and run_split([lambda: 7]) == [7]


def test_run_split_inside_a_worker_runs_serially_on_it():
    from pyhudi.engine.local import run_split

    class Nested:
        def run(self):
            me = threading.current_thread().name
            names = run_split([lambda: threading.current_thread().name] * 3)
            return names == [me] * 3

    assert LocalEngine(2).run_tasks([Nested(), Nested()]) == [True, True]


def test_run_split_takes_back_a_piece_no_worker_started(monkeypatch):
    """A pool busy with other tasks: the caller computes the queued piece itself, never waits."""
    from pyhudi.engine import local

    release = threading.Event()
    busy = [shared_pool(os.cpu_count() or 1).submit(release.wait) for _ in range(os.cpu_count() or 1)]
    try:
        if (os.cpu_count() or 1) > 1:
            me = threading.current_thread().name
            assert local.run_split([lambda: 1, lambda: threading.current_thread().name]) == [1, me]
    finally:
        release.set()
        for future in busy:
            future.result()

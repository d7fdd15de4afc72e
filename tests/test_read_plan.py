"""Scan planning (contract C1): plans, picklable tasks, pinned snapshots, scans and errors."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import ReadError, SchemaError
from pyhudi.read.plan import ScanPlan, normalize_time, plan_scan
from pyhudi.read.task import ReadTask

SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False), ("a", pa.float64()), ("b", pa.string()),
                    ("ts", pa.int64()), ("c", pa.int64()), ("d", pa.string())])
FAMILIES = {"f1": "a,b;ts", "f2": "c", "f3": "d"}


@pytest.fixture
def table(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2, column_families=FAMILIES)
    t.upsert(pa.table({"id": ["k1", "k2", "k3"], "a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"], "ts": [1, 1, 1],
                       "c": [10, 20, 30], "d": ["p", "q", "r"]}))
    return t


def test_plan_has_one_picklable_task_per_file_group(table):
    plan = plan_scan(table, columns=["id", "c"])
    assert isinstance(plan, ScanPlan)
    assert plan.schema == pa.schema([pa.field("id", pa.string(), nullable=False), ("c", pa.int64())])
    groups = table.file_groups()
    assert sorted((t.partition_path, t.file_id) for t in plan.tasks) == sorted((g.partition_path, g.file_id) for g in groups)
    assert len(plan.tasks) == 2
    rows = []
    for task in plan.tasks:
        clone = pickle.loads(pickle.dumps(task))
        assert isinstance(clone, ReadTask)
        result = clone.run()
        assert result.schema == plan.schema
        rows += result.to_pylist()
        for batch in task.batches():
            assert batch.schema == plan.schema
    assert sorted(rows, key=lambda r: r["id"]) == [{"id": "k1", "c": 10}, {"id": "k2", "c": 20}, {"id": "k3", "c": 30}]


def test_plan_pins_the_snapshot_instant(table):
    plan = plan_scan(table, columns=["id", "c"])
    assert plan.instant == table.timeline[-1].completion_time
    table.upsert(pa.table({"id": ["k1", "k9"], "c": [11, 99]}))
    old = sorted(plan.to_table().to_pylist(), key=lambda r: r["id"])  # replayed after a new commit
    assert old == [{"id": "k1", "c": 10}, {"id": "k2", "c": 20}, {"id": "k3", "c": 30}]
    again = plan_scan(table, columns=["id", "c"], as_of=plan.instant).to_table()
    assert sorted(again.to_pylist(), key=lambda r: r["id"]) == old
    assert plan_scan(table).instant == table.timeline[-1].completion_time


def test_scan_streams_record_batches(table):
    reader = table.scan(columns=["id", "d"], filters=[("d", "!=", "q")], batch_size=1)
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema == pa.schema([pa.field("id", pa.string(), nullable=False), ("d", pa.string())])
    batches = list(reader)
    assert all(b.num_rows == 1 for b in batches)
    assert sorted(r["id"] for b in batches for r in b.to_pylist()) == ["k1", "k3"]


def test_empty_table_plans_no_tasks(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "e"), SCHEMA, "id", num_buckets=2, column_families=FAMILIES)
    plan = plan_scan(t)
    assert plan.tasks == [] and plan.instant is None
    assert t.read().num_rows == 0 and t.read().schema == SCHEMA


def test_plan_errors_name_the_problem(table):
    with pytest.raises(ReadError, match="unknown query type 'realtime'"):
        plan_scan(table, query_type="realtime")
    with pytest.raises(ReadError, match="an incremental query needs a begin instant"):
        plan_scan(table, query_type="incremental")
    with pytest.raises(ReadError, match="begin/end apply to incremental queries"):
        plan_scan(table, begin="20240101000000000")
    with pytest.raises(ReadError, match="as_of 'yesterday' is not an instant time"):
        table.read(as_of="yesterday")
    with pytest.raises(ReadError, match="batch_size must be a positive integer, got 0"):
        table.scan(batch_size=0)
    with pytest.raises(SchemaError, match="columns must be a list of column names"):
        table.read(columns="id")
    with pytest.raises(SchemaError, match="filter .* 'in' needs a list of values"):
        table.read(filters=[("c", "in", 5)])
    with pytest.raises(SchemaError, match="'starts_with' needs a string column, 'c' is int64"):
        table.read(filters=[("c", "starts_with", "1")])
    with pytest.raises(SchemaError, match="compare with null using 'is null'"):
        table.read(filters=[("c", "=", None)])


def test_normalize_time_forms():
    assert normalize_time("20240102030405678", "as_of") == "20240102030405678"
    assert normalize_time("20240102030405", "as_of") == "20240102030405999"
    assert normalize_time("2024-01-02", "as_of") == "20240102000000000"
    assert normalize_time("2024-01-02 03:04:05.678", "as_of") == "20240102030405678"
    assert normalize_time(None, "as_of") is None


def test_reading_no_columns_counts_rows(table):
    assert table.read(columns=[]).num_rows == 3
    assert table.read(columns=[], filters=[("c", ">", 15)]).num_rows == 2
    batches = list(table.scan(columns=[]))
    assert sum(b.num_rows for b in batches) == 3 and all(b.num_columns == 0 for b in batches)


@pytest.mark.parametrize("collect", [True, False])
def test_a_missing_base_file_is_a_storage_error_naming_it(tmp_path, collect):
    """Collected reads memory-map local base files, streaming scans read them: both name a
    missing file."""
    import os

    from pyhudi.errors import StorageError

    table = pyhudi.create_table(str(tmp_path / "m"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
    table.bulk_insert(pa.table({"id": ["k1", "k2"], "c": [1, 2]}))
    plan = plan_scan(table, columns=["id", "c"])
    base = next(p.file_slice.base_file for p in plan.tasks[0].families if p.file_slice.base_file is not None)
    os.remove(table.storage.full_path(base.relpath))
    with pytest.raises(StorageError, match=f"cannot open .*{base.name.name}"):
        plan.to_table() if collect else list(plan.batches())


def test_run_tasks_keeps_task_order_and_raises_the_first_error():
    import threading

    from pyhudi.read.plan import run_tasks

    met = threading.Event()

    class Task:
        def __init__(self, i, fail=False):
            self.i, self.fail = i, fail

        def run(self):
            if self.i == 0:  # waits for task 1: only finishes early if two threads run tasks at once
                assert met.wait(10), "tasks did not run in parallel"
            elif self.i == 1:
                met.set()
            if self.fail:
                raise ValueError(f"task {self.i} failed")
            return self.i

    assert run_tasks([Task(i) for i in range(9)], 2) == list(range(9))
    assert run_tasks([Task(i) for i in range(1, 4)], 1) == [1, 2, 3]
    with pytest.raises(ValueError, match="task 4 failed"):
        run_tasks([Task(i, fail=i == 4) for i in range(9)], 2)
    assert run_tasks([Task(i) for i in range(5)], 8) == list(range(5))  # more workers than cores: own pool


def test_a_first_parallel_read_starts_threads_and_later_reads_keep_a_pool(monkeypatch):
    """A process's first parallel read runs its helpers on plain threads (a process that reads
    once never imports concurrent.futures); later reads submit them to a kept pool."""
    import threading

    import pyhudi.read.plan as plan

    monkeypatch.setattr(plan, "_POOL", None)
    monkeypatch.setattr(plan, "_READ_BEFORE", None)
    monkeypatch.setattr(plan.os, "cpu_count", lambda: 2)
    names: list[str] = []
    both = threading.Barrier(2, timeout=10)

    class Task:
        def run(self):
            both.wait()  # (the two tasks run at once: one on the caller, one on a helper)
            names.append(threading.current_thread().name)
            return 1

    assert plan.run_tasks([Task(), Task()], 2) == [1, 1]
    assert sorted(names) == ["MainThread", "pyhudi-read-0"]
    names.clear()
    assert plan.run_tasks([Task(), Task()], 2) == [1, 1]
    assert sorted(names) == ["MainThread", "pyhudi-read_0"]  # (the kept pool's thread)
    assert plan._POOL is not None
    plan._POOL[1].shutdown()


def test_a_read_whose_helper_threads_cannot_start_runs_on_the_caller(monkeypatch):
    """A process out of threads ("can't start new thread") still reads: the caller runs the tasks."""
    import threading

    import pyhudi.read.plan as plan

    monkeypatch.setattr(plan, "_POOL", None)
    monkeypatch.setattr(plan, "_READ_BEFORE", None)

    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)

    class Task:
        def __init__(self, i):
            self.i = i

        def run(self):
            return self.i

    assert plan.run_tasks([Task(i) for i in range(5)], 2) == list(range(5))


def test_a_collected_read_of_a_final_base_file_reads_it_whole_and_a_scan_streams_it(tmp_path, monkeypatch):
    """``read`` keeps every row anyway: a log-free slice is read in one multi-threaded call (as
    ``pq.read_table``); ``scan`` streams it batch by batch (bounded memory)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import pyhudi

    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.float64())])
    t = pyhudi.create_table(str(tmp_path / "w"), schema, "id", table_type="COPY_ON_WRITE")
    rows = 70_000  # more than one read batch (64k rows)
    t.bulk_insert(pa.table({"id": list(range(rows)), "v": [i / 2 for i in range(rows)]}, schema=schema))
    from pyhudi.storage.parquet import reader_class

    streamed = []
    real = reader_class().iter_batches

    def spy(self, *args, **kwargs):
        streamed.append(kwargs.get("batch_size"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(reader_class(), "iter_batches", spy)
    assert t.read().sort_by("id").column("v").to_pylist() == [i / 2 for i in range(rows)]
    assert streamed == []
    assert sum(b.num_rows for b in t.scan()) == rows and streamed

"""Subprocess entry points and row builders for tests/test_write.py.

Run as ``python tests/write_helpers.py <command> '<json args>'``:

- ``slow_upsert``: upsert ``ids`` with ``tag`` values; after the first log file of the write is
  on storage, touch ``ready_file`` and sleep (so the test can SIGKILL a writer mid-write).
- ``loop``: wait for ``go_file``, then run ``commits`` (each an upsert of ``columns`` for
  ``ids`` with ``tag``, or a delete) one after the other; print one JSON line per commit. With
  ``writers`` = N, the first commit of each writer waits before completing until all N writers
  hold a requested instant, so their commits overlap in time whatever the scheduler does.

Row values are a pure function of (column type, id, tag) — see :func:`value_of` — so the test
process can compute exactly what each writer wrote.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Sequence

import pyarrow as pa


def data_files(t) -> set[str]:
    """Every data file of table ``t`` (paths relative to its root; no timeline, no metafiles)."""
    root = Path(t.path)
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()
            and ".hoodie" not in p.relative_to(root).parts and p.name != ".hoodie_partition_metadata"}


def of(files: set[str], *instants: str) -> set[str]:
    """The files written by ``instants`` (their instant is in the name); each wrote at least one."""
    out = set()
    for instant in instants:
        mine = {f for f in files if f"_{instant}" in f.rpartition("/")[2]}
        assert mine, instant
        out |= mine
    return out


def fail_task_after(monkeypatch, n: int, error: BaseException) -> list[str]:
    """Make the ``n``-th file-group write task of this process raise ``error`` after writing its
    files (a task lost mid-write); returns the file ids of the tasks run, in order."""
    import pyhudi.write.handle as handle

    original, calls = handle.FileGroupWriteTask.run, []

    def run(self):
        out = original(self)
        calls.append(self.file_id)
        if len(calls) == n:
            raise error
        return out

    monkeypatch.setattr(handle.FileGroupWriteTask, "run", run)
    return calls


def value_of(field_type: pa.DataType, name: str, key: int, tag: int):
    if pa.types.is_floating(field_type):
        return key * 1000.0 + tag
    if pa.types.is_integer(field_type):
        return key * 1000 + tag
    if pa.types.is_string(field_type):
        return f"{name}-{key}-{tag}"
    raise TypeError(f"no test value for {field_type}")


def make_rows(schema: pa.Schema, columns: Sequence[str], ids: Sequence[int], tag: int) -> pa.Table:
    """``columns`` (the key column ``id`` first) for ``ids``; values from :func:`value_of`."""
    arrays = {}
    for name in columns:
        field = schema.field(name)
        if name == "id":
            arrays[name] = pa.array(list(ids), field.type)
        else:
            arrays[name] = pa.array([value_of(field.type, name, i, tag) for i in ids], field.type)
    return pa.table(arrays)


def _install_sleep_after_first_file(ready_file: str, seconds: float) -> None:
    import threading

    import pyhudi.write.handle as handle

    original = handle.write_log_file
    lock = threading.Lock()
    state = {"calls": 0}

    def hooked(storage, relpath, blocks, **kwargs):
        size = original(storage, relpath, blocks, **kwargs)
        with lock:
            state["calls"] += 1
            first = state["calls"] == 1
        if first:
            with open(ready_file + ".tmp", "w") as fh:
                fh.write(relpath)
            os.replace(ready_file + ".tmp", ready_file)
            time.sleep(seconds)
        return size

    handle.write_log_file = hooked


def _wait_for(path: str, timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if time.time() > deadline:
            raise SystemExit(f"{path} never appeared")
        time.sleep(0.005)


def wait_for_go(go_file: str) -> None:
    """Touch ``<go_file>.ready.<pid>`` (this process is set up), then wait for ``go_file``: the
    test starts every helper process at once."""
    Path(f"{go_file}.ready.{os.getpid()}").touch()
    _wait_for(go_file, timeout=60)


def _signal(path: str) -> None:
    with open(path + ".tmp", "w") as fh:
        fh.write("ready")
    os.replace(path + ".tmp", path)


def _install_pauses(pauses: Sequence[str], signal_dir: str) -> None:
    """Pause the write at ``inflight`` (after the requested instant, before the inflight file
    and the heartbeat), ``complete`` (files written, heartbeat live, before completion) or
    ``delete_markers`` (completed, heartbeat deleted, markers not yet deleted): touch
    ``<signal_dir>/ready_<point>``, then wait for ``<signal_dir>/go_<point>``."""
    import pyhudi.write.client as client
    from pyhudi.timeline.timeline import Timeline

    def pause(point: str) -> None:
        _signal(f"{signal_dir}/ready_{point}")
        _wait_for(f"{signal_dir}/go_{point}")

    if "inflight" in pauses:
        original_inflight = Timeline.transition_to_inflight

        def transition_to_inflight(self, instant, content=b""):
            if str(instant.action) == "deltacommit":
                pause("inflight")
            return original_inflight(self, instant, content)

        Timeline.transition_to_inflight = transition_to_inflight
    if "complete" in pauses:
        original_complete = Timeline.complete

        def complete(self, instant, content, **kwargs):
            if str(instant.action) == "deltacommit":
                pause("complete")
            return original_complete(self, instant, content, **kwargs)

        Timeline.complete = complete
    if "delete_markers" in pauses:
        import pyhudi.write.commit as commit

        original_delete = commit.delete_markers

        def delete_markers(storage, instant):
            pause("delete_markers")
            return original_delete(storage, instant)

        commit.delete_markers = delete_markers


def _install_first_commit_barrier(go_file: str, writers: int) -> None:
    """Before the first deltacommit completes, touch ``<go_file>.at_complete.<pid>`` and wait
    until ``writers`` such files exist: every writer then started a commit before any completes."""
    import glob

    from pyhudi.timeline.timeline import Timeline

    original_complete = Timeline.complete
    state = {"done": False}

    def complete(self, instant, content, **kwargs):
        if str(instant.action) == "deltacommit" and not state["done"]:
            state["done"] = True
            _signal(f"{go_file}.at_complete.{os.getpid()}")
            deadline = time.time() + 30
            while len(glob.glob(f"{go_file}.at_complete.*")) < writers:
                if time.time() > deadline:
                    raise SystemExit("the other writers never reached completion")
                time.sleep(0.005)
        return original_complete(self, instant, content, **kwargs)

    Timeline.complete = complete


def _result_json(table, result) -> str:
    return json.dumps({
        "instant": result.instant,
        "completion_time": result.completion_time,
        "files": result.files,
        "rolled_back": result.rolled_back,
    })


def main(argv: list[str]) -> int:
    import pyhudi
    from pyhudi.engine import LocalEngine

    command, args = argv[1], json.loads(argv[2])
    table = pyhudi.open_table(args["path"])
    if command == "slow_upsert":
        _install_sleep_after_first_file(args["ready_file"], args.get("sleep", 120))
        ids = range(*args["ids"])
        rows = make_rows(table.schema, args["columns"], ids, args["tag"])
        table.upsert(rows, engine=LocalEngine(parallelism=1))
        return 0
    if command == "paused_upsert":
        _install_pauses(args["pauses"], args["signal_dir"])
        rows = make_rows(table.schema, args["columns"], range(*args["ids"]), args["tag"])
        table.upsert(rows)
        print(_result_json(table, table.last_write), flush=True)
        return 0
    if command == "loop":
        if args.get("writers"):
            _install_first_commit_barrier(args["go_file"], args["writers"])
        table.active_timeline()  # warm up imports and the first listing before signalling readiness
        with open(f"{args['go_file']}.ready.{os.getpid()}", "w"):
            pass
        deadline = time.time() + 30
        while not os.path.exists(args["go_file"]):
            if time.time() > deadline:
                raise SystemExit("go file never appeared")
            time.sleep(0.005)
        for commit in args["commits"]:
            ids = range(*commit["ids"])
            if commit.get("delete"):
                table.delete(pa.table({"id": pa.array(list(ids), pa.int64())}))
            else:
                table.upsert(make_rows(table.schema, commit["columns"], ids, commit["tag"]))
            print(_result_json(table, table.last_write), flush=True)
        return 0
    raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))

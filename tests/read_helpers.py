"""Helpers shared by the read tests: running a scan plan's tasks one by one; a time just before a
completion; a process metadata cache emptied around a test; the two-family rows the positional
merge tests read; a reader raced by another process between its listing and its lookups."""

from __future__ import annotations

from typing import Sequence

import pyarrow as pa
import pytest

from pyhudi.read.metadata_cache import METADATA_CACHE

POSITIONS_SCHEMA = pa.schema([("id", pa.int64()), ("a1", pa.float64()), ("a2", pa.string()), ("b", pa.float64()),
                              ("ts", pa.int64())])
POSITIONS_FAMILIES = {"fa": "a1,a2", "fb": "b,ts"}


def positions_rows(ids) -> pa.Table:
    """Rows of :data:`POSITIONS_SCHEMA`: ``a1 = id``, ``a2 = "s<id>"``, ``b = 2 * id``, ``ts = 0``."""
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "a1": [float(i) for i in ids], "a2": [f"s{i}" for i in ids],
                     "b": [i * 2.0 for i in ids], "ts": pa.array([0] * len(ids), pa.int64())}, schema=POSITIONS_SCHEMA)


@pytest.fixture
def fresh_metadata_cache():
    """The process's metadata cache, empty before and after the test (import it into a test
    module and name it in ``pytestmark = pytest.mark.usefixtures(...)`` or an argument)."""
    METADATA_CACHE.clear()
    yield METADATA_CACHE
    METADATA_CACHE.clear()


def run_plan_tasks(table, columns: Sequence[str] | None, **options) -> tuple[pa.Table, dict[str, int]]:
    """The rows of one run of ``table.plan_scan(columns, **options)``'s tasks, in order, and their
    metrics summed over the tasks."""
    plan = table.plan_scan(list(columns) if columns is not None else None, **options)
    parts = [task.run() for task in plan.tasks]
    metrics: dict[str, int] = {}
    for task in plan.tasks:
        for name, value in task.metrics.items():
            metrics[name] = metrics.get(name, 0) + value
    return pa.concat_tables(parts), metrics


def just_before(table, completion: str) -> str:
    """A time just before ``completion`` that names no instant's requested time: the time a write
    returned stands for that write's completion, and a write that completes within a millisecond
    has its instant exactly 1 ms before its completion."""
    requested = {i.requested_time for i in [*table.timeline, *table.archived_timeline()]}
    before = str(int(completion) - 1)
    while before in requested:
        before = str(int(before) - 1)
    return before


def racing_reader(path: str, monkeypatch, meanwhile):
    """A table handle standing for a reader in a process of its own (the process-wide caches of
    decoded instant files emptied), whose next timeline listing is followed, before anything is
    read from it, by ``meanwhile()`` (another process's work: an archival, a clean); later
    listings are left alone. ``reader.raced`` holds what ``meanwhile`` returned."""
    import pyhudi
    from pyhudi.table import Table
    from pyhudi.timeline import timeline as timeline_module

    monkeypatch.setattr(timeline_module, "_RECORDS", {})
    monkeypatch.setattr(timeline_module, "_DECODED", {})
    reader = pyhudi.open_table(path)
    real = Table.active_timeline
    raced: list = []

    def listing_then_race(options=None):
        timeline = real(reader, options)
        if not raced:
            timeline.instants  # noqa: B018 (listed)
            raced.append(meanwhile())
        return timeline

    monkeypatch.setattr(reader, "active_timeline", listing_then_race)
    reader.raced = raced
    return reader

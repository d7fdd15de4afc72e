"""Helpers shared by the read tests: running a scan plan's tasks one by one; a time just before a
completion."""

from __future__ import annotations

from typing import Sequence

import pyarrow as pa


def run_plan_tasks(table, columns: Sequence[str]) -> tuple[pa.Table, dict[str, int]]:
    """The rows of one run of ``table.plan_scan(columns)``'s tasks, in order, and their metrics
    summed over the tasks."""
    plan = table.plan_scan(list(columns))
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

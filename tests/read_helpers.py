"""Helpers shared by the read tests: running a scan plan's tasks one by one."""

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

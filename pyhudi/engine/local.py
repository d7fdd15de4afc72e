"""The in-process engine: a thread pool (Arrow and Parquet release the GIL), fork-safe."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence, TypeVar

from pyhudi.engine.base import Task

R = TypeVar("R")


class LocalEngine:
    """Runs tasks on a thread pool sized to the machine (or ``parallelism``)."""

    name = "local"

    def __init__(self, parallelism: int | None = None) -> None:
        self.parallelism = max(1, parallelism or os.cpu_count() or 1)

    def run_tasks(self, tasks: Sequence[Task[R]]) -> list[R]:
        if len(tasks) <= 1 or self.parallelism == 1:
            return [task.run() for task in tasks]
        # A new pool per call: nothing survives a fork (PySpark workers fork) in a broken state.
        with ThreadPoolExecutor(max_workers=min(self.parallelism, len(tasks))) as pool:
            futures = [pool.submit(task.run) for task in tasks]
            return [future.result() for future in futures]

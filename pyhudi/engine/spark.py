"""The Spark engine: the same kernel tasks as the local engine, run as Spark tasks.

``run_tasks`` ships the picklable task objects to the executors (one task per Spark partition),
calls ``task.run()`` there and collects the results in task order. Nothing but the tasks travels:
the function mapped over them is a module-level function, so no SparkSession, SparkContext or
driver-local object is captured (executors on another machine must be able to run it).

A task that raises returns its exception instead of failing the Spark task: the job then runs
every task to its end before the driver re-raises the first error (with its type and message)
and the write client rolls the instant back. Were the Spark job to fail instead, Spark would not
wait for the tasks still running, and they could write files after the rollback listed them.
A lost executor (no exception in Python) is still retried by Spark (``spark.task.maxFailures``).
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any, TypeVar

from pyspark import SparkContext
from pyspark.sql import SparkSession

from pyhudi.engine.base import Task
from pyhudi.errors import ConfigError, HudiError
from pyhudi.spark.workers import check_worker_python, worker_import_errors

R = TypeVar("R")


class _TaskFailure:
    """A task failure travelling back to the driver instead of a result."""

    def __init__(self, index: int, error: BaseException) -> None:
        self.index = index
        self.error = error


def _picklable(error: Exception) -> Exception:
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:  # noqa: BLE001 - any unpicklable error is reported by its text
        return HudiError(f"task failed with {type(error).__name__}: {error}")


def _run_indexed(item: tuple[int, Task[R]]) -> R | _TaskFailure:
    """Executor side: run one task (module level: pickled by reference, captures nothing)."""
    index, task = item
    try:
        return task.run()
    except Exception as exc:  # noqa: BLE001 - reported to the driver, see the module docstring
        return _TaskFailure(index, _picklable(exc))


def _spark_context(spark: SparkSession | SparkContext | None) -> SparkContext:
    if isinstance(spark, SparkContext):
        return spark
    if isinstance(spark, SparkSession):
        return spark.sparkContext
    if spark is not None:
        raise ConfigError(f"the spark engine needs a SparkSession or SparkContext, got {type(spark).__name__}")
    session = SparkSession.getActiveSession()
    if session is not None:
        return session.sparkContext
    context = SparkContext._active_spark_context
    if context is None:
        raise ConfigError(
            "the spark engine needs a running Spark session: start one (SparkSession.builder...getOrCreate()) "
            "or pass SparkEngine(spark=...)"
        )
    return context


class SparkEngine:
    """Runs kernel tasks on a Spark cluster: one Spark partition (and task) per kernel task.

    ``spark``: a SparkSession or SparkContext; by default the active session. ``job_description``
    labels the Spark jobs in the UI.
    """

    name = "spark"

    def __init__(self, spark: SparkSession | SparkContext | None = None, job_description: str = "pyhudi") -> None:
        self.context = _spark_context(spark)
        check_worker_python(self.context)  # tasks run the kernel in Spark's Python workers
        self.job_description = job_description

    def __getstate__(self) -> Any:
        raise TypeError("SparkEngine lives on the driver and cannot be pickled into a task")

    def run_tasks(self, tasks: Sequence[Task[R]]) -> list[R]:
        if not tasks:
            return []
        items = list(enumerate(tasks))
        self.context.setJobDescription(f"{self.job_description}: {len(items)} task(s)")
        try:
            with worker_import_errors(self.context):
                results = self.context.parallelize(items, len(items)).map(_run_indexed).collect()
        finally:
            self.context.setJobDescription(None)  # type: ignore[arg-type]
        for result in results:
            if isinstance(result, _TaskFailure):
                raise result.error
        return results

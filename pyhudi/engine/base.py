"""The engine interface: "run these kernel tasks, return their results".

A task is a plain picklable object with a ``run()`` method (a write task, a compaction
operation, a clustering group...). The driver plans tasks, an engine runs them — in this process
on a thread pool, or as Spark tasks — and the driver commits the results. Engines never contain
format logic, so everything the kernel does works on either engine.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence, TypeVar, runtime_checkable

from pyhudi.errors import ConfigError

R = TypeVar("R")


@runtime_checkable
class Task(Protocol[R]):
    """A unit of distributed work; ``run`` must be callable on any worker."""

    def run(self) -> R: ...


class Engine(Protocol):
    """Runs tasks and returns their results in task order (raising the first failure)."""

    name: str

    def run_tasks(self, tasks: Sequence[Task[R]]) -> list[R]: ...


def get_engine(engine: "str | Engine | None" = None, **options: Any) -> Engine:
    """Resolve ``"local"`` / ``"spark"`` / an engine object to an engine."""
    if engine is None or engine == "local":
        from pyhudi.engine.local import LocalEngine

        return LocalEngine(**options)
    if engine == "spark":
        try:
            from pyhudi.engine.spark import SparkEngine  # imported lazily: the kernel never needs pyspark
        except ImportError as exc:
            raise ConfigError(f"the spark engine is not available: {exc}") from exc
        return SparkEngine(**options)
    if isinstance(engine, str):
        raise ConfigError(f"unknown engine {engine!r}: expected 'local' or 'spark'")
    return engine

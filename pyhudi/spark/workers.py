"""Spark's Python workers must import pyhudi: find out early when they cannot, and say why.

Spark runs every Python data source call (finding the ``pyspark_*`` sources, the schema, the
read plan, the writer) and every Python task in worker processes it starts with its own Python:
``spark.pyspark.python``, else the ``PYSPARK_PYTHON`` environment variable, else ``python3`` on
``PATH`` — not the interpreter running the user's program. A program started with
``.venv/bin/python`` while ``python3`` is another Python therefore plans its reads in a Python
without pyhudi. Spark then reports ``DATA_SOURCE_NOT_FOUND`` (its static lookup found no
``pyspark_pyhudi``) or a ``ModuleNotFoundError`` deep in a Java stack trace, neither of which
says which Python ran or how to pick another.

:func:`check_worker_python` (run once per session by ``pyhudi.spark.register``) asks the worker
Python of a local-mode session whether it can import pyhudi, before Spark does;
:func:`worker_import_errors` turns a worker's failed import met later (on a cluster's executors)
into the same explanation.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from pyhudi.errors import WorkerEnvironmentError

PYTHON_CONF = "spark.pyspark.python"
PYTHON_ENV = "PYSPARK_PYTHON"
DEFAULT_PYTHON = "python3"  # Spark's own default when neither is set

# what a worker imports to run pyhudi code (pyspark comes with Spark: it is on the workers' path)
_REQUIRED = ("pyhudi", "pyarrow")
_PROBE = (
    "import importlib.util, sys\n"
    f"missing = [m for m in {_REQUIRED!r} if importlib.util.find_spec(m) is None]\n"
    "print(','.join(missing))\n"
)
_PROBE_TIMEOUT_S = 60

P = ParamSpec("P")
R = TypeVar("R")


def worker_python(context: Any) -> tuple[str, str]:
    """The Python executable Spark's workers run for ``context`` (a SparkContext), and where
    that choice comes from (the setting a user changes to pick another)."""
    configured = context.getConf().get(PYTHON_CONF, None)
    if configured:
        return configured, PYTHON_CONF
    if os.environ.get(PYTHON_ENV):
        return os.environ[PYTHON_ENV], f"the {PYTHON_ENV} environment variable"
    return DEFAULT_PYTHON, f"Spark's default: neither {PYTHON_CONF} nor {PYTHON_ENV} is set"


def check_worker_python(spark: Any) -> None:
    """Raise :class:`WorkerEnvironmentError` when the Python workers of a local-mode application
    (``spark``: its SparkSession or SparkContext) cannot import pyhudi. Other masters start their
    workers elsewhere (the executors' Python may exist only there), and Spark Connect sessions
    have no context here: not checked."""
    context = _context(spark)
    if context is None or not str(context.master).startswith("local"):
        return
    executable, origin = worker_python(context)
    problem = _probe(executable, os.environ.get("PYTHONPATH", ""), os.getcwd())
    if problem:
        raise WorkerEnvironmentError(explain(executable, origin, problem))


def _context(spark: Any) -> Any:
    """The SparkContext of a classic session (or the context itself); None for Spark Connect."""
    if getattr(spark, "_jsparkSession", None) is not None:
        return spark.sparkContext
    if getattr(spark, "_jsc", None) is not None:  # a SparkContext (a session has one too: checked first)
        return spark
    return None


@functools.lru_cache(maxsize=16)
def _probe(executable: str, python_path: str, cwd: str) -> str | None:
    """What keeps ``executable`` from importing pyhudi (None: nothing), asked once per
    executable, ``PYTHONPATH`` and working directory: what a worker's ``sys.path`` depends on
    (Spark starts its workers with the driver's ``PYTHONPATH``, in its working directory)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if python_path:
        env["PYTHONPATH"] = python_path
    try:
        done = subprocess.run([executable, "-c", _PROBE], capture_output=True, text=True,
                              timeout=_PROBE_TIMEOUT_S, cwd=cwd, env=env)
    except FileNotFoundError:
        return "that program does not exist"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"it could not be started ({exc})"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"it failed to start ({last})"
    missing = done.stdout.strip()
    return f"it cannot import {missing.replace(',', ', ')}" if missing else None


def explain(executable: str, origin: str, problem: str) -> str:
    """The message of a :class:`WorkerEnvironmentError`: the cause, then the two ways to fix it."""
    return (
        f"Spark's Python workers cannot import pyhudi: they run {executable!r} ({origin}), and {problem}. "
        f"Point Spark at a Python where pyhudi is installed — this program runs {sys.executable!r}: "
        f"set the environment variable {PYTHON_ENV}={sys.executable} before starting the program, or "
        f"build the session with .config({PYTHON_CONF!r}, sys.executable) "
        f"(or install pyhudi into {executable!r})."
    )


_MISSING_MODULE_MARKERS = ("No module named 'pyhudi", "No module named 'pyspark_pyhudi", "No module named 'pyarrow")


@contextmanager
def worker_import_errors(spark: Any) -> Iterator[None]:
    """Re-raise a Spark failure caused by a worker that could not import pyhudi (or pyarrow) as a
    :class:`WorkerEnvironmentError` naming the worker Python and the fix, the original chained
    (``spark``: the SparkSession or SparkContext running the job)."""
    try:
        yield
    except ImportError:
        raise  # this process failed to import: not a worker's environment
    except Exception as exc:
        text = str(exc)
        marker = next((m for m in _MISSING_MODULE_MARKERS if m in text), None)
        context = _context(spark)
        if marker is None or context is None:
            raise
        module = marker[len("No module named '"):]
        executable, origin = worker_python(context)
        problem = f"it cannot import {module} (ModuleNotFoundError in a Spark worker)"
        raise WorkerEnvironmentError(explain(executable, origin, problem)) from exc


def explains_worker_imports(func: Callable[P, R]) -> Callable[P, R]:
    """Decorator: run ``func`` under :func:`worker_import_errors` for the session of its first
    argument (a SparkSession, or a DataFrame)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        spark = getattr(args[0], "sparkSession", args[0]) if args else None
        with worker_import_errors(spark):
            return func(*args, **kwargs)

    return wrapper

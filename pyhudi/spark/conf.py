"""Spark settings for wide tables: the ones pyhudi applies itself and the ones it recommends.

Column families exist for wide tables, and Spark treats a schema of more than
``spark.sql.codegen.maxFields`` (default 100) fields as "too wide": whole-stage code generation
is switched off for every operator over it, and the vectorized Parquet reader with it (the plan
shows ``FileScan parquet ... Batched: false``), so a DataFrame read from a wide Parquet input —
the usual input of ``pyhudi.spark.write`` — is decoded row by row. That limit is a runtime SQL
setting: :func:`apply_runtime` (called by ``pyhudi.spark.register``) raises it, never lowers it.

Spark also measures, row by row, the Arrow batches it sends to Python workers; the job of
``pyhudi.spark.write`` runs without that measure (:data:`WRITE_CONF`, :func:`write_settings`).
:data:`SESSION_CONF` are settings only a new session can take (they are read when the
SparkContext starts); :func:`configure` applies all of them to a ``SparkSession.builder``. The demo, the tests and ``bench/bench_spark.py`` build their sessions
with it; the README recommends it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

MAX_FIELDS_CONF = "spark.sql.codegen.maxFields"
MAX_FIELDS = 1000
"""Fields of a schema Spark still compiles whole stages for (and reads Parquet vectorized);
Spark falls back to the interpreted path by itself when a generated method grows too large."""

RUNTIME_CONF: dict[str, str] = {MAX_FIELDS_CONF: str(MAX_FIELDS)}
"""Runtime SQL settings :func:`apply_runtime` raises on the user's session."""

ARROW_MAX_BYTES_CONF = "spark.sql.execution.arrow.maxBytesPerBatch"
WRITE_CONF: dict[str, str] = {ARROW_MAX_BYTES_CONF: str(2**31 - 1)}
"""Settings :func:`write_settings` gives the job of ``pyhudi.spark.write``. Spark measures the
Arrow batch it fills for a Python worker after every row when ``maxBytesPerBatch`` is below
2**31 - 1 (default 64 MB): a walk over every column vector per row — a fifth of the JVM's time
when writing 101 columns (profiled with JFR), ~25% of the write's wall time. At 2**31 - 1 the
check is skipped; batches stay bounded by ``spark.sql.execution.arrow.maxRecordsPerBatch``
(10,000 rows by default)."""

SESSION_CONF: dict[str, str] = {
    # Spark Python workers: reuse them between tasks (the default, stated because every
    # pyhudi task imports pyarrow and the kernel once per worker, not once per task).
    "spark.python.worker.reuse": "true",
}
"""Settings fixed when the SparkContext starts (recommended; pyhudi cannot change them later)."""


def apply_runtime(spark: Any) -> None:
    """Raise the runtime settings of :data:`RUNTIME_CONF` on ``spark`` (a value the user set
    higher is kept)."""
    current = spark.conf.get(MAX_FIELDS_CONF, None)
    try:
        too_low = current is None or int(current) < MAX_FIELDS
    except ValueError:
        too_low = True
    if too_low:
        spark.conf.set(MAX_FIELDS_CONF, str(MAX_FIELDS))


@contextmanager
def write_settings(spark: Any) -> Iterator[None]:
    """:data:`WRITE_CONF` set on ``spark`` while the block runs (a synchronous ``save()``), then
    the previous values back: the user's other jobs keep their own batch limits."""
    previous = {key: spark.conf.get(key, None) for key in WRITE_CONF}
    for key, value in WRITE_CONF.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def configure(builder: Any) -> Any:
    """``builder`` (a ``SparkSession.Builder``) with every setting pyhudi recommends: the
    session, runtime and write settings (the latter then also serve ``df.write.format("pyhudi")``)."""
    for key, value in {**SESSION_CONF, **RUNTIME_CONF, **WRITE_CONF}.items():
        builder = builder.config(key, value)
    return builder

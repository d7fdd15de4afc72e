"""Spark settings for wide tables: the ones pyhudi applies itself and the ones it recommends.

Spark fills the Arrow batches it sends to Python workers row by row and, while
``spark.sql.execution.arrow.maxBytesPerBatch`` is below 2**31 - 1 (default 64 MB), measures the
batch after every row: a walk over every column vector per row — a fifth of the JVM's time when
writing 101 columns (profiled with JFR), ~25% of the write's wall time. The job of
``pyhudi.spark.write`` runs without that measure (:data:`WRITE_CONF`, :func:`write_settings`);
batches stay bounded by ``spark.sql.execution.arrow.maxRecordsPerBatch`` (10,000 rows by default).

:data:`SESSION_CONF` are settings only a new session can take (they are read when the
SparkContext starts); :func:`configure` applies them and :data:`WRITE_CONF` to a
``SparkSession.builder`` (the demo, the tests and ``bench/bench_spark.py`` build their sessions
with it; the README recommends it).

Measured and NOT applied: raising ``spark.sql.codegen.maxFields`` (default 100) above the table
width turns the vectorized Parquet reader and whole-stage codegen on for 101 columns, but the
generated methods grow too large for the JIT: at 1M rows x 101 columns a Spark read took 3.3-4.4 s
instead of 2.3-2.6 s and a write 5% longer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

ARROW_MAX_BYTES_CONF = "spark.sql.execution.arrow.maxBytesPerBatch"
WRITE_CONF: dict[str, str] = {ARROW_MAX_BYTES_CONF: str(2**31 - 1)}
"""Settings :func:`write_settings` gives the job of ``pyhudi.spark.write`` (see the module docstring)."""

SESSION_CONF: dict[str, str] = {
    # Spark Python workers: reuse them between tasks (the default, stated because every
    # pyhudi task imports pyarrow and the kernel once per worker, not once per task).
    "spark.python.worker.reuse": "true",
    # Pushed filters prune partitions and skip files; Spark refuses to plan a Python reader that
    # implements pushFilters while this is off. ``pyhudi.spark.register`` turns it on for its
    # session; set here, every session of the application has it — also those made by
    # ``spark.newSession()``, which find the statically registered source (``pyspark_pyhudi``).
    "spark.sql.python.filterPushdown.enabled": "true",
}
"""Settings fixed when the SparkContext starts (recommended; pyhudi cannot change them later)."""


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
    session and the write settings (the latter then also serve ``df.write.format("pyhudi")``)."""
    for key, value in {**SESSION_CONF, **WRITE_CONF}.items():
        builder = builder.config(key, value)
    return builder

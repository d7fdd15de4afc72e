"""The demo's Spark job: complete rows and a pruned read of one family through Spark local mode.

Spark's own logging stays out of the demo's report: the JVM gets a log4j2 configuration that
logs errors only, and its stderr (and that of the Python workers it starts) goes to
``spark.log`` in the demo's work folder, which the report names; the UI and the console
progress bar are off.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


@contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """Point file descriptor 2 at ``path`` while the JVM starts: it inherits that descriptor and
    keeps it; this process gets its own stderr back afterwards."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def quiet_session(workdir: Path) -> Any:
    """A local[2] session that logs nothing on the console (see the module docstring)."""
    from pyspark.sql import SparkSession

    from pyhudi.spark.conf import configure

    config = workdir / "log4j2.properties"
    config.write_text(LOG4J2)
    root = str(Path(__file__).resolve().parents[2])  # Spark's Python workers import this checkout
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    java_options = f"-Dlog4j2.configurationFile={config.as_uri()}"
    with _stderr_to(workdir / "spark.log"):
        spark = (configure(SparkSession.builder).master("local[2]").appName("pyhudi-demo")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.driver.extraJavaOptions", java_options)
                 .config("spark.executor.extraJavaOptions", java_options)
                 .config("spark.sql.shuffle.partitions", "2").config("spark.default.parallelism", "2")
                 .config("spark.sql.session.timeZone", "UTC").config("spark.driver.bindAddress", "127.0.0.1")
                 .config("spark.driver.host", "127.0.0.1").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_reads(spark: Any, path: str) -> dict[str, Any]:
    """Complete rows (a count and sums over three families, then Spark SQL over a view) and the
    orders family alone (a pruned read: the other families give only their keys)."""
    import pyhudi.spark

    pyhudi.spark.register(spark)
    out: dict[str, Any] = {}
    started = time.perf_counter()
    full = spark.read.format("pyhudi").load(path)
    row = full.selectExpr("count(*) AS n", "sum(clicks_total) AS clicks", "sum(spend) AS spend",
                          "sum(emb_00) AS emb").collect()[0]
    out["full"] = {"rows": row["n"], "clicks_total": row["clicks"], "spend": row["spend"], "emb_00": row["emb"],
                   "columns": len(full.columns), "seconds": time.perf_counter() - started}
    started = time.perf_counter()
    full.createOrReplaceTempView("users")
    top = spark.sql("SELECT country, count(*) AS users, round(sum(spend), 2) AS spend FROM users "
                    "WHERE country IS NOT NULL GROUP BY country ORDER BY users DESC, country LIMIT 3").collect()
    out["sql"] = {"top_countries": [r.asDict() for r in top], "seconds": time.perf_counter() - started}
    started = time.perf_counter()
    pruned = spark.read.format("pyhudi").schema("user_id string, orders_total bigint, spend double").load(path)
    row = pruned.selectExpr("count(*) AS n", "count(orders_total) AS with_orders", "sum(orders_total) AS total",
                            "sum(spend) AS spend").collect()[0]
    out["pruned"] = {"rows": row["n"], "with_orders": row["with_orders"], "orders_total": row["total"],
                     "spend": row["spend"], "columns": len(pruned.columns), "seconds": time.perf_counter() - started}
    return out

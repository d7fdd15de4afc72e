"""The demo's Spark job: complete rows and a pruned read of one family through Spark local mode.

Spark's own logging stays out of the demo's report (:func:`pyhudi.spark.session.local_session`
with a log folder): it goes to ``spark.log`` in the demo's work folder, which the report names.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def quiet_session(workdir: Path) -> Any:
    """A local[2] session whose own logging goes to ``workdir/spark.log``."""
    from pyhudi.spark.session import local_session

    return local_session("pyhudi-demo", log_dir=workdir)


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

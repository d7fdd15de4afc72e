"""The Spark part of ``pyhudi demo``: the demo table read and written through Spark local mode."""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.console import Console

from pyhudi.cli import print_rows


def demo_spark(console: Console, path: str, spark: Any = None) -> None:
    """The same table through Spark (local mode unless a session is given): a filtered read with
    pushed filters, a partial write of one family from a DataFrame, and a pruned read."""
    import pyhudi.spark

    owned = spark is None
    if owned:
        spark = _local_spark()
    try:
        pyhudi.spark.register(spark)
        busy = spark.read.format("pyhudi").load(path).where("clicks > 4").orderBy("user_id")
        print_rows(console, "4. Spark read, clicks > 4 pushed down to the merge",
                   [r.asDict() for r in busy.select("user_id", "clicks", "orders", "country").collect()])
        orders = spark.createDataFrame([("carol", 7, 99.5), ("grace", 1, 12.0)],
                                       "user_id string, orders bigint, spend double")
        instant = pyhudi.spark.write(orders, path, operation="upsert")
        console.print(f"[bold]5.[/bold] Spark upsert of the orders family only (one task per bucket) → instant {instant}")
        pruned = spark.read.format("pyhudi").schema("user_id string, orders bigint, spend double").load(path)
        print_rows(console, "6. Spark read of the orders family only (other families give only keys)",
                   [r.asDict() for r in pruned.orderBy("user_id").collect()])
    finally:
        if owned:
            spark.stop()


def _local_spark() -> Any:
    from pyspark.sql import SparkSession

    from pyhudi.spark.conf import configure

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (configure(SparkSession.builder).master("local[2]").appName("pyhudi-demo")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.host", "127.0.0.1").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark

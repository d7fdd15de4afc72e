"""pyhudi on Spark: the SQL front end (``pyhudi.spark.sql``); the data source joins from the spark branch."""

from pyhudi.spark.sql import sql

__all__ = ["sql"]

"""What the SQL front end needs from Spark, as one small interface (and its Spark implementation).

The front end (:mod:`pyhudi.spark.sql`) parses statements and decides what to run; everything that
touches Spark goes through a :class:`SqlBackend`: running a query, loading a pyhudi table as a
DataFrame (CONTRACTS C4), temporary views, writing a DataFrame to a table, and the session's
configuration (where the catalog-name → table-path registry lives). Keeping it this narrow lets
the front end's routing and planning be tested against a fake backend without a Spark session.

Why a registry in the session configuration: Spark's session catalog keeps a ``CREATE TABLE ...
USING <python source>`` entry's columns and partitioning but neither its ``LOCATION`` nor its
``TBLPROPERTIES`` (``DESCRIBE TABLE EXTENDED`` shows ``Table Properties []``), and later reads of
the entry reach the source with empty options. So the front end records each table's path under
``spark.pyhudi.table.<catalog>.<database>.<table>`` (see ``spark.conf``), the same lifetime as
the in-memory catalog entry it belongs to.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Mapping, Protocol, Sequence

import pyarrow as pa

REGISTRY_PREFIX = "spark.pyhudi.table."
TABLE_SOURCE_PREFIX = "pyhudi_"


def table_source_name(table: str, path: str) -> str:
    """The provider name of a catalog table's own data source: ``pyhudi_<name>_<hash of the path>``.

    Spark gives a Python source no options (no path) when it reads or writes a catalog table, so
    each pyhudi catalog table gets a source class of its own with the path built in
    (:func:`pyhudi.spark.datasource.table_source`); the name is unique per (table name, path) and
    a plain identifier (``[a-z0-9_]``)."""
    sanitized = re.sub(r"[^a-z0-9]+", "_", table.lower()).strip("_")[:40] or "table"
    digest = hashlib.sha1(path.encode()).hexdigest()[:12]
    return f"{TABLE_SOURCE_PREFIX}{sanitized}_{digest}"


class SqlBackend(Protocol):
    """The Spark operations the SQL front end uses (a DataFrame is opaque to the front end)."""

    def run_sql(self, text: str) -> Any: ...

    def load(self, path: str, options: Mapping[str, str]) -> Any: ...

    def create_view(self, df: Any, name: str) -> None: ...

    def drop_view(self, name: str) -> None: ...

    def columns(self, df: Any) -> list[str]: ...

    def rename(self, df: Any, names: Sequence[str]) -> Any: ...

    def write(self, df: Any, path: str, operation: str, options: Mapping[str, str] | None = None) -> str | None: ...

    def to_arrow(self, df: Any) -> pa.Table: ...

    def result(self, table: pa.Table) -> Any: ...

    def conf_get(self, key: str) -> str | None: ...

    def conf_set(self, key: str, value: str) -> None: ...

    def conf_unset(self, key: str) -> None: ...

    def current_catalog(self) -> str: ...

    def current_database(self) -> str: ...

    def warehouse_dir(self) -> str: ...

    def table_exists(self, name: str) -> bool: ...

    def register_table_source(self, table: str, path: str) -> str: ...


class SparkBackend:
    """:class:`SqlBackend` over a live :class:`pyspark.sql.SparkSession`."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        from pyhudi.spark.datasource import ensure_registered

        ensure_registered(spark)  # the "pyhudi" data source must exist for CREATE TABLE ... USING pyhudi

    def run_sql(self, text: str) -> Any:
        return self.spark.sql(text)

    def load(self, path: str, options: Mapping[str, str]) -> Any:
        from pyhudi.spark.reader import read  # final file groups through Spark's Parquet reader

        return read(self.spark, path, **dict(options))

    def create_view(self, df: Any, name: str) -> None:
        df.createOrReplaceTempView(name)

    def drop_view(self, name: str) -> None:
        self.spark.catalog.dropTempView(name)

    def columns(self, df: Any) -> list[str]:
        return list(df.columns)

    def rename(self, df: Any, names: Sequence[str]) -> Any:
        return df.toDF(*names)

    def write(self, df: Any, path: str, operation: str, options: Mapping[str, str] | None = None) -> str | None:
        from pyhudi.spark import write

        return write(df, path, operation=operation, **dict(options or {}))

    def to_arrow(self, df: Any) -> pa.Table:
        return df.toArrow()

    def result(self, table: pa.Table) -> Any:
        if table.num_columns == 0:
            return self.spark.range(0).select()  # no columns, no rows
        return self.spark.createDataFrame(table)

    def conf_get(self, key: str) -> str | None:
        return self.spark.conf.get(key, None)

    def conf_set(self, key: str, value: str) -> None:
        self.spark.conf.set(key, value)

    def conf_unset(self, key: str) -> None:
        self.spark.conf.unset(key)

    def current_catalog(self) -> str:
        return self.spark.catalog.currentCatalog()

    def current_database(self) -> str:
        return self.spark.catalog.currentDatabase()

    def warehouse_dir(self) -> str:
        return self.spark.conf.get("spark.sql.warehouse.dir")

    def table_exists(self, name: str) -> bool:
        return self.spark.catalog.tableExists(name)

    def register_table_source(self, table: str, path: str) -> str:
        """Register the data source of one catalog table (path built in); returns its provider name."""
        from pyhudi.spark.datasource import register_table_source

        return register_table_source(self.spark, table, path)


__all__ = ["REGISTRY_PREFIX", "TABLE_SOURCE_PREFIX", "SparkBackend", "SqlBackend", "table_source_name"]

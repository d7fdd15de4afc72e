"""The ``pyhudi`` Spark data source (PySpark's Python Data Source API, Spark >= 4.1).

``spark.read.format("pyhudi").load(path)`` and ``df.write.format("pyhudi")...save(path)`` after
:func:`register`. Spark instantiates the source with the (case-insensitive) options on the driver,
in a Python worker process: nothing here may rely on state of the user's Python process.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from pyhudi.errors import ConfigError
from pyhudi.spark import options as opt
from pyhudi.spark.types import arrow_schema, project, select, spark_schema

FORMAT = "pyhudi"


class HudiDataSource(DataSource):
    """Apache Hudi tables (version 8 written; 6, 8, 9 read), column families included."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def _options(self) -> dict[str, str]:
        return opt.lowered(self.options)

    def _path(self, options: dict[str, str]) -> str:
        path = options.get(opt.PATH)
        if not path:
            raise ConfigError("the pyhudi data source needs a table path: load(path) / save(path) or option('path', ...)")
        return path

    def schema(self) -> StructType:
        import pyhudi
        from pyhudi.spark.reader import ReadSettings, table_schema_at

        options = self._options()
        settings = ReadSettings.from_options(options)
        table = pyhudi.open_table(self._path(options))
        schema = spark_schema(table_schema_at(table, settings.schema_instant), table.record_key_fields)
        if settings.columns is not None:
            schema = select(schema, settings.columns)
        return schema

    def reader(self, schema: StructType):
        import pyhudi
        from pyhudi.spark.reader import HudiDataSourceReader, ReadSettings, table_schema_at

        options = self._options()
        settings = ReadSettings.from_options(options)
        path = self._path(options)
        table = pyhudi.open_table(path)
        full = spark_schema(table_schema_at(table, settings.schema_instant), table.record_key_fields)
        columns = project(full, schema)
        return HudiDataSourceReader(path, settings, columns, arrow_schema(schema))

    def writer(self, schema: StructType, overwrite: bool):
        from pyhudi.spark.writer import begin

        path = self._path(self._options())
        options = opt.lowered(self.options, _family_names(path))  # family option keys as the table spells them
        return begin(path, schema, options, overwrite)


def _family_names(path: str) -> list[str]:
    """The column family names of the table at ``path`` (none when there is no table yet)."""
    import pyhudi
    from pyhudi.errors import TableNotFoundError

    try:
        return list(pyhudi.open_table(path).column_families)
    except TableNotFoundError:
        return []


PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: SparkSession) -> None:
    """Register the ``pyhudi`` data source with ``spark`` (idempotent).

    Also turns on ``spark.sql.python.filterPushdown.enabled`` for the session: Spark refuses to
    plan a Python reader that implements ``pushFilters`` while it is off, and pushed filters are
    what prune partitions and skip files.
    """
    if spark.conf.get(PUSHDOWN_CONF, "false").lower() != "true":
        spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(HudiDataSource)

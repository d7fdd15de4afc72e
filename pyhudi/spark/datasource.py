"""The ``pyhudi`` Spark data source (PySpark's Python Data Source API, Spark >= 4.1).

``spark.read.format("pyhudi").load(path)`` and ``df.write.format("pyhudi")...save(path)``: PySpark
finds the source in every session through the ``pyspark_pyhudi`` module (static registration);
:func:`register` also turns on filter pushdown and registers catalog tables. Spark instantiates the source with the (case-insensitive) options on the driver,
in a Python worker process: nothing here may rely on state of the user's Python process.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from pyhudi.errors import ConfigError
from pyhudi.spark import options as opt
from pyhudi.spark.sql_backend import TABLE_SOURCE_PREFIX, table_source_name
from pyhudi.spark.types import arrow_schema, project, select, spark_schema

FORMAT = "pyhudi"


class HudiDataSource(DataSource):
    """Apache Hudi tables (version 8 written; 6, 8, 9 read), column families included.

    Subclasses made by :func:`table_source` are bound to one table: their ``name()`` is the
    provider of a catalog entry and their class attribute ``table_path`` stands in for the path
    Spark does not pass to a Python source for catalog tables.
    """

    source_name: str = FORMAT
    table_path: str | None = None
    sql_insert_operation: str | None = None  # catalog tables: plain spark.sql INSERT INTO's operation

    @classmethod
    def name(cls) -> str:
        return cls.source_name

    def _options(self) -> dict[str, str]:
        options = opt.lowered(self.options)
        if self.table_path is not None and not options.get(opt.PATH):
            options[opt.PATH] = self.table_path
        return options

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
        table = opt.open_table(self._path(options), options)
        schema = spark_schema(table_schema_at(table, settings.schema_instant), table.record_key_fields)
        if settings.columns is not None:
            schema = select(schema, settings.columns)
        return schema

    def reader(self, schema: StructType):
        import pyhudi
        from pyhudi.spark.reader import (HudiDataSourceReader, HudiScanReader, ReadSettings,
                                         planned_without_pushdown, table_schema_at)

        options = self._options()
        settings = ReadSettings.from_options(options)
        path = self._path(options)
        table = opt.open_table(path, options)
        full = spark_schema(table_schema_at(table, settings.schema_instant), table.record_key_fields)
        columns = project(full, schema)
        reader = HudiScanReader if planned_without_pushdown() else HudiDataSourceReader
        return reader(path, settings, columns, arrow_schema(schema))

    def writer(self, schema: StructType, overwrite: bool):
        from pyhudi.spark.writer import begin

        path = self._path(self._options())
        options = {**opt.lowered(self.options, _family_names(path, self.options)), opt.PATH: path}  # families as the table spells them
        if self.sql_insert_operation and opt.OPERATION.key not in options:
            options[opt.OPERATION.key] = self.sql_insert_operation  # INSERT INTO a catalog table, as Hudi's SQL
        return begin(path, schema, options, overwrite)


def _family_names(path: str, options: Mapping[str, str]) -> list[str]:
    """The column family names of the table at ``path`` (none when there is no table yet)."""
    from pyhudi.errors import TableNotFoundError

    try:
        return list(opt.open_table(path, options).column_families)
    except TableNotFoundError:
        return []


PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: SparkSession) -> None:
    """Register the ``pyhudi`` data source with ``spark`` (idempotent).

    Also turns on ``spark.sql.python.filterPushdown.enabled`` for the session (pushed filters
    are what prune partitions and skip files), and first checks that Spark's Python workers can
    import pyhudi (:func:`pyhudi.spark.workers.check_worker_python`: a clear error naming
    ``PYSPARK_PYTHON`` / ``spark.pyspark.python`` instead of Spark's ``ModuleNotFoundError``).
    """
    from pyhudi.spark.workers import check_worker_python

    check_worker_python(spark)
    if spark.conf.get(PUSHDOWN_CONF, "false").lower() != "true":
        spark.conf.set(PUSHDOWN_CONF, "true")
    _register(spark, HudiDataSource)
    from pyhudi.spark.sql_backend import REGISTRY_PREFIX

    operation = sql_insert_operation(spark)
    for (database, name), (provider, path) in catalog_tables(spark).items():
        _register(spark, table_source(provider, path, operation))
        key = f"{REGISTRY_PREFIX}spark_catalog.{database}.{name}"  # pyhudi.spark.sql finds it too
        if not spark.conf.get(key, None):
            spark.conf.set(key, path)
    try:
        setattr(spark, _REGISTERED_ATTRIBUTE, True)
    except AttributeError:  # a session class that takes no attributes: register on every call
        pass


_REGISTERED_ATTRIBUTE = "_pyhudi_registered"


def ensure_registered(spark: SparkSession) -> None:
    """:func:`register` once per session: what every ``pyhudi.spark`` read, write and SQL call
    runs first. The catalog scan of :func:`register` lists every database, so it is not repeated
    on each call; tables created later through ``pyhudi.spark.sql`` register their own source,
    and an explicit ``pyhudi.spark.register(spark)`` scans the catalog again."""
    if not getattr(spark, _REGISTERED_ATTRIBUTE, False):
        register(spark)


def _register(spark: SparkSession, source: type[HudiDataSource]) -> None:
    """Register ``source``. Spark refuses to replace a statically registered source
    (DATA_SOURCE_ALREADY_EXISTS: ``pyhudi`` itself, found through ``pyspark_pyhudi``), which is
    then the one in use."""
    try:
        spark.dataSource.register(source)
    except Exception as exc:
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(exc):
            raise


# --------------------------------------------------------------------------- catalog tables
def sql_insert_operation(spark: SparkSession) -> str:
    """The operation of a plain ``INSERT INTO`` a catalog table: the session's
    ``hoodie.spark.sql.insert.into.operation`` when the source is registered (default ``insert``,
    as in Hudi and :func:`pyhudi.spark.sql`); a Python source cannot read the conf later."""
    from pyhudi.spark.sql_dml import INSERT_OPERATION_KEY

    return (spark.conf.get(INSERT_OPERATION_KEY, None) or "insert").lower()


def table_source(provider: str, path: str, insert_operation: str = "insert") -> type[HudiDataSource]:
    """A :class:`HudiDataSource` subclass named ``provider`` bound to the table at ``path``
    (pickled by value to Spark's Python workers, class attributes included)."""
    return type(f"HudiTableSource_{provider}", (HudiDataSource,),
                {"source_name": provider, "table_path": path, "sql_insert_operation": insert_operation,
                 "__module__": __name__})


def register_table_source(spark: SparkSession, table: str, path: str) -> str:
    """Register the source of one catalog table; returns its provider name (for ``USING``)."""
    provider = table_source_name(table, path)
    _register(spark, table_source(provider, path, sql_insert_operation(spark)))
    return provider


def catalog_tables(spark: SparkSession) -> dict[tuple[str, str], tuple[str, str]]:
    """(database, table) → (provider name, table path) of the session catalog's pyhudi tables
    (entries made by ``pyhudi.spark.sql``'s CREATE TABLE), so a session can register their sources.

    Spark's catalog API hides a Python-source table's location (``DESCRIBE`` fails until its
    provider is registered), so this reads the session's external catalog (shared by every
    session of the application; persistent with a Hive metastore) through the JVM. Without a JVM
    (Spark Connect) there is nothing to read: tables are then reachable only through
    ``pyhudi.spark.sql`` until re-created.
    """
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        return {}
    try:
        external = jsession.sharedState().externalCatalog()
        found = {}
        for database in _seq(external.listDatabases()):
            names = external.listTables(database)
            # one metastore call per database (register() runs on every pyhudi.spark read/write)
            for table in _seq(external.getTablesByName(database, names)) if names.size() else []:
                name = table.identifier().table()
                provider = table.provider().getOrElse(None) if table.provider().isDefined() else None
                location = table.storage().locationUri()
                if provider and provider.startswith(TABLE_SOURCE_PREFIX) and location.isDefined():
                    found[(database, name)] = (provider, _local_path(location.get().toString()))
        return found
    except Exception:  # noqa: BLE001 — an unreadable catalog must not stop registering the source itself
        return {}


def _seq(values) -> list:
    """A Scala Seq as a Python list."""
    return [values.apply(i) for i in range(values.size())]


def _local_path(uri: str) -> str:
    """Spark stores locations as (percent-encoded) URIs; ``file:/my%20t`` is the local path ``/my t``."""
    from urllib.parse import unquote

    path = uri[len("file:"):] if uri.startswith("file:/") and not uri.startswith("file://") else uri
    return unquote(path)

"""Options of the ``pyhudi`` Spark data source and SQL front, with Apache Hudi's option names
(``hoodie.datasource.*``, ``as.of.instant``), declared once here; ``pyhudi.spark.options`` applies them.
"""

from __future__ import annotations

from pyhudi.config.keys import ConfigKey

# --------------------------------------------------------------------------- read
QUERY_TYPE = ConfigKey(
    "hoodie.datasource.query.type", str, "snapshot",
    "snapshot (merged latest rows), read_optimized (base files only) or incremental (rows of commits in a range).",
    choices=("snapshot", "read_optimized", "incremental"),
)
AS_OF_INSTANT = ConfigKey(
    "as.of.instant", str, None,
    "Time travel: read the table as of this instant (yyyyMMddHHmmssSSS, or 'yyyy-MM-dd HH:mm:ss[.SSS]').",
)
BEGIN_INSTANT = ConfigKey(
    "hoodie.datasource.read.begin.instanttime", str, None,
    "Incremental query: commits completed after this instant (exclusive).",
)
END_INSTANT = ConfigKey(
    "hoodie.datasource.read.end.instanttime", str, None,
    "Incremental query: commits completed at or before this instant (default: latest).",
)
COLUMNS = ConfigKey("columns", tuple, None, "Columns to read (prunes column families).")

# --------------------------------------------------------------------------- write
OPERATION = ConfigKey(
    "hoodie.datasource.write.operation", str, "upsert",
    "upsert, insert, bulk_insert, delete, insert_overwrite (replace the partitions present in the input) or "
    "insert_overwrite_table (replace the whole table); mode('overwrite') makes upsert/insert/bulk_insert an "
    "insert_overwrite_table, as in Hudi.",
    choices=("upsert", "insert", "bulk_insert", "delete", "insert_overwrite", "insert_overwrite_table"),
)
RECORD_KEY = ConfigKey(
    "hoodie.datasource.write.recordkey.field", tuple, None,
    "Record key column(s) of a table created by the first write.",
)
PRECOMBINE = ConfigKey(
    "hoodie.datasource.write.precombine.field", str, None,
    "Ordering (precombine) column of a table created by the first write.",
)
PARTITION_PATH = ConfigKey(
    "hoodie.datasource.write.partitionpath.field", tuple, None,
    "Partition column(s) of a table created by the first write.",
)
TABLE_TYPE = ConfigKey(
    "hoodie.datasource.write.table.type", str, "MERGE_ON_READ",
    "Table type of a table created by the first write.", choices=("MERGE_ON_READ", "COPY_ON_WRITE"),
    )

# --------------------------------------------------------------------------- SQL (Spark session confs)
SQL_INSERT_INTO_OPERATION = ConfigKey(
    "hoodie.spark.sql.insert.into.operation", str, "insert",
    "The write operation of an SQL INSERT INTO (a Spark session conf): insert (Hudi's default), upsert or bulk_insert.",
    choices=("insert", "upsert", "bulk_insert"),
)
SQL_OVERWRITE_MODE = ConfigKey(
    "hoodie.datasource.overwrite.mode", str, None,
    "INSERT OVERWRITE of a partitioned table (a Spark session conf): static (replace the partitions the "
    "PARTITION spec names, or the whole table without one) or dynamic (replace the partitions the rows go "
    "to); unset, Spark's spark.sql.sources.partitionOverwriteMode decides (default static).",
    choices=("static", "dynamic"),
)

# --------------------------------------------------------------------------- Spark read paths
NATIVE_SCAN = ConfigKey(
    "hoodie.pyhudi.read.spark.native", bool, True,
    "pyhudi.spark.read and SQL: read file groups whose rows are final (one base file, no log file to merge) with "
    "Spark's own Parquet reader, the others through the pyhudi Python source, unioned into one DataFrame. "
    "spark.read.format('pyhudi') is always the Python source.",
)
JVM_MERGE = ConfigKey(
    "hoodie.pyhudi.read.spark.jvm.merge", bool, True,
    "pyhudi.spark.read and SQL, with the native read on: merge file groups whose log blocks rewrite rows at "
    "known record positions inside the JVM (pyhudi's merge reader, compiled with javac at first use) instead "
    "of the pyhudi Python source. Without a JDK the Python source reads them.",
)

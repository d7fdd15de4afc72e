"""Plain ``spark.sql`` on catalog tables made by ``pyhudi.spark.sql``'s CREATE TABLE: each entry's
provider is a data source of its own with the table path built in (Spark passes a Python source
no path for catalog tables), re-registered by ``pyhudi.spark.register`` in a new session."""

from __future__ import annotations

import pytest

import pyhudi
import pyhudi.spark
from pyhudi.spark.datasource import catalog_tables
from pyhudi.spark.sql_backend import table_source_name

pytestmark = pytest.mark.spark


def rows(df):
    return sorted((r.asDict() for r in df.collect()), key=lambda r: r["id"])


def test_plain_spark_sql_reads_and_writes_catalog_tables(spark, tmp_path):
    path = str(tmp_path / "plain")
    pyhudi.spark.sql(spark, f"""CREATE TABLE plain_t (id BIGINT NOT NULL, a DOUBLE, b STRING, p STRING) USING pyhudi
        PARTITIONED BY (p) LOCATION '{path}'
        TBLPROPERTIES (primaryKey = 'id', 'hoodie.index.type' = 'BUCKET', 'hoodie.bucket.index.num.buckets' = '2',
                       'hoodie.colFamily.fA' = 'a', 'hoodie.colFamily.fB' = 'b')""")
    table = pyhudi.open_table(path)
    assert list(table.column_families) == ["fA", "fB"]
    # plain Spark SQL, no pyhudi front end: INSERT INTO and SELECT reach the Hudi table
    spark.sql("INSERT INTO plain_t VALUES (1, 1.5, 'x', 'p1'), (2, 2.5, 'y', 'p2')")
    assert [str(i.action) for i in table.timeline] == ["deltacommit"]
    # as Hudi's SQL: INSERT INTO is hoodie.spark.sql.insert.into.operation (default insert)
    assert table.active_timeline().read_metadata(table.timeline[-1]).operation_type == "INSERT"
    assert rows(spark.sql("SELECT * FROM plain_t")) == [
        {"id": 1, "a": 1.5, "b": "x", "p": "p1"}, {"id": 2, "a": 2.5, "b": "y", "p": "p2"}]
    assert rows(spark.sql("SELECT id, b FROM plain_t WHERE p = 'p2'")) == [{"id": 2, "b": "y"}]
    assert sorted(table.read().to_pylist(), key=lambda r: r["id"]) == rows(spark.sql("SELECT * FROM plain_t"))
    # plain INSERT OVERWRITE: Spark asks the source to overwrite → insert_overwrite_table
    spark.sql("INSERT OVERWRITE plain_t SELECT 3, 3.5, 'z', 'p1'")
    inst = table.timeline[-1]
    assert (str(inst.action), inst.state.value) == ("replacecommit", "COMPLETED")
    assert table.active_timeline().read_metadata(inst).operation_type == "INSERT_OVERWRITE_TABLE"
    assert rows(spark.sql("SELECT * FROM plain_t")) == [{"id": 3, "a": 3.5, "b": "z", "p": "p1"}]

    # a new application sees the entry in its (persistent) catalog: register() finds the entry's
    # provider and location there and registers its source again (idempotent in this session)
    provider = table_source_name("spark_catalog.default.plain_t", path)
    assert provider.startswith("pyhudi_spark_catalog_default_plain_t_")
    assert catalog_tables(spark)[("default", "plain_t")] == (provider, path)
    spark.conf.unset("spark.pyhudi.table.spark_catalog.default.plain_t")
    pyhudi.spark.register(spark)
    assert spark.conf.get("spark.pyhudi.table.spark_catalog.default.plain_t") == path
    assert rows(spark.sql("SELECT id, a FROM plain_t")) == [{"id": 3, "a": 3.5}]
    assert rows(pyhudi.spark.sql(spark, "SELECT id, b FROM plain_t")) == [{"id": 3, "b": "z"}]
    pyhudi.spark.sql(spark, "DROP TABLE plain_t")
    assert not spark.catalog.tableExists("plain_t")
    assert table.read().num_rows == 1


def test_catalog_locations_are_decoded_to_the_table_path():
    """Spark keeps a location as a java.net.URI: ``/tmp/my table é`` is stored (and read back
    through ``locationUri().toString()``) as ``file:/tmp/my%20table%20%C3%A9``-style text; the path
    register() binds to the entry must be the table's own, not the encoded text."""
    from pyhudi.spark.datasource import _local_path

    assert _local_path("file:/tmp/rv/my%20table%20é") == "/tmp/rv/my table é"
    assert _local_path("file:/tmp/rv/my%20table%20%C3%A9") == "/tmp/rv/my table é"
    assert _local_path("file:/tmp/rv/100%25") == "/tmp/rv/100%"
    assert _local_path("file:/tmp/rv/plain") == "/tmp/rv/plain"
    assert _local_path("s3a://bucket/my%20t") == "s3a://bucket/my t"


def test_catalog_is_scanned_once_per_session_not_on_every_call(spark, tmp_path, monkeypatch):
    """register() lists every database; reads, writes and SQL run it once per session."""
    from pyhudi.spark import datasource

    path = str(tmp_path / "once")
    df = spark.createDataFrame([(1, 1.5)], "id long, a double")
    pyhudi.spark.write(df, path, **{"hoodie.datasource.write.recordkey.field": "id"})
    scans = []
    real = datasource.catalog_tables
    monkeypatch.setattr(datasource, "catalog_tables", lambda s: scans.append(1) or real(s))
    monkeypatch.delattr(spark, "_pyhudi_registered")
    for _ in range(3):
        assert [r.asDict() for r in pyhudi.spark.read(spark, path).collect()] == [{"id": 1, "a": 1.5}]
        pyhudi.spark.write(df, path, **{"hoodie.datasource.write.recordkey.field": "id"})
        pyhudi.spark.sql(spark, "SELECT 1 AS one").collect()
    assert len(scans) == 1
    pyhudi.spark.register(spark)  # an explicit call scans again (e.g. tables of another application)
    assert len(scans) == 2

"""``pyhudi.spark.sql`` on the shared local Spark session: every statement against exact rows.

Spark actions cost about a second each, so one table walks through the statements in order and
each step checks its rows once. The routing and planning details are covered Spark-free in
``tests/test_sql.py``.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import pyhudi
import pyhudi.spark
from pyhudi.spark.sql import SqlError

pytestmark = pytest.mark.spark


def rows(df, order="id"):
    return sorted((r.asDict() for r in df.collect()), key=lambda r: r[order])


@pytest.fixture(scope="module")
def sql(spark):
    def run(statement):
        return pyhudi.spark.sql(spark, statement)

    return run


def test_create_insert_select_alter_and_catalog(spark, sql, tmp_path):
    path = str(tmp_path / "wide")
    sql(f"""CREATE TABLE wide (id STRING NOT NULL, a DOUBLE, b STRING, ts BIGINT, c BIGINT) USING pyhudi
            LOCATION '{path}'
            TBLPROPERTIES (primaryKey = 'id', type = 'mor', preCombineField = 'ts',
                           'hoodie.index.type' = 'BUCKET', 'hoodie.bucket.index.num.buckets' = '2',
                           'hoodie.colFamily.f1' = 'a,b;ts', 'hoodie.colFamily.f2' = 'c')""")
    table = pyhudi.open_table(path)
    assert list(table.column_families) == ["f1", "f2"] and table.num_buckets == 2
    assert [r.tableName for r in spark.sql("SHOW TABLES").collect() if r.tableName == "wide"] == ["wide"]

    sql("INSERT INTO wide VALUES ('k1', 1.0, 'x', 1, 10), ('k2', 2.0, 'y', 1, 20)")
    assert rows(sql("SELECT * FROM wide")) == [
        {"id": "k1", "a": 1.0, "b": "x", "ts": 1, "c": 10}, {"id": "k2", "a": 2.0, "b": "y", "ts": 1, "c": 20}]

    instant = sql("ALTER TABLE wide SET TBLPROPERTIES ('hoodie.colFamily.f3' = 'd STRING')").collect()[0].instant
    assert pyhudi.open_table(path).timeline[-1].requested_time == instant
    assert [r.col_name for r in spark.sql("DESCRIBE wide").collect()] == ["id", "a", "b", "ts", "c", "d"]
    sql("ALTER TABLE wide UNSET TBLPROPERTIES ('hoodie.colFamily.f2')")
    assert [r.col_name for r in spark.sql("DESCRIBE wide").collect()] == ["id", "a", "b", "ts", "d"]
    joined = sql("SELECT w.id, w.d, s.n FROM wide w JOIN (SELECT 'k2' AS id, 5 AS n) s ON w.id = s.id")
    assert rows(joined) == [{"id": "k2", "d": None, "n": 5}]
    sql("DROP TABLE wide")
    assert not [r for r in spark.sql("SHOW TABLES").collect() if r.tableName == "wide"]
    assert pyhudi.open_table(path).read().num_rows == 2  # DROP without PURGE keeps the data


def test_dml_statements(spark, sql, tmp_path):
    path = str(tmp_path / "dml")
    sql(f"""CREATE TABLE dml (id STRING NOT NULL, a DOUBLE, b STRING, c BIGINT) USING pyhudi LOCATION '{path}'
            TBLPROPERTIES (primaryKey = 'id', 'hoodie.index.type' = 'BUCKET', 'hoodie.bucket.index.num.buckets' = '2',
                           'hoodie.colFamily.f1' = 'a,b', 'hoodie.colFamily.f2' = 'c')""")
    table = pyhudi.open_table(path)
    table.upsert(pa.table({"id": ["k1", "k2", "k3"], "a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"], "c": [10, 20, 30]}))
    first = table.timeline[-1].completion_time

    sql("UPDATE dml SET c = c * 2 WHERE a >= 2")
    sql("DELETE FROM dml WHERE id IN (SELECT id FROM dml WHERE b = 'z')")
    assert rows(sql("SELECT * FROM dml")) == [
        {"id": "k1", "a": 1.0, "b": "x", "c": 10}, {"id": "k2", "a": 2.0, "b": "y", "c": 40}]

    spark.createDataFrame([("k1", 11.0, "u"), ("k2", 0.0, "d"), ("k4", 44.0, "i")], "id string, a double, op string") \
        .createOrReplaceTempView("changes")
    result = sql("""MERGE INTO dml t USING changes s ON t.id = s.id
                    WHEN MATCHED AND s.op = 'd' THEN DELETE
                    WHEN MATCHED THEN UPDATE SET a = s.a
                    WHEN NOT MATCHED THEN INSERT (id, a) VALUES (s.id, s.a)""")
    merged = pyhudi.open_table(path)
    assert merged.timeline[-1].requested_time == result.collect()[0].instant
    assert rows(sql("SELECT * FROM dml")) == [
        {"id": "k1", "a": 11.0, "b": "x", "c": 10}, {"id": "k4", "a": 44.0, "b": None, "c": None}]
    assert rows(sql(f"SELECT id, c FROM dml VERSION AS OF '{first}'")) == [
        {"id": "k1", "c": 10}, {"id": "k2", "c": 20}, {"id": "k3", "c": 30}]

    sql("INSERT OVERWRITE dml SELECT id, a + 1, op, 7 FROM changes WHERE op = 'u'")
    assert rows(sql("SELECT * FROM dml")) == [{"id": "k1", "a": 12.0, "b": "u", "c": 7}]
    timeline = rows(sql("CALL show_timeline(table => 'dml', limit => 2)"), order="instant_time")
    assert [r["action"] for r in timeline] == ["deltacommit", "replacecommit"]  # MERGE, INSERT OVERWRITE
    with pytest.raises(SqlError, match="MERGE: 2 source rows match the target row"):
        sql("MERGE INTO dml t USING (SELECT 'k1' AS id UNION ALL SELECT 'k1') s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET c = 1")
    sql("DROP TABLE dml PURGE")

"""Spark settings pyhudi applies to its write jobs and recommends (``pyhudi.spark.conf``)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import pyhudi
import pyhudi.spark
from pyhudi.spark.conf import (
    ARROW_MAX_BYTES_CONF,
    SESSION_CONF,
    WRITE_CONF,
    configure,
    write_settings,
)


def test_configure_sets_the_session_and_write_settings():
    class Builder:
        def __init__(self):
            self.settings = {}

        def config(self, key, value):
            self.settings[key] = value
            return self

    builder = configure(Builder())
    assert builder.settings == {**SESSION_CONF, **WRITE_CONF}
    assert builder.settings[ARROW_MAX_BYTES_CONF] == "2147483647"


def test_write_settings_hold_only_inside_the_block(spark):
    spark.conf.unset(ARROW_MAX_BYTES_CONF)
    default = spark.conf.get(ARROW_MAX_BYTES_CONF)
    with write_settings(spark):
        assert spark.conf.get(ARROW_MAX_BYTES_CONF) == "2147483647"
    assert spark.conf.get(ARROW_MAX_BYTES_CONF) == default and spark.conf.get(ARROW_MAX_BYTES_CONF, None) is None
    spark.conf.set(ARROW_MAX_BYTES_CONF, "1000000")
    with pytest.raises(RuntimeError, match="boom"), write_settings(spark):
        assert spark.conf.get(ARROW_MAX_BYTES_CONF) == "2147483647"
        raise RuntimeError("boom")
    assert spark.conf.get(ARROW_MAX_BYTES_CONF) == "1000000"
    spark.conf.unset(ARROW_MAX_BYTES_CONF)


def test_spark_write_keeps_the_users_batch_limit(spark, tmp_path):
    spark.conf.set(ARROW_MAX_BYTES_CONF, "1000000")
    df = spark.createDataFrame([(i, float(i)) for i in range(50)], "id bigint, v double")
    options = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.table.name": "t",
               "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "2"}
    pyhudi.spark.write(df, str(tmp_path / "t"), **options)
    assert spark.conf.get(ARROW_MAX_BYTES_CONF) == "1000000"
    spark.conf.unset(ARROW_MAX_BYTES_CONF)
    rows = pyhudi.open_table(str(tmp_path / "t")).read().sort_by("id")
    assert rows.column("id").to_pylist() == list(range(50))
    assert rows.column("v").to_pylist() == [float(i) for i in range(50)]


def test_sessions_made_by_new_session_read_and_write_without_registering(spark, tmp_path):
    """``pyspark_pyhudi`` registers the source statically: a child session (which shares none of
    its parent's registrations) reads and writes ``format("pyhudi")`` as is, pushed filters
    included (the session settings ``configure`` applies reach every session)."""
    assert SESSION_CONF["spark.sql.python.filterPushdown.enabled"] == "true"
    path = str(tmp_path / "t")
    table = pyhudi.create_table(path, pa.schema([("id", pa.int64()), ("v", pa.string())]), "id", num_buckets=2)
    table.upsert(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    child = spark.newSession()
    assert child.conf.get("spark.sql.python.filterPushdown.enabled") == "true"
    got = child.read.format("pyhudi").load(path).where("id >= 2").orderBy("id").collect()
    assert [(r.id, r.v) for r in got] == [(2, "b"), (3, "c")]
    df = child.createDataFrame([(3, "C"), (4, "d")], "id bigint, v string")
    df.write.format("pyhudi").option("hoodie.datasource.write.operation", "upsert").mode("append").save(path)
    rows = table.read().sort_by("id")
    assert list(zip(rows.column("id").to_pylist(), rows.column("v").to_pylist())) == [
        (1, "a"), (2, "b"), (3, "C"), (4, "d")]


def test_the_static_registration_module_names_the_pyhudi_source():
    import pyspark_pyhudi
    from pyhudi.spark.datasource import FORMAT, HudiDataSource

    assert pyspark_pyhudi.DefaultSource is HudiDataSource and pyspark_pyhudi.DefaultSource.name() == FORMAT

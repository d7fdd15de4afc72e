"""Spark settings pyhudi applies for wide tables (``pyhudi.spark.conf``)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
import pyhudi.spark
from pyhudi.spark.conf import (
    ARROW_MAX_BYTES_CONF,
    MAX_FIELDS_CONF,
    RUNTIME_CONF,
    SESSION_CONF,
    WRITE_CONF,
    configure,
    write_settings,
)


def test_register_raises_the_codegen_field_limit_and_keeps_a_higher_one(spark):
    spark.conf.set(MAX_FIELDS_CONF, "100")  # Spark's default
    pyhudi.spark.register(spark)
    assert spark.conf.get(MAX_FIELDS_CONF) == "1000"
    spark.conf.set(MAX_FIELDS_CONF, "5000")
    pyhudi.spark.register(spark)
    assert spark.conf.get(MAX_FIELDS_CONF) == "5000"
    spark.conf.set(MAX_FIELDS_CONF, "1000")


def test_wide_parquet_input_is_read_vectorized_after_register(spark, tmp_path):
    wide = pa.table({"id": pa.array([1, 2], pa.int64()), **{f"c{i}": pa.array([0.5, 1.5]) for i in range(150)}})
    pq.write_table(wide, tmp_path / "wide.parquet")
    spark.conf.set(MAX_FIELDS_CONF, "100")
    assert "Batched: false" in spark.read.parquet(str(tmp_path / "wide.parquet"))._jdf.queryExecution().toString()
    pyhudi.spark.register(spark)
    plan = spark.read.parquet(str(tmp_path / "wide.parquet"))._jdf.queryExecution().toString()
    assert "Batched: true" in plan


def test_configure_sets_the_session_and_runtime_settings():
    class Builder:
        def __init__(self):
            self.settings = {}

        def config(self, key, value):
            self.settings[key] = value
            return self

    builder = configure(Builder())
    assert builder.settings == {**SESSION_CONF, **RUNTIME_CONF, **WRITE_CONF}
    assert builder.settings[ARROW_MAX_BYTES_CONF] == "2147483647"
    assert builder.settings[MAX_FIELDS_CONF] == "1000"


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

"""Tables written with ``hoodie.datasource.write.drop.partition.columns=true``.

Their data files do not store the partition columns; readers rebuild them from the partition
path, typed per the table schema (hive-style ``col=value`` segments or plain values;
``__HIVE_DEFAULT_PARTITION__`` reads as null).
"""

from __future__ import annotations

import datetime
import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.errors import ReadError
from pyhudi.logformat import LogReader
from pyhudi.read.pruning import partition_columns_from_path

DROP = {"hoodie.datasource.write.drop.partition.columns": "true"}
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("region", pa.string()),
    pa.field("day", pa.date32()),
    pa.field("shard", pa.int32()),
    pa.field("value", pa.float64()),
])
D1, D2 = datetime.date(2024, 1, 1), datetime.date(2024, 2, 29)


def _rows() -> pa.Table:
    return pa.table({
        "id": pa.array([1, 2, 3, 4, 5], pa.int64()),
        "region": ["eu", "eu", "us", "us", None],
        "day": pa.array([D1, D2, D1, D1, D2], pa.date32()),
        "shard": pa.array([7, 7, 8, 8, 9], pa.int32()),
        "value": [1.0, 2.0, 3.0, 4.0, 5.0],
    }, schema=SCHEMA)


def _stored_columns(path: str) -> set[str]:
    """Every column any data file stores (base files and log data blocks)."""
    names: set[str] = set()
    for base in glob.glob(f"{path}/**/*.parquet", recursive=True):
        names |= set(pq.read_schema(base).names)
    for log in glob.glob(f"{path}/**/.*.log.*", recursive=True):
        with open(log, "rb") as f:
            blocks = LogReader(data=f.read()).blocks()
        for block in blocks:
            if hasattr(block, "read"):
                names |= set(block.read().column_names)
    return names


def _as_dicts(table: pa.Table) -> list[dict]:
    return table.sort_by("id").to_pylist()


@pytest.mark.parametrize("hive_style", [True, False])
@pytest.mark.parametrize("table_type,buckets", [("MERGE_ON_READ", 2), ("MERGE_ON_READ", None), ("COPY_ON_WRITE", None)])
def test_partition_columns_rebuilt_from_the_path(tmp_path, hive_style, table_type, buckets):
    path = str(tmp_path / "t")
    options = {**DROP, "hoodie.datasource.write.hive_style_partitioning": str(hive_style).lower()}
    table = pyhudi.create_table(path, SCHEMA, "id", partition_fields=["region", "day", "shard"],
                                table_type=table_type, num_buckets=buckets, options=options)
    assert table.config.props["hoodie.datasource.write.drop.partition.columns"] == "true"
    table.upsert(_rows())
    update = _rows().slice(1, 3)  # ids 2, 3, 4: new values, same partitions
    update = update.set_column(4, "value", pa.array([20.0, 30.0, 40.0]))
    table.upsert(update)

    stored = _stored_columns(path)
    assert {"id", "value", "_hoodie_partition_path"} <= stored
    assert not stored & {"region", "day", "shard"}  # only the paths hold them
    first = "region=eu/day=2024-01-01/shard=7" if hive_style else "eu/2024-01-01/7"
    assert os.path.isdir(f"{path}/{first}")

    reopened = pyhudi.open_table(path)
    got = reopened.read()
    assert got.schema.names == SCHEMA.names
    assert got.schema.types == SCHEMA.types  # int32 and date32 partition columns, from the path
    expected = _rows().set_column(4, "value", pa.array([1.0, 20.0, 30.0, 40.0, 5.0]))
    assert _as_dicts(got) == _as_dicts(expected)  # region None: written to the default partition

    assert _as_dicts(reopened.read(columns=["id", "day"], filters=[("day", "=", D2)])) == [
        {"id": 2, "day": D2}, {"id": 5, "day": D2}]
    assert _as_dicts(reopened.read(columns=["id"], filters=[("region", "=", "us"), ("shard", ">=", 8)])) == [
        {"id": 3}, {"id": 4}]
    assert _as_dicts(reopened.read(columns=["id", "region"], filters=[("region", "is null")])) == [
        {"id": 5, "region": None}]
    meta = reopened.read(columns=["id", "shard"], with_meta=True).sort_by("id")
    assert meta.column("shard").to_pylist() == [7, 7, 8, 8, 9]
    assert meta.column("_hoodie_partition_path").to_pylist()[0] == first
    streamed = pa.Table.from_batches(list(reopened.scan(columns=["id", "region"], batch_size=2)))
    assert _as_dicts(streamed) == _as_dicts(expected.select(["id", "region"]))


def test_partition_columns_stored_by_default(tmp_path):
    path = str(tmp_path / "t")
    table = pyhudi.create_table(path, SCHEMA, "id", partition_fields=["region"], num_buckets=1)
    assert table.config.props["hoodie.datasource.write.drop.partition.columns"] == "false"
    table.upsert(_rows())
    assert "region" in _stored_columns(path)
    assert _as_dicts(table.read()) == _as_dicts(_rows())


def test_drop_option_must_be_boolean(tmp_path):
    with pytest.raises(pyhudi.errors.ConfigError, match="drop.partition.columns"):
        pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", partition_fields=["region"],
                            options={"hoodie.datasource.write.drop.partition.columns": "maybe"})
    assert not os.path.exists(tmp_path / "t" / ".hoodie" / "hoodie.properties")


def test_partition_values_typed_per_schema_and_errors_name_the_path():
    schema = pa.schema([("d", pa.date32()), ("n", pa.int16()), ("s", pa.string())])
    got = partition_columns_from_path("d=2024-03-01/n=12/s=a%2Fb", ["d", "n", "s"], True, schema, url_encoded=True)
    assert {k: v.as_py() for k, v in got.items()} == {"d": datetime.date(2024, 3, 1), "n": 12, "s": "a/b"}
    assert got["n"].type == pa.int16()
    got = partition_columns_from_path("__HIVE_DEFAULT_PARTITION__/5/x", ["d", "n", "s"], False, schema)
    assert got["d"].as_py() is None and got["d"].type == pa.date32() and got["n"].as_py() == 5
    assert partition_columns_from_path("v", ["missing"], False, schema)["missing"] == pa.scalar("v")
    with pytest.raises(ReadError, match=r"'d=2024-13-45/n=1/s=x'.*'2024-13-45'.*'d'"):
        partition_columns_from_path("d=2024-13-45/n=1/s=x", ["d", "n", "s"], True, schema)
    with pytest.raises(ReadError, match=r"segment 'n=1' is not d=<value>"):
        partition_columns_from_path("n=1/d=2024-01-01/s=x", ["d", "n", "s"], True, schema)
    with pytest.raises(ReadError, match="one value per partition field"):
        partition_columns_from_path("2024-01-01/1", ["d", "n", "s"], False, schema)

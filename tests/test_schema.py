"""Arrow <-> Avro schema and record conversion (pyhudi/schema.py)."""

from __future__ import annotations

import datetime
import decimal
import io
import json

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyhudi.errors import SchemaError
from pyhudi.schema import (
    META_FIELDS,
    arrow_schema_from_avro,
    arrow_table_from_avro_records,
    avro_compatible_schema,
    avro_records_from_arrow,
    avro_schema_from_arrow,
    avro_schema_json,
    decimal_fixed_size,
    hudi_record_names,
    with_meta_fields,
    without_meta_fields,
)


def create_schema(table_dir) -> dict:
    """``hoodie.table.create.schema`` of an extracted fixture table (Java-properties escaped)."""
    for line in (table_dir / ".hoodie" / "hoodie.properties").read_text().splitlines():
        if line.startswith("hoodie.table.create.schema="):
            return json.loads(line.split("=", 1)[1].replace("\\:", ":").replace("\\=", "="))
    raise AssertionError("no create schema")


def hudi_style(avro):
    """Normalise a Spark-written schema to pyhudi's spelling: ``["null", T]`` + default null."""
    if isinstance(avro, list):
        non_null = [hudi_style(t) for t in avro if t != "null"]
        return ["null", *non_null] if "null" in avro else non_null
    if isinstance(avro, dict):
        out = {k: hudi_style(v) for k, v in avro.items() if k != "doc"}
        if out.get("type") == "record":
            fields = []
            for f in out["fields"]:
                f = dict(f)
                if isinstance(f["type"], list) and f["type"][0] == "null":
                    f["default"] = None
                fields.append(f)
            out["fields"] = fields
        return out
    return avro


V8_ARROW = pa.schema(
    [
        ("id", pa.int32()),
        ("name", pa.string()),
        ("isActive", pa.bool_()),
        ("byteField", pa.int32()),
        ("shortField", pa.int32()),
        ("intField", pa.int32()),
        ("longField", pa.int64()),
        ("floatField", pa.float32()),
        ("doubleField", pa.float64()),
        ("decimalField", pa.decimal128(10, 5)),
        ("dateField", pa.date32()),
        ("timestampField", pa.timestamp("us", tz="UTC")),
        ("binaryField", pa.binary()),
        (
            "arrayField",
            pa.list_(
                pa.field(
                    "element",
                    pa.struct([("arr_struct_f1", pa.string()), ("arr_struct_f2", pa.int32())]),
                    nullable=True,
                )
            ),
        ),
        (
            "mapField",
            pa.map_(
                pa.string(),
                pa.field(
                    "value",
                    pa.struct([("map_field_value_struct_f1", pa.float64()), ("map_field_value_struct_f2", pa.bool_())]),
                ),
            ),
        ),
        (
            "structField",
            pa.struct(
                [
                    ("field1", pa.string()),
                    ("field2", pa.int32()),
                    ("child_struct", pa.struct([("child_field1", pa.float64()), ("child_field2", pa.bool_())])),
                ]
            ),
        ),
    ]
)


def test_fixture_create_schema_exact_arrow_types(unzip_fixture):
    avro = create_schema(unzip_fixture("sample_table/cow/v8_nonpartitioned.zip"))
    arrow = arrow_schema_from_avro(avro)
    assert arrow.equals(V8_ARROW)
    assert all(f.nullable for f in arrow)


def test_fixture_create_schema_round_trips_to_hudi_spelling(unzip_fixture):
    avro = create_schema(unzip_fixture("sample_table/cow/v8_nonpartitioned.zip"))
    again = avro_schema_from_arrow(arrow_schema_from_avro(avro), avro["name"], avro["namespace"])
    assert again == hudi_style(avro)
    decimal_type = again["fields"][9]["type"][1]
    assert decimal_type == {
        "type": "fixed",
        "name": "fixed",
        "namespace": "hoodie.v8_nonpartitioned.v8_nonpartitioned_record.decimalField",
        "size": 5,
        "logicalType": "decimal",
        "precision": 10,
        "scale": 5,
    }
    child = again["fields"][15]["type"][1]["fields"][2]["type"][1]
    assert (child["name"], child["namespace"]) == (
        "child_struct",
        "hoodie.v8_nonpartitioned.v8_nonpartitioned_record.structField",
    )
    fastavro.parse_schema(again)  # valid Avro (unique names)


@pytest.mark.parametrize(
    "name",
    [
        "sample_table/cow/v9_txns_simple_nometa.zip",
        "quickstart_trips_table/mor/avro/v9_mor_nonpart_3commits.zip",
        "quickstart_trips_table/mor/avro/table_log_only.zip",
    ],
)
def test_other_fixture_schemas(unzip_fixture, name):
    avro = create_schema(unzip_fixture(name))
    arrow = arrow_schema_from_avro(avro)
    assert avro_schema_from_arrow(arrow, avro["name"], avro["namespace"]) == hudi_style(avro)
    if "txns" in name:
        assert arrow.field("amount").type == pa.decimal128(15, 2)
        assert arrow.field("fee_amount").type == pa.decimal128(10, 2)
        assert arrow.field("txn_datetime").type == pa.timestamp("us", tz="UTC")
        assert arrow.field("txn_date").type == pa.date32()
    if "3commits" in name:
        assert arrow.types == [pa.int32(), pa.string(), pa.float64(), pa.int64()]


def test_union_order_and_logical_types():
    avro = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "a", "type": ["int", "null"]},
            {"name": "b", "type": ["null", "int"], "default": None},
            {"name": "c", "type": "long"},
            {"name": "d", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 3}]},
            {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}},
            {"name": "f", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "g", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "h", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
            {"name": "i", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
            {"name": "j", "type": {"type": "long", "logicalType": "time-micros"}},
            {"name": "k", "type": {"type": "string", "logicalType": "uuid"}},
            {"name": "l", "type": {"type": "fixed", "name": "F16", "size": 16}},
            {"name": "m", "type": ["null", "F16"]},
            {
                "name": "n",
                "type": {"type": "fixed", "name": "D", "size": 20, "logicalType": "decimal", "precision": 45},
            },
            {"name": "o", "type": {"type": "int", "logicalType": "time-millis"}},
        ],
    }
    arrow = arrow_schema_from_avro(json.dumps(avro))
    assert arrow.field("a").type == arrow.field("b").type == pa.int32()
    assert arrow.field("a").nullable and arrow.field("b").nullable and not arrow.field("c").nullable
    assert arrow.field("d").type == pa.decimal128(20, 3)
    assert arrow.field("e").type == pa.string()
    assert arrow.field("f").type == arrow.field("g").type == pa.timestamp("us", tz="UTC")
    assert arrow.field("h").type == arrow.field("i").type == pa.timestamp("us")
    assert arrow.field("j").type == pa.time64("us")
    assert arrow.field("k").type == pa.string()
    assert arrow.field("l").type == arrow.field("m").type == pa.binary(16)
    assert arrow.field("n").type == pa.decimal256(45, 0)
    assert arrow.field("o").type == pa.time32("ms")


def test_unsupported_avro_types_raise():
    with pytest.raises(SchemaError, match="more than one non-null"):
        arrow_schema_from_avro({"type": "record", "name": "r", "fields": [{"name": "a", "type": ["int", "string"]}]})
    with pytest.raises(SchemaError, match="record"):
        arrow_schema_from_avro({"type": "array", "items": "int"})
    with pytest.raises(SchemaError, match="unknown Avro type name"):
        arrow_schema_from_avro({"type": "record", "name": "r", "fields": [{"name": "a", "type": "Nope"}]})
    with pytest.raises(SchemaError, match="JSON"):
        arrow_schema_from_avro("{not json")


@pytest.mark.parametrize(
    "precision,size", [(1, 1), (2, 1), (3, 2), (9, 4), (10, 5), (15, 7), (18, 8), (19, 9), (38, 16)]
)
def test_decimal_fixed_size(precision, size):
    assert decimal_fixed_size(precision) == size


def test_arrow_to_avro_spelling():
    schema = pa.schema(
        [
            pa.field("k", pa.string(), nullable=False),
            ("small", pa.int16()),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("ts_ms", pa.timestamp("ms", tz="UTC")),
            ("ts_local", pa.timestamp("us")),
            ("tags", pa.list_(pa.string())),
            ("attrs", pa.map_(pa.string(), pa.int64())),
        ]
    )
    avro = avro_schema_from_arrow(schema, "t_record", "hoodie.t")
    assert avro["name"] == "t_record" and avro["namespace"] == "hoodie.t"
    fields = {f["name"]: f for f in avro["fields"]}
    assert fields["k"] == {"name": "k", "type": "string"}
    assert fields["small"] == {"name": "small", "type": ["null", "int"], "default": None}
    assert fields["ts"]["type"] == ["null", {"type": "long", "logicalType": "timestamp-micros"}]
    assert fields["ts_ms"]["type"][1]["logicalType"] == "timestamp-millis"
    assert fields["ts_local"]["type"][1]["logicalType"] == "local-timestamp-micros"
    assert fields["tags"]["type"] == ["null", {"type": "array", "items": ["null", "string"]}]
    assert fields["attrs"]["type"] == ["null", {"type": "map", "values": ["null", "long"]}]
    with pytest.raises(SchemaError, match="string keys"):
        avro_schema_from_arrow(pa.schema([("m", pa.map_(pa.int32(), pa.int32()))]), "r", "n")
    with pytest.raises(SchemaError, match="no Avro equivalent"):
        avro_schema_from_arrow(pa.schema([("n", pa.null())]), "r", "n")


def test_hudi_record_names_and_json():
    assert hudi_record_names("trips") == ("trips_record", "hoodie.trips")
    text = avro_schema_json(pa.schema([("a", pa.int64())]), "trips")
    assert text == (
        '{"type":"record","name":"trips_record","namespace":"hoodie.trips",'
        '"fields":[{"name":"a","type":["null","long"],"default":null}]}'
    )


def test_meta_fields():
    assert META_FIELDS == (
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
        "_hoodie_file_name",
    )
    data = pa.schema([("id", pa.int64())])
    full = with_meta_fields(data)
    assert full.names == [*META_FIELDS, "id"]
    assert all(full.field(n).type == pa.string() and full.field(n).nullable for n in META_FIELDS)
    assert with_meta_fields(full) is full
    assert without_meta_fields(full).equals(data)
    with pytest.raises(SchemaError, match="first five"):
        with_meta_fields(pa.schema([("id", pa.int64()), ("_hoodie_record_key", pa.string())]))


ALL_TYPES = pa.schema(
    [
        ("s", pa.string()),
        ("i8", pa.int8()),
        ("i32", pa.int32()),
        ("i64", pa.int64()),
        ("f32", pa.float32()),
        ("f64", pa.float64()),
        ("b", pa.bool_()),
        ("bin", pa.binary()),
        ("dec", pa.decimal128(12, 4)),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ts_local", pa.timestamp("us")),
        ("t", pa.time64("us")),
        ("lst", pa.list_(pa.field("element", pa.int64()))),
        ("mp", pa.map_(pa.string(), pa.field("value", pa.float64()))),
        ("st", pa.struct([("x", pa.int32()), ("y", pa.struct([("z", pa.string())]))])),
    ]
)


def all_types_table() -> pa.Table:
    rows = [
        {
            "s": "a",
            "i8": -5,
            "i32": 7,
            "i64": 2**40,
            "f32": 1.5,
            "f64": -2.25,
            "b": True,
            "bin": b"\x00\xff",
            "dec": decimal.Decimal("-12345678.9012"),
            "d": datetime.date(2024, 2, 29),
            "ts": datetime.datetime(2024, 1, 1, 12, 0, 0, 123456, tzinfo=datetime.timezone.utc),
            "ts_local": datetime.datetime(1969, 12, 31, 23, 59, 59, 1),
            "t": datetime.time(23, 59, 59, 999999),
            "lst": [1, None, 3],
            "mp": {"k": 1.0, "n": None},
            "st": {"x": 1, "y": {"z": "deep"}},
        },
        {name: None for name in ALL_TYPES.names},
    ]
    return pa.Table.from_pylist(rows, schema=ALL_TYPES)


def avro_round_trip(table: pa.Table) -> pa.Table:
    avro = avro_schema_from_arrow(table.schema, "r", "ns")
    parsed = fastavro.parse_schema(avro)
    buf = io.BytesIO()
    for record in avro_records_from_arrow(table):
        fastavro.schemaless_writer(buf, parsed, record)
    buf.seek(0)
    decoded = [fastavro.schemaless_reader(buf, parsed) for _ in range(table.num_rows)]
    return arrow_table_from_avro_records(decoded, arrow_schema_from_avro(avro))


def test_records_round_trip_every_type():
    table = all_types_table()
    back = avro_round_trip(table)
    assert back.schema.equals(avro_compatible_schema(table.schema))
    assert back.column("i8").type == pa.int32()
    assert back.cast(ALL_TYPES).equals(table)


def test_fixed_decimal_decodes_exactly():
    avro = {
        "type": "record",
        "name": "r",
        "fields": [
            {
                "name": "amount",
                "type": [
                    {
                        "type": "fixed",
                        "name": "fixed",
                        "size": 7,
                        "logicalType": "decimal",
                        "precision": 15,
                        "scale": 2,
                    },
                    "null",
                ],
            }
        ],
    }
    parsed = fastavro.parse_schema(avro)
    buf = io.BytesIO()
    # Hand-encoded datum: union branch 0, then -890000 (-8900.00) as 7-byte two's complement.
    buf.write(b"\x00" + (-890000).to_bytes(7, "big", signed=True))
    buf.seek(0)
    record = fastavro.schemaless_reader(buf, parsed)
    table = arrow_table_from_avro_records([record], arrow_schema_from_avro(avro))
    assert table.column("amount").type == pa.decimal128(15, 2)
    assert table.column("amount")[0].as_py() == decimal.Decimal("-8900.00")


def test_records_missing_fields_become_null():
    schema = pa.schema([("a", pa.int64()), ("b", pa.string())])
    table = arrow_table_from_avro_records([{"a": 1}], schema)
    assert table.to_pylist() == [{"a": 1, "b": None}]
    with pytest.raises(SchemaError):
        arrow_table_from_avro_records([{"a": "not an int"}], schema)


def test_nanosecond_timestamps_truncate_to_micros():
    table = pa.table({"ts": pa.array([1_000_001_999], pa.timestamp("ns", tz="UTC"))})
    assert avro_schema_from_arrow(table.schema, "r", "n")["fields"][0]["type"][1]["logicalType"] == "timestamp-micros"
    back = avro_round_trip(table)
    assert back.column("ts").cast(pa.int64()).to_pylist() == [1_000_001]


_SCALARS = {
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "int32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "float64": (pa.float64(), st.floats(allow_nan=False)),
    "string": (pa.string(), st.text()),
    "bool": (pa.bool_(), st.booleans()),
    "binary": (pa.binary(), st.binary(max_size=20)),
    "decimal": (pa.decimal128(9, 3), st.decimals(min_value=-999999, max_value=999999, places=3, allow_nan=False)),
    "date": (pa.date32(), st.dates()),
}


@st.composite
def random_tables(draw):
    kinds = draw(st.lists(st.sampled_from(sorted(_SCALARS)), min_size=1, max_size=5))
    n = draw(st.integers(0, 8))
    columns = {}
    for i, kind in enumerate(kinds):
        arrow_type, values = _SCALARS[kind]
        columns[f"c{i}_{kind}"] = pa.array(draw(st.lists(st.none() | values, min_size=n, max_size=n)), arrow_type)
    return pa.table(columns)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_tables())
def test_property_schema_and_records_round_trip(table):
    avro = avro_schema_from_arrow(table.schema, "r", "ns")
    assert arrow_schema_from_avro(json.dumps(avro)).equals(table.schema)
    assert avro_round_trip(table).equals(table)

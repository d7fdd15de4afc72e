"""The Avro ``HoodieDeleteRecordList`` of DELETE blocks, to and from Arrow.

Each delete carries its record key, partition path and an ordering value wrapped in one of
thirteen union branches (``IntWrapper``, ``LongWrapper``, ...). The merge code needs the
ordering values as one typed, vectorisable column, so decoding returns an Arrow table whose
``ordering_value`` column has a single type (see :func:`decode_delete_records`) and whose
``ordering_type`` column keeps the wrapper each value came in.
"""

from __future__ import annotations

import io
import json
from enum import IntEnum
from functools import cache
from typing import Any

import pyarrow as pa

from pyhudi.errors import LogFormatError, SchemaError

AVRO_NAMESPACE = "org.apache.hudi.avro.model"


class OrderingType(IntEnum):
    """The wrapper of a delete's ordering value; the ordinal is its branch in the Avro union."""

    NULL = 0
    BOOLEAN = 1
    INT = 2
    LONG = 3
    FLOAT = 4
    DOUBLE = 5
    BYTES = 6
    STRING = 7
    DATE = 8
    DECIMAL = 9
    TIME_MICROS = 10
    TIMESTAMP_MICROS = 11
    ARRAY = 12


_DECIMAL_WRAPPER = pa.decimal128(30, 15)

# One table: wrapper record name, Avro type of its ``value``, Arrow type of the decoded value.
# Date/time wrappers carry their plain physical int/long on the wire (Hudi annotates no logical
# type there); the decimal wrapper is bytes decimal(30, 15).
_WRAPPERS: dict[OrderingType, tuple[str, Any, pa.DataType]] = {
    OrderingType.BOOLEAN: ("BooleanWrapper", "boolean", pa.bool_()),
    OrderingType.INT: ("IntWrapper", "int", pa.int32()),
    OrderingType.LONG: ("LongWrapper", "long", pa.int64()),
    OrderingType.FLOAT: ("FloatWrapper", "float", pa.float32()),
    OrderingType.DOUBLE: ("DoubleWrapper", "double", pa.float64()),
    OrderingType.BYTES: ("BytesWrapper", "bytes", pa.binary()),
    OrderingType.STRING: ("StringWrapper", "string", pa.string()),
    OrderingType.DATE: ("DateWrapper", "int", pa.date32()),
    OrderingType.DECIMAL: (
        "DecimalWrapper",
        {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15},
        _DECIMAL_WRAPPER,
    ),
    OrderingType.TIME_MICROS: ("TimeMicrosWrapper", "long", pa.time64("us")),
    OrderingType.TIMESTAMP_MICROS: ("TimestampMicrosWrapper", "long", pa.timestamp("us", tz="UTC")),
    # Multi-field ordering (newer Hudi). The element layout is not verified against Hudi's avsc:
    # pyhudi never writes it and decodes it only as text.
    OrderingType.ARRAY: ("ArrayWrapper", None, pa.string()),
}
_BY_FULL_NAME = {f"{AVRO_NAMESPACE}.{name}": code for code, (name, _, _) in _WRAPPERS.items()}
_SCALAR_BRANCHES = [
    {"type": "record", "name": name, "fields": [{"name": "value", "type": value}]}
    for code, (name, value, _) in _WRAPPERS.items()
    if code != OrderingType.ARRAY
]
_ARRAY_BRANCH = {
    "type": "record",
    "name": "ArrayWrapper",
    "fields": [
        {"name": "value", "type": {"type": "array", "items": ["null"] + [b["name"] for b in _SCALAR_BRANCHES]}}
    ],
}

DELETE_RECORD_LIST_SCHEMA: dict = {
    "type": "record",
    "name": "HoodieDeleteRecordList",
    "namespace": AVRO_NAMESPACE,
    "fields": [
        {
            "name": "deleteRecordList",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "HoodieDeleteRecord",
                    "fields": [
                        {"name": "recordKey", "type": ["null", "string"], "default": None},
                        {"name": "partitionPath", "type": ["null", "string"], "default": None},
                        {
                            "name": "orderingVal",
                            "type": ["null", *_SCALAR_BRANCHES, _ARRAY_BRANCH],
                            "default": None,
                        },
                    ],
                },
            },
        }
    ],
}
"""The Avro schema of DELETE block content (union branch order = :class:`OrderingType`)."""


@cache
def _fastavro_and_schema() -> tuple[Any, Any]:
    """fastavro and the parsed schema, on first use (a cold read without deletes needs neither)."""
    import fastavro

    return fastavro, fastavro.parse_schema(DELETE_RECORD_LIST_SCHEMA)


# ------------------------------------------------------------------------------ encode
def _ordering_code(t: pa.DataType) -> OrderingType:
    if pa.types.is_boolean(t):
        return OrderingType.BOOLEAN
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return OrderingType.INT
    if pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return OrderingType.INT
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return OrderingType.LONG
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return OrderingType.FLOAT
    if pa.types.is_float64(t):
        return OrderingType.DOUBLE
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return OrderingType.BYTES
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return OrderingType.STRING
    if pa.types.is_date(t):
        return OrderingType.DATE
    if pa.types.is_decimal(t):
        return OrderingType.DECIMAL
    if pa.types.is_time(t):
        return OrderingType.TIME_MICROS
    if pa.types.is_timestamp(t):
        return OrderingType.TIMESTAMP_MICROS
    raise SchemaError(f"no Hudi ordering-value wrapper for Arrow type {t}")


def _wire_values(values: pa.ChunkedArray, code: OrderingType) -> list:
    """Python values in the wrapper's wire form (vectorised casts, one ``to_pylist``)."""
    if code == OrderingType.DATE:
        values = values.cast(pa.date32()).cast(pa.int32())
    elif code == OrderingType.TIME_MICROS:
        values = values.cast(pa.time64("us")).cast(pa.int64())
    elif code == OrderingType.TIMESTAMP_MICROS:
        values = values.cast(pa.timestamp("us", tz=values.type.tz)).cast(pa.int64())
    elif code == OrderingType.DECIMAL:
        values = values.cast(_DECIMAL_WRAPPER)
    elif code == OrderingType.BYTES and pa.types.is_fixed_size_binary(values.type):
        values = values.cast(pa.binary())
    return values.to_pylist()


def encode_delete_records(deletes: pa.Table) -> bytes:
    """The Avro datum of a ``HoodieDeleteRecordList`` for a table of deletes.

    Columns: ``record_key`` (required), ``partition_path`` (default ``""``), ``ordering_value``
    (optional; its Arrow type picks the wrapper). A missing or null ordering value is written
    as ``IntWrapper(0)``, Hudi's "delete regardless of ordering" marker (hudi-rs rejects null).
    """
    n = deletes.num_rows
    keys = deletes.column("record_key").cast(pa.string())
    if keys.null_count:
        raise SchemaError("delete records need a non-null record_key")
    key_list = keys.to_pylist()
    if "partition_path" in deletes.column_names:
        part_list = deletes.column("partition_path").cast(pa.string()).to_pylist()
    else:
        part_list = [""] * n
    default = (f"{AVRO_NAMESPACE}.IntWrapper", {"value": 0})
    if "ordering_value" in deletes.column_names and not pa.types.is_null(deletes.column("ordering_value").type):
        column = deletes.column("ordering_value")
        code = _ordering_code(column.type)
        full_name = f"{AVRO_NAMESPACE}.{_WRAPPERS[code][0]}"
        ordering = [default if v is None else (full_name, {"value": v}) for v in _wire_values(column, code)]
    else:
        ordering = [default] * n
    records = [
        {"recordKey": k, "partitionPath": p, "orderingVal": o} for k, p, o in zip(key_list, part_list, ordering)
    ]
    out = io.BytesIO()
    fastavro, parsed = _fastavro_and_schema()
    fastavro.schemaless_writer(out, parsed, {"deleteRecordList": records})
    return out.getvalue()


# ------------------------------------------------------------------------------ decode
_NUMERIC_PROMOTION = {
    frozenset({OrderingType.INT, OrderingType.LONG}): pa.int64(),
    frozenset({OrderingType.FLOAT, OrderingType.DOUBLE}): pa.float64(),
}
_NUMERIC = {OrderingType.INT, OrderingType.LONG, OrderingType.FLOAT, OrderingType.DOUBLE}


def _unwrap_array(value: list) -> str:
    items = [None if item is None else item[1]["value"] for item in value]
    return json.dumps(items, default=str)


def decode_delete_records(datum: bytes) -> pa.Table:
    """Decode a ``HoodieDeleteRecordList`` datum into an Arrow table.

    Columns: ``record_key``, ``partition_path`` (strings), ``ordering_type`` (int8
    :class:`OrderingType`), ``ordering_value`` and ``is_default_ordering`` (true for a null
    wrapper or ``IntWrapper(0)``: such a delete wins whatever the record's ordering value).
    ``ordering_value`` has the Arrow type of the block's one wrapper (LongWrapper -> int64,
    StringWrapper -> string, DateWrapper -> date32, ...); IntWrapper(0) defaults mixed with Long
    values widen to int64, mixed integer/floating values to float64, anything else mixed to
    their text form.
    """
    fastavro, parsed = _fastavro_and_schema()
    try:
        decoded = fastavro.schemaless_reader(io.BytesIO(datum), parsed, return_record_name=True)
    except Exception as exc:  # fastavro raises assorted EOF/Value/Index errors on bad bytes
        raise LogFormatError(f"cannot decode delete records: {exc}") from exc
    rows = decoded["deleteRecordList"]
    keys, parts, codes, values, defaults = [], [], [], [], []
    for row in rows:
        keys.append(row["recordKey"])
        parts.append(row["partitionPath"])
        ordering = row["orderingVal"]
        if ordering is None:
            codes.append(OrderingType.NULL)
            values.append(None)
            defaults.append(True)
            continue
        code = _BY_FULL_NAME.get(ordering[0])
        if code is None:
            raise LogFormatError(f"unknown ordering wrapper {ordering[0]!r} in delete block")
        codes.append(code)
        value = ordering[1]["value"]
        values.append(_unwrap_array(value) if code == OrderingType.ARRAY else value)
        defaults.append(code == OrderingType.INT and value == 0)
    present = set(codes) - {OrderingType.NULL}
    return pa.table(
        {
            "record_key": pa.array(keys, pa.string()),
            "partition_path": pa.array(parts, pa.string()),
            "ordering_type": pa.array(codes, pa.int8()),
            "ordering_value": _typed_values(values, present),
            "is_default_ordering": pa.array(defaults, pa.bool_()),
        }
    )


def _typed_values(values: list, present: set) -> pa.Array:
    if not present:
        return pa.nulls(len(values), pa.int32())
    if len(present) == 1:
        code = next(iter(present))
        arrow_type = _WRAPPERS[code][2]
        if code == OrderingType.DATE:
            return pa.array(values, pa.int32()).cast(pa.date32())
        if code in (OrderingType.TIME_MICROS, OrderingType.TIMESTAMP_MICROS):
            return pa.array(values, pa.int64()).cast(arrow_type)
        return pa.array(values, arrow_type)
    promoted = _NUMERIC_PROMOTION.get(frozenset(present))
    if promoted is None and present <= _NUMERIC:
        promoted = pa.float64()
    if promoted is not None:
        return pa.array(values, promoted)
    return pa.array([None if v is None else str(v) for v in values], pa.string())


__all__ = [
    "AVRO_NAMESPACE",
    "OrderingType",
    "DELETE_RECORD_LIST_SCHEMA",
    "encode_delete_records",
    "decode_delete_records",
]

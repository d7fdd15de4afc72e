"""Spark SQL types ↔ Arrow types, for DDL parsed with sqlglot (dialect ``spark``).

``CREATE TABLE t (id STRING NOT NULL, a DOUBLE, ...)`` and the typed column-family values of the
SQL ALTER (``'hoodie.colFamily.k' = 'x DOUBLE, y STRING; y'``) give column types in Spark's
spelling; pyhudi tables are Arrow-typed. Spark's ``TIMESTAMP`` is an instant (UTC microseconds),
``TIMESTAMP_NTZ`` a wall-clock time, as in Spark's own Arrow conversion. The reverse direction
spells a table's Arrow type for Spark (``CAST(... AS DOUBLE)`` in generated statements and the
catalog entry's column list).
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from pyhudi.errors import SchemaError

T = exp.DataType.Type

_SIMPLE: dict[exp.DataType.Type, pa.DataType] = {
    T.TEXT: pa.string(), T.VARCHAR: pa.string(), T.CHAR: pa.string(), T.NVARCHAR: pa.string(),
    T.DOUBLE: pa.float64(), T.FLOAT: pa.float32(),
    T.BIGINT: pa.int64(), T.INT: pa.int32(), T.SMALLINT: pa.int16(), T.TINYINT: pa.int8(),
    T.BOOLEAN: pa.bool_(), T.DATE: pa.date32(), T.BINARY: pa.binary(), T.VARBINARY: pa.binary(),
    T.TIMESTAMP: pa.timestamp("us", tz="UTC"), T.TIMESTAMPTZ: pa.timestamp("us", tz="UTC"),
    T.TIMESTAMPLTZ: pa.timestamp("us", tz="UTC"), T.TIMESTAMPNTZ: pa.timestamp("us"),
}


def arrow_type(data_type: exp.DataType, column: str) -> pa.DataType:
    """The Arrow type of a parsed Spark SQL type; ``column`` names the column in errors."""
    kind = data_type.this
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    params = data_type.expressions
    if kind == T.DECIMAL:
        precision, scale = ([int(p.this.this) for p in params] + [10, 0])[:2] if params else (10, 0)
        if len(params) == 1:
            scale = 0
        return pa.decimal128(precision, scale)
    if kind == T.ARRAY and len(params) == 1:
        return pa.list_(pa.field("element", arrow_type(params[0], column)))
    if kind == T.MAP and len(params) == 2:
        return pa.map_(arrow_type(params[0], column), arrow_type(params[1], column))
    if kind == T.STRUCT:
        return pa.struct([arrow_field(p) for p in params])
    raise SchemaError(f"column {column!r}: Spark SQL type {data_type.sql(dialect='spark')} is not supported by pyhudi")


def arrow_field(column_def: exp.ColumnDef) -> pa.Field:
    """An Arrow field from ``name TYPE [NOT NULL]``."""
    name = column_def.name
    if column_def.args.get("kind") is None:
        raise SchemaError(f"column {name!r} has no type")
    not_null = any(isinstance(c.args.get("kind"), exp.NotNullColumnConstraint)
                   for c in column_def.args.get("constraints") or [])
    return pa.field(name, arrow_type(column_def.args["kind"], name), nullable=not not_null)


_SPARK_NAMES: list[tuple[callable, str]] = [
    (pa.types.is_string, "STRING"), (pa.types.is_large_string, "STRING"),
    (lambda t: t == pa.float64(), "DOUBLE"), (lambda t: t == pa.float32(), "FLOAT"),
    (lambda t: t == pa.int64(), "BIGINT"), (lambda t: t == pa.int32(), "INT"),
    (lambda t: t == pa.int16(), "SMALLINT"), (lambda t: t == pa.int8(), "TINYINT"),
    (pa.types.is_boolean, "BOOLEAN"), (pa.types.is_date32, "DATE"),
    (pa.types.is_binary, "BINARY"), (pa.types.is_large_binary, "BINARY"),
]


def spark_type_sql(data_type: pa.DataType) -> str:
    """Spark's spelling of an Arrow type (``DOUBLE``, ``DECIMAL(10,2)``, ``ARRAY<STRING>``, ...)."""
    for test, name in _SPARK_NAMES:
        if test(data_type):
            return name
    if pa.types.is_timestamp(data_type):
        return "TIMESTAMP" if data_type.tz else "TIMESTAMP_NTZ"
    if pa.types.is_decimal(data_type):
        return f"DECIMAL({data_type.precision},{data_type.scale})"
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        return f"ARRAY<{spark_type_sql(data_type.value_type)}>"
    if pa.types.is_map(data_type):
        return f"MAP<{spark_type_sql(data_type.key_type)},{spark_type_sql(data_type.item_type)}>"
    if pa.types.is_struct(data_type):
        inner = ",".join(f"`{f.name}`:{spark_type_sql(f.type)}" for f in data_type)
        return f"STRUCT<{inner}>"
    raise SchemaError(f"Arrow type {data_type} has no Spark SQL equivalent")


def spark_columns_sql(schema: pa.Schema) -> str:
    """``id STRING NOT NULL, a DOUBLE, ...`` for a catalog entry."""
    return ", ".join(f"`{f.name}` {spark_type_sql(f.type)}{'' if f.nullable else ' NOT NULL'}" for f in schema)


__all__ = ["arrow_field", "arrow_type", "spark_columns_sql", "spark_type_sql"]

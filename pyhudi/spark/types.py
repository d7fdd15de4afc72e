"""Arrow ↔ Spark schemas for the data source, and the exact cast of every batch handed to Spark.

Spark takes a Python source's Arrow batches only if their schema equals the Spark schema
converted to Arrow *exactly* (field names, types, nullability; timestamps as
``timestamp[us, tz=UTC]``), so :func:`cast_batch` is applied to every batch, not just the first.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyspark.errors import PySparkTypeError
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructField, StructType

from pyhudi.errors import SchemaError


def spark_schema(schema: pa.Schema, non_null: Sequence[str] | None = None) -> StructType:
    """The Spark schema of a table schema (timestamps with a zone → TIMESTAMP, without → TIMESTAMP_NTZ).

    With ``non_null`` (the record key fields), only those columns may stay NOT NULL: a row that
    lives in some column families only reads null for the other families' columns, whatever
    they were declared as, and Spark trusts a NOT NULL declaration blindly.
    """
    if non_null is not None:
        schema = pa.schema([f.with_nullable(f.nullable or f.name not in non_null) for f in schema])
    try:
        return from_arrow_schema(schema, prefer_timestamp_ntz=True)
    except (PySparkTypeError, TypeError) as exc:
        raise SchemaError(f"the table schema cannot be represented in Spark: {exc}") from None


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects from a Python data source for ``schema``."""
    return to_arrow_schema(schema, timezone="UTC")


def project(table_schema: StructType, requested: StructType, what: str = "the read schema") -> list[str]:
    """The column names of ``requested`` (a user-given subset schema), checked against the table.

    Every field must be a table column with the table's type: a read never converts types
    behind the user's back. Nullability may be relaxed but not tightened (a NOT NULL field of a
    nullable column could not hold the table's nulls).
    """
    by_name = {f.name: f for f in table_schema.fields}
    names = []
    for field in requested.fields:
        column = by_name.get(field.name)
        if column is None:
            raise SchemaError(
                f"column {field.name!r} of {what} is not in the table schema ({', '.join(by_name)})"
            )
        if column.dataType != field.dataType:
            raise SchemaError(
                f"column {field.name!r} of {what} has type {field.dataType.simpleString()}, "
                f"but the table column is {column.dataType.simpleString()}"
            )
        if column.nullable and not field.nullable:
            raise SchemaError(f"column {field.name!r} of {what} is NOT NULL, but the table column is nullable")
        names.append(field.name)
    if len(set(names)) != len(names):
        raise SchemaError(f"{what} names a column twice: {', '.join(names)}")
    return names


def select(schema: StructType, names: Sequence[str]) -> StructType:
    """The fields ``names`` of ``schema``, in that order (unknown names are a SchemaError)."""
    by_name = {f.name: f for f in schema.fields}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise SchemaError(f"column {missing[0]!r} is not in the table schema ({', '.join(by_name)})")
    return StructType([StructField(n, by_name[n].dataType, by_name[n].nullable) for n in names])


def cast_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` with exactly the ``target`` schema (column order, types, nullability)."""
    if batch.schema.equals(target):
        return batch
    if batch.schema.names != target.names:
        batch = batch.select(target.names)
    return batch.cast(target)

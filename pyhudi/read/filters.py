"""Row filters ``[(column, op, value)]`` → a pyarrow compute expression (applied after merge)."""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.errors import SchemaError

_BINARY = {"=": "__eq__", "==": "__eq__", "!=": "__ne__", "<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__"}
OPERATORS = (*_BINARY, "in", "not in", "is null", "is not null")


def _one(column: str, op: str, value: Any, schema: pa.Schema) -> pc.Expression:
    if column not in schema.names:
        raise SchemaError(f"filter column {column!r} is not in the table schema")
    field = pc.field(column)
    op = op.lower().strip()
    if op in _BINARY:
        return getattr(field, _BINARY[op])(pc.scalar(value))
    if op == "in":
        return field.isin(pa.array(list(value), schema.field(column).type))
    if op == "not in":
        return ~field.isin(pa.array(list(value), schema.field(column).type))
    if op == "is null":
        return field.is_null()
    if op == "is not null":
        return field.is_valid()
    raise SchemaError(f"unsupported filter operator {op!r}: expected one of {', '.join(OPERATORS)}")


def filter_expression(filters: Sequence[tuple], schema: pa.Schema) -> pc.Expression:
    """AND of all filters; each is ``(column, op)`` or ``(column, op, value)``."""
    expression = None
    for f in filters:
        if len(f) not in (2, 3):
            raise SchemaError(f"filter {f!r} must be (column, op) or (column, op, value)")
        part = _one(f[0], f[1], f[2] if len(f) == 3 else None, schema)
        expression = part if expression is None else expression & part
    return expression

"""Spark's pushed filters → pyhudi kernel filters ``(column, op, value)``, and back.

The kernel applies its filters exactly, after the merge of every file group (contract C1), and
uses them for partition pruning and file skipping. A filter the data source claims is never
re-evaluated by Spark, so only filters whose kernel translation has SQL's meaning for every row
(nulls included) are claimed:

- ``a <> v`` and ``NOT a IN (...)`` are false in SQL when ``a`` is null; they are claimed as the
  kernel filter plus ``a is not null``, which has that meaning whatever the kernel does with nulls;
- ``a <=> v`` is ``a = v`` for a non-null ``v`` (and ``a is null`` for a null one);
- ``a IN (v, NULL)`` selects exactly the rows of ``a IN (v)``; a ``NOT IN`` list holding a null
  selects nothing and is left to Spark;
- nested columns, other negations (``NOT a LIKE 'x%'``) and anything else are left to Spark
  (OR is never pushed by Spark at all).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

from pyhudi.errors import SchemaError
from pyhudi.read.filters import normalize_filters

KernelFilter = tuple

_COMPARISONS = {EqualTo: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<", LessThanOrEqual: "<="}
_STRINGS = {StringStartsWith: "starts_with", StringEndsWith: "ends_with", StringContains: "contains"}


def _column(attribute: Sequence[str], columns: Iterable[str]) -> str | None:
    if len(attribute) != 1 or attribute[0] not in columns:
        return None  # nested field, or not a column we read: Spark keeps it
    return attribute[0]


def to_kernel(spark_filter: Filter, columns: Iterable[str]) -> list[KernelFilter] | None:
    """The kernel filters equivalent to one pushed filter (AND-ed), or None if it is not claimed."""
    kind = type(spark_filter)
    if kind is Not:
        return _negation(spark_filter.child, columns)
    column = _column(getattr(spark_filter, "attribute", ()), columns)
    if column is None:
        return None
    if kind in _COMPARISONS:
        if spark_filter.value is None:
            return None  # a = NULL is never true; Spark folds it before pushing anyway
        return [(column, _COMPARISONS[kind], spark_filter.value)]
    if kind is EqualNullSafe:
        if spark_filter.value is None:
            return [(column, "is null")]
        return [(column, "=", spark_filter.value)]
    if kind is In:
        values = [v for v in spark_filter.value if v is not None]
        if not values:
            return None
        return [(column, "in", values)]
    if kind is IsNull:
        return [(column, "is null")]
    if kind is IsNotNull:
        return [(column, "is not null")]
    if kind in _STRINGS:
        return [(column, _STRINGS[kind], spark_filter.value)]
    return None


def _negation(child: Filter, columns: Iterable[str]) -> list[KernelFilter] | None:
    column = _column(getattr(child, "attribute", ()), columns)
    if column is None:
        return None
    if type(child) is EqualTo and child.value is not None:
        return [(column, "!=", child.value), (column, "is not null")]
    if type(child) is In and child.value and all(v is not None for v in child.value):
        return [(column, "not in", list(child.value)), (column, "is not null")]
    return None


def claim(filters: Sequence[Filter], columns: Iterable[str],
          schema: pa.Schema | None = None) -> tuple[list[KernelFilter], list[Filter]]:
    """Split pushed filters into (kernel filters to apply, Spark filters left to Spark). With
    ``schema`` (the columns' types), a filter the kernel refuses for its column (a nested column,
    a value it cannot compare) is left to Spark rather than failing the scan."""
    columns = set(columns)
    kernel: list[KernelFilter] = []
    rest: list[Filter] = []
    for spark_filter in filters:
        translated = to_kernel(spark_filter, columns)
        if translated is not None and schema is not None and not _kernel_accepts(translated, schema):
            translated = None
        if translated is None:
            rest.append(spark_filter)
        else:
            kernel.extend(translated)
    return kernel, rest


def _kernel_accepts(translated: list[KernelFilter], schema: pa.Schema) -> bool:
    try:
        normalize_filters(translated, schema)
    except SchemaError:
        return False
    return True


# --------------------------------------------------------------------------- kernel → Spark
_BINARY = {"=": "__eq__", "==": "__eq__", "!=": "__ne__", "<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__"}


def to_column(kernel_filter: Sequence[Any]) -> Column:
    """A kernel filter as a Spark column expression (``pyhudi.spark.read(filters=...)``); Spark
    pushes it back to the source, which claims it, so it is still applied by the kernel."""
    if len(kernel_filter) not in (2, 3):
        raise SchemaError(f"filter {tuple(kernel_filter)!r} must be (column, op) or (column, op, value)")
    column, op = kernel_filter[0], str(kernel_filter[1]).lower().strip()
    value = kernel_filter[2] if len(kernel_filter) == 3 else None
    col = F.col(f"`{column}`")
    if op in _BINARY:
        return getattr(col, _BINARY[op])(F.lit(value))
    if op == "in":
        return col.isin(list(value))
    if op == "not in":
        return ~col.isin(list(value))
    if op == "is null":
        return col.isNull()
    if op == "is not null":
        return col.isNotNull()
    if op == "starts_with":
        return col.startswith(value)
    if op == "ends_with":
        return col.endswith(value)
    if op == "contains":
        return col.contains(value)
    raise SchemaError(
        f"unsupported filter operator {kernel_filter[1]!r}: expected one of "
        f"{', '.join([*_BINARY, 'in', 'not in', 'is null', 'is not null', 'starts_with', 'ends_with', 'contains'])}"
    )


def to_condition(filters: Sequence[Sequence[Any]]) -> Column | None:
    """AND of kernel filters as one Spark condition (None for no filters)."""
    condition = None
    for kernel_filter in filters:
        part = to_column(kernel_filter)
        condition = part if condition is None else condition & part
    return condition

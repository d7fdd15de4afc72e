"""Row filters ``[(column, op, value)]``: validation, and which rows pass.

Filters are ANDed, with SQL null semantics: a null satisfies only ``is null`` (not ``!=``, not
``not in``). They are always applied exactly, to merged rows (after the family merge and
the row join): filtering versions before the merge would resurrect older versions of a row
whose newest version does not match. The pruning in :mod:`pyhudi.read.pruning` only ever drops
data that cannot produce a matching row.

A filter is evaluated by Arrow's compute kernels directly (:meth:`Filter.mask`, then
``Table.filter`` of the boolean mask), not as a ``pyarrow.compute.Expression``: filtering a table
by an expression plans an Acero query — ~0.1 ms a call, paid per streamed batch, and the first
one in a process imports ``pyarrow.acero`` and ``pyarrow.dataset`` (~20 ms of a cold filtered
read). :meth:`Filter.expression` keeps the expression form for callers that want one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from pyhudi.errors import SchemaError
from pyhudi.lazy import pc
from pyhudi.value import Value

_BINARY = {"=": "__eq__", "==": "__eq__", "!=": "__ne__", "<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__"}
_KERNELS = {"=": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal"}
_STRING_OPS = ("starts_with", "ends_with", "contains")
_SET_OPS = ("in", "not in")
_NULL_OPS = ("is null", "is not null")
OPERATORS = (*_BINARY, *_SET_OPS, *_NULL_OPS, *_STRING_OPS)

NULL_REJECTING = frozenset(OPERATORS) - {"is null"}
"""Operators that a null value never satisfies (a missing row of a family reads as null)."""


class Filter(Value):
    """One validated filter: ``op`` is canonical (lower case, ``==`` spelled ``=``)."""

    column: str
    op: str
    value: Any = None

    def __init__(self, column: str, op: str, value: Any = None) -> None:
        self._set(column=column, op=op, value=value)

    def mask(self, values: pa.Array | pa.ChunkedArray, field: pa.Field) -> pa.Array | pa.ChunkedArray:
        """Whether each of ``values`` (the column ``field``) passes: true, false or null (unknown,
        which a filtered table drops) — the kernels :meth:`expression` names, called directly."""
        if self.op in _KERNELS:
            return getattr(pc, _KERNELS[self.op])(values, typed_scalar(self.value, field.type))
        if self.op == "in":
            return _set_mask(values, self.value, field.type)
        if self.op == "not in":  # SQL semantics: a null is not "not in" anything
            return pc.and_kleene(pc.invert(_set_mask(values, self.value, field.type)), pc.is_valid(values))
        if self.op == "is null":
            return pc.is_null(values)
        if self.op == "is not null":
            return pc.is_valid(values)
        if self.op == "starts_with":
            return pc.starts_with(values, pattern=self.value)
        if self.op == "ends_with":
            return pc.ends_with(values, pattern=self.value)
        return pc.match_substring(values, pattern=self.value)

    def expression(self, field: pa.Field) -> pc.Expression:
        ref = pc.field(self.column)
        if self.op in _BINARY:
            return getattr(ref, _BINARY[self.op])(typed_scalar(self.value, field.type))
        if self.op == "in":
            return _set_expression(ref, self.value, field.type)
        if self.op == "not in":  # SQL semantics: a null is not "not in" anything
            return ~_set_expression(ref, self.value, field.type) & ref.is_valid()
        if self.op == "is null":
            return ref.is_null()
        if self.op == "is not null":
            return ref.is_valid()
        if self.op == "starts_with":
            return pc.starts_with(ref, pattern=self.value)
        if self.op == "ends_with":
            return pc.ends_with(ref, pattern=self.value)
        return pc.match_substring(ref, pattern=self.value)


_CONVERSION_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
                      OverflowError)


def typed_values(values: Sequence[Any], type_: pa.DataType) -> tuple[pa.Array, list[pa.Scalar]]:
    """Filter values split into those the column's type holds exactly (one array of that type)
    and the others (scalars of the type Arrow infers, which comparisons promote to a common type).

    pyarrow converts with silent truncation (``1.5`` -> ``1`` for an integer column, a datetime
    past midnight -> its day for a date column, microseconds -> milliseconds): such a value
    compared in the column's type would select the wrong rows. A float column takes the float
    nearest each value (``0.1`` on a float32 column means the float32 ``0.1``). Vectorised: an
    ``in`` list of many keys costs a few Arrow calls.
    """
    values = list(values)
    if any(isinstance(v, pa.Scalar) for v in values) or len({type(v) for v in values if v is not None}) > 1:
        # (Arrow infers one type for a mixed list, converting -- truncating -- the others to it:
        # a datetime past midnight beside a date would become that date)
        return _one_by_one(values, type_)
    try:
        typed = pa.array(values, type_)
    except _CONVERSION_ERRORS:
        return _one_by_one(values, type_)
    if pa.types.is_floating(type_) or not values:
        return typed, []
    try:
        same = pc.equal(typed, pa.array(values)).fill_null(True)
    except _CONVERSION_ERRORS:  # Arrow infers no type comparable with the column's (text for binary)
        return _one_by_one(values, type_)
    if pc.all(same).as_py():
        return typed, []
    flags = same.to_pylist()
    return typed.filter(same), [pa.scalar(v) for v, exact in zip(values, flags) if not exact]


def _one_by_one(values: list, type_: pa.DataType) -> tuple[pa.Array, list[pa.Scalar]]:
    exact: list[pa.Scalar] = []
    others: list[pa.Scalar] = []
    for value in values:
        if isinstance(value, pa.Scalar):
            (exact if value.type == type_ else others).append(value)
            continue
        try:
            typed = pa.scalar(value, type=type_)
        except _CONVERSION_ERRORS:
            others.append(pa.scalar(value))
            continue
        try:
            same = pa.types.is_floating(type_) or pc.equal(typed, pa.scalar(value)).as_py() is not False
        except _CONVERSION_ERRORS:
            same = True  # nothing to compare it with: as converted
        (exact if same else others).append(typed if same else pa.scalar(value))
    return pa.array(exact, type_), others


def typed_scalar(value: Any, type_: pa.DataType) -> pa.Scalar:
    """The filter value as a scalar of the column's type when it converts exactly, else as Arrow
    infers it (an int column compared with ``1.5`` is compared as doubles)."""
    exact, others = typed_values([value], type_)
    return exact[0] if len(exact) else others[0]


def _set_expression(ref: pc.Expression, values: Sequence[Any], type_: pa.DataType) -> pc.Expression:
    """``ref`` equals one of ``values``: ``is_in`` for the values the column's type holds exactly,
    and an equality (which compares in a common type) for each other one; ``is_in`` would cast
    them to the column's type, truncating."""
    exact, others = typed_values(values, type_)
    expression = ref.isin(exact)
    for other in others:
        expression = expression | (ref == other)
    return expression


def _set_mask(values: pa.Array | pa.ChunkedArray, members: Sequence[Any], type_: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """:func:`_set_expression` as a mask of ``values``."""
    exact, others = typed_values(members, type_)
    mask = pc.is_in(values, value_set=exact)
    for other in others:
        mask = pc.or_kleene(mask, pc.equal(values, other))
    return mask


def _is_string(type_: pa.DataType) -> bool:
    return pa.types.is_string(type_) or pa.types.is_large_string(type_)


def normalize_filters(filters: Sequence[tuple] | None, schema: pa.Schema) -> list[Filter]:
    """Check every filter against ``schema`` and return them canonical.

    Each filter is ``(column, op)`` for the null tests or ``(column, op, value)``; ``in`` / ``not in``
    take a list of values; the string operators take a string and need a string column.
    """
    out = []
    for f in filters or ():
        if not isinstance(f, (tuple, list)) or len(f) not in (2, 3):
            raise SchemaError(f"filter {f!r} must be (column, op) or (column, op, value)")
        column, op = f[0], f[1]
        value = f[2] if len(f) == 3 else None
        if not isinstance(column, str) or column not in schema.names:
            raise SchemaError(f"filter column {column!r} is not in the table schema")
        if not isinstance(op, str):
            raise SchemaError(f"filter operator {op!r} must be a string: one of {', '.join(OPERATORS)}")
        op = " ".join(op.lower().split())
        op = "=" if op == "==" else op
        if op not in OPERATORS:
            raise SchemaError(f"unsupported filter operator {op!r}: expected one of {', '.join(OPERATORS)}")
        if op in _NULL_OPS:
            if len(f) == 3 and value is not None:
                raise SchemaError(f"filter {f!r}: {op!r} takes no value")
        elif len(f) != 3:
            raise SchemaError(f"filter {f!r}: {op!r} needs a value")
        elif op in _SET_OPS:
            if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
                raise SchemaError(f"filter {f!r}: {op!r} needs a list of values")
            value = tuple(value)
            if any(v is None for v in value):  # SQL: IN (NULL) matches nothing, NOT IN (.., NULL) no row
                raise SchemaError(f"filter {f!r}: a null in an {op!r} list never compares equal; "
                                  "test nulls with 'is null' / 'is not null'")
        elif op in _STRING_OPS:
            if not isinstance(value, str):
                raise SchemaError(f"filter {f!r}: {op!r} needs a string value")
            if not _is_string(schema.field(column).type):
                raise SchemaError(f"filter {f!r}: {op!r} needs a string column, {column!r} is {schema.field(column).type}")
        elif value is None:
            raise SchemaError(f"filter {f!r}: compare with null using 'is null' / 'is not null'")
        normalized = Filter(column, op, value)
        if op not in _NULL_OPS:
            _check_comparable(normalized, schema.field(column), f)
        out.append(normalized)
    return out


def _check_comparable(f: Filter, field: pa.Field, given: Any) -> None:
    """Refuse, before anything is read, a value the column cannot be compared with: Arrow has
    no comparison of lists, structs or maps, nor of e.g. a timestamp with a string."""
    if pa.types.is_nested(field.type):
        raise SchemaError(f"filter {given!r}: column {field.name!r} is nested ({field.type}); "
                          "only 'is null' and 'is not null' apply to it")
    try:  # finds the kernels (no rows are needed for that)
        f.mask(pa.array([], field.type), field)
    except _CONVERSION_ERRORS:
        raise SchemaError(f"filter {given!r}: the value cannot be compared with column {field.name!r} "
                          f"({field.type})") from None


def filter_table(table: pa.Table, filters: Sequence[Filter], schema: pa.Schema) -> pa.Table:
    """The rows of ``table`` that pass every one of ``filters`` (ANDed; each filter's column is
    in ``table``, typed as ``schema`` says)."""
    mask = None
    for f in filters:
        part = f.mask(table.column(f.column), schema.field(f.column))
        mask = part if mask is None else pc.and_kleene(mask, part)
    return table if mask is None else table.filter(mask)


def filter_expression(filters: Sequence[Filter | tuple], schema: pa.Schema) -> pc.Expression | None:
    """AND of all filters (None when there are none)."""
    normalized = [f if isinstance(f, Filter) else normalize_filters([f], schema)[0] for f in filters]
    expression = None
    for f in normalized:
        part = f.expression(schema.field(f.column))
        expression = part if expression is None else expression & part
    return expression

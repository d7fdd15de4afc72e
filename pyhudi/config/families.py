"""Column families (RFC-80): the model, the ``hoodie.colFamily.<name>`` property, and its rules.

A family is a named set of columns plus an optional ordering (precombine) column. Every family
implicitly holds the record key columns. The rules (RFC-80 "Specifying column families" and
DESIGN §4) are checked here, once, with errors that name the family and the column:

- names match ``[A-Za-z][A-Za-z0-9]{0,63}`` (no ``_``/``.``/``/``: they delimit file names);
- the value is ``"c1,c2,...;orderingCol"``; the ``;orderingCol`` part is optional;
- a column appears in at most one family, except the record key columns;
- when families are defined, every non-key column of the schema is in exactly one family;
- the ordering column belongs to its family (``"a,b;ts"`` puts ``ts`` in the family, as the RFC's
  "columns plus the preCombine field" reads), so it may not be in another family; when absent
  (or when it is the record key, the RFC's default) the family merges by commit time;
- ``hoodie.columnFamily.<name>`` is accepted as an alias on input and stored canonically.

A table without families has one implicit default family (name ``""``, no file suffix) holding
every column: it is a plain Hudi bucket table.
"""

from __future__ import annotations

import functools
import re
from typing import Iterable, Mapping, Sequence

import pyarrow as pa

from pyhudi.errors import ColumnFamilyError
from pyhudi.schema import has_order
from pyhudi.value import Value

FAMILY_PREFIX = "hoodie.colFamily."
FAMILY_ALIAS_PREFIX = "hoodie.columnFamily."
DEFAULT_FAMILY = ""
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9]{0,63}")


class ColumnFamily(Value):
    """One column family: its name, its own (non-key) columns and its ordering column."""

    name: str
    columns: tuple[str, ...]
    ordering_field: str | None = None

    def __init__(self, name: str, columns: tuple[str, ...], ordering_field: str | None = None) -> None:
        self._set(name=name, columns=columns, ordering_field=ordering_field)

    @property
    def is_default(self) -> bool:
        return self.name == DEFAULT_FAMILY

    @property
    def file_suffix(self) -> str:
        """The ``_<cf>`` file-name suffix value: empty for the default family."""
        return self.name

    @property
    def property_key(self) -> str:
        return FAMILY_PREFIX + self.name

    @property
    def property_value(self) -> str:
        value = ",".join(self.columns)
        return f"{value};{self.ordering_field}" if self.ordering_field else value

    def with_key(self, record_key_fields: Sequence[str]) -> tuple[str, ...]:
        """Key columns first, then the family's own columns: the columns of its files."""
        return (*record_key_fields, *(c for c in self.columns if c not in record_key_fields))

    def owns(self, column: str) -> bool:
        return column in self.columns


def validate_family_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise ColumnFamilyError(
            f"invalid column family name {name!r}: names must match [A-Za-z][A-Za-z0-9]{{0,63}} "
            "(a letter, then up to 63 letters or digits; no '_', '.', '/' or spaces)"
        )
    return name


def parse_family_value(name: str, value: str) -> ColumnFamily:
    """Parse ``"c1,c2;ts"`` for family ``name`` (syntax only; see :func:`validate_families`)."""
    if isinstance(name, str) and isinstance(value, str):
        return _parse_family_value(name, value)
    validate_family_name(name)
    raise ColumnFamilyError(f"column family {name!r}: definition must be a string, got {value!r}")


@functools.lru_cache(maxsize=1024)
def _parse_family_value(name: str, value: str) -> ColumnFamily:
    """:func:`parse_family_value` of strings, memoised: every write parses the table's families
    (from ``hoodie.properties`` and the timeline) several times, and the result is immutable."""
    validate_family_name(name)
    if value.count(";") > 1:
        raise ColumnFamilyError(
            f"column family {name!r}: definition {value!r} has more than one ';' "
            "(expected 'col1,col2,...;orderingCol')"
        )
    cols_part, _, ordering_part = value.partition(";")
    columns = [c.strip() for c in cols_part.split(",")]
    if all(not c for c in columns):
        raise ColumnFamilyError(f"column family {name!r}: definition {value!r} lists no columns")
    if any(not c for c in columns):
        raise ColumnFamilyError(f"column family {name!r}: definition {value!r} has an empty column name")
    seen: set[str] = set()
    for column in columns:
        if column in seen:
            raise ColumnFamilyError(f"column family {name!r}: column {column!r} is listed twice")
        seen.add(column)
    ordering = ordering_part.strip() or None
    if ";" in value and ordering is None:
        raise ColumnFamilyError(f"column family {name!r}: definition {value!r} has an empty ordering column after ';'")
    if ordering is not None and ordering not in columns:
        columns.append(ordering)  # RFC-80: the value is the family's columns "plus the preCombine field"
    return ColumnFamily(name=name, columns=tuple(columns), ordering_field=ordering)


def _family_entries(props: Mapping[str, str]) -> Iterable[tuple[str, str, str]]:
    for key, value in props.items():
        for prefix in (FAMILY_PREFIX, FAMILY_ALIAS_PREFIX):
            if key.startswith(prefix):
                yield key, key[len(prefix):], value


def is_family_key(key: str) -> bool:
    return key.startswith(FAMILY_PREFIX) or key.startswith(FAMILY_ALIAS_PREFIX)


def families_from_properties(props: Mapping[str, str]) -> dict[str, ColumnFamily]:
    """All families defined in ``props`` under either prefix (syntax-checked, in key order)."""
    families: dict[str, ColumnFamily] = {}
    source: dict[str, str] = {}
    for key, name, value in _family_entries(props):
        family = parse_family_value(name, value)
        if name in families and families[name] != family:
            raise ColumnFamilyError(
                f"column family {name!r} is defined twice with different values: "
                f"{source[name]}={families[name].property_value!r} and {key}={value!r}"
            )
        families[name] = family
        source[name] = key
    return families


def families_from_mapping(spec: Mapping[str, str] | Mapping[str, ColumnFamily]) -> dict[str, ColumnFamily]:
    """Families from a user's ``{"cf": "c1,c2;ts"}`` dict (or ready :class:`ColumnFamily` values)."""
    families: dict[str, ColumnFamily] = {}
    for name, value in spec.items():
        if isinstance(value, ColumnFamily):
            if value.name != name:
                raise ColumnFamilyError(f"column family key {name!r} does not match its name {value.name!r}")
            validate_family_name(name)
            families[name] = value
        else:
            families[name] = parse_family_value(name, value)
    return families


def family_properties(families: Mapping[str, ColumnFamily]) -> dict[str, str]:
    """The canonical ``hoodie.colFamily.<name>`` properties for ``families``."""
    return {f.property_key: f.property_value for f in families.values()}


def _normalise_key_columns(family: ColumnFamily, key_fields: Sequence[str]) -> ColumnFamily:
    """Drop key columns from the listed columns; a key ordering column means commit time."""
    columns = tuple(c for c in family.columns if c not in key_fields)
    ordering = None if family.ordering_field in key_fields else family.ordering_field
    return ColumnFamily(family.name, columns, ordering)


def validate_families(
    families: Mapping[str, ColumnFamily],
    schema_columns: Sequence[str],
    record_key_fields: Sequence[str],
    partition_fields: Sequence[str] = (),
    schema: pa.Schema | None = None,
) -> dict[str, ColumnFamily]:
    """Check every rule against a schema; return the families with key columns normalised away.

    Partition columns are treated like key columns (every family's rows carry the partition in
    the file path), so they need not be listed in a family. With ``schema`` (the column types),
    an ordering column must also have an order (not a list, struct or map).
    """
    if not families:
        return {}
    known = set(schema_columns)
    implicit = set(record_key_fields) | set(partition_fields)
    owner: dict[str, str] = {}
    out: dict[str, ColumnFamily] = {}
    for name, family in families.items():
        validate_family_name(name)
        for column in family.columns:
            if column not in known:
                raise ColumnFamilyError(f"column family {name!r}: column {column!r} is not in the table schema")
            if column in implicit:
                continue
            if column in owner:
                raise ColumnFamilyError(
                    f"column {column!r} is in two column families: {owner[column]!r} and {name!r} "
                    "(only the record key may be shared)"
                )
            owner[column] = name
        ordering = family.ordering_field
        if ordering is not None:
            if ordering not in known:
                raise ColumnFamilyError(
                    f"column family {name!r}: ordering column {ordering!r} is not in the table schema"
                )
            if ordering not in family.columns and ordering not in record_key_fields:
                raise ColumnFamilyError(
                    f"column family {name!r}: ordering column {ordering!r} does not belong to the family "
                    f"(its columns: {', '.join(family.columns)})"
                )
            if schema is not None and not has_order(schema.field(ordering).type):
                raise ColumnFamilyError(
                    f"column family {name!r}: ordering column {ordering!r} has type {schema.field(ordering).type}, "
                    "whose values have no order (lists, structs and maps cannot order records)"
                )
        out[name] = _normalise_key_columns(family, tuple(implicit))
        if not out[name].columns:
            raise ColumnFamilyError(f"column family {name!r} has no columns besides the record key")
    missing = [c for c in schema_columns if c not in implicit and c not in owner]
    if missing:
        raise ColumnFamilyError(
            f"column {missing[0]!r} is not in any column family (every non-key column must be in exactly one); "
            f"unassigned: {', '.join(missing)}"
        )
    return out


def default_family(schema_columns: Sequence[str], record_key_fields: Sequence[str], ordering_field: str | None) -> ColumnFamily:
    """The implicit family of a table without families: every non-key column, no suffix."""
    columns = tuple(c for c in schema_columns if c not in record_key_fields)
    return ColumnFamily(DEFAULT_FAMILY, columns, ordering_field)


def validate_family_change(
    current: Mapping[str, ColumnFamily],
    proposed: Mapping[str, ColumnFamily],
) -> None:
    """RFC-80 ALTER rules: existing families keep their definition; new ones take no owned column."""
    owned = {c: f.name for f in current.values() for c in f.columns}
    for name, family in proposed.items():
        old = current.get(name)
        if old is not None and old != family:
            raise ColumnFamilyError(
                f"column family {name!r} already exists as {old.property_value!r}; existing families cannot be "
                f"redefined (asked for {family.property_value!r})"
            )
        if old is None:
            for column in family.columns:
                if column in owned:
                    raise ColumnFamilyError(
                        f"column family {name!r}: column {column!r} already belongs to column family "
                        f"{owned[column]!r}; columns cannot move between families"
                    )

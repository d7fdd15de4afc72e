"""ALTER TABLE ... SET/UNSET TBLPROPERTIES: validating a property change into an :class:`AlterPlan`.

RFC-80 "Adding and deleting column families": ``SET TBLPROPERTIES ('hoodie.colFamily.k'='a,b;ts')``
adds family ``k``; ``UNSET TBLPROPERTIES ('hoodie.colFamily.k')`` drops it. The change is valid only if

- the name and value follow the format rules of :mod:`pyhudi.config.families`;
- an existing family keeps its definition (names and members of existing families are fixed; setting
  a family to the definition it already has changes nothing);
- a new family takes no column of another family (columns never move between families — not even in
  one ALTER that drops the family holding them, which would be a rename, RFC-80 constraint 4);
- a new family's columns are new table columns, typed by the caller (``new_columns``), plus
  optionally the record key / partition columns every family implicitly holds;
- a dropped family exists, is not the last one and does not hold the table's ordering field.

Adding a family adds its new columns to the table schema (nullable: rows written before read null);
dropping a family removes its columns. Tables without families keep every column in their one
default family, so families cannot be added to or dropped from them.

Other ``hoodie.*`` keys may be set and unset freely, except the keys fixed when the table was created
(:data:`FIXED_KEYS`: identity, keys, partitioning, merge mode, bucket index, layout). This module is
pure: it reads nothing and writes nothing (:mod:`pyhudi.evolution` applies a plan).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa

from pyhudi.config import keygen as kg
from pyhudi.config import table as tc
from pyhudi.config.families import (
    FAMILY_PREFIX,
    ColumnFamily,
    families_from_properties,
    family_properties,
    is_family_key,
    validate_families,
)
from pyhudi.config.keys import ConfigKey, format_value
from pyhudi.errors import ColumnFamilyError, ConfigError, SchemaError
from pyhudi.schema import META_FIELDS, arrow_schema_from_avro, avro_schema_json, check_soft_delete_field

_WRITER_ALIASES = (
    "hoodie.datasource.write.recordkey.field",
    "hoodie.datasource.write.partitionpath.field",
    "hoodie.datasource.write.precombine.field",
    "hoodie.datasource.write.table.type",
    "hoodie.datasource.write.keygenerator.class",
)

FIXED_KEYS: frozenset[str] = frozenset(
    name
    for value in vars(tc).values()
    if isinstance(value, ConfigKey)
    for name in (value.key, *value.aliases)
) | frozenset(_WRITER_ALIASES) | frozenset(
    name for key in (*kg.TIMESTAMP_KEYS, kg.WRITE_KEYGEN_TYPE) for name in (key.key, *key.aliases)
)
"""Keys fixed at creation: every ``hoodie.properties`` key declared in :mod:`pyhudi.config.table`
and the key generator's (:mod:`pyhudi.config.keygen`: they decide the partition paths)
(plus the writer options that alias them). Changing any of them would reinterpret existing files."""


@dataclass(frozen=True)
class AlterPlan:
    """A validated ALTER: the resulting schema and families, and the property edits that persist it."""

    schema: pa.Schema
    families: dict[str, ColumnFamily]
    added: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    set_properties: dict[str, str] = field(default_factory=dict)
    unset_properties: tuple[str, ...] = ()

    @property
    def changes_families(self) -> bool:
        """Whether the schema and families change (then the ALTER is recorded on the timeline)."""
        return bool(self.added or self.dropped)

    @property
    def changes_properties(self) -> bool:
        return bool(self.set_properties or self.unset_properties)


def plan_alter(
    config: tc.TableConfig,
    schema: pa.Schema,
    families: Mapping[str, ColumnFamily],
    set_properties: Mapping[str, Any] | None = None,
    unset_properties: Iterable[str] | str | None = None,
    new_columns: Mapping[str, Any] | pa.Schema | None = None,
) -> AlterPlan:
    """Validate an ALTER against the table as it is (``schema`` and declared ``families`` in effect).

    Raises :class:`ColumnFamilyError` (family rules) or :class:`ConfigError` / :class:`SchemaError`
    naming the rule, the family and the column; nothing is changed by a failed plan.
    """
    set_props = _string_values(set_properties)
    unset = _key_list(unset_properties)
    for key in [*set_props, *unset]:
        _check_key(key)
    families_set = {k: v for k, v in set_props.items() if is_family_key(k)}
    families_unset = [k for k in unset if is_family_key(k)]
    proposed = families_from_properties(families_set)
    dropped = [_family_name(k) for k in families_unset]
    _check_no_overlap(set_props, unset, proposed, dropped)
    typed = _new_column_fields(new_columns)
    if not proposed and not dropped:
        if typed:
            raise SchemaError(
                f"new_columns ({', '.join(typed)}) must belong to a column family added by this ALTER; "
                "columns are added to a table only as part of a new column family"
            )
        return AlterPlan(schema, dict(families), set_properties=set_props, unset_properties=tuple(unset))
    if not families:
        raise ColumnFamilyError(
            f"table {config.name!r} has no column families: it keeps every column in its one default family, "
            "so families can only be added to or dropped from a table created with column families "
            "(RFC-80: a MERGE_ON_READ bucketed table with hoodie.colFamily.* properties)"
        )
    key_fields, partition_fields = config.record_key_fields, config.partition_fields
    implicit = set(key_fields) | set(partition_fields)
    remaining = _drop_families(config, families, dropped)
    added = _added_families(families, proposed, implicit)
    new_fields = _typed_columns(added, typed, schema, implicit)
    kept = [f for f in schema if not any(f.name in families[d].columns for d in dropped)]
    new_schema = _canonical(pa.schema([*kept, *new_fields]), config.name)
    result = validate_families({**remaining, **added}, new_schema.names, key_fields, partition_fields, new_schema)
    edits = {k: v for k, v in set_props.items() if not is_family_key(k)}
    edits.update(family_properties({n: result[n] for n in added}))
    removed = [k for k in unset if not is_family_key(k)]
    removed += [p + name for name in dropped for p in (FAMILY_PREFIX, "hoodie.columnFamily.")]
    return AlterPlan(new_schema, result, tuple(added), tuple(dropped), edits, tuple(removed))


# ------------------------------------------------------------------------------ input shapes
def _string_values(props: Mapping[str, Any] | None) -> dict[str, str]:
    if props is None:
        return {}
    if not isinstance(props, Mapping):
        raise ConfigError(f"set_properties must be a mapping of property keys to values, got {type(props).__name__}")
    out = {}
    for key, value in props.items():
        if not isinstance(key, str):
            raise ConfigError(f"property keys must be strings, got {key!r}")
        if value is None:
            raise ConfigError(f"property {key!r} has no value (use unset_properties to remove a property)")
        out[key] = value if isinstance(value, str) else format_value(value)
    return out


def _key_list(keys: Iterable[str] | str | None) -> list[str]:
    if keys is None:
        return []
    keys = [keys] if isinstance(keys, str) else list(keys)
    for key in keys:
        if not isinstance(key, str):
            raise ConfigError(f"unset_properties must be property keys (strings), got {key!r}")
    if len(set(keys)) != len(keys):
        raise ConfigError(f"unset_properties lists a key twice: {', '.join(keys)}")
    return keys


def _check_key(key: str) -> None:
    if not key.startswith("hoodie."):
        raise ConfigError(f"property {key!r} is not a hoodie.* key; only hoodie.* table properties can be altered")
    if key in FIXED_KEYS:
        raise ConfigError(
            f"property {key!r} is fixed when the table is created and cannot be altered "
            "(it decides how existing files are keyed, partitioned, bucketed or merged)"
        )


def _family_name(key: str) -> str:
    return key.split(".", 2)[2]


def _check_no_overlap(set_props: Mapping[str, str], unset: Sequence[str], proposed: Mapping[str, ColumnFamily],
                      dropped: Sequence[str]) -> None:
    for key in unset:
        if key in set_props:
            raise ConfigError(f"property {key!r} is both set and unset in one ALTER")
    for name in dropped:
        if name in proposed:
            raise ColumnFamilyError(f"column family {name!r} is both set and unset in one ALTER")
    if len(set(dropped)) != len(dropped):
        raise ColumnFamilyError(f"column family {dropped[0]!r} is unset twice (alias and canonical key) in one ALTER")


def _new_column_fields(new_columns: Mapping[str, Any] | pa.Schema | None) -> dict[str, pa.Field]:
    """``{"a": pa.float64()}``, ``{"a": pa.field("a", ...)}`` or a ``pa.Schema`` → nullable fields."""
    if new_columns is None:
        return {}
    if isinstance(new_columns, (list, tuple)) and all(isinstance(f, pa.Field) for f in new_columns):
        new_columns = pa.schema(new_columns)  # (a list of fields reads as the schema of the new columns)
    if not isinstance(new_columns, (pa.Schema, Mapping)):
        raise ConfigError(f"new_columns must map each new column to its pyarrow type ({{'name': pa.string()}}), "
                          f"or be a pa.Schema or a list of pa.field(...), got {type(new_columns).__name__}")
    items = [(f.name, f) for f in new_columns] if isinstance(new_columns, pa.Schema) else list(new_columns.items())
    out: dict[str, pa.Field] = {}
    for name, spec in items:
        if isinstance(spec, pa.Field):
            if spec.name != name:
                raise SchemaError(f"new column {name!r} is given a field named {spec.name!r}")
            fld = spec
        elif isinstance(spec, pa.DataType):
            fld = pa.field(name, spec)
        else:
            raise SchemaError(f"new column {name!r}: type must be a pyarrow DataType or Field, got {spec!r}")
        if not fld.nullable:
            raise SchemaError(f"new column {name!r} must be nullable: rows written before the ALTER read null for it")
        if name in META_FIELDS:
            raise SchemaError(f"new column {name!r} is a Hudi meta column name")
        check_soft_delete_field(fld)
        out[name] = fld
    return out


# ------------------------------------------------------------------------------ family rules
def _drop_families(config: tc.TableConfig, families: Mapping[str, ColumnFamily],
                   dropped: Sequence[str]) -> dict[str, ColumnFamily]:
    for name in dropped:
        if name not in families:
            raise ColumnFamilyError(
                f"cannot drop column family {name!r}: the table has no such family "
                f"(its families: {', '.join(families)})"
            )
        ordering = config.ordering_field
        if ordering is not None and ordering in families[name].columns:
            raise ColumnFamilyError(
                f"cannot drop column family {name!r}: it holds the table ordering field {ordering!r} "
                f"({tc.PRECOMBINE_FIELD.key})"
            )
    remaining = {n: f for n, f in families.items() if n not in dropped}
    if not remaining:
        raise ColumnFamilyError(
            f"cannot drop column family {', '.join(repr(d) for d in dropped)}: a table with column families "
            "must keep at least one"
        )
    return remaining


def _added_families(current: Mapping[str, ColumnFamily], proposed: Mapping[str, ColumnFamily],
                    implicit: set[str]) -> dict[str, ColumnFamily]:
    """The families that are new; re-setting an existing family unchanged is a no-op."""
    owner = {c: f.name for f in current.values() for c in f.columns}
    added = {}
    for name, family in proposed.items():
        normal = _without_implicit(family, implicit)
        old = current.get(name)
        if old is not None:
            if old != normal:
                raise ColumnFamilyError(
                    f"column family {name!r} already exists as {old.property_value!r}; existing column families "
                    f"cannot be changed (asked for {family.property_value!r})"
                )
            continue
        for column in normal.columns:
            if column in owner:
                raise ColumnFamilyError(
                    f"column family {name!r}: column {column!r} belongs to column family {owner[column]!r}; "
                    "columns of other families cannot move into a new column family"
                )
        added[name] = family
    return added


def _without_implicit(family: ColumnFamily, implicit: set[str]) -> ColumnFamily:
    columns = tuple(c for c in family.columns if c not in implicit)
    ordering = None if family.ordering_field in implicit else family.ordering_field
    return ColumnFamily(family.name, columns, ordering)


def _typed_columns(added: Mapping[str, ColumnFamily], typed: Mapping[str, pa.Field], schema: pa.Schema,
                   implicit: set[str]) -> list[pa.Field]:
    """The table fields of the added families' new columns, in definition order."""
    existing = set(schema.names)
    out: list[pa.Field] = []
    used: set[str] = set()
    for name, family in added.items():
        for column in family.columns:
            if column in implicit:
                continue
            if column in existing:
                raise ColumnFamilyError(
                    f"column family {name!r}: column {column!r} is already a table column; a new column family "
                    "holds new columns only"
                )
            if column not in typed:
                raise SchemaError(
                    f"column family {name!r}: new column {column!r} has no type; give it with "
                    f"new_columns={{{column!r}: <pyarrow type>}} (SQL: 'hoodie.colFamily.{name}'='{column} <type>,...')"
                )
            if column not in used:
                out.append(typed[column])
                used.add(column)
    unused = [c for c in typed if c not in used]
    if unused:
        raise SchemaError(f"new column {unused[0]!r} is not in any column family added by this ALTER")
    return out


def _canonical(schema: pa.Schema, table_name: str) -> pa.Schema:
    """The schema as the timeline will store it (Avro round trip: e.g. int8 widens to int32)."""
    return arrow_schema_from_avro(avro_schema_json(schema, table_name))


__all__ = ["AlterPlan", "FIXED_KEYS", "plan_alter"]

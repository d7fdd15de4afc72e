"""DDL on pyhudi tables: ``CREATE TABLE ... USING pyhudi``, ``ALTER TABLE ... SET/UNSET TBLPROPERTIES``,
``DROP TABLE``.

``CREATE TABLE`` accepts Hudi's SQL table properties — ``primaryKey``, ``type`` (``mor``/``cow``),
``preCombineField`` (or ``orderingFields``) — and any ``hoodie.*`` key, including column families
``hoodie.colFamily.<name>`` and the bucket index (``hoodie.index.type``,
``hoodie.bucket.index.num.buckets``), in ``TBLPROPERTIES`` or ``OPTIONS``. It creates the Hudi table
at ``LOCATION`` (default: the warehouse path Spark would use) or registers the one already there,
then a catalog entry with the table's columns and partitioning.

``ALTER TABLE t SET TBLPROPERTIES ('hoodie.colFamily.k' = 'x DOUBLE, y STRING; y')`` adds family ``k``
(RFC-80's DDL): a new family's new columns carry their Spark SQL type in the value (pyhudi's
extension of ``"col1,col2;orderingCol"``, whose stored form drops the types). ``UNSET
TBLPROPERTIES ('hoodie.colFamily.k')`` drops it. Both run :meth:`pyhudi.Table.alter` and then keep
the catalog entry's columns in step. ``DROP TABLE`` removes the catalog entry and keeps the data
(``PURGE`` deletes it too).
"""

from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

import pyhudi
from pyhudi.config.families import is_family_key
from pyhudi.errors import ColumnFamilyError, HudiError, SchemaError, TableNotFoundError
from pyhudi.spark.options import check_family_case
from pyhudi.spark.sql import _NOT_HANDLED, DIALECT, SqlError, SqlSession, TableRef, quote
from pyhudi.spark.sql_types import arrow_field, spark_columns_sql
from pyhudi.storage.fs import Storage

_TABLE_TYPES = {"mor": "MERGE_ON_READ", "cow": "COPY_ON_WRITE",
                "merge_on_read": "MERGE_ON_READ", "copy_on_write": "COPY_ON_WRITE"}
_KEY_PROPERTIES = ("primarykey",)
_ORDERING_PROPERTIES = ("precombinefield", "orderingfields")


# ------------------------------------------------------------------------------------ CREATE
def create_table(session: SqlSession, tree: exp.Create) -> Any:
    schema_node = tree.this
    target = schema_node.this if isinstance(schema_node, exp.Schema) else schema_node
    ref = session.catalog.resolve(target)
    if tree.args.get("replace"):
        raise SqlError("CREATE OR REPLACE TABLE is not supported for pyhudi tables")
    if tree.args.get("expression") is not None:
        raise SqlError("CREATE TABLE ... USING pyhudi AS SELECT is not supported: CREATE the table, then INSERT INTO")
    if ref.path is not None or session.backend.table_exists(ref.sql_name):
        if tree.args.get("exists"):
            return session.done(None)
        raise SqlError(f"table {ref.key} already exists")
    columns = [arrow_field(c) for c in (schema_node.expressions if isinstance(schema_node, exp.Schema) else [])
               if isinstance(c, exp.ColumnDef)]
    partition_fields, partition_columns = _partitioning(tree)
    columns += [c for c in partition_columns if c.name not in {f.name for f in columns}]
    props = _properties(tree)
    check_family_case(props)  # Spark options could not tell such families apart later
    location = next((p.this.name for p in tree.find_all(exp.LocationProperty)), None)
    path = location or session.catalog.default_path(ref)
    table = _create_or_open(path, columns, partition_fields, props, ref)
    partitioned = ", ".join(quote(p) for p in table.partition_fields)
    # the entry's provider is a source of its own with the path built in: plain spark.sql
    # SELECT / INSERT INTO on the entry reach the table (Spark passes catalog tables no path)
    provider = session.backend.register_table_source(ref.key, path)
    session.backend.run_sql(
        f"CREATE TABLE {ref.sql_name} ({spark_columns_sql(table.schema)}) USING {provider}"
        + (f" PARTITIONED BY ({partitioned})" if partitioned else "")
        + f" LOCATION {exp.Literal.string(path).sql(dialect=DIALECT)}"
    )
    session.catalog.register(ref, path)
    return session.done(None)


def _partitioning(tree: exp.Create) -> tuple[list[str], list[pa.Field]]:
    names: list[str] = []
    typed: list[pa.Field] = []
    for prop in tree.find_all(exp.PartitionedByProperty):
        entries = prop.this.expressions if isinstance(prop.this, exp.Schema) else [prop.this]
        for entry in entries:
            if isinstance(entry, exp.ColumnDef):
                typed.append(arrow_field(entry))
                names.append(entry.name)
            elif isinstance(entry, (exp.Identifier, exp.Column)):
                names.append(entry.name)
            else:
                raise SqlError(f"PARTITIONED BY {entry.sql(dialect=DIALECT)}: only column names are supported "
                               "(no transforms)")
    return names, typed


def _properties(tree: exp.Create) -> dict[str, str]:
    props: dict[str, str] = {}
    for prop in tree.find_all(exp.Property):
        if type(prop) is not exp.Property:
            continue  # FileFormatProperty, LocationProperty, ... are read where they are used
        key = property_key(prop.this)
        if key in props:
            raise SqlError(f"table property {key!r} is given twice")
        props[key] = property_value(prop)
    return props


def _create_or_open(path: str, columns: list[pa.Field], partition_fields: list[str], props: dict[str, str],
                    ref: TableRef) -> Any:
    existing = _open_existing(path)
    if existing is not None:
        if columns and pa.schema(columns) != existing.schema:
            raise SqlError(f"{path} already holds a Hudi table whose schema differs from the CREATE TABLE columns "
                           f"({', '.join(existing.schema.names)})")
        return existing
    if not columns:
        raise SqlError(f"CREATE TABLE {ref.key} USING pyhudi needs a column list (no Hudi table at {path})")
    record_key, table_type, ordering, options = None, "MERGE_ON_READ", None, {}
    for key, value in props.items():
        lowered = key.lower()
        if lowered in _KEY_PROPERTIES:
            record_key = value
        elif lowered == "type":
            if value.lower() not in _TABLE_TYPES:
                raise SqlError(f"table property type={value!r}: expected 'mor' or 'cow'")
            table_type = _TABLE_TYPES[value.lower()]
        elif lowered in _ORDERING_PROPERTIES:
            ordering = value
        elif key.startswith("hoodie."):
            options[key] = value
        else:
            raise SqlError(f"unknown table property {key!r}: pyhudi accepts primaryKey, type, preCombineField "
                           "(orderingFields) and hoodie.* keys")
    if record_key is None:
        record_key = options.pop("hoodie.datasource.write.recordkey.field", None) or options.pop(
            "hoodie.table.recordkey.fields", None)
    if not record_key:
        raise SqlError(f"CREATE TABLE {ref.key}: set the record key with TBLPROPERTIES (primaryKey = '<column>')")
    return pyhudi.create_table(path, pa.schema(columns), record_key, name=ref.name, partition_fields=partition_fields,
                               table_type=table_type, ordering_field=ordering, options=options)


def _open_existing(path: str) -> Any:
    try:
        return pyhudi.open_table(path)
    except TableNotFoundError:
        return None


# ------------------------------------------------------------------------------------ ALTER
def alter_table(session: SqlSession, tree: exp.Alter, ref: TableRef) -> Any:
    actions = tree.args.get("actions") or []
    if len(actions) != 1 or not isinstance(actions[0], exp.AlterSet) or not actions[0].expressions:
        what = actions[0].sql(dialect=DIALECT) if actions else "this ALTER"
        raise SqlError(
            f"ALTER TABLE {ref.key} {what}: pyhudi tables support SET/UNSET TBLPROPERTIES only; add or drop "
            "columns through a column family: SET TBLPROPERTIES ('hoodie.colFamily.<name>' = '<col> <type>, ...')"
        )
    props: dict[str, str] = {}
    for prop in actions[0].find_all(exp.Property):
        props[property_key(prop.this)] = property_value(prop)
    settings, new_columns = {}, {}
    for key, value in props.items():
        if is_family_key(key):
            value, typed = typed_family_value(key, value)
            new_columns.update(typed)
        settings[key] = value
    return _alter(session, ref, settings, [], new_columns)


def maybe_alter_command(session: SqlSession, text: str) -> Any:
    """``ALTER TABLE t UNSET TBLPROPERTIES [IF EXISTS] (...)`` on a pyhudi table (sqlglot leaves it raw)."""
    tokens = Spark().tokenize(text)
    words = [t.text.upper() if t.token_type != TokenType.STRING else None for t in tokens]
    try:
        unset_at = words.index("UNSET")
    except ValueError:
        return _NOT_HANDLED
    if words[:2] != ["ALTER", "TABLE"] or unset_at + 1 >= len(words) or words[unset_at + 1] != "TBLPROPERTIES":
        return _NOT_HANDLED
    ref = session.catalog.resolve(exp.to_table(text[tokens[2].start:tokens[unset_at - 1].end + 1], dialect=DIALECT))
    if ref.path is None:
        return _NOT_HANDLED
    rest = tokens[unset_at + 2:]
    if_exists = len(rest) >= 2 and rest[0].text.upper() == "IF" and rest[1].token_type == TokenType.EXISTS
    rest = rest[2:] if if_exists else rest
    if len(rest) < 3 or rest[0].token_type != TokenType.L_PAREN or rest[-1].token_type != TokenType.R_PAREN:
        raise SqlError("ALTER TABLE ... UNSET TBLPROPERTIES needs a parenthesised list of property keys")
    keys = [t.text for t in rest[1:-1] if t.token_type != TokenType.COMMA]
    table = pyhudi.open_table(ref.path)
    present = set(table.properties) | {f"hoodie.colFamily.{n}" for n in table.column_families}
    present |= {f"hoodie.columnFamily.{n}" for n in table.column_families}
    missing = [k for k in keys if k not in present]
    if missing and not if_exists:
        raise SqlError(f"table {ref.key} has no property {missing[0]!r} (use UNSET TBLPROPERTIES IF EXISTS)")
    return _alter(session, ref, {}, [k for k in keys if k in present], {})


def _alter(session: SqlSession, ref: TableRef, settings: dict[str, str], unset: list[str],
           new_columns: dict[str, pa.Field]) -> Any:
    table = pyhudi.open_table(ref.path)
    before = table.schema
    instant = table.alter(set_properties=settings, unset_properties=unset, new_columns=new_columns or None)
    after = table.schema
    _sync_catalog_columns(session, ref, before, after)
    return session.done(instant)


def _sync_catalog_columns(session: SqlSession, ref: TableRef, before: pa.Schema, after: pa.Schema) -> None:
    """Keep the catalog entry's columns equal to the table's (DESCRIBE shows what reads return)."""
    added = pa.schema([f for f in after if f.name not in before.names])
    dropped = [n for n in before.names if n not in after.names]
    statements = []
    if len(added):
        statements.append(f"ALTER TABLE {ref.sql_name} ADD COLUMNS ({spark_columns_sql(added)})")
    if dropped:
        statements.append(f"ALTER TABLE {ref.sql_name} DROP COLUMNS ({', '.join(quote(n) for n in dropped)})")
    for statement in statements:
        try:
            session.backend.run_sql(statement)
        except Exception as exc:  # the Hudi table changed; a stale catalog listing must not undo that
            logging.getLogger(__name__).warning("catalog entry %s not updated (%s): %s", ref.key, statement, exc)


def typed_family_value(key: str, value: str) -> tuple[str, dict[str, pa.Field]]:
    """``'x DOUBLE, y STRING; y'`` → (``'x,y;y'``, ``{x: double, y: string}``); untyped names stay as given."""
    name = key.split(".", 2)[2] if key.count(".") >= 2 else key
    columns_part, semicolon, ordering_part = value.partition(";")
    if ";" in ordering_part:
        raise ColumnFamilyError(f"column family {name!r}: definition {value!r} has more than one ';' "
                                "(expected 'col1,col2,...;orderingCol')")
    typed: dict[str, pa.Field] = {}
    names = _typed_columns(name, columns_part, typed) if columns_part.strip() else []
    ordering = _typed_columns(name, ordering_part, typed) if ordering_part.strip() else []
    if len(ordering) > 1:
        raise ColumnFamilyError(f"column family {name!r}: more than one ordering column in {value!r}")
    canonical = ",".join(names) + (f";{ordering[0]}" if ordering else (";" if semicolon else ""))
    return canonical, typed


def _typed_columns(family: str, text: str, typed: dict[str, pa.Field]) -> list[str]:
    try:
        tree = sqlglot.parse_one(f"CREATE TABLE __f ({text})", dialect=DIALECT)
    except Exception:
        raise ColumnFamilyError(f"column family {family!r}: cannot parse {text.strip()!r} as 'column [TYPE], ...'") from None
    names = []
    for entry in tree.this.expressions:
        if isinstance(entry, exp.ColumnDef) and entry.args.get("kind") is not None:
            try:
                typed[entry.name] = arrow_field(entry)
            except SchemaError as exc:
                raise SchemaError(f"column family {family!r}: {exc}") from None
            if not typed[entry.name].nullable:
                raise SchemaError(f"column family {family!r}: new column {entry.name!r} must be nullable")
        names.append(entry.name)
    return names


# ------------------------------------------------------------------------------------ DROP
def drop_table(session: SqlSession, tree: exp.Drop, ref: TableRef) -> Any:
    session.backend.run_sql(f"DROP TABLE IF EXISTS {ref.sql_name}")
    session.catalog.unregister(ref)
    if tree.args.get("purge"):
        try:
            Storage(ref.path).delete_dir("")
        except HudiError as exc:
            raise SqlError(f"DROP TABLE {ref.key} PURGE: the catalog entry is gone but {ref.path} could not be "
                           f"deleted: {exc}") from exc
    return session.done(None)


# ------------------------------------------------------------------------------------ helpers
def property_key(node: exp.Expression) -> str:
    if isinstance(node, exp.Literal):
        return node.this
    return node.sql(dialect=DIALECT).replace("`", "")


def property_value(prop: exp.Property) -> str:
    value = prop.args.get("value")
    if isinstance(value, exp.Literal):
        return value.this
    if value is None:
        raise SqlError(f"table property {property_key(prop.this)!r} has no value")
    return value.sql(dialect=DIALECT)


__all__ = ["alter_table", "create_table", "drop_table", "maybe_alter_command", "typed_family_value"]

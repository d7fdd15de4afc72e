"""``pyhudi.spark.sql(spark, statement)``: Spark SQL over pyhudi tables.

Spark routes little of SQL to a Python data source: ``CREATE TABLE ... USING pyhudi`` keeps only
columns and partitioning, reads of the catalog entry reach the source without a path, ``ALTER
TABLE ... SET TBLPROPERTIES`` never reaches it, and ``MERGE`` / ``UPDATE`` / ``DELETE`` are refused.
So this front end parses every statement with sqlglot (dialect ``spark``) and

- runs what concerns pyhudi tables itself: ``CREATE TABLE ... USING pyhudi``, ``ALTER TABLE ...
  SET/UNSET TBLPROPERTIES`` (column families, RFC-80), ``DROP TABLE``, ``INSERT INTO/OVERWRITE``,
  ``DELETE``, ``UPDATE``, ``MERGE INTO`` (:mod:`pyhudi.spark.sql_ddl`, :mod:`pyhudi.spark.sql_dml`)
  and ``CALL`` procedures (:mod:`pyhudi.spark.procedures`);
- passes everything else to ``spark.sql``, after replacing each pyhudi table a query reads by a
  temporary view of ``spark.read.format("pyhudi").load(path)`` (``VERSION AS OF '<instant>'`` /
  ``TIMESTAMP AS OF '<yyyy-MM-dd HH:mm:ss>'`` become ``as.of.instant``).

A statement text may hold several statements separated by ``;``; the result of the last one is
returned (a DataFrame: the query result, or one row ``instant`` for writes and ALTERs).
"""

from __future__ import annotations

import itertools
import logging
import re
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError
from sqlglot.tokens import TokenType

from pyhudi.errors import ConfigError, HudiError
from pyhudi.read.plan import normalize_time
from pyhudi.spark.sql_backend import REGISTRY_PREFIX, SparkBackend, SqlBackend

DIALECT = "spark"
SOURCE_NAME = "pyhudi"
_VIEW_PREFIX = "__pyhudi_"


class SqlError(HudiError, ValueError):
    """A SQL statement pyhudi routes cannot be parsed or is not supported on pyhudi tables."""


def sql(spark: Any, statement: str) -> Any:
    """Run one or more SQL statements (separated by ``;``); returns the last one's DataFrame."""
    return SqlSession(SparkBackend(spark)).execute(statement)


# ------------------------------------------------------------------------------------ catalog
@dataclass(frozen=True)
class TableRef:
    """A catalog table name resolved to its registry key and pyhudi base path (None: not pyhudi)."""

    catalog: str
    database: str
    name: str
    path: str | None

    @property
    def key(self) -> str:
        return f"{self.catalog}.{self.database}.{self.name}"

    @property
    def sql_name(self) -> str:
        return f"`{self.database}`.`{self.name}`"


class SqlCatalog:
    """Catalog names → pyhudi table paths (registry in the session configuration)."""

    def __init__(self, backend: SqlBackend) -> None:
        self.backend = backend

    def resolve(self, table: exp.Table) -> TableRef:
        catalog = (table.catalog or self.backend.current_catalog()).lower()
        database = (table.db or self.backend.current_database()).lower()
        name = table.name.lower()
        ref = TableRef(catalog, database, name, None)
        path = self.backend.conf_get(REGISTRY_PREFIX + ref.key)
        return TableRef(catalog, database, name, path or None)

    def register(self, ref: TableRef, path: str) -> TableRef:
        self.backend.conf_set(REGISTRY_PREFIX + ref.key, path)
        return TableRef(ref.catalog, ref.database, ref.name, path)

    def unregister(self, ref: TableRef) -> None:
        self.backend.conf_unset(REGISTRY_PREFIX + ref.key)

    def default_path(self, ref: TableRef) -> str:
        """``<warehouse>/<table>`` (default database) or ``<warehouse>/<db>.db/<table>``, like Spark."""
        base = self.backend.warehouse_dir().rstrip("/")
        return f"{base}/{ref.name}" if ref.database == "default" else f"{base}/{ref.database}.db/{ref.name}"


# ------------------------------------------------------------------------------------ session
class SqlSession:
    """Parses, routes and runs statements against one backend."""

    def __init__(self, backend: SqlBackend) -> None:
        self.backend = backend
        self.catalog = SqlCatalog(backend)

    def execute(self, text: str) -> Any:
        if not isinstance(text, str) or not text.strip():
            raise SqlError("empty SQL statement")
        result = None
        for statement in split_statements(text):
            result = self.execute_one(statement)
        return result

    def execute_one(self, text: str) -> Any:
        from pyhudi.spark import procedures, sql_ddl, sql_dml

        try:
            tree = parse_statement(text)
        except SqlError:
            return self.backend.run_sql(text)  # syntax sqlglot does not know: Spark decides
        if isinstance(tree, exp.Command):
            keyword = tree.name.upper()
            if keyword == "CALL":
                return procedures.call(self, tree.expression.name)
            if keyword == "ALTER":
                handled = sql_ddl.maybe_alter_command(self, text)
                if handled is not _NOT_HANDLED:
                    return handled
            return self.backend.run_sql(text)
        if isinstance(tree, exp.Create) and is_pyhudi_create(tree):
            return sql_ddl.create_table(self, tree)
        target = _target_table(tree)
        if target is not None:
            ref = self.catalog.resolve(target)
            if ref.path is not None:
                handler = _HANDLERS.get(type(tree))
                if handler is not None:
                    module = sql_ddl if handler[0] == "ddl" else sql_dml
                    return getattr(module, handler[1])(self, tree, ref)
                if not isinstance(tree, (exp.Describe,)):
                    raise SqlError(f"{type(tree).__name__.upper()} is not supported on pyhudi table {ref.key}")
        return self.passthrough(tree, text)

    def passthrough(self, tree: exp.Expression, text: str) -> Any:
        """Let Spark run the statement, reading pyhudi tables through fresh temporary views."""
        with self.views() as views:
            rewritten = views.rewrite_reads(tree)
            if not views.created:
                return self.backend.run_sql(text)
            return self.backend.run_sql(rewritten.sql(dialect=DIALECT))

    @contextmanager
    def views(self) -> Iterator["ViewScope"]:
        scope = ViewScope(self)
        try:
            yield scope
        finally:
            scope.close()

    def done(self, instant: str | None) -> Any:
        """The result of a write or ALTER: one row holding its instant (null if nothing changed)."""
        import pyarrow as pa

        return self.backend.result(pa.table({"instant": pa.array([instant], pa.string())}))


_NOT_HANDLED = object()

# statement type → (module, handler) for statements whose target is a pyhudi table
_HANDLERS: dict[type, tuple[str, str]] = {
    exp.Alter: ("ddl", "alter_table"),
    exp.Drop: ("ddl", "drop_table"),
    exp.Insert: ("dml", "insert"),
    exp.Delete: ("dml", "delete"),
    exp.Update: ("dml", "update"),
    exp.Merge: ("dml", "merge"),
}


def _target_table(tree: exp.Expression) -> exp.Table | None:
    """The table a DDL/DML statement changes (None for queries and other statements)."""
    if isinstance(tree, exp.Drop):
        if (tree.args.get("kind") or "").upper() != "TABLE":
            return None
        tables = tree.args.get("tables") or []
        return tables[0] if tables else None
    if isinstance(tree, (exp.Alter, exp.Insert, exp.Delete, exp.Update, exp.Merge, exp.Describe)):
        target = tree.this
        if isinstance(target, exp.Schema):
            target = target.this
        return target if isinstance(target, exp.Table) else None
    return None


def is_pyhudi_create(tree: exp.Create) -> bool:
    if (tree.args.get("kind") or "").upper() != "TABLE":
        return False
    for prop in tree.find_all(exp.FileFormatProperty):
        if prop.this is not None and prop.this.name.lower() == SOURCE_NAME:
            return True
    return False


# ------------------------------------------------------------------------------------ views
class ViewScope:
    """Temporary views of pyhudi tables for one statement; dropped when the statement ends."""

    _counter = itertools.count()

    def __init__(self, session: SqlSession) -> None:
        self.session = session
        self.created: list[str] = []
        self._by_source: dict[tuple[str, str | None], str] = {}
        self._token = uuid.uuid4().hex[:8]

    def new_name(self, hint: str) -> str:
        return f"{_VIEW_PREFIX}{re.sub(r'[^A-Za-z0-9_]', '_', hint)}_{self._token}_{next(self._counter)}"

    def view_of(self, ref: TableRef, as_of: str | None = None) -> str:
        """A view reading ``ref`` (pinned to ``as_of`` when given); one per (table, as_of)."""
        key = (ref.key, as_of)
        if key not in self._by_source:
            options = {"as.of.instant": as_of} if as_of else {}
            df = self.session.backend.load(ref.path, options)
            self._by_source[key] = self.add(df, ref.name)
        return self._by_source[key]

    def add(self, df: Any, hint: str) -> str:
        name = self.new_name(hint)
        self.session.backend.create_view(df, name)
        self.created.append(name)
        return name

    def rewrite_reads(self, tree: exp.Expression) -> exp.Expression:
        """Replace every pyhudi table read inside a query of ``tree`` by its view (keeping the alias)."""
        ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        tree = tree.copy()
        for table in list(tree.find_all(exp.Table)):
            if not _is_read(table) or (not table.db and table.name.lower() in ctes) or not table.name:
                continue
            ref = self.session.catalog.resolve(table)
            if ref.path is None:
                continue
            table.replace(self.table_node(table, ref))
        return tree

    def table_node(self, table: exp.Table, ref: TableRef) -> exp.Table:
        """``<view> AS <alias or table name>`` for a pyhudi table reference."""
        as_of = _as_of(table.args.get("version"))
        view = self.view_of(ref, as_of)
        alias = table.alias or table.name
        return exp.Table(this=exp.to_identifier(view), alias=exp.TableAlias(this=exp.to_identifier(alias)))

    def close(self) -> None:
        for name in reversed(self.created):
            try:
                self.session.backend.drop_view(name)
            except Exception:  # a view that cannot be dropped must not hide the statement's outcome
                logging.getLogger(__name__).warning("could not drop temporary view %s", name)
        self.created.clear()


def _is_read(table: exp.Table) -> bool:
    """Whether a table node is read by a query (not the target of DDL/DML)."""
    parent = table.parent
    if isinstance(parent, exp.Schema) and isinstance(parent.parent, (exp.Create, exp.Insert)):
        return False
    if isinstance(parent, (exp.Create, exp.Insert, exp.Drop, exp.Alter, exp.Describe, exp.Delete, exp.Update)) \
            and parent.this is table:
        return False
    if isinstance(parent, exp.Drop):
        return False
    if isinstance(parent, exp.Merge) and parent.this is table:
        return False
    return True


def _as_of(version: exp.Version | None) -> str | None:
    """``VERSION AS OF '20240101000000000'`` / ``TIMESTAMP AS OF '2024-01-01 00:00:00'`` → instant
    (a time to the second stands for its last millisecond, ``...999``, as in ``read(as_of=...)``)."""
    if version is None:
        return None
    kind = (version.args.get("kind") or "").upper()
    if kind != "AS OF":
        raise SqlError(f"time travel {version.sql(dialect=DIALECT)!r} is not supported (use VERSION/TIMESTAMP AS OF)")
    value = version.expression
    text = value.name if isinstance(value, exp.Literal) else value.sql(dialect=DIALECT)
    digits = re.sub(r"\D", "", text)
    if not digits or len(digits) > 17 or len(digits) < 8:
        raise SqlError(f"time travel value {text!r} is not an instant (yyyyMMddHHmmssSSS) or timestamp")
    if len(digits) == 14:  # to the second: that whole second, as Hudi and read(as_of=...) take it
        return normalize_time(digits, "time travel")
    return digits.ljust(17, "0")


# ------------------------------------------------------------------------------------ parsing
def split_statements(text: str) -> list[str]:
    """The statements of ``text`` (split at ``;`` tokens, so ``';'`` inside strings is kept)."""
    try:
        tokens = Spark().tokenize(text)
    except Exception as exc:  # sqlglot raises its own TokenError
        raise SqlError(f"cannot tokenize SQL: {exc}") from None
    pieces, start = [], 0
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            pieces.append(text[start:token.start])
            start = token.end + 1
    pieces.append(text[start:])
    return [p.strip() for p in pieces if p.strip()]


def parse_statement(text: str) -> exp.Expression:
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)  # sqlglot warns when it falls back to a raw Command
    try:
        tree = sqlglot.parse_one(text, dialect=DIALECT)
    except ParseError as exc:
        raise SqlError(f"cannot parse SQL statement: {exc}") from None
    finally:
        logger.setLevel(level)
    if tree is None:
        raise SqlError("empty SQL statement")
    return tree


def literal_value(node: exp.Expression, what: str) -> Any:
    """The Python value of a literal (string, number, boolean, NULL, negative number)."""
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        text = node.this
        return int(text) if re.fullmatch(r"-?\d+", text) else float(text)
    if isinstance(node, exp.Boolean):
        return node.this
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return -literal_value(node.this, what)
    if isinstance(node, (exp.Column, exp.Identifier, exp.Var)):
        return node.name
    raise SqlError(f"{what} must be a literal, got {node.sql(dialect=DIALECT)}")


def quote(name: str) -> str:
    """A Spark identifier (backticks, doubled inside)."""
    return "`" + name.replace("`", "``") + "`"


def check_conf_operation(value: str | None, allowed: tuple[str, ...], key: str, default: str) -> str:
    operation = (value or default).lower()
    if operation not in allowed:
        raise ConfigError(f"{key}={value!r} is not supported: expected one of {', '.join(allowed)}")
    return operation


__all__ = ["SqlCatalog", "SqlError", "SqlSession", "TableRef", "sql", "split_statements", "parse_statement"]

"""DML on pyhudi tables: ``INSERT INTO/OVERWRITE``, ``DELETE``, ``UPDATE``, ``MERGE INTO``.

Each statement becomes Spark queries over a temporary view of the table (so expressions, joins
and subqueries are Spark's) that produce the rows to write, and one commit:

- ``INSERT INTO t [(cols)] <query>|VALUES`` — positional like Spark; columns not listed are NULL;
  operation ``hoodie.spark.sql.insert.into.operation`` (session conf, default ``insert`` as in Hudi;
  ``upsert`` and ``bulk_insert`` also accepted); written by ``pyhudi.spark.write``.
- ``INSERT OVERWRITE t [PARTITION (p = v)] ...`` — Hudi's insert overwrite: ONE ``replacecommit``
  writing the new rows to new file groups and replacing the file groups in scope. Scope, as in
  Hudi's Spark SQL (``hoodie.datasource.overwrite.mode``, else
  ``spark.sql.sources.partitionOverwriteMode``, default static): an unpartitioned table, or static
  mode without PARTITION → the whole table (``insert_overwrite_table``); static mode with
  ``PARTITION (p = v, ...)`` → the partitions matching the spec, even if the query returns no row;
  dynamic mode → the partitions the new rows go to (``insert_overwrite``). Written by
  ``pyhudi.spark.write`` from the executors.
- ``DELETE FROM t [WHERE c]`` — the keys of the matching rows, written as a delete.
- ``UPDATE t SET a = e, ... [WHERE c]`` — key + assigned columns: a partial write that touches only
  the families of the assigned columns (RFC-80: other families' files are not rewritten).
- ``MERGE INTO t USING s ON c WHEN [NOT] MATCHED [AND c] THEN UPDATE SET ... | UPDATE SET * |
  DELETE | INSERT (...) VALUES (...) | INSERT *`` — clauses apply first-match in order. The written
  columns are the key, the partition columns and every column some clause assigns; a matched row
  keeps its current value for a column its clause does not assign, an inserted row gets NULL. So a
  MERGE that updates some columns is a partial write of their families. Updates, inserts and
  deletes commit together in one instant. Several source rows matching one target row is an error.

``MERGE`` collects its change set to the driver (it commits upserts and deletes in one instant
through the kernel's write phases); ``INSERT INTO/OVERWRITE``, ``UPDATE`` and ``DELETE`` write from
the executors.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

import pyhudi
from pyhudi.config.datasource import SQL_INSERT_INTO_OPERATION, SQL_OVERWRITE_MODE
from pyhudi.errors import SchemaError
from pyhudi.spark.sql import DIALECT, SqlError, SqlSession, TableRef, check_conf_operation, quote
from pyhudi.spark.sql_types import spark_type_sql
from pyhudi.storage.naming import partition_path
from pyhudi.write.overwrite import OVERWRITE_PARTITIONS, partitions_option

INSERT_OPERATION_KEY = SQL_INSERT_INTO_OPERATION.key
OVERWRITE_MODE_KEY = "spark.sql.sources.partitionOverwriteMode"
HUDI_OVERWRITE_MODE_KEY = SQL_OVERWRITE_MODE.key
_MATCHED = "__pyhudi_matched"
_ACTION = "__pyhudi_action"


@dataclass
class Target:
    """The pyhudi table a statement writes: its schema, key and partition columns, SQL alias."""

    ref: TableRef
    table: Any
    schema: pa.Schema
    alias: str

    @property
    def keys(self) -> list[str]:
        """Record key then partition columns: what identifies a row for writes and deletes."""
        keys = list(self.table.record_key_fields)
        return keys + [p for p in self.table.partition_fields if p not in keys]

    def field(self, name: str, what: str) -> pa.Field:
        if name not in self.schema.names:
            raise SchemaError(f"{what}: column {name!r} is not in table {self.ref.key} ({', '.join(self.schema.names)})")
        return self.schema.field(name)

    def cast(self, expression: str, column: str) -> str:
        return f"CAST({expression} AS {spark_type_sql(self.schema.field(column).type)}) AS {quote(column)}"

    def col(self, name: str) -> str:
        return f"{quote(self.alias)}.{quote(name)}"


def _target(ref: TableRef, table_node: exp.Table) -> Target:
    table = pyhudi.open_table(ref.path)
    return Target(ref, table, table.schema, table_node.alias or table_node.name)


# ------------------------------------------------------------------------------------ INSERT
def insert(session: SqlSession, tree: exp.Insert, ref: TableRef) -> Any:
    node = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    target = _target(ref, node)
    static = _static_partitions(target, node)
    given = [c.name for c in tree.this.expressions] if isinstance(tree.this, exp.Schema) else None
    columns = given if given is not None else [c for c in target.schema.names if c not in static]
    for column in columns:
        target.field(column, "INSERT")
        if column in static:
            raise SqlError(f"INSERT: column {column!r} is given both in PARTITION (...) and in the column list")
    if len(set(columns)) != len(columns):
        raise SqlError(f"INSERT: the column list names a column twice ({', '.join(columns)})")
    with session.views() as views:
        source = views.rewrite_reads(tree).expression
        df = session.backend.run_sql(source.sql(dialect=DIALECT))
        width = len(session.backend.columns(df))
        if width != len(columns):
            raise SqlError(f"INSERT into {ref.key}: the query gives {width} columns but {len(columns)} are expected "
                           f"({', '.join(columns)})")
        positional = [f"__pyhudi_c{i}" for i in range(width)]
        source_view = views.add(session.backend.rename(df, positional), "insert")
        select = []
        for name in target.schema.names:
            if name in columns:
                select.append(target.cast(quote(positional[columns.index(name)]), name))
            elif name in static:
                select.append(target.cast(static[name], name))
            else:
                select.append(target.cast("NULL", name))
        rows = session.backend.run_sql(f"SELECT {', '.join(select)} FROM {quote(source_view)}")
        if not tree.args.get("overwrite"):
            operation = check_conf_operation(session.backend.conf_get(INSERT_OPERATION_KEY),
                                             ("insert", "upsert", "bulk_insert"), INSERT_OPERATION_KEY, "insert")
            return session.done(session.backend.write(rows, ref.path, operation))
        operation, options = _overwrite_operation(session, target, static)
        return session.done(session.backend.write(rows, ref.path, operation, options))


def _static_partitions(target: Target, node: exp.Table) -> dict[str, str]:
    """``PARTITION (p = 'x', q)`` → ``{"p": "'x'"}`` (SQL literals; bare names are dynamic)."""
    out: dict[str, str] = {}
    partition = node.args.get("partition")
    for entry in partition.expressions if partition is not None else []:
        if isinstance(entry, exp.EQ):
            name = entry.this.name
            if name not in target.table.partition_fields:
                raise SqlError(f"PARTITION ({name} = ...): {name!r} is not a partition column of {target.ref.key}")
            out[name] = entry.expression.sql(dialect=DIALECT)
        elif not (isinstance(entry, (exp.Column, exp.Identifier)) and entry.name in target.table.partition_fields):
            raise SqlError(f"PARTITION ({entry.sql(dialect=DIALECT)}): not a partition column of {target.ref.key}")
    return out


def overwrite_mode(session: SqlSession) -> str:
    """``hoodie.datasource.overwrite.mode`` (session conf), else Spark's
    ``spark.sql.sources.partitionOverwriteMode``; default ``static`` (as in Hudi >= 0.15)."""
    key = HUDI_OVERWRITE_MODE_KEY if session.backend.conf_get(HUDI_OVERWRITE_MODE_KEY) else OVERWRITE_MODE_KEY
    mode = (session.backend.conf_get(key) or "static").strip().lower()
    if mode not in ("static", "dynamic"):
        raise SqlError(f"{key}={mode!r}: expected static or dynamic")
    return mode


def _overwrite_operation(session: SqlSession, target: Target, static: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The write operation (and its options) of an ``INSERT OVERWRITE``, as Hudi's Spark SQL decides it:
    unpartitioned table, or static mode without a PARTITION spec → ``insert_overwrite_table``;
    dynamic mode → ``insert_overwrite`` of the partitions the rows go to; static mode with a spec →
    ``insert_overwrite`` of the partitions matching it (replaced even when no row goes there)."""
    if not target.table.partition_fields:
        return "insert_overwrite_table", {}
    mode = overwrite_mode(session)
    if mode == "dynamic":
        return "insert_overwrite", {}
    if not static:
        return "insert_overwrite_table", {}
    return "insert_overwrite", {OVERWRITE_PARTITIONS.key: partitions_option(_matching_partitions(session, target, static))}


def _matching_partitions(session: SqlSession, target: Target, static: dict[str, str]) -> list[str]:
    """Partition paths a static spec covers: its own path when every partition column is given,
    else the table's existing partitions whose values match the given ones."""
    from pyhudi.write.prepare import partition_paths

    table = target.table
    fields = list(table.partition_fields)
    query = ", ".join(target.cast(value, name) for name, value in static.items())
    values = session.backend.to_arrow(session.backend.run_sql(f"SELECT {query}"))
    # each value spelled as the kernel spells it in partition paths (one column at a time)
    texts = {name: partition_paths(values.select([name]), [name], False)[0].as_py() for name in static}
    if set(texts) == set(fields):
        return [partition_path(fields, [texts[f] for f in fields], table.config.hive_style_partitioning)]
    out = []
    for existing in sorted({g.partition_path for g in table.file_groups()}):
        segments = existing.split("/")
        have = {f: seg.split("=", 1)[1] if table.config.hive_style_partitioning else seg
                for f, seg in zip(fields, segments)}
        if all(have.get(name) == text for name, text in texts.items()):
            out.append(existing)
    return out


# ------------------------------------------------------------------------------------ DELETE / UPDATE
def delete(session: SqlSession, tree: exp.Delete, ref: TableRef) -> Any:
    target = _target(ref, tree.this)
    with session.views() as views:
        tree = views.rewrite_reads(tree)
        where = tree.args.get("where")
        view = views.view_of(ref)
        select = ", ".join(target.col(k) for k in target.keys)
        text = f"SELECT {select} FROM {quote(view)} AS {quote(target.alias)}"
        if where is not None:
            text += f" WHERE {where.this.sql(dialect=DIALECT)}"
        instant = session.backend.write(session.backend.run_sql(text), ref.path, "delete")
    return session.done(instant)


def update(session: SqlSession, tree: exp.Update, ref: TableRef) -> Any:
    target = _target(ref, tree.this)
    with session.views() as views:
        tree = views.rewrite_reads(tree)
        assignments = _assignments(target, tree.expressions, "UPDATE")
        view = views.view_of(ref)
        select = [target.col(k) for k in target.keys]
        select += [target.cast(value, name) for name, value in assignments.items()]
        text = f"SELECT {', '.join(select)} FROM {quote(view)} AS {quote(target.alias)}"
        where = tree.args.get("where")
        if where is not None:
            text += f" WHERE {where.this.sql(dialect=DIALECT)}"
        instant = session.backend.write(session.backend.run_sql(text), ref.path, "upsert")
    return session.done(instant)


def _assignments(target: Target, expressions: Sequence[exp.Expression], what: str) -> dict[str, str]:
    """``a = e`` list → ``{"a": "e"}``, refusing unknown, key, partition and repeated columns."""
    out: dict[str, str] = {}
    for assignment in expressions:
        if not isinstance(assignment, exp.EQ) or not isinstance(assignment.this, exp.Column):
            raise SqlError(f"{what}: expected 'column = expression', got {assignment.sql(dialect=DIALECT)}")
        name = assignment.this.name
        target.field(name, what)
        if name in target.keys:
            raise SqlError(f"{what}: column {name!r} is a record key or partition column of {target.ref.key} and "
                           "cannot be updated")
        if name in out:
            raise SqlError(f"{what}: column {name!r} is assigned twice")
        out[name] = assignment.expression.sql(dialect=DIALECT)
    return out


# ------------------------------------------------------------------------------------ MERGE
@dataclass
class _Clause:
    matched: bool
    condition: str | None
    kind: str  # "update" | "insert" | "delete"
    values: dict[str, str]  # target column -> SQL expression


def merge(session: SqlSession, tree: exp.Merge, ref: TableRef) -> Any:
    target = _target(ref, tree.this)
    with session.views() as views:
        tree = views.rewrite_reads(tree)
        source = tree.args["using"]
        source_alias = source.alias_or_name
        if not source_alias:
            raise SqlError("MERGE: the USING subquery needs an alias")
        if source_alias.lower() == target.alias.lower():
            raise SqlError(f"MERGE: source and target are both called {target.alias!r}; give one an alias")
        clauses = [_clause(target, when, source_alias) for when in tree.args["whens"].expressions]
        written = _written_columns(target, clauses)
        view = views.view_of(ref)
        matched_flag = f"{quote(target.alias)}.{_MATCHED}"
        conditions = [_clause_condition(c, matched_flag) for c in clauses]
        action = "CASE " + " ".join(f"WHEN {cond} THEN {i + 1}" for i, cond in enumerate(conditions)) + " ELSE 0 END"
        select = [f"{action} AS {_ACTION}"]
        for name in written:
            branches = " ".join(f"WHEN {cond} THEN {_value(target, clause, name)}"
                                for cond, clause in zip(conditions, clauses))
            select.append(target.cast(f"CASE {branches} ELSE NULL END", name))
        text = (f"SELECT {', '.join(select)} FROM {source.sql(dialect=DIALECT)} LEFT JOIN "
                f"(SELECT *, TRUE AS {_MATCHED} FROM {quote(view)}) AS {quote(target.alias)} "
                f"ON {tree.args['on'].sql(dialect=DIALECT)}")
        changes = session.backend.to_arrow(session.backend.run_sql(text))
    instant = _commit_merge(target, clauses, changes, written)
    return session.done(instant)


def _clause(target: Target, when: exp.When, source_alias: str) -> _Clause:
    if when.args.get("source"):
        raise SqlError("MERGE: WHEN NOT MATCHED BY SOURCE is not supported")
    matched = bool(when.args.get("matched"))
    condition = when.args.get("condition")
    condition_sql = condition.sql(dialect=DIALECT) if condition is not None else None
    then = when.args.get("then")
    if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
        if not matched:
            raise SqlError("MERGE: DELETE is only allowed in WHEN MATCHED clauses")
        return _Clause(matched, condition_sql, "delete", {})
    if isinstance(then, exp.Update):
        if not matched:
            raise SqlError("MERGE: UPDATE is only allowed in WHEN MATCHED clauses")
        if len(then.expressions) == 1 and isinstance(then.expressions[0], exp.Star):
            values = {c: f"{quote(source_alias)}.{quote(c)}" for c in target.schema.names if c not in target.keys}
        else:
            values = _assignments(target, then.expressions, "MERGE UPDATE")
        return _Clause(matched, condition_sql, "update", values)
    if isinstance(then, exp.Insert):
        if matched:
            raise SqlError("MERGE: INSERT is only allowed in WHEN NOT MATCHED clauses")
        return _Clause(matched, condition_sql, "insert", _insert_values(target, then, source_alias))
    raise SqlError(f"MERGE: unsupported action {then.sql(dialect=DIALECT) if then is not None else '?'}")


def _insert_values(target: Target, then: exp.Insert, source_alias: str) -> dict[str, str]:
    if isinstance(then.this, exp.Star):
        return {c: f"{quote(source_alias)}.{quote(c)}" for c in target.schema.names}
    names = [c.name for c in then.this.expressions]
    values = then.expression.expressions if then.expression is not None else []
    if len(names) != len(values):
        raise SqlError(f"MERGE INSERT: {len(names)} columns but {len(values)} values")
    for name in names:
        target.field(name, "MERGE INSERT")
    if len(set(names)) != len(names):
        raise SqlError(f"MERGE INSERT: the column list names a column twice ({', '.join(names)})")
    missing = [k for k in target.keys if k not in names]
    if missing:
        raise SqlError(f"MERGE INSERT: record key and partition columns must be inserted; missing {', '.join(missing)}")
    return {name: value.sql(dialect=DIALECT) for name, value in zip(names, values)}


def _written_columns(target: Target, clauses: list[_Clause]) -> list[str]:
    assigned = {name for clause in clauses for name in clause.values}
    return [*target.keys, *(c for c in target.schema.names if c in assigned and c not in target.keys)]


def _clause_condition(clause: _Clause, matched_flag: str) -> str:
    matched = f"{matched_flag} IS {'NOT ' if clause.matched else ''}NULL"
    return f"({matched} AND ({clause.condition}))" if clause.condition else matched


def _value(target: Target, clause: _Clause, column: str) -> str:
    if column in clause.values:
        return f"({clause.values[column]})"
    if clause.matched:
        return target.col(column)  # a matched row keeps what its clause does not assign
    return "NULL"  # an inserted row: what the INSERT does not give is NULL


def _commit_merge(target: Target, clauses: list[_Clause], changes: pa.Table, written: list[str]) -> str | None:
    action = np.asarray(changes.column(_ACTION).to_numpy(zero_copy_only=False))
    kinds = np.array(["none", *(c.kind for c in clauses)])[action]
    matched = np.isin(action, [i + 1 for i, c in enumerate(clauses) if c.matched])
    _check_one_match(target, changes.filter(pa.array(matched)))
    upserts = changes.filter(pa.array(np.isin(kinds, ["update", "insert"]))).select(written)
    deletes = changes.filter(pa.array(kinds == "delete")).select(target.keys)
    return commit_changes(target.table, upserts, deletes)


def _check_one_match(target: Target, matched: pa.Table) -> None:
    if matched.num_rows < 2:
        return
    counts = matched.group_by(target.keys).aggregate([([], "count_all")])
    repeated = counts.filter(pc.greater(counts.column("count_all"), 1))
    if repeated.num_rows:
        row = repeated.slice(0, 1).to_pylist()[0]
        key = ", ".join(f"{k}={row[k]!r}" for k in target.keys)
        raise SqlError(f"MERGE: {row['count_all']} source rows match the target row ({key}) of {target.ref.key}; "
                       "each target row may be matched by one source row")


# ------------------------------------------------------------------------------------ commit
def commit_changes(table: Any, upserts: pa.Table | None, deletes: pa.Table | None) -> str | None:
    """Upsert ``upserts`` and delete the keys in ``deletes`` in ONE instant (None if both are empty).

    Both are validated before the instant exists; the two parts are written by tasks with their
    own write tokens, then committed together (CONTRACTS C2).
    """
    from pyhudi.write.client import WriteClient
    from pyhudi.write.txn import WriteTxn

    parts = [(op, rows) for op, rows in (("upsert", upserts), ("delete", deletes)) if rows is not None and rows.num_rows]
    if not parts:
        return None
    if len(parts) == 2 and table.config.table_type == "COPY_ON_WRITE":
        raise SqlError(f"table {table.name!r} is copy-on-write: updates and deletes in one statement need a "
                       "merge-on-read table")
    client = WriteClient(table)
    schema = table.schema
    probe = WriteTxn(base_uri=table.storage.base_uri, config=table.config, instant="", operation="upsert",
                     schema=schema, options=dict(client.options), declared_families=table.column_families)
    for operation, rows in parts:
        dataclasses.replace(probe, operation=operation).prepare(rows)  # every input check before the instant
    txn = client.begin(parts[0][0], schema=schema)
    statuses = []
    try:
        for task_id, (operation, rows) in enumerate(parts):
            statuses += dataclasses.replace(txn, operation=operation).write_rows(rows, task_id=task_id)
    except BaseException:
        client.abort(txn)
        raise
    return client.commit(txn, statuses).instant


__all__ = ["commit_changes", "delete", "insert", "merge", "update"]

"""A Spark-free :class:`~pyhudi.spark.sql_backend.SqlBackend` for testing the SQL front end.

DataFrames are pyarrow Tables; queries run on sqlglot's Python executor over the registered
temporary views (the same Spark SQL text the front end sends to Spark); pyhudi tables load with
``Table.read`` and write with the kernel's ``Table`` methods. Catalog statements (the catalog
entry's CREATE / ALTER / DROP) are recorded, not executed, so tests can assert them.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.executor import execute

import pyhudi
from pyhudi.spark.sql_types import spark_type_sql


class FakeBackend:
    def __init__(self, warehouse: str) -> None:
        self.warehouse = warehouse
        self.views: dict[str, pa.Table] = {}
        self.conf: dict[str, str] = {}
        self.catalog_statements: list[str] = []
        self.catalog_tables: set[str] = set()
        self.queries: list[str] = []
        self.writes: list[tuple[str, str, int]] = []
        self.dropped_views: list[str] = []

    # ---------------------------------------------------------------- queries
    def run_sql(self, text: str) -> Any:
        tree = sqlglot.parse_one(text, dialect="spark")
        if isinstance(tree, (exp.Create, exp.Alter, exp.Drop)):
            self.catalog_statements.append(text)
            name = (tree.this.this if isinstance(tree.this, exp.Schema) else tree.this)
            if isinstance(tree, exp.Drop):
                name = tree.args["tables"][0]
                self.catalog_tables.discard(name.name.lower())
            elif isinstance(tree, exp.Create):
                self.catalog_tables.add(name.name.lower())
            return pa.table({})
        self.queries.append(text)
        if isinstance(tree, exp.Values):
            rows = [[_literal(v) for v in row.expressions] for row in tree.expressions]
            return pa.table({f"col{i + 1}": [r[i] for r in rows] for i in range(len(rows[0]))})
        tables = {name: table.to_pylist() for name, table in self.views.items()}
        # sqlglot reads Spark's CAST as TRY_CAST, which its executor lacks: same values for valid input
        tree = tree.transform(lambda n: exp.Cast(this=n.this, to=n.args["to"]) if isinstance(n, exp.TryCast) else n)
        schema = {name: {f.name: _type_name(f.type) for f in table.schema} for name, table in self.views.items()}
        result = execute(tree, schema=schema, dialect="spark", tables=tables)
        return pa.table({c: [row[i] for row in result.rows] for i, c in enumerate(result.columns)})

    def load(self, path: str, options: Mapping[str, str]) -> Any:
        return pyhudi.open_table(path).read(as_of=options.get("as.of.instant"))

    def create_view(self, df: Any, name: str) -> None:
        self.views[name] = df

    def drop_view(self, name: str) -> None:
        del self.views[name]
        self.dropped_views.append(name)

    def columns(self, df: Any) -> list[str]:
        return list(df.column_names)

    def rename(self, df: Any, names: Sequence[str]) -> Any:
        return df.rename_columns(list(names))

    def write(self, df: Any, path: str, operation: str, options: Mapping[str, str] | None = None) -> str | None:
        self.writes.append((path, operation, df.num_rows))
        table = pyhudi.open_table(path)
        return getattr(table, operation)(df, options=options)

    def to_arrow(self, df: Any) -> pa.Table:
        return df

    def result(self, table: pa.Table) -> Any:
        return table

    # ---------------------------------------------------------------- session state
    def conf_get(self, key: str) -> str | None:
        return self.conf.get(key)

    def conf_set(self, key: str, value: str) -> None:
        self.conf[key] = value

    def conf_unset(self, key: str) -> None:
        self.conf.pop(key, None)

    def current_catalog(self) -> str:
        return "spark_catalog"

    def current_database(self) -> str:
        return "default"

    def warehouse_dir(self) -> str:
        return self.warehouse

    def table_exists(self, name: str) -> bool:
        return name.replace("`", "").split(".")[-1].lower() in self.catalog_tables or name in self.views

    def register_table_source(self, table: str, path: str) -> str:
        from pyhudi.spark.sql_backend import table_source_name

        return table_source_name(table, path)


def _type_name(data_type: pa.DataType) -> str:
    try:
        return spark_type_sql(data_type)
    except Exception:  # all-NULL columns of fake results
        return "STRING"


def _literal(node: exp.Expression) -> Any:
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        return int(node.this) if node.this.lstrip("-").isdigit() else float(node.this)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Neg):
        return -_literal(node.this)
    if isinstance(node, exp.Boolean):
        return node.this
    raise ValueError(f"fake backend: unsupported VALUES entry {node.sql()}")

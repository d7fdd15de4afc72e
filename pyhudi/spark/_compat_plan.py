"""TEMPORARY stand-in for contract C1 (``pyhudi.read.plan.plan_scan``, owned by the read helper)
until its branch is merged: snapshot queries only, one task per file group, filters applied
after the merge. Deleted when ``pyhudi.read.plan`` exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.errors import ConfigError, SchemaError
from pyhudi.fsview.view import FileSystemView
from pyhudi.read.reader import SliceReader, family_scans, read_file_group


def _expression(filters: Sequence[tuple], schema: pa.Schema) -> pc.Expression | None:
    expression = None
    for f in filters:
        column, op = f[0], f[1]
        value = f[2] if len(f) == 3 else None
        field = pc.field(column)
        typ = schema.field(column).type
        if op in ("=", "!=", "<", "<=", ">", ">="):
            part = {"=": field.__eq__, "!=": field.__ne__, "<": field.__lt__, "<=": field.__le__,
                    ">": field.__gt__, ">=": field.__ge__}[op](pc.scalar(pa.scalar(value, typ)))
        elif op == "in":
            part = field.isin(pa.array(list(value), typ))
        elif op == "not in":
            part = ~field.isin(pa.array(list(value), typ))
        elif op == "is null":
            part = field.is_null()
        elif op == "is not null":
            part = field.is_valid()
        elif op in ("starts_with", "ends_with"):
            part = pc.Expression._call(op, [field], pc.MatchSubstringOptions(value))
        elif op == "contains":
            part = pc.Expression._call("match_substring", [field], pc.MatchSubstringOptions(value))
        else:
            raise SchemaError(f"unsupported filter operator {op!r}")
        expression = part if expression is None else expression & part
    return expression


@dataclass
class ReadTask:
    base_uri: str
    partition_path: str
    file_id: str
    columns: list[str]
    filters: list[tuple]
    as_of: str | None
    schema: pa.Schema

    def batches(self) -> Iterator[pa.RecordBatch]:
        yield from self.run().to_batches()

    def run(self) -> pa.Table:
        import pyhudi

        table = pyhudi.open_table(self.base_uri)
        schema = table.schema
        view = FileSystemView(table.storage, table.active_timeline(), len(table.partition_fields), self.as_of)
        groups = [g for g in view.file_groups([self.partition_path]) if g.file_id == self.file_id]
        filter_cols = [f[0] for f in self.filters]
        read_columns = list(dict.fromkeys([*self.columns, *filter_cols]))
        config = table.config
        reader = SliceReader(table.storage, table.record_key_fields, config.populate_meta_fields, view,
                             config.layout_version)
        scans = family_scans(table.effective_families(schema), schema, read_columns, table.record_key_fields,
                             table.partition_fields, config.merge_mode == "EVENT_TIME_ORDERING",
                             config.ordering_field, False)
        out_fields = [schema.field(n) for n in read_columns]
        result = read_file_group(reader, groups[0], scans, bool(table.column_families), schema, out_fields)
        if self.filters:
            result = result.filter(_expression(self.filters, schema))
        return result.select(self.columns)


@dataclass
class ScanPlan:
    schema: pa.Schema
    instant: str | None
    tasks: list[ReadTask]


def plan_scan(table, columns=None, filters=None, as_of=None, query_type="snapshot", begin=None, end=None,
              with_meta=False) -> ScanPlan:
    if query_type != "snapshot" or with_meta:
        raise ConfigError(f"query type {query_type!r} needs pyhudi.read.plan (not merged yet)")
    schema = table.schema
    columns = list(columns) if columns is not None else schema.names
    timeline = table.active_timeline()
    if as_of is None:
        last = timeline.last_completed()
        as_of = (last.completion_time or last.requested_time) if last else None
    view = FileSystemView(table.storage, timeline, len(table.partition_fields), as_of)
    out = pa.schema([schema.field(c) for c in columns])
    tasks = [ReadTask(table.path, g.partition_path, g.file_id, columns, list(filters or []), as_of, out)
             for g in view.file_groups()]
    return ScanPlan(out, as_of, tasks)

"""Family reader and row reader (RFC-80 "Reading data"), plus snapshot / time-travel queries.

Family reader: one family's file slice (base file + log blocks) → versions → the latest live row
per key (:mod:`pyhudi.read.merge`). Row reader: the families of one file group joined on the
record key into full rows (a row exists if any family has it). Families that own none of the
requested columns contribute only their keys, so a pruned read still returns every row.

Apache Hudi's own tables read through the same path as the one implicit family: Avro and
Parquet data blocks, delete blocks, rollback command blocks (table v6), blocks of uncommitted
instants skipped, torn blocks skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.config.families import ColumnFamily
from pyhudi.errors import SchemaError
from pyhudi.fsview.view import FileGroup, FileSlice, FileSystemView
from pyhudi.logformat import AvroDataBlock, CommandBlock, DataBlock, DeleteBlock, LogReader
from pyhudi.read.merge import Versions, merge_versions
from pyhudi.schema import META_FIELDS
from pyhudi.write.prepare import record_keys

RECORD_KEY = META_FIELDS[2]
SOFT_DELETE = "_hoodie_is_deleted"


@dataclass
class FamilyScan:
    """What to read of one family: its file columns wanted and how it merges."""

    family: str | None
    fields: list[pa.Field]
    event_time: bool
    ordering_field: str | None


class SliceReader:
    """Reads file slices of one table (kernel task body; picklable settings only)."""

    def __init__(self, storage, key_fields: Sequence[str], populate_meta: bool, view: FileSystemView,
                 layout_version: int) -> None:
        self.storage = storage
        self.key_fields = list(key_fields)
        self.populate_meta = populate_meta
        self.view = view  # decides which instants (and so which log blocks) are visible
        self.layout_version = layout_version

    def _keys(self, table: pa.Table) -> pa.Array:
        if self.populate_meta and RECORD_KEY in table.column_names:
            return table.column(RECORD_KEY).combine_chunks()
        return record_keys(table, self.key_fields).combine_chunks()

    def _key_columns(self, available: Sequence[str]) -> list[str]:
        if self.populate_meta and RECORD_KEY in available:
            return [RECORD_KEY]
        return [c for c in self.key_fields if c in available]

    def _data_versions(self, table: pa.Table, scan: FamilyScan) -> Versions:
        keys = self._keys(table)
        wanted = [f.name for f in scan.fields if f.name in table.column_names]
        ordering = None
        if scan.ordering_field and scan.ordering_field in table.column_names:
            ordering = table.column(scan.ordering_field).combine_chunks()
        deleted: bool | np.ndarray = False
        if SOFT_DELETE in table.column_names:  # Hudi's soft-delete marker column
            deleted = np.asarray(table.column(SOFT_DELETE).fill_null(False), dtype=bool)
        return Versions(keys, table.select(wanted), deleted, ordering)

    def _read_base(self, relpath: str, scan: FamilyScan) -> Versions:
        with self.storage.open_input(relpath) as source:
            parquet = pq.ParquetFile(source)
            available = parquet.schema_arrow.names
            cols = [f.name for f in scan.fields if f.name in available]
            cols += [c for c in self._key_columns(available) if c not in cols]
            cols += [c for c in (scan.ordering_field, SOFT_DELETE) if c and c in available and c not in cols]
            table = parquet.read(columns=cols)
        return self._data_versions(table, scan)

    def _block_visible(self, instant: str | None) -> bool:
        return instant is not None and self.view.completion_of(instant) is not None

    def _read_log(self, relpath: str, scan: FamilyScan, out: list[Versions]) -> None:
        blocks = list(LogReader(self.storage, relpath))
        rolled_back = {b.target_instant_time for b in blocks if isinstance(b, CommandBlock) and b.target_instant_time}
        for block in blocks:
            instant = block.instant_time
            if isinstance(block, CommandBlock) or instant in rolled_back:
                continue
            if not self._block_visible(instant):
                continue  # written by an instant that never completed (or is after as_of)
            if isinstance(block, DeleteBlock):
                deletes = block.deletes()
                default = deletes.column("is_default_ordering").combine_chunks()
                ordering = None  # default-ordering deletes win regardless of ordering values
                if scan.ordering_field and not pc.all(default).as_py():
                    ordering = deletes.column("ordering_value").combine_chunks()
                out.append(Versions(deletes.column("record_key").combine_chunks(), None, True, ordering, default))
            elif isinstance(block, DataBlock):
                available = block.arrow_schema().names
                cols = [f.name for f in scan.fields if f.name in available]
                cols += [c for c in self._key_columns(available) if c not in cols]
                cols += [c for c in (scan.ordering_field, SOFT_DELETE) if c and c in available and c not in cols]
                table = block.read(cols) if not isinstance(block, AvroDataBlock) else block.read().select(cols)
                out.append(self._data_versions(table, scan))

    def read_slice(self, file_slice: FileSlice, scan: FamilyScan, ordering_type: pa.DataType | None) -> pa.Table:
        versions: list[Versions] = []
        if file_slice.base_file is not None:
            versions.append(self._read_base(file_slice.base_file.relpath, scan))
        for log in file_slice.log_files:
            self._read_log(log.relpath, scan, versions)
        return merge_versions(versions, scan.fields, scan.event_time, ordering_type)


def join_families(parts: list[pa.Table], fields: list[pa.Field]) -> pa.Table:
    """Outer-join family results (each ``_key`` + columns, sorted by key) into full rows."""
    if len(parts) == 1:
        table = parts[0]
    else:
        all_keys = pc.unique(pa.chunked_array([c for p in parts for c in p.column("_key").chunks], pa.string()))
        all_keys = all_keys.take(pc.sort_indices(all_keys))
        columns = {"_key": all_keys}
        for part in parts:
            if part.num_columns == 1:
                continue
            positions = pc.index_in(all_keys, value_set=part.column("_key"))
            for name in part.column_names[1:]:
                taken = part.column(name).take(positions)
                # key and partition columns live in every family: take them from any that has the row
                columns[name] = pc.coalesce(columns[name], taken) if name in columns else taken
        table = pa.table(columns)
    arrays = [table.column(f.name) if f.name in table.column_names else pa.nulls(table.num_rows, f.type) for f in fields]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def family_scans(families: dict[str, ColumnFamily], schema: pa.Schema, wanted: Sequence[str],
                 key_fields: Sequence[str], partition_fields: Sequence[str], event_time_default: bool,
                 table_ordering: str | None, with_meta: bool) -> list[FamilyScan]:
    """One scan per family: families owning wanted columns read them, the others only keys."""
    scans = []
    implicit = set(key_fields) | set(partition_fields)
    for family in families.values():
        own = [c for c in family.columns if c in wanted and c not in implicit]
        extra = [c for c in (*key_fields, *partition_fields) if c in wanted]
        names = list(dict.fromkeys([*extra, *own]))
        if with_meta and (own or len(families) == 1):
            names = [*META_FIELDS, *names]
        fields = [schema.field(n) if n in schema.names else pa.field(n, pa.string()) for n in names]
        ordering = family.ordering_field if family.name else (family.ordering_field or table_ordering)
        event_time = ordering is not None and (event_time_default or bool(family.name))
        scans.append(FamilyScan(family.name or None, fields, event_time, ordering))
    return scans


def read_file_group(reader: SliceReader, group: FileGroup, scans: list[FamilyScan], family_table: bool,
                    schema: pa.Schema, out_fields: list[pa.Field]) -> pa.Table:
    parts = []
    for scan in scans:
        file_slice = group.latest_slice(scan.family, family_table, reader.layout_version)
        if file_slice.is_empty:
            continue
        ordering_type = schema.field(scan.ordering_field).type if scan.ordering_field in schema.names else None
        parts.append(reader.read_slice(file_slice, scan, ordering_type))
    if not parts:
        return pa.schema(out_fields).empty_table()
    return join_families(parts, out_fields)


def read_table(table: Any, columns: Sequence[str] | None = None, filters: Sequence[tuple] | None = None,
               as_of: str | None = None, with_meta: bool = False) -> pa.Table:
    """Snapshot (or time-travel) read of a whole table as one Arrow table."""
    schema = table.schema_at(as_of)  # C3: the schema and families in effect at the snapshot
    wanted = list(columns) if columns is not None else schema.names
    for name in wanted:
        if name not in schema.names:
            raise SchemaError(f"column {name!r} is not in the table schema ({', '.join(schema.names)})")
    filter_columns = [f[0] for f in filters or []]
    read_columns = list(dict.fromkeys([*wanted, *[c for c in filter_columns if c in schema.names]]))
    timeline = table.active_timeline()
    view = FileSystemView(table.storage, timeline, len(table.partition_fields), as_of)
    config = table.config
    reader = SliceReader(table.storage, table.record_key_fields, config.populate_meta_fields, view,
                         config.layout_version)
    families = table.families_at(as_of, schema)
    family_table = any(not f.is_default for f in families.values())
    scans = family_scans(families, schema, read_columns, table.record_key_fields, table.partition_fields,
                         config.merge_mode == "EVENT_TIME_ORDERING", config.ordering_field, with_meta)
    meta = [pa.field(n, pa.string()) for n in META_FIELDS] if with_meta else []
    out_fields = [*meta, *[schema.field(n) for n in read_columns]]
    pieces = [read_file_group(reader, g, scans, family_table, schema, out_fields)
              for g in view.file_groups()]
    result = pa.concat_tables(pieces) if pieces else pa.schema(out_fields).empty_table()
    if filters:
        from pyhudi.read.filters import filter_expression

        result = result.filter(filter_expression(filters, schema))
    keep = [*[f.name for f in meta], *wanted]
    return result.select(keep)

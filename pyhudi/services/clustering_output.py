"""The files of a clustering group written as its ordered rows stream in, each about
``hoodie.clustering.plan.strategy.target.file.max.bytes`` (Hudi's executor rolls its files at that
size, whatever ``numOutputFileGroups`` said), used by the spill path of
:class:`~pyhudi.services.clustering_run.ClusteringTask`.

Rows are gathered into row groups of at most ``row_group_bytes`` (Arrow bytes) and appended to
the open file; before a row group would carry the file past the target (estimated from the
file's compression so far) the file is closed and the next output file group opened. A curve
layout instead cuts its files at given row offsets — the cell-aligned bounds of
:func:`pyhudi.layout.cut_at_cells`, from the rows counted per cell while spilling — so a spilled
group is cut into the same files as in memory (``numOutputFileGroups`` files of near-equal rows,
each a rectangle of the sort columns' space: tight min/max for data skipping). A file
keeps what the in-memory path's files keep: a marker written first, every record's meta values
with ``_hoodie_file_name`` renamed, the declared order, and the per-column ranges of the sort
columns (:func:`~pyhudi.read.skipping.column_ranges`'s format, gathered per row group). Memory:
one row group.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.logformat.parquet_options import constant_strings, parquet_options_for
from pyhudi.read.skipping import column_ranges
from pyhudi.schema import META_FIELDS
from pyhudi.storage.naming import BaseFileName, new_file_id
from pyhudi.write.handle import KIND_CREATE, META_PARQUET_OPTIONS, WriteStatus
from pyhudi.write.markers import IO_CREATE, create_marker

RECORD_KEY = META_FIELDS[2]
_NAME_INDEX = len(META_FIELDS) - 1


@dataclass
class _OpenFile:
    file_id: str
    name: str
    relpath: str
    sink: Any
    writer: pq.ParquetWriter
    started: float
    rows: int = 0
    arrow_bytes: int = 0
    min_key: str | None = None
    max_key: str | None = None
    bounds: dict[str, list[pa.Scalar]] = field(default_factory=dict)
    nulls: dict[str, int] = field(default_factory=dict)
    types: dict[str, pa.DataType] = field(default_factory=dict)


class SizedFiles:
    """Ordered rows in, files of about ``target_bytes`` out (see the module docstring); or, given
    ``cuts`` (row offsets, a curve's cell-aligned file bounds), files cut exactly there."""

    def __init__(self, context, instant: str, partition_path: str, write_token: str, file_ids: Sequence[str],
                 sort_columns: Sequence[str], declared: Callable[[pa.Table], list[pq.SortingColumn] | None],
                 target_bytes: int, row_group_bytes: int, cuts: Sequence[int] | None = None):
        self.context, self.instant, self.partition_path = context, instant, partition_path
        self.write_token, self.file_ids = write_token, list(file_ids)
        self.sort_columns, self.declared = list(sort_columns), declared
        self.target_bytes, self.row_group_bytes = max(1, target_bytes), max(1, row_group_bytes)
        self.results: list[tuple[WriteStatus, dict]] = []
        self._pending: list[pa.Table] = []
        self._pending_bytes = 0
        self._file: _OpenFile | None = None
        self._options: dict | None = None
        self._cuts = None if cuts is None else [int(c) for c in cuts if c > 0]
        self._seen = 0

    def add(self, rows: pa.Table) -> None:
        if self._cuts is None:
            self._gather(rows)
            return
        while rows.num_rows:  # (split at the cuts: a file ends exactly at its bound)
            cut = self._cuts[0] if self._cuts else self._seen + rows.num_rows
            take = min(rows.num_rows, cut - self._seen)
            self._seen += take
            self._gather(rows.slice(0, take))
            rows = rows.slice(take)
            if self._seen == cut and self._cuts:
                self._cuts.pop(0)
                self._flush()
                if self._file is not None:
                    self._close_file()

    def _gather(self, rows: pa.Table) -> None:
        if not rows.num_rows:
            return
        self._pending.append(rows)
        self._pending_bytes += rows.nbytes
        if self._pending_bytes >= self.row_group_bytes:
            self._flush()

    def close(self) -> list[tuple[WriteStatus, dict]]:
        self._flush()
        if self._file is not None:
            self._close_file()
        return self.results

    def abort(self) -> None:
        """Close what is open (its data file is deleted with the instant's markers)."""
        if self._file is not None:
            self._file.writer.close()
            self._file.sink.close()
            self._file = None

    # ------------------------------------------------------------------ internals
    def _flush(self) -> None:
        if not self._pending:
            return
        rows = pa.concat_tables(self._pending)  # (chunks as they came: no copy)
        self._pending, self._pending_bytes = [], 0
        open_ = self._file
        if open_ is not None and open_.rows and self._cuts is None:
            ratio = open_.sink.tell() / max(1, open_.arrow_bytes)
            if open_.sink.tell() + rows.nbytes * ratio > self.target_bytes:
                self._close_file()
        if self._file is None:
            self._open_file(rows)
        self._append(rows)

    def _open_file(self, first: pa.Table) -> None:
        index = len(self.results)
        file_id = self.file_ids[index] if index < len(self.file_ids) else new_file_id(0)
        name = BaseFileName(file_id, self.write_token, self.instant, None).name
        relpath = f"{self.partition_path}/{name}" if self.partition_path else name
        if self._options is None:  # chosen once, from the first rows (as a family's options are)
            self._options = parquet_options_for(first, fixed=META_PARQUET_OPTIONS,
                                                delta_columns=self.context.config.record_key_fields)
        create_marker(self.context.storage, self.instant, self.partition_path, name, IO_CREATE)
        sink = self.context.storage.open_output(relpath)
        writer = pq.ParquetWriter(sink, first.schema, sorting_columns=self.declared(first), **self._options)
        self._file = _OpenFile(file_id, name, relpath, sink, writer, time.perf_counter())

    def _append(self, rows: pa.Table) -> None:
        f = self._file
        names = constant_strings(f.name, rows.num_rows).dictionary_decode()
        rows = rows.set_column(_NAME_INDEX, META_FIELDS[_NAME_INDEX], names)
        f.writer.write_table(rows, row_group_size=rows.num_rows)
        f.rows += rows.num_rows
        f.arrow_bytes += rows.nbytes
        keys = pc.min_max(rows.column(RECORD_KEY))
        low, high = keys["min"].as_py(), keys["max"].as_py()
        f.min_key = low if f.min_key is None or (low is not None and low < f.min_key) else f.min_key
        f.max_key = high if f.max_key is None or (high is not None and high > f.max_key) else f.max_key
        for name in self.sort_columns:
            column = rows.column(name)
            f.nulls[name] = f.nulls.get(name, 0) + column.null_count
            f.types[name] = column.type
            if column.null_count < len(column):
                bounds = pc.min_max(column)
                f.bounds.setdefault(name, []).extend([bounds["min"], bounds["max"]])

    def _close_file(self) -> None:
        f, self._file = self._file, None
        f.writer.close()
        f.sink.close()
        storage = self.context.storage
        status = WriteStatus(
            instant=self.instant, partition_path=self.partition_path, file_id=f.file_id, family="",
            file_name=f.name, kind=KIND_CREATE, num_records=f.rows, num_inserts=f.rows, num_updates=0,
            num_deletes=0, bytes_written=storage.size(f.relpath), base_file="", prev_commit="null",
            is_new_file_group=True, elapsed_ms=int((time.perf_counter() - f.started) * 1000),
            min_key=f.min_key, max_key=f.max_key)
        self.results.append((status, self._ranges(f)))

    def _ranges(self, f: _OpenFile) -> dict:
        """The file's ranges, from its row groups' minima and maxima (the format of
        :func:`column_ranges` over the whole file)."""
        if not self.sort_columns:
            return {}
        extremes = {}
        for name in self.sort_columns:
            type_, scalars = f.types[name], f.bounds.get(name, [])
            extremes[name] = pa.nulls(2, type_)
            if scalars:
                total = pc.min_max(pa.array([s.as_py() for s in scalars], type_))
                extremes[name] = pa.array([total["min"].as_py(), total["max"].as_py()], type_)
        ranges = column_ranges(pa.table(extremes), self.sort_columns)
        for name, entry in ranges["columns"].items():
            entry["nullCount"] = f.nulls.get(name, 0)
        ranges["numRows"] = f.rows
        return ranges


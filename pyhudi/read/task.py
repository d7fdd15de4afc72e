"""Read tasks: the picklable unit of read work — one file group's families, merged and joined.

A :class:`ReadTask` holds only plain values (a :class:`~pyhudi.storage.fs.Storage`, file slices,
schemas, filters, the visible instants), so the local engine and Spark executors run the same
code. Running it streams record batches of exactly ``settings.output`` schema: family readers
(:mod:`pyhudi.read.family_reader`) → row join (:mod:`pyhudi.read.row_reader`) → exact filters →
projection. Before reading data, the task opens the base files' footers to skip what statistics
prove cannot match (:mod:`pyhudi.read.pruning`).
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.fsview.view import FileSlice, Visibility
from pyhudi.read.family_reader import FamilyScan, open_base, read_family, slice_inputs
from pyhudi.read.filters import Filter, filter_expression
from pyhudi.read.pruning import KeyRange, excluded_key_ranges
from pyhudi.read.row_reader import KEY, PARTITION_PATH, RECORD_KEY, join_streams
from pyhudi.read.sources import KeySpec, ParquetInput, Prefilter, ReadSpec
from pyhudi.storage.fs import Storage

DEFAULT_BATCH_SIZE = 65536


@dataclass(frozen=True)
class TaskSettings:
    """What every task of one scan shares."""

    table_schema: pa.Schema
    output: pa.Schema
    keys: KeySpec
    visibility: Visibility
    filters: tuple[Filter, ...] = ()
    key_filters: tuple[Filter, ...] = ()
    read_optimized: bool = False
    incremental: tuple[str, ...] | None = None  # instants whose writes an incremental query returns
    batch_size: int = DEFAULT_BATCH_SIZE
    strategy: str = "auto"


@dataclass
class FamilyPart:
    """One family of the file group: what to read of it and its latest file slice."""

    scan: FamilyScan
    file_slice: FileSlice
    own_columns: tuple[str, ...] = ()

    @property
    def base_is_final(self) -> bool:
        """No log file applies on top of the base file (base values are the row's values)."""
        return not self.file_slice.log_files


@dataclass
class ReadTask:
    """Read one file group: ``batches()`` streams its merged, filtered rows; ``run()`` collects them."""

    storage: Storage
    partition_path: str
    file_id: str
    families: list[FamilyPart]
    settings: TaskSettings
    metrics: dict = field(default_factory=dict, compare=False)
    """Counters of the last run (strategies, row groups read / skipped, skipped by statistics)."""

    def __repr__(self) -> str:
        return f"ReadTask({self.partition_path!r}, {self.file_id!r}, families={[f.scan.family for f in self.families]})"

    def batches(self) -> Iterator[pa.RecordBatch]:
        with ExitStack() as files:
            yield from self._batches(files)

    def run(self) -> pa.Table:
        return pa.Table.from_batches(list(self.batches()), schema=self.settings.output)

    # ------------------------------------------------------------------ body
    def _batches(self, files: ExitStack) -> Iterator[pa.RecordBatch]:
        settings = self.settings
        self.metrics.clear()
        opened = self._open_bases(files)
        excluded = self._excluded_ranges(opened)
        if excluded is None:
            self.metrics["skipped_by_statistics"] = 1
            return  # statistics prove that no row of this file group matches
        prefilter = Prefilter(settings.table_schema, list(settings.key_filters), excluded)
        streams = []
        for part in self.families:
            spec = ReadSpec(list(part.scan.fields), part.scan.ordering_field, settings.keys, prefilter)
            inputs = slice_inputs(self.storage, part.file_slice, spec, settings.table_schema, settings.visibility,
                                  files, base_only=settings.read_optimized, opened=opened)
            for source in inputs:
                if isinstance(source, ParquetInput):
                    total = source.parquet.metadata.num_row_groups
                    self._count("row_groups", total)
                    self._count("row_groups_skipped", total - len(source.row_groups))
            streams.append(read_family(inputs, part.scan, settings.batch_size, len(self.families) > 1,
                                       settings.strategy, self.metrics))
        incremental = pa.array(settings.incremental, pa.string()) if settings.incremental is not None else None
        expression = filter_expression(settings.filters, settings.table_schema) if settings.filters else None
        for window in join_streams(streams, incremental):
            batch = self._output(window, expression)
            if batch is not None and batch.num_rows:
                yield batch

    def _count(self, name: str, n: int) -> None:
        self.metrics[name] = self.metrics.get(name, 0) + n

    def _open_bases(self, files: ExitStack) -> dict[str, pq.ParquetFile]:
        opened = {}
        for part in self.families:
            base = part.file_slice.base_file
            if base is not None and base.relpath not in opened:
                opened[base.relpath] = open_base(self.storage, base.relpath, files)
        return opened

    def _excluded_ranges(self, opened: dict[str, pq.ParquetFile]) -> list[KeyRange] | None:
        """Key ranges no matching row can have (None: the whole file group), from families
        whose base values are final and the null-rejecting filters on their own columns."""
        settings = self.settings
        excluded: list[KeyRange] = []
        for part in self.families:
            own = [f for f in settings.filters if f.column in part.own_columns]
            if not own:
                continue
            if part.file_slice.is_empty or (settings.read_optimized and part.file_slice.base_file is None):
                if any(f.op != "is null" for f in own):
                    return None  # the family has no rows here: its columns are all null
                continue
            base = part.file_slice.base_file
            if base is None or not (part.base_is_final or settings.read_optimized):
                continue
            parquet = opened[base.relpath]
            key_column = settings.keys.stats_column(parquet.schema_arrow.names, settings.table_schema)
            ranges = excluded_key_ranges(parquet.metadata, own, settings.table_schema, key_column or "")
            if ranges is None:
                return None
            excluded.extend(ranges)
        return excluded

    def _output(self, window: pa.Table, expression) -> pa.RecordBatch | None:
        output = self.settings.output
        names = window.column_names
        if RECORD_KEY in output.names and RECORD_KEY in names:  # tables without meta fields
            window = window.set_column(names.index(RECORD_KEY), RECORD_KEY,
                                       pc.coalesce(window.column(RECORD_KEY), window.column(KEY)))
        if PARTITION_PATH in output.names and PARTITION_PATH in names:
            window = window.set_column(names.index(PARTITION_PATH), PARTITION_PATH,
                                       pc.fill_null(window.column(PARTITION_PATH), self.partition_path))
        if expression is not None:
            for f in self.settings.filters:
                if f.column not in window.column_names:  # a family with no rows in this file group
                    field = self.settings.table_schema.field(f.column)
                    window = window.append_column(field, pa.nulls(window.num_rows, field.type))
            window = window.filter(expression)
            if not window.num_rows:
                return None
        arrays = []
        for f in output:
            if f.name in window.column_names:
                column = window.column(f.name)
                arrays.append(column.cast(f.type) if column.type != f.type else column)
            else:
                arrays.append(pa.nulls(window.num_rows, f.type))
        table = pa.Table.from_arrays(arrays, schema=output)
        batches = table.combine_chunks().to_batches()
        return batches[0] if batches else None

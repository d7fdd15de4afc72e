"""Ordering one clustering group larger than memory: sorted runs spilled to storage, merged back.

The order is exactly :func:`pyhudi.layout.curve_order`'s on the whole group (the in-memory path),
so a group clusters the same whether it fits or not:

- every row gets its position in the group's read order (:data:`SEQ`), the tiebreak that makes
  the in-memory sorts stable — rows of equal key keep their read order here too;
- ``linear`` sorts by the sort columns (nulls last), no sort columns by the record key;
- a curve needs each column's coordinate among the *whole group's* values, so
  :class:`CurveMapping` first reads the sort columns only: for ``direct`` the distinct values of
  each column (a value's coordinate is its index among them, i.e. its dense rank), for ``sample``
  the valid-row counts, then the values of the same seeded sample of valid rows
  ``curve_order`` draws (coordinates = sampled boundaries below a value). The curve index of a
  row (:data:`CURVE`) then depends on that row alone.

:class:`ExternalSort` cuts the decorated rows into runs of at most ``run_rows`` rows, sorts each
and writes it as a temporary Parquet file through the storage layer (so on S3 too) under the
instant's ``.hoodie/.temp/<instant>/`` folder — deleted when the group ends, with the instant's
markers on commit, and by the rollback of a killed run. Runs are merged :data:`FAN_IN` at a time
(more runs: intermediate merges into longer runs first). A merge step is vectorized: each run
holds one batch; the smallest of the batches' last keys is the threshold; every run's prefix up
to it (a key comparison over whole columns) is concatenated and sorted — the run whose last key
was the threshold is used up, so every step makes progress.

**Memory bound** (Arrow bytes; ``B`` = :data:`~pyhudi.config.clustering.EXECUTION_BUFFER_BYTES`):
``run_rows`` is ``B / 2`` over the bytes per row, so a run and its sorted copy hold about ``B``
(+ one read batch of ``run_rows / 4``); a merge holds one row group of ``run_rows / FAN_IN`` rows
per run (≤ ``run_rows``) and the window cut from them and its sorted copy (≤ ``B`` together);
the output writer one row group of ``B / 4``. Runs are read a row group at a time
(``iter_batches`` reads ahead). A ``direct`` curve also holds the distinct values of its sort
columns; ``sample`` at most ``sample_size`` keys per column; a curve's :class:`CellCounts` one
counter per cell its files are cut at (at most 8 per output file). Measured (bench/
bench_clustering_memory.py, ``B`` = 8 MB): Arrow's pool peaks at 16 MB for 100k and 1M rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.layout import (SAMPLE_SEED, _check_sortable, _scale, _sort_keys, cell_prefix_bits, common_bits, curve_index,
                           cut_at_cells, index_width)
from pyhudi.schema import META_FIELDS

SEQ = "_pyhudi_sort_seq"
"""Helper column: a row's position in the group's read order (the stable sorts' tiebreak)."""
CURVE = "_pyhudi_sort_curve"
"""Helper column: a row's curve index (z-order or hilbert)."""
FAN_IN = 16
"""Runs merged at once: a merge holds one batch of ``run_rows / FAN_IN`` rows per run."""
RECORD_KEY = META_FIELDS[2]
Batches = Callable[[], Iterable[pa.RecordBatch]]
"""A re-startable stream of the group's rows (read again for each pass)."""


# ------------------------------------------------------------------------------ curve mapping
def _plain(array: pa.Array, fold_zero: bool = False) -> pa.Array:
    """The column as the curve sees it: dictionaries decoded; for ranks (``fold_zero``) ``-0.0`` as
    ``0.0``, which sort as equals (the sample's bit keys tell them apart, as ``curve_order``'s do)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if fold_zero and pa.types.is_floating(array.type) and not pa.types.is_float16(array.type):
        array = pc.add(array, pa.scalar(0.0, array.type))
    return array


@dataclass
class _Column:
    """One sort column's mapping from values to curve coordinates."""

    distinct: pa.Array | None = None  # direct: sorted distinct values
    bounds: np.ndarray | None = None  # sample: sorted distinct sampled keys
    null_code: int = 0
    top: int = 0

    def codes(self, array: pa.Array) -> np.ndarray:
        valid = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        if self.distinct is not None:
            found = pc.index_in(array, value_set=self.distinct).fill_null(self.null_code)
            return found.to_numpy(zero_copy_only=False).astype(np.uint64)
        codes = np.searchsorted(self.bounds, _sort_keys(array), side="left").astype(np.uint64)
        return np.where(valid, codes, np.uint64(self.null_code)).astype(np.uint64)


class CurveMapping:
    """Each row's curve index from the whole group's value coordinates (module docstring)."""

    def __init__(self, strategy: str, columns: Sequence[str], method: str, sample_size: int, batches: Batches,
                 lead_bits: int = 0):
        self.strategy, self.columns, self.lead_bits = strategy, list(columns), lead_bits
        self.mapped = (self._direct(batches) if method == "direct" else self._sampled(batches, sample_size))
        self.bits = common_bits([c.top for c in self.mapped], lead_bits)
        self.index_bits = index_width(len(self.columns), self.bits, lead_bits)

    def index(self, table: pa.Table | pa.RecordBatch) -> np.ndarray:
        scaled = [_scale(m.codes(_plain(table.column(c), m.distinct is not None)), self.bits, m.top)
                  for c, m in zip(self.columns, self.mapped)]
        return curve_index(self.strategy, scaled, self.bits, self.lead_bits)[0]

    def _direct(self, batches: Batches) -> list[_Column]:
        """Distinct values per column, merged as batches come (compacted when they double)."""
        parts: list[list[pa.Array]] = [[] for _ in self.columns]
        sizes = [0] * len(self.columns)
        compacted = [1] * len(self.columns)
        nulls = [False] * len(self.columns)
        for batch in batches():
            for i, name in enumerate(self.columns):
                array = _plain(batch.column(name), fold_zero=True)
                _check_sortable(array.type)
                nulls[i] = nulls[i] or array.null_count > 0
                unique = pc.unique(array.drop_null())
                parts[i].append(unique)
                sizes[i] += len(unique)
                if sizes[i] > 2 * compacted[i]:
                    parts[i] = [pc.unique(pa.concat_arrays(parts[i]))]
                    sizes[i] = compacted[i] = max(1, len(parts[i][0]))
        out = []
        for i, name in enumerate(self.columns):
            values = pc.unique(pa.concat_arrays(parts[i])) if parts[i] else pa.array([])
            values = values.take(pc.sort_indices(values))
            n = len(values)
            out.append(_Column(distinct=values, null_code=n if n else 0,
                               top=(n if n else 0) if nulls[i] else max(0, n - 1)))
        return out

    def _sampled(self, batches: Batches, sample_size: int) -> list[_Column]:
        """Two passes over the sort columns: valid counts (and largest keys), then the sample's keys
        — the same rows ``curve_order`` samples (its seeded choice among the valid rows)."""
        k = len(self.columns)
        valid_counts, nulls, largest = [0] * k, [False] * k, [None] * k
        for batch in batches():
            for i, name in enumerate(self.columns):
                array = _plain(batch.column(name))
                _check_sortable(array.type)
                valid = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
                nulls[i] = nulls[i] or not valid.all()
                if valid.any():
                    top = _sort_keys(array)[valid].max()
                    largest[i] = top if largest[i] is None else max(largest[i], top)
                valid_counts[i] += int(valid.sum())
        chosen = []
        for n in valid_counts:
            pick = None if n <= sample_size else np.sort(np.random.default_rng(SAMPLE_SEED).choice(
                n, size=sample_size, replace=False))
            chosen.append(pick)
        keys: list[list[np.ndarray]] = [[] for _ in range(k)]
        seen = [0] * k
        for batch in batches():
            for i, name in enumerate(self.columns):
                array = _plain(batch.column(name))
                valid = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
                values = _sort_keys(array)[valid]
                if chosen[i] is None:
                    keys[i].append(np.unique(values))
                else:
                    lo, hi = np.searchsorted(chosen[i], [seen[i], seen[i] + len(values)], side="left")
                    keys[i].append(values[chosen[i][lo:hi] - seen[i]])
                seen[i] += len(values)
        out = []
        for i in range(k):
            bounds = np.unique(np.concatenate(keys[i])) if keys[i] else np.zeros(0, np.uint64)
            most = int(np.searchsorted(bounds, largest[i], side="left")) if largest[i] is not None else -1
            null_code = most + 1
            out.append(_Column(bounds=bounds, null_code=null_code, top=null_code if nulls[i] else max(0, most)))
        return out


class CellCounts:
    """Rows per cell of the curve prefix ``count`` files are cut at, counted as the rows are
    spilled: :func:`pyhudi.layout.cut_at_cells` needs only these to cut the merged stream where
    :meth:`pyhudi.layout.CurveLayout.file_bounds` cuts the same rows in memory. Memory: one
    counter per cell (at most ``8 * count``)."""

    def __init__(self, index_bits: int, count: int):
        self.index_bits, self.count = index_bits, max(1, count)
        self.prefix = cell_prefix_bits(self.count, index_bits)
        self.rows = np.zeros(1 << self.prefix, dtype=np.int64)

    def add(self, keys: np.ndarray) -> None:
        if not self.prefix:  # (one file, or no curve: one cell)
            self.rows[0] += len(keys)
            return
        cells = (np.asarray(keys, dtype=np.uint64) >> np.uint64(self.index_bits - self.prefix)).astype(np.int64)
        self.rows += np.bincount(cells, minlength=len(self.rows))

    def bounds(self) -> list[int]:
        """The files' row offsets in the merged order (``file_bounds``'s)."""
        return cut_at_cells(np.concatenate([[0], np.cumsum(self.rows)]), self.count)


# ------------------------------------------------------------------------------ sort key
@dataclass
class SortKey:
    """How the group's rows are ordered: helper columns added per batch, the sort keys over them."""

    columns: list[str]
    strategy: str
    curve: CurveMapping | None = None
    keys: list[str] = field(init=False)

    def __post_init__(self) -> None:
        if self.curve is not None:
            self.keys = [CURVE, SEQ]
        else:
            self.keys = [*(self.columns or [RECORD_KEY]), SEQ]

    @property
    def sort_keys(self) -> list[tuple[str, str, str]]:
        return [(k, "ascending", "at_end") for k in self.keys]

    def decorate(self, batch: pa.RecordBatch | pa.Table, first: int) -> pa.Table:
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        if self.curve is not None:
            table = table.append_column(CURVE, pa.array(self.curve.index(table), pa.uint64()))
        return table.append_column(SEQ, pa.array(np.arange(first, first + table.num_rows, dtype=np.int64)))

    def sort(self, table: pa.Table) -> pa.Table:
        return table.take(pc.sort_indices(table, sort_keys=self.sort_keys))

    def count_up_to(self, table: pa.Table, threshold: pa.Table) -> int:
        """How many leading rows of the sorted ``table`` sort at or before the one-row ``threshold``
        (lexicographic over the keys, nulls last, NaN after numbers — Arrow's sort order)."""
        before = np.zeros(table.num_rows, dtype=bool)
        tied = np.ones(table.num_rows, dtype=bool)
        for name in self.keys:
            lower, equal = _compare(table.column(name), threshold.column(name)[0])
            before |= tied & lower
            tied &= equal
        return int((before | tied).sum())

    def strip(self, table: pa.Table) -> pa.Table:
        return table.drop_columns([c for c in (CURVE, SEQ) if c in table.column_names])


def _compare(column: pa.ChunkedArray, value: pa.Scalar) -> tuple[np.ndarray, np.ndarray]:
    """Per row: sorts strictly before ``value``, and ties with it (in Arrow's ascending order)."""
    def numpy(mask) -> np.ndarray:
        return np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)

    valid = numpy(pc.is_valid(column))
    if not value.is_valid:
        return valid, ~valid
    floating = pa.types.is_floating(column.type)
    nan = numpy(pc.fill_null(pc.is_nan(column), False)) if floating else None
    if floating and value.as_py() != value.as_py():  # the threshold is NaN: after every number
        return valid & ~nan, nan
    lower = numpy(pc.fill_null(pc.less(column, value), False))
    equal = numpy(pc.fill_null(pc.equal(column, value), False))
    return lower, equal


# ------------------------------------------------------------------------------ runs and merge
class ExternalSort:
    """Sorted runs of at most ``run_rows`` rows in ``directory`` (storage-relative), merged in
    order. ``peak_rows`` / ``peak_merge_rows`` record the most rows it held (the bound's test)."""

    def __init__(self, storage, directory: str, key: SortKey, run_rows: int):
        self.storage, self.directory, self.key = storage, directory, key
        self.run_rows = max(1, int(run_rows))
        self.batch_rows = max(1, self.run_rows // FAN_IN)
        self.runs: list[str] = []
        self.run_sizes: list[int] = []
        self.peak_rows = 0
        self.peak_merge_rows = 0
        self._pending: list[pa.Table] = []
        self._held = 0
        self._written = 0

    def add(self, table: pa.Table) -> None:
        """Buffer decorated rows; every full ``run_rows`` is sorted and spilled."""
        self._pending.append(table)
        self._held += table.num_rows
        self.peak_rows = max(self.peak_rows, self._held)
        while self._held >= self.run_rows:
            rows = pa.concat_tables(self._pending)
            self._spill(rows.slice(0, self.run_rows))
            rest = rows.slice(self.run_rows)
            self._pending, self._held = ([rest] if rest.num_rows else []), rest.num_rows

    def finish(self) -> None:
        if self._held:
            self._spill(pa.concat_tables(self._pending))
        self._pending, self._held = [], 0

    def _spill(self, rows: pa.Table) -> None:
        self._write_run([self.key.sort(rows)])
        self.run_sizes.append(rows.num_rows)

    def _write_run(self, windows: Iterable[pa.Table]) -> str:
        """One sorted run file, in row groups of ``batch_rows`` (windows gathered to that size:
        small windows as row groups would bloat the footer every reader of the run loads)."""
        self._written += 1
        relpath = f"{self.directory}/run-{self._written:05d}.parquet"
        writer, pending, held = None, [], 0
        with self.storage.open_output(relpath) as sink:
            try:
                for window in windows:
                    if writer is None:
                        writer = pq.ParquetWriter(sink, window.schema, compression="lz4")
                    pending.append(window)
                    held += window.num_rows
                    if held >= self.batch_rows:
                        writer.write_table(pa.concat_tables(pending), row_group_size=self.batch_rows)
                        pending, held = [], 0
                if pending:
                    writer.write_table(pa.concat_tables(pending), row_group_size=self.batch_rows)
            finally:
                if writer is not None:
                    writer.close()
        self.runs.append(relpath)
        return relpath

    def merged(self, columns: Sequence[str] | None = None) -> Iterator[pa.Table]:
        """The rows of every run in order, as sorted windows. More than :data:`FAN_IN` runs are
        first merged into longer runs (each merge holds one batch per run)."""
        self.finish()
        while len(self.runs) > FAN_IN:
            level, self.runs = self.runs, []
            for i in range(0, len(level), FAN_IN):
                self._write_run(self._merge(level[i:i + FAN_IN], None))
                for path in level[i:i + FAN_IN]:
                    self.storage.delete(path)
        yield from self._merge(self.runs, columns)

    def _merge(self, paths: Sequence[str], columns: Sequence[str] | None) -> Iterator[pa.Table]:
        wanted = None if columns is None else list(dict.fromkeys([*columns, *self.key.keys]))
        readers = [_row_groups(pq.ParquetFile(self.storage.open_input(p)), wanted) for p in paths]
        heads: list[pa.Table | None] = [_next(r) for r in readers]
        while True:
            live = [i for i, h in enumerate(heads) if h is not None]
            if not live:
                return
            self.peak_merge_rows = max(self.peak_merge_rows, 2 * sum(heads[i].num_rows for i in live))
            lasts = pa.concat_tables([heads[i].select(self.key.keys).slice(heads[i].num_rows - 1) for i in live])
            threshold = self.key.sort(lasts).slice(0, 1)
            parts = []
            for i in live:
                n = self.key.count_up_to(heads[i], threshold)
                parts.append(heads[i].slice(0, n))
                rest = heads[i].slice(n)
                heads[i] = rest if rest.num_rows else _next(readers[i])
            window = self.key.sort(pa.concat_tables(parts))
            yield window if columns is None else window.select(list(columns))

    def cleanup(self) -> None:
        """Delete every run (the group is done, or failed)."""
        self.storage.delete_dir(self.directory)


def _row_groups(run: pq.ParquetFile, columns: Sequence[str] | None) -> Iterator[pa.Table]:
    """A run's row groups one at a time (``iter_batches`` reads ahead: not bounded by one batch)."""
    for i in range(run.num_row_groups):
        yield run.read_row_group(i, columns=columns, use_threads=False)


def _next(reader: Iterator[pa.Table]) -> pa.Table | None:
    for table in reader:
        if table.num_rows:
            return table
    return None

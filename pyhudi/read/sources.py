"""Inputs of the family reader: a file slice's base file and log blocks as streams of versions.

Two kinds of input:

- :class:`ParquetInput` — a base file or a Parquet data block, streamed in record batches
  (only the row groups that pruning keeps, only the columns wanted). Whether its rows are
  sorted by record key is known from the Parquet ``sorting_columns`` metadata, or checked by
  one pass over the key column alone (strictly increasing keys, batch by batch).
- :class:`MemoryInput` — a block that is decoded whole anyway (Avro data, deletes): one chunk,
  sorted in memory if its keys are distinct but out of order.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from pyhudi.errors import LogFormatError, ReadError
from pyhudi.lazy import pc
from pyhudi.logformat import AvroDataBlock, DataBlock, DeleteBlock, ParquetDataBlock
from pyhudi.read.filters import Filter, filter_table
from pyhudi.read.keys import (
    MAX_INTEGER_KEY,
    RECORD_KEY,
    KeySpec,
    in_range_mask,
    integer_keys,
    key_text,
    order_indices,
    strictly_increasing,
)
from pyhudi.read.merge import Versions
from pyhudi.read.metadata_cache import METADATA_CACHE
from pyhudi.read.pruning import KeyRange, excluded_mask, key_range_of, range_covered, row_group_may_match
from pyhudi.value import Record
from pyhudi.schema import SOFT_DELETE_FIELD

if TYPE_CHECKING:
    import pyarrow.parquet as pq

SOFT_DELETE = SOFT_DELETE_FIELD  # (Hudi's soft-delete column, declared in pyhudi.schema)
ORDERED = "ordered"
"""Metadata cache kind: a file declaring its rows sorted by key was read whole and found so."""


class Prefilter(Record):
    """Drops versions that cannot belong to a matching row (see :mod:`pyhudi.read.pruning`).

    ``key_filters`` are filters on record key columns (equal in every version of a row);
    ``excluded`` are record-key ranges proven empty of matches; ``key_range`` is the half-open
    range ``[low, high)`` of the task's split of the file group (:mod:`pyhudi.read.split`).
    """

    schema: pa.Schema
    key_filters: list[Filter]
    excluded: list[KeyRange]
    key_range: tuple[str | None, str | None] | None = None

    def __init__(self, schema: pa.Schema, key_filters: list[Filter] | None = None,
                 excluded: list[KeyRange] | None = None,
                 key_range: tuple[str | None, str | None] | None = None) -> None:
        self._set(schema=schema, key_filters=[] if key_filters is None else key_filters,
                  excluded=[] if excluded is None else excluded, key_range=key_range)

    @property
    def columns(self) -> list[str]:
        return list(dict.fromkeys(f.column for f in self.key_filters))

    @property
    def unrestricted(self) -> bool:
        """Whether every row of the inputs is read (no key filter, excluded range or split)."""
        return not self.key_filters and not self.excluded and self.key_range is None

    def row_groups(self, metadata: pq.FileMetaData, key_column: str | None) -> list[int]:
        if not self.key_filters and not self.excluded and self.key_range is None:
            return list(range(metadata.num_row_groups))
        kept = []
        for i in range(metadata.num_row_groups):
            if not row_group_may_match(metadata, i, self.key_filters, self.schema):
                continue
            keys = key_range_of(metadata, i, key_column) if key_column else None
            if self.excluded and range_covered(keys, self.excluded):
                continue
            if self.key_range is not None and keys is not None and not _overlaps(keys, self.key_range):
                continue
            kept.append(i)
        return kept

    def range_mask(self, keys: pa.Array) -> np.ndarray | None:
        """Which keys lie in ``key_range`` (None: all of them)."""
        if self.key_range is None or not len(keys):
            return None
        mask = np.asarray(in_range_mask(keys, *self.key_range), dtype=bool)
        return None if mask.all() else mask

    def apply(self, table: pa.Table) -> pa.Table:
        """The rows whose key columns satisfy the key filters (columns absent: all rows)."""
        if not self.key_filters:
            return table
        names = set(table.column_names)  # (a list built on every access: wide tables pay per call)
        usable = [f for f in self.key_filters if f.column in names]
        if not usable:
            return table
        try:
            return filter_table(table, usable, self.schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return table  # a file stores the column with another type: keep every row (sound)


def _rows_in(metadata: pq.FileMetaData, row_groups: Sequence[int]) -> int:
    return sum(metadata.row_group(i).num_rows for i in row_groups)


def _overlaps(keys: KeyRange, bounds: tuple[str | None, str | None]) -> bool:
    """Whether the inclusive range ``keys`` meets the half-open ``bounds``."""
    low, high = bounds
    return (high is None or keys[0] < high) and (low is None or keys[1] >= low)


def filter_versions(v: Versions, mask: pa.Array | np.ndarray) -> Versions:
    """The versions where ``mask`` holds."""
    mask_np = np.asarray(mask, dtype=bool)
    if mask_np.all():
        return v
    arrow_mask = pa.array(mask_np)
    is_delete = v.is_delete if np.ndim(v.is_delete) == 0 else np.asarray(v.is_delete)[mask_np]
    return Versions(
        v.keys.filter(arrow_mask),
        v.data.filter(arrow_mask) if v.data is not None else None,
        is_delete,
        v.ordering.filter(arrow_mask) if v.ordering is not None else None,
        v.default_delete.filter(arrow_mask) if v.default_delete is not None else None,
        v.owned,
    )


def slice_versions(v: Versions, start: int, stop: int) -> Versions:
    n = stop - start
    is_delete = v.is_delete if np.ndim(v.is_delete) == 0 else np.asarray(v.is_delete)[start:stop]
    return Versions(
        v.keys.slice(start, n),
        v.data.slice(start, n) if v.data is not None else None,
        is_delete,
        v.ordering.slice(start, n) if v.ordering is not None else None,
        v.default_delete.slice(start, n) if v.default_delete is not None else None,
        v.owned,  # (a slice shares buffers with the rest of the batch, but never rows)
    )


def take_versions(v: Versions, indices: pa.Array) -> Versions:
    is_delete = v.is_delete if np.ndim(v.is_delete) == 0 else np.asarray(v.is_delete)[np.asarray(indices)]
    return Versions(
        v.keys.take(indices),
        v.data.take(indices) if v.data is not None else None,
        is_delete,
        v.ordering.take(indices) if v.ordering is not None else None,
        v.default_delete.take(indices) if v.default_delete is not None else None,
    )


class ReadSpec(Record):
    """What every input of one family reads: the output fields and how versions are built."""

    fields: list[pa.Field]
    ordering_field: str | None
    keys: KeySpec
    prefilter: Prefilter
    decode_threads: bool = True  # off when tasks already run in parallel (threads would only contend)

    def __init__(self, fields: list[pa.Field], ordering_field: str | None, keys: KeySpec, prefilter: Prefilter,
                 decode_threads: bool = True) -> None:
        self._set(fields=fields, ordering_field=ordering_field, keys=keys, prefilter=prefilter,
                  decode_threads=decode_threads)

    def file_columns(self, available: Sequence[str]) -> list[str]:
        present = set(available)
        wanted = [f.name for f in self.fields if f.name in present]
        extra = [*self.keys.columns(available), self.ordering_field, SOFT_DELETE, *self.prefilter.columns]
        return list(dict.fromkeys([*wanted, *[c for c in extra if c and c in available]]))

    def versions(self, table: pa.Table, prefilter: bool = True, owned: bool = False,
                 key_bounds: tuple[int, int] | None = None) -> Versions:
        """The versions of ``table``'s rows (``owned``: its buffers were decoded for this read
        alone, see :class:`~pyhudi.read.merge.Versions`; ``key_bounds``: see ``KeySpec.keys``)."""
        if prefilter:
            table = self.prefilter.apply(table)
        keys = self.keys.keys(table, key_bounds)
        names = set(table.column_names)
        ordering = None
        if self.ordering_field and self.ordering_field in names:
            ordering = table.column(self.ordering_field).combine_chunks()
        deleted: bool | np.ndarray = False
        default_delete = None
        if SOFT_DELETE in names:  # Hudi's soft-delete marker column
            deleted = np.asarray(table.column(SOFT_DELETE).fill_null(False), dtype=bool)
            if ordering is not None:  # a marked record with an ordering value is an event-time delete
                default_delete = pa.array(deleted & np.asarray(ordering.is_null(), dtype=bool))
        v = Versions(keys, table.select([f.name for f in self.fields if f.name in names]), deleted, ordering,
                     default_delete, owned=owned)
        if not prefilter:
            return v
        mask = excluded_mask(keys, self.prefilter.excluded)
        in_range = self.prefilter.range_mask(keys)
        if in_range is not None:
            mask = in_range if mask is None else np.asarray(mask, dtype=bool) & in_range
        return filter_versions(v, mask) if mask is not None else v


class ParquetInput:
    """A Parquet base file or data block, read batch by batch (``file_key``: the base file's
    identity; ``block_key``: the log block's, :mod:`pyhudi.read.metadata_cache`)."""

    streamable = True
    file_key = None
    block_key = None
    is_base = False  # a file slice's base file (its rows may hold a key twice: see merge_versions)
    key_bounds = None  # lowest and highest integer key by the statistics (set once they prove codes fit)
    instant = None  # a base file's instant time
    block_instant = None  # a log block's writing instant (read.positions: a slice's first block as its base)
    written_positions = None  # a block's RECORD_POSITIONS header and base instant (read.positions)

    def __init__(self, parquet: pq.ParquetFile, label: str, spec: ReadSpec, schema: pa.Schema,
                 fingerprint: Callable[[], tuple | None] | None = None, sorted_cache: dict | None = None,
                 arrow_schema: pa.Schema | None = None) -> None:
        self.parquet, self.label, self.spec, self.schema = parquet, label, spec, schema
        self.fingerprint, self.sorted_cache = fingerprint, sorted_cache
        # (``schema_arrow`` is a property that converts the footer's schema on every call)
        self.arrow_schema = arrow_schema if arrow_schema is not None else parquet.schema_arrow
        self.leaves = parquet.metadata.schema.names
        available = self.arrow_schema.names
        self.soft_deletes = SOFT_DELETE in available
        self.columns = spec.file_columns(available)
        self.key_columns = spec.keys.columns(available)
        self.stats_key = spec.keys.stats_column(available, schema)
        self.row_groups = spec.prefilter.row_groups(parquet.metadata, self.stats_key)
        self.declared_sorted = self._declared_sorted()

    def supplies_codes(self) -> bool:
        """Whether this input reads key codes, and the file can supply them."""
        column = self.spec.keys.integer
        return column is not None and self._integer_keys_fit(column)

    def with_keys(self, keys: KeySpec) -> ParquetInput | None:
        """This input reading its keys per ``keys`` (None: the file cannot supply them — the
        integer key column is missing, or its statistics do not prove every value has a code)."""
        if keys.integer is not None and not self._integer_keys_fit(keys.integer):
            return None
        if keys == self.spec.keys:
            return self
        clone = copy.copy(self)
        clone.spec = self.spec.replace(keys=keys)
        clone.columns = clone.spec.file_columns(self.arrow_schema.names)
        clone.key_columns = keys.columns(self.arrow_schema.names)
        return clone

    def _identity(self, kind: str) -> tuple[str, tuple] | None:
        """Where the metadata cache keeps a ``kind`` of fact about this file (None: unknown file)."""
        if self.file_key is not None:
            return kind, self.file_key
        if self.block_key is not None:
            return f"{kind}@{self.block_key[1]}", self.block_key[0]
        return None

    def _integer_keys_fit(self, column: str) -> bool:
        """Whether the statistics prove every value of ``column`` has a key code (and then keep
        their bounds for the encoding, ``key_bounds``). The answer for the whole file is kept in
        the metadata cache (it holds for any of its row groups)."""
        identity = self._identity(f"codes:{column}")
        known = METADATA_CACHE.get(*identity) if identity is not None else None
        if known is not None and known[0]:
            self.key_bounds = known[1]
            return True
        whole = len(self.row_groups) == self.parquet.metadata.num_row_groups
        fit = self._statistics_fit(column)
        if identity is not None and whole and known is None:
            METADATA_CACHE.put(*identity, (fit, self.key_bounds if fit else None), 64)
        return fit

    def _statistics_fit(self, column: str) -> bool:
        arrow = self.arrow_schema
        if column not in arrow.names or not pa.types.is_integer(arrow.field(column).type):
            return False
        metadata = self.parquet.metadata
        leaf = self.leaves.index(column) if column in self.leaves else -1
        if leaf < 0:
            return False
        low = high = None
        for i in self.row_groups:
            stats = metadata.row_group(i).column(leaf).statistics
            if stats is None or not stats.has_null_count or stats.null_count or not stats.has_min_max:
                return False
            if not (isinstance(stats.min, int) and 0 <= stats.min and stats.max < MAX_INTEGER_KEY):
                return False
            low = stats.min if low is None else min(low, stats.min)
            high = stats.max if high is None else max(high, stats.max)
        self.key_bounds = (low, high) if low is not None else None
        return True

    def _declared_sorted(self) -> bool:
        """Whether every row group declares sorting on the record key (Parquet sorting_columns)."""
        if self.stats_key != RECORD_KEY:
            return False
        metadata = self.parquet.metadata
        leaf = self.leaves.index(RECORD_KEY) if RECORD_KEY in self.leaves else -1
        for i in self.row_groups:
            declared = metadata.row_group(i).sorting_columns
            if not declared or declared[0].column_index != leaf or declared[0].descending:
                return False
        return leaf >= 0

    def sorted_by_key(self, batch_size: int) -> bool:
        """Strictly increasing keys: declared by the writer (then checked batch by batch while
        streaming), else checked here by one pass over the key column alone."""
        if not self.row_groups or self.declared_sorted:
            return True
        key = None
        if self.fingerprint is not None and self.sorted_cache is not None:
            key = (self.fingerprint(), tuple(self.row_groups))
            if key[0] is not None and key in self.sorted_cache:
                return self.sorted_cache[key]  # same key bytes as a file already checked
        verdict = self._keys_increase(batch_size)
        if key is not None and key[0] is not None:
            self.sorted_cache[key] = verdict
        return verdict

    def _keys_increase(self, batch_size: int) -> bool:
        last = None
        for batch in self.parquet.iter_batches(batch_size=batch_size, row_groups=self.row_groups,
                                               columns=self.key_columns, use_threads=self.spec.decode_threads):
            keys = self.spec.keys.keys(pa.Table.from_batches([batch]))
            if not len(keys):
                continue
            if last is not None and not key_text(keys[0]) > last:
                return False
            if not strictly_increasing(keys):
                return False
            last = key_text(keys[-1])
        return True

    def chunks(self, batch_size: int, verify: bool = True) -> Iterator[Versions]:
        """The versions batch by batch (``verify``: check a declared key order on the way); the
        final batch says so (``Versions.last``)."""
        if not self.row_groups:
            return
        last = None
        left = _rows_in(self.parquet.metadata, self.row_groups)
        check = self._order_to_check(verify)
        for batch in self.parquet.iter_batches(batch_size=batch_size, row_groups=self.row_groups,
                                               columns=self.columns, use_threads=self.spec.decode_threads):
            left -= batch.num_rows
            bounds = self.key_bounds if self.spec.keys.integer is not None else None
            v = self.spec.versions(pa.Table.from_batches([batch]), owned=True, key_bounds=bounds)
            v.last = left <= 0
            if check:  # (the rows read must be sorted; others never merge)
                last = self._check_declared_order(v.keys, last)
            yield v
        self._order_checked(check)

    def _order_to_check(self, verify: bool) -> bool | tuple:
        """Whether to check the declared key order while reading (False: not declared, not
        asked, or verified by an earlier read of the whole file — a verdict of the metadata
        cache); a read of the whole file checks it for the cache (returns where to keep it)."""
        if not verify or not self.declared_sorted:
            return False
        identity = self._identity(ORDERED)
        if identity is None:
            return True
        if METADATA_CACHE.get(*identity):
            return False
        whole = self.spec.prefilter.unrestricted and len(self.row_groups) == self.parquet.metadata.num_row_groups
        return identity if whole else True

    def note_keys_increase(self) -> None:
        """Every key of this whole input was read (by a caller reading them its own way) and
        found strictly increasing: its declared order need not be checked again."""
        if self.declared_sorted and len(self.row_groups) == self.parquet.metadata.num_row_groups:
            identity = self._identity(ORDERED)
            if identity is not None:
                METADATA_CACHE.put(*identity, True, 16)

    @staticmethod
    def _order_checked(check: bool | tuple) -> None:
        if isinstance(check, tuple):  # every key of the file was read and found increasing
            METADATA_CACHE.put(*check, True, 16)

    def plain_tables(self, fields: list[pa.Field], batch_size: int) -> Iterator[pa.Table]:
        """The rows' ``fields`` alone, batch by batch: no keys, no versions (for an input whose
        rows are the result as they are, see ``ReadTask._keyless``)."""
        if not self.row_groups:
            return
        available = set(self.arrow_schema.names)
        names = [f.name for f in fields if f.name in available]
        schema = pa.schema(fields)
        if _rows_in(self.parquet.metadata, self.row_groups) <= batch_size:  # (one batch: no batch reader to set up)
            parts = [self.parquet.read_row_groups(self.row_groups, columns=names, use_threads=self.spec.decode_threads)]
        else:
            parts = self.parquet.iter_batches(batch_size=batch_size, row_groups=self.row_groups, columns=names,
                                              use_threads=self.spec.decode_threads)
        for batch in parts:
            yield _conformed([batch], fields, schema)

    def _check_declared_order(self, keys: pa.Array, last: str | None) -> str | None:
        if not len(keys):
            return last
        if (last is not None and not key_text(keys[0]) > last) or not strictly_increasing(keys):
            raise ReadError(f"{self.label} declares its rows sorted by {RECORD_KEY} but they are not "
                            "(a corrupt or foreign file); read it with strategy='hash'")
        return key_text(keys[-1])


def _conformed(parts: list, fields: list[pa.Field], schema: pa.Schema) -> pa.Table:
    """Tables or record batches of equal row counts (files read side by side) as one table of
    exactly ``fields``: each column from the first part holding it, missing ones null, cast."""
    first = parts[0]
    if len(parts) == 1 and first.schema.equals(schema, check_metadata=True):  # (the usual case)
        return first if isinstance(first, pa.Table) else pa.Table.from_batches([first])
    if any(part.num_rows != first.num_rows for part in parts):
        raise ReadError("base files with equal key columns hold different numbers of rows")
    present: dict = {}
    for part in parts:
        for name, column in zip(part.schema.names, part.columns):
            present.setdefault(name, column)
    arrays = []
    for f in fields:
        column = present.get(f.name)
        if column is None:
            arrays.append(pa.nulls(first.num_rows, f.type))
        else:
            arrays.append(column.cast(f.type) if column.type != f.type else column)
    return pa.Table.from_arrays(arrays, schema=schema)


class MemoryInput:
    """A block decoded whole (Avro data or deletes): one chunk of versions."""

    streamable = False
    block_key = None
    written_positions = None  # an Avro block's RECORD_POSITIONS header and base instant (read.positions)

    def __init__(self, versions: Versions, label: str) -> None:
        self.versions, self.label = versions, label

    @property
    def updates_only(self) -> bool:
        """A data block none of whose records deletes (no delete block, no soft delete)."""
        return self.versions.data is not None and not np.any(self.versions.is_delete)

    def plain_tables(self, fields: list[pa.Field], batch_size: int) -> Iterator[pa.Table]:
        """The block's ``fields`` alone (cast to their types), in batches: no keys."""
        data = self.versions.data
        arrays = [data.column(f.name).cast(f.type) if data.column(f.name).type != f.type else data.column(f.name)
                  for f in fields]
        table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
        for start in range(0, table.num_rows, batch_size):
            yield table.slice(start, batch_size)

    def with_keys(self, keys: KeySpec) -> MemoryInput | None:
        """This block with key codes (``keys.integer``), or None if a record's key has no code.
        Deletes of such keys are dropped: no row read with key codes has them."""
        if keys.integer is None:
            return self
        v = self.versions
        values, canonical = integer_keys(v.keys)
        if not canonical.all() and (v.data is not None or not np.all(v.is_delete)):
            return None
        v = Versions(values, v.data, v.is_delete, v.ordering, v.default_delete)
        converted = MemoryInput(filter_versions(v, canonical), self.label)
        converted.block_key, converted.written_positions = self.block_key, self.written_positions
        return converted

    def sorted_by_key(self, batch_size: int) -> bool:
        """Sort the block by key if its keys are distinct; False if a key repeats."""
        keys = self.versions.keys
        if strictly_increasing(keys):
            return True
        order = order_indices(keys)
        candidate = take_versions(self.versions, order)
        if not strictly_increasing(candidate.keys):
            return False
        self.versions = candidate
        return True

    def chunks(self, batch_size: int, verify: bool = True) -> Iterator[Versions]:
        if len(self.versions.keys):
            yield self.versions.replace(last=True)


def block_input(block: DataBlock | DeleteBlock, spec: ReadSpec, schema: pa.Schema, label: str,
                arrow_schema: pa.Schema | None = None) -> ParquetInput | MemoryInput:
    """The input for one visible data or delete block (``arrow_schema``: of a Parquet block, if known)."""
    if isinstance(block, DeleteBlock):
        deletes = block.deletes()
        default = deletes.column("is_default_ordering").combine_chunks()
        ordering = None  # default-ordering deletes win regardless of ordering values
        if spec.ordering_field and not pc.all(default).as_py():
            ordering = deletes.column("ordering_value").combine_chunks()
        keys = deletes.column("record_key").combine_chunks()
        v = Versions(keys, None, True, ordering, default)
        in_range = spec.prefilter.range_mask(keys)
        return MemoryInput(filter_versions(v, in_range) if in_range is not None else v, label)
    if isinstance(block, ParquetDataBlock):
        return ParquetInput(block.parquet_file(), label, spec, schema, arrow_schema=arrow_schema)
    if isinstance(block, AvroDataBlock):  # (string keys: converted to codes after a canonical check)
        spec = spec.replace(keys=spec.keys.replace(integer=None))
        available = block.arrow_schema().names
        table = block.read().select(spec.file_columns(available))
        return MemoryInput(spec.versions(table), label)
    raise LogFormatError(f"{label}: cannot read a {type(block).__name__}")

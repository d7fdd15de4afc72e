"""Base files of several families read side by side as one wide input (:class:`LockstepInput`).

Families whose base files hold the same keys in the same layout (equal key fingerprints, see
:class:`~pyhudi.read.family_reader.KeyFingerprint`) need no join: row i of one file is row i of
the others. The read task groups them (``ReadTask._lockstep``); the group merges by key with one
family's log blocks (:meth:`LockstepInput.chunks`) or, when the blocks' record positions are
known, without keys (:meth:`LockstepInput.plain_tables`, :mod:`pyhudi.read.positions`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from pyhudi.errors import ReadError
from pyhudi.read.merge import Versions
from pyhudi.read.sources import MemoryInput, ParquetInput, ReadSpec, _conformed, _rows_in

if TYPE_CHECKING:
    from pyhudi.read.family_reader import FamilyScan


class LockstepInput:
    """Base files of several families holding the same keys in the same layout (equal key
    fingerprints), read side by side as one wide input: the keys (and the lead family's ordering
    column) are decoded once, from the lead file; the other files contribute only their own
    columns.
    """

    streamable = True
    is_base = True

    def __init__(self, lead: ParquetInput, followers: list[ParquetInput]) -> None:
        self.lead, self.followers = lead, followers
        self.parquet, self.fingerprint, self.row_groups = lead.parquet, lead.fingerprint, lead.row_groups
        self.label = "+".join(m.label for m in [lead, *followers])
        fields, taken = [], set()
        for member in (lead, *followers):
            for f in member.spec.fields:
                if f.name not in taken:
                    taken.add(f.name)
                    fields.append(f)
        self.spec = ReadSpec(fields, lead.spec.ordering_field, lead.spec.keys, lead.spec.prefilter,
                             lead.spec.decode_threads)
        self.lead_columns = self.spec.file_columns([c for c in lead.columns])
        seen = set(self.lead_columns)
        self.follower_columns = []
        for member in followers:
            own = [f.name for f in member.spec.fields if f.name in set(member.columns) and f.name not in seen]
            seen.update(own)
            self.follower_columns.append(own)

    def sorted_by_key(self, batch_size: int) -> bool:
        return self.lead.sorted_by_key(batch_size)

    @property
    def members(self) -> list[ParquetInput]:
        return [self.lead, *self.followers]

    def plain_tables(self, fields: list[pa.Field], batch_size: int) -> Iterator[pa.Table]:
        """The wide rows' ``fields`` alone, batch by batch: no keys decoded (the files hold the
        same keys in the same order, so row i of one is row i of the others). Each column comes
        from the first member that stores it, as in :meth:`chunks`."""
        if not self.row_groups:
            return
        threads, taken, reads = self.spec.decode_threads, set(), []
        for member in self.members:  # (each reads the fields it stores that no earlier one read)
            stored = set(member.arrow_schema.names)
            names = [f.name for f in member.spec.fields if f.name in stored and f.name not in taken]
            taken.update(names)
            reads.extend([(member, names)] if names else [])
        schema = pa.schema(fields)
        if _rows_in(self.lead.parquet.metadata, self.row_groups) <= batch_size:  # (one batch: no batch readers)
            yield _conformed([m.parquet.read_row_groups(self.row_groups, columns=names, use_threads=threads)
                              for m, names in reads], fields, schema)
            return
        streams = [m.parquet.iter_batches(batch_size=batch_size, row_groups=self.row_groups, columns=names,
                                          use_threads=threads) for m, names in reads]
        followers = [_Rebatcher(stream, self.label) for stream in streams[1:]]
        for lead_batch in streams[0]:
            yield _conformed([lead_batch, *(f.take(lead_batch.num_rows) for f in followers)], fields, schema)
        if any(f.take(1).num_rows for f in followers):
            raise ReadError(f"{self.label}: base files with equal key columns hold different numbers of rows")

    def chunks(self, batch_size: int, verify: bool = True) -> Iterator[Versions]:
        if not self.row_groups:
            return
        threads = self.spec.decode_threads
        streams = [self.lead.parquet.iter_batches(batch_size=batch_size, row_groups=self.row_groups,
                                                  columns=self.lead_columns, use_threads=threads)]
        streams += [m.parquet.iter_batches(batch_size=batch_size, row_groups=self.row_groups, columns=cols,
                                           use_threads=threads)
                    for m, cols in zip(self.followers, self.follower_columns)
                    if cols]  # (a follower read for its keys alone adds nothing: pyarrow yields no rows for it)
        last = schema = None
        left = _rows_in(self.lead.parquet.metadata, self.row_groups)
        check = self.lead._order_to_check(verify)
        # pyarrow may cut the files' batches at different rows (page and row group boundaries
        # depend on the columns read): each follower is re-cut to the lead's batches
        followers = [_Rebatcher(stream, self.label) for stream in streams[1:]]
        for lead_batch in streams[0]:
            batches = [lead_batch, *(f.take(lead_batch.num_rows) for f in followers)]
            if schema is None:
                schema = pa.schema([f for b in batches for f in b.schema])
            left -= batches[0].num_rows
            v = self.spec.versions(pa.Table.from_arrays([c for b in batches for c in b.columns], schema=schema),
                                   owned=True)
            v.last = left <= 0
            if check:
                last = self.lead._check_declared_order(v.keys, last)
            yield v
        if any(f.take(1).num_rows for f in followers):
            raise ReadError(f"{self.label}: base files with equal key columns hold different numbers of rows")
        self.lead._order_checked(check)


class _Rebatcher:
    """A stream of record batches handed out ``n`` rows at a time, whatever its own batch sizes."""

    def __init__(self, stream: Iterator[pa.RecordBatch], label: str) -> None:
        self.stream, self.label = stream, label
        self.pending: list[pa.RecordBatch] = []
        self.rows = 0

    def take(self, n: int) -> pa.RecordBatch:
        while self.rows < n:
            batch = next(self.stream, None)
            if batch is None:
                if n == 1:
                    break  # (the end-of-stream check)
                raise ReadError(f"{self.label}: base files with equal key columns hold different numbers of rows")
            self.pending.append(batch)
            self.rows += batch.num_rows
        if not self.pending:
            return pa.record_batch([])
        if len(self.pending) == 1 and self.pending[0].num_rows == n:
            self.rows = 0
            return self.pending.pop()
        table = pa.Table.from_batches(self.pending)
        out = table.slice(0, n).combine_chunks().to_batches()
        rest = table.slice(n)
        self.pending = rest.combine_chunks().to_batches() if rest.num_rows else []
        self.rows = rest.num_rows
        return out[0] if out else pa.record_batch([], schema=table.schema)


def lockstep_key(scan: "FamilyScan", inputs: list) -> tuple | None:
    """What families read side by side share (``ReadTask._lockstep``): their first input's key
    fingerprint — or, for a slice without a base file, the identity of its first Parquet block —
    and its row groups read. None: the family is joined by key (its first input is not such a
    Parquet input, an input removes rows, or meta columns are asked for)."""
    lead = inputs[0] if inputs and isinstance(inputs[0], ParquetInput) else None
    if lead is None or any(removes_rows(source) for source in inputs) or \
            any(f.name.startswith("_hoodie_") for f in scan.fields):
        return None
    if lead.is_base:
        fingerprint = lead.fingerprint() if lead.fingerprint is not None else None
        return None if fingerprint is None else (fingerprint, tuple(lead.row_groups))
    return None if lead.block_key is None else ("block", lead.block_key, tuple(lead.row_groups))


def removes_rows(source: ParquetInput | MemoryInput) -> bool:
    """Whether an input can delete rows: delete blocks and soft-deleted records."""
    if isinstance(source, MemoryInput):
        return bool(np.any(source.versions.is_delete))
    return source.soft_deletes

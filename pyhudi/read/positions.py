"""Positional merging: where each record of a log block sits in its file slice's base file.

The usual file slice after an update is one base file plus log blocks that rewrite some of its
rows. Merging by key decodes the base file's key column and searches every block key in it —
for a read of two columns, more work than reading the columns themselves. Hudi 1.x writers, and
pyhudi's (:mod:`pyhudi.write.positions`), record the answer in the block header
(``RECORD_POSITIONS``: the row numbers in the base file of the block's records, and
``BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS``: which base file) so that readers merge by
position, the first read of a process included. Written positions are used when they name this
base file's instant, hold one distinct position per record of the block and each is a row of the
base file — Parquet blocks and Apache Hudi's Avro blocks alike; otherwise (and for blocks
written without them) pyhudi learns the same answer on the first read of a (block, base file)
pair, from their key columns. Either way the answer is kept in the
:data:`~pyhudi.read.metadata_cache.METADATA_CACHE`: it depends only on the two files' bytes,
which never change. Reads of the slice then read the requested columns of the base file
without its keys and write the blocks' rows over the rows at their positions: each column once
for all blocks (fixed-width columns by NumPy assignments in block order into one buffer, others
by one gather of each row's last write), not once per block.

The same holds for families read in lockstep (:class:`~pyhudi.read.sources.LockstepInput`: base
files with equal key columns, one family with log blocks — the usual multi-family table after
an update of one family): the blocks' positions in the lead family's base file are positions in
every member's rows, so a full read of such a table reads every base file without keys and
patches the updated family's columns, as a compacted table's read would, plus the blocks.

A file group written by an insert (the default: one full-row log file per new file group,
docs/format.md) has no base file until it is compacted: its first Parquet block plays the base
file's part (:func:`lead_key`; positions learnt from the keys, kept under that block's identity).
The other families' slices hold that same block, and no other, until one of them is updated:
read for their keys only, they add no row and are not read (:func:`~pyhudi.read.row_existence.read_by_another_family`),
so a read of the updated family's columns merges by position too.

The positional path is taken only where it gives the merge's exact result: one family (or one
lockstep group), its base file holding distinct keys, blocks whose keys are all base keys (no
new rows), nothing that deletes (no delete blocks, no soft deletes), the newer write winning
(commit-time ordering, or no ordering column), every row read (no key filter, key split or
incremental window) and no ``_hoodie_record_key`` asked for (the other meta columns are
returned as stored, a block's over the base's — what a compaction reads). A partial block
overwrites only the columns it carries. Positions are learnt for Parquet blocks only (an Avro
block merges by position only by its written ones).
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from pyhudi.errors import LogFormatError
from pyhudi.logformat.positions import decode_positions
from pyhudi.read.commit_codes import CommitCodes
from pyhudi.read.family_reader import FamilyScan
from pyhudi.read.keys import strictly_increasing
from pyhudi.read.metadata_cache import METADATA_CACHE
from pyhudi.read.lockstep import LockstepInput
from pyhudi.read.sources import MemoryInput, ParquetInput, Prefilter
from pyhudi.read.window import scatter, scatter_in_turn, subset_positions
from pyhudi.schema import META_FIELDS

LEARN_MAX_KEY_BYTES = 16 << 20
"""Learning holds a file's whole key column: base files and blocks whose decoded keys may take
more (by their footers) keep merging by key, in windows of bounded memory (DESIGN §6)."""
_STORED_META = frozenset(META_FIELDS) - {META_FIELDS[2]}
"""Meta columns a positional merge returns as stored (a block's values over the base's, like the
merge by key): all but ``_hoodie_record_key``, which the merge by key fills from its keys when
a file lacks it (no key is read here). A compaction's read of the updated family asks for the
commit time and sequence number."""
_NOT_WITHIN = "not-within"
"""The cached verdict for a block some of whose keys are not base keys (or not in key order)."""


def positional_stream(kept: list[tuple[FamilyScan, list]], prefilter: Prefilter, batch_size: int,
                      metrics: dict, commit_codes: bool = False) -> Iterator[pa.Table] | None:
    """The merged rows of a task's single family by record positions, batch by batch (tables of
    the family's fields, no key column); None when the positional path does not apply (the
    caller merges by key). ``commit_codes``: the commit time as dictionary codes where the files
    prove it constant (:mod:`pyhudi.read.commit_codes`)."""
    planned = positional_plan(kept, prefilter, metrics)
    if planned is None:
        return None
    scan, base, writes = planned
    codes = CommitCodes.of(base, writes, list(scan.fields)) if commit_codes else None
    return _patched(base, writes, list(scan.fields), batch_size, codes)


def positional_plan(kept: list[tuple[FamilyScan, list]], prefilter: Prefilter, metrics: dict
                    ) -> tuple[FamilyScan, ParquetInput | LockstepInput, list[tuple[ParquetInput, np.ndarray]]] | None:
    """The positional merge of a task's single family, decided without reading a data column:
    (scan, base, [(block, its positions in the base)]); None when the positional path does not
    apply. Shared by :func:`positional_stream` and engines that execute the merge themselves
    (:meth:`pyhudi.read.task.ReadTask.merge_recipe`)."""
    if not _applies(kept, prefilter):
        return None
    scan, (base, *blocks) = kept[0]
    positions = _positions(_lead(base), blocks, metrics)
    if positions is None:
        return None
    metrics["strategy.positions"] = metrics.get("strategy.positions", 0) + 1
    return scan, base, list(zip(blocks, positions))


def _applies(kept: list[tuple[FamilyScan, list]], prefilter: Prefilter) -> bool:
    if len(kept) != 1 or not prefilter.unrestricted:
        return False
    scan, inputs = kept[0]
    if len(inputs) < 2 or (scan.event_time and scan.ordering_field is not None):
        return False
    if any(f.name.startswith("_hoodie_") and f.name not in _STORED_META for f in scan.fields):
        return False  # (the record key is rebuilt from the merge's keys where a file lacks it)
    base, blocks = inputs[0], inputs[1:]
    members = base.members if type(base) is LockstepInput else [base]
    if not all(_whole_parquet(source) for source in (*members, *(b for b in blocks if type(b) is not MemoryInput))):
        return False
    if any(type(b) is MemoryInput and not (b.updates_only and b.written_positions) for b in blocks):
        return False  # (a decoded Avro block merges by position only by its written positions)
    if lead_key(members[0]) is None or any(b.block_key is None for b in blocks):
        return False
    return any(f.name in m.arrow_schema.names for m in members for f in scan.fields)


def lead_key(lead: ParquetInput) -> object:
    """What the blocks' positions are kept under: the base file's identity — or, for a file group
    without a base file whose rows were first written as one Parquet block (an insert into a new
    file group: a full-row log file, docs/format.md), that block's. None: unknown."""
    return lead.file_key if lead.is_base else lead.block_key


def _lead(base: ParquetInput | LockstepInput) -> ParquetInput:
    """The base file the blocks' positions refer to: a lockstep input's lead (the family with
    the log blocks; its followers hold the same keys in the same rows)."""
    return base.lead if type(base) is LockstepInput else base


def _whole_parquet(source) -> bool:
    """A Parquet input without soft deletes, every row group of it read."""
    return type(source) is ParquetInput and not source.soft_deletes and \
        len(source.row_groups) == source.parquet.metadata.num_row_groups


def blocks_within(lead: object, blocks: list, prefilter: Prefilter, metrics: dict) -> bool:
    """Whether every record of ``blocks`` (later Parquet blocks of a file group without a base
    file) is a record of ``lead`` (its first block): their positions in it are known — from the
    metadata cache, or learnt now from the key columns and kept, as a positional merge learns
    them. Then a family read only for its keys, whose slice is ``lead`` and ``blocks``, adds no
    row to a family that reads ``lead`` (:func:`~pyhudi.read.row_existence.read_by_another_family`)."""
    sources = [lead, *blocks]
    if not prefilter.unrestricted or not all(type(s) is ParquetInput and _whole_parquet(s) for s in sources):
        return False
    if lead.is_base or lead.block_key is None or any(b.block_key is None for b in blocks):
        return False
    keys = lead.spec.keys
    if keys.integer is not None and not all(s.supplies_codes() for s in sources):
        strings = keys.replace(integer=None)  # (the blocks' keys must read alike to be compared)
        sources = [s.with_keys(strings) for s in sources]
        if any(s is None for s in sources):
            return False
    return _positions(sources[0], sources[1:], metrics) is not None


def _rows(source: ParquetInput | MemoryInput) -> int:
    return len(source.versions.keys) if type(source) is MemoryInput else source.parquet.metadata.num_rows


# --------------------------------------------------------------------------- positions
def _positions(base: ParquetInput, blocks: list[ParquetInput], metrics: dict) -> list[np.ndarray] | None:
    """Each block's record positions in ``base`` (increasing): from the cache, from the block's
    ``RECORD_POSITIONS`` header, or learnt now from the key columns."""
    identity = lead_key(base)
    known = [METADATA_CACHE.positions(block.block_key, identity) for block in blocks]
    if any(isinstance(p, str) for p in known):
        return None
    if all(p is not None for p in known):
        return known
    known = [p if p is not None else _written(base, block, metrics) for p, block in zip(known, blocks)]
    if all(p is not None for p in known):
        return known
    if any(p is None and type(b) is MemoryInput for p, b in zip(known, blocks)):
        return None  # (positions are learnt for Parquet blocks only)
    rows = base.parquet.metadata.num_rows
    for block, cached in zip(blocks, known):
        if cached is None and block.parquet.metadata.num_rows > rows:  # (more keys than the base)
            METADATA_CACHE.put_positions(block.block_key, identity, _NOT_WITHIN)
            return None
    if any(_key_bytes(source) > LEARN_MAX_KEY_BYTES for source in (base, *blocks)):
        return None
    metrics["positions_learnt"] = metrics.get("positions_learnt", 0) + 1
    base_keys = _keys_of(base)
    if not strictly_increasing(base_keys):  # (a key stored twice: each copy merges on its own)
        for block in blocks:
            METADATA_CACHE.put_positions(block.block_key, identity, _NOT_WITHIN)
        return None
    base.note_keys_increase()
    out = []
    for block, cached in zip(blocks, known):
        found = cached if cached is not None else _learn(base_keys, block)
        if found is not None:  # (increasing positions in increasing base keys: block keys increase)
            block.note_keys_increase()
        METADATA_CACHE.put_positions(block.block_key, identity, _NOT_WITHIN if found is None else found)
        if found is not None and base.is_base:  # (every key of the block is a base key: it adds no row)
            METADATA_CACHE.put_block_within(block.block_key, identity)
        out.append(found)
    return None if any(p is None for p in out) else out


def _written(base: ParquetInput, block: ParquetInput, metrics: dict) -> np.ndarray | None:
    """The positions a block's writer recorded in its header, if they are usable: they refer to
    this base file (its instant time) — or, in a slice without one, to its first block (that
    block's instant, :mod:`pyhudi.write.positions`) —, there is one per record of the block, each
    is a row of the base, and no two are equal. The i-th record of the block then lands on the
    i-th smallest position (writers list a block's records in position order). Kept in the
    metadata cache like learnt positions; None: learn them from the keys instead."""
    written = block.written_positions
    instant = base.instant if base.is_base else base.block_instant
    if written is None or instant is None or written[1] != instant:
        return None
    try:
        positions = decode_positions(written[0])
    except LogFormatError:
        return None  # (a header this reader cannot use: the key merge stays exact)
    rows = base.parquet.metadata.num_rows
    if len(positions) != _rows(block) or (len(positions) and positions[-1] >= rows):
        return None
    found = positions.astype(np.int32 if rows < 2**31 else np.int64)
    metrics["positions_written"] = metrics.get("positions_written", 0) + 1
    METADATA_CACHE.put_positions(block.block_key, lead_key(base), found)
    if base.is_base:  # (every record of the block is a base row: it adds no row; see _positions)
        METADATA_CACHE.put_block_within(block.block_key, base.file_key)
    return found


def _learn(base_keys: pa.Array, block: ParquetInput) -> np.ndarray | None:
    """The rows of ``base_keys`` holding ``block``'s keys, if they all are there and the block
    lists them in key order (one record per key)."""
    found = subset_positions(base_keys, _keys_of(block))
    if found is None or (len(found) > 1 and not (found[1:] > found[:-1]).all()):
        return None
    return found.astype(np.int32 if len(base_keys) < 2**31 else np.int64)


def _key_bytes(source: ParquetInput) -> int:
    """An upper estimate, from the footer, of the memory of a Parquet input's decoded keys."""
    metadata = source.parquet.metadata
    leaves = {name: i for i, name in enumerate(metadata.schema.names)}
    total = 0
    for i in range(metadata.num_row_groups):
        group = metadata.row_group(i)
        for name in source.key_columns:
            size = group.column(leaves[name]).total_uncompressed_size if name in leaves else 0
            total += max(size, 8 * group.num_rows) + 4 * group.num_rows  # (values, string offsets)
    return total


def _keys_of(source: ParquetInput) -> pa.Array:
    """Every record key of a Parquet input, read the way its merge would read them."""
    table = source.parquet.read_row_groups(source.row_groups, columns=source.key_columns,
                                           use_threads=source.spec.decode_threads)
    bounds = source.key_bounds if source.spec.keys.integer is not None else None
    return source.spec.keys.keys(table, bounds)


# --------------------------------------------------------------------------- merge
class _BlockRows:
    """A block's rows with their base positions, handed out in position order."""

    def __init__(self, block: ParquetInput, positions: np.ndarray, fields: list[pa.Field], batch_size: int) -> None:
        data = block.versions.data if type(block) is MemoryInput else None
        available = set(data.column_names if data is not None else block.arrow_schema.names)
        carried = [f for f in fields if f.name in available]  # (a partial block keeps the others)
        self.positions, self.taken, self.carries = positions, 0, bool(carried)
        self.tables = block.plain_tables(carried, batch_size) if carried else iter(())
        self.pending: pa.Table | None = None

    def below(self, end: int) -> tuple[np.ndarray, pa.Table] | None:
        """The next rows whose positions are below ``end``: (positions, rows)."""
        stop = int(np.searchsorted(self.positions, end, side="left"))
        if stop <= self.taken:
            return None
        parts, want = [], stop - self.taken
        while want:
            if self.pending is None or not self.pending.num_rows:
                self.pending = next(self.tables)
            piece = self.pending.slice(0, want)
            self.pending = self.pending.slice(piece.num_rows)
            parts.append(piece)
            want -= piece.num_rows
        at = self.positions[self.taken:stop]
        self.taken = stop
        rows = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
        return at, rows


def _patched(base: ParquetInput | LockstepInput, blocks: list[tuple[ParquetInput, np.ndarray]],
             fields: list[pa.Field], batch_size: int, codes: CommitCodes | None = None) -> Iterator[pa.Table]:
    """The base file's rows in batches, each with the blocks' rows written over it in order
    (with ``codes``, the commit time is not read: built from them, at its place in ``fields``)."""
    at_codes = None
    if codes is not None:
        at_codes = [f.name for f in fields].index(codes.field.name)
        fields = [f for f in fields if f.name != codes.field.name]
    readers = [_BlockRows(block, positions, fields, batch_size) for block, positions in blocks]
    readers = [reader for reader in readers if reader.carries]  # (others rewrite no column read here)
    start = 0
    for table in base.plain_tables(fields, batch_size):
        end = start + table.num_rows
        updates = [update for update in (reader.below(end) for reader in readers) if update is not None]
        if updates:
            table = _overwrite(table, [(at - start, rows) for at, rows in updates])
        if codes is not None:
            table = table.add_column(at_codes, codes.field, codes.column(start, end))
        start = end
        yield table


def _overwrite(table: pa.Table, updates: list[tuple[np.ndarray, pa.Table]]) -> pa.Table:
    """``table`` with every block's rows written over the rows at their positions, in block
    order (a later block wins a row both write; the columns a block lacks keep their values).

    Each column is patched once, whatever the number of blocks: a fixed-width one by assigning
    the blocks' values in block order into its one buffer (:func:`scatter_in_turn`), the others
    by gathering each row's last write (:func:`_combined_writes`, shared by the columns the same
    blocks carry) and one scatter. The base batch was decoded for this read alone: patched in
    place."""
    where = {name: i for i, name in enumerate(table.column_names)}
    carriers: dict[str, list[int]] = {}
    for j, (_, rows) in enumerate(updates):
        for name in rows.column_names:
            if name in where:
                carriers.setdefault(name, []).append(j)
    groups: dict[tuple[int, ...], list[str]] = {}
    for name, writers in carriers.items():
        groups.setdefault(tuple(writers), []).append(name)
    arrays = table.columns
    for writers, names in groups.items():  # (usually one: every block carries the same columns)
        others = []
        for name in names:
            i = where[name]
            writes = [(updates[j][0], updates[j][1].column(name)) for j in writers]
            patched = scatter_in_turn(arrays[i], writes, in_place=True)  # (fixed-width columns)
            if patched is None:
                others.append(name)
            else:
                arrays[i] = patched
        if others:  # (the other columns: the blocks' last writes gathered, then one scatter each)
            at, values = _combined_writes(updates, writers, others)
            for name, column in zip(others, values.columns):
                arrays[where[name]] = scatter(arrays[where[name]], at, _contiguous(column), in_place=True)
    return pa.Table.from_arrays(arrays, schema=table.schema)


def _combined_writes(updates: list[tuple[np.ndarray, pa.Table]], writers: tuple[int, ...],
                     names: list[str]) -> tuple[np.ndarray, pa.Table]:
    """The rows the blocks ``writers`` write (distinct, increasing) and the last value written
    to each, for the columns ``names``."""
    at, winners = _last_writes([updates[j][0] for j in writers])
    parts = [updates[j][1].select(names) for j in writers]
    values = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
    return at, values.take(winners) if winners is not None else values


def _last_writes(positions: list[np.ndarray]) -> tuple[np.ndarray, pa.Array | None]:
    """Blocks' positions (each increasing) combined: the distinct positions, increasing, and
    for each the index of its last write in the blocks' concatenated rows (None: one block,
    its rows as they are)."""
    if len(positions) == 1:
        return positions[0], None
    at = np.concatenate(positions)
    order = np.argsort(at, kind="stable")  # (equal positions keep block order: the last is the newest)
    ordered = at[order]
    last = np.ones(len(at), dtype=bool)
    last[:-1] = ordered[1:] != ordered[:-1]
    return ordered[last], pa.array(order[last])


def _contiguous(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return column

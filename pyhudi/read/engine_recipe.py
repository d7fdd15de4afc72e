"""A read task's positional merge as a recipe for an engine that reads Parquet itself.

The kernel merges a file slice by record positions when it can (:mod:`pyhudi.read.positions`):
the base rows as stored, each log block's rows written over the rows at their positions. An
engine with its own Parquet reader — Spark's, through pyhudi's JVM merge reader
(:mod:`pyhudi.spark.merge_scan`) — can execute the same merge without the rows ever passing
through Python, given what to read: the kernel decides, the engine copies values.

:func:`engine_recipe` gives that decision for one task, from footers and block headers only: the
base reads (files, or an insert's first Parquet block, and which columns each supplies), the
blocks with their positions, and the number of rows. Beyond the kernel's own positional path it
covers a file group whose several families were updated since the last compaction, when all
their bases hold the same keys in the same rows (their key fingerprints agree, DESIGN §4): each
family's blocks then write only that family's columns at their positions, which is the join by
key the kernel would do — no family adds or removes a row. It also asks what an engine needs
that the kernel does not: every column stored with the read's type (the kernel casts, an engine
reads as stored) and bases whose row groups have the same sizes (an engine reads them in
lockstep, row group by row group). Otherwise it says why not, for ``explain``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from pyhudi.read.family_reader import FamilyScan
from pyhudi.read.lockstep import LockstepInput, lockstep_key
from pyhudi.read.positions import lead_key, positional_plan
from pyhudi.read.replay import BaseRead, BlockRead, MergeRecipe, Recipe, recipe_of
from pyhudi.read.sources import ParquetInput, Prefilter
from pyhudi.schema import stored_type

Entry = tuple[FamilyScan, ParquetInput | LockstepInput, list]
"""One family's (or lockstep group's) part of the merge: (scan, base, [(block, positions)])."""


def engine_recipe(kept: list[tuple[FamilyScan, list]], prefilter: Prefilter, keyless: bool, settings: Any,
                  metrics: dict) -> MergeRecipe | str:
    """The recipe of a task's reduced inputs ``kept`` (``ReadTask._kept``), or why there is none.
    ``keyless``: the task reads its one input as it is (``ReadTask._keyless``)."""
    entries = positional_entries(kept, prefilter, keyless, settings, metrics)
    if isinstance(entries, str):
        return entries
    reads: list[BaseRead | BlockRead] = []
    blocks: list[BlockRead] = []
    positions: list = []
    fields: list[pa.Field] = []
    sources: list = []
    taken: set[str] = set()
    for scan, base, writes in entries:
        members = _members(base)
        if any(len(m.row_groups) != m.parquet.metadata.num_row_groups for m in members):
            return "statistics pruned row groups (not every row is read)"
        recipe = recipe_of(base, [block for block, _ in writes], list(scan.fields))
        if recipe is None:
            return "a block has no replayable byte range (an Avro block)"
        by_block = {block.block_key: at for block, at in writes}
        for read in recipe.bases:
            read = _without(read, taken)
            if read is not None:
                reads.append(read)
                taken.update(_read_names(read))
        blocks += recipe.blocks
        positions += [by_block[b.block_key] for b in recipe.blocks]
        names = {f.name for f in fields}
        fields += [f for f in scan.fields if f.name not in names]
        sources += [*members, *(block for block, _ in writes)]
    if not _stored_as_read(sources, fields):
        return "a file stores a column with another type than the read's (schema evolution)"
    sizes = {_row_group_sizes(m) for _, base, _ in entries for m in _members(base)}
    if len(sizes) != 1:
        return "the bases' row groups differ in size"
    lead = _members(entries[0][1])[0]
    combined = Recipe(tuple(reads), lead_key(lead), tuple(blocks), tuple(fields), settings.decode_threads, ())
    return MergeRecipe(combined, tuple(positions), sum(sizes.pop()))


def positional_entries(kept: list[tuple[FamilyScan, list]], prefilter: Prefilter, keyless: bool, settings: Any,
                       metrics: dict) -> list[Entry] | str:
    """The task's families as positional merges, each one (or a base read as it is), all their
    bases holding the same keys in the same rows; else why not."""
    if len(kept) == 1:
        positional = positional_plan(kept, prefilter, metrics)
        if positional is not None:
            return [positional]
        if keyless:
            scan, (base,) = kept[0]
            return [(scan, base, [])]
        # (else perhaps one lockstep group of aligned family files, read as they are)
    if not prefilter.unrestricted:
        return "merges by key: a key filter or a key-range split"
    if any(f.name.startswith("_hoodie_") for f in settings.output):
        return "merges by key: meta columns asked of several families"
    entries: list[Entry] = []
    aligned = set()
    for scan, inputs in kept:
        if not inputs:  # (a family with no file here, added by an ALTER: it adds no row)
            if any(f.name not in settings.keys.fields for f in scan.fields):
                return "merges by key: a family without files in the file group (its columns are nulls)"
            continue
        if len(inputs) > 1:
            positional = positional_plan([(scan, inputs)], prefilter, metrics)
            if positional is None:
                return "merges by key: blocks add or delete rows, order by event time, or have no positions"
            entries.append(positional)
        elif type(inputs[0]) in (ParquetInput, LockstepInput) and not any(m.soft_deletes for m in _members(inputs[0])):
            entries.append((scan, inputs[0], []))
        else:
            return "merges by key: a base that deletes rows"
        aligned.add(lockstep_key(scan, [_members(inputs[0])[0]]))
    if len(aligned) != 1 or None in aligned:
        return "merges by key: families whose files do not hold the same keys in the same rows"
    return entries


def _members(base: ParquetInput | LockstepInput) -> list[ParquetInput]:
    return base.members if type(base) is LockstepInput else [base]


def _row_group_sizes(source: ParquetInput) -> tuple[int, ...]:
    metadata = source.parquet.metadata
    return tuple(metadata.row_group(i).num_rows for i in range(metadata.num_row_groups))


def _read_names(read: BaseRead | BlockRead) -> list[str]:
    """The columns a recipe's base read supplies."""
    return list(read.names) if type(read) is BaseRead else [f.name for f in read.fields]


def _without(read: BaseRead | BlockRead, taken: set[str]) -> BaseRead | BlockRead | None:
    """A recipe's base read without the columns another read already supplies (the record key,
    read by every family); None when nothing is left."""
    names = [n for n in _read_names(read) if n not in taken]
    if len(names) == len(_read_names(read)):
        return read
    if not names:
        return None
    if type(read) is BaseRead:
        at = [read.names.index(n) for n in names]
        leaves = tuple(read.leaves[i] for i in at) if read.leaves is not None else None
        return BaseRead(read.relpath, read.file_key, read.memory_map, tuple(names), leaves, read.row_groups)
    at = [i for i, f in enumerate(read.fields) if f.name in names]
    leaves = tuple(read.leaves[i] for i in at) if read.leaves is not None else None
    return BlockRead(read.block_key, read.relpath, read.log_size, read.memory_map, read.content_offset,
                     read.content_length, tuple(read.fields[i] for i in at), leaves)


def _stored_as_read(sources: list, fields: Sequence[pa.Field]) -> bool:
    """Whether every one of ``fields`` a source stores has exactly the field's type there."""
    for source in sources:
        stored = source.arrow_schema
        for f in fields:
            i = stored.get_field_index(f.name)
            if i >= 0 and stored_type(stored.field(i).type) != stored_type(f.type):
                return False
    return True

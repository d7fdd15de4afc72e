"""A read task's positional merge, replayed: a warm read does only the column reads.

The first collected read of a file group that merges by record positions
(:mod:`pyhudi.read.positions`) works out, in Python, what it has to read: which base files (and
which of their columns), which log blocks are visible, that no family adds rows, that the
blocks' positions are usable. For a read of two columns that decision costs as much as the
reads themselves — and it is the same at every read of the same file slices, since it depends
only on the files' bytes (immutable by their listed path, size and modification time: see
:mod:`pyhudi.read.metadata_cache`) and on the timeline's visible instants.

The same holds for a file group read as one base file alone (``ReadTask._keyless``): its
warm read is the base file's column reads.

So the task keeps a :class:`Recipe` of its reads (paths, columns, block byte ranges) beside
itself. The kept scan plan of a table handle (:func:`pyhudi.read.plan.plan_scan`) is reused only
while the timeline lists the same instant files and the data files are listed alike, so its
tasks' recipes live exactly as long as the decision stays true: another writer's commit, a
clean, a rollback or a file rewritten from outside makes a new plan, with new tasks and no
recipe. A replay still takes the blocks' footers and positions from the metadata cache, and
falls back to the full read when they are not there (the cache was cleared, or is off): the
full read checks positions again before using them.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, NamedTuple
import numpy as np
import pyarrow as pa

from pyhudi.logformat.reader import FileSource
from pyhudi.read.family_reader import LOCAL_BUFFER, OpenedBase
from pyhudi.read import kept_readers
from pyhudi.read.kept_readers import KeptReaders
from pyhudi.read.lockstep import LockstepInput
from pyhudi.read.metadata_cache import METADATA_CACHE, BlockKey, FileKey
from pyhudi.read.positions import _overwrite, lead_key
from pyhudi.read.sources import ParquetInput, _conformed
from pyhudi.storage.fs import Storage
from pyhudi.storage.parquet import parquet_file, reader_class
from pyhudi.value import Value

if TYPE_CHECKING:
    import pyarrow.parquet as pq


class BaseRead(Value):
    """Columns of one base file, every row group."""

    relpath: str
    file_key: FileKey
    memory_map: bool
    names: tuple[str, ...]
    leaves: tuple[int, ...] | None  # (the names' leaf columns, when each is one: see _LeafReader)
    row_groups: tuple[int, ...]

    def __init__(self, relpath: str, file_key: FileKey, memory_map: bool, names: tuple[str, ...],
                 leaves: tuple[int, ...] | None, row_groups: tuple[int, ...]) -> None:
        self._set(relpath=relpath, file_key=file_key, memory_map=memory_map, names=names,
                  leaves=leaves, row_groups=row_groups)


class BlockRead(Value):
    """Columns of one Parquet log block: its content's byte range in its log file."""

    block_key: BlockKey
    relpath: str
    log_size: int
    memory_map: bool
    content_offset: int
    content_length: int
    fields: tuple[pa.Field, ...]
    leaves: tuple[int, ...] | None

    def __init__(self, block_key: BlockKey, relpath: str, log_size: int, memory_map: bool,
                 content_offset: int, content_length: int, fields: tuple[pa.Field, ...],
                 leaves: tuple[int, ...] | None) -> None:
        self._set(block_key=block_key, relpath=relpath, log_size=log_size, memory_map=memory_map,
                  content_offset=content_offset, content_length=content_length, fields=fields,
                  leaves=leaves)


class Recipe(Value):
    """What a positional read of one file group reads, and the metrics its full read counted.
    ``bases`` are base files' reads — or one log block's, for a file group whose rows were first
    written as a block (no base file: :func:`~pyhudi.read.positions.lead_key`, ``base_key``)."""

    _value_uncompared = ("readers",)
    bases: tuple[BaseRead | BlockRead, ...]
    base_key: FileKey | BlockKey
    blocks: tuple[BlockRead, ...]
    fields: tuple[pa.Field, ...]
    threads: bool
    metrics: tuple[tuple[str, int], ...]
    readers: KeptReaders

    def __init__(self, bases: tuple[BaseRead | BlockRead, ...], base_key: FileKey | BlockKey,
                 blocks: tuple[BlockRead, ...],
                 fields: tuple[pa.Field, ...], threads: bool, metrics: tuple[tuple[str, int], ...],
                 readers: KeptReaders | None = None) -> None:
        self._set(bases=bases, base_key=base_key, blocks=blocks, fields=fields, threads=threads,
                  metrics=metrics, readers=KeptReaders() if readers is None else readers)

    def with_metrics(self, metrics: tuple[tuple[str, int], ...]) -> Recipe:
        """The same reads (and kept readers) with the metrics a full read counted."""
        return Recipe(self.bases, self.base_key, self.blocks, self.fields, self.threads, metrics, self.readers)


class MergeRecipe(NamedTuple):
    """A task's positional merge (or lone base read) for an engine that reads Parquet itself:
    the recipe, each of its blocks' positions in the base rows (aligned with ``recipe.blocks``)
    and the number of base rows (every base read of the recipe holds exactly these rows)."""

    recipe: Recipe
    positions: tuple[np.ndarray, ...]
    rows: int


def recipe_of(base: ParquetInput | LockstepInput, blocks: list, fields: list[pa.Field]) -> Recipe | None:
    """The reads of a positional merge of ``blocks`` over ``base`` — or of ``base`` alone, read as it
    is (``ReadTask._keyless``) — None when one of them cannot be replayed (a decoded Avro block, a
    block without a known byte range)."""
    lockstep = type(base) is LockstepInput
    members = base.members if lockstep else [base]
    reads, taken = [], set()
    for member in members:  # (exactly as plain_tables reads them: see LockstepInput.plain_tables)
        stored = set(member.arrow_schema.names)
        own = member.spec.fields if lockstep else fields  # (a file may store stale copies of others' columns)
        names = [f.name for f in own if f.name in stored and f.name not in taken]
        taken.update(names)
        if not member.is_base:  # (a file group's first block as its rows: read.positions)
            read = _block_read(member, [f for f in own if f.name in names])
            if read is None:
                return None
            reads.append(read)
            continue
        where = getattr(member, "opened_as", None)
        if where is None or member.file_key is None or not member.row_groups:
            return None
        if names:
            reads.append(BaseRead(where[0], member.file_key, where[1], tuple(names),
                                  _leaves(member.parquet, names), tuple(member.row_groups)))
    if not reads:
        return None
    block_reads = []
    for block in blocks:
        stored = set(block.arrow_schema.names) if type(block) is ParquetInput else set()
        read = _block_read(block, [f for f in fields if f.name in stored])
        if read is None:
            return None
        if read.fields:  # (a block carrying none of the columns read changes nothing here)
            block_reads.append(read)
    lead = members[0]
    return Recipe(tuple(reads), lead_key(lead), tuple(block_reads), tuple(fields), lead.spec.decode_threads, ())


def _block_read(block: object, fields: list[pa.Field]) -> BlockRead | None:
    """The read of ``fields`` of a Parquet log block, every row group (None: not replayable —
    a decoded Avro block, or no known byte range)."""
    where = getattr(block, "content_range", None)
    if type(block) is not ParquetInput or where is None or block.block_key is None:
        return None
    return BlockRead(block.block_key, *where, tuple(fields), _leaves(block.parquet, [f.name for f in fields]))


def replay(recipe: Recipe, storage: Storage, files: ExitStack) -> pa.Table | None:
    """The merged rows of the recipe's reads (one table), or None when the metadata cache no
    longer holds a block's footer or positions (the caller does the full read)."""
    updates = []
    for block in recipe.blocks:  # (first: nothing is read if a fact is missing)
        positions = METADATA_CACHE.positions(block.block_key, recipe.base_key)
        footer = _block_footer(block)
        if type(positions) is not np.ndarray or footer is None:
            return None
        updates.append((positions, footer))
    lead_footers = {read.block_key: _block_footer(read) for read in recipe.bases if type(read) is BlockRead}
    if any(footer is None for footer in lead_footers.values()):
        return None
    tables = []
    for read in recipe.bases:
        if type(read) is BlockRead:
            tables.append(_read_block(recipe, storage, files, read, lead_footers[read.block_key]))
            continue
        if read.leaves is not None and not read.memory_map and storage.is_local and kept_readers.ENABLED:
            tables.append(_kept_read(recipe, ("base", read.file_key), lambda r=read: _open_base(storage, r),
                                     list(read.row_groups), read.leaves))
            continue
        parquet = OpenedBase(storage, read.relpath, files, read.memory_map, read.file_key).parquet
        tables.append(parquet.read_row_groups(list(read.row_groups), columns=list(read.names),
                                              use_threads=recipe.threads))
    table = _conformed(tables, list(recipe.fields), pa.schema(list(recipe.fields)))
    patches = [(positions, _read_block(recipe, storage, files, block, footer))
               for block, (positions, footer) in zip(recipe.blocks, updates)]
    return _overwrite(table, patches) if patches else table


def _block_footer(block: BlockRead) -> pq.FileMetaData | None:
    """The block's Parquet footer, as the full read left it in the metadata cache."""
    return METADATA_CACHE.get(f"block@{block.block_key[1]}", block.block_key[0])


def _read_block(recipe: Recipe, storage: Storage, files: ExitStack, block: BlockRead,
                footer: pq.FileMetaData) -> pa.Table:
    """Every row of a log block's Parquet content, of the block read's fields."""
    fields = list(block.fields)
    row_groups = list(range(footer.num_row_groups))
    if block.leaves is not None and storage.is_local and kept_readers.ENABLED:  # (mapped or not: _open_block maps)
        rows = _kept_read(recipe, ("block", block.block_key), lambda b=block, f=footer: _open_block(storage, b, f),
                          row_groups, block.leaves)
    else:
        source = FileSource(storage, block.relpath, size=block.log_size, memory_map=block.memory_map)
        files.callback(source.close)
        parquet = parquet_file(source.open_range(block.content_offset, block.content_length), metadata=footer,
                               pre_buffer=False)
        rows = parquet.read_row_groups(row_groups, columns=[f.name for f in fields], use_threads=recipe.threads)
    return _conformed([rows], fields, pa.schema(fields))


def _kept_read(recipe: Recipe, key: tuple, open_: Callable[[], tuple], row_groups: list[int],
               leaves: tuple[int, ...]) -> pa.Table:
    """Leaf columns read through the recipe's kept reader of a file (opened if none is idle)."""
    opened = recipe.readers.borrow(key, open_)
    try:
        table = opened[0].reader.read_row_groups(row_groups, column_indices=list(leaves), use_threads=recipe.threads)
    except BaseException:
        opened[1].close()
        raise
    recipe.readers.give_back(key, opened)
    return table


def _open_base(storage: Storage, read: BaseRead) -> tuple[pq.ParquetFile, pa.NativeFile]:
    footer = METADATA_CACHE.footer(read.file_key)
    source = storage.open_input(read.relpath)
    try:
        reader = _LeafReader(source, buffer_size=LOCAL_BUFFER, pre_buffer=False, metadata=footer)
    except BaseException:
        source.close()
        raise
    if footer is None:
        METADATA_CACHE.put_footer(read.file_key, reader.metadata)
    return reader, source


def _open_block(storage: Storage, block: BlockRead, footer: pq.FileMetaData) -> tuple[pq.ParquetFile, FileSource]:
    """A kept reader of a local block's content: over a mapping of its log file, so Parquet reads
    it as zero-copy slices, without going through Python for each column chunk (an unmapped
    range is a Python file object to Arrow: a call and two copies per chunk read). The reader
    is kept between reads, so the file is mapped once, and only the pages of the columns read
    are ever touched."""
    source = FileSource(storage, block.relpath, size=block.log_size, memory_map=True)
    try:
        reader = _LeafReader(source.open_range(block.content_offset, block.content_length), metadata=footer,
                             pre_buffer=False)
    except BaseException:
        source.close()
        raise
    return reader, source


class _LeafReader(reader_class()):  # type: ignore[misc]
    """A Parquet file read by leaf column indices worked out beforehand (a recipe's): opening it
    skips the map from column names to leaves that ``ParquetFile`` builds, a Python loop over
    every leaf of the footer — about as costly as decoding a small column chunk."""

    def _build_nested_paths(self) -> dict:
        return {}  # (never read by name: see _kept_read)


def _leaves(parquet: pq.ParquetFile, names: list[str]) -> tuple[int, ...] | None:
    """The leaf column of each name, from the map the full read's ``ParquetFile`` built when it
    opened the file; None when a name is not one leaf (a nested field) or the map is not there
    (then the replay reads by names)."""
    by_prefix = getattr(parquet, "_nested_paths_by_prefix", None)
    found = [by_prefix.get(name) for name in names] if isinstance(by_prefix, dict) else [None]
    if any(leaves is None or len(leaves) != 1 for leaves in found):
        return None
    return tuple(leaves[0] for leaves in found)

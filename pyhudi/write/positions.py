"""Record positions written with a log block (Hudi 1.x ``RECORD_POSITIONS`` headers).

An append to a file group whose family has a base file looks the block's keys up in that base
file's key column. When every record of the block updates a base row, and the block (sorted by
key) lists them in the base file's row order, the block's header records those rows
(``RECORD_POSITIONS``) and the base file's instant (``BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS``).
A reader then merges the block by position, without decoding the base file's keys
(:mod:`pyhudi.read.positions`), the first read in a process included. Blocks that insert a key,
or whose order differs from the base's, carry no positions (readers merge them by key), as
Apache Hudi's writers do. Integer keys are searched as key codes; those without one (negative
ids, 18-19 digit snowflake ids) as their decimal spellings, the record keys — positions are row
numbers, whatever the keys compare as. The lookup reads one column of the base file; it is
skipped when that column would take more memory than :data:`MAX_LOOKUP_BYTES` (by the footer),
and the column is kept in the process's metadata cache for the next update of the same base file.

A file group written by an insert has no base file until it is compacted: its rows are the first
Parquet block of its first log file (a full-row log file, docs/format.md), which readers merge
later blocks onto as they would onto a base file (:func:`pyhudi.read.positions.lead_key`). An
update of such a slice records its positions in that block, and names the block's instant as the
"base file" instant: the insert's instant, which is also the slice's base instant in the log
file names. pyhudi's readers take them when the slice's first block has that instant; Apache
Hudi's readers merge a slice without a base file by key, whatever the header says.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.logformat.block import HeaderKey
from pyhudi.logformat.data_block import ParquetDataBlock
from pyhudi.logformat.positions import encode_positions
from pyhudi.logformat.reader import LogReader
from pyhudi.read.family_reader import file_identity
from pyhudi.read.keys import MAX_INTEGER_KEY, encode_keys
from pyhudi.read.metadata_cache import METADATA_CACHE
from pyhudi.read.window import subset_positions
from pyhudi.schema import META_FIELDS
from pyhudi.storage.fs import Storage
from pyhudi.value import Value

RECORD_KEY = META_FIELDS[2]
MAX_LOOKUP_BYTES = 64 << 20


class PositionsBase(Value):
    """What an appended block's positions refer to: a base file, or (``lead_block``) the first
    block of a log file — the insert that started a file group without a base file."""

    relpath: str
    instant: str
    identity: object  # the file's identity in the metadata cache (read.family_reader.file_key)
    lead_block: bool

    def __init__(self, relpath: str, instant: str, identity: object, lead_block: bool = False) -> None:
        self._set(relpath=relpath, instant=instant, identity=identity, lead_block=lead_block)


def positions_header(storage: Storage, base: PositionsBase | None, keys: pa.Table,
                     integer_key: str | None) -> dict[HeaderKey, str]:
    """The position headers of a block whose records (in block order) have ``keys`` (a table of
    ``_hoodie_record_key`` and, for an integer key field, that field), in ``base``; empty when
    the positions are not all known and increasing. The base's keys are kept in the metadata
    cache (by file identity), so a process writing one update after another reads each base
    file's key column once."""
    if base is None or not keys.num_rows:
        return {}
    instant, identity = base.instant, base.identity
    column = integer_key if integer_key is not None and integer_key in keys.column_names else RECORD_KEY
    kind = _kept_kind(column, base.lead_block)
    spine = METADATA_CACHE.get(kind, identity)
    if spine is None:
        spine = _base_keys(storage, base, column)
        if spine is None:
            return {}
        _keep(kind, identity, spine)
    if spine is False:  # (no usable key column, or not in increasing key order)
        return {}
    others = _block_keys(keys.column(column), spine) if column == integer_key else keys.column(column)
    found = subset_positions(spine, others) if others is not None else None
    if found is None or (len(found) > 1 and not (found[1:] > found[:-1]).all()):
        return {}  # an insert, or records out of the base's order: readers merge by key
    if not pc.all(pc.equal(spine.take(pa.array(found)), others)).as_py():
        return {}  # (a key the base holds twice: the key merge decides which copy it meets)
    return {HeaderKey.RECORD_POSITIONS: encode_positions(found, increasing=True),
            HeaderKey.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS: instant}


def _base_keys(storage: Storage, base: PositionsBase, column: str) -> pa.Array | bool | None:
    """The base's keys to search: key codes in increasing order for an integer key column,
    else the record key strings; False when the base cannot be searched (kept as a verdict);
    None when its key column is too large to hold."""
    if base.lead_block:
        with LogReader(storage, base.relpath, memory_map=False) as reader:
            first = next(iter(reader), None)
            if not isinstance(first, ParquetDataBlock) or first.instant_time != base.instant:
                return False  # (readers take the first block as the rows' base only if it is Parquet)
            spine = _key_column(first.parquet_file(), column)
    else:
        with storage.open_input(base.relpath) as source:
            spine = _key_column(pq.ParquetFile(source), column)
    if spine is None or spine is False:
        return spine
    return _searchable(spine, column)


def _searchable(spine: pa.Array, column: str) -> pa.Array | bool:
    """A key column as :func:`positions_header` searches it: the record key strings as they are,
    integer keys as key codes in increasing order (False: not in that order, or a null key).

    Integer keys without key codes (negative, or 18 digits and more: snowflake ids) are searched
    as their decimal spellings — the record keys themselves, hashed like any string keys. The
    positions are row numbers: how the keys compare does not change them."""
    if column == RECORD_KEY:
        return spine
    if spine.null_count:
        return False
    codes = _codes(spine)  # (binary search: the base must be in increasing key order)
    if codes is None:
        spellings = _spellings(spine)
        return spellings if spellings.nbytes <= MAX_LOOKUP_BYTES else False  # (too large: kept as a verdict)
    values = np.asarray(codes)
    return codes if len(values) < 2 or (values[1:] > values[:-1]).all() else False


def _block_keys(values: pa.Array | pa.ChunkedArray, spine: pa.Array) -> pa.Array | None:
    """A block's integer keys as ``spine`` holds the base's: key codes, or decimal spellings
    (None: a key without a code, which a base of codes cannot hold — an insert)."""
    if pa.types.is_int64(spine.type):
        return _codes(values)
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    return None if values.null_count else _spellings(values)


def _spellings(values: pa.Array) -> pa.Array:
    """Integer keys as the record keys a simple key generator makes of them (``str(k)``)."""
    return values.cast(pa.string())


def lead_identity(storage: Storage, relpath: str, size: int | None = None) -> tuple:
    """A log file's identity in the write-side key cache: its full path and, for a local file,
    its size (``size``: known, else a ``stat``; a bucketed table's writers list their logs
    without sizes). A log file is written once, under a name that names its instant and write
    attempt, and never changes once its commit completed; the size guards even a rewrite of the
    same name (a retried attempt) against keys kept from the first."""
    if size is None or size < 0:
        size = os.stat(storage.full_path(relpath)).st_size if storage.is_local else None
    return file_identity(storage, relpath, size, None)


def remember_written_keys(storage: Storage, relpath: str, size: int, keys: pa.Table, integer_key: str | None,
                          lead_block: bool) -> None:
    """Keep the keys of a file this writer has just written (``size`` bytes) — a base file, or
    (``lead_block``) a log file starting a new file group — as :func:`positions_header` would
    read them back: the process's next update of the group finds its positions without reading
    the file (an insert then an update, a streaming writer). Local files only (a base file's
    identity holds its modification time)."""
    column = integer_key if integer_key is not None and integer_key in keys.column_names else RECORD_KEY
    if not storage.is_local or column not in keys.column_names or not keys.num_rows:
        return
    spine = keys.column(column).combine_chunks()
    if spine.nbytes > MAX_LOOKUP_BYTES:
        return
    spine = _searchable(spine, column)
    if lead_block:
        identity: object = lead_identity(storage, relpath, size)
    else:
        stat = os.stat(storage.full_path(relpath))  # (as a listing sees it: read.family_reader.file_key)
        identity = file_identity(storage, relpath, stat.st_size, stat.st_mtime_ns)
    _keep(_kept_kind(column, lead_block), identity, spine)


def _kept_kind(column: str, lead_block: bool) -> str:
    """The metadata cache's kind for a base's (or a first log block's) searchable keys."""
    return f"write:keys:{column}" + ("@lead" if lead_block else "")


def _keep(kind: str, identity: object, spine: pa.Array | bool) -> None:
    METADATA_CACHE.put(kind, identity, spine, spine.nbytes if spine is not False else 16)  # (a verdict: 16 B)


def _key_column(parquet: pq.ParquetFile, column: str) -> pa.Array | bool | None:
    """``column`` of a Parquet file (False: it has none; None: too large to hold)."""
    if column not in parquet.schema_arrow.names:
        return False
    if _column_bytes(parquet, column) > MAX_LOOKUP_BYTES:
        return None
    return parquet.read(columns=[column], use_threads=False).column(0).combine_chunks()


def _column_bytes(parquet: pq.ParquetFile, column: str) -> int:
    metadata = parquet.metadata
    leaf = metadata.schema.names.index(column)
    return sum(max(metadata.row_group(i).column(leaf).total_uncompressed_size, 8 * metadata.row_group(i).num_rows)
               for i in range(metadata.num_row_groups))


def _codes(values: pa.Array | pa.ChunkedArray) -> pa.Array | None:
    """Key codes of integer keys (:func:`~pyhudi.read.keys.encode_keys`), None when a key has none."""
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if values.null_count:
        return None
    if len(values):
        low, high = pc.min_max(values).values()
        if low.as_py() < 0 or high.as_py() >= MAX_INTEGER_KEY:
            return None
    return encode_keys(values)

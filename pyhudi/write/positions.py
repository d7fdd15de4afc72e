"""Record positions written with a log block (Hudi 1.x ``RECORD_POSITIONS`` headers).

An append to a file group whose family has a base file looks the block's keys up in that base
file's key column. When every record of the block updates a base row, and the block (sorted by
key) lists them in the base file's row order, the block's header records those rows
(``RECORD_POSITIONS``) and the base file's instant (``BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS``).
A reader then merges the block by position, without decoding the base file's keys
(:mod:`pyhudi.read.positions`), the first read in a process included. Blocks that insert a key,
or whose order differs from the base's, carry no positions (readers merge them by key), as
Apache Hudi's writers do. The lookup reads one column of the base file; it is skipped when that
column would take more memory than :data:`MAX_LOOKUP_BYTES` (by the footer), and the column is
kept in the process's metadata cache for the next update of the same base file.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.logformat.block import HeaderKey
from pyhudi.logformat.positions import encode_positions
from pyhudi.read.keys import MAX_INTEGER_KEY, encode_keys
from pyhudi.read.metadata_cache import METADATA_CACHE
from pyhudi.read.window import subset_positions
from pyhudi.schema import META_FIELDS
from pyhudi.storage.fs import Storage

RECORD_KEY = META_FIELDS[2]
MAX_LOOKUP_BYTES = 64 << 20


def positions_header(storage: Storage, base: tuple | None, keys: pa.Table,
                     integer_key: str | None) -> dict[HeaderKey, str]:
    """The position headers of a block whose records (in block order) have ``keys`` (a table of
    ``_hoodie_record_key`` and, for an integer key field, that field), in base file
    ``base = (relpath, instant, file key)``; empty when the positions are not all known and
    increasing. The base file's keys are kept in the metadata cache (by file identity), so a
    process writing one update after another reads each base file's key column once."""
    if base is None or not keys.num_rows:
        return {}
    relpath, instant, identity = base
    column = integer_key if integer_key is not None and integer_key in keys.column_names else RECORD_KEY
    kind = f"write:keys:{column}"
    spine = METADATA_CACHE.get(kind, identity)
    if spine is None:
        spine = _base_keys(storage, relpath, column)
        if spine is None:
            return {}
        METADATA_CACHE.put(kind, identity, spine, spine.nbytes if spine is not False else 16)
    if spine is False:  # (no usable key column, or not in increasing key order)
        return {}
    others = _codes(keys.column(column)) if column == integer_key else keys.column(column)
    found = subset_positions(spine, others) if others is not None else None
    if found is None or (len(found) > 1 and not (found[1:] > found[:-1]).all()):
        return {}  # an insert, or records out of the base's order: readers merge by key
    if not pc.all(pc.equal(spine.take(pa.array(found)), others)).as_py():
        return {}  # (a key the base holds twice: the key merge decides which copy it meets)
    return {HeaderKey.RECORD_POSITIONS: encode_positions(found, increasing=True),
            HeaderKey.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS: instant}


def _base_keys(storage: Storage, relpath: str, column: str) -> pa.Array | bool | None:
    """The base file's keys to search: key codes in increasing order for an integer key column,
    else the record key strings; False when the file cannot be searched (kept as a verdict);
    None when its key column is too large to hold."""
    with storage.open_input(relpath) as source:
        parquet = pq.ParquetFile(source)
        if column not in parquet.schema_arrow.names:
            return False
        if _column_bytes(parquet, column) > MAX_LOOKUP_BYTES:
            return None
        spine = parquet.read(columns=[column], use_threads=False).column(0).combine_chunks()
    if column == RECORD_KEY:
        return spine
    codes = _codes(spine)  # (binary search: the base must be in increasing key order)
    if codes is None:
        return False
    values = np.asarray(codes)
    return codes if len(values) < 2 or (values[1:] > values[:-1]).all() else False


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

"""The simple index (Hudi's ``SIMPLE`` index): find the file group holding each record key.

Tables without a bucket index have no function from key to file group, so an upsert or delete
reads the record keys of the latest base file of every file group in the partitions it touches
(the ``_hoodie_record_key`` column only) and looks its keys up there, partition by partition,
with ``pyarrow.compute.index_in`` — vectorised, no per-record Python.

Only base files are read: on tables pyhudi writes without buckets a key enters a file group
through its base file (inserts create base files; updates go to the group that has the key),
so the base files hold every key of the table. Keys are unique per partition (not globally),
as with Hudi's non-global simple index.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.errors import ConfigError
from pyhudi.fsview.view import FileGroup
from pyhudi.schema import META_FIELDS
from pyhudi.storage.fs import Storage

RECORD_KEY = META_FIELDS[2]


def _base_keys(storage: Storage, relpath: str) -> pa.Array:
    with storage.open_input(relpath) as source:
        parquet = pq.ParquetFile(source)
        if RECORD_KEY not in parquet.schema_arrow.names:
            raise ConfigError(
                f"base file {relpath} has no {RECORD_KEY} column: writing without a bucket index needs "
                "tables that populate meta fields (hoodie.populate.meta.fields=true)"
            )
        return parquet.read(columns=[RECORD_KEY]).column(RECORD_KEY).combine_chunks()


def partition_key_locations(storage: Storage, groups: Sequence[FileGroup]) -> tuple[pa.Array, pa.Array]:
    """``(keys, file ids)`` of every record in the latest base files of ``groups``."""
    bases = [(g.file_id, max(g.base_files, key=lambda b: b.instant)) for g in groups if g.base_files]
    if not bases:
        return pa.array([], pa.string()), pa.array([], pa.string())
    with ThreadPoolExecutor(max_workers=min(4, len(bases))) as pool:
        keys = list(pool.map(lambda item: _base_keys(storage, item[1].relpath), bases))
    file_ids = [pa.repeat(pa.scalar(fid, pa.string()), len(k)) for (fid, _), k in zip(bases, keys)]
    return pa.concat_arrays(keys).cast(pa.string()), pa.concat_arrays(file_ids)


def tag_locations(
    storage: Storage,
    existing: Mapping[tuple[str, str], FileGroup],
    partition_runs: Sequence[tuple[str, int, int]],
    keys: pa.ChunkedArray | pa.Array,
) -> pa.Array:
    """The file id holding each key (null: not in the table).

    ``keys`` are sorted by partition; ``partition_runs`` gives ``(partition, start, length)`` of
    each partition's slice of them.
    """
    by_partition: dict[str, list[FileGroup]] = {}
    for (partition, _), group in existing.items():
        by_partition.setdefault(partition, []).append(group)
    keys = pa.chunked_array([keys]) if isinstance(keys, pa.Array) else keys
    pieces = []
    for partition, start, length in partition_runs:
        wanted = keys.slice(start, length)
        stored_keys, stored_ids = partition_key_locations(storage, by_partition.get(partition, []))
        if len(stored_keys) == 0:
            pieces.append(pa.nulls(length, pa.string()))
            continue
        positions = pc.index_in(wanted, value_set=stored_keys)
        pieces.append(stored_ids.take(positions).combine_chunks() if isinstance(positions, pa.ChunkedArray)
                      else stored_ids.take(positions))
    if not pieces:
        return pa.array([], pa.string())
    return pa.concat_arrays(pieces)

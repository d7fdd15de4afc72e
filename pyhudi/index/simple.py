"""The simple index (Hudi's ``SIMPLE`` index): find the file group holding each record key.

Tables without a bucket index have no function from key to file group, so an upsert or delete
reads the record keys of every file group in the partitions it touches (the
``_hoodie_record_key`` column only) and looks its keys up there, partition by partition,
with ``pyarrow.compute.index_in`` — vectorised, no per-record Python.

The keys of a file group are those of its latest file slice: the latest base file and the data
blocks of the log files after it. Log files matter on merge-on-read tables: inserts padded into a
small file group (:mod:`pyhudi.write.small_files`) and file groups written by other engines
(Apache Hudi with a bucket index, Flink) may hold keys only in log files — or have no base file at
all — and an upsert of such a key must update that group, not insert a duplicate elsewhere.
Keys are unique per partition (not globally), as with Hudi's non-global simple index.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.errors import ConfigError
from pyhudi.fsview.view import FileGroup
from pyhudi.logformat.block import DataBlock
from pyhudi.logformat.reader import LogReader
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


def _log_keys(storage: Storage, relpath: str) -> list[pa.Array]:
    """Record keys of the data blocks of one log file (delete and command blocks hold none)."""
    keys = []
    with LogReader(storage, relpath) as reader:
        for block in reader:
            if not isinstance(block, DataBlock):
                continue
            if RECORD_KEY not in block.arrow_schema().names:
                raise ConfigError(
                    f"log file {relpath} has a data block without {RECORD_KEY}: writing without a bucket index "
                    "needs tables that populate meta fields (hoodie.populate.meta.fields=true)"
                )
            keys.append(block.read([RECORD_KEY]).column(RECORD_KEY).combine_chunks().cast(pa.string()))
    return keys


def _group_keys(storage: Storage, group: FileGroup, layout_version: int) -> pa.Array:
    """Every record key of the latest file slice of ``group``: base file plus log data blocks."""
    current = group.latest_slice(None, False, layout_version)
    pieces = [_base_keys(storage, current.base_file.relpath).cast(pa.string())] if current.base_file else []
    for log in current.log_files:
        pieces.extend(_log_keys(storage, log.relpath))
    if not pieces:
        return pa.array([], pa.string())
    return pa.concat_arrays(pieces) if len(pieces) > 1 else pieces[0]


def partition_key_locations(storage: Storage, groups: Sequence[FileGroup],
                            layout_version: int = 2) -> tuple[pa.Array, pa.Array]:
    """``(keys, file ids)`` of every record in the latest file slices of ``groups``."""
    groups = [g for g in groups if g.base_files or g.log_files]
    if not groups:
        return pa.array([], pa.string()), pa.array([], pa.string())
    with ThreadPoolExecutor(max_workers=min(4, len(groups))) as pool:
        keys = list(pool.map(lambda g: _group_keys(storage, g, layout_version), groups))
    file_ids = [pa.repeat(pa.scalar(g.file_id, pa.string()), len(k)) for g, k in zip(groups, keys)]
    return pa.concat_arrays(keys), pa.concat_arrays(file_ids)


def tag_locations(
    storage: Storage,
    existing: Mapping[tuple[str, str], FileGroup],
    partition_runs: Sequence[tuple[str, int, int]],
    keys: pa.ChunkedArray | pa.Array,
    layout_version: int = 2,
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
        stored_keys, stored_ids = partition_key_locations(storage, by_partition.get(partition, []), layout_version)
        if len(stored_keys) == 0:
            pieces.append(pa.nulls(length, pa.string()))
            continue
        positions = pc.index_in(wanted, value_set=stored_keys)
        pieces.append(stored_ids.take(positions).combine_chunks() if isinstance(positions, pa.ChunkedArray)
                      else stored_ids.take(positions))
    if not pieces:
        return pa.array([], pa.string())
    return pa.concat_arrays(pieces)

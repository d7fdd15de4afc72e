"""Base files written from merged, streamed records that keep their meta values: what
compaction (and clustering) write. The record's ``_hoodie_commit_time`` / ``_hoodie_commit_seqno``
stay as they were; ``_hoodie_file_name`` names the new file.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.config.write import PARQUET_BLOCK_SIZE
from pyhudi.logformat.parquet_options import constant_strings, parquet_options_for
from pyhudi.schema import META_FIELDS
from pyhudi.write.handle import META_PARQUET_OPTIONS


_KEY_INDEX = META_FIELDS.index(META_FIELDS[2])
_NAME_INDEX = len(META_FIELDS) - 1


def _renamed(batch: pa.RecordBatch, file_name: str) -> pa.RecordBatch:
    """The record's meta values as they were, but ``_hoodie_file_name`` naming the new base file."""
    names = constant_strings(file_name, batch.num_rows).dictionary_decode()
    return batch.set_column(_NAME_INDEX, META_FIELDS[_NAME_INDEX], names)


def write_base_file(storage: Any, relpath: str, merged: Callable[[], pa.RecordBatchReader], file_name: str,
                     key_fields: Sequence[str]) -> tuple[int, str | None, str | None]:
    """Write the merged rows to a base file as they stream (bounded memory), declared sorted by
    record key — checked on every batch and across batches. Should the merge not deliver key
    order (a hash merge), the rows are read again, sorted, and the file written anew. Returns
    (rows, first key, last key); a slice whose records were all deleted gets an empty base file."""
    reader = merged()
    rows, first, last, ordered = 0, None, None, True
    group: list[pa.RecordBatch] = []  # one row group's batches (Parquet holds a row group in memory anyway)
    group_rows = per_group = 0
    with storage.open_output(relpath) as sink:
        writer = None
        for batch in reader:
            batch = _renamed(batch, file_name)
            if writer is None:
                options = parquet_options_for(pa.Table.from_batches([batch]), fixed=META_PARQUET_OPTIONS,
                                              delta_columns=key_fields)
                writer = pq.ParquetWriter(sink, batch.schema, sorting_columns=[pq.SortingColumn(_KEY_INDEX)],
                                          **options)
                per_group = _rows_per_group(batch)
            if batch.num_rows:
                keys = batch.column(_KEY_INDEX)
                ordered = _strictly_increasing(keys, last)
                if not ordered:
                    break
                first = keys[0].as_py() if first is None else first
                last = keys[-1].as_py()
            group.append(batch)
            group_rows += batch.num_rows
            rows += batch.num_rows
            if group_rows >= per_group:  # whole row groups, not one per streamed batch
                writer.write_table(pa.Table.from_batches(group), row_group_size=group_rows)
                group, group_rows = [], 0
        if writer is None:
            pq.write_table(reader.schema.empty_table(), sink)
        else:
            if group and ordered:
                writer.write_table(pa.Table.from_batches(group), row_group_size=group_rows)
            writer.close()
    if ordered:
        return rows, first, last
    table = merged().read_all()  # not in key order: sort (the rare path)
    table = table.take(pc.sort_indices(table, [(META_FIELDS[2], "ascending")]))
    table = pa.Table.from_batches([_renamed(b, file_name) for b in table.to_batches()], schema=table.schema)
    with storage.open_output(relpath) as sink:
        pq.write_table(table, sink, **parquet_options_for(table, fixed=META_PARQUET_OPTIONS, delta_columns=key_fields))
    keys = table.column(META_FIELDS[2])
    return table.num_rows, (keys[0].as_py() if len(keys) else None), (keys[-1].as_py() if len(keys) else None)


def _rows_per_group(batch: pa.RecordBatch) -> int:
    """Rows per row group of about ``hoodie.parquet.block.size`` (Hudi's default, 120 MB) of
    Arrow data: few, large row groups read and write faster than one per streamed batch."""
    per_row = max(1, batch.nbytes // max(1, batch.num_rows))
    return max(batch.num_rows, PARQUET_BLOCK_SIZE.default // per_row)


def _strictly_increasing(keys: pa.Array, previous: str | None) -> bool:
    if previous is not None and not pc.greater(keys[0], pa.scalar(previous, keys.type)).as_py():
        return False
    if len(keys) < 2:
        return True
    return bool(pc.all(pc.greater(keys.slice(1), keys.slice(0, len(keys) - 1))).as_py())

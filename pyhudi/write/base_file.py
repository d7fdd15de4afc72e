"""Base files written from merged, streamed records that keep their meta values: what
compaction (and clustering) write. The record's ``_hoodie_commit_time`` / ``_hoodie_commit_seqno``
stay as they were; ``_hoodie_file_name`` names the new file.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.config.write import PARQUET_BLOCK_SIZE
from pyhudi.logformat.parquet_options import (
    OPTIONS_SAMPLE_ROWS,
    constant_strings,
    parquet_options_for,
    stored_schema_metadata,
    write_parquet,
)
from pyhudi.schema import META_FIELDS
from pyhudi.write.handle import META_PARQUET_OPTIONS


ROW_GROUP_BUFFER_BYTES = 16 << 20
"""The most Arrow data the writer buffers for one row group (16 MB: ~18k full rows of 100
doubles, ~80k rows of a 20-column family). Measured on Scenario W: compacting a 2M-row file
group then peaks at 1.4x the 200k-row peak (120 MB, Hudi's block size, gave 2.4x)."""
_KEY_INDEX = META_FIELDS.index(META_FIELDS[2])
_NAME_INDEX = len(META_FIELDS) - 1


def _renamed(batch: pa.RecordBatch, file_name: str) -> pa.RecordBatch:
    """The record's meta values as they were, but ``_hoodie_file_name`` naming the new base file
    (a one-entry dictionary: Parquet writes it without hashing every row, and the file stores
    it as plain strings — :func:`~pyhudi.logformat.parquet_options.stored_schema_metadata`)."""
    names = constant_strings(file_name, batch.num_rows)
    return batch.set_column(_NAME_INDEX, META_FIELDS[_NAME_INDEX], names)


def write_base_file(storage: Any, relpath: str, merged: Callable[[], pa.RecordBatchReader], file_name: str,
                     key_fields: Sequence[str], *,
                     buffer_bytes: int = ROW_GROUP_BUFFER_BYTES) -> tuple[int, str | None, str | None]:
    """Write the merged rows to a base file as they stream, declared sorted by record key —
    checked on every batch and across batches. Should the merge not deliver key order (a hash
    merge), the rows are read again, sorted, and the file written anew. Returns (rows, first
    key, last key); a slice whose records were all deleted gets an empty base file.

    Memory is bounded whatever the slice's size: the writer holds at most one row group of
    batches — ``buffer_bytes`` of Arrow data (:func:`row_group_buffer_bytes`: at most
    :data:`ROW_GROUP_BUFFER_BYTES` and ``hoodie.parquet.block.size``), plus one streamed batch — plus the
    merge's own batches (bounded by its batch size times its inputs). Every row group but the
    last holds exactly the same number of rows, sized from the first rows' bytes per row."""
    reader = merged()
    rows, first, last, ordered = 0, None, None, True
    group: list[pa.RecordBatch] = []  # one row group's batches (Parquet holds a row group in memory anyway)
    group_rows = per_group = 0
    with storage.open_output(relpath) as sink:
        writer = None
        for batch in reader:
            batch = _renamed(batch, file_name)
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
            if writer is None:
                if group_rows < OPTIONS_SAMPLE_ROWS and sum(b.nbytes for b in group) < buffer_bytes:
                    continue  # (the settings of the whole file: not chosen from a merge's first few rows)
                writer, per_group = _open_writer(sink, group, buffer_bytes, key_fields)
            while group_rows >= per_group:  # row groups of exactly per_group rows, not one per batch
                buffered = pa.Table.from_batches(group)
                writer.write_table(buffered.slice(0, per_group), row_group_size=per_group)
                group = buffered.slice(per_group).to_batches()
                group_rows -= per_group
        if writer is None and group and ordered:  # (a file of fewer rows than a sample: all of them decide)
            writer, per_group = _open_writer(sink, group, buffer_bytes, key_fields)
        if writer is None:
            pq.write_table(reader.schema.empty_table(), sink)
        else:
            if group_rows and ordered:
                writer.write_table(pa.Table.from_batches(group), row_group_size=group_rows)
            writer.add_key_value_metadata(stored_schema_metadata(writer.schema))
            writer.close()
    if ordered:
        return rows, first, last
    table = merged().read_all()  # not in key order: sort (the rare path)
    table = table.take(pc.sort_indices(table, [(META_FIELDS[2], "ascending")]))
    table = pa.Table.from_batches([_renamed(b, file_name) for b in table.to_batches()], schema=table.schema)
    with storage.open_output(relpath) as sink:
        write_parquet(table, sink, parquet_options_for(table, fixed=META_PARQUET_OPTIONS, delta_columns=key_fields))
    keys = table.column(META_FIELDS[2])
    return table.num_rows, (keys[0].as_py() if len(keys) else None), (keys[-1].as_py() if len(keys) else None)


def row_group_buffer_bytes(props: Mapping[str, str]) -> int:
    """The row-group buffer for a table's settings: ``hoodie.parquet.block.size``, capped at
    :data:`ROW_GROUP_BUFFER_BYTES` (Hudi's 120 MB default would make a writer hold 120 MB)."""
    return max(1, min(ROW_GROUP_BUFFER_BYTES, PARQUET_BLOCK_SIZE.get(props)))


def _rows_per_group(batch: pa.RecordBatch | pa.Table, buffer_bytes: int) -> int:
    """Rows per row group: ``buffer_bytes`` of Arrow data. Few, large row groups read and write faster than one per streamed
    batch, but a row group is held in memory until it is written, so its size is capped rather
    than grown with the file group (a 2M-row slice peaks like a 200k-row one)."""
    per_row = max(1, batch.nbytes // max(1, batch.num_rows))
    return max(1, buffer_bytes // per_row)


def _open_writer(sink: Any, batches: list[pa.RecordBatch], buffer_bytes: int,
                 key_fields: Sequence[str]) -> tuple[pq.ParquetWriter, int]:
    """The file's writer, with Parquet settings chosen from its first ``batches`` (at least a
    sample's worth of rows, a row group's bytes, or the whole file), and its rows per row group."""
    table = pa.Table.from_batches(batches)
    options = parquet_options_for(table, fixed=META_PARQUET_OPTIONS, delta_columns=key_fields)
    writer = pq.ParquetWriter(sink, table.schema, sorting_columns=[pq.SortingColumn(_KEY_INDEX)],
                              store_schema=False, **options)
    return writer, _rows_per_group(table, buffer_bytes)


def _strictly_increasing(keys: pa.Array, previous: str | None) -> bool:
    if previous is not None and not pc.greater(keys[0], pa.scalar(previous, keys.type)).as_py():
        return False
    if len(keys) < 2:
        return True
    return bool(pc.all(pc.greater(keys.slice(1), keys.slice(0, len(keys) - 1))).as_py())

"""One file-slice reader for queries' peers: table services (compaction, clustering) and indexes.

hudi-rs's ``FileGroupReader.read_file_slice`` in pyhudi's terms: given the slices of one file
group — one per family, each a base file plus the log files to merge on top — stream the merged
rows (families joined on the record key, deletes applied, one row per key), optionally with the
``_hoodie_*`` meta values each record carries. It runs the same read task as queries
(:class:`~pyhudi.read.task.ReadTask`: streaming sort-merge, bounded memory), built from slices a
caller chose instead of the latest ones, so a service reads exactly the files its plan names.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from pyhudi.context import TableContext
from pyhudi.fsview.view import FileSlice, Visibility
from pyhudi.read.commit_codes import CODES_TYPE
from pyhudi.read.plan import _family_scans, _output_schema, key_spec
from pyhudi.read.task import DEFAULT_BATCH_SIZE, FamilyPart, ReadTask, TaskSettings
from pyhudi.schema import META_FIELDS

__all__ = ["TableContext", "read_file_slices"]


def read_file_slices(context: TableContext, slices: Sequence[FileSlice], visibility: Visibility, *,
                     columns: Sequence[str] | None = None, with_meta: bool = False,
                     batch_size: int = DEFAULT_BATCH_SIZE, decode_threads: bool = True,
                     commit_time_codes: bool = False) -> pa.RecordBatchReader:
    """Stream the merged rows of ``slices`` (one file group; one slice per family read).

    ``columns``: the data columns to return (None: every column of the families read, key and
    partition columns included, in schema order); ``with_meta`` puts the five meta columns first
    (a row's ``_hoodie_commit_time`` is the newest of its families'). ``visibility`` decides which
    log blocks count (those of instants it shows as completed). ``decode_threads``: Parquet
    decoding on Arrow's thread pool (False: in the calling thread, when the caller keeps the
    other cores busy itself). ``commit_time_codes``: ``_hoodie_commit_time`` (when returned)
    as a dictionary array (:data:`~pyhudi.read.commit_codes.CODES_TYPE`; built without decoding
    where the files prove their values constant: :mod:`pyhudi.read.commit_codes`) — for a writer
    that encodes it as a dictionary; each batch has its own dictionary.
    """
    if not slices:
        raise ValueError("read_file_slices needs at least one slice")
    first = slices[0]
    if any((s.partition_path, s.file_id) != (first.partition_path, first.file_id) for s in slices):
        raise ValueError("read_file_slices reads the slices of one file group")
    schema = context.schema
    wanted = {s.family for s in slices}
    chosen = {name: f for name, f in context.families.items() if (f.name or None) in wanted}
    if columns is None:
        implicit = {*context.record_key_fields, *context.partition_fields}
        own = {c for f in chosen.values() for c in f.columns}
        columns = [c for c in schema.names if c in own or c in implicit]
    output = _output_schema(schema, columns, with_meta)
    at = output.get_field_index(META_FIELDS[0])
    if commit_time_codes and at >= 0:
        output = output.set(at, pa.field(META_FIELDS[0], CODES_TYPE, output.field(at).nullable))
    scans = _family_scans(context, chosen, schema, set(output.names))
    table_schema = schema
    for i, name in enumerate(META_FIELDS):
        table_schema = table_schema.insert(i, pa.field(name, pa.string()))
    settings = TaskSettings(
        table_schema=table_schema,
        output=output,
        keys=key_spec(context.config, schema),
        visibility=visibility,
        batch_size=batch_size,
        decode_threads=decode_threads,
    )
    by_family = {s.family: s for s in slices}
    parts = [FamilyPart(scan, by_family[scan.family], own) for scan, own in scans]
    task = ReadTask(context.storage, first.partition_path, first.file_id, parts, settings)
    return pa.RecordBatchReader.from_batches(output, task.batches())

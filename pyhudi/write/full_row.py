"""One full-row base or log file for a new file group of a column-family table (``FULL_ROW_INSERT``).

A bulk insert into an empty file group writes, by default, one base file per family. Each holds
the same keys in the same order, so a reader that wants whole rows must join them: cheap for the
kernel (it zips aligned files), but impossible to do cheaply in Spark, whose Parquet reader reads
one file per row and has no positional zip — a join of five 1M-row family scans by
(file, row index) measured 4–6x Spark's scan of the same rows (docs/benchmarks.md, Spark). A
full-row base file (the layout full compaction writes, DESIGN §4) is one file Spark reads itself.

The file holds the meta columns once, then every family's file columns (key and partition columns
once). It is written only when no family is partial and every family's rows hold the same keys in
the same order — as they do in a bulk insert, whose families are cut from the same input rows
(when a family with its own ordering column keeps another copy of a repeated key than the others,
each family's columns in the full row are its own choice, exactly what its own file would hold,
unless their choices differ in the soft-delete marker, which the full row holds once);
otherwise each family gets its own file.

Inserts and upserts into new file groups of a bucketed merge-on-read table write log files (two
writers may insert into one new bucket at once: both logs commit). The same payload becomes one
full-row log file there, for the writer's sake: every family log repeats the meta columns and the
key and is one more file to create (Scenario W: 20 log files against 4 for a table without
families; ``pq.write_table`` of the 20 alone costs 1.35x the 4). Readers take every family's
columns from a full-row log as from a full-row base file (:mod:`pyhudi.fsview.view`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from pyhudi.schema import META_FIELDS
from pyhudi.write.soft_deletes import SOFT_DELETE

RECORD_KEY = META_FIELDS[2]


def full_row_payload(payloads: Sequence[Any], cache: dict) -> Any | None:
    """One payload holding every family's rows of ``payloads`` (the ``FamilyPayload`` of each
    family of one file group) with the default family's name ``""`` (a file without suffix), or
    None when they cannot share one file (see the module docstring). ``cache`` is the task's
    shared key sort and meta columns."""
    if len(payloads) < 2 or any(p.is_partial or p.file_schema is None for p in payloads):
        return None
    streamed = _streamed_payload(payloads)
    if streamed is not None:
        return streamed
    gathered = _gathered_payload(payloads)
    if gathered is not None:
        return gathered
    tables = [p.rows(cache) for p in payloads]
    keys = tables[0].column(RECORD_KEY)
    if any(t.column(RECORD_KEY) is not keys and not t.column(RECORD_KEY).equals(keys) for t in tables[1:]):
        return None  # (not expected: every family is cut from the same input rows)
    if not _agree_on_soft_deletes(tables):
        return None
    fields: dict[str, pa.Field] = {}
    columns: dict[str, Any] = {}
    for payload, data in zip(payloads, tables):
        for f in payload.file_schema:
            fields.setdefault(f.name, f)
        for name, column in zip(data.column_names, data.columns):
            columns.setdefault(name, column)
    names = [RECORD_KEY, *(n for n in fields if n in columns)]
    data = pa.table({n: columns[n] for n in names})
    return dataclasses.replace(payloads[0], family="", data=data, file_schema=pa.schema(list(fields.values())),
                               parquet_options=_merged(payloads))


def _agree_on_soft_deletes(tables: Sequence[pa.Table]) -> bool:
    """Whether the families' rows that carry the soft-delete marker (every family's, in a write
    that marks rows: :mod:`~pyhudi.write.soft_deletes`) mark the same keys. Families ordered by
    different columns may keep different copies of a repeated key, one marked and one not; each
    family's file then deletes its own choice, and the full row's one marker column cannot."""
    markers = [t.column(SOFT_DELETE).fill_null(False) for t in tables if SOFT_DELETE in t.column_names]
    return all(m.equals(markers[0]) for m in markers[1:])


def _one_group_of_one_gather(payloads: Sequence[Any]) -> bool:
    """Whether every payload is the same group of the same shared gather, not gathered yet."""
    shared = payloads[0].shared
    return shared is not None and not any(p.data is not None or p.shared is not shared or p.group != payloads[0].group
                                          for p in payloads)


def _full_row_fields(payloads: Sequence[Any]) -> tuple[dict[str, pa.Field], tuple[str, ...]]:
    """Every family's file fields (first family first) and the full row's columns: the record key,
    then those of the fields the payloads hold."""
    fields: dict[str, pa.Field] = {}
    present: dict[str, None] = {}
    for payload in payloads:
        for f in payload.file_schema:
            fields.setdefault(f.name, f)
        present.update(dict.fromkeys(payload.columns))
    return fields, (RECORD_KEY, *(n for n in fields if n in present))


def _gathered_payload(payloads: Sequence[Any]) -> Any | None:
    """The full-row payload of a group whose every family comes from one shared gather planned
    for the full row (:meth:`~pyhudi.write.shared_gather.SharedGather.serves`): its columns
    asked for at once — blocks of 8 of the 101 columns of Scenario W instead of each family's
    20 in blocks of 8, 8 and 4, one slice instead of five and no check that the five hold the
    same keys (they are one gather's rows): ~2 ms less per 50k-row group. The same table as the
    families' rows put together (plain fields, the same columns in the same order). None: the
    payloads are not such a group."""
    if not _one_group_of_one_gather(payloads):
        return None
    fields, names = _full_row_fields(payloads)
    shared = payloads[0].shared
    if not shared.serves(names[1:]) or shared.streams():
        return None
    rows = shared.rows(payloads[0].group, names)
    data = pa.table({n: rows.column(n) for n in names})
    return dataclasses.replace(payloads[0], family="", data=data, sliced=True, shared=None, columns=names,
                               file_schema=pa.schema(list(fields.values())), parquet_options=_merged(payloads))


def _streamed_payload(payloads: Sequence[Any]) -> Any | None:
    """The full-row payload of a large write whose rows are gathered as they are written
    (:mod:`~pyhudi.write.streamed_rows`): every family's columns, from the same group of the same
    shared gather (so the same keys in the same order), the columns' order and (plain, nullable)
    fields those of the table built from the families' rows below. None: not streamed."""
    if not _one_group_of_one_gather(payloads) or not payloads[0].shared.streams():
        return None
    fields, names = _full_row_fields(payloads)
    return dataclasses.replace(payloads[0], family="", columns=names, plain_fields=True,
                               file_schema=pa.schema(list(fields.values())),
                               parquet_options=_merged(payloads))


def _merged(payloads: Sequence[Any]) -> Any:
    """:func:`merged_options` of the payloads' options — deferred when theirs are (one
    :class:`~pyhudi.write.shared_gather.Deferred` sample of the write's input: merged once it is
    computed, by the task that asks)."""
    from pyhudi.write.shared_gather import Deferred, resolved

    options = [p.parquet_options for p in payloads]
    roots = [o for o in options if isinstance(o, Deferred)]
    if not roots:
        return merged_options(options)
    return roots[0].then(lambda _: merged_options([resolved(o) for o in options]))


def merged_options(options: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The Parquet writer options of several families' files as one file's: per-column settings
    united, file-wide ones from the first family (they are one sample of the same input)."""
    out: dict[str, Any] = dict(options[0]) if options else {}
    for other in options[1:]:
        for key, value in other.items():
            mine = out.get(key)
            if isinstance(mine, Mapping) and isinstance(value, Mapping):
                out[key] = {**mine, **value}
            elif isinstance(mine, (list, tuple)) and isinstance(value, (list, tuple)):
                out[key] = list(dict.fromkeys([*mine, *value]))
            else:
                out.setdefault(key, value)
    return out

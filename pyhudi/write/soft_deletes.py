"""Soft deletes in a family table: a true ``_hoodie_is_deleted`` deletes the whole row.

Hudi marks a record deleted by a true ``_hoodie_is_deleted`` in the rows of an upsert (its
soft-delete column). In a family table that column belongs to one family, and a row exists while
any family holds a live record for its key (DESIGN §4, row existence): the marker written to its
own family's file alone would delete only that family's version, and the row would stay, with
that family's columns null. So a write of a family table whose rows carry a true marker:

- writes the marker column into every family file it writes in the file groups that hold a
  marked row (the family's own columns, then ``_hoodie_is_deleted``; the other groups' files
  are written as before): each family's version of a marked row is a soft delete, merged by that
  family's own rule — its ordering column when the write carries it, else commit time — as the
  marker's own family always was. Readers take the marker from any file that holds it
  (:class:`~pyhudi.read.sources.ReadSpec`); compaction writes no row it marks.
- writes a delete block to every family the write does not touch (a partial write), in the file
  groups that already exist, for the keys whose winning row is marked (the de-duplication of the
  marker's own family): this write holds no ordering value of those families, so their deletes
  are commit-time deletes, as a partial block without its family's ordering column merges by
  commit time (DESIGN §4, ordering).

A write whose marker column is all false or null, and a one-family table (whose one family holds
the marker), write exactly what they wrote before.

In any table, a base file never holds a marked row (:func:`marked_rows`): Apache Hudi's and
hudi-rs's readers scan a file slice without log files as plain Parquet, so a marked row in a base
file would be a live row to them. As Hudi's create and merge handles do, a marked row of a key the
table does not hold is dropped (nothing to insert), and a copy-on-write merge removes the stored
row of a key whose winning update is marked (:func:`~pyhudi.write.merge.merge_into_base`). Log
blocks keep their marked rows: every reader merges them as deletes.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.config.families import ColumnFamily
from pyhudi.schema import SOFT_DELETE_FIELD

SOFT_DELETE = SOFT_DELETE_FIELD  # (Hudi's soft-delete column, declared in pyhudi.schema)

Group = tuple[str, int]  # (partition path, bucket)


def marks_rows(families: Mapping[str, ColumnFamily], rows: pa.Table) -> bool:
    """Whether a write of ``rows`` to a table with ``families`` soft-deletes rows of several
    families (so every family must learn of it)."""
    if len(families) < 2 or SOFT_DELETE not in rows.column_names:
        return False
    return bool(pc.any(rows.column(SOFT_DELETE)).as_py())


def marked_rows(rows: pa.Table) -> np.ndarray | None:
    """Mask of the rows of ``rows`` marked deleted (a true ``_hoodie_is_deleted``), or None when
    none is: the rows no base file may hold."""
    if SOFT_DELETE not in rows.column_names or rows.num_rows == 0:
        return None
    flags = rows.column(SOFT_DELETE).combine_chunks()
    if not pc.any(flags).as_py():
        return None
    return np.asarray(flags.fill_null(False), dtype=bool)


def with_marker(columns: Sequence[str]) -> list[str]:
    """A family file's ``columns`` with the marker column last (unless the family holds it)."""
    return list(columns) if SOFT_DELETE in columns else [*columns, SOFT_DELETE]


def without_marker(columns: Sequence[str]) -> list[str]:
    """``columns`` without the marker column (the files of a file group holding no marked row)."""
    return [c for c in columns if c != SOFT_DELETE]


def groups_with_marks(rows: pa.Table, positions: Sequence[int], runs: Sequence[tuple[Group, int, int]]) -> set[int]:
    """The indices of the ``runs`` (file groups: :func:`~pyhudi.write.plan.group_plan`) holding
    a marked row: only their family files carry the marker column. A pipeline that sends the
    column with every write (most rows false) so leaves the other groups' files as they were,
    and their reads merge by position instead of by key."""
    flags = rows.column(SOFT_DELETE).combine_chunks().fill_null(False)
    return {index for index, (_, start, length) in enumerate(runs)
            if pc.any(flags.take(pa.array(positions[start:start + length]))).as_py()}


def marker_ordering(families: Mapping[str, ColumnFamily], present: Sequence[str]) -> str | None:
    """The ordering column that picks a key's winning row for the marker: the ordering column of
    the family holding ``_hoodie_is_deleted``, when the write carries it (else arrival order)."""
    for family in families.values():
        if SOFT_DELETE in family.columns:
            return family.ordering_field if family.ordering_field in present else None
    return None


def marked_keys(rows: pa.Table, order: pa.Array, runs: Sequence[tuple[Group, int, int]],
                record_key: str) -> dict[Group, pa.Table]:
    """Per file group, the record keys (a ``record_key`` table, as deletes carry them) whose
    winning row is marked deleted. ``order`` and ``runs``: the write's de-duplicated rows
    grouped by file group (:func:`~pyhudi.write.plan.dedupe_plan`)."""
    flags = rows.column(SOFT_DELETE).take(order).combine_chunks().fill_null(False)
    keys = rows.column(record_key).take(order).combine_chunks()
    found: dict[Group, pa.Table] = {}
    for group, start, length in runs:
        marked = flags.slice(start, length)
        if pc.any(marked).as_py():
            found[group] = pa.table({"record_key": keys.slice(start, length).filter(marked)})
    return found

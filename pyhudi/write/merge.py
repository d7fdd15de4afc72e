"""Copy-on-write merge: a file group's base file + this commit's changes → its next base file.

Hudi's merge handle, vectorised over Arrow (no per-record Python):

- a delete removes the row of its key (a key not in the file is ignored);
- an update replaces the row of its key — unless the table merges by event time and the
  update's ordering value is lower than the stored one, or null while the stored one is not
  (ties and a stored null: the update wins); a partial update (some columns absent) keeps the
  stored values of the absent columns; an update whose key is not in the file is an insert.
  This is the one merge rule of :mod:`pyhudi.record_merge`, which the merge-on-read reader and
  the de-duplication share; the commit's deletes carry no ordering value, so they are
  commit-time-ordering deletes and always win;
- an update marked deleted (a true ``_hoodie_is_deleted``) that wins removes the stored row of
  its key, and one of a key the file does not hold is dropped: a base file never holds a marked
  row (:mod:`pyhudi.write.soft_deletes`); one without an ordering value is a commit-time-ordering
  delete and always wins;
- untouched rows keep their meta columns (commit time and sequence number of the commit that
  wrote them) except ``_hoodie_file_name``, which names the new file;
- the output is sorted by record key, like every file pyhudi writes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.logformat import constant_strings, constant_value
from pyhudi.record_merge import fill_partial, newer_wins_arrow
from pyhudi.schema import META_FIELDS
from pyhudi.write.soft_deletes import marked_rows

RECORD_KEY = META_FIELDS[2]


def conform_to(data: pa.Table, file_schema: pa.Schema) -> pa.Table:
    """``_hoodie_record_key`` (when present) + every column of ``file_schema``, in that order;
    columns ``data`` lacks are null."""
    n = data.num_rows
    names = [RECORD_KEY] if RECORD_KEY in data.column_names else []
    arrays = [data.column(RECORD_KEY)] if names else []
    fields = [pa.field(RECORD_KEY, pa.string())] if names else []
    for f in file_schema:
        if f.name in data.column_names:
            column = data.column(f.name)
            arrays.append(column if column.type == f.type else column.cast(f.type))
        else:
            arrays.append(pa.nulls(n, f.type))
        fields.append(f.with_nullable(True) if f.name not in data.column_names else f)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


@dataclass
class MergeOutcome:
    """The rows of the next base file, before its meta columns for new records are known."""

    kept: pa.Table  # old rows that stay, with their meta columns
    new_data: pa.Table  # _hoodie_record_key + data columns of the updated / inserted records
    data_schema: pa.Schema
    num_inserts: int
    num_updates: int
    num_deletes: int

    @property
    def new_keys(self) -> pa.ChunkedArray:
        return self.new_data.column(RECORD_KEY)

    def assemble(self, new_meta: list, file_name: str) -> pa.Table:
        """Kept and new rows with their meta columns, sorted by record key.

        ``new_meta``: commit time, sequence number, record key and partition path of the new
        rows. A meta column constant over the whole file — the file name; the partition path,
        and the commit time of a file of new rows only, when the kept rows agree — is written
        as a one-entry dictionary (:func:`~pyhudi.logformat.parquet_options.constant_strings`).
        """
        n = self.kept.num_rows + self.new_data.num_rows
        constants = {META_FIELDS[4]: file_name}
        for name, column in zip(META_FIELDS, new_meta):
            value = constant_value(column)
            if value is not None and _all_equal(self.kept.column(name), value):
                constants[name] = value
        varying = [m for m in META_FIELDS if m not in constants]
        new_varying = [_decoded(c) for m, c in zip(META_FIELDS, new_meta) if m not in constants]
        names = [f.name for f in self.data_schema]
        schema = pa.schema([*(pa.field(m, pa.string()) for m in varying), *self.data_schema])
        kept = pa.Table.from_arrays([*(self.kept.column(m) for m in [*varying, *names])], schema=schema)
        new = pa.Table.from_arrays([*new_varying, *(self.new_data.column(n) for n in names)], schema=schema)
        table = pa.concat_tables([kept, new])
        if kept.num_rows and new.num_rows:
            table = table.take(pc.sort_indices(table.column(RECORD_KEY)))
        for i, name in enumerate(META_FIELDS):  # in order: each lands at its own position
            if name in constants:
                column = constant_strings(constants[name], n)
                table = table.add_column(i, pa.field(name, column.type), column)
        return table


def _all_equal(column: pa.ChunkedArray, value: str) -> bool:
    """Whether every value of ``column`` is ``value`` (true when empty)."""
    return len(column) == 0 or (column.null_count == 0 and pc.all(pc.equal(column, value)).as_py())


def _decoded(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """``column``'s values as plain strings (a one-entry dictionary decoded)."""
    return column.cast(column.type.value_type) if pa.types.is_dictionary(column.type) else column


def _winning_updates(updates: pa.Table, positions: pa.Array, old: pa.Table, ordering_field: str | None) -> np.ndarray:
    """Mask of updates that win over the stored row of their key (the merge rule's pairwise form,
    :func:`~pyhudi.record_merge.newer_wins_arrow`). Without an ordering value on either side the
    update wins (commit time), and so does a soft delete without one: a commit-time-ordering
    delete (rule 3), as every merge-on-read read takes it."""
    n = updates.num_rows
    if (ordering_field is None or ordering_field not in updates.column_names or ordering_field not in old.column_names
            or positions.null_count == len(positions)):  # (no stored row met, e.g. a base file emptied by deletes)
        return np.ones(n, dtype=bool)
    found = np.asarray(positions.is_valid(), dtype=bool)
    stored = old.column(ordering_field).take(positions.fill_null(0))
    newer = updates.column(ordering_field)
    wins = newer_wins_arrow(stored, newer, older_exists=found)
    marked = marked_rows(updates)
    if marked is not None and newer.null_count:
        wins |= marked & ~np.asarray(newer.combine_chunks().is_valid(), dtype=bool)
    return wins


def _update_occurrences(old_keys: pa.ChunkedArray, updates: pa.Table) -> tuple[np.ndarray, pa.Array]:
    """(update row, stored row or null) pairs in update order: an update meets every stored row of
    its key — a file may hold a key twice after an ``insert`` that allows duplicates, and Hudi's
    merge handle merges the update into each copy — and an update of no stored key is an insert."""
    old_keys = old_keys.combine_chunks() if isinstance(old_keys, pa.ChunkedArray) else old_keys
    update_of = pc.index_in(old_keys, value_set=updates.column(RECORD_KEY).combine_chunks())
    stored = np.flatnonzero(np.asarray(update_of.is_valid(), dtype=bool))
    if len(stored) == 0:
        return np.arange(updates.num_rows), pa.nulls(updates.num_rows, pa.int64())
    targets = np.asarray(update_of.filter(update_of.is_valid()), dtype=np.int64)
    matched = np.zeros(updates.num_rows, dtype=bool)
    matched[targets] = True
    alone = np.flatnonzero(~matched)
    picks = np.concatenate([targets, alone])
    rows = np.concatenate([stored, np.full(len(alone), -1, dtype=np.int64)])
    order = np.argsort(picks, kind="stable")  # update (key) order; copies of one key stay in file order
    rows = rows[order]
    return picks[order], pa.array(rows, mask=rows < 0, type=pa.int64())


def merge_into_base(
    old: pa.Table,
    updates: pa.Table | None,
    delete_keys: pa.ChunkedArray | pa.Array | None,
    ordering_field: str | None,
    file_schema: pa.Schema | None = None,
    insert_only: bool = False,
) -> MergeOutcome:
    """Apply ``updates`` (``_hoodie_record_key`` + columns, one row per key) and ``delete_keys``
    to ``old`` (a base file read whole, meta columns first).

    ``insert_only``: every row of ``updates`` is a new record, even if its key is stored already
    (an ``insert`` into a small file with ``hoodie.merge.allow.duplicate.on.inserts``)."""
    if file_schema is None:
        file_schema = pa.schema([f for f in old.schema if f.name not in META_FIELDS])
    data_schema = file_schema
    old_keys = old.column(RECORD_KEY)
    replaced = np.zeros(old.num_rows, dtype=bool)
    num_deletes = 0
    if delete_keys is not None and len(delete_keys):
        deleted = np.asarray(pc.is_in(old_keys, value_set=pa.chunked_array(delete_keys).combine_chunks()), dtype=bool)
        num_deletes = int(deleted.sum())
        replaced |= deleted
    num_inserts = num_updates = 0
    new_data = conform_to(pa.table({RECORD_KEY: pa.array([], pa.string())}), data_schema)
    if updates is not None and updates.num_rows:
        if insert_only:
            picks, positions = np.arange(updates.num_rows), pa.nulls(updates.num_rows, pa.int64())
        else:
            picks, positions = _update_occurrences(old_keys, updates)
            wins = _winning_updates(updates.take(pa.array(picks)), positions, old, ordering_field)
            if not wins.all():
                picks, positions = picks[wins], positions.filter(pa.array(wins))
        found = np.asarray(positions.is_valid(), dtype=bool)
        hit = np.asarray(positions.fill_null(0), dtype=np.int64)[found]
        replaced[hit] = True
        updates = updates.take(pa.array(picks))
        marked = marked_rows(updates)
        if marked is not None:  # winning soft deletes: the stored row goes, nothing is written
            num_deletes += int((found & marked).sum())
            updates, positions, found = updates.filter(~marked), positions.filter(pa.array(~marked)), found[~marked]
        num_updates = int(found.sum())
        num_inserts = len(found) - num_updates
        # a partial update keeps the stored values of the columns it lacks
        new_data = fill_partial(conform_to(updates, data_schema), updates.column_names, old, positions)
    stale = marked_rows(old)  # (marked rows earlier versions wrote: deleted to every pyhudi read already)
    if stale is not None:
        replaced |= stale
    kept = old.filter(pa.array(~replaced)) if replaced.any() else old
    kept = _conform_kept(kept, data_schema)
    return MergeOutcome(kept, new_data, data_schema, num_inserts, num_updates, num_deletes)


def _conform_kept(kept: pa.Table, data_schema: pa.Schema) -> pa.Table:
    """Old rows with the current data columns (added columns null, types cast)."""
    meta = kept.select(list(META_FIELDS))
    data = conform_to(kept.drop_columns([m for m in META_FIELDS if m in kept.column_names]), data_schema)
    for name in data.column_names:
        meta = meta.append_column(data.schema.field(name), data.column(name))
    return meta

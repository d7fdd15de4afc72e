"""The merge rule: which of two versions of a record key wins, and what the winner is made of.

Every place where pyhudi meets two versions of one key decides with the functions below:

- the merge-on-read reader: :func:`pyhudi.read.merge.merge_versions` (all versions of a file
  slice at once) and :func:`pyhudi.read.window.merge_window` (key range by key range);
- the copy-on-write merge, a commit's updates against a base file
  (:func:`pyhudi.write.merge.merge_into_base`);
- write-side de-duplication of the rows of one write (:func:`pyhudi.write.prepare.latest_sorted`,
  :func:`pyhudi.write.plan.dedupe_plan`); services (compaction) merge through the reader.

The rule is Apache Hudi 1.x's (reference/hudi-internals-core.md §5, ``hoodie.record.merge.mode``):

1. **Commit-time ordering** (``COMMIT_TIME_ORDERING``; also event time when no version carries an
   ordering value): the version processed later wins — base file < log blocks in processing order
   < later rows of one block; for de-duplication, the later row of the input.
2. **Event-time ordering** (``EVENT_TIME_ORDERING``): Hudi keeps the older version when
   ``older.compareTo(newer) > 0``, else the newer: the greater ordering value wins and **ties go
   to the newer** version. A null ordering value loses to any value; null against null, the newer
   wins. A float NaN is greater than every number and equal to itself (Java's
   ``Double.compareTo``). A version that does not carry the ordering column at all (a partial
   block without it) merges by commit time.
3. **Deletes**: a delete whose ordering value is the default (null or absent, e.g. a plain
   ``delete`` operation) is a *commit-time-ordering delete* (Hudi's ``isCommitTimeOrderingDelete``):
   it wins whatever the ordering values, and the next version is compared with the delete's own
   value, not with what it deleted. A delete with an ordering value is a version like any other:
   under event time it loses to a stored record with a greater value.
4. **Partial records**: a column the winner does not carry is taken from the loser (Hudi's
   ``partialMerge``, ``SparkRecordMergingUtils.mergePartialRecords``; two partial updates merge
   into the union of their columns); when either side is a delete the winner is taken unmerged.

The rule comes in the shapes its users need, all vectorised over NumPy / Arrow:

- *pairwise*: :func:`newer_wins` (comparable numbers), :func:`newer_wins_arrow` (Arrow columns);
- *fold*: :func:`advance` applies one version per key to a running state (the window merge,
  which walks its inputs in processing order);
- *scan*: :func:`winners_in_sequence` over versions sorted by key then processing order, with
  the group reductions :func:`group_first` / :func:`group_last` (the whole-slice merge);
- *de-duplication*: :func:`latest_per_key` / :func:`last_of_runs`;
- *partial records*: :func:`partial_source` (which version supplies a column) and
  :func:`fill_partial` (columns of a table of winners filled from their losers).
"""

from __future__ import annotations

from typing import Collection, Sequence

import numpy as np
import pyarrow as pa

from pyhudi.lazy import pc
from pyhudi.schema import SOFT_DELETE_FIELD

EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"
COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"

Column = pa.Array | pa.ChunkedArray


# --------------------------------------------------------------------------- ordering values
def cast_ordering(values: pa.Array, target: pa.DataType) -> pa.Array:
    """Ordering values as the ordering column's type. Delete blocks carry them as Int/Long
    wrappers even for temporal columns (days / microseconds), which cast through the integer."""
    if values.type == target:
        return values
    if pa.types.is_integer(values.type) and (pa.types.is_timestamp(target) or pa.types.is_date(target)):
        width = pa.int32() if pa.types.is_date32(target) else pa.int64()
        return values.cast(width).cast(target)
    return values.cast(target)


def ordering_ranks(values: Column) -> np.ndarray:
    """Dense rank of every value in the rule's order (nulls → -1; equal values, equal ranks;
    NaN above every number): comparable ordering values of any sortable type."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    uniques = pc.unique(values.drop_null() if values.null_count else values)
    uniques = uniques.take(pc.sort_indices(uniques))  # (Arrow sorts NaN after every number)
    ranks = pc.index_in(values, value_set=uniques)
    return np.asarray(ranks.fill_null(-1) if ranks.null_count else ranks, dtype=np.int64)


def comparable_ordering(values: Column) -> tuple[np.ndarray, np.ndarray]:
    """Ordering values as NumPy numbers that compare as the rule does, plus a validity mask.

    Integers, temporal types and booleans compare as int64, floats as float64 (through their
    ranks when a NaN is among them: NumPy's NaN compares false both ways); anything else
    (strings, decimals) as dense ranks, which keep the order.
    """
    t = values.type
    valid = np.asarray(values.is_valid()) if values.null_count else np.ones(len(values), dtype=bool)
    if pa.types.is_integer(t) or pa.types.is_temporal(t) or pa.types.is_boolean(t):
        if pa.types.is_date32(t) or pa.types.is_time32(t):
            values = values.cast(pa.int32())
        elif pa.types.is_boolean(t):
            values = values.cast(pa.int8())
        as_int = values.cast(pa.int64()) if values.type != pa.int64() else values
        return np.asarray(as_int.fill_null(0), dtype=np.int64), valid
    if pa.types.is_floating(t):
        floats = np.asarray(values.cast(pa.float64()).fill_null(0.0), dtype=np.float64)
        return (ordering_ranks(values), valid) if np.isnan(floats).any() else (floats, valid)
    return ordering_ranks(values), valid


def commit_time_deletes(is_delete: bool | np.ndarray, default_delete: pa.Array | None, n: int) -> np.ndarray:
    """Per version, whether it is a commit-time-ordering delete (rule 3): a delete whose ordering
    value is the default. ``default_delete`` flags the deletes of a delete block whose value is
    the default (null: no value at all); without it, every delete of the batch is one."""
    if default_delete is None:
        return np.broadcast_to(np.asarray(is_delete, dtype=bool), (n,))
    return np.asarray(default_delete.fill_null(True), dtype=bool)


# --------------------------------------------------------------------------- pairwise
def newer_wins(older: np.ndarray, older_valid: np.ndarray, newer: np.ndarray, newer_valid: np.ndarray,
               commit_time_delete: np.ndarray | None = None, unordered: np.ndarray | None = None) -> np.ndarray:
    """Whether the newer version of each pair wins over the older (rules 1–3).

    ``older`` / ``newer``: comparable ordering values (:func:`comparable_ordering`, or ranks with
    -1 for null) and their validity — an older side with no value (no version yet, or null)
    always loses. ``commit_time_delete``: the newer is a commit-time-ordering delete (wins).
    ``unordered``: the newer carries no ordering column (wins: commit time).
    """
    wins = ~older_valid | (newer_valid & (newer >= older))
    if commit_time_delete is not None:
        wins |= commit_time_delete
    if unordered is not None:
        wins |= unordered
    return wins


def newer_wins_arrow(older: Column, newer: Column, older_exists: np.ndarray | None = None) -> np.ndarray:
    """:func:`newer_wins` for two Arrow columns of ordering values of one type (the older cast to
    the newer's); ``older_exists`` False where there is no older version (the newer wins)."""
    if older.type != newer.type:
        older = older.cast(newer.type)
    chunks = [*(older.chunks if isinstance(older, pa.ChunkedArray) else [older]),
              *(newer.chunks if isinstance(newer, pa.ChunkedArray) else [newer])]
    values, valid = comparable_ordering(pa.chunked_array(chunks, newer.type))
    n = len(older)
    older_valid = valid[:n] if older_exists is None else valid[:n] & older_exists
    return newer_wins(values[:n], older_valid, values[n:], valid[n:])


# --------------------------------------------------------------------------- fold
def advance(best: np.ndarray, has_best: np.ndarray, values: np.ndarray | None, valid: np.ndarray | None,
            commit_time_delete: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Apply one version per key to a running event-time state: ``best`` (the greatest ordering
    value met since the last commit-time-ordering delete) and ``has_best``.

    Returns (whether each version wins, the new ``best``, the new ``has_best``). ``values`` None:
    the versions carry no ordering column, so they win (commit time). A commit-time-ordering
    delete wins and restarts the state at its own value; any other version's value counts
    towards the maximum whether it wins or not (a loser's value is smaller anyway).
    """
    if values is None:
        return np.ones(len(commit_time_delete), dtype=bool), best, has_best & ~commit_time_delete
    wins = newer_wins(best, has_best, values, valid, commit_time_delete)
    counted = valid & ~commit_time_delete
    new_has = np.where(commit_time_delete, valid, has_best | counted)
    new_best = np.where(commit_time_delete, values,
                        np.where(counted & has_best, np.maximum(best, values), np.where(counted, values, best)))
    return wins, new_best, new_has


# --------------------------------------------------------------------------- scan
def prior_best(ranks: np.ndarray, segment_start: np.ndarray) -> np.ndarray:
    """Greatest rank (>= -1) before each element, restarting at segment starts (-1: none):
    the scan form of :func:`advance`'s ``best``, as one grouped cumulative maximum."""
    n = len(ranks)
    if n == 0:
        return ranks
    seg = np.cumsum(segment_start) - 1
    width = int(ranks.max()) + 2
    shifted = seg * width + (ranks + 1)
    inclusive = np.maximum.accumulate(shifted) - seg * width - 1
    exclusive = np.empty(n, dtype=np.int64)
    exclusive[0] = -1
    exclusive[1:] = inclusive[:-1]
    exclusive[segment_start] = -1
    return exclusive


def winners_in_sequence(segment_start: np.ndarray, has_ordering: np.ndarray, ranks: np.ndarray,
                        commit_time_delete: np.ndarray) -> np.ndarray:
    """Event time over versions sorted by key, then processing order: whether each version wins
    over the state before it in its segment (a segment starts at each key's first version and at
    every commit-time-ordering delete, which restarts the ordering). ``ranks``: ordering ranks
    (-1 null); ``has_ordering``: the version carries the ordering column."""
    best = prior_best(np.where(has_ordering, ranks, -1), segment_start)
    return newer_wins(best, best >= 0, ranks, ranks >= 0, commit_time_delete, ~has_ordering)


def group_last(mask: np.ndarray, group_starts: np.ndarray) -> np.ndarray:
    """Per group (starting at ``group_starts``): the largest index where ``mask`` holds, or -1 —
    e.g. the latest winning version of a key."""
    idx = np.where(mask, np.arange(len(mask), dtype=np.int64), -1)
    return np.maximum.reduceat(idx, group_starts) if len(idx) else idx


def group_first(mask: np.ndarray, group_starts: np.ndarray) -> np.ndarray:
    """Per group: the smallest index where ``mask`` holds, or -1."""
    if not len(mask):
        return np.zeros(0, dtype=np.int64)
    big = len(mask)
    first = np.minimum.reduceat(np.where(mask, np.arange(len(mask), dtype=np.int64), big), group_starts)
    return np.where(first == big, -1, first)


# --------------------------------------------------------------------------- de-duplication
def last_of_runs(sorted_columns: Sequence[Column | np.ndarray]) -> np.ndarray:
    """Mask of the rows that end a run of equal values in every column (rows sorted): the
    last row of each key, which wins under rules 1–2 when the sort put the winner last."""
    n = len(sorted_columns[0])
    keep = np.ones(n, dtype=bool)
    if n < 2:
        return keep
    change = np.zeros(n - 1, dtype=bool)
    for column in sorted_columns:
        if isinstance(column, np.ndarray):
            change |= column[:-1] != column[1:]
        else:
            column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
            change |= np.asarray(pc.not_equal(column.slice(0, n - 1), column.slice(1)))
    keep[:-1] = change
    return keep


def _commit_time_soft_deletes(rows: pa.Table, ordering: Column) -> np.ndarray | None:
    """Mask of the rows marked deleted (``_hoodie_is_deleted`` true) without an ordering value:
    commit-time-ordering deletes (rule 3), which win the de-duplication of a batch as they win a
    merge; None when there is none."""
    if SOFT_DELETE_FIELD not in rows.column_names or not ordering.null_count:
        return None
    marked = rows.column(SOFT_DELETE_FIELD).combine_chunks().fill_null(False)
    if isinstance(ordering, pa.ChunkedArray):
        ordering = ordering.combine_chunks()
    mask = np.asarray(marked, dtype=bool) & ~np.asarray(ordering.is_valid(), dtype=bool)
    return mask if mask.any() else None


def _deletes_so_far(rows: pa.Table, sort_columns: Sequence[str], run_columns: Sequence[str],
                    deletes: np.ndarray) -> np.ndarray:
    """Per row, how many commit-time-ordering deletes of its key arrived up to and including it.

    De-duplicating a batch folds its rows in arrival order, as merging does: such a delete wins
    over the rows before it whatever their ordering values (it is the newer version), and a row
    after it is merged with it — the delete has no ordering value, so the later row wins. So the
    winner is the best row of the key's last segment, which starts at its last delete."""
    order = np.asarray(pc.sort_indices(rows.select(list(sort_columns)),
                                       sort_keys=[(name, "ascending") for name in sort_columns]))
    flags = deletes[order].astype(np.int64)
    ends = last_of_runs([rows.column(name).take(order) for name in run_columns])
    totals = np.cumsum(flags)
    starts = np.r_[0, np.flatnonzero(ends[:-1]) + 1]  # first row of each key
    before = np.repeat(totals[starts] - flags[starts], np.diff(np.r_[starts, len(order)]))
    counts = np.empty(len(order), dtype=np.int64)
    counts[order] = totals - before
    return counts


def latest_per_key(rows: pa.Table, sort_columns: Sequence[str], ordering: str | None,
                   run_columns: Sequence[str] | None = None) -> np.ndarray:
    """Positions of ``rows`` keeping the winning row per key, in (``sort_columns``) order.

    One stable sort by ``sort_columns`` then the ordering value (nulls first, so a null loses;
    rows with equal values keep their arrival order, so ties go to the later row), then the last
    row of each run of equal ``run_columns`` (default ``sort_columns``, which they must lead or
    be determined by). Without ``ordering`` the later row wins (commit time). A row marked
    deleted without an ordering value wins over the rows of its key before it (rule 3,
    :func:`_deletes_so_far`).
    """
    sort_keys = [(name, "ascending", "at_start") for name in sort_columns]
    names = list(dict.fromkeys(sort_columns))
    source = rows.select(names)
    if ordering is not None:
        column = rows.column(ordering)
        deletes = _commit_time_soft_deletes(rows, column)
        if deletes is not None:  # rule 3: a key's rows before its last such delete lose to it
            runs = run_columns if run_columns is not None else sort_columns
            source = source.append_column("__after_deletes", pa.array(_deletes_so_far(rows, names, runs, deletes)))
            sort_keys.append(("__after_deletes", "ascending", "at_start"))
        if pa.types.is_floating(column.type) and pc.any(pc.is_nan(column)).as_py():
            # Arrow sorts NaN with the nulls; the rule puts it above every number
            column = pa.array(ordering_ranks(column))
        source = source.append_column("__ordering", column)
        sort_keys.append(("__ordering", "ascending", "at_start"))
    order = np.asarray(pc.sort_indices(source, sort_keys=sort_keys))
    runs = run_columns if run_columns is not None else sort_columns
    keep = last_of_runs([rows.column(name).take(order) for name in runs])
    return order if keep.all() else order[keep]


# --------------------------------------------------------------------------- partial records
def partial_source(winner: np.ndarray, loser: np.ndarray, loser_carries: np.ndarray | bool) -> np.ndarray:
    """Rule 4 over row indices: the winner's row where it carries the column (``winner`` >= 0),
    else the loser's where the loser carries it, else -1 (null)."""
    return np.where(winner >= 0, winner, np.where(loser_carries, loser, -1))


def fill_partial(winners: pa.Table, carried: Collection[str], losers: pa.Table, loser_rows: pa.Array) -> pa.Table:
    """Rule 4 over tables: each column of ``winners`` that the winners do not carry (not in
    ``carried``) and ``losers`` has, replaced by the losers' values at ``loser_rows`` (a null
    row: no loser, a null value), cast to the winners' column type."""
    for index, field in enumerate(winners.schema):
        if field.name in carried or field.name not in losers.column_names:
            continue
        values = losers.column(field.name).take(loser_rows)
        winners = winners.set_column(index, field, values.cast(field.type))
    return winners

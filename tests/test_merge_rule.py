"""The one merge rule (pyhudi.record_merge): exact winners for every clause, in every shape.

Each clause of Hudi's rule — event time (greater wins, ties to the newer, nulls lose, null
against null the newer), commit time, deletes with and without ordering values, partial
records — is checked in the pairwise, fold, scan and de-duplication forms, and the float NaN
case (above every number) through every user of the rule: the reader's two merges, the
copy-on-write merge and the de-duplication.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from pyhudi.read.merge import Versions, merge_versions
from pyhudi.read.window import merge_window
from pyhudi.record_merge import (
    advance,
    cast_ordering,
    commit_time_deletes,
    comparable_ordering,
    fill_partial,
    group_first,
    group_last,
    last_of_runs,
    latest_per_key,
    newer_wins,
    newer_wins_arrow,
    ordering_ranks,
    partial_source,
    prior_best,
    winners_in_sequence,
)
from pyhudi.write.merge import merge_into_base
from pyhudi.write.plan import BUCKET_COLUMN, PARTITION_COLUMN, RECORD_KEY, dedupe_plan
from pyhudi.write.prepare import latest_sorted

NAN = float("nan")


def _arr(values, type_=pa.int64()):
    return pa.array(values, type_)


# --------------------------------------------------------------------------- ordering values
def test_ordering_ranks_put_nulls_first_and_nan_above_every_number():
    assert ordering_ranks(pa.chunked_array([[3.0, None, NAN, -1.0, 3.0, math.inf]])).tolist() == [1, -1, 3, 0, 1, 2]
    assert ordering_ranks(pa.chunked_array([["b", "a", None, "b"]])).tolist() == [1, 0, -1, 1]
    assert ordering_ranks(pa.chunked_array([], pa.int64())).tolist() == []


def test_comparable_ordering_numbers_dates_and_text():
    values, valid = comparable_ordering(pa.chunked_array([[5, None, -2]]))
    assert values.tolist() == [5, 0, -2] and valid.tolist() == [True, False, True]
    values, _ = comparable_ordering(pa.chunked_array([pa.array([1, 0], pa.date32())]))
    assert values.tolist() == [1, 0]
    values, _ = comparable_ordering(pa.chunked_array([[2.5, 1.0]]))
    assert values.dtype == np.float64 and values.tolist() == [2.5, 1.0]
    values, valid = comparable_ordering(pa.chunked_array([[2.5, NAN, None]]))  # NaN: through ranks
    assert values.tolist() == [0, 1, -1] and valid.tolist() == [True, True, False]
    values, _ = comparable_ordering(pa.chunked_array([["x", "a"]]))
    assert values.tolist() == [1, 0]


def test_cast_ordering_reads_delete_block_wrappers_as_temporal_values():
    days = cast_ordering(pa.array([19000], pa.int64()), pa.date32())
    assert days.type == pa.date32() and days.to_pylist()[0].isoformat() == "2022-01-08"
    micros = cast_ordering(pa.array([1_000_000], pa.int32()), pa.timestamp("us"))
    assert micros.type == pa.timestamp("us") and micros[0].value == 1_000_000


def test_commit_time_deletes_are_deletes_whose_ordering_value_is_the_default():
    assert commit_time_deletes(True, None, 3).tolist() == [True, True, True]
    assert commit_time_deletes(np.array([True, False]), None, 2).tolist() == [True, False]
    assert commit_time_deletes(True, pa.array([True, False, None]), 3).tolist() == [True, False, True]


# --------------------------------------------------------------------------- pairwise
def test_event_time_greater_wins_ties_go_to_the_newer_and_nulls_lose():
    older = np.array([5, 5, 5, 0, 0, 7])
    older_valid = np.array([True, True, True, False, False, True])
    newer = np.array([6, 5, 4, 1, 0, 0])
    newer_valid = np.array([True, True, True, True, False, False])
    # greater, tie, smaller, value over null, null over null, null under value
    assert newer_wins(older, older_valid, newer, newer_valid).tolist() == [True, True, False, True, True, False]


def test_commit_time_deletes_and_unordered_versions_always_win():
    older, valid = np.array([9, 9, 9]), np.array([True, True, True])
    newer = np.array([1, 1, 1])
    assert newer_wins(older, valid, newer, valid).tolist() == [False, False, False]
    delete = np.array([True, False, False])  # a delete with the default ordering value
    unordered = np.array([False, True, False])  # a partial version without the ordering column
    assert newer_wins(older, valid, newer, valid, delete, unordered).tolist() == [True, True, False]


def test_pairwise_arrow_form_casts_the_older_and_honours_missing_older_versions():
    stored = pa.chunked_array([pa.array([5, 5, None, 5, 5], pa.int32())])
    incoming = pa.chunked_array([[4, 5, 1, None, 1]])
    assert newer_wins_arrow(stored, incoming).tolist() == [False, True, True, False, False]
    exists = np.array([True, True, True, True, False])  # the last has no stored row: an insert
    assert newer_wins_arrow(stored, incoming, exists).tolist() == [False, True, True, False, True]
    assert newer_wins_arrow(pa.array(["b", "b"]), pa.array(["a", "c"])).tolist() == [False, True]
    assert newer_wins_arrow(pa.array([1.0, NAN, NAN]), pa.array([NAN, 1.0, NAN])).tolist() == [True, False, True]


# --------------------------------------------------------------------------- fold and scan
def _fold(values, valid, deletes):
    """Apply versions of one key one at a time; the winners."""
    best, has = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=bool)
    out = []
    for v, ok, d in zip(values, valid, deletes):
        wins, best, has = advance(best, has, np.array([v]), np.array([ok]), np.array([d]))
        out.append(bool(wins[0]))
    return out


SEQUENCE = (  # value, valid, commit-time-ordering delete
    [5, 3, 7, 0, 2, 2, 1, 0, 4],
    [True, True, True, True, True, True, True, False, True],
    [False, False, False, True, False, False, False, False, False],
)
# 5 wins (first); 3 loses; 7 wins; the delete (value 0) wins and restarts at 0; 2 wins; 2 wins
# (tie); 1 loses; a null loses; 4 wins
WINNERS = [True, False, True, True, True, True, False, False, True]


def test_fold_form_restarts_at_a_commit_time_ordering_delete():
    assert _fold(*SEQUENCE) == WINNERS


def test_fold_form_without_ordering_column_wins_and_a_delete_forgets_the_ordering():
    best, has = np.array([9]), np.array([True])
    wins, best, has = advance(best, has, None, None, np.array([False]))
    assert wins.tolist() == [True] and has.tolist() == [True]
    wins, best, has = advance(best, has, None, None, np.array([True]))
    assert wins.tolist() == [True] and has.tolist() == [False]
    wins, _, _ = advance(best, has, np.array([1]), np.array([True]), np.array([False]))
    assert wins.tolist() == [True]  # nothing to compare with after the delete


def test_scan_form_equals_the_fold_form():
    values, valid, deletes = (np.array(x) for x in SEQUENCE)
    ranks = np.where(valid, values, -1)
    segment_start = np.zeros(len(values), dtype=bool)
    segment_start[0] = True
    segment_start |= deletes
    assert winners_in_sequence(segment_start, np.ones(len(values), bool), ranks, deletes).tolist() == WINNERS
    no_ordering = np.array([True, False, True, True, True, True, True, True, True])  # version 1 lacks the column
    assert winners_in_sequence(segment_start, no_ordering, ranks, deletes).tolist()[1] is True


def test_scan_helpers_per_group():
    starts = np.array([0, 3])
    assert prior_best(np.array([2, 1, 3, 0, -1, 4]), np.array([True, False, False, True, False, False])).tolist() == \
        [-1, 2, 2, -1, 0, 0]
    mask = np.array([True, False, True, False, False, False])
    assert group_last(mask, starts).tolist() == [2, -1]
    assert group_first(mask, starts).tolist() == [0, -1]


# --------------------------------------------------------------------------- de-duplication
def test_latest_per_key_highest_ordering_ties_to_the_later_row_nulls_lose():
    rows = pa.table({"k": ["a", "b", "a", "b", "c", "c", "d", "d"],
                     "ts": [2, 1, 2, None, None, None, 3, 1]})
    # a: tie → row 2; b: 1 beats null → row 1; c: null vs null → row 5; d: 3 → row 6
    assert latest_per_key(rows, ["k"], "ts").tolist() == [2, 1, 5, 6]
    assert latest_per_key(rows, ["k"], None).tolist() == [2, 3, 5, 7]  # commit time: the later row


def test_latest_per_key_puts_nan_above_every_number():
    rows = pa.table({"k": ["a", "a", "a", "b", "b"], "ts": [NAN, 9.0, None, 1.0, NAN]})
    assert latest_per_key(rows, ["k"], "ts").tolist() == [0, 4]


def test_last_of_runs_over_numpy_and_arrow_columns():
    assert last_of_runs([np.array([1, 1, 2, 3, 3])]).tolist() == [False, True, True, False, True]
    assert last_of_runs([pa.array(["a", "a", "a"]), np.array([1, 2, 2])]).tolist() == [True, False, True]


def test_write_de_duplication_paths_keep_the_rule_winner():
    rows = pa.table({RECORD_KEY: ["1", "2", "1", "2"], "id": [1, 2, 1, 2], "ts": [5, None, 5, 3],
                     PARTITION_COLUMN: ["p", "p", "p", "p"], BUCKET_COLUMN: pa.array([0, 0, 0, 0], pa.int32())})
    assert latest_sorted(rows, "ts").tolist() == [2, 3]
    assert latest_sorted(rows, None, "id").tolist() == [2, 3]
    order, runs = dedupe_plan(rows, "ts")
    assert order.to_pylist() == [2, 3] and runs == [(("p", 0), 0, 2)]
    two = rows.set_column(3, PARTITION_COLUMN, pa.array(["q", "p", "p", "p"]))
    order, runs = dedupe_plan(two, "ts")
    assert order.to_pylist() == [2, 3, 0] and runs == [(("p", 0), 0, 2), (("q", 0), 2, 1)]


# --------------------------------------------------------------------------- partial records
def test_partial_source_takes_the_winner_then_a_carrying_loser():
    winner = np.array([4, -1, -1])
    loser = np.array([0, 1, 2])
    assert partial_source(winner, loser, np.array([True, True, False])).tolist() == [4, 1, -1]


def test_fill_partial_fills_columns_the_winners_lack_from_their_losers():
    winners = pa.table({"k": ["a", "b", "c"], "x": [10, 20, 30], "y": pa.nulls(3, pa.string())})
    losers = pa.table({"k": ["b", "a"], "x": [1, 2], "y": ["yb", "ya"]})
    filled = fill_partial(winners, ["k", "x"], losers, pa.array([1, 0, None], pa.int64()))
    assert filled.to_pydict() == {"k": ["a", "b", "c"], "x": [10, 20, 30], "y": ["ya", "yb", None]}


# --------------------------------------------------------------------------- every user agrees
FIELDS = [pa.field("v", pa.string()), pa.field("ts", pa.float64())]


def _versions(keys, ts, v, last=False):
    data = pa.table({"v": v, "ts": pa.array(ts, pa.float64())})
    return Versions(pa.array(keys), data, False, data.column("ts").combine_chunks(), last=last)


@pytest.mark.parametrize("merge", ["versions", "window"])
def test_read_merges_rank_nan_above_numbers_and_keep_ties_to_the_newer(merge):
    base = _versions(["a", "b", "c", "d"], [1.0, NAN, 5.0, None], ["a0", "b0", "c0", "d0"])
    log = _versions(["a", "b", "c", "d"], [NAN, 7.0, 5.0, None], ["a1", "b1", "c1", "d1"], last=True)
    if merge == "versions":
        out = merge_versions([base, log], FIELDS, True, pa.float64(), base_rows=4)
    else:
        out = merge_window([base, log], FIELDS, True, pa.float64(), base_first=True)
    # a: NaN beats 1; b: 7 loses to NaN; c: tie → log; d: null vs null → log
    assert out.column("v").to_pylist() == ["a1", "b0", "c1", "d1"]


def test_copy_on_write_merge_follows_the_rule_with_nan_and_partial_updates():
    old = pa.table({"_hoodie_commit_time": ["1"] * 3, "_hoodie_commit_seqno": ["s"] * 3,
                    RECORD_KEY: ["a", "b", "c"], "_hoodie_partition_path": [""] * 3,
                    "_hoodie_file_name": ["f"] * 3, "v": ["a0", "b0", "c0"], "w": ["wa", "wb", "wc"],
                    "ts": [1.0, NAN, 5.0]})
    updates = pa.table({RECORD_KEY: ["a", "b", "c", "d"], "v": ["a1", "b1", "c1", "d1"],
                        "ts": [NAN, 7.0, 5.0, 0.0]})  # partial: no "w"
    outcome = merge_into_base(old, updates, None, "ts")
    # a: NaN beats 1; b: 7 loses to NaN (the stored row stays); c: tie → the update; d: an insert
    new = outcome.new_data.drop_columns(["ts"]).to_pydict()
    assert new == {RECORD_KEY: ["a", "c", "d"], "v": ["a1", "c1", "d1"], "w": ["wa", "wc", None]}
    ts = outcome.new_data.column("ts").to_pylist()
    assert math.isnan(ts[0]) and ts[1:] == [5.0, 0.0]
    assert outcome.kept.column(RECORD_KEY).to_pylist() == ["b"]
    assert (outcome.num_updates, outcome.num_inserts) == (2, 1)

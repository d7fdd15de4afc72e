"""Review of the hunt branch's kernel fixes (session 17): what the review found broken.

A row's newest family version is the one whose commit completed last (``combine_meta``): the
completion times come from the active timeline, and those of archived commits from the archive —
a requested time standing in for an archived commit's completion orders two writers that
overlapped (non-blocking concurrency: requested first, completed last) the wrong way round.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_concurrency import SCHEMA, family_table  # noqa: E402
from write_helpers import make_rows  # noqa: E402

from pyhudi.write.client import WriteClient  # noqa: E402


def _overlapping_writes(t):
    """Row 26: family ``fa`` by a write requested first and completed last (A), ``fd`` by one
    requested later and completed first (D)."""
    t.upsert(make_rows(SCHEMA, SCHEMA.names, [26, 27], 1))
    early = WriteClient(t)
    txn_a = early.begin("upsert")
    statuses_a = txn_a.write_rows(make_rows(SCHEMA, ["id", "a", "b"], [26], 2))
    late = WriteClient(t)
    txn_d = late.begin("upsert")
    statuses_d = txn_d.write_rows(make_rows(SCHEMA, ["id", "d", "e"], [26], 3))
    done_d = late.commit(txn_d, statuses_d)
    done_a = early.commit(txn_a, statuses_a)
    assert txn_a.instant < txn_d.instant and done_d.completion_time < done_a.completion_time
    return txn_a, done_a, txn_d, done_d


def _archive_past(t, instant, first_tag):
    """Upsert row 27 (default options: writers archive after each commit) until ``instant`` is
    archived; returns the next tag."""
    tag = first_tag
    while instant in {i.requested_time for i in t.active_timeline().instants}:
        assert tag < first_tag + 40, "archival never moved the overlapping writes"
        t.upsert(make_rows(SCHEMA, ["id", "c"], [27], tag))
        tag += 1
    assert instant in {i.requested_time for i in t.archived_timeline()}
    return tag


def test_the_newest_family_version_of_archived_overlapping_writes_is_the_one_completed_last(tmp_path):
    t = family_table(tmp_path)
    txn_a, done_a, txn_d, done_d = _overlapping_writes(t)
    tag = _archive_past(t, txn_a.instant, 4)

    got = t.read(with_meta=True).sort_by("id").to_pylist()
    assert [(r["id"], r["a"], r["d"], r["_hoodie_commit_time"]) for r in got] == [
        (26, 26002.0, 26003.0, txn_a.instant), (27, 27001.0, 27001.0, t.last_write.instant)]

    # a full compaction keeps that commit time: a window A completed in still finds the row
    t.compact(full=True)
    t.upsert(make_rows(SCHEMA, ["id", "c"], [27], tag))
    got = t.read_incremental(done_d.completion_time, t.last_write.completion_time, with_meta=True)
    assert [(r["id"], r["a"], r["d"], r["_hoodie_commit_time"]) for r in got.sort_by("id").to_pylist()] == [
        (26, 26002.0, 26003.0, txn_a.instant), (27, 27001.0, 27001.0, t.last_write.instant)]

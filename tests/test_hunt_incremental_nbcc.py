"""Incremental reads of a family table whose writers completed out of requested-time order, before
and after compaction (default options).

Under non-blocking concurrency, a write requested earlier may complete later. A row whose family
``fa`` was written by such a write (completed inside the window) and whose family ``fd`` by a
write requested later but completed before the window must be in the window's rows. Before a
compaction the families' versions keep their own commit times; a full compaction keeps one per
row, so it must keep the one of the commit that completed last — it kept the highest requested
time, and the row vanished from the window (found by tests/test_hunt_services_beside_writers.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_concurrency import SCHEMA, family_table  # noqa: E402
from write_helpers import make_rows  # noqa: E402

from pyhudi.write.client import WriteClient  # noqa: E402


@pytest.mark.parametrize("compaction", ["none", "fa", "fd", "every family", "full"])
def test_a_row_changed_by_a_write_completing_in_the_window_is_returned(tmp_path, compaction):
    t = family_table(tmp_path)
    t.upsert(make_rows(SCHEMA, SCHEMA.names, [26, 27], 1))
    early = WriteClient(t)
    txn_a = early.begin("upsert")  # requested first ...
    statuses_a = txn_a.write_rows(make_rows(SCHEMA, ["id", "a", "b"], [26], 2))
    late = WriteClient(t)
    txn_d = late.begin("upsert")  # ... this one requested later
    statuses_d = txn_d.write_rows(make_rows(SCHEMA, ["id", "d", "e"], [26], 3))
    done_d = late.commit(txn_d, statuses_d)  # completes first
    done_a = early.commit(txn_a, statuses_a)  # completes last
    assert txn_a.instant < txn_d.instant and done_d.completion_time < done_a.completion_time
    if compaction == "full":
        t.compact(full=True)
    elif compaction == "every family":
        t.compact()
    elif compaction != "none":
        t.compact(families=[compaction])
    t.upsert(make_rows(SCHEMA, ["id", "c"], [27], 4))
    end = t.last_write.completion_time

    got = t.read_incremental(done_d.completion_time, end, with_meta=True).sort_by("id").to_pylist()
    assert [(r["id"], r["a"], r["c"], r["d"]) for r in got] == [(26, 26002.0, 26001, 26003.0),
                                                              (27, 27001.0, 27004, 27001.0)]
    # the row's commit time is the one of its newest version: the commit that completed last
    assert [r["_hoodie_commit_time"] for r in got] == [txn_a.instant, t.last_write.instant]
    window_a = t.read_incremental(done_d.completion_time, done_a.completion_time).to_pylist()
    assert [r["id"] for r in window_a] == [26]

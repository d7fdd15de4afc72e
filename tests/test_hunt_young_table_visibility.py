"""An uncommitted write is never visible — also on a young table, where nothing was archived.

A writer is issued its instant time, then (a few milliseconds later) creates its requested
instant. Meanwhile a second writer, issued a later time, may commit, and a reader may list the
timeline. The reader's listing then starts after the first writer's time; when it lists the
data files, the first writer's files are there. Files older than the active timeline are taken
for archived (completed) ones — but on a table that never archived anything they cannot be: they
belong to a write the listing did not show, which is pending.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyhudi
from pyhudi.timeline.transitions import InstantTransitions
from pyhudi.write.client import WriteClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_concurrency import SCHEMA, family_table  # noqa: E402
from write_helpers import make_rows  # noqa: E402


def test_files_of_a_write_begun_with_an_older_time_than_the_readers_listing_are_not_visible(tmp_path, monkeypatch):
    import pyhudi.read.plan as read_plan

    t = family_table(tmp_path)
    issued = t.active_timeline().new_instant_time()  # the first writer got its time ...
    t.upsert(make_rows(SCHEMA, ["id", "a", "b"], [1, 2], 1))  # ... a second writer begins later, commits first
    reader = pyhudi.open_table(t.path)
    listing = reader.active_timeline()  # the reader lists the timeline: the first write is not on it yet
    assert [i.requested_time for i in listing.instants][0] > issued

    original = InstantTransitions.new_instant_time
    times = [issued]
    monkeypatch.setattr(InstantTransitions, "new_instant_time",
                        lambda self: times.pop() if times else original(self))
    client = WriteClient(t)
    txn = client.begin("upsert")  # ... the first writer creates its instant now, with its older time
    assert times == []
    # it saw it was overtaken on a young table: it took a new time (nothing of the old one is left)
    assert txn.instant > listing.instants[-1].requested_time
    assert issued not in {i.requested_time for i in t.timeline}
    assert not (Path(t.path) / ".hoodie" / ".heartbeat" / issued).exists()
    statuses = txn.write_rows(make_rows(SCHEMA, ["id", "c"], [1, 3], 2))  # and writes its files

    monkeypatch.setattr(read_plan, "_snapshot_listing", lambda table: listing.follow_archival())
    got = reader.read().sort_by("id").to_pylist()
    assert got == [{"id": 1, "a": 1001.0, "b": "b-1-1", "c": None, "d": None, "e": None},
                   {"id": 2, "a": 2001.0, "b": "b-2-1", "c": None, "d": None, "e": None}]
    monkeypatch.undo()
    client.commit(txn, statuses)
    assert [r["c"] for r in t.read().sort_by("id").to_pylist()] == [1002, None, 3002]

"""An uncommitted write is never visible — also on a young table, where nothing was archived.

A writer is issued its instant time, then (a few milliseconds later) creates its requested
instant. Meanwhile a second writer, issued a later time, may commit, and a reader may list the
timeline. The reader's listing then starts after the first writer's time; when it lists the
data files, the first writer's files are there. Files older than the active timeline are taken
for archived (completed) ones — but on a table that never archived anything they cannot be: they
belong to a write the listing did not show, which is pending. (The writer now takes a new time
when it may have been overtaken so.) Likewise for a failed write a rollback has claimed but whose
files it has not deleted yet: the view knows the instants pending rollbacks undo.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

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


def test_files_of_a_failed_write_a_rollback_claimed_are_not_visible_before_they_are_deleted(tmp_path, monkeypatch):
    """A rollback removes its target from the timeline first, then deletes the target's files (and
    a process that dies in between leaves it so until the next writer finishes it). The failed
    write was the table's first: on a listing without it, its instant is older than every listed
    write, and its files counted as archived — its rows appeared."""
    import pyhudi.write.rollback as rollback

    t = family_table(tmp_path)
    failed = WriteClient(t)
    txn = failed.begin("upsert")
    txn.write_rows(make_rows(SCHEMA, ["id", "a", "b"], [1, 2], 1))
    failed._open.pop(txn.instant).active.heartbeat.stop(delete=False)  # its process hangs: no more beats
    heartbeat = Path(t.path) / ".hoodie" / ".heartbeat" / txn.instant
    heartbeat.write_text(heartbeat.read_text().split("\n")[0] + "\ntimeout_ms=1\n")  # ... and expired
    later = WriteClient(t, options={"hoodie.clean.failed.writes.policy": "NEVER"})  # (does not roll back)
    txn2 = later.begin("upsert")
    later.commit(txn2, txn2.write_rows(make_rows(SCHEMA, ["id", "c"], [3], 2)))
    expected = [{"id": 3, "a": None, "b": None, "c": 3002, "d": None, "e": None}]
    assert t.read().to_pylist() == expected

    def dies(*args, **kwargs):
        raise KeyboardInterrupt("the rolling-back process died after claiming its target")

    monkeypatch.setattr(rollback, "execute_rollback", dies)
    with pytest.raises(KeyboardInterrupt):
        rollback.rollback_failed_writes(t.storage, t.active_timeline(), WriteClient(t).policy)
    monkeypatch.undo()
    assert [(str(i.action), str(i.state)) for i in t.timeline] == [("deltacommit", "COMPLETED"),
                                                                    ("rollback", "INFLIGHT")]
    assert any(txn.instant in p.name for p in Path(t.path).iterdir())  # its files are still there
    assert pyhudi.open_table(t.path).read().to_pylist() == expected
    t.upsert(make_rows(SCHEMA, ["id", "c"], [4], 3))  # the next writer finishes the rollback
    assert t.last_write.rolled_back == [txn.instant]
    assert not any(txn.instant in p.name for p in Path(t.path).iterdir())
    assert [r["id"] for r in t.read().sort_by("id").to_pylist()] == [3, 4]

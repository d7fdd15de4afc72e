"""Reads while a clean is deleting files, or after a clean died mid-way (default options).

A clean deletes files no retained snapshot reads, then completes. Until it completes, the files
it already deleted are missing from the listing while the commits that wrote them are still on
the timeline: a read must not take that for damage (CorruptFileError), and time travel to a
snapshot the clean breaks must be refused (CleanedSnapshotError), never answered from what is
left. Found by tests/test_hunt_kills.py (a writer killed during its automatic clean).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import pyhudi
from pyhudi.errors import CleanedSnapshotError
from pyhudi.storage.fs import Storage

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_concurrency import FAMILY_COLUMNS, SCHEMA, family_table, model  # noqa: E402
from write_helpers import make_rows  # noqa: E402

QUIET = {"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"}
FAMS = ["fa", "fc", "fd"]


def history(tmp_path):
    """A family table whose first file slices no retained snapshot reads (one clean's work)."""
    t = family_table(tmp_path)
    plan, results = [], []

    def write(k):
        entry = {"ids": list(range(k % 5, k % 5 + 4)), "columns": ["id", *FAMILY_COLUMNS[FAMS[k % 3]]], "tag": k + 1}
        t.upsert(make_rows(SCHEMA, entry["columns"], entry["ids"], entry["tag"]), options=QUIET)
        plan.append(entry)
        results.append({"tag": entry["tag"], "instant": t.last_write.instant,
                        "completion_time": t.last_write.completion_time})

    for k in range(6):
        write(k)
    assert t.compact(options=QUIET) is not None
    for k in range(6, 18):
        write(k)
    return t, plan, results


def rows(t, **kw):
    return t.read(**kw).sort_by("id").to_pylist()


def deleting_clean(t, after_first_delete):
    """Run ``t.clean()`` (default options); once it deleted its first data file, call
    ``after_first_delete()`` — a reader, or a crash (raising)."""
    original = Storage.delete
    fired = []

    def delete(self, relpath, *args, **kwargs):
        out = original(self, relpath, *args, **kwargs)
        if not fired and ".hoodie" not in relpath:
            fired.append(relpath)
            after_first_delete()
        return out

    Storage.delete = delete
    try:
        return t.clean()
    finally:
        Storage.delete = original


def test_a_read_while_a_clean_is_deleting_returns_the_snapshot(tmp_path):
    t, plan, results = history(tmp_path)
    expected = model([plan], [results])
    reader = pyhudi.open_table(t.path)  # another handle: as another process would read
    seen = []
    assert deleting_clean(t, lambda: seen.append(rows(reader))) is not None
    assert seen == [expected]
    assert rows(reader) == expected


def test_a_clean_that_died_mid_way_leaves_reads_right_and_the_next_clean_finishes_it(tmp_path):
    t, plan, results = history(tmp_path)
    expected = model([plan], [results])
    first = results[0]["completion_time"]
    assert rows(t, as_of=first) == model([plan], [results[:1]])  # readable before the clean

    def crash():
        raise OSError("the cleaning process died here")

    with pytest.raises(OSError, match="died here"):
        deleting_clean(t, crash)
    (pending,) = [i for i in t.timeline if i.is_pending]
    assert (str(pending.action), str(pending.state)) == ("clean", "INFLIGHT")
    assert rows(pyhudi.open_table(t.path)) == expected
    with pytest.raises(CleanedSnapshotError, match=f"clean {pending.requested_time}"):
        t.read(as_of=first)  # that snapshot lost a file: refused, not answered from what is left
    assert t.clean() == pending.requested_time  # the next clean executes the same plan
    assert rows(t) == expected
    with pytest.raises(CleanedSnapshotError):
        t.read(as_of=first)


def test_a_read_listed_before_a_clean_was_planned_retries_on_a_fresh_listing(tmp_path, monkeypatch):
    """The read lists the timeline, then a clean is planned and deletes a file (still running)
    before the read lists the data files: the read plans again, on a listing that knows the clean."""
    import pyhudi.read.plan as read_plan

    t, plan, results = history(tmp_path)
    expected = model([plan], [results])
    cleaner = pyhudi.open_table(t.path)
    real_view = read_plan.FileSystemView
    calls = []

    def view(*args, **kwargs):
        if not calls:
            calls.append(1)
            with pytest.raises(OSError):
                deleting_clean(cleaner, lambda: (_ for _ in ()).throw(OSError("still deleting")))
        return real_view(*args, **kwargs)

    monkeypatch.setattr(read_plan, "FileSystemView", view)
    assert rows(t) == expected

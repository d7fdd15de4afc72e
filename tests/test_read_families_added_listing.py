"""A read of a family table looks up facts recorded by commits of the timeline it listed: when
ALTERs added the families (which base files hold a family's records), the schema and families
in effect, replaced file groups, the files an incremental window wrote. Another process may
archive some of those commits between the read's listing and those lookups (the soak test's
three writers archive inline): the read then finds the commit in the archive and returns
exactly what it would have returned without the race — its snapshot stays the one it listed.

Each test stands for the reader in another process: the process-wide caches of decoded instant
files are emptied, and the read runs on its own table handle."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import pyhudi
from read_helpers import racing_reader
from pyhudi.errors import CleanedSnapshotError, StaleTimelineError
from pyhudi.table import Table
from pyhudi.timeline import timeline as timeline_module

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.float64()), ("b", pa.float64())])
OFF = {"hoodie.archive.automatic": "false"}
ARCHIVE = {"hoodie.keep.min.commits": "1", "hoodie.keep.max.commits": "2"}


def _family_table(path: str) -> tuple[Table, dict[str, str]]:
    """Families fa, fb; an ALTER adds fc (column c); updates before and after it. Archiving with
    :data:`ARCHIVE` moves ``first``, ``alter`` and ``second`` to the archived timeline."""
    t = pyhudi.create_table(path, SCHEMA, "id", num_buckets=1, column_families={"fa": "a", "fb": "b"})
    first = t.upsert(pa.table({"id": [1, 2], "a": [1.0, 2.0], "b": [10.0, 20.0]}, schema=SCHEMA), options=OFF)
    alter = t.alter({"hoodie.colFamily.fc": "c"}, new_columns={"c": pa.float64()})
    second = t.upsert(pa.table({"id": [2, 3], "a": [2.5, 3.0], "b": [20.5, 30.0], "c": [200.0, 300.0]}),
                      options=OFF)
    third = t.upsert(pa.table({"id": [1], "c": [100.0]}), options=OFF)
    return t, {"first": first, "alter": alter, "second": second, "third": third}


LATEST = [
    {"id": 1, "a": 1.0, "b": 10.0, "c": 100.0},
    {"id": 2, "a": 2.5, "b": 20.5, "c": 200.0},
    {"id": 3, "a": 3.0, "b": 30.0, "c": 300.0},
]
AT_SECOND = [
    {"id": 1, "a": 1.0, "b": 10.0, "c": None},
    {"id": 2, "a": 2.5, "b": 20.5, "c": 200.0},
    {"id": 3, "a": 3.0, "b": 30.0, "c": 300.0},
]


def _rows(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])




def _archive(path: str) -> list[str]:
    return pyhudi.open_table(path).archive(options=ARCHIVE)


def test_the_race_is_real_without_the_archive_fallback_the_alter_is_gone(tmp_path):
    """(What the reads below survive: the ALTER's completed file is gone from the listed path.)"""
    t, times = _family_table(str(tmp_path / "t"))
    listed = t.active_timeline()
    alter = listed.get(times["alter"])
    assert _archive(t.path) == [times["first"], times["alter"], times["second"]]
    assert not os.path.exists(t.storage.full_path(listed.path_of(alter)))
    assert listed.get(times["alter"]) is alter  # (the listing still shows it active)


@pytest.mark.parametrize("how", ["read", "plan_scan"])
def test_a_latest_read_survives_the_alter_archived_between_listing_and_lookup(tmp_path, monkeypatch, how):
    t, times = _family_table(str(tmp_path / "t"))
    reader = racing_reader(t.path, monkeypatch, lambda: _archive(t.path))
    result = reader.read() if how == "read" else reader.plan_scan().to_table()
    assert reader.raced == [[times["first"], times["alter"], times["second"]]]
    assert _rows(result) == LATEST
    assert _rows(pyhudi.open_table(t.path).read()) == LATEST  # (the same read without the race)


@pytest.mark.parametrize("how", ["read", "plan_scan"])
def test_time_travel_survives_its_commits_archived_between_listing_and_lookup(tmp_path, monkeypatch, how):
    t, times = _family_table(str(tmp_path / "t"))
    reader = racing_reader(t.path, monkeypatch, lambda: _archive(t.path))
    if how == "read":
        result = reader.read(as_of=times["second"])
    else:
        result = reader.plan_scan(as_of=times["second"]).to_table()
    assert reader.raced == [[times["first"], times["alter"], times["second"]]]
    assert _rows(result) == AT_SECOND
    assert _rows(pyhudi.open_table(t.path).read(as_of=times["second"])) == AT_SECOND


def test_time_travel_before_the_alter_survives_the_race(tmp_path, monkeypatch):
    t, times = _family_table(str(tmp_path / "t"))
    reader = racing_reader(t.path, monkeypatch, lambda: _archive(t.path))
    result = reader.read(as_of=times["first"])
    assert reader.raced == [[times["first"], times["alter"], times["second"]]]
    assert _rows(result) == [{"id": 1, "a": 1.0, "b": 10.0}, {"id": 2, "a": 2.0, "b": 20.0}]


def test_an_incremental_read_survives_its_window_archived_between_listing_and_lookup(tmp_path, monkeypatch):
    t, times = _family_table(str(tmp_path / "t"))
    reader = racing_reader(t.path, monkeypatch, lambda: _archive(t.path))
    result = reader.read_incremental(times["first"], columns=["id", "a", "c"])
    assert reader.raced == [[times["first"], times["alter"], times["second"]]]
    expected = [{"id": 1, "a": 1.0, "c": 100.0}, {"id": 2, "a": 2.5, "c": 200.0}, {"id": 3, "a": 3.0, "c": 300.0}]
    assert _rows(result) == expected
    assert _rows(pyhudi.open_table(t.path).read_incremental(times["first"], columns=["id", "a", "c"])) == expected


def test_the_read_keeps_the_snapshot_it_listed_when_a_commit_completes_meanwhile(tmp_path, monkeypatch):
    """Another process archives and then commits: the read returns the snapshot it listed."""
    t, times = _family_table(str(tmp_path / "t"))

    def archive_then_write():
        archived = _archive(t.path)
        pyhudi.open_table(t.path).upsert(pa.table({"id": [4], "a": [4.0]}), options=OFF)
        timeline_module._RECORDS.clear()  # (what the writer decoded is in its own process)
        timeline_module._DECODED.clear()
        return archived

    reader = racing_reader(t.path, monkeypatch, archive_then_write)
    assert _rows(reader.read()) == LATEST
    assert _rows(pyhudi.open_table(t.path).read()) == [*LATEST, {"id": 4, "a": 4.0, "b": None, "c": None}]


def test_an_alter_removed_without_archival_is_a_clear_error_naming_it(tmp_path, monkeypatch):
    """A completed ALTER that left the active timeline and is not in the archive either (removed
    by another process, not archived) is not explained by archival: the read fails naming it."""
    t, times = _family_table(str(tmp_path / "t"))
    listed = t.active_timeline()
    alter_file = t.storage.full_path(listed.path_of(listed.get(times["alter"])))
    reader = racing_reader(t.path, monkeypatch, lambda: os.remove(alter_file))
    with pytest.raises(StaleTimelineError) as failure:
        reader.read()
    assert str(failure.value) == (
        f"instant {times['alter']} (deltacommit) left the active timeline after it was listed and is not in the "
        "archived timeline either (rolled back or removed by another process); reload the timeline")



def _cleaned_table(path: str) -> tuple[Table, dict[str, str]]:
    """Two cleans retaining one commit; archiving with :data:`ARCHIVE` moves the first clean and
    everything up to ``k2``. Only the first clean deleted files of ``u1``'s snapshot."""
    no_services = {**OFF, "hoodie.clean.automatic": "false", "hoodie.compact.inline": "false"}
    t = pyhudi.create_table(path, SCHEMA, "id", num_buckets=1, column_families={"fa": "a", "fb": "b"})

    def upsert(i: int) -> str:
        return t.upsert(pa.table({"id": [1, 2], "a": [float(i)] * 2, "b": [10.0 * i] * 2}, schema=SCHEMA),
                        options=no_services)

    times = {"u1": upsert(1), "k1": t.compact(), "u2": upsert(2)}
    times["c1"] = t.clean(options={"hoodie.cleaner.commits.retained": "1"})
    times.update(u3=upsert(3), k2=t.compact(), u4=upsert(4))
    times["c2"] = t.clean(options={"hoodie.cleaner.commits.retained": "1"})
    times.update(u5=upsert(5), u6=upsert(6))
    return t, times


def test_time_travel_into_a_snapshot_an_archived_clean_deleted_is_still_refused(tmp_path, monkeypatch):
    """The clean that deleted the files of ``u1``'s snapshot is archived between the read's
    listing and its check: the check reads it from the archive and refuses, naming that clean
    (a clean it could not read once counted as deleting nothing)."""
    t, times = _cleaned_table(str(tmp_path / "t"))
    reader = racing_reader(t.path, monkeypatch, lambda: _archive(t.path))
    with pytest.raises(CleanedSnapshotError,
                       match=f"as of .*: clean {times['c1']} deleted data files that snapshot reads"):
        reader.read(as_of=times["u1"])
    assert reader.raced == [[times[n] for n in ("u1", "k1", "u2", "c1", "u3", "k2")]]


def test_time_travel_to_a_retained_snapshot_survives_the_cleans_archived_meanwhile(tmp_path, monkeypatch):
    t, times = _cleaned_table(str(tmp_path / "t"))
    reader = racing_reader(t.path, monkeypatch, lambda: _archive(t.path))
    assert _rows(reader.read(as_of=times["k2"])) == [{"id": 1, "a": 3.0, "b": 30.0}, {"id": 2, "a": 3.0, "b": 30.0}]
    assert reader.raced == [[times[n] for n in ("u1", "k1", "u2", "c1", "u3", "k2")]]


def test_a_following_listing_reads_a_commit_archived_meanwhile_and_others_still_list_again(tmp_path, monkeypatch):
    """``Timeline.follow_archival`` is the reader's choice: a write's or a service's listing still
    raises, so that it lists again (``WriteClient._families_added``, the clean planner)."""
    t, times = _family_table(str(tmp_path / "t"))
    monkeypatch.setattr(timeline_module, "_RECORDS", {})
    monkeypatch.setattr(timeline_module, "_DECODED", {})
    reading, writing = t.active_timeline().follow_archival(), t.active_timeline()
    alter = reading.get(times["alter"])
    listed = reading.completed()
    _archive(t.path)
    assert reading.read_commit_summary(alter)[0] == "ALTER_SCHEMA"
    assert reading.read_bytes(alter) == t.active_timeline().archived().metadata_bytes(alter)
    assert reading.completed() == listed  # (the listing is kept: the ALTER still counts as active)
    with pytest.raises(StaleTimelineError, match=f"instant {times['alter']} \\(deltacommit\\) left the active "
                                                 "timeline after it was listed \\(archived or rolled back"):
        writing.read_bytes(writing.get(times["alter"]))

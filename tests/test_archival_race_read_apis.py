"""The table's read-only accessors answer for the timeline listing they took, as a read does
(``Timeline.follow_archival``, tests/test_read_families_added_listing.py): another process that
archives the commits they look up (ALTERs, the writes that recorded the schema and families)
between the listing and the lookup no longer makes them raise :class:`StaleTimelineError`.

And a read whose listing shows a compaction or clustering pending, which another process then
completes (and archives, and cleans after) before the read has planned: the read still returns
the rows of the snapshot it listed when their files are there; when a clean deleted them, the
snapshot is gone — the plan raises :class:`StaleSnapshotError` naming the clean, and
``Table.read`` plans once more on a fresh listing.

Each test stands for the reader in another process: the process-wide caches of decoded instant
files are emptied, and the reader runs on its own table handle, whose first listing is followed
by the other process's work before anything is read from it."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest

import pyhudi
from read_helpers import racing_reader
from pyhudi.config.families import ColumnFamily
from pyhudi.errors import CorruptFileError, StaleSnapshotError, StaleTimelineError
from pyhudi.table import Table
from pyhudi.timeline import timeline as timeline_module

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.float64()), ("b", pa.float64())])
WITH_C = pa.schema([*SCHEMA, pa.field("c", pa.float64())])
OFF = {"hoodie.archive.automatic": "false"}
SERVICES_OFF = {**OFF, "hoodie.clean.automatic": "false", "hoodie.compact.inline": "false"}
ARCHIVE = {"hoodie.keep.min.commits": "1", "hoodie.keep.max.commits": "2"}
FA, FB, FC = ColumnFamily("fa", ("a",)), ColumnFamily("fb", ("b",)), ColumnFamily("fc", ("c",))
BUCKET_0 = "00000000-0000-0000-0000-000000000000-0"


def _compacted_family_table(path: str) -> tuple[Table, dict[str, str]]:
    """Families fa, fb; an ALTER adds fc (column c); an update; a compaction last. Archiving
    with :data:`ARCHIVE` moves ``first``, ``alter`` and ``second``: the compaction left active
    records neither the families nor (being a service) the schema in effect, so every lookup of
    them reads an archived commit."""
    t = pyhudi.create_table(path, SCHEMA, "id", num_buckets=1, column_families={"fa": "a", "fb": "b"})
    first = t.upsert(pa.table({"id": [1, 2], "a": [1.0, 2.0], "b": [10.0, 20.0]}, schema=SCHEMA), options=OFF)
    alter = t.alter({"hoodie.colFamily.fc": "c"}, new_columns={"c": pa.float64()})
    second = t.upsert(pa.table({"id": [2, 3], "a": [2.5, 3.0], "b": [20.5, 30.0], "c": [200.0, 300.0]}),
                      options=OFF)
    compaction = t.compact(options=OFF)
    return t, {"first": first, "alter": alter, "second": second, "compaction": compaction}


def _archive(path: str) -> list[str]:
    return pyhudi.open_table(path).archive(options=ARCHIVE)


def _forget_decoded() -> None:
    """(What another process decoded stays in that process.)"""
    timeline_module._RECORDS.clear()
    timeline_module._DECODED.clear()




def _rows(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


@pytest.fixture
def compacted(tmp_path):
    t, times = _compacted_family_table(str(tmp_path / "t"))
    return t, times, [times["first"], times["alter"], times["second"]]


# ---------------------------------------------------------------- schema and families
def test_schema_survives_the_commits_that_recorded_it_archived_meanwhile(compacted, monkeypatch):
    t, times, archived = compacted
    reader = racing_reader(t.path, monkeypatch, lambda: _archive(t.path))
    assert reader.schema == WITH_C
    assert reader.raced == [archived]
    assert pyhudi.open_table(t.path).schema == WITH_C  # (the same lookup without the race)


@pytest.mark.parametrize("when, expected", [("first", SCHEMA), ("alter", WITH_C), ("second", WITH_C)])
def test_schema_at_a_time_whose_commits_were_archived_meanwhile(compacted, monkeypatch, when, expected):
    t, times, archived = compacted
    completion = {i.requested_time: i.completion_time for i in t.active_timeline().instants}[times[when]]
    reader = racing_reader(t.path, monkeypatch, lambda: _archive(t.path))
    assert reader.schema_at(completion) == expected
    assert reader.raced == [archived]


def test_column_families_survive_the_commits_that_recorded_them_archived_meanwhile(compacted, monkeypatch):
    t, times, archived = compacted
    reader = racing_reader(t.path, monkeypatch, lambda: _archive(t.path))
    assert reader.column_families == {"fa": FA, "fb": FB, "fc": FC}
    assert reader.raced == [archived]


def test_families_at_before_and_after_the_archived_alter(compacted, monkeypatch):
    t, times, archived = compacted
    completion = {i.requested_time: i.completion_time for i in t.active_timeline().instants}
    reader = racing_reader(t.path, monkeypatch, lambda: _archive(t.path))
    assert reader.families_at(completion[times["first"]]) == {"fa": FA, "fb": FB}
    assert reader.raced == [archived]
    assert reader.families_at(completion[times["second"]]) == {"fa": FA, "fb": FB, "fc": FC}
    assert reader.effective_families() == {"fa": FA, "fb": FB, "fc": FC}


def test_describe_survives_the_race(compacted, monkeypatch):
    """``pyhudi describe`` (the CLI) prints this."""
    t, times, archived = compacted
    reader = racing_reader(t.path, monkeypatch, lambda: _archive(t.path))
    described = reader.describe()
    assert reader.raced == [archived]
    assert described["column_families"] == {"fa": "a", "fb": "b", "fc": "c"}
    assert (described["type"], described["record_key"], described["num_buckets"]) == ("MERGE_ON_READ", ["id"], 1)


def test_a_plain_tables_schema_survives_the_race(tmp_path, monkeypatch):
    """A plain table (one default family): its schema (and so its family) comes from the last
    write, which archival moved behind the compaction."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1)
    first = t.upsert(pa.table({"id": [1], "a": [1.0], "b": [10.0]}, schema=SCHEMA), options=OFF)
    second = t.upsert(pa.table({"id": [2], "a": [2.0], "b": [20.0]}, schema=SCHEMA), options=OFF)
    t.compact(options=OFF)
    reader = racing_reader(t.path, monkeypatch, lambda: _archive(t.path))
    assert reader.families_at() == {"": ColumnFamily("", ("a", "b"))}  # (the default family)
    assert reader.raced == [[first, second]]
    assert reader.schema == SCHEMA
    assert reader.column_families == {}


# ---------------------------------------------------------------- file groups
def test_file_groups_survive_the_alter_archived_meanwhile(compacted, monkeypatch):
    """The view needs when the ALTER added fc (a full-row file older than it serves no fc)."""
    t, times, archived = compacted
    reader = racing_reader(t.path, monkeypatch, lambda: _archive(t.path))
    groups = reader.file_groups()
    assert reader.raced == [archived]
    assert [(g.partition_path, g.file_id) for g in groups] == [("", BUCKET_0)]
    (group,) = groups
    assert sorted((b.name.family, b.name.instant) for b in group.base_files) == [
        ("fa", times["compaction"]), ("fb", times["compaction"]), ("fc", times["compaction"])]
    assert sorted((lf.name.family or "", lf.name.instant) for lf in group.log_files) == sorted([
        ("", times["first"]), ("fa", times["second"]), ("fb", times["second"]), ("fc", times["second"])])
    assert group.family_since == {"fc": t.active_timeline().archived().get(times["alter"]).completion_time}


def test_file_groups_as_of_a_write_archived_meanwhile(compacted, monkeypatch):
    t, times, archived = compacted
    reader = racing_reader(t.path, monkeypatch, lambda: _archive(t.path))
    (group,) = reader.file_groups(as_of=times["second"])
    assert reader.raced == [archived]
    assert group.base_files == []  # (the compaction completed after that snapshot)
    assert sorted((lf.name.family or "", lf.name.instant) for lf in group.log_files) == sorted([
        ("", times["first"]), ("fa", times["second"]), ("fb", times["second"]), ("fc", times["second"])])


# ---------------------------------------------------------------- writers still list again
def test_a_write_still_relists_and_a_writers_listing_still_raises(compacted, monkeypatch):
    """Writers and services keep :meth:`Table.active_timeline` (no archival following): a
    listing a write took raises when its ALTER is archived, and a write lists again."""
    t, times, archived = compacted
    monkeypatch.setattr(timeline_module, "_RECORDS", {})
    monkeypatch.setattr(timeline_module, "_DECODED", {})
    writer = pyhudi.open_table(t.path)
    listed = writer.active_timeline()
    assert writer.snapshot_timeline()._follows_archival and not listed._follows_archival
    assert _archive(t.path) == archived
    with pytest.raises(StaleTimelineError, match=f"instant {times['alter']} \\(deltacommit\\) left the active "
                                                 "timeline after it was listed \\(archived or rolled back"):
        writer.history.schema_at(listed, writer.config, listed.get(times["alter"]).completion_time)
    third = writer.upsert(pa.table({"id": [4], "a": [4.0], "c": [400.0]}), options=OFF)
    assert _rows(pyhudi.open_table(t.path).read(columns=["id", "a", "c"])) == [
        {"id": 1, "a": 1.0, "c": None}, {"id": 2, "a": 2.5, "c": 200.0}, {"id": 3, "a": 3.0, "c": 300.0},
        {"id": 4, "a": 4.0, "c": 400.0}]
    assert third in [i.requested_time for i in pyhudi.open_table(t.path).timeline]


# ---------------------------------------------------------------- pending services completed meanwhile
def _pending_compaction_table(path: str) -> tuple[Table, dict[str, str]]:
    t = pyhudi.create_table(path, SCHEMA, "id", num_buckets=1, column_families={"fa": "a", "fb": "b"})
    u1 = t.upsert(pa.table({"id": [1, 2], "a": [1.0, 2.0], "b": [10.0, 20.0]}, schema=SCHEMA),
                  options=SERVICES_OFF)
    u2 = t.upsert(pa.table({"id": [1], "a": [1.5]}), options=SERVICES_OFF)
    return t, {"u1": u1, "u2": u2, "k": t.schedule_compaction()}


SNAPSHOT = [{"id": 1, "a": 1.5, "b": 10.0}, {"id": 2, "a": 2.0, "b": 20.0}]
NOW = [*SNAPSHOT, {"id": 3, "a": 3.0, "b": None}, {"id": 4, "a": 4.0, "b": None}]


def _complete_then(path: str, k: str, clean: bool) -> list[str]:
    """Another process runs compaction ``k``, writes twice, cleans (keeping one commit) if
    asked, and archives; returns what it archived."""
    other = pyhudi.open_table(path)
    other.run_compaction(k, options=SERVICES_OFF)
    other.upsert(pa.table({"id": [3], "a": [3.0]}), options=SERVICES_OFF)
    other.upsert(pa.table({"id": [4], "a": [4.0]}), options=SERVICES_OFF)
    if clean:
        other.clean(options={"hoodie.cleaner.commits.retained": "1"})
    archived = other.archive(options=ARCHIVE)
    _forget_decoded()
    return archived


def test_a_pending_compaction_completed_and_archived_meanwhile_reads_the_listed_snapshot(tmp_path, monkeypatch):
    """The listing showed the compaction pending: the read merges the slice before it (its
    plan is never needed), which is still there — the rows of the snapshot listed."""
    t, times = _pending_compaction_table(str(tmp_path / "t"))
    reader = racing_reader(t.path, monkeypatch, lambda: _complete_then(t.path, times["k"], clean=False))
    assert _rows(reader.read()) == SNAPSHOT
    assert reader.raced[0][:3] == [times["u1"], times["u2"], times["k"]]
    assert _rows(pyhudi.open_table(t.path).read()) == NOW


def test_a_clean_after_the_pending_compaction_completed_is_a_stale_snapshot_naming_it(tmp_path, monkeypatch):
    """A clean then deleted the slice the listed snapshot reads: that snapshot is gone, the plan
    says so (not damage) and names the clean."""
    t, times = _pending_compaction_table(str(tmp_path / "t"))
    (group,) = t.file_groups()  # (the slice the snapshot reads: both writes' logs)
    read_logs = sorted(lf.relpath for lf in group.log_files)
    assert [lf.name.instant for lf in sorted(group.log_files, key=lambda lf: lf.relpath)] == [times["u1"], times["u2"]]
    reader = racing_reader(t.path, monkeypatch, lambda: _complete_then(t.path, times["k"], clean=True))
    with pytest.raises(StaleSnapshotError) as failure:
        reader.plan_scan()
    (clean,) = [i.requested_time for i in pyhudi.open_table(t.path).active_timeline().completed_with_archived()
                if str(i.action) == "clean"]
    assert str(failure.value) == (
        f"data file {read_logs[0]} of the table at {t.path} is gone: clean {clean} completed after this read listed "
        "the timeline and deleted files that listing still counts (and 1 more of its file group); plan the read "
        "again on a fresh listing (retry it)")
    assert isinstance(failure.value, StaleTimelineError)
    assert reader.raced[0][:3] == [times["u1"], times["u2"], times["k"]]  # (the clean archived them too)


@pytest.mark.parametrize("how", ["read", "scan", "read_incremental"])
def test_the_read_plans_again_on_a_fresh_listing_after_a_stale_snapshot(tmp_path, monkeypatch, how):
    t, times = _pending_compaction_table(str(tmp_path / "t"))
    reader = racing_reader(t.path, monkeypatch, lambda: _complete_then(t.path, times["k"], clean=True))
    if how == "read":
        result = reader.read()
    elif how == "scan":
        result = reader.scan().read_all()
    else:
        result = reader.read_incremental(times["u1"], columns=["id", "a", "b"])
    assert len(reader.raced) == 1
    expected = NOW if how != "read_incremental" else [r for r in NOW if r["id"] != 2]
    assert _rows(result) == expected


def test_files_missing_without_a_clean_meanwhile_are_still_damage(tmp_path):
    """A file gone with no clean after the listing is not a moved-on table: CorruptFileError."""
    t, times = _pending_compaction_table(str(tmp_path / "t"))
    (group,) = t.file_groups()
    log = next(lf for lf in group.log_files if lf.name.instant == times["u2"])
    t.storage.delete(log.relpath)
    with pytest.raises(CorruptFileError, match=f"data file {log.relpath} of the table at .* is missing: commit "
                                               f"{times['u2']} wrote it and it was neither replaced nor cleaned"):
        pyhudi.open_table(t.path).read()


def _pending_clustering_table(path: str) -> tuple[Table, dict[str, str]]:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.float64())])
    t = pyhudi.create_table(path, schema, "id", table_type="COPY_ON_WRITE")
    i1 = t.insert(pa.table({"id": [1, 2], "a": [1.0, 2.0]}, schema=schema), options=SERVICES_OFF)
    i2 = t.insert(pa.table({"id": [3], "a": [3.0]}, schema=schema), options=SERVICES_OFF)
    return t, {"i1": i1, "i2": i2, "k": t.schedule_clustering("id")}


def test_a_pending_clustering_completed_cleaned_and_archived_meanwhile(tmp_path, monkeypatch):
    """A clustering is archived only once a clean passed it, which deleted the file groups it
    replaced — the files the listed snapshot reads: ``plan_scan`` says the snapshot is gone,
    ``read`` plans again and returns the table now."""
    t, times = _pending_clustering_table(str(tmp_path / "t"))

    def complete_clean_archive() -> list[str]:
        other = pyhudi.open_table(t.path)
        other.run_clustering(times["k"], options=SERVICES_OFF)
        for i in range(3):
            other.upsert(pa.table({"id": [10 + i], "a": [10.0 + i]}), options=SERVICES_OFF)
        other.clean(options={"hoodie.cleaner.commits.retained": "1"})
        archived = other.archive(options=ARCHIVE)
        _forget_decoded()
        return archived

    reader = racing_reader(t.path, monkeypatch, complete_clean_archive)
    assert _rows(reader.read()) == [{"id": 1, "a": 1.0}, {"id": 2, "a": 2.0}, {"id": 3, "a": 3.0},
                                    {"id": 10, "a": 10.0}, {"id": 11, "a": 11.0}, {"id": 12, "a": 12.0}]
    assert times["k"] in reader.raced[0]


def test_plan_scan_of_a_pending_clustering_cleaned_meanwhile_names_the_clean(tmp_path, monkeypatch):
    t, times = _pending_clustering_table(str(tmp_path / "t"))

    def complete_then_clean() -> str:
        other = pyhudi.open_table(t.path)
        other.run_clustering(times["k"], options=SERVICES_OFF)
        other.upsert(pa.table({"id": [10], "a": [10.0]}), options=SERVICES_OFF)
        clean = other.clean(options={"hoodie.cleaner.commits.retained": "1"})
        _forget_decoded()
        return clean

    reader = racing_reader(t.path, monkeypatch, complete_then_clean)
    with pytest.raises(StaleSnapshotError) as failure:
        reader.plan_scan()
    (clean,) = reader.raced
    assert f" is gone: clean {clean} completed after this read listed the timeline and deleted files that listing " \
           "still counts" in str(failure.value)
    assert _rows(pyhudi.open_table(t.path).read()) == [
        {"id": 1, "a": 1.0}, {"id": 2, "a": 2.0}, {"id": 3, "a": 3.0}, {"id": 10, "a": 10.0}]


# ---------------------------------------------------------------- plans of a listing, archived meanwhile
def test_a_readers_listing_reads_a_pending_compactions_plan_from_the_archive(tmp_path, monkeypatch):
    """The listing showed compaction ``k`` requested; another process ran and archived it: its
    plan (which never changes) is read from the archive, which keeps it. A writer's listing
    still raises, so that it lists again."""
    from pyhudi.fsview.view import FileSystemView

    t, times = _pending_compaction_table(str(tmp_path / "t"))
    monkeypatch.setattr(timeline_module, "_RECORDS", {})
    monkeypatch.setattr(timeline_module, "_DECODED", {})
    reading, writing = t.snapshot_timeline(), t.active_timeline()
    requested = reading.get(times["k"]).as_requested()
    before = t.storage.read(reading.path_of(requested))
    archived = _complete_then(t.path, times["k"], clean=False)
    assert archived[:3] == [times["u1"], times["u2"], times["k"]]
    assert not t.storage.exists(reading.path_of(requested))
    assert reading.read_bytes(requested) == before
    plan = reading.read_metadata(requested).to_dict()  # (fa merges both writes' logs, fb the first's)
    full_row, fa_log = f".{BUCKET_0}_{times['u1']}.log.1_0-1-0", f".{BUCKET_0}_{times['u2']}_fa.log.1_0-1-0"
    assert [(op["fileId"], op["deltaFilePaths"]) for op in plan["operations"]] == [
        (BUCKET_0, [full_row, fa_log]), (BUCKET_0, [full_row])]
    assert plan["extraMetadata"]["pyhudi.compaction.families"] == "fa,fb"
    view = FileSystemView(t.storage, reading, 0)
    assert view.pending_compaction_file_groups() == {("", BUCKET_0): times["k"]}
    with pytest.raises(StaleTimelineError, match=f"instant {times['k']} \\(compaction\\) left the active timeline "
                                                 "after it was listed \\(archived or rolled back"):
        writing.read_bytes(writing.get(times["k"]).as_requested())


def test_a_readers_listing_reads_a_pending_clusterings_plan_from_the_archive(tmp_path, monkeypatch):
    from pyhudi.fsview.view import FileSystemView

    t, times = _pending_clustering_table(str(tmp_path / "t"))
    monkeypatch.setattr(timeline_module, "_RECORDS", {})
    monkeypatch.setattr(timeline_module, "_DECODED", {})
    reading = t.snapshot_timeline()
    inputs = {(g.partition_path, g.file_id): times["k"] for g in t.file_groups()}
    assert len(inputs) == 1  # (the second insert went to the first's small file group)
    assert FileSystemView(t.storage, reading, 0).pending_clustering_file_groups() == inputs
    _forget_decoded()
    other = pyhudi.open_table(t.path)
    other.run_clustering(times["k"], options=SERVICES_OFF)
    for i in range(3):
        other.upsert(pa.table({"id": [10 + i], "a": [10.0 + i]}), options=SERVICES_OFF)
    other.clean(options={"hoodie.cleaner.commits.retained": "1"})
    assert times["k"] in other.archive(options=ARCHIVE)
    _forget_decoded()
    assert FileSystemView(t.storage, reading, 0).pending_clustering_file_groups() == inputs


def test_a_pending_plan_rolled_back_not_archived_is_a_clear_error(tmp_path, monkeypatch):
    """A plan file gone without its instant in the archive is not explained by archival."""
    t, times = _pending_compaction_table(str(tmp_path / "t"))
    reading = t.snapshot_timeline()
    requested = reading.get(times["k"]).as_requested()
    t.storage.delete(reading.path_of(requested))
    with pytest.raises(StaleTimelineError) as failure:
        reading.read_metadata(requested)
    assert str(failure.value) == (
        f"instant {times['k']} (compaction) left the active timeline after it was listed and is not in the archived "
        "timeline either (rolled back or removed by another process); reload the timeline")


def _versions_table(path: str) -> tuple[Table, pa.Schema]:
    """Copy-on-write, partitions x (three versions of its file group) and y."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("p", pa.string()), ("a", pa.float64())])
    t = pyhudi.create_table(path, schema, "id", partition_fields="p", table_type="COPY_ON_WRITE")
    for value in (1.0, 2.0, 3.0):
        t.upsert(pa.table({"id": [1], "p": ["x"], "a": [value]}, schema=schema), options=SERVICES_OFF)
    t.upsert(pa.table({"id": [2], "p": ["y"], "a": [9.0]}, schema=schema), options=SERVICES_OFF)
    return t, schema


@pytest.mark.parametrize("how", ["plan_scan", "read"])
def test_a_missing_file_no_clean_deleted_is_damage_once_the_read_lists_again(tmp_path, monkeypatch, how):
    """A clean completed meanwhile, but it deleted older versions of partition x; the file gone
    from partition y (the snapshot's) was lost otherwise. The first plan cannot tell and names
    the clean; the read's second plan, on a fresh listing with no clean after it, reports the
    damage (CorruptFileError)."""
    t, _ = _versions_table(str(tmp_path / "t"))
    y = t.timeline[-1].requested_time
    (y_base,) = [b.relpath for g in t.file_groups() if g.partition_path == "y" for b in g.base_files]

    def clean_and_lose_a_file() -> str:
        other = pyhudi.open_table(t.path)
        clean = other.clean(options={"hoodie.cleaner.commits.retained": "1"})
        other.storage.delete(y_base)
        return clean

    reader = racing_reader(t.path, monkeypatch, clean_and_lose_a_file)
    if how == "plan_scan":  # (it fails on partition x first: the clean deleted its old versions)
        with pytest.raises(StaleSnapshotError) as stale:
            reader.plan_scan()
        (clean,) = reader.raced
        assert re.fullmatch(f"data file x/[^ ]+ of the table at {re.escape(t.path)} is gone: clean {clean} completed "
                            "after this read listed the timeline and deleted files that listing still counts "
                            r"\(and 1 more of its file group\); plan the read again on a fresh listing \(retry it\)",
                            str(stale.value))
    with pytest.raises(CorruptFileError) as failure:
        reader.read()
    assert str(failure.value) == (f"data file {y_base} of the table at {t.path} is missing: commit {y} wrote it and "
                                  "it was neither replaced nor cleaned as of the snapshot read")


def test_a_clean_of_old_versions_meanwhile_does_not_fail_the_read(tmp_path, monkeypatch):
    """The clean deleted versions the listing still counted (not the ones its snapshot reads):
    the read plans again and returns the table (it was a CorruptFileError)."""
    t, _ = _versions_table(str(tmp_path / "t"))
    reader = racing_reader(t.path, monkeypatch,
                            lambda: pyhudi.open_table(t.path).clean(options={"hoodie.cleaner.commits.retained": "1"}))
    assert sorted(reader.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "p": "x", "a": 3.0}, {"id": 2, "p": "y", "a": 9.0}]
    assert len(reader.raced) == 1 and reader.raced[0] is not None


def test_the_clis_timeline_and_stats_survive_the_race(compacted, monkeypatch):
    """``pyhudi timeline`` and ``pyhudi stats`` read the commits they listed: those another
    process archives meanwhile are read from the archive (before: StaleTimelineError)."""
    from pyhudi.cli.inspect import timeline_rows
    from pyhudi.cli.stats import write_amplification

    t, times, archived = compacted
    reader = racing_reader(t.path, monkeypatch, lambda: _archive(t.path))
    rows = timeline_rows(reader)
    assert reader.raced == [archived]
    assert [(r["requested_time"], r["operation"]) for r in rows] == [
        (times["first"], "UPSERT"), (times["alter"], "ALTER_SCHEMA"), (times["second"], "UPSERT"),
        (times["compaction"], "COMPACT")]
    reader = racing_reader(t.path, monkeypatch, lambda: None)
    assert [c["instant"] for c in write_amplification(reader)["commits"]] == [times["compaction"]]

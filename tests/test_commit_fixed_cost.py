"""What a commit no longer repeats (issue 15 item 2), each with the guarantee it must keep:

- a bucketed write's planning lists its file groups without ``stat``-ing their log files (it
  appends new log files: only the old ones' names and the base files' sizes matter, and a
  partition folder holds mostly log files);
- the instant files a write creates are added to the timeline folder's last listing, so the
  completion's listing and the next write's parse no file names when nothing else changed —
  and a file another process added is still found."""

from __future__ import annotations

import pyarrow as pa

import pyhudi
from pyhudi.fsview.view import FileSystemView
from pyhudi.storage.fs import Storage
from pyhudi.timeline import listing
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.write.client import WriteClient

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.float64())])


def rows(ids, value):
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [float(value)] * len(ids)}, schema=SCHEMA)


def bucketed_table(tmp_path):
    """Base files from a bulk insert, then log files from two upserts, in 2 buckets."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2)
    t.bulk_insert(rows(range(10), 1))
    t.upsert(rows([1, 2, 3], 2))
    t.upsert(rows([4, 5], 3))
    return t


def test_a_listing_can_leave_out_the_sizes_of_chosen_files(tmp_path):
    (tmp_path / "a.parquet").write_bytes(b"12345")
    (tmp_path / ".f1_001.log.1_0-1-0").write_bytes(b"123")
    (tmp_path / "sub").mkdir()
    storage = Storage(str(tmp_path))
    listed = {f.path: (f.size, f.mtime_ns is None) for f in storage.list_files(stat=lambda n: ".log." not in n)}
    assert listed == {"a.parquet": (5, False), ".f1_001.log.1_0-1-0": (-1, True)}
    assert {f.path: f.size for f in storage.list_files()} == {"a.parquet": 5, ".f1_001.log.1_0-1-0": 3}


def test_file_groups_without_log_sizes_have_the_same_files_and_base_sizes(tmp_path):
    t = bucketed_table(tmp_path)
    view = FileSystemView(t.storage, t.active_timeline(), 0)
    full, named = view.file_groups({""}), view.file_groups({""}, log_sizes=False)
    assert [g.file_id for g in named] == [g.file_id for g in full] and len(full) == 2
    for with_sizes, without in zip(full, named):
        assert [(b.name.name, b.size, b.mtime_ns) for b in without.base_files] == \
            [(b.name.name, b.size, b.mtime_ns) for b in with_sizes.base_files]
        assert [b.size > 0 for b in without.base_files] == [True]
        assert [lf.name.name for lf in without.log_files] == [lf.name.name for lf in with_sizes.log_files]
        assert all(lf.size == -1 and lf.mtime_ns is None for lf in without.log_files)
        assert all(lf.size > 0 for lf in with_sizes.log_files)
    on_disk = sorted(p.name for p in (tmp_path / "t").iterdir() if ".log." in p.name)
    assert sorted(lf.name.name for g in named for lf in g.log_files) == on_disk and len(on_disk) >= 2


def test_a_bucketed_write_plans_the_same_tasks_from_a_listing_without_log_sizes(tmp_path, monkeypatch):
    t = bucketed_table(tmp_path)
    asked = []
    file_groups = FileSystemView.file_groups

    def recorded(self, partitions=None, *, log_sizes=True):
        asked.append(log_sizes)
        return file_groups(self, partitions, log_sizes=log_sizes)

    monkeypatch.setattr(FileSystemView, "file_groups", recorded)
    client = WriteClient(t)
    txn = client.begin("upsert")
    prepared = txn.prepare(rows([1, 6, 7], 4))
    planned = [(k.file_id, k.kind, k.base_file, k.prev_commit, k.family_bases) for k in txn.plan_tasks(prepared)]
    assert asked == [False]
    monkeypatch.setattr(FileSystemView, "file_groups",
                        lambda self, partitions=None, *, log_sizes=True: file_groups(self, partitions))
    assert [(k.file_id, k.kind, k.base_file, k.prev_commit, k.family_bases)
            for k in txn.plan_tasks(prepared)] == planned
    client.abort(txn)
    t.upsert(rows([1, 6, 7], 4))
    assert [(r["id"], r["v"]) for r in t.read().sort_by("id").to_pylist()] == \
        [(0, 1.0), (1, 4.0), (2, 2.0), (3, 2.0), (4, 3.0), (5, 3.0), (6, 4.0), (7, 4.0), (8, 1.0), (9, 1.0)]


def test_a_writes_listings_parse_no_names_when_only_it_changed_the_timeline(tmp_path, monkeypatch):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2)
    t.upsert(rows([1, 2], 1))
    t.upsert(rows([3], 2))
    parsed = []
    parse = listing.parse_instant_file
    monkeypatch.setattr(listing, "parse_instant_file", lambda name, *a: parsed.append(name) or parse(name, *a))
    lists = []
    list_files = listing.list_instant_files

    def listed(*args):
        before = len(parsed)
        found = list_files(*args)
        lists.append(len(parsed) - before)
        return found

    monkeypatch.setattr("pyhudi.timeline.timeline.list_instant_files", listed)
    instant = t.upsert(rows([2, 4], 3))
    assert lists == [0, 0]  # planning, completion (under the lock): the names were known
    # another process's instant file: found by the next listing (which parses the names again)
    other = Instant("29991231235959999", Action.DELTACOMMIT, State.REQUESTED)
    (tmp_path / "t" / ".hoodie" / "timeline" / other.file_name(2)).write_bytes(b"")
    assert t.active_timeline().get(other.requested_time) == other
    assert lists[-1] > 0
    assert t.active_timeline().get(instant).is_completed
    assert [(r["id"], r["v"]) for r in t.read().sort_by("id").to_pylist()] == [(1, 1.0), (2, 3.0), (3, 2.0), (4, 3.0)]

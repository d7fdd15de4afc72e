"""Table services whose listing another process archives from under them (default options).

A service lists the timeline, then reads the commits of that listing (when the table's families
were added, its schema). Writers archive automatically after every commit, so a commit of the
listing may be archived before it is read. Writes list again when that happens; the services
failed with StaleTimelineError ("left the active timeline after it was listed") — found by
tests/test_hunt_random_kills.py (a clean beside writers).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import pyhudi
from pyhudi.evolution import SchemaHistory

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_concurrency import FAMILY_COLUMNS, SCHEMA, family_table, model  # noqa: E402
from write_helpers import make_rows  # noqa: E402

FAMS = ["fa", "fc", "fd"]


@pytest.mark.parametrize("service", ["clean", "compact", "full compaction", "schedule_compaction"])
def test_a_service_whose_listed_commit_is_archived_meanwhile_lists_again(tmp_path, monkeypatch, service):
    t = family_table(tmp_path)
    plan, results = [], []
    for k in range(34):  # more than hoodie.keep.max.commits (30): archival has work
        entry = {"ids": [k % 7, 8], "columns": ["id", *FAMILY_COLUMNS[FAMS[k % 3]]], "tag": k + 1}
        t.upsert(make_rows(SCHEMA, entry["columns"], entry["ids"], entry["tag"]),
                 options={"hoodie.archive.automatic": "false"})
        plan.append(entry)
        results.append({"tag": k + 1, "instant": t.last_write.instant, "completion_time": t.last_write.completion_time})
        if k == 12:
            t.compact(options={"hoodie.archive.automatic": "false"})
    archiver = pyhudi.open_table(t.path)
    t = pyhudi.open_table(t.path)  # the service: a process that has read none of those commits yet
    import pyhudi.timeline.timeline as timeline_module

    monkeypatch.setattr(timeline_module, "_RECORDS", {})
    monkeypatch.setattr(timeline_module, "_DECODED", {})
    real = SchemaHistory._added_by
    archived = []

    def added_by(self, timeline, commits):  # another process archives right after the service listed
        if not archived:
            archived.append(archiver.archive())
        return real(self, timeline, commits)

    monkeypatch.setattr(SchemaHistory, "_added_by", added_by)
    if service == "clean":
        t.clean()
    elif service == "compact":
        assert t.compact() is not None
    elif service == "full compaction":
        assert t.compact(full=True) is not None
    else:
        assert t.schedule_compaction() is not None
    assert archived and archived[0]
    monkeypatch.undo()
    assert t.read().sort_by("id").to_pylist() == model([plan], [results])

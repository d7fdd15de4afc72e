"""A write into a family table reads when ALTERs added its families (so an update's record
positions name a block the family's reads meet). Another process may archive one of those
commits between the write's listing and that read: the write reads them again from a fresh
listing instead of failing (found by tests/test_soak.py's three writers)."""

from __future__ import annotations

import pyarrow as pa

import pyhudi
from pyhudi.errors import StaleTimelineError

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.float64()), ("b", pa.float64())])


def test_a_commit_archived_meanwhile_is_read_again_from_a_fresh_listing(tmp_path, monkeypatch):
    table = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families={"fa": "a", "fb": "b"})
    table.insert(pa.table({"id": [1, 2], "a": [1.0, 2.0], "b": [3.0, 4.0]}, schema=SCHEMA))
    history = type(table.history)
    real = history.families_added
    calls = []

    def once_stale(self, timeline):
        calls.append(timeline)
        if len(calls) == 1:
            raise StaleTimelineError("instant 1 (deltacommit) left the active timeline after it was listed")
        return real(self, timeline)

    monkeypatch.setattr(history, "families_added", once_stale)
    table.upsert(pa.table({"id": [2], "a": [20.0]}))
    assert len(calls) == 2 and calls[0] is not calls[1]  # (the second on a fresh listing)
    monkeypatch.undo()
    assert table.read(columns=["id", "a", "b"]).sort_by("id").to_pylist() == [
        {"id": 1, "a": 1.0, "b": 3.0}, {"id": 2, "a": 20.0, "b": 4.0}]

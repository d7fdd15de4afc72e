"""A table handle's kept scan plans (pyhudi/read/plan.py): a warm read reuses the plan of the
same scan while the timeline and the data files are listed alike, and plans anew — exact rows
— as soon as anything changed: another handle's commit, this handle's own writes, a clean."""

from __future__ import annotations

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.fsview.view import FileSystemView

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.float64()), ("b", pa.string())])
FAMILIES = {"fa": "a", "fb": "b"}


@pytest.fixture
def views(monkeypatch):
    """Counts the file-system views planning builds file groups from."""
    built = []
    original = FileSystemView.file_groups

    def counting(self, *args, **kwargs):
        built.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(FileSystemView, "file_groups", counting)
    return built


def _rows(ids, tag: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "a": [float(i) for i in ids], "b": [f"{tag}{i}" for i in ids]},
                    schema=SCHEMA)


def _table(tmp_path) -> pyhudi.Table:
    table = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2, column_families=FAMILIES)
    table.bulk_insert(_rows(range(6), "s"))
    return table


def test_repeated_read_reuses_the_plan_with_fresh_task_counters(tmp_path, views):
    table = _table(tmp_path)
    first = table.plan_scan(["id", "b"])
    planned = len(views)
    second = table.plan_scan(["id", "b"])
    assert planned and len(views) == planned  # (the second plan built no file groups)
    assert [(t.partition_path, t.file_id) for t in second.tasks] == [(t.partition_path, t.file_id) for t in first.tasks]
    assert all(a is not b and a.metrics is not b.metrics for a, b in zip(first.tasks, second.tasks))
    second.tasks[0].run()
    assert second.tasks[0].metrics and not first.tasks[0].metrics
    assert table.read(["id", "b"]).sort_by("id").to_pylist() == [{"id": i, "b": f"s{i}"} for i in range(6)]
    table.plan_scan(["id", "a"])  # (another scan: planned on its own)
    assert len(views) == 2 * planned


def test_another_handles_commit_is_seen_by_the_next_read(tmp_path, views):
    table = _table(tmp_path)
    assert table.read().num_rows == 6
    table.read()
    other = pyhudi.open_table(str(tmp_path / "t"))
    other.upsert(pa.table({"id": pa.array([2, 9], pa.int64()), "b": ["u2", "u9"]}))
    got = table.read().sort_by("id").to_pylist()
    expected = [{"id": i, "a": float(i), "b": f"s{i}"} for i in range(6)]
    expected[2]["b"] = "u2"
    assert got == [*expected, {"id": 9, "a": None, "b": "u9"}]
    other.delete(pa.table({"id": pa.array([0], pa.int64())}))
    assert table.read(["id"]).sort_by("id")["id"].to_pylist() == [1, 2, 3, 4, 5, 9]


def test_own_writes_and_services_replan(tmp_path):
    table = _table(tmp_path)
    assert table.read(["id", "b"]).num_rows == 6
    table.upsert(_rows([1, 7], "v"))
    assert table.read(["id", "b"]).sort_by("id").to_pylist() == [
        {"id": i, "b": {1: "v1", 7: "v7"}.get(i, f"s{i}")} for i in [0, 1, 2, 3, 4, 5, 7]]
    table.compact()
    table.clean(options={"hoodie.cleaner.commits.retained": "1"})
    assert table.read(["id", "b"]).sort_by("id").to_pylist() == [
        {"id": i, "b": {1: "v1", 7: "v7"}.get(i, f"s{i}")} for i in [0, 1, 2, 3, 4, 5, 7]]


def test_pinned_and_filtered_scans_are_planned_every_time(tmp_path, views):
    table = _table(tmp_path)
    instant = table.upsert(_rows([3], "w"))
    counts = [len(views)]
    for _ in range(2):
        assert table.read(["id", "b"], filters=[("id", "=", 3)]).to_pylist() == [{"id": 3, "b": "w3"}]
        assert table.read(["id", "b"], as_of=instant).sort_by("id")["b"].to_pylist()[3] == "w3"
        counts.append(len(views))
    assert counts[2] - counts[1] == counts[1] - counts[0] > 0

"""A clean that deletes files of a read's snapshot while the read's tasks run (default options).

The read planned on a listing the clean was not on yet (so neither time travel's check nor the
plan's damage check could know), then a task found a file gone. Before, the read failed with a
bare StorageError ("cannot open ...: No such file"). Now it is planned once more on a fresh
listing: a time travel the clean broke is refused with CleanedSnapshotError naming the clean, a
latest-snapshot read returns the newest snapshot's rows (found by
tests/test_hunt_services_beside_writers.py: a reader beside service processes).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import pyhudi
from pyhudi.errors import CleanedSnapshotError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_hunt_clean_running import history, rows  # noqa: E402
from test_concurrency import FAMILY_COLUMNS, SCHEMA, model  # noqa: E402
from write_helpers import make_rows  # noqa: E402


def clean_before_the_tasks(monkeypatch, cleaner, before_clean=lambda: None):
    """The first time read tasks are about to run: ``before_clean()``, then a clean (another handle)."""
    import pyhudi.read.plan as read_plan

    real = read_plan.run_tasks
    cleaned = []

    def run_tasks(tasks, workers):
        if not cleaned:
            before_clean()
            cleaned.append(cleaner.clean())
        return real(tasks, workers)

    monkeypatch.setattr(read_plan, "run_tasks", run_tasks)
    return cleaned


def test_a_time_travel_whose_files_a_clean_deletes_while_it_reads_is_refused(tmp_path, monkeypatch):
    t, plan, results = history(tmp_path)
    first = results[0]["completion_time"]
    cleaned = clean_before_the_tasks(monkeypatch, pyhudi.open_table(t.path))
    with pytest.raises(CleanedSnapshotError, match="clean "):
        t.read(as_of=first)
    assert cleaned and cleaned[0] is not None


def test_an_incremental_read_whose_files_a_clean_deletes_while_it_reads_is_refused(tmp_path, monkeypatch):
    t, plan, results = history(tmp_path)
    cleaned = clean_before_the_tasks(monkeypatch, pyhudi.open_table(t.path))
    with pytest.raises(CleanedSnapshotError, match="clean "):
        t.read_incremental(results[0]["completion_time"], results[1]["completion_time"])
    assert cleaned and cleaned[0] is not None


def test_a_latest_snapshot_read_whose_files_a_clean_deletes_while_it_reads_returns_a_whole_snapshot(
        tmp_path, monkeypatch):
    t, plan, results = history(tmp_path)
    writer = pyhudi.open_table(t.path)
    fams = ["fa", "fc", "fd"]

    def commits_and_a_compaction():  # (no retained snapshot reads the read's slices any more)
        for k in range(22):
            if k == 11:
                writer.compact(options={"hoodie.clean.automatic": "false"})
            entry = {"ids": [k % 6, 7], "columns": ["id", *FAMILY_COLUMNS[fams[k % 3]]], "tag": 300 + k}
            writer.upsert(make_rows(SCHEMA, entry["columns"], entry["ids"], entry["tag"]),
                          options={"hoodie.clean.automatic": "false"})
            plan.append(entry)
            results.append({"tag": entry["tag"], "instant": writer.last_write.instant,
                            "completion_time": writer.last_write.completion_time})

    cleaned = clean_before_the_tasks(monkeypatch, writer, commits_and_a_compaction)
    assert rows(t) == model([plan], [results])
    assert cleaned and cleaned[0] is not None

"""A process killed at each step of a write, of its automatic clean and archival, of a compaction,
a clean, an archival or a rollback; then the next writer, the services and reads, default options.

Every case starts from a copy of one family table with history (36 upserts across families and
two compactions; automatic clean and archival were off while it was built, so the killed process's
own automatic clean and archival have work to do). The killed process dies with ``os._exit`` (no
cleanup runs, as under SIGKILL). Afterwards:

- a read equals the model of the committed writes (the killed write counts only if its instant
  completed: nothing of it is ever half visible);
- the next write, a compaction, a clean and an archival (default options) succeed, the killed
  instant is rolled back or finished, nothing is left pending;
- the final read equals the model, time travel to each committed write equals the model then
  (or is refused with CleanedSnapshotError), and no data file is orphaned.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pyhudi
from pyhudi.errors import CleanedSnapshotError
from pyhudi.storage.naming import parse_data_file_name

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_concurrency import FAMILY_COLUMNS, SCHEMA, family_table, model  # noqa: E402
from write_helpers import make_rows  # noqa: E402

PY = sys.executable
KILLER = str(Path(__file__).resolve().parent / "hunt_kill.py")
QUIET = {"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"}
FAMS = ["fa", "fc", "fd"]


def commit_of(plan_entry, result):
    return {"tag": plan_entry["tag"], "instant": result.instant, "completion_time": result.completion_time}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A family table with 36 upserts and two compactions; its write plan and results."""
    root = tmp_path_factory.mktemp("template")
    t = family_table(root)
    plan, results = [], []
    for k in range(36):
        fam = FAMS[k % 3]
        entry = {"ids": list(range((k * 7) % 30, (k * 7) % 30 + 6)), "columns": ["id", *FAMILY_COLUMNS[fam]],
                 "tag": 100 + k}
        t.upsert(make_rows(SCHEMA, entry["columns"], entry["ids"], entry["tag"]), options=QUIET)
        plan.append(entry)
        results.append(commit_of(entry, t.last_write))
        if k in (14, 28):
            assert t.compact(options=QUIET) is not None
    return Path(t.path), plan, results


def _copy(template, tmp_path):
    src, plan, results = template
    dst = tmp_path / "t"
    shutil.copytree(src, dst, symlinks=True)
    return dst, list(plan), list(results)


def _kill(path, op, point, **extra):
    proc = subprocess.run([PY, KILLER, json.dumps({"path": str(path), "op": op, "point": point, **extra})],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 9, f"never reached {point}: rc={proc.returncode} {proc.stderr}"


def _rows(t, **kw):
    return t.read(**kw).sort_by("id").to_pylist()


def _every(t):
    return sorted([*t.archived_timeline(), *t.timeline], key=lambda i: i.requested_time)


def _check_no_orphans(t):
    known = {i.requested_time for i in _every(t)}
    root = Path(t.path)
    for path in root.rglob("*"):
        if path.is_file() and ".hoodie" not in path.relative_to(root).parts and \
                not path.name.startswith(".hoodie_partition_metadata"):
            assert parse_data_file_name(path.name).instant in known, f"orphaned data file {path.name}"


def _check_time_travel(t, plan, results):
    done = sorted(results, key=lambda r: r["completion_time"])
    read = 0
    for k, r in enumerate(done):
        try:
            got = _rows(t, as_of=r["completion_time"])
        except CleanedSnapshotError:
            continue
        assert got == model([plan], [done[:k + 1]]), f"time travel to {r['completion_time']}"
        read += 1
    assert read >= 3


def _settle_and_check(path, plan, results, killed_entry=None):
    """Reads before and after the next writer and every service; returns the table."""
    t = pyhudi.open_table(str(path))
    if killed_entry is not None:  # did the killed write complete? (then it counts)
        known = {r["instant"] for r in results}
        new = [i for i in _every(t) if i.is_completed and str(i.action) == "deltacommit"
               and i.requested_time not in known]
        assert len(new) <= 1
        if new:
            plan.append(killed_entry)
            results.append({"tag": killed_entry["tag"], "instant": new[0].requested_time,
                            "completion_time": new[0].completion_time})
    assert _rows(t) == model([plan], [results]), "the read right after the kill"
    entry = {"ids": [1, 2, 3, 40, 41], "columns": ["id", "c"], "tag": 900}
    t.upsert(make_rows(SCHEMA, entry["columns"], entry["ids"], entry["tag"]))  # the next writer, defaults
    plan.append(entry)
    results.append(commit_of(entry, t.last_write))
    assert _rows(t) == model([plan], [results])
    t.compact()
    t.clean()
    t.archive()
    entry = {"ids": [2, 5, 42], "columns": ["id", "a", "b"], "tag": 901}
    t.upsert(make_rows(SCHEMA, entry["columns"], entry["ids"], entry["tag"]))
    plan.append(entry)
    results.append(commit_of(entry, t.last_write))
    t = pyhudi.open_table(str(path))
    assert _rows(t) == model([plan], [results]), "the read after the next writer and the services"
    assert [i for i in t.timeline if i.is_pending] == []
    _check_time_travel(t, plan, results)
    _check_no_orphans(t)
    return t


WRITE_POINTS = {
    "requested only": ["pyhudi.timeline.transitions", "InstantTransitions.create_requested", "after", 1],
    "inflight, no file": ["pyhudi.timeline.transitions", "InstantTransitions.transition_to_inflight", "after", 1],
    "a marker, no file": ["pyhudi.write.handle", "create_marker", "after", 1],
    "after the first log file": ["pyhudi.write.handle", "write_log_file", "after", 1],
    "holding the lock, before completion": ["pyhudi.write.client", "check_write_conflicts", "before", 1],
    "completed, markers and heartbeat left": ["pyhudi.write.commit", "delete_markers", "before", 1],
    "in its clean, before deleting": ["pyhudi.services.clean", "_execute", "before", 1],
    "in its clean, after planning": ["pyhudi.services.clean", "plan_clean", "after", 1],
    "in its archival, LSM file written": ["pyhudi.services.archive", "write_lsm_file", "after", 1],
    "in its archival, published": ["pyhudi.services.archive", "publish", "after", 1],
    "in its archival, deleting active files": ["pyhudi.storage.fs", "Storage.delete", "after", 5],
}


@pytest.mark.parametrize("point", list(WRITE_POINTS), ids=list(WRITE_POINTS))
def test_a_writer_killed_at_each_step(tmp_path, template, point):
    path, plan, results = _copy(template, tmp_path)
    entry = {"ids": [4, 5, 6, 33], "columns": ["id", "d", "e"], "tag": 500}
    _kill(path, "upsert", WRITE_POINTS[point], ids=entry["ids"], columns=entry["columns"], tag=entry["tag"])
    _settle_and_check(path, plan, results, killed_entry=entry)


SERVICE_POINTS = {
    "compaction, after its first base file": ("compact", ["pyhudi.services.compaction", "write_base_file", "after", 1]),
    "compaction, completed, markers left": ("compact", ["pyhudi.write.commit", "delete_markers", "before", 1]),
    "full compaction, holding the lock": ("compact_full", ["pyhudi.timeline.transitions",
                                                           "InstantTransitions._create", "before", 3]),
    "clean, after the first delete": ("clean", ["pyhudi.storage.fs", "Storage.delete", "after", 1]),
    "archival, after publishing": ("archive", ["pyhudi.services.archive", "publish", "after", 1]),
    "archival, mid-deletion": ("archive", ["pyhudi.storage.fs", "Storage.delete", "after", 7]),
}


@pytest.mark.parametrize("case", list(SERVICE_POINTS), ids=list(SERVICE_POINTS))
def test_a_service_killed_at_each_step(tmp_path, template, case):
    path, plan, results = _copy(template, tmp_path)
    op, point = SERVICE_POINTS[case]
    for k in range(3):  # something for the compaction to do
        entry = {"ids": [k, k + 10], "columns": ["id", *FAMILY_COLUMNS[FAMS[k]]], "tag": 600 + k}
        t = pyhudi.open_table(str(path))
        t.upsert(make_rows(SCHEMA, entry["columns"], entry["ids"], entry["tag"]), options=QUIET)
        plan.append(entry)
        results.append(commit_of(entry, t.last_write))
    _kill(path, op, point)
    _settle_and_check(path, plan, results)


ROLLBACK_POINTS = {
    "claimed its target, nothing deleted": ["pyhudi.write.rollback", "execute_rollback", "before", 1],
    "after the first file deleted": ["pyhudi.storage.fs", "Storage.delete", "after", 1],
    "rollback requested only": ["pyhudi.timeline.transitions", "InstantTransitions.create_requested", "after", 1],
}


@pytest.mark.parametrize("point", list(ROLLBACK_POINTS), ids=list(ROLLBACK_POINTS))
def test_a_rollback_of_a_dead_writer_killed_at_each_step(tmp_path, template, point):
    path, plan, results = _copy(template, tmp_path)
    _kill(path, "upsert", WRITE_POINTS["after the first log file"], ids=[7, 8, 9], columns=["id", "c"], tag=700)
    _kill(path, "rollback_failed", ROLLBACK_POINTS[point])
    _settle_and_check(path, plan, results)

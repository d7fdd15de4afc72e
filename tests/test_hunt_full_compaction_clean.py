"""A full compaction never plans to read a file no snapshot reads (default options).

Found by tests/test_hunt_services_beside_writers.py (two service processes): after a full
compaction wrote full-row base files and family compactions then gave every family a newer base
file of its own, a full compaction still named the old full-row base file in its plan. No
retained snapshot reads that file, so a clean planned just before the compaction was scheduled
deleted it once the plan existed — and the compaction then failed on every run ("compaction plan
names ..., which is not a visible data file"), leaving its file groups stuck pending for good.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyhudi

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_concurrency import FAMILY_COLUMNS, SCHEMA, family_table, model  # noqa: E402
from write_helpers import make_rows  # noqa: E402

FAMS = ["fa", "fc", "fd"]


def setup(tmp_path):
    """Full-row base files, then every family compacted on its own, then more than
    ``hoodie.cleaner.commits.retained`` (10) writes: the full-row base files are superseded."""
    t = family_table(tmp_path)
    plan, results = [], []

    def write(k, fam, ids):
        entry = {"ids": ids, "columns": ["id", *FAMILY_COLUMNS[fam]], "tag": k}
        t.upsert(make_rows(SCHEMA, entry["columns"], entry["ids"], entry["tag"]),
                 options={"hoodie.clean.automatic": "false"})  # (the test schedules the clean itself)
        plan.append(entry)
        results.append({"tag": k, "instant": t.last_write.instant, "completion_time": t.last_write.completion_time})

    for k, fam in enumerate(FAMS):
        write(k + 1, fam, list(range(12)))
    full = t.compact(full=True)
    for k, fam in enumerate(FAMS):
        write(k + 10, fam, list(range(12)))
        assert t.compact(families=[fam]) is not None
    for k in range(12):
        write(k + 20, FAMS[k % 3], [2, 4, 5])
    return t, plan, results, full


def test_a_full_compaction_plan_names_only_files_of_the_latest_snapshot(tmp_path):
    t, plan, results, full = setup(tmp_path)
    planned = {row["base_file"] for row in t.plan_compaction(full=True) if row.get("base_file")} | {
        f for row in t.plan_compaction(full=True) for f in row.get("log_files") or ()}
    assert planned and not any(f"_{full}." in name for name in planned), planned


def test_a_clean_planned_before_a_full_compaction_does_not_break_it(tmp_path):
    t, plan, results, full = setup(tmp_path)
    clean = t.schedule_clean()  # planned now: the old full-row base files are no longer read
    assert clean is not None
    compaction = t.schedule_compaction(full=True)
    assert compaction is not None
    assert t.run_clean(clean) == clean
    assert not [p for p in Path(t.path).iterdir() if f"_{full}.parquet" in p.name]  # the clean deleted them
    assert t.run_compaction(compaction) == compaction
    t = pyhudi.open_table(t.path)
    assert t.read().sort_by("id").to_pylist() == model([plan], [results])
    assert [i for i in t.timeline if i.is_pending] == []

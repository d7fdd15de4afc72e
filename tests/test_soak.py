"""A soak test of a long-lived table (issue 13): three writer processes on different families, with
inline compaction, automatic cleaning and automatic archival all on, for many commits.

Bounded to fit CI (``PYHUDI_SOAK_COMMITS`` commits per writer, 60 by default; set it to e.g. 700 for
the issue's 2,000 commits): every commit succeeds, the final read equals the model, time travel to
every retained commit equals the model at that commit, no data file is orphaned (each was written by
a completed or pending instant), and the active timeline stays within the archival bounds.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import pyhudi
from pyhudi.errors import CleanedSnapshotError
from pyhudi.storage.naming import parse_data_file_name

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_concurrency import FAMILY_COLUMNS, SCHEMA, model, plans, read_rows, run_writers  # noqa: E402

COMMITS = int(os.environ.get("PYHUDI_SOAK_COMMITS", "60"))
SERVICES = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "4",
            "hoodie.cleaner.commits.retained": "6", "hoodie.keep.min.commits": "8", "hoodie.keep.max.commits": "12"}


@pytest.mark.slow
def test_three_writers_with_compaction_cleaning_and_archival_keep_the_table_bounded_and_right(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "soak"), SCHEMA, "id", num_buckets=2,
                            column_families={"fa": "a,b", "fc": "c", "fd": "d,e"}, options=SERVICES)
    writer_plans = plans([FAMILY_COLUMNS["fa"], FAMILY_COLUMNS["fc"], FAMILY_COLUMNS["fd"]], COMMITS, seed=21)
    results = run_writers(tmp_path, t.path, writer_plans)  # default write options: the table's own
    assert [r for rs in results for r in rs if "error" in r] == []
    t = pyhudi.open_table(t.path)
    assert read_rows(t) == model(writer_plans, results)

    active = t.timeline
    archived = t.archived_timeline()
    every = sorted([*archived, *active], key=lambda i: i.requested_time)
    actions = [str(i.action) for i in every if i.is_completed]
    assert actions.count("deltacommit") == 3 * COMMITS and "commit" in actions and "clean" in actions
    if COMMITS >= 30:
        assert archived, "the timeline grew past hoodie.keep.max.commits without archival"
    commits = [i for i in active if i.is_completed and str(i.action) in ("deltacommit", "commit")]
    assert len(commits) <= 12 + 3 + 2  # keep.max, plus writes that completed while an archival ran

    # time travel: every retained write commit reads as the model at its completion
    writes = sorted((r for rs in results for r in rs), key=lambda r: r["completion_time"])
    checked = []
    for k, r in enumerate(writes):
        try:
            got = t.read(as_of=r["completion_time"]).sort_by("id").to_pylist()
        except CleanedSnapshotError:
            continue  # cleaned away: refused, never wrong
        assert got == model(writer_plans, [writes[:k + 1]]), r
        checked.append(k)
    # the cleaner retains the last 6 commits (compactions among them): the newest writes read
    assert len(checked) >= 3 and checked[-1] == len(writes) - 1

    # no orphan: every data file was written by a completed (active or archived) or pending instant
    known = {i.requested_time for i in every}
    root = Path(t.path)
    for path in root.rglob("*"):
        if path.is_file() and ".hoodie" not in path.relative_to(root).parts and path.name != ".hoodie_partition_metadata":
            assert parse_data_file_name(path.name).instant in known, f"orphaned data file {path.name}"

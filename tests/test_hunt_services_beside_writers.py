"""Table services in their own process beside several writer processes, default options.

Three writers upsert their own families of one bucketed merge-on-read table (NBCC by default)
while two more processes each compact (per family, full, default), clean and archive in a loop,
and another reads the latest snapshot, time-travels and reads incrementally. Checked: every
write commits; the final read equals the model of every committed write applied in completion-time
order; every read a reader made mid-run equals the model after some prefix of the writes (never a
half-applied commit); a time-travel read equals the model at its instant, and an incremental read
the rows its window's writes touched as of its end — or is refused with CleanedSnapshotError.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import pyhudi

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hunt_helpers import run_all  # noqa: E402
from test_concurrency import FAMILY_COLUMNS, SCHEMA, family_table, model, plans, read_rows  # noqa: E402


def _as_lists(rows: list[dict]) -> list[list]:
    return [[r[c] for c in SCHEMA.names] for r in rows]


def check_reads(writer_plans, results, reads) -> int:
    """Every read equals the model after a prefix of the writes in completion order (as_of reads:
    the prefix that completed at or before their time). Returns the reads checked."""
    done = sorted((r for rs in results for r in rs if "error" not in r), key=lambda r: r["completion_time"])
    by_tag = {c["tag"]: c for plan in writer_plans for c in plan}
    prefixes = [_as_lists(model(writer_plans, [done[:k]])) for k in range(len(done) + 1)]
    checked = 0
    for read in reads:
        if "error" in read:
            assert read["type"] == "CleanedSnapshotError" and read["kind"] != "snapshot", read
            continue
        if read["kind"] == "snapshot":
            assert read["rows"] in prefixes, "a snapshot read matches no committed state"
        elif read["kind"] == "as_of":
            k = sum(1 for r in done if r["completion_time"] <= read["as_of"])
            assert read["rows"] == prefixes[k], f"time travel to {read['as_of']} is wrong"
        else:  # the rows the writes completed in (start, end] touched, as of end
            k = sum(1 for r in done if r["completion_time"] <= read["end"])
            touched = {key for r in done[:k] if r["completion_time"] > read["start"] for key in by_tag[r["tag"]]["ids"]}
            expected = [row for row in prefixes[k] if row[0] in touched]
            assert read["rows"] == expected, f"incremental read ({read['start']}, {read['end']}] is wrong"
        checked += 1
    return checked


@pytest.mark.slow
def test_family_writers_with_a_service_process_and_a_reader_default_options(tmp_path):
    t = family_table(tmp_path)
    writer_plans = plans([FAMILY_COLUMNS["fa"], FAMILY_COLUMNS["fc"], FAMILY_COLUMNS["fd"]], 25, seed=31)
    actions = ["compact_family", "compact_family", "compact_full", "compact", "clean", "archive"]
    services = [{"mode": "services", "seed": seed, "min_steps": 12, "actions": actions, "pause_ms": 5}
                for seed in (5, 7)]  # two at once: the same services race each other too
    reader = {"mode": "reader", "seed": 6, "pause_ms": 20}
    results, (*service_outs, reads), errs = run_all(tmp_path, t.path, writer_plans, [*services, reader])
    assert [r for rs in results for r in rs if "error" in r] == [], errs
    steps = [s for out in service_outs for s in out]
    assert [s for s in steps if "error" in s] == [], errs
    assert sum(1 for s in steps if s["action"].startswith("compact") and s["result"]) >= 3
    t = pyhudi.open_table(t.path)
    assert read_rows(t) == model(writer_plans, results)
    assert check_reads(writer_plans, results, reads) >= 5
    every = [*t.archived_timeline(), *t.timeline]
    assert sum(1 for i in every if str(i.action) == "deltacommit") == 75
    assert all(i.is_completed for i in every)

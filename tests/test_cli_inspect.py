"""pyhudi timeline / show-instant / files (fsview) / stats: text and --json output, exit codes."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from cli_helpers import run, run_json

import pyhudi

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.float64()), ("b", pa.string())])
FID0 = "00000000-0000-0000-0000-000000000000-0"
FID1 = "00000001-0000-0000-0000-000000000000-0"


def table(tmp_path, **options):
    """Two buckets, families fa (a) and fb (b); three upserts then a compaction of fa."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2, column_families={"fa": "a", "fb": "b"},
                            # (one log per family also in new file groups: each family's files to inspect)
                            options={"hoodie.pyhudi.insert.full.row": "false", **options})
    t.upsert(pa.table({"id": [0, 1, 2, 3], "a": [0.0, 1.0, 2.0, 3.0], "b": ["w", "x", "y", "z"]}))
    t.upsert(pa.table({"id": [1], "a": [1.5]}))  # fa only, bucket 1
    t.upsert(pa.table({"id": [1, 5], "a": [1.7, 5.0], "b": ["X", "v"]}))
    t.compact(families=["fa"])
    return t


def cells(out: str) -> list[list[str]]:
    """The rows of the rich tables in ``out``, as lists of stripped cell texts."""
    return [[c.strip() for c in line.strip().strip("│").split("│")] for line in out.splitlines()
            if line.strip().startswith("│")]


def sizes(t) -> dict[str, int]:
    return {name: os.path.getsize(os.path.join(t.path, name)) for name in os.listdir(t.path)
            if not name.startswith(".") or ".log." in name}


# ------------------------------------------------------------------------------ timeline
def test_timeline_lists_actions_states_times_and_operations(tmp_path, capsys):
    t = table(tmp_path)
    instants = t.timeline
    listed = run_json(capsys, "timeline", t.path)
    assert [(r["requested_time"], r["action"], r["origin_action"], r["state"], r["completion_time"], r["operation"],
             r["archived"]) for r in listed] == [
        (i.requested_time, str(i.action), str(i.origin_action), "COMPLETED", i.completion_time,
         "COMPACT" if i.is_compaction else "UPSERT", False) for i in instants]
    assert [r["origin_action"] for r in listed] == ["deltacommit"] * 3 + ["compaction"]
    out = run(capsys, "timeline", t.path).out
    assert f"t: timeline ({len(instants)} instants)" in out
    last = instants[-1]
    assert [last.requested_time, "commit (compaction)", "COMPLETED", last.completion_time, "COMPACT"] in cells(out)


def test_timeline_shows_pending_instants_and_archived_ones_with_archived(tmp_path, capsys):
    t = table(tmp_path, **{"hoodie.keep.min.commits": "1", "hoodie.keep.max.commits": "2",
                           "hoodie.archive.automatic": "false"})
    pending = t.schedule_compaction(families=["fb"])
    archived = t.archive({"hoodie.keep.min.commits": "1", "hoodie.keep.max.commits": "2"})
    assert archived  # the oldest commits moved to the history
    active = run_json(capsys, "timeline", t.path)
    assert all(not r["archived"] for r in active) and archived[0] not in [r["requested_time"] for r in active]
    assert (active[-1]["requested_time"], active[-1]["action"], active[-1]["state"], active[-1]["completion_time"],
            active[-1]["operation"]) == (pending, "compaction", "REQUESTED", None, None)
    both = run_json(capsys, "timeline", t.path, "--archived")
    assert [r["requested_time"] for r in both] == sorted(
        archived + [r["requested_time"] for r in active])
    assert [r["requested_time"] for r in both if r["archived"]] == archived
    assert {r["operation"] for r in both if r["archived"]} == {"UPSERT"}
    out = run(capsys, "timeline", t.path, "--archived").out
    assert f"active and archived timeline ({len(both)} instants)" in out
    assert [r[-1] for r in cells(out)] == ["yes" if r["archived"] else "" for r in both]


def test_timeline_of_a_missing_table_is_one_error_line(tmp_path, capsys):
    captured = run(capsys, "timeline", str(tmp_path / "none"), code=2)
    assert captured.out == ""
    assert captured.err == f"error: no Hudi table at {tmp_path / 'none'}: .hoodie/hoodie.properties not found\n"


# ------------------------------------------------------------------------------ show-instant
def test_show_instant_decodes_commit_metadata(tmp_path, capsys):
    t = table(tmp_path)
    first = t.timeline[0]
    shown = run_json(capsys, "show-instant", t.path, first.requested_time)
    assert (shown["action"], shown["state"], shown["completion_time"], shown["archived"]) == (
        "deltacommit", "COMPLETED", first.completion_time, False)
    assert [(f["state"], f["file"]) for f in shown["files"]] == [
        ("REQUESTED", f"{first.requested_time}.deltacommit.requested"),
        ("INFLIGHT", f"{first.requested_time}.deltacommit.inflight"),
        ("COMPLETED", f"{first.requested_time}_{first.completion_time}.deltacommit")]
    completed = shown["files"][-1]["content"]
    assert completed["operationType"] == "UPSERT"
    stats = [s for group in completed["partitionToWriteStats"].values() for s in group]
    assert sorted((s["fileId"], s["path"].split("_")[-2].split(".")[0], s["numWrites"]) for s in stats) == [
        (FID0, "fa", 2), (FID0, "fb", 2), (FID1, "fa", 2), (FID1, "fb", 2)]
    out = run(capsys, "show-instant", t.path, first.requested_time).out
    assert out.startswith(f"deltacommit {first.requested_time} COMPLETED, completed {first.completion_time}\n")
    assert f"COMPLETED: {first.requested_time}_{first.completion_time}.deltacommit" in out
    assert '"operationType": "UPSERT"' in out


def test_show_instant_decodes_a_compaction_plan_and_a_clean_plan(tmp_path, capsys):
    t = table(tmp_path, **{"hoodie.cleaner.commits.retained": "1"})
    pending = t.schedule_compaction(families=["fb"])
    plan = t.active_timeline().read_metadata(t.active_timeline().get(pending))
    shown = run_json(capsys, "show-instant", t.path, pending)
    assert (shown["action"], shown["state"]) == ("compaction", "REQUESTED")
    [requested] = shown["files"]
    assert requested["file"] == f"{pending}.compaction.requested"
    assert requested["content"] == json.loads(json.dumps(plan.to_dict(), default=str))
    assert sorted(op["fileId"] for op in requested["content"]["operations"]) == [FID0, FID1]
    t.run_compaction(pending)
    clean = t.schedule_clean({"hoodie.cleaner.commits.retained": "1"})
    shown = run_json(capsys, "show-instant", t.path, clean)
    assert shown["files"][0]["file"] == f"{clean}.clean.requested"
    to_delete = shown["files"][0]["content"]["filePathsToBeDeletedPerPartition"]
    assert sorted(f["filePath"].rpartition("/")[2] for files in to_delete.values() for f in files) == sorted(
        r["file"] for r in t.plan_clean({"hoodie.cleaner.commits.retained": "1"}))


def test_show_instant_of_an_archived_instant_reads_the_history(tmp_path, capsys):
    t = table(tmp_path)
    first = t.timeline[0].requested_time
    assert t.archive({"hoodie.keep.min.commits": "1", "hoodie.keep.max.commits": "2"})
    shown = run_json(capsys, "show-instant", t.path, first)
    assert (shown["archived"], shown["state"]) == (True, "COMPLETED")
    assert [(f["state"], f["file"]) for f in shown["files"]] == [("COMPLETED", None)]
    assert shown["files"][0]["content"]["operationType"] == "UPSERT"
    assert "(archived)" in run(capsys, "show-instant", t.path, first).out


@pytest.mark.parametrize("instant, message", [
    ("20200101000000000", "no instant 20200101000000000 on the timeline of table 't' (neither active nor archived)"),
    ("yesterday", "'yesterday' is not an instant time (yyyyMMddHHmmssSSS"),
])
def test_show_instant_of_an_unknown_or_malformed_instant_fails(tmp_path, capsys, instant, message):
    t = table(tmp_path)
    captured = run(capsys, "show-instant", t.path, instant, code=2)
    assert captured.out == "" and captured.err.startswith(f"error: {message}")


# ------------------------------------------------------------------------------ files / fsview
def test_files_lists_groups_families_slices_and_sizes(tmp_path, capsys):
    t = table(tmp_path)
    on_disk = sizes(t)
    groups = run_json(capsys, "files", t.path)
    assert [g["file_id"] for g in groups] == [FID0, FID1]
    for g in groups:
        assert g["bytes"] == sum(on_disk[n] for n in g["base_files"] + g["log_files"])
        assert [f["family"] for f in g["families"]] == ["fa", "fb"]
        fa, fb = (f["slices"] for f in g["families"])
        assert len(fa) == 2 and fa[0]["base_file"] is None  # the logs before the compaction, then its base
        assert fa[1]["base_file"].endswith(f"_{t.timeline[-1].requested_time}_fa.parquet")
        assert fa[1]["log_files"] == [] and fa[1]["base_bytes"] == on_disk[fa[1]["base_file"]]
        assert len(fb) == 1 and fb[0]["base_file"] is None and fb[0]["log_bytes"] == sum(
            on_disk[n] for n in fb[0]["log_files"])
    assert [len(g["families"][1]["slices"][0]["log_files"]) for g in groups] == [2, 1]  # ids 1 and 5: bucket 0
    assert run_json(capsys, "fsview", t.path) == groups  # the hudi-cli name
    out = run(capsys, "files", t.path).out
    assert "t: 2 file groups" in out
    fb0 = next(r for r in cells(out) if r[1:3] == [FID0, "fb"])
    assert fb0[:6] == ["(none)", FID0, "fb", "1", "(log only)", "2"]


def test_files_as_of_an_earlier_instant(tmp_path, capsys):
    t = table(tmp_path)
    first = t.timeline[0].requested_time
    groups = run_json(capsys, "files", t.path, "--as-of", first)
    assert all(len(g["log_files"]) == 2 and g["base_files"] == [] for g in groups)
    captured = run(capsys, "files", t.path, "--as-of", "not-a-time", code=2)
    assert captured.err.startswith("error: ") and "not-a-time" in captured.err


# ------------------------------------------------------------------------------ stats
def test_stats_file_sizes_per_family(tmp_path, capsys):
    import numpy as np

    t = table(tmp_path)
    on_disk = sizes(t)
    report = run_json(capsys, "stats", t.path, "filesizes")
    assert list(report) == ["filesizes"]
    by_kind = {(r["family"], r["kind"]): r for r in report["filesizes"]}
    assert sorted(by_kind) == [("fa", "base"), ("fa", "log"), ("fb", "log")]
    fb_logs = [s for n, s in on_disk.items() if "_fb.log." in n]
    row = by_kind[("fb", "log")]
    assert (row["files"], row["total_bytes"], row["min"], row["max"]) == (
        len(fb_logs), sum(fb_logs), min(fb_logs), max(fb_logs))
    assert row["p50"] == float(np.percentile(fb_logs, 50)) and row["avg"] == float(np.mean(fb_logs))
    out = run(capsys, "stats", t.path, "filesizes").out
    assert "t: file sizes" in out and ["fb", "log", "3"] in [r[:3] for r in cells(out)]


def test_stats_write_amplification_per_commit(tmp_path, capsys):
    t = table(tmp_path)
    report = run_json(capsys, "stats", t.path, "wa")["wa"]
    instants = [i.requested_time for i in t.timeline]
    assert [(r["instant"], r["operation"], r["records_written"], r["records_updated"], r["records_inserted"])
            for r in report["commits"]] == [
        (instants[0], "UPSERT", 8, 0, 8),  # 4 rows x 2 families
        (instants[1], "UPSERT", 1, 1, 0),  # fa of id 1
        (instants[2], "UPSERT", 4, 4, 0),  # ids 1 and 5, 2 families (log appends count as updates)
        (instants[3], "COMPACT", 5, 5, 0)]  # fa of 5 rows rewritten
    first = report["commits"][0]
    assert first["write_amplification"] is None  # nothing updated
    assert report["commits"][2]["write_amplification"] == 1.0
    assert first["bytes_per_record"] == round(first["bytes_written"] / 8, 1)
    assert report["total"]["records_written"] == 18 and report["total"]["write_amplification"] == 1.8
    out = run(capsys, "stats", t.path, "wa").out
    assert "write amplification per commit" in out
    assert cells(out)[-1][:8] == ["total", "", "", "18", "10", "8", "0", f"{report['total']['bytes_written'] / 1024:.1f} KiB"]


def test_stats_log_files_per_slice_and_all_by_default(tmp_path, capsys):
    t = table(tmp_path)
    report = run_json(capsys, "stats", t.path)
    assert list(report) == ["filesizes", "wa", "logs"]
    assert report["logs"] == [
        {"family": "fa", "slices": 2, "log_files": 0, "min": 0, "avg": 0.0, "max": 0, "slices_by_log_files": {"0": 2}},
        {"family": "fb", "slices": 2, "log_files": 3, "min": 1, "avg": 1.5, "max": 2,
         "slices_by_log_files": {"1": 1, "2": 1}}]
    out = run(capsys, "stats", t.path).out
    assert "log files per latest slice" in out and "1: 1, 2: 1" in out


def test_stats_rejects_an_unknown_kind(tmp_path, capsys):
    t = table(tmp_path)
    captured = run(capsys, "stats", t.path, "sizes", code=2)
    assert captured.out == "" and captured.err.startswith("error: pyhudi stats: argument kind: invalid choice: 'sizes'")


def test_show_instant_decodes_a_rollback_plan_and_its_metadata(tmp_path, capsys):
    t = table(tmp_path)
    last = t.upsert(pa.table({"id": [9], "a": [9.0], "b": ["n"]}))
    timeline = t.active_timeline()
    written = sorted(s.path for s in timeline.read_metadata(timeline.get(last)).write_stats())
    rollback = t.rollback(last)
    shown = run_json(capsys, "show-instant", t.path, rollback)
    assert [(f["state"], f["file"].split("_")[0].split(".", 1)[-1] if f["state"] != "COMPLETED" else "")
            for f in shown["files"]] == [("REQUESTED", "rollback.requested"), ("INFLIGHT", "rollback.inflight"),
                                         ("COMPLETED", "")]
    plan = shown["files"][0]["content"]
    assert plan["instantToRollback"] == {"commitTime": last, "action": "deltacommit"}
    assert sorted(p for r in plan["RollbackRequests"] for p in r["filesToBeDeleted"]) == written
    assert shown["files"][-1]["content"]["commitsRollback"] == [last]


def test_progress_draws_only_on_a_terminal(monkeypatch):
    import io

    from pyhudi.cli.output import progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stderr", io.StringIO())
    with progress("work", total=2) as advance:
        advance()
    assert __import__("sys").stderr.getvalue() == ""  # not a terminal: nothing drawn
    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    with progress("work", total=2) as advance:
        advance()
        advance()
    assert "work" in screen.getvalue()

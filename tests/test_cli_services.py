"""pyhudi compact / clean / archive / rollback: --schedule, --run, both, --dry-run; output and exit codes."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from cli_helpers import run, run_json

import pyhudi
from pyhudi.cli.services import SERVICES

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.float64()), ("b", pa.string())])
FID0 = "00000000-0000-0000-0000-000000000000-0"
KEEP = ["--option", "hoodie.keep.min.commits=1", "--option", "hoodie.keep.max.commits=2"]


def table(tmp_path, writes=3):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families={"fa": "a", "fb": "b"},
                            options={"hoodie.archive.automatic": "false"})
    for i in range(writes):
        t.upsert(pa.table({"id": [1, 2], "a": [float(i), 2.0], "b": [f"v{i}", "w"]}))
    return t


def rows(t):
    return t.read().sort_by("id").to_pylist()


def files(t) -> set[str]:
    return {n for n in os.listdir(t.path) if not n.startswith(".hoodie")}


def test_compact_dry_run_schedule_run_and_both(tmp_path, capsys):
    t = table(tmp_path)
    before, timeline = rows(t), [str(i) for i in t.timeline]
    plan = run_json(capsys, "compact", t.path, "--dry-run")["plan"]
    assert [(op["file_id"], op["family"], op["base_file"], len(op["log_files"])) for op in plan] == [
        (FID0, "fa", None, 3), (FID0, "fb", None, 3)]
    out = run(capsys, "compact", t.path, "--dry-run", "--families", "fb").out
    assert out.startswith("1 file slices would be compacted\n") and "compact plan (dry run)" in out
    assert [str(i) for i in t.timeline] == timeline  # a dry run writes nothing
    scheduled = run_json(capsys, "compact", t.path, "--schedule", "--families", "fa")
    assert scheduled["state"] == "REQUESTED"
    assert (t.timeline[-1].requested_time, str(t.timeline[-1].action)) == (scheduled["compaction"], "compaction")
    assert run(capsys, "compact", t.path, "--run", scheduled["compaction"]).out == (
        f"compaction {scheduled['compaction']} completed\n")
    both = run_json(capsys, "compact", t.path)  # fb's slice is left
    assert both["state"] == "COMPLETED" and t.timeline[-1].requested_time == both["compaction"]
    assert run(capsys, "compact", t.path).out == "nothing to compact\n"
    assert run_json(capsys, "compact", t.path, "--dry-run") == {"plan": []}
    assert rows(t) == before


def test_clean_modes(tmp_path, capsys):
    t = table(tmp_path)
    t.compact()
    retain = ["--option", "hoodie.cleaner.commits.retained=1"]
    before, on_disk = rows(t), files(t)
    plan = run_json(capsys, "clean", t.path, "--dry-run", *retain)["plan"]
    assert sorted(r["file"] for r in plan) == sorted(n for n in on_disk if ".log." in n)
    assert files(t) == on_disk
    out = run(capsys, "clean", t.path, "--dry-run", *retain).out
    assert out.startswith(f"{len(plan)} files would be deleted\n")
    scheduled = run_json(capsys, "clean", t.path, "--schedule", *retain)
    assert scheduled["state"] == "REQUESTED" and files(t) == on_disk
    assert run_json(capsys, "clean", t.path, "--run", scheduled["clean"]) == {
        "clean": scheduled["clean"], "state": "COMPLETED"}
    assert files(t) == {n for n in on_disk if ".log." not in n}
    assert run(capsys, "clean", t.path, *retain).out == "nothing to clean\n"
    assert rows(t) == before


def test_archive_dry_run_then_both(tmp_path, capsys):
    t = table(tmp_path, writes=4)
    commits = [i.requested_time for i in t.timeline]
    plan = run_json(capsys, "archive", t.path, "--dry-run", *KEEP)["plan"]
    assert [r["requested_time"] for r in plan] == commits[:3]
    assert [i.requested_time for i in t.timeline] == commits
    assert run(capsys, "archive", t.path, *KEEP).out == f"archived 3 instants ({commits[0]} .. {commits[2]})\n"
    assert [i.requested_time for i in t.timeline] == commits[3:]
    assert run_json(capsys, "archive", t.path, *KEEP) == {"archived": [], "state": None}
    assert run(capsys, "archive", t.path, "--dry-run", *KEEP).out == "0 instants would be archived (nothing to archive)\n"


def test_rollback_dry_run_lists_the_files_then_rolls_back(tmp_path, capsys):
    t = table(tmp_path)
    before = rows(t)
    last = t.upsert(pa.table({"id": [7], "a": [7.0], "b": ["s"]}))
    plan = run_json(capsys, "rollback", t.path, last, "--dry-run")["plan"]
    assert sorted(r["file"] for r in plan) == sorted(n for n in files(t) if f"_{last}_" in n)
    assert {r["source"] for r in plan} == {"write stat"}
    out = run(capsys, "rollback", t.path, last).out
    assert out.startswith(f"{last} rolled back (rollback instant ")
    assert rows(t) == before and not any(f"_{last}_" in n for n in files(t))
    earlier = t.timeline[0].requested_time
    captured = run(capsys, "rollback", t.path, earlier, "--dry-run", code=2)
    assert captured.err.startswith(f"error: deltacommit {earlier} is not the latest completed commit")


@pytest.mark.parametrize("argv, message", [
    (["compact", "{path}", "--schedule", "--run", "20200101000000000"], "compact: --schedule and --run exclude each other"),
    (["clean", "{path}", "--dry-run", "--schedule"], "clean: --schedule and --dry-run exclude each other"),
    (["archive", "{path}", "--schedule"], "archive --schedule: archival writes no plan"),
    (["rollback", "{path}", "20200101000000000", "--run", "20200101000000000"], "rollback --run: a rollback's plan"),
    (["rollback", "{path}", "20200101000000000"], "no instant 20200101000000000 on the active timeline"),
    (["compact", "{path}", "--run", "20200101000000000"], "20200101000000000"),
    (["compact", "{path}", "--families", "nope"], "unknown column family 'nope'"),
    (["compact", "{path}", "--option", "novalue"], "--option 'novalue': expected KEY=VALUE"),
    (["archive", "{path}", "--option", "hoodie.keep.max.commits=1"], "hoodie.keep.max.commits (1) must be greater"),
    (["clean", "{path}", "--option", "hoodie.cleaner.policy=NOPE"], "hoodie.cleaner.policy"),
])
def test_service_errors_are_one_line_and_change_nothing(tmp_path, capsys, argv, message):
    t = table(tmp_path)
    timeline, on_disk = [str(i) for i in t.timeline], files(t)
    captured = run(capsys, *(a.format(path=t.path) for a in argv), code=2)
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("error: ") and message in captured.err
    assert [str(i) for i in t.timeline] == timeline and files(t) == on_disk


def test_every_service_command_is_registered_with_the_same_modes(capsys):
    for service in SERVICES:
        out = run(capsys, service.command, "--help").out
        assert all(flag in out for flag in ("--dry-run", "--option KEY=VALUE", "--json"))
        # archive and rollback write no separate plan: their help does not offer --schedule / --run
        # (given anyway, they are refused saying why: test_service_errors_are_one_line_and_change_nothing)
        planned = service.command in ("compact", "clean")
        assert ("--schedule" in out, "--run INSTANT" in out) == (planned, planned), service.command
    assert [s.command for s in SERVICES] == ["compact", "clean", "archive", "rollback"]
    assert run(capsys, "compact", str("/nonexistent/t"), code=2).err.startswith("error: no Hudi table at")


def test_cluster_command_schedules_runs_and_dry_runs_clustering(tmp_path, capsys):
    """``cluster`` has the four modes of every service command."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("p", pa.string()), ("x", pa.int64())])
    t = pyhudi.create_table(str(tmp_path / "c"), schema, "id", partition_fields="p", table_type="COPY_ON_WRITE")
    for k in range(3):
        t.insert(pa.table({"id": [k * 10 + i for i in range(3)], "p": ["a"] * 3, "x": [9 - k * 3 - i for i in range(3)]}),
                 options={"hoodie.parquet.small.file.limit": "0"})
    before = rows(t)
    plan = run_json(capsys, "cluster", t.path, "--dry-run", "--sort-columns", "x")["plan"]
    assert sorted(r["file_id"] for r in plan) == sorted(g.file_id for g in t.file_groups())
    assert "file slices would be clustered" in run(capsys, "cluster", t.path, "--dry-run").out
    scheduled = run_json(capsys, "cluster", t.path, "--schedule", "--sort-columns", "x")
    assert scheduled["state"] == "REQUESTED" and str(t.timeline[-1].action) == "clustering"
    assert run(capsys, "cluster", t.path, "--run", scheduled["clustering"]).out == (
        f"clustering {scheduled['clustering']} completed\n")
    assert (str(t.timeline[-1].action), str(t.timeline[-1].state)) == ("replacecommit", "COMPLETED")
    assert len(t.file_groups()) == 1 and rows(t) == before
    assert run(capsys, "cluster", t.path, "--option", "hoodie.clustering.plan.strategy.small.file.limit=1").out == (
        "nothing to cluster\n")  # no file is smaller than 1 byte
    assert run(capsys, "cluster", t.path, "--sort-columns", "nope", code=2).err.startswith("error: ")

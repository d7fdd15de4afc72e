"""``pyhudi demo`` (the README's main command), reduced size: exit code, report, picture, tables.

The full pipeline runs once, as a user runs it (a separate process, Spark included); a second,
in-process run without Spark is broken on purpose (the model loses a row) to show a failed check
turns into a FAILED line and exit status 1.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import pyhudi
from pyhudi.cli import main
from pyhudi.demo import data, model
from pyhudi.demo.picture import SIZE
from pyhudi.demo.pipeline import NUM_BUCKETS, png_size

REPO = Path(__file__).resolve().parent.parent

CHECKS = [
    "every writer commit succeeded (non-blocking concurrency control)",
    "the writers' commits interleave on the timeline",
    "read after the three streams equals the model",
    "Spark complete rows: count and sums equal the model",
    "Spark pruned read of the orders family equals the model",
    "clicks compaction left no log file in the clicks family's latest slices",
    "read after the clicks compaction equals the model",
    "full compaction wrote a complete-row base file per file group",
    "read after full compaction equals the model",
    "clean deleted the replaced file versions",
    "read after clean equals the model",
    "events: every appended row reads back after clustering",
    "events: the point query returns the same rows before and after clustering",
    "events: the point query opens fewer files after clustering",
    "picture is a PNG of the expected size",
]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """``python -m pyhudi demo --small --path DIR``, once for the module."""
    workdir = tmp_path_factory.mktemp("demo") / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
           "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "pyhudi", "demo", "--small", "--path", str(workdir)],
                          capture_output=True, text=True, timeout=600, env=env, cwd=str(workdir.parent))
    return workdir, proc


def test_demo_exits_zero_and_reports_every_check(demo_run):
    workdir, proc = demo_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    for check in CHECKS:
        assert re.search(rf"│ ok\s+│ {re.escape(check)}", out), check
    assert out.rstrip().endswith(f"checks: {len(CHECKS)} passed, 0 failed")
    assert f"picture: {workdir / 'demo.png'} ({SIZE[0]}x{SIZE[1]} px)" in out
    for line in ("writers (one process per stream", "Spark (local[2]) on the users table", "table services on users",
                 "users: 200 columns in 4 families, 8 buckets",
                 "events: 12 small inserts, then clustering by device_id",
                 "timings"):
        assert line in out, line


def test_demo_keeps_spark_logging_out_of_the_report(demo_run):
    workdir, proc = demo_run
    assert proc.stderr == ""
    for noise in ("WARN", "log4j", "Setting default log level", "[Stage"):
        assert noise not in proc.stdout, noise
    assert (workdir / "spark.log").exists() and f"Spark's own log: {workdir / 'spark.log'}" in proc.stdout


def test_demo_picture_is_a_png_of_the_expected_size(demo_run):
    workdir, _ = demo_run
    assert png_size(workdir / "demo.png") == SIZE == (1600, 1400)
    from matplotlib import image

    pixels = image.imread(workdir / "demo.png")  # decodes: a valid PNG, not only a valid header
    assert pixels.shape[:2] == (SIZE[1], SIZE[0])
    assert pixels.std() > 0.05  # something is drawn


def test_demo_writer_table_counts_commits_rows_and_deletes(demo_run):
    _, proc = demo_run
    size = data.SMALL
    rows = {m.group(1): [int(x.replace(",", "")) for x in m.groups()[1:]] for m in re.finditer(
        r"│ (profile|clicks|orders)\s+│[^│]+│\s+([\d,]+) │\s+([\d,]+) │\s+([\d,]+) │", proc.stdout)}
    assert rows == {
        "profile": [size.profile_batches + size.profile_batches // 2, size.profile_batches * size.profile_rows,
                    size.profile_batches // 2 * size.deletes_per_batch],
        "clicks": [size.clicks_batches, size.clicks_batches * size.clicks_rows, 0],
        "orders": [size.orders_batches, size.orders_batches * size.orders_rows, 0]}


def test_demo_tables_stay_readable_with_the_final_layout(demo_run):
    workdir, _ = demo_run
    users = pyhudi.open_table(str(workdir / "users"))
    assert users.num_buckets == NUM_BUCKETS and sorted(users.column_families) == sorted(data.FAMILIES)
    assert users.properties["hoodie.write.concurrency.mode"] == "NON_BLOCKING_CONCURRENCY_CONTROL"
    groups = users.file_groups()
    assert len(groups) == NUM_BUCKETS
    assert all([b.name.family for b in g.base_files] == [None] and not g.log_files for g in groups)
    assert users.read().schema.names == data.SCHEMA.names
    events = pyhudi.open_table(str(workdir / "events"))
    assert events.read().num_rows == data.SMALL.event_batches * data.SMALL.event_rows
    assert [str(i.action) for i in events.timeline][-1] == "replacecommit"


def test_a_failed_check_is_reported_and_exits_one(tmp_path, monkeypatch, capsys):
    real = model.expected_rows

    def one_row_short(commits):
        rows = real(commits)
        return rows.slice(1)

    monkeypatch.setattr("pyhudi.demo.pipeline.expected_rows", one_row_short)
    monkeypatch.setenv("COLUMNS", "250")  # the report's table rows on one line each
    assert main(["demo", "--small", "--no-spark", "--path", str(tmp_path / "run")]) == 1
    out = capsys.readouterr().out
    assert re.search(r"FAILED\s+│ read after the three streams equals the model\s+│ \d+ rows read, \d+ expected "
                     r"\(0 missing, 1 extra\)", out), out
    assert "checks: 9 passed, 4 failed" in out  # the four reads of users fail; no Spark checks


def test_demo_refuses_a_non_empty_folder_and_a_bad_size(tmp_path, capsys, monkeypatch):
    (tmp_path / "x").write_text("mine")
    assert main(["demo", "--path", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: --path {str(tmp_path)!r} is not empty: the demo needs an empty or new folder")
    assert (tmp_path / "x").read_text() == "mine" and len(list(tmp_path.iterdir())) == 1
    monkeypatch.setenv("PYHUDI_DEMO_SIZE", "huge")
    assert main(["demo", "--path", str(tmp_path / "new")]) == 2
    assert capsys.readouterr().err.strip() == "error: PYHUDI_DEMO_SIZE='huge': expected 'small' or 'full'"
    assert not (tmp_path / "new").exists()
    assert main(["demo", "--path", str(tmp_path / "new"), "--small", "-o", "picture.jpg"]) == 2
    assert "the picture is a PNG; name the file *.png" in capsys.readouterr().err


def test_model_resolves_late_events_deletes_and_rows_of_one_family():
    """The model on hand-made commits: event time wins over arrival, a delete restarts the key,
    a key written after its delete by one family is a row with only that family's columns."""
    def batch(users, times, clicks):
        rows = data.family_batch(("clicks",), pa.array(users).to_numpy(), pa.array(times).to_numpy(),
                                 np.random.default_rng(0))
        index = rows.schema.get_field_index("clicks_total")
        return rows.set_column(index, "clicks_total", pa.array(clicks, pa.int64()))

    t = data.T0
    commits = [
        model.Commit("0001", "clicks", "upsert", batch([1, 2, 1], [t + 5, t + 5, t + 3], [10, 20, 11])),
        model.Commit("0002", "clicks", "upsert", batch([1, 2], [t + 4, t + 9], [12, 21])),  # 1: late, loses
        model.Commit("0003", "profile", "delete", pa.table({data.KEY: data.user_ids(pa.array([2]).to_numpy())})),
        model.Commit("0004", "clicks", "upsert", batch([2], [t + 1], [22])),  # after the delete: wins
    ]
    rows = model.expected_rows(list(reversed(commits)))  # replayed by completion time, not list order
    assert rows[data.KEY].to_pylist() == ["u0000001", "u0000002"]
    assert rows["clicks_total"].to_pylist() == [10, 22]
    assert rows["country"].to_pylist() == [None, None] and rows["emb_version"].to_pylist() == [None, None]
    assert model.late_losers(commits) == {"clicks": 4}  # 1@t+3 and 1@t+4 late; 2@t+5 and 2@t+9 deleted
    assert model.differences(rows, rows) == []
    assert model.differences(rows.slice(1), rows) == ["1 rows read, 2 expected (1 missing, 0 extra)"]


def test_demo_without_path_runs_in_a_removed_temporary_folder(tmp_path, monkeypatch, capsys):
    """As ``bash scripts/demo.sh`` runs it (here without Spark): the picture lands in the working
    directory, the temporary folder is gone afterwards, and the report says so."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYHUDI_DEMO_SIZE", "small")
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["demo", "--no-spark"]) == 0
    out = capsys.readouterr().out
    assert "tables and Spark's log: removed after the run (pass --path DIR to keep them)" in out
    assert f"picture: {tmp_path / 'demo.png'} ({SIZE[0]}x{SIZE[1]} px)" in out
    assert out.rstrip().endswith("checks: 13 passed, 0 failed")  # every check but Spark's two
    assert png_size(tmp_path / "demo.png") == SIZE
    assert list(scratch.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["demo.png", "tmp"]

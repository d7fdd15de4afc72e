"""Writers that never lose to a clustering (issue 14 item 4), as separate processes.

A writer process updates and deletes keys of the file groups a clustering rewrites while another
process schedules and runs that clustering. With ``SparkAllowUpdateStrategy`` every write
succeeds: what lands after the plan is carried over into the new file groups in the clustering's
replacecommit, and a write still in flight when the clustering completes is planned again on the
new groups. The table then reads as every commit applied in completion order, and every
clustering completed. When carry-over is impossible (another replacecommit replaced an input
group) the clustering is rolled back and nothing is lost either.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import ClusteringConflictError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_helpers import make_rows, value_of  # noqa: E402

PY = sys.executable
WRITER = str(Path(__file__).resolve().parent / "concurrency_writer.py")
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.float64()), ("b", pa.string()), ("c", pa.int64())])
ALLOW = {"hoodie.clustering.updates.strategy":
         "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"}
KEYS = list(range(60))

# Schedules a clustering, lets the writer commit to its input groups (a completed commit after the
# plan), then runs it while the writer goes on; twice. Prints each clustering's instant.
CLUSTERER = r"""
import os, sys, time, json
import pyhudi
path, go, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
t = pyhudi.open_table(path)
while not os.path.exists(go):
    time.sleep(0.005)
for round in range(2):
    instant = t.schedule_clustering(options=options)
    seen = len(t.active_timeline().completed())
    deadline = time.time() + 60
    while len(t.active_timeline().completed()) < seen + 2 and time.time() < deadline:
        time.sleep(0.01)
    print(json.dumps({"instant": t.run_clustering(instant, options=options)}), flush=True)
"""


def seeded(tmp_path, table_type):
    # (archiving off, so the test finds every clustering on the active timeline)
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", table_type=table_type,
                            options={"hoodie.keep.min.commits": "200", "hoodie.keep.max.commits": "210"})
    for first in range(0, len(KEYS), 10):  # six small file groups
        t.insert(make_rows(SCHEMA, SCHEMA.names, KEYS[first:first + 10], 0),
                 options={"hoodie.parquet.small.file.limit": "0"})
    return t


def writer_plan(seed, commits=24):
    rng = random.Random(seed)
    return [{"ids": sorted(rng.sample(KEYS, rng.randint(1, 8))), "columns": ["id", *rng.sample(["a", "b", "c"], 2)],
             "tag": 1 + k, "delay_ms": rng.randint(5, 40), "delete": rng.random() < 0.25} for k in range(commits)]


def run(tmp_path, t, plan, options, clusterer_options=None):
    go = tmp_path / "go"
    writer = subprocess.Popen([PY, WRITER, json.dumps({"path": t.path, "go_file": str(go), "commits": plan,
                                                       "options": options})],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    clusterer = subprocess.Popen([PY, "-c", CLUSTERER, t.path, str(go), json.dumps(clusterer_options or {})],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 90
    while not list(tmp_path.glob("go.ready.*")):
        assert time.time() < deadline and writer.poll() is None, writer.stderr.read().decode()
        time.sleep(0.01)
    go.write_text("go")
    out, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err.decode()
    cout, cerr = clusterer.communicate(timeout=300)
    return [json.loads(line) for line in out.decode().splitlines()], cout.decode(), clusterer.returncode, cerr.decode()


def model(t, plan, results):
    """The seeded rows, then every successful commit in completion-time order."""
    rows = {k: {c: value_of(SCHEMA.field(c).type, c, k, 0) if c != "id" else k for c in SCHEMA.names} for k in KEYS}
    by_tag = {c["tag"]: c for c in plan}
    for r in sorted((r for r in results if "error" not in r), key=lambda r: r["completion_time"]):
        commit = by_tag[r["tag"]]
        for key in commit["ids"]:
            if commit["delete"]:
                rows.pop(key, None)
                continue
            row = rows.setdefault(key, {c: None for c in SCHEMA.names} | {"id": key})
            for column in commit["columns"][1:]:
                row[column] = value_of(SCHEMA.field(column).type, column, key, commit["tag"])
    return [rows[k] for k in sorted(rows)]


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_allow_mode_writer_process_updating_and_deleting_beside_a_clustering_process_loses_nothing(tmp_path,
                                                                                                table_type):
    t = seeded(tmp_path, table_type)
    plan = writer_plan(seed=14)
    results, out, code, err = run(tmp_path, t, plan, ALLOW)
    assert code == 0, err
    assert [r["tag"] for r in results] == [c["tag"] for c in plan]
    assert not [r for r in results if "error" in r]  # every write succeeded
    clusterings = [json.loads(line)["instant"] for line in out.splitlines()]
    timeline = t.active_timeline()
    done = {i.requested_time: i for i in timeline.completed()}
    for instant in clusterings:  # each completed as a replacecommit; none rolled back
        assert str(done[instant].action) == "replacecommit"
        plan_start, end = instant, done[instant].completion_time
        # a writer commit completed between its plan and its completion: carried over
        assert [r for r in results if plan_start < r["completion_time"] < end]
    assert not [i for i in timeline.instants if str(i.action) == "rollback" and i.requested_time in clusterings]
    assert t.read().sort_by("id").to_pylist() == model(t, plan, results)


def test_reject_mode_writer_process_gets_the_clustering_error_and_loses_nothing_it_committed(tmp_path):
    t = seeded(tmp_path, "MERGE_ON_READ")
    plan = writer_plan(seed=7, commits=12)
    results, out, code, err = run(tmp_path, t, plan, None)
    assert code == 0, err  # commits to the groups under clustering were refused, so none needs carrying
    refused = [r for r in results if "error" in r]
    assert refused and {r["type"] for r in refused} <= {"ClusteringConflictError", "ClusteredMeanwhileError"}
    assert t.read().sort_by("id").to_pylist() == model(t, plan, results)


def test_carry_over_impossible_another_clustering_replaced_an_input_group_rolls_the_clustering_back(tmp_path):
    t = seeded(tmp_path, "COPY_ON_WRITE")
    timeline_dir = Path(t.path) / ".hoodie" / "timeline"
    first = t.schedule_clustering()
    # a second scheduler that did not see the first plan (two schedulers racing): same groups
    plan_file = timeline_dir / f"{first}.clustering.requested"
    saved = plan_file.read_bytes()
    plan_file.unlink()
    second = t.schedule_clustering()
    plan_file.write_bytes(saved)
    t.upsert(make_rows(SCHEMA, ["id", "a"], [3, 41], 5), options=ALLOW)
    t.delete(make_rows(SCHEMA, ["id"], [7], 6), options=ALLOW)
    expected = t.read().sort_by("id").to_pylist()
    assert t.run_clustering(second) == second  # carries the update and the delete over
    assert t.read().sort_by("id").to_pylist() == expected
    with pytest.raises(ClusteringConflictError, match=rf"clustering {first} cannot complete: replacecommit {second} "
                                                      r"changed its input file group .* after the plan was made; the "
                                                      r"clustering is rolled back \(its plan is dropped, nothing that "
                                                      r"write wrote is lost\)"):
        t.run_clustering(first)
    timeline = t.active_timeline()
    assert timeline.get(first) is None and [i for i in timeline.completed() if str(i.action) == "rollback"]
    assert not [p for p in Path(t.path).rglob(f"*{first}*.parquet")]  # its files are gone
    assert t.read().sort_by("id").to_pylist() == expected
    assert {r["id"]: r["a"] for r in expected}[3] == value_of(pa.float64(), "a", 3, 5) and 7 not in {
        r["id"] for r in expected}

"""``t.rollback(instant)``: pending writes and compactions of gone processes, the latest completed commit."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import ConcurrentWriteError, TimelineError
from pyhudi.write.client import WriteClient

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.float64()), ("c", pa.int64())])


def table(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families={"fa": "a", "fc": "c"})
    t.upsert(pa.table({"id": [1, 2], "a": [1.0, 2.0], "c": [10, 20]}))
    return t


def rows(t, **kw):
    return t.read(**kw).sort_by("id").to_pylist()


def data_files(t):
    root = Path(t.path)
    return sorted(p.name for p in root.rglob("*") if p.is_file() and ".hoodie" not in p.relative_to(root).parts
                  and p.name != ".hoodie_partition_metadata")


def test_rolling_back_the_latest_completed_commit_restores_the_table_before_it(tmp_path):
    t = table(tmp_path)
    before, files = rows(t), data_files(t)
    last = t.upsert(pa.table({"id": [1, 3], "a": [1.5, 3.0]}))
    assert rows(t) != before
    rb = t.rollback(last)
    assert rows(t) == before and data_files(t) == files
    assert [(str(i.action), str(i.state)) for i in t.timeline] == [("deltacommit", "COMPLETED"),
                                                                   ("rollback", "COMPLETED")]
    metadata = t.active_timeline().read_metadata(t.timeline[-1])
    assert t.timeline[-1].requested_time == rb and metadata.commits_rollback == [last]
    assert metadata.total_files_deleted == 1  # the fa log file of that upsert
    t.upsert(pa.table({"id": [4], "c": [40]}))  # the table goes on
    assert [r["id"] for r in rows(t)] == [1, 2, 4]


def test_only_the_latest_completed_commit_can_be_rolled_back(tmp_path):
    t = table(tmp_path)
    first = t.timeline[0].requested_time
    t.upsert(pa.table({"id": [3], "a": [3.0]}))
    before = rows(t)
    with pytest.raises(TimelineError, match=f"commit {first} is not the latest completed commit"):
        t.rollback(first)
    with pytest.raises(TimelineError, match="no instant 20200101000000000 on the active timeline"):
        t.rollback("20200101000000000")
    assert rows(t) == before and len(t.timeline) == 2


def test_rolling_back_the_latest_compaction_brings_back_its_slices(tmp_path):
    t = table(tmp_path)
    t.upsert(pa.table({"id": [1], "c": [11]}))
    before = rows(t, with_meta=True)
    instant = t.compact()
    t.rollback(instant)
    assert not any(instant in n for n in data_files(t))
    assert rows(t, with_meta=True) == before
    assert all(i.requested_time != instant for i in t.timeline)


def test_pending_instants_roll_back_only_when_their_process_is_gone(tmp_path):
    t = table(tmp_path)
    before = rows(t)
    client = WriteClient(t)
    txn = client.begin("upsert")
    txn.write_rows(pa.table({"id": [5], "a": [5.0]}))
    with pytest.raises(ConcurrentWriteError, match=f"deltacommit {txn.instant} is being written by a live process"):
        t.rollback(txn.instant)
    client._open.pop(txn.instant).active.heartbeat.stop()  # the writer dies (its heartbeat goes)
    t.rollback(txn.instant)
    assert rows(t) == before and all(i.is_completed for i in t.timeline)
    pending = t.schedule_compaction(families=["fa"]) or t.schedule_compaction(full=True)
    t.rollback(pending)  # a requested compaction nobody runs: its plan goes
    assert all(i.requested_time != pending for i in t.timeline) and rows(t) == before


def test_cli_rollback(tmp_path, capsys):
    from pyhudi.cli import main

    t = table(tmp_path)
    before = rows(t)
    last = t.upsert(pa.table({"id": [7], "a": [7.0]}))
    assert main(["rollback", t.path, last, "--json"]) == 0
    assert __import__("json").loads(capsys.readouterr().out)["rolled_back"] == last
    assert rows(t) == before
    assert main(["rollback", t.path, last]) == 2
    assert f"no instant {last} on the active timeline" in capsys.readouterr().err

"""Review of the session 6960509..: bugs found, each shown by its scenario.

- ``pyhudi show-instant`` of a commit another process archives between the listing and the read
  of its files: read from the archive (before: StorageError "file not found").
- The JVM merge reader's recorded build failure: a JDK switched behind the same ``javac`` path
  builds again; a ``javac`` killed by a signal is not recorded; a cache that cannot be written
  gives a reason (the read falls back) instead of raising.
- A write whose families keep differently marked copies of a repeated key (ordered by different
  columns) left the whole row deleted in a new file group (one full-row file, one marker) but
  not in an existing one (a file per family): both now read alike.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import pyhudi
from read_helpers import racing_reader
from pyhudi.cli.inspect import instant_details
from pyhudi.errors import StaleTimelineError
from pyhudi.spark import jvm
from pyhudi.table import Table

OFF = {"hoodie.archive.automatic": "false", "hoodie.clean.automatic": "false", "hoodie.compact.inline": "false"}
ARCHIVE = {"hoodie.keep.min.commits": "1", "hoodie.keep.max.commits": "2"}


# ------------------------------------------------------------------------------ show-instant
def _table_with_commits(path: str) -> tuple[Table, list[str]]:
    t = pyhudi.create_table(path, pa.schema([("id", pa.int64()), ("a", pa.float64())]), "id", num_buckets=1)
    times = [t.upsert(pa.table({"id": [i], "a": [float(i)]}), options=OFF) for i in range(4)]
    return t, times




def test_show_instant_of_a_commit_archived_meanwhile_reads_it_from_the_archive(tmp_path, monkeypatch):
    t, times = _table_with_commits(str(tmp_path / "t"))
    reader = racing_reader(t.path, monkeypatch, lambda: pyhudi.open_table(t.path).archive(options=ARCHIVE))
    details = instant_details(reader, times[0])
    assert reader.raced == [times[:3]]  # (listed active, then archived before its files were read)
    assert details == instant_details(pyhudi.open_table(t.path), times[0])  # as a listing taken now shows it
    assert details["archived"] is True and details["state"] == "COMPLETED"
    assert [f["state"] for f in details["files"]] == ["COMPLETED"]
    assert details["files"][0]["content"]["operationType"] == "UPSERT"


def test_show_instant_of_a_commit_rolled_back_meanwhile_says_so(tmp_path, monkeypatch):
    t, times = _table_with_commits(str(tmp_path / "t"))
    timeline_dir = tmp_path / "t" / ".hoodie" / "timeline"

    def remove_last() -> None:  # (a rollback of the latest commit: its files go, the archive never had it)
        for name in os.listdir(timeline_dir):
            if name.startswith(times[-1]):
                os.remove(timeline_dir / name)

    reader = racing_reader(t.path, monkeypatch, remove_last)
    with pytest.raises(StaleTimelineError, match=f"instant {times[-1]} \\(deltacommit\\) left the active timeline "
                       "while it was read and is not in the archived timeline either"):
        instant_details(reader, times[-1])


# ------------------------------------------------------------------------------ spark/jvm build record
def _fake_javac(path, calls, exit_code: int = 1, signal: bool = False):
    body = "kill -9 $$\n" if signal else f"echo 'MergeReader.java:1: error: cannot find symbol' >&2\nexit {exit_code}\n"
    path.write_text(f"#!/bin/sh\necho {path.name} >> {calls}\n{body}")
    path.chmod(0o755)
    return path


def _new_process(monkeypatch) -> None:
    monkeypatch.setattr(jvm, "_built", {})


def test_a_jdk_switched_behind_the_same_javac_path_builds_again(tmp_path, monkeypatch):
    """``update-alternatives`` (or a ``JAVA_HOME`` symlink) points the same ``javac`` path at
    another JDK: that is another compiler, so the recorded failure of the first does not stop it
    (before: every later process fell back without trying, until the record was removed)."""
    calls = tmp_path / "calls"
    old = _fake_javac(tmp_path / "javac11", calls)
    new = _fake_javac(tmp_path / "javac17", calls, exit_code=0)
    link = tmp_path / "bin" / "javac"
    link.parent.mkdir()
    link.symlink_to(old)
    monkeypatch.setenv("PYHUDI_JVM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(jvm, "_javac", lambda: str(link))
    _new_process(monkeypatch)
    assert jvm.merge_jar() == "javac failed to build the merge reader:\nMergeReader.java:1: error: cannot find symbol"
    _new_process(monkeypatch)
    assert "recorded by an earlier build" in jvm.merge_jar()  # (the same compiler: not run again)
    assert calls.read_text().split() == ["javac11"]
    link.unlink()
    link.symlink_to(new)
    _new_process(monkeypatch)
    built = jvm.merge_jar()
    assert calls.read_text().split() == ["javac11", "javac17"]
    assert built == tmp_path / "cache" / built.parent.name / "pyhudi-spark.jar" and built.exists()


def test_a_javac_killed_by_a_signal_is_not_recorded(tmp_path, monkeypatch):
    """A compiler the out-of-memory killer stops failed for the machine, not for the sources:
    the next process tries again (before: recorded as a refusal, so no process built again)."""
    calls = tmp_path / "calls"
    javac = _fake_javac(tmp_path / "javac", calls, signal=True)
    monkeypatch.setenv("PYHUDI_JVM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(jvm, "_javac", lambda: str(javac))
    _new_process(monkeypatch)
    assert jvm.merge_jar() == "javac was killed by signal 9 while building the merge reader"
    assert list((tmp_path / "cache").rglob(jvm._FAILED)) == []
    _new_process(monkeypatch)
    assert jvm.merge_jar() == "javac was killed by signal 9 while building the merge reader"
    assert calls.read_text().split() == ["javac", "javac"]


def test_a_cache_that_cannot_be_written_gives_a_reason_instead_of_failing(tmp_path, monkeypatch):
    """The merge reader is an optimisation: a cache path that cannot be a directory makes the
    read fall back to the Python source with the reason (before: NotADirectoryError raised
    through every Spark read that would use it)."""
    (tmp_path / "file").write_text("not a directory")
    monkeypatch.setenv("PYHUDI_JVM_CACHE", str(tmp_path / "file" / "cache"))
    monkeypatch.setattr(jvm, "_javac", lambda: str(_fake_javac(tmp_path / "javac", tmp_path / "calls")))
    _new_process(monkeypatch)
    reason = jvm.merge_jar()
    digest = jvm._digest(jvm._spark_jars())
    assert reason == (f"the merge reader could not be built (cache {tmp_path / 'file' / 'cache' / digest}): "
                      f"[Errno 20] Not a directory: '{tmp_path / 'file' / 'cache' / digest}'")
    assert jvm.session_jars("a.jar") == "a.jar"


# ------------------------------------------------------------------------------ soft deletes, full-row files
DUP_SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.float64()), ("b", pa.string()), ("c", pa.int64()),
                        ("_hoodie_is_deleted", pa.bool_())])
DUP_FAMILIES = {"fa": "a,c,_hoodie_is_deleted;c", "fb": "b"}
# key 1 twice: fa (ordered by c) keeps the first row, marked deleted; fb (arrival order) keeps the second, not marked
DUP = pa.table({"id": [1, 1], "a": [1.0, 2.0], "b": ["x", "y"], "c": [5, 3], "_hoodie_is_deleted": [True, False]},
               schema=DUP_SCHEMA)


@pytest.mark.parametrize("operation", ["upsert", "bulk_insert"])
def test_a_key_whose_families_keep_rows_marked_differently_reads_alike_in_new_and_existing_file_groups(
        tmp_path, operation):
    """Each family merges a marked row by its own rule (pyhudi.write.soft_deletes): into an
    existing file group fa's file deletes key 1 and fb's keeps ``b = "y"``. A new file group
    got one full-row file whose one marker column was fa's choice for every family, so the
    same write deleted the whole row there (before: ``[]``); now the families whose rows
    disagree on the marker get their own files, and both groups read alike."""
    kept = [{"id": 1, "a": None, "b": "y", "c": None, "_hoodie_is_deleted": None}]
    existing = pyhudi.create_table(str(tmp_path / "existing"), DUP_SCHEMA, "id", num_buckets=1,
                                   column_families=DUP_FAMILIES)
    existing.upsert(pa.table({"id": [2], "a": [0.0], "b": ["z"], "c": [0], "_hoodie_is_deleted": [False]},
                             schema=DUP_SCHEMA))
    getattr(existing, operation)(DUP)
    assert [r for r in existing.read().to_pylist() if r["id"] == 1] == kept
    new = pyhudi.create_table(str(tmp_path / "new"), DUP_SCHEMA, "id", num_buckets=1, column_families=DUP_FAMILIES)
    instant = getattr(new, operation)(DUP)
    assert new.read().to_pylist() == kept
    group = "00000000-0000-0000-0000-000000000000-0"
    assert sorted(n for n in os.listdir(new.path) if instant in n) == (
        [f"{group}_0-1-0_{instant}_{f}.parquet" for f in ("fa", "fb")] if operation == "bulk_insert"
        else [f".{group}_{instant}_{f}.log.1_0-1-0" for f in ("fa", "fb")])


def test_a_full_row_file_is_still_written_when_the_families_agree_on_the_marker(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), DUP_SCHEMA, "id", num_buckets=1, column_families=DUP_FAMILIES)
    instant = t.upsert(pa.table({"id": [1, 2], "a": [1.0, 2.0], "b": ["x", "y"], "c": [5, 3],
                                 "_hoodie_is_deleted": [True, False]}, schema=DUP_SCHEMA))
    assert t.read().to_pylist() == [{"id": 2, "a": 2.0, "b": "y", "c": 3, "_hoodie_is_deleted": False}]
    [log] = [n for n in os.listdir(t.path) if instant in n]
    assert log == f".00000000-0000-0000-0000-000000000000-0_{instant}.log.1_0-1-0"

"""Storage over pyarrow.fs: relative paths only, write-once creation, nothing outside the base."""

from __future__ import annotations

import multiprocessing as mp
import pickle

import pytest

from pyhudi.errors import AlreadyExistsError, PathEscapeError, StorageError
from pyhudi.storage.fs import Storage, check_name, safe_relpath


def test_read_write_list_delete(tmp_path):
    s = Storage(str(tmp_path / "base"))
    s.write("a/b/c.txt", b"hello")
    s.write("a/top.bin", b"\x00\x01")
    assert s.read("a/b/c.txt") == b"hello"
    assert s.size("a/top.bin") == 2
    assert s.exists("a/b") and s.is_dir("a/b") and not s.exists("nope")
    assert [(f.path, f.is_dir) for f in s.list("a")] == [("a/b", True), ("a/top.bin", False)]
    assert [f.name for f in s.list_files("a")] == ["top.bin"]
    assert [f.path for f in s.walk_files()] == ["a/b/c.txt", "a/top.bin"]
    assert s.list("missing") == []
    assert s.delete("a/top.bin") is True
    assert s.delete("a/top.bin") is False
    with pytest.raises(StorageError, match="file not found"):
        s.delete("a/top.bin", missing_ok=False)
    with pytest.raises(StorageError, match="file not found"):
        s.read("a/none")


def test_file_uri_and_pickling(tmp_path):
    s = Storage(f"file://{tmp_path}/u")
    s.write("x", b"1")
    assert (tmp_path / "u" / "x").read_bytes() == b"1"
    assert s.uri("x") == f"file://{tmp_path}/u/x"
    clone = pickle.loads(pickle.dumps(s))
    assert clone.read("x") == b"1"


def test_create_if_absent_is_write_once(tmp_path):
    s = Storage(str(tmp_path))
    s.create_if_absent(".hoodie/timeline/1.commit", b"first")
    with pytest.raises(AlreadyExistsError, match="already exists"):
        s.create_if_absent(".hoodie/timeline/1.commit", b"second")
    assert s.read(".hoodie/timeline/1.commit") == b"first"
    # no temporary files left behind
    assert [f.name for f in s.list(".hoodie/timeline")] == ["1.commit"]


def _race(base: str, index: int, queue) -> None:
    try:
        Storage(base).create_if_absent("race", str(index).encode())
        queue.put(index)
    except AlreadyExistsError:
        queue.put(None)


def test_create_if_absent_has_one_winner_across_processes(tmp_path):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_race, args=(str(tmp_path), i, queue)) for i in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    results = [queue.get(timeout=5) for _ in procs]
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    assert Storage(str(tmp_path)).read("race") == str(winners[0]).encode()


@pytest.mark.parametrize(
    "path",
    ["../x", "a/../../x", "/etc/passwd", "a//b", "./a", "a/./b", "a\\..\\b", "a\x00b", ".."],
)
def test_paths_that_could_escape_are_rejected(tmp_path, path):
    s = Storage(str(tmp_path / "base"))
    with pytest.raises(PathEscapeError):
        s.write(path, b"x")
    with pytest.raises(PathEscapeError):
        safe_relpath(path)
    assert not (tmp_path / "x").exists()


def test_safe_names():
    assert safe_relpath("city=sf/a.parquet") == "city=sf/a.parquet"
    assert safe_relpath("dir/") == "dir"
    assert check_name("clicks") == "clicks"
    for bad in ("", ".", "..", "a/b", "a\\b"):
        with pytest.raises(PathEscapeError, match="not a valid single path component"):
            check_name(bad, "family name")


def _record_fsyncs(monkeypatch) -> list[str]:
    """What each ``os.fsync`` synced, as the path behind its descriptor."""
    import os

    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


@pytest.mark.parametrize("data", [b"completed", b""])
def test_a_durable_create_syncs_the_file_then_its_directory(tmp_path, monkeypatch, data):
    """After a power loss a durable file (a completed instant) must be there by name, not only
    by its bytes: its directory is synced after the link."""
    s = Storage(str(tmp_path))
    s.create_if_absent(".hoodie/timeline/1.deltacommit", data)  # (creates the directory first)
    synced = _record_fsyncs(monkeypatch)
    s.create_if_absent(".hoodie/timeline/2.deltacommit", data)
    directory = str(tmp_path / ".hoodie" / "timeline")
    assert synced[-1] == directory and len(synced) == 2
    assert synced[0] == f"{directory}/2.deltacommit" or synced[0].startswith(f"{directory}/.2.deltacommit.")
    assert s.read(".hoodie/timeline/2.deltacommit") == data


def test_a_durable_create_in_new_directories_syncs_each_new_directory_entry(tmp_path, monkeypatch):
    """The first durable file in a new directory (an archived timeline's first file, a new
    partition) syncs the file, its directory, and the parent of every directory it created."""
    s = Storage(str(tmp_path))
    s.write("x", b"")  # (the table's root exists)
    synced = _record_fsyncs(monkeypatch)
    s.create_if_absent(".hoodie/timeline/history/1.parquet", b"data")
    root = str(tmp_path)
    assert synced[1:] == [f"{root}/.hoodie/timeline/history", f"{root}/.hoodie/timeline", f"{root}/.hoodie", root]
    assert synced[0].startswith(f"{root}/.hoodie/timeline/history/.1.parquet.")
    synced.clear()
    s.create_if_absent(".hoodie/timeline/history/2.parquet", b"")  # (every directory there already)
    assert synced == [f"{root}/.hoodie/timeline/history/2.parquet", f"{root}/.hoodie/timeline/history"]


def test_a_create_that_need_not_survive_a_crash_syncs_nothing(tmp_path, monkeypatch):
    s = Storage(str(tmp_path))
    s.write(".hoodie/x", b"")
    synced = _record_fsyncs(monkeypatch)
    s.create_if_absent(".hoodie/lock", b"holder", durable=False)
    s.create_if_absent(".hoodie/3.deltacommit.requested", b"", durable=False)
    assert synced == []


@pytest.mark.parametrize("error", ["EINVAL", "EIO"])
def test_a_directory_that_cannot_be_synced_leaves_the_create_done(tmp_path, monkeypatch, error):
    """The directory sync runs after the file is in place and visible: a file system that
    cannot sync directories, or fails to, does not turn the completed create into an error."""
    import errno
    import os

    s = Storage(str(tmp_path))
    real = os.fsync

    def fsync(fd: int) -> None:
        if os.path.isdir(os.readlink(f"/proc/self/fd/{fd}")):
            raise OSError(getattr(errno, error), error)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    s.create_if_absent("a/1.commit", b"x")
    s.create_if_absent("a/2.commit", b"")
    assert (s.read("a/1.commit"), s.read("a/2.commit")) == (b"x", b"")

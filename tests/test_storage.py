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

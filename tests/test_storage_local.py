"""A local table's reads go through ``os`` and ``pyarrow.OSFile`` (issue 15: no ``pyarrow.fs``
on a cold read): they answer exactly what ``pyarrow.fs.LocalFileSystem`` answers, the same
Storage given that file system explicitly."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from pyhudi.errors import StorageError
from pyhudi.storage.fs import Storage


@pytest.fixture
def pair(tmp_path):
    """The same directory as a plain local Storage and as one over an explicit LocalFileSystem."""
    base = tmp_path / "base"
    plain = Storage(str(base))
    plain.write("a/b/c.txt", b"hello")
    plain.write("a/top.bin", b"\x00\x01")
    plain.write(".hoodie/timeline/1.commit", b"{}")
    plain.makedirs("empty")
    return plain, Storage(str(base), filesystem=pafs.LocalFileSystem())


def test_a_plain_path_reads_without_a_pyarrow_file_system(pair):
    plain, explicit = pair
    assert plain.is_local and explicit.is_local
    assert plain._fs is None or isinstance(plain._fs, pafs.LocalFileSystem)  # (built by the writes above)
    fresh = Storage(plain.root)
    assert fresh.read("a/b/c.txt") == b"hello" and fresh._fs is None
    assert isinstance(fresh.fs, pafs.LocalFileSystem)  # (on first use)


@pytest.mark.parametrize("relpath", ["", "a", "a/b", "empty", ".hoodie", "missing"])
def test_listings_equal_pyarrow_fs(pair, relpath):
    plain, explicit = pair
    for recursive in (False, True):
        assert plain.list(relpath, recursive) == explicit.list(relpath, recursive)
    assert [f.path for f in plain.walk_files()] == [".hoodie/timeline/1.commit", "a/b/c.txt", "a/top.bin"]


@pytest.mark.parametrize("relpath", ["a/b/c.txt", "a/top.bin", "a", "empty", "missing", "a/top.bin/x"])
def test_exists_is_dir_and_size_equal_pyarrow_fs(pair, relpath):
    plain, explicit = pair
    assert plain.exists(relpath) == explicit.exists(relpath)
    assert plain.is_dir(relpath) == explicit.is_dir(relpath)
    if explicit.exists(relpath) and not explicit.is_dir(relpath):
        assert plain.size(relpath) == explicit.size(relpath)
    elif not explicit.exists(relpath):
        with pytest.raises(StorageError, match="file not found"):
            plain.size(relpath)


def test_reads_and_their_errors(pair, tmp_path):
    plain, _ = pair
    assert plain.read("a/top.bin") == b"\x00\x01"
    with plain.open_input("a/b/c.txt") as f:
        assert isinstance(f, pa.NativeFile) and f.size() == 5 and f.read_at(3, 1) == b"ell"
    with pytest.raises(StorageError, match="file not found: .*a/none"):
        plain.read("a/none")
    with pytest.raises(StorageError, match="cannot read .*base/a"):
        plain.read("a")
    with pytest.raises(StorageError, match="cannot open .*a/none"):
        plain.open_input("a/none")
    with pytest.raises(StorageError, match="cannot list .*top.bin"):
        plain.list("a/top.bin")


def test_a_parquet_file_opened_through_storage_reads_as_pyarrow_reads_it(pair):
    plain, _ = pair
    table = pa.table({"id": [1, 2, 3], "v": ["x", "y", "z"]})
    pq.write_table(table, os.path.join(plain.root, "f.parquet"))
    from pyhudi.storage.parquet import parquet_file

    with plain.open_input("f.parquet") as source:
        assert parquet_file(source).read().equals(table)


def test_files_vanishing_while_listed_are_left_out(pair, monkeypatch):
    plain, _ = pair
    victim = os.path.join(plain.root, "a", "top.bin")
    original_scandir = os.scandir

    def scandir(path):
        entries = list(original_scandir(path))
        if os.path.exists(victim) and os.path.dirname(victim) == path:
            os.unlink(victim)  # (listed, then deleted by another writer before its stat)
        return _Entries(entries)

    monkeypatch.setattr(os, "scandir", scandir)
    assert [f.path for f in plain.list("a")] == ["a/b"]


class _Entries(list):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

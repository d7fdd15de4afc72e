"""Review of the directory syncs of a durable create that makes directories (pyhudi/storage/fs.py).

``create_if_absent`` syncs the file, its directory, then the parent of each directory it created,
deepest first. Each sync is best effort: it runs after the file is in place, so a failing one
must neither stop the others nor turn the create into an error. A create that need not survive
a crash syncs nothing, new directories or not.
"""

from __future__ import annotations

import errno
import os

import pytest

from pyhudi.errors import AlreadyExistsError
from pyhudi.storage.fs import Storage


def _syncs(monkeypatch, failing: bool = False) -> list[str]:
    """The paths ``os.fsync`` was asked to sync; ``failing``: every directory sync raises EIO."""
    asked: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        asked.append(path)
        if failing and os.path.isdir(path):
            raise OSError(errno.EIO, "injected")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return asked


def test_failing_directory_syncs_are_each_still_tried_and_the_create_is_done(tmp_path, monkeypatch):
    s = Storage(str(tmp_path))
    s.write("x", b"")
    asked = _syncs(monkeypatch, failing=True)
    s.create_if_absent("p=1/q=2/f.bin", b"bytes")
    root = str(tmp_path)
    assert asked[1:] == [f"{root}/p=1/q=2", f"{root}/p=1", root]
    assert s.read("p=1/q=2/f.bin") == b"bytes"
    with pytest.raises(AlreadyExistsError, match="file already exists: .*/p=1/q=2/f.bin"):
        s.create_if_absent("p=1/q=2/f.bin", b"other")
    assert s.read("p=1/q=2/f.bin") == b"bytes"


def test_a_table_root_made_by_its_first_durable_file_is_synced_into_its_parent(tmp_path, monkeypatch):
    """The root itself may be new (a table's first file): the syncs climb to the first directory
    that was already there."""
    s = Storage(str(tmp_path / "new" / "table"))
    asked = _syncs(monkeypatch)
    s.create_if_absent(".hoodie/hoodie.properties", b"k=v")
    base = str(tmp_path)
    assert asked[1:] == [f"{base}/new/table/.hoodie", f"{base}/new/table", f"{base}/new", base]
    assert s.read(".hoodie/hoodie.properties") == b"k=v"


@pytest.mark.parametrize("data", [b"holder", b""])
def test_a_create_that_need_not_survive_a_crash_syncs_no_new_directory(tmp_path, monkeypatch, data):
    s = Storage(str(tmp_path))
    asked = _syncs(monkeypatch)
    s.create_if_absent("a/b/lock", data, durable=False)
    assert asked == [] and s.read("a/b/lock") == data

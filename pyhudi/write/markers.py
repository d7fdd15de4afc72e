"""Markers: one empty file per data file a write creates, written *before* the data file.

``.hoodie/.temp/<instant>/<partition>/<dataFile>.marker.<IOType>`` (Hudi's DIRECT markers). If a
writer dies, the markers of its pending instant name every file it may have left behind, so a
rollback deletes exactly those (and nothing a concurrent writer owns). After a successful
commit the instant's marker folder is deleted.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from pyhudi.errors import FileNameError, StorageError
from pyhudi.storage.fs import Storage, open_local
from pyhudi.storage.naming import MarkerName, marker_dir

IO_CREATE = "CREATE"  # a new base file
IO_MERGE = "MERGE"  # a new version of a base file (copy-on-write upsert, compaction)
IO_APPEND = "APPEND"  # a log file


@dataclass(frozen=True)
class Marker:
    partition_path: str
    file_name: str
    io_type: str

    @property
    def data_relpath(self) -> str:
        return f"{self.partition_path}/{self.file_name}" if self.partition_path else self.file_name


def create_marker(storage: Storage, instant: str, partition_path: str, file_name: str, io_type: str) -> str:
    """Create the marker for a data file about to be written; idempotent for task retries.

    A plain (non-exclusive, unsynced) create, like Hudi's direct markers: a marker only has to
    exist before its data file does, and re-creating it (a retried task attempt) is harmless.
    """
    relpath = MarkerName(partition_path, file_name, io_type).relpath(instant)
    if storage.is_local:  # one open() in the usual case: the folder exists after the first marker
        os.close(open_local(storage.full_path(relpath), os.O_WRONLY | os.O_CREAT))
        return relpath
    storage.write(relpath, b"")
    return relpath


def _unsized(name: str) -> bool:
    return False


def list_markers(storage: Storage, instant: str) -> list[Marker]:
    """Every marker of an instant (the data files its writers may have created)."""
    root = marker_dir(instant)
    out = []
    for info in storage.list(root, recursive=True, stat=_unsized):  # (names alone: no stat per marker)
        if info.is_dir:
            continue
        rel = info.path[len(root) + 1 :]
        try:
            parsed = MarkerName.parse(rel)
        except FileNameError:
            continue  # temp files of an interrupted create_if_absent
        out.append(Marker(parsed.partition_path, parsed.data_file, parsed.io_type))
    return out


def delete_markers(storage: Storage, instant: str) -> None:
    """Delete the instant's marker folder (locally with plain unlinks: a commit does this once)."""
    if not storage.is_local:
        storage.delete_dir(marker_dir(instant))
        return
    folder = storage.full_path(marker_dir(instant))
    try:
        shutil.rmtree(folder)
    except FileNotFoundError:
        pass  # (no marker written, or deleted already)
    except OSError as exc:
        raise StorageError(f"cannot delete the markers of {instant} ({folder}): {exc}") from exc

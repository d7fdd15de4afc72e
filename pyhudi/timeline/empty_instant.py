"""Empty pending instant files as hard links of one empty file per table (local file systems).

A write's requested and inflight files are empty (Hudi 1.x). Creating a file allocates an inode,
which costs a local file system 0.02–0.3 ms of kernel time — much more for an inode that stays
allocated, as instant files do, than for one freed a moment before — where ``link(2)`` costs
~10 µs. So locally every empty requested or inflight file is another name of
``.hoodie/.aux/.empty_instant``: the names are what the timeline is made of, and each is
created (exclusively: ``link`` fails on an existing name), listed and deleted on its own.

The shared file is never written after it is made: pyhudi gives an instant file content only by
creating a new file. Should it be found non-empty, or at the file system's link limit
(``EMLINK``: ~65,000 names on ext4, i.e. tens of thousands of unarchived pending files), a new
one replaces its name; the files linked to the old one keep it.
"""

from __future__ import annotations

import errno
import os
import uuid

from pyhudi.errors import AlreadyExistsError
from pyhudi.storage.fs import Storage, open_local

EMPTY_INSTANT_PATH = ".hoodie/.aux/.empty_instant"


def link_empty(storage: Storage, relpath: str) -> bool:
    """Create the empty file ``relpath`` as a link of the table's empty instant file; raises
    :class:`AlreadyExistsError` if ``relpath`` exists, and returns False where no link can be
    made (not local, no hard links, another device): the caller then creates the file."""
    if not storage.is_local:
        return False
    shared, target = storage.full_path(EMPTY_INSTANT_PATH), storage.full_path(relpath)
    for _ in range(3):
        try:
            if os.stat(shared).st_size == 0:
                os.link(shared, target)
                return True
        except FileExistsError:
            raise AlreadyExistsError(f"file already exists: {target}") from None
        except FileNotFoundError:
            if not os.path.isdir(os.path.dirname(target)):
                return False  # (a timeline folder not made yet: the plain create makes it)
        except OSError as exc:
            if exc.errno != errno.EMLINK:
                return False
        if not _renew(shared):
            return False
    return False


def _renew(shared: str) -> bool:
    """Put a new empty file at ``shared`` (atomically: readers of the name never miss it)."""
    fresh = f"{shared}.{uuid.uuid4().hex}.tmp"
    try:
        os.close(open_local(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
        os.replace(fresh, shared)
    except OSError:
        try:
            os.unlink(fresh)
        except OSError:
            pass
        return False
    return True


__all__ = ["EMPTY_INSTANT_PATH", "link_empty"]

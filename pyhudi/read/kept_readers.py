"""Open Parquet readers a replayed read task keeps between its runs (:mod:`pyhudi.read.replay`).

Opening a Parquet file for a read of two columns — the file, the reader over the cached footer,
the reader's first read — costs about 35 µs, as much as decoding 5,000 rows of two columns; a
warm read of a file group opens its base file and its log block every time. A replay's files are
the ones its recipe names, unchanged while the recipe lives (the kept scan plan it belongs to is
dropped as soon as a file is listed otherwise), so the recipe keeps their readers open.

Bounds and safety:

- only local files read through ordinary reads are kept (never memory maps: a mapped file
  truncated from outside would fault; never remote files), on POSIX systems (elsewhere an open
  file cannot be deleted);
- at most :data:`MAX_KEPT` readers are kept in the process; past that, replays open and close
  their files as before;
- a reader is borrowed by one replay at a time (a concurrent replay of the same task opens its
  own) and given back once its columns are decoded (the decoded columns do not refer to the file);
  a read that fails closes the reader;
- a recipe's readers are closed when the recipe is dropped (its plan replaced by a new listing,
  or the table handle gone), or by :func:`close_all`. Until then a file deleted by a clean stays
  open (at most :data:`MAX_KEPT` of them), as any open file on POSIX.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any

MAX_KEPT = 64
"""Open readers kept in the process, all recipes together."""
ENABLED = os.name == "posix"
"""Where an open file does not keep a clean from deleting it."""

_LOCK = threading.Lock()
_kept = 0
_holders: weakref.WeakSet = weakref.WeakSet()


class KeptReaders:
    """A recipe's idle open readers by file: ``borrow`` takes one out (or opens it), ``give_back``
    puts it back (or closes it past the bound)."""

    def __init__(self) -> None:
        self._idle: dict[Hashable, tuple[Any, Any]] = {}
        weakref.finalize(self, _close, self._idle)
        with _LOCK:
            _holders.add(self)

    def __len__(self) -> int:
        return len(self._idle)

    def __reduce__(self) -> tuple:
        return KeptReaders, ()  # (a task shipped to another process keeps no open file)

    def borrow(self, key: Hashable, open_: Callable[[], tuple[Any, Any]]) -> tuple[Any, Any]:
        """(reader, closable source) of ``key``: an idle kept one, else ``open_()``."""
        global _kept
        with _LOCK:
            found = self._idle.pop(key, None)
            if found is not None:
                _kept -= 1
                return found
        return open_()

    def give_back(self, key: Hashable, opened: tuple[Any, Any]) -> None:
        global _kept
        with _LOCK:
            if key not in self._idle and _kept < MAX_KEPT:
                self._idle[key] = opened
                _kept += 1
                return
        opened[1].close()

    def close(self) -> None:
        _close(self._idle)


def _close(idle: dict) -> None:
    global _kept
    with _LOCK:
        entries = list(idle.values())
        idle.clear()
        _kept -= len(entries)
    for _, source in entries:
        source.close()


def close_all() -> None:
    """Close every kept reader of the process (later replays open their files again)."""
    with _LOCK:
        holders = list(_holders)
    for holder in holders:
        holder.close()


def kept_count() -> int:
    """How many idle readers are kept open now."""
    return _kept

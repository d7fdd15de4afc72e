"""Metadata of data files kept across scans: Parquet footers and key-fingerprint verdicts.

Reading a file group starts with fixed work per file — parse each base file's footer, compare
the key columns of families read only for their keys (:class:`~pyhudi.read.family_reader.KeyFingerprint`)
— that costs as much as decoding a few columns. The answers depend only on the files' bytes, and
Hudi data files do not change once written: a base file's name carries its writing instant and
write token (a retried or rolled-back write gets a new name), and a log file only grows (table
version 6 appends blocks). So a file is identified by its :data:`FileKey` — path, size and
modification time from the listing — and what was learnt about it stays true for that key.

The cache is per process (read tasks of every scan, on every thread, share it), bounded by the
serialized size of the footers it holds, least recently used first out. Set
``METADATA_CACHE.max_bytes = 0`` to turn it off.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import pyarrow.parquet as pq

FileKey = tuple[str, int, int | None]
"""A file's identity: (full path or URI, size in bytes, modification time in ns or None)."""

DEFAULT_MAX_BYTES = 64 << 20
"""Serialized footer bytes kept (parsed footers take a few times more memory)."""


class MetadataCache:
    """Footers by file, and whether two base files hold the same keys (LRU, thread-safe)."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._footers: OrderedDict[FileKey, pq.FileMetaData] = OrderedDict()
        self._bytes = 0
        self._same_keys: dict[tuple[FileKey, FileKey], bool] = {}
        self._pairs_of: dict[FileKey, set[tuple[FileKey, FileKey]]] = {}
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def footer(self, key: FileKey | None) -> pq.FileMetaData | None:
        """The cached footer of ``key`` (None: not cached, or no key)."""
        if key is None or not self.max_bytes:
            return None
        with self._lock:
            found = self._footers.get(key)
            if found is None:
                self.misses += 1
                return None
            self._footers.move_to_end(key)
            self.hits += 1
            return found

    def put_footer(self, key: FileKey | None, metadata: pq.FileMetaData) -> None:
        if key is None or not self.max_bytes:
            return
        size = metadata.serialized_size
        if size > self.max_bytes:
            return
        with self._lock:
            if key in self._footers:
                return
            self._footers[key] = metadata
            self._bytes += size
            while self._bytes > self.max_bytes:
                old, evicted = self._footers.popitem(last=False)
                self._bytes -= evicted.serialized_size
                self._forget(old)

    def same_keys(self, a: FileKey | None, b: FileKey | None) -> bool | None:
        """Whether base files ``a`` and ``b`` were found to hold equal key columns (None: unknown)."""
        if a is None or b is None or not self.max_bytes:
            return None
        with self._lock:
            return self._same_keys.get(_pair(a, b))

    def put_same_keys(self, a: FileKey | None, b: FileKey | None, verdict: bool) -> None:
        if a is None or b is None or not self.max_bytes:
            return
        with self._lock:
            if a in self._footers and b in self._footers:  # (a verdict lives as long as both footers)
                pair = _pair(a, b)
                self._same_keys[pair] = verdict
                self._pairs_of.setdefault(a, set()).add(pair)
                self._pairs_of.setdefault(b, set()).add(pair)

    def _forget(self, key: FileKey) -> None:
        for pair in self._pairs_of.pop(key, ()):
            self._same_keys.pop(pair, None)

    def clear(self) -> None:
        with self._lock:
            self._footers.clear()
            self._same_keys.clear()
            self._pairs_of.clear()
            self._bytes = 0
            self.hits = self.misses = 0


def _pair(a: FileKey, b: FileKey) -> tuple[FileKey, FileKey]:
    return (a, b) if _order(a) <= _order(b) else (b, a)


def _order(key: FileKey) -> tuple[str, int, int]:
    return key[0], key[1], -1 if key[2] is None else key[2]


METADATA_CACHE = MetadataCache()
"""The process-wide cache every read task uses."""

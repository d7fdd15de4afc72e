"""Metadata of data files kept across scans: Parquet footers, log block layouts, key verdicts.

Writers also keep the record keys of files here, by the same identity: the keys an update's
record positions are searched in (:mod:`pyhudi.write.positions`) and those the simple index looks
keys up in (:mod:`pyhudi.index.simple`). Key verdicts are facts about key columns: two base files hold the same keys
(:meth:`MetadataCache.same_keys`), every key of a log block is a key of a base file
(:meth:`MetadataCache.block_within`, learnt when a read joined that block's keys with the base),
or the row numbers in a base file of a log block's records (:meth:`MetadataCache.positions`,
what Hudi 1.x writers may put in a block header, :mod:`pyhudi.read.positions`).

Reading a file group starts with fixed work per file — parse each base file's footer, walk each
log file's block headers and parse its Parquet blocks' footers, compare the key columns of
families read only for their keys (:class:`~pyhudi.read.family_reader.KeyFingerprint`) — that
costs as much as decoding a few columns. The answers depend only on the files' bytes, and Hudi
data files do not change once written: a base file's name carries its writing instant and write
token (a retried or rolled-back write gets a new name), and a log file only grows (table version
6 appends blocks). So a file is identified by its :data:`FileKey` — path, size and modification
time from the listing — and what was learnt about it stays true for that key.

The cache is per process (read tasks of every scan, on every thread, share it), bounded by the
approximate bytes of what it holds, least recently used first out. Set
``METADATA_CACHE.max_bytes = 0`` to turn it off.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow.parquet as pq


FileKey = tuple[str, int, int | None]
"""A file's identity: (full path or URI, size in bytes, modification time in ns or None)."""

BlockKey = tuple[FileKey, int]
"""A log block's identity: its log file's key and the block's offset in it."""

DEFAULT_MAX_BYTES = 64 << 20
"""Approximate bytes kept (serialized footers, block headers)."""

FOOTER, LOG_LAYOUT, POSITIONS = "footer", "log", "positions"


class MetadataCache:
    """Footers and log layouts by file, whether two base files hold the same keys, and whether a
    log block's keys are all in a base file (LRU, thread-safe)."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[Hashable, FileKey], tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._same_keys: dict[tuple[FileKey, FileKey], bool] = {}
        self._pairs_of: dict[FileKey, set[tuple[FileKey, FileKey]]] = {}
        self._within: set[tuple[BlockKey, FileKey]] = set()  # (log block, base file): block keys ⊆ base keys
        self._within_of: dict[FileKey, set[tuple[BlockKey, FileKey]]] = {}
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    # ------------------------------------------------------------------ entries
    def get(self, kind: Hashable, key: FileKey | None) -> Any:
        """The cached ``kind`` of file ``key`` (None: not cached, or no key)."""
        if key is None or not self.max_bytes:
            return None
        with self._lock:
            found = self._entries.get((kind, key))
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end((kind, key))
            self.hits += 1
            return found[0]

    def put(self, kind: Hashable, key: FileKey | None, value: Any, cost: int) -> None:
        """Keep ``value`` (about ``cost`` bytes) as the ``kind`` of file ``key``."""
        if key is None or not self.max_bytes or cost > self.max_bytes:
            return
        with self._lock:
            if (kind, key) in self._entries:
                return
            self._entries[(kind, key)] = (value, cost)
            self._bytes += cost
            while self._bytes > self.max_bytes:
                (_, old), (_, old_cost) = self._entries.popitem(last=False)
                self._bytes -= old_cost
                self._forget(old)

    def footer(self, key: FileKey | None) -> pq.FileMetaData | None:
        return self.get(FOOTER, key)

    def put_footer(self, key: FileKey | None, metadata: pq.FileMetaData) -> None:
        self.put(FOOTER, key, metadata, metadata.serialized_size)

    # ------------------------------------------------------------------ key verdicts
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
            if (FOOTER, a) in self._entries and (FOOTER, b) in self._entries:  # (lives as long as both footers)
                pair = _pair(a, b)
                self._same_keys[pair] = verdict
                self._pairs_of.setdefault(a, set()).add(pair)
                self._pairs_of.setdefault(b, set()).add(pair)

    def block_within(self, block: BlockKey | None, base: FileKey | None) -> bool:
        """Whether every record key of log block ``block`` was found in base file ``base``."""
        if block is None or base is None or not self.max_bytes:
            return False
        with self._lock:
            return (block, base) in self._within

    def put_block_within(self, block: BlockKey | None, base: FileKey | None) -> None:
        """Remember that every key of ``block`` is a key of ``base`` (kept as long as the log
        file's layout and the base file's footer)."""
        if block is None or base is None or not self.max_bytes:
            return
        with self._lock:
            if (LOG_LAYOUT, block[0]) in self._entries and (FOOTER, base) in self._entries:
                pair = (block, base)
                self._within.add(pair)
                self._within_of.setdefault(block[0], set()).add(pair)
                self._within_of.setdefault(base, set()).add(pair)

    def positions(self, block: BlockKey | None, base: FileKey | None) -> Any:
        """Where the records of log block ``block`` sit in base file ``base`` (increasing row
        numbers, :mod:`pyhudi.read.positions`), a string verdict when they cannot be placed by
        position, or None (not known)."""
        if block is None or base is None:
            return None
        return self.get((POSITIONS, block[1], base), block[0])

    def put_positions(self, block: BlockKey | None, base: FileKey | None, positions: Any) -> None:
        """Remember ``positions`` (a NumPy array or a string verdict) of ``block`` in ``base``."""
        if block is not None and base is not None:
            self.put((POSITIONS, block[1], base), block[0], positions, 64 + getattr(positions, "nbytes", 0))

    def _forget(self, key: FileKey) -> None:
        for pair in self._pairs_of.pop(key, ()):
            self._same_keys.pop(pair, None)
        for pair in self._within_of.pop(key, ()):
            self._within.discard(pair)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._same_keys.clear()
            self._pairs_of.clear()
            self._within.clear()
            self._within_of.clear()
            self._bytes = 0
            self.hits = self.misses = 0

    @property
    def size_bytes(self) -> int:
        return self._bytes


def _pair(a: FileKey, b: FileKey) -> tuple[FileKey, FileKey]:
    return (a, b) if _order(a) <= _order(b) else (b, a)


def _order(key: FileKey) -> tuple[str, int, int]:
    return key[0], key[1], -1 if key[2] is None else key[2]


METADATA_CACHE = MetadataCache()
"""The process-wide cache every read task uses."""

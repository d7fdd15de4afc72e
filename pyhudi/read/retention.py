"""What cleaning keeps for readers: pinned snapshots of open scans, and the times it no longer can.

**Reader pins.** A scan pins a snapshot (:attr:`ScanPlan.instant`, a completion time) when it is
planned and reads its files later. The cleaner keeps every file the snapshots of the retained
commits read, and the latest snapshot, so a read collected right away (``Table.read``) is safe
unless more than ``hoodie.cleaner.commits.retained`` commits *and* a clean complete while it
runs. A streamed scan (``Table.scan``) may stay open much longer, so it registers its pin:
``.hoodie/.readers/<uuid>`` holding the pinned time, created when the reader is made (one small
file write) and deleted when it is exhausted, closed or garbage-collected. The reader refreshes
the file's modification time while it is consumed (at most once a minute); the cleaner treats
every pin fresher than ``hoodie.pyhudi.read.pin.expiry.ms`` (1 hour) as one more snapshot to
keep, and ignores older ones (a reader that died, or a consumer that paused longer than that).
Spark scans do not register pins: their tasks run elsewhere.

**Time travel after a clean.** A completed clean records, in its ``extraMetadata``, the
completion-time intervals ``[from, until)`` in which a snapshot would read a file it deleted
(:data:`UNREADABLE_KEY`). A read ``as_of`` a time inside one is refused with
:class:`CleanedSnapshotError` instead of returning rows of no snapshot. A clean written by
Apache Hudi carries no such record: snapshots before its ``earliestCommitToRetain`` are refused.
"""

from __future__ import annotations

import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from typing import Any

from pyhudi.errors import CleanedSnapshotError, HudiError
from pyhudi.storage.fs import Storage
from pyhudi.config.read import PIN_EXPIRY  # noqa: F401 (declared there)

READERS_DIR = ".hoodie/.readers"
UNREADABLE_KEY = "pyhudi.clean.unreadable"
"""Clean ``extraMetadata``: ``from-until`` completion-time intervals (comma-separated) whose
snapshots would read a file the clean deleted."""
_REFRESH_S = 60.0


class ReaderPin:
    """The registration of one open scan's snapshot (``.hoodie/.readers/<uuid>``)."""

    def __init__(self, storage: Storage, instant: str) -> None:
        self.storage = storage
        self.relpath = f"{READERS_DIR}/{uuid.uuid4().hex}"
        self.instant = instant
        self._touched = time.monotonic()
        self._released = False
        storage.write(self.relpath, instant.encode())

    def touch(self) -> None:
        """Refresh the pin's modification time (cheap: at most once a minute)."""
        now = time.monotonic()
        if not self._released and now - self._touched >= _REFRESH_S:
            self._touched = now
            self.storage.write(self.relpath, self.instant.encode())

    def release(self) -> None:
        if not self._released:
            self._released = True
            try:
                self.storage.delete(self.relpath)
            except (HudiError, OSError):
                pass  # (an expired pin is ignored by cleaners anyway)


def pinned_batches(storage: Storage, instant: str, batches: Iterator[Any]) -> Iterator[Any]:
    """``batches`` with the snapshot pinned from now until they are exhausted, closed or dropped."""
    pin = ReaderPin(storage, instant)

    def run() -> Iterator[Any]:
        try:
            for batch in batches:
                pin.touch()
                yield batch
        finally:
            pin.release()

    generator = run()
    weakref.finalize(generator, pin.release)  # (a generator never started runs no ``finally``)
    return generator


def live_pins(storage: Storage, expiry_ms: int, now_s: float | None = None) -> list[str]:
    """Snapshots (completion times) pinned by scans whose pin is younger than ``expiry_ms``."""
    now_ns = int((now_s if now_s is not None else time.time()) * 1e9)
    out = []
    for info in storage.list_files(READERS_DIR):  # (no folder: none)
        if info.mtime_ns is not None and now_ns - info.mtime_ns > expiry_ms * 1_000_000:
            continue
        try:
            text = storage.read(info.path).decode().strip()
        except (HudiError, OSError, UnicodeDecodeError):
            continue  # released (deleted) while listed
        if text.isdigit():
            out.append(text)
    return sorted(out)


# ------------------------------------------------------------------ time travel after a clean
_INTERVALS: dict[tuple, tuple[tuple[str, str], ...]] = {}
_LOCK = threading.Lock()


def format_intervals(intervals: list[tuple[str, str]]) -> str:
    return ",".join(f"{a}-{b}" for a, b in intervals)


def _unreadable(timeline: Any, instant: Any) -> tuple[tuple[str, str], ...]:
    key = (timeline.storage.base_uri, instant.requested_time, instant.completion_time)
    with _LOCK:
        if key in _INTERVALS:
            return _INTERVALS[key]
    try:
        metadata = timeline.read_metadata(instant)
    except (HudiError, OSError, ValueError):
        return ()
    recorded = (getattr(metadata, "extra_metadata", None) or {}).get(UNREADABLE_KEY)
    if recorded is not None:
        found = tuple(tuple(part.split("-", 1)) for part in recorded.split(",") if "-" in part)
    else:  # a clean written by Apache Hudi: snapshots before its earliest retained commit
        planned = getattr(metadata, "earliest_instant_to_retain", None)  # (a pending clean's plan)
        ectr = getattr(metadata, "earliest_commit_to_retain", None) or getattr(planned, "timestamp", None) or ""
        found = (("0", ectr),) if ectr else ()
    with _LOCK:
        _INTERVALS[key] = found  # (a completed instant's metadata never changes)
    return found


def check_time_travel(timeline: Any, as_of: str) -> None:
    """Refuse a snapshot ``as_of`` (a completion time) that reads files a completed clean deleted
    — archived cleans included (archival moves cleans to the history with the commits) — or that
    a pending clean's plan deletes (it may be deleting them now, or have died mid-way)."""
    archived = getattr(timeline, "completed_with_archived", None)
    cleans = [i for i in (archived() if archived is not None else timeline.completed()) if str(i.action) == "clean"]
    cleans += [i.as_requested() for i in timeline.pending() if str(i.action) == "clean"]
    for instant in cleans:
        for start, end in _unreadable(timeline, instant):
            if start <= as_of < end:
                did = "deleted" if instant.is_completed else "deletes (it is pending)"
                raise CleanedSnapshotError(
                    f"cannot read the table at {timeline.storage.base_uri} as of {as_of}: clean {instant.requested_time} "
                    f"{did} data files that snapshot reads (snapshots from {start} until {end} are no longer "
                    "retained; the cleaner keeps those of the last hoodie.cleaner.commits.retained commits)")

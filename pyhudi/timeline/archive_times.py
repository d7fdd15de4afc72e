"""Completion times of archived instants, for the file-system view's visibility checks.

Every view carries one, but most reads never ask it anything (their instants are all on the
active timeline), so the archive reader (:mod:`pyhudi.timeline.archived`, whose import costs a
cold read a millisecond) is imported on the first question only (issue 15).
"""

from __future__ import annotations

from pyhudi.storage.fs import Storage


class ArchivedCompletions:
    """Completion times of archived instants, loaded on the first question (picklable: a read
    task on another process loads them there, through the same per-process cache)."""

    def __init__(self, storage: Storage, history_dir: str) -> None:
        self.storage = storage
        self.history_dir = history_dir
        self._times: dict[str, str] | None = None
        self._first: str | None = None

    def __reduce__(self):
        return (ArchivedCompletions, (self.storage, self.history_dir))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ArchivedCompletions) and (self.storage.base_uri, self.history_dir) == (
            other.storage.base_uri, other.history_dir)

    def __hash__(self) -> int:
        return hash((self.storage.base_uri, self.history_dir))

    def _load(self) -> dict[str, str]:
        if self._times is None:
            from pyhudi.timeline.archived import load_archived

            archived = load_archived(self.storage, self.history_dir)
            self._times = archived.completion_times()
            self._first = archived.first_time
        return self._times

    def get(self, requested_time: str) -> str | None:
        """The completion time of an archived instant; None if the archive does not hold it."""
        return self._load().get(requested_time)

    def covers(self, requested_time: str) -> bool:
        """Whether the archive reaches back to ``requested_time`` (an instant there that it does
        not hold never completed; older ones may have been archived by an older layout)."""
        self._load()
        return self._first is not None and requested_time >= self._first

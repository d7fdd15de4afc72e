"""The active timeline of a Hudi table: loading, views and lookups (its write-once state
transitions: :mod:`pyhudi.timeline.transitions`).

Loading lists the timeline directory once and folds the requested / inflight / completed files
of each instant into one :class:`Instant` in its most advanced state (Hudi never deletes the
earlier files of a transition). Names that are not instants (``history/``, ``.crc``, temp files,
``hoodie.properties`` in a layout-1 ``.hoodie/``) are ignored.

Transitions create files with :meth:`Storage.create_if_absent`, so each state file appears
exactly once and complete. Completion is the one step that needs the timeline lock: the
completion time must be generated and the completed file created atomically with respect to
other writers (RFC-66), so that completion order equals completion-time order.
"""

from __future__ import annotations

import os
import posixpath
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from pyhudi.errors import ConfigError, StaleTimelineError, StorageError, TimelineError
from pyhudi.storage.fs import Storage
from pyhudi.timeline.instant import (
    Action,
    Instant,
    State,
    latest_time_of,
    resolve_timezone,
    to_action,
)
from pyhudi.timeline.listing import GroupKey, folded, list_instant_files, refolded
from pyhudi.timeline.lock import FileLock, Locked, TimelineLock  # noqa: F401 (Locked: re-exported)
from pyhudi.timeline.metadata_base import commit_summary, decode_record
from pyhudi.timeline.transitions import InstantTransitions

if TYPE_CHECKING:
    from pyhudi.timeline.timegen import InstantTimeGenerator

DEFAULT_TIMELINE_DIR = ".hoodie/timeline"
LAYOUT1_TIMELINE_DIR = ".hoodie"

#: Actions whose completed instants change data files (what readers and the fs view consume).
COMMIT_ACTIONS = frozenset({Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT})
#: Pending actions that will complete as one of COMMIT_ACTIONS.
PENDING_COMMIT_ACTIONS = COMMIT_ACTIONS | {Action.COMPACTION, Action.LOGCOMPACTION, Action.CLUSTERING}



class Timeline(InstantTransitions):
    """The instants of one table's active timeline (layout 2 in ``.hoodie/timeline``, or layout 1).

    Views return lists sorted by requested time. The object caches the last listing; call
    :meth:`reload` to see other writers' changes (transitions made through this object update
    the cache, and :meth:`complete` re-lists under the lock before deciding). One object is not
    meant to be shared by threads; separate objects (threads, processes) are made safe by the lock.
    """

    def __init__(
        self,
        storage: Storage,
        timeline_dir: str = DEFAULT_TIMELINE_DIR,
        layout_version: int = 2,
        timezone: str = "UTC",
        lock: TimelineLock | None = None,
        time_generator: InstantTimeGenerator | None = None,
        history_path: str = "history",
        before_first_write: Callable[[], None] | None = None,
    ) -> None:
        if layout_version not in (1, 2):
            raise TimelineError(f"unsupported timeline layout version {layout_version!r} (expected 1 or 2)")
        self.storage = storage
        self.timeline_dir = timeline_dir.rstrip("/")
        self.layout_version = layout_version
        self.timezone = timezone
        self.lock: TimelineLock = lock if lock is not None else FileLock(storage)
        resolve_timezone(timezone)  # (a bad zone name fails here, not at the first write)
        self._time_generator = time_generator
        self._entries: dict[str, Instant] = {}  # file name -> what it says
        self._instants: list[Instant] = []
        self._names: dict[tuple[str, Action, State], str] = {}
        self._loaded = False
        self.history_dir = posixpath.join(self.timeline_dir, checked_history_path(history_path))
        self._archived: Any = None
        self._archive_listed: bool | None = None
        self._follows_archival = False
        # run once, under the lock, before this timeline writes its first instant (the table's
        # metadata table turned off: pyhudi.metadata_table.first_write_guard)
        self._before_first_write = before_first_write
        self._views: tuple[list[Instant], dict[str, Any]] | None = None  # (the instants, views of them)

    @property
    def time_generator(self) -> InstantTimeGenerator:
        """Issues this table's instant times; built at the first write (a reader needs none, and
        :mod:`pyhudi.timeline.timegen` is not imported by a read: issue 15, cold start)."""
        if self._time_generator is None:
            from pyhudi.timeline.timegen import InstantTimeGenerator

            self._time_generator = InstantTimeGenerator(self.storage, self.lock, self.timezone)
        return self._time_generator

    def __repr__(self) -> str:
        return f"Timeline({self.storage.base_uri!r}, {self.timeline_dir!r}, layout={self.layout_version})"

    # ------------------------------------------------------------------ loading
    def load(self) -> Timeline:
        """List the timeline directory once and rebuild every instant. Returns self.

        Every load lists storage (that listing is what makes the timeline current); what is
        built from a listing is shared with every timeline object that lists the same names
        (:mod:`pyhudi.timeline.listing`), so a write that lists the timeline several times folds
        it once."""
        entries = self._list_entries()
        if not self._loaded or entries != self._entries:  # (a reload that finds nothing new is a listing)
            self._entries = entries
            self._rebuild()
            self._archived = None
            self._archive_listed = None
        self._loaded = True
        return self

    reload = load

    def _list_entries(self) -> dict[str, Instant]:
        return list_instant_files(self.storage, self.timeline_dir, self.layout_version, self.timezone)

    def _memo_key(self) -> tuple[str, str, int]:
        return (self.storage.base_uri, self.timeline_dir, self.layout_version)

    def _rebuild(self) -> None:
        """Fold the listed files into instants (shared between timeline objects: a timeline never
        mutates its ``_instants`` or ``_names``, it replaces them)."""
        self._instants, self._names = folded(self._memo_key(), self._entries)

    def _refold(self, key: GroupKey) -> None:
        """Fold one instant again after a file of it was added (a transition of this object)."""
        self._instants, self._names = refolded(self._memo_key(), self._entries, self._instants, self._names, key)

    def _ensure_loaded(self) -> None:
        if not self._loaded:
            self.load()

    # ------------------------------------------------------------------ views
    @property
    def listing(self) -> dict[str, Instant]:
        """What the last load listed (instant file name → instant): equal listings are equal
        timelines (every state change adds a file)."""
        self._ensure_loaded()
        return dict(self._entries)

    @property
    def instants(self) -> list[Instant]:
        """Every instant in its latest state, sorted by requested time."""
        self._ensure_loaded()
        return list(self._instants)

    def __iter__(self) -> Iterator[Instant]:
        return iter(self.instants)

    def __len__(self) -> int:
        return len(self.instants)

    def _view(self, name: str, build: Callable[[list[Instant]], Any]) -> Any:
        """``build(instants)``, kept until the instants change (a write asks for the completed
        instants a dozen times, on one listing): ``_instants`` is replaced, never mutated."""
        self._ensure_loaded()
        memo = self._views
        if memo is None or memo[0] is not self._instants:
            memo = self._views = (self._instants, {})
        if name not in memo[1]:
            memo[1][name] = build(self._instants)
        return memo[1][name]

    def completed(self) -> list[Instant]:
        return list(self._view("completed", lambda instants: [i for i in instants if i.is_completed]))

    def pending(self) -> list[Instant]:
        return list(self._view("pending", lambda instants: [i for i in instants if i.is_pending]))

    def filter(
        self,
        actions: Iterable[Action | str] | Action | str | None = None,
        states: Iterable[State | str] | State | str | None = None,
    ) -> list[Instant]:
        """Instants whose action (as named by their current file) and state are in the given sets.

        A completed compaction has action ``commit`` here, as in Hudi; use
        :attr:`Instant.is_compaction` / :attr:`Instant.origin_action` to find it.
        """
        action_set = None if actions is None else {to_action(a) for a in _as_iterable(actions)}
        state_set = None if states is None else {State(s) for s in _as_iterable(states)}
        return [
            i
            for i in self.instants
            if (action_set is None or i.action in action_set) and (state_set is None or i.state in state_set)
        ]

    def completed_before(self, completion_time: str) -> list[Instant]:
        """Completed instants whose completion time is <= ``completion_time`` (time travel).

        Instants without a completion time (never in layout 2 as written by pyhudi) compare by
        their requested time.
        """
        return [i for i in self.completed() if i.sort_time <= completion_time]

    def last_completed(self) -> Instant | None:
        """The completed instant that finished last (greatest completion time)."""
        done = self.completed()
        return max(done, key=lambda i: (i.sort_time, i.requested_time)) if done else None

    def commits_timeline(self, completed_only: bool = True) -> list[Instant]:
        """Instants that write data files: commit, deltacommit, replacecommit.

        Completed compactions, log compactions and clusterings are included (they complete as
        those actions). With ``completed_only=False`` pending ones are too, including pending
        compaction / log compaction / clustering.
        """
        if completed_only:
            return [i for i in self.instants if i.is_completed and i.action in COMMIT_ACTIONS]
        return [i for i in self.instants if i.action in PENDING_COMMIT_ACTIONS]

    def get(self, requested_time: str) -> Instant | None:
        """The instant requested at ``requested_time`` (the most advanced, if several), or None."""
        return self._view("by_time", _most_advanced).get(requested_time)

    def completion_times(self) -> dict[str, str]:
        """Requested time -> completion time of every completed instant (for file slicing)."""
        return {i.requested_time: i.sort_time for i in self.completed()}

    def latest_time(self) -> str | None:
        """The greatest requested or completion time on the timeline (a floor for new times)."""
        return self._view("latest_time", _latest_time)

    # ------------------------------------------------------------------ archived part
    def archived(self) -> Any:
        """The archived timeline (``history/``), loaded on first use and kept until :meth:`load`
        (:class:`~pyhudi.timeline.archived.ArchivedTimeline`; empty when nothing was archived).
        Callers ask for it only when a question reaches before :attr:`first_active_time`."""
        if self._archived is None:
            from pyhudi.timeline.archived import load_archived

            self._archived = load_archived(self.storage, self.history_dir) if self.layout_version == 2 \
                else _NO_ARCHIVE
        return self._archived

    def has_archive(self) -> bool:
        """Whether anything was ever archived (one listing of ``history/``, kept until
        :meth:`load`): lets a question that would search the archive skip it on young tables
        without loading the archive's module."""
        if self._archived is not None:
            return len(self._archived) > 0
        if self._archive_listed is None:
            self._archive_listed = self.layout_version == 2 and self._history_has_files()
        return self._archive_listed

    def _history_has_files(self) -> bool:
        if not self.storage.is_local:
            return bool(self.storage.list_files(self.history_dir))
        folder = self.storage.full_path(self.history_dir)
        try:
            with os.scandir(folder) as entries:  # (the first file answers: no stat of the others)
                return any(not entry.is_dir() for entry in entries)
        except (FileNotFoundError, NotADirectoryError):
            return False

    @property
    def first_active_time(self) -> str | None:
        """The requested time of the oldest active write (commit, pending or not): archival takes
        the oldest completed commits, stops before the oldest pending write and takes only the
        cleans and rollbacks older than the commits it takes, so every archived instant is older."""
        self._ensure_loaded()
        writes = [i for i in self._instants if i.action in PENDING_COMMIT_ACTIONS]
        first = writes[0] if writes else (self._instants[0] if self._instants else None)
        return first.requested_time if first else None

    def reaches_archive(self, time: str | None) -> bool:
        """Whether a question about ``time`` (None = the beginning) may need archived instants."""
        first = self.first_active_time
        return self.layout_version == 2 and (first is None or time is None or time < first)

    def lookup(self, requested_time: str) -> Instant | None:
        """Like :meth:`get`, also finding archived instants (loaded only for times before the
        active timeline)."""
        found = self.get(requested_time)
        if found is None and self.reaches_archive(requested_time):
            found = self.archived().get(requested_time)
        return found

    def completed_with_archived(self) -> list[Instant]:
        """Archived and active completed instants, by requested time."""
        active = self.completed()
        archived = [i for i in self.archived().instants if self._find(i.requested_time, i.completed_action) is None]
        return sorted([*archived, *active])

    def _is_archived(self, instant: Instant) -> bool:
        """A completed instant that is not on the active timeline but in the archive."""
        if not instant.is_completed or self.layout_version != 2:
            return False
        self._ensure_loaded()
        if (instant.requested_time, instant.completed_action, State.COMPLETED) in self._names:
            return False
        return self.reaches_archive(instant.requested_time) and self.archived().get(instant.requested_time) is not None

    # ------------------------------------------------------------------ contents
    def file_name_of(self, instant: Instant) -> str:
        """The file that holds ``instant`` in its state (the real name when it was listed)."""
        self._ensure_loaded()
        if instant.is_pending:
            return instant.file_name(self.layout_version)
        listed = self._names.get((instant.requested_time, instant.completed_action, State.COMPLETED))
        if listed is not None and instant.completion_time in (None, self._entries[listed].completion_time):
            return listed  # also covers legacy names whose completion time came from the mtime
        return instant.file_name(self.layout_version)

    def state_files(self, instant: Instant) -> list[tuple[State, str]]:
        """The listed files of every state of ``instant`` (requested, inflight, completed)."""
        self._ensure_loaded()
        found = []
        for state in (State.REQUESTED, State.INFLIGHT, State.COMPLETED):
            name = self._names.get((instant.requested_time, instant.completed_action, state))
            if name is not None:
                found.append((state, name))
        return found

    def path_of(self, instant: Instant) -> str:
        return f"{self.timeline_dir}/{self.file_name_of(instant)}"

    def read_bytes(self, instant: Instant) -> bytes:
        """The raw content of the instant's file for its state (from the archive for an
        archived completed instant)."""
        if self._is_archived(instant):
            return self.archived().metadata_bytes(instant)
        path = self.path_of(instant)
        try:
            return self.storage.read(path)
        except StorageError:
            if self.storage.exists(path):
                raise
            # listed a moment ago, gone now: another process archived or rolled it back meanwhile
            if not self._follows_archival:
                raise StaleTimelineError(f"instant {instant.requested_time} ({instant.action.value}) left the "
                                         "active timeline after it was listed (archived or rolled back by another "
                                         "process); reload the timeline") from None
        return self._archived_meanwhile(instant)

    def follow_archival(self) -> Timeline:
        """Make this listing a reader's snapshot: a completed instant that another process
        archives after the listing is read from the archive (its content never changes) instead
        of raising :class:`StaleTimelineError`. What is visible stays what was listed — the
        archived copy answers only the lookup. Writers and services do not follow: they list
        again, as their decisions must rest on a current listing. Returns self."""
        self._follows_archival = True
        return self

    def archive_now(self) -> Any:
        """The archived timeline as it is on storage now, not as this listing saw it: where a
        listed instant that another process archived meanwhile went (archival publishes the
        archive before it deletes the active files)."""
        from pyhudi.timeline.archived import load_archived

        return load_archived(self.storage, self.history_dir)

    def _archived_meanwhile(self, instant: Instant) -> bytes:
        """The bytes of a listed instant whose file is gone, from the archive as it is now
        (archival publishes the archive before it deletes the active files): a completed
        instant's, or the plan of a compaction or clustering listed as requested."""
        if self.layout_version == 2:
            found = self.archive_now().moved_content(instant)
            if found is not None:
                return found
        raise StaleTimelineError(f"instant {instant.requested_time} ({instant.action.value}) left the active "
                                 "timeline after it was listed and is not in the archived timeline either (rolled "
                                 "back or removed by another process); reload the timeline")

    def read_commit_summary(self, instant: Instant) -> tuple[str | None, dict[str, str]]:
        """``(operationType, extraMetadata)`` of a completed commit, decoded cheaply
        (:func:`~pyhudi.timeline.metadata.decode_commit_summary`)."""
        return commit_summary(instant.action.value, self.read_record(instant))

    def read_record(self, instant: Instant) -> dict[str, Any] | None:
        """The plain record of a completed instant's file (camelCase keys; None when empty), for
        callers that need a few fields and not the model
        (:func:`~pyhudi.timeline.metadata_base.decode_record`). A completed layout-2 instant's
        record is decoded once per process (callers must not mutate it): a read asks each
        commit for its schema and for the files it wrote."""
        if not instant.is_completed or self.layout_version != 2:
            return decode_record(instant.action.value, self.read_bytes(instant))
        key = (self.storage.base_uri, self.timeline_dir, self.file_name_of(instant))
        found = _RECORDS.get(key, _MISSING)
        if found is _MISSING:
            data = self.read_bytes(instant)
            found = decode_record(instant.action.value, data)
            if len(data) <= _RECORD_MAX_BYTES:  # (large commits are decoded again: memory stays small)
                if len(_RECORDS) >= _RECORDS_MAX:
                    _RECORDS.clear()
                _RECORDS[key] = found
        return found

    def read_metadata(self, instant: Instant) -> Any:
        """The decoded metadata (commit metadata, plan, ...) of the instant's file for its state.

        A completed layout-2 instant's file never changes (its name carries the completion time),
        so its decoded metadata is kept per process (:data:`_DECODED`; callers must not mutate
        it): cleaning, conflict checks and the fs view ask for the same retained commits on every
        write, and decoding them again made each write pay for the retained history."""
        from pyhudi.timeline.metadata import decode_instant_metadata  # (its models load on first use)

        if not instant.is_completed or self.layout_version != 2:
            return decode_instant_metadata(instant.action.value, instant.state.value, self.read_bytes(instant))
        key = (self.storage.base_uri, self.timeline_dir, self.file_name_of(instant))
        found = _DECODED.get(key)
        if found is None:
            found = decode_instant_metadata(instant.action.value, instant.state.value, self.read_bytes(instant))
            if len(_DECODED) >= _DECODED_MAX:
                _DECODED.clear()
            _DECODED[key] = found
        return found

    # ------------------------------------------------------------------ helpers
    def _find(self, requested_time: str, completed_action: Action) -> Instant | None:
        self._ensure_loaded()
        for inst in self._instants:
            if inst.requested_time == requested_time and inst.completed_action is completed_action:
                return inst
        return None


def checked_history_path(path: str) -> str:
    """``hoodie.timeline.history.path``: a folder inside the timeline folder (as Hudi resolves it);
    an absolute path, a URI or one leaving ``.hoodie`` would put the archive where no reader looks."""
    parts = path.strip("/").split("/") if isinstance(path, str) else []
    if (not isinstance(path, str) or not path.strip("/") or path.startswith("/") or "://" in path
            or any(p in ("", ".", "..") for p in parts)):
        raise ConfigError(f"hoodie.timeline.history.path={path!r} is not supported: it must be a folder name "
                          "relative to the timeline folder (default 'history'), without '..'")
    return path.strip("/")


class _NoArchive:
    """The archive of a layout-1 timeline (pyhudi reads only layout 2's LSM history)."""

    instants: list[Instant] = []
    version = 0

    def get(self, requested_time: str) -> Instant | None:
        return None

    def completion_times(self) -> dict[str, str]:
        return {}

    def __len__(self) -> int:
        return 0


_NO_ARCHIVE = _NoArchive()


_DECODED: dict[tuple[str, str, str], Any] = {}
"""(table, timeline dir, completed instant file) → its decoded metadata (:meth:`Timeline.read_metadata`)."""
_DECODED_MAX = 4096
_RECORDS: dict[tuple[str, str, str], Any] = {}
"""Plain records of small completed instant files (:meth:`Timeline.read_record`)."""
_RECORDS_MAX, _RECORD_MAX_BYTES = 256, 64 << 10
_MISSING = object()


def _most_advanced(instants: list[Instant]) -> dict[str, Instant]:
    """Requested time → its most advanced instant (the first listed among equals)."""
    out: dict[str, Instant] = {}
    for instant in instants:
        current = out.get(instant.requested_time)
        if current is None or instant.state.rank > current.state.rank:
            out[instant.requested_time] = instant
    return out


def _latest_time(instants: list[Instant]) -> str | None:
    times = [t for i in instants for t in (i.requested_time, i.completion_time) if t]
    if not times:
        return None
    top = max(times)
    if len(top) == 17 and top.isdigit() and all(len(t) == 17 for t in times):
        return top  # (17-digit times compare as strings: no normalising each)
    return latest_time_of(*times)


def _as_iterable(value: Any) -> Iterable[Any]:
    if isinstance(value, str):  # Action/State are str enums too
        return (value,)
    return value


__all__ = ["Timeline", "checked_history_path", "COMMIT_ACTIONS", "PENDING_COMMIT_ACTIONS", "DEFAULT_TIMELINE_DIR", "LAYOUT1_TIMELINE_DIR"]

"""Write-once state transitions of the active timeline's instants (a mixin of
:class:`~pyhudi.timeline.timeline.Timeline`): requested → inflight → completed, and the
deletions of rollbacks.

Transitions create files with :meth:`Storage.create_if_absent`, so each state file appears
exactly once and complete. Completion is the one step that needs the timeline lock: the
completion time must be generated and the completed file created atomically with respect to
other writers (RFC-66), so that completion order equals completion-time order. Rollbacks delete
under the same lock, deciding on a fresh listing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from pyhudi.errors import AlreadyExistsError, TimelineError
from pyhudi.timeline.empty_instant import link_empty
from pyhudi.timeline.instant import Action, Instant, State, is_valid_instant_time, latest_time_of, to_action
from pyhudi.timeline.listing import listed_with
from pyhudi.timeline.lock import Locked

if TYPE_CHECKING:
    from pyhudi.timeline.timeline import Timeline


class InstantTransitions:
    """The transitions of :class:`~pyhudi.timeline.timeline.Timeline` (which holds the listing,
    the storage, the lock and the time generator they use)."""

    # ------------------------------------------------------------------ transitions
    def new_instant_time(self, *, dry_run: bool = False) -> str:
        """A fresh instant time, greater than every time on the (cached) timeline.

        ``dry_run``: the time of a plan that is only shown, never written — the
        ``before_first_write`` guard (which changes the table) does not run for it."""
        if dry_run:
            self._check_layout()
        else:
            self._check_writable()
        return self.time_generator.next_time(floor=self.latest_time())

    def create_requested(
        self, action: Action | str, requested_time: str | None = None, content: bytes = b""
    ) -> Instant:
        """Create ``{t}.{action}.requested``; the time is generated under the lock when not given."""
        self._check_writable()
        action = to_action(action)
        if requested_time is None:
            requested_time = self.new_instant_time()
        else:
            if not is_valid_instant_time(requested_time):
                raise TimelineError(f"invalid instant time {requested_time!r} for a new {action.value} instant")
            existing = self._find(requested_time, Instant(requested_time, action, State.REQUESTED).completed_action)
            if existing is not None:
                raise TimelineError(f"instant {existing} already exists; cannot request {requested_time} again")
            self.time_generator.observe(requested_time)
        instant = Instant(requested_time, action, State.REQUESTED)
        _, inflight_name = instant.pending_file_names(self.layout_version)
        if self.storage.exists(f"{self.timeline_dir}/{inflight_name}"):
            raise TimelineError(f"instant {instant.as_inflight()} already exists; cannot request it again")
        self._create(instant, content)
        return instant

    def transition_to_inflight(self, instant: Instant, content: bytes = b"") -> Instant:
        """Create the inflight file of a requested instant."""
        self._check_writable()
        if instant.state is not State.REQUESTED:
            raise TimelineError(
                f"cannot move instant {instant} to inflight: it is {instant.state.value}, not REQUESTED"
            )
        current = self._find(instant.requested_time, instant.completed_action)
        if current is not None and current.is_completed:
            raise TimelineError(f"cannot move instant {instant} to inflight: it is already completed as {current}")
        inflight = instant.as_inflight()
        requested_path = f"{self.timeline_dir}/{instant.file_name(self.layout_version)}"
        if not self.storage.exists(requested_path):
            raise TimelineError(f"cannot move instant {instant} to inflight: {requested_path} does not exist")
        self._create(inflight, content)
        return inflight

    def complete(self, instant: Instant, content: bytes, precondition: Callable[[Timeline], None] | None = None,
                 holder_file: str | None = None) -> Instant:
        """Complete an inflight instant: under the lock, generate the completion time and create
        the completed file atomically. Returns the completed instant.

        ``precondition(timeline)`` runs under the lock on the freshly listed timeline just before
        the completed file is created; it refuses the completion by raising (e.g. a writer whose
        schema an ALTER changed meanwhile). ``holder_file``: the writer's heartbeat file, which the
        local file lock is taken as a link of (no file of its own)."""
        self._check_writable()
        if instant.state is not State.INFLIGHT:
            raise TimelineError(f"cannot complete instant {instant}: it is {instant.state.value}, not INFLIGHT")
        with Locked(self.lock, holder_file):
            self.load()  # decide on the current state of storage, not on our cache
            current = self._find(instant.requested_time, instant.completed_action)
            if current is None:
                raise TimelineError(f"cannot complete instant {instant}: it is not on the timeline (rolled back?)")
            if current.is_completed:
                raise TimelineError(f"cannot complete instant {instant}: it is already completed as {current}")
            if current.state is not State.INFLIGHT:
                raise TimelineError(f"cannot complete instant {instant}: it is {current.state.value} on storage")
            if precondition is not None:
                precondition(self)
            floor = latest_time_of(self.latest_time(), instant.requested_time)
            completion = self.time_generator.next_time(floor=floor)
            done = instant.with_state(State.COMPLETED, completion)
            self._create(done, content)
        return done

    def delete_pending(self, instant: Instant, must_exist: bool = False) -> None:
        """Remove the requested and inflight files of a pending instant (rollback).

        ``must_exist``: refuse (TimelineError) if the instant is gone already — a rollback that
        claims its target this way knows no other rollback claimed it first."""
        self._check_writable()
        if instant.is_completed:
            raise TimelineError(f"cannot delete completed instant {instant}; only pending instants can be deleted")
        with Locked(self.lock):
            self.load()
            current = self._find(instant.requested_time, instant.completed_action)
            if current is not None and current.is_completed:
                raise TimelineError(f"cannot delete instant {instant}: it completed as {current}")
            if current is None and must_exist:
                raise TimelineError(f"cannot delete instant {instant}: it is not on the timeline (rolled back?)")
            requested_name, inflight_name = instant.pending_file_names(self.layout_version)
            for name in (inflight_name, requested_name):  # most advanced first
                self.storage.delete(f"{self.timeline_dir}/{name}")
                self._entries.pop(name, None)
            self._rebuild()

    def delete_completed(self, instant: Instant, precondition: Callable[[Timeline], None] | None = None) -> None:
        """Remove a completed instant's files (the rollback of a completed commit), under the
        lock: ``precondition`` runs there on a fresh listing (e.g. "it is still the latest")."""
        self._check_writable()
        with Locked(self.lock):
            self.load()
            current = self._find(instant.requested_time, instant.completed_action)
            if current is None or not current.is_completed:
                raise TimelineError(f"cannot delete instant {instant}: it is not completed on the timeline")
            if precondition is not None:
                precondition(self)
            names = [current.file_name(self.layout_version), *current.pending_file_names(self.layout_version)]
            for name in names:  # the completed file first: from then on the commit never happened
                self.storage.delete(f"{self.timeline_dir}/{name}")
                self._entries.pop(name, None)
            self._rebuild()

    def revert_to_requested(self, instant: Instant) -> Instant:
        """Delete the inflight file of a pending instant (compaction / clustering rollback)."""
        self._check_writable()
        if instant.is_completed:
            raise TimelineError(f"cannot revert completed instant {instant} to requested")
        with Locked(self.lock):
            self.load()
            current = self._find(instant.requested_time, instant.completed_action)
            if current is None or current.state is not State.INFLIGHT:
                state = "absent" if current is None else current.state.value
                raise TimelineError(f"cannot revert instant {instant} to requested: it is {state}, not INFLIGHT")
            requested_name, inflight_name = instant.pending_file_names(self.layout_version)
            if requested_name not in self._entries:
                raise TimelineError(f"cannot revert instant {instant} to requested: {requested_name} is missing")
            self.storage.delete(f"{self.timeline_dir}/{inflight_name}")
            self._entries.pop(inflight_name, None)
            self._rebuild()
        return instant.as_requested()

    # ------------------------------------------------------------------ helpers
    def _check_writable(self) -> None:
        """Refuse a layout pyhudi does not write; before the timeline's first change, run the
        ``before_first_write`` guard (once, under the lock)."""
        self._check_layout()
        if self._before_first_write is not None:
            with Locked(self.lock):  # (two writers never turn the metadata table off at once)
                self._before_first_write()
            self._before_first_write = None

    def _check_layout(self) -> None:
        if self.layout_version != 2:
            raise TimelineError(f"writing layout 1 timelines is not supported: the table at {self.storage.base_uri} "
                                "has timeline layout 1 (table version 6), which pyhudi reads but does not write; "
                                "upgrade it to version 8 with Apache Hudi to write it")

    def _create(self, instant: Instant, content: bytes) -> None:
        name = instant.file_name(self.layout_version)
        # Completed instants and plans are synced; an empty requested/inflight file is not: lost
        # in a crash, it only leaves files of an instant that never existed (never visible). It
        # is a link of the table's one empty instant file where links can be made.
        durable = instant.is_completed or bool(content)
        try:
            if durable or not link_empty(self.storage, f"{self.timeline_dir}/{name}"):
                self.storage.create_if_absent(f"{self.timeline_dir}/{name}", bytes(content), durable=durable)
        except AlreadyExistsError:
            raise TimelineError(f"instant {instant} already exists ({self.timeline_dir}/{name})") from None
        self._added(name, instant)

    def _added(self, name: str, instant: Instant) -> None:
        """Record the instant file ``name`` this object just created (in its listing, and in the
        folder's last listing: :func:`~pyhudi.timeline.listing.listed_with`)."""
        self._ensure_loaded()
        self._entries[name] = instant
        self._refold((instant.requested_time, instant.completed_action))
        listed_with(self.storage, self.timeline_dir, self.layout_version, self.timezone, name)

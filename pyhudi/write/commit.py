"""The instant lifecycle every commit follows: user writes and table services alike.

One protocol (Hudi's transaction manager + heartbeat client, in pyhudi's terms), so that a
compaction or a clustering is not an "operation" of the write client, yet commits exactly as an
upsert does:

- **begin** — the heartbeat starts first (no process may ever see a pending instant of a live
  writer without a fresh heartbeat), then ``<t>.<action>.requested`` (with its plan, if any), then
  ``.inflight``. A service whose plan was scheduled earlier **resumes** its requested instant.
- **files** — every data file gets a marker before it is created
  (:func:`pyhudi.write.markers.create_marker`), so an interrupted instant can be undone.
- **commit** — under the timeline lock, on a fresh listing: the caller's precondition (conflict
  checks) and the completion time + completed file, atomically; then markers and heartbeat go.
- **abort** — the heartbeat stays (fresh, no longer beating) while the caller's undo runs, so no
  other process undoes the instant at the same time; then it goes, so if the undo failed (lock
  timeout, crash) the next writer finishes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pyhudi.errors import TimelineError
from pyhudi.storage.fs import Storage
from pyhudi.timeline.heartbeat import HEARTBEAT_DIR, Heartbeat
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import Locked, Timeline
from pyhudi.write.markers import delete_markers


@dataclass
class ActiveInstant:
    """An instant being written by this process (``heartbeat``), or adopted from another client
    that began it (``heartbeat=None``: only its heartbeat file is left to remove)."""

    storage: Storage
    timeline: Timeline
    instant: Instant
    heartbeat: Heartbeat | None

    @classmethod
    def begin(cls, storage: Storage, timeline: Timeline, action: Action, requested_time: str, *,
              heartbeat_interval_ms: int, heartbeat_misses: int = 2, plan: bytes = b"") -> ActiveInstant:
        """Heartbeat, then requested (holding ``plan``) and inflight."""
        heartbeat = Heartbeat(storage, requested_time, heartbeat_interval_ms, misses=heartbeat_misses)
        return cls._started(storage, timeline, heartbeat, lambda: timeline.transition_to_inflight(
            timeline.create_requested(action, requested_time, content=plan)))

    @classmethod
    def resume(cls, storage: Storage, timeline: Timeline, requested: Instant, *,
               heartbeat_interval_ms: int, heartbeat_misses: int = 2) -> ActiveInstant:
        """Heartbeat, then inflight, for an instant requested earlier (a scheduled service plan)."""
        heartbeat = Heartbeat(storage, requested.requested_time, heartbeat_interval_ms, misses=heartbeat_misses)
        # Under the lock, on a fresh listing: two processes resuming one plan must never both
        # start (the loser's failed start would delete the winner's heartbeat file).
        with Locked(timeline.lock):
            current = timeline.reload().get(requested.requested_time)
            if current is None or current.state is not State.REQUESTED:
                state = "gone" if current is None else current.state.value
                raise TimelineError(f"cannot resume {requested.action.value} {requested.requested_time}: it is "
                                    f"{state}, not REQUESTED (another process started it)")
            return cls._started(storage, timeline, heartbeat, lambda: timeline.transition_to_inflight(current))

    @classmethod
    def _started(cls, storage: Storage, timeline: Timeline, heartbeat: Heartbeat,
                 to_inflight: Callable[[], Instant]) -> ActiveInstant:
        """Start ``heartbeat``, then move the instant to inflight; the heartbeat goes if that fails."""
        heartbeat.start()
        try:
            inflight = to_inflight()
        except BaseException:
            heartbeat.stop()
            raise
        return cls(storage, timeline, inflight, heartbeat)

    @classmethod
    def adopt(cls, storage: Storage, timeline: Timeline, inflight: Instant) -> ActiveInstant:
        """An inflight instant another client began (a Spark driver committing what it planned)."""
        return cls(storage, timeline, inflight, None)

    @property
    def requested_time(self) -> str:
        return self.instant.requested_time

    def commit(self, content: bytes, precondition: Callable[[Timeline], None] | None = None) -> Instant:
        """Complete the instant under the lock (``precondition`` runs there on a fresh listing and
        refuses by raising); markers and heartbeat go afterwards."""
        # the lock is taken as a link of a heartbeat that names this process (a dead holder is known at once)
        beating = self.heartbeat.relpath if self.heartbeat is not None and self.heartbeat.tied_to_process else None
        completed = self.timeline.complete(self.instant, content, precondition=precondition, holder_file=beating)
        delete_markers(self.storage, self.requested_time)
        self._end_heartbeat()
        return completed

    def abort(self, undo: Callable[[], None]) -> None:
        """Run ``undo`` (delete what the instant wrote, roll it back or revert it) with the
        heartbeat still fresh, then remove the heartbeat whatever happened."""
        if self.heartbeat is not None:
            self.heartbeat.stop(delete=False)
        try:
            undo()
        finally:
            self._end_heartbeat()

    def detach(self) -> None:
        """This process stops beating; the write goes on elsewhere (tasks keep the beat fresh)."""
        if self.heartbeat is not None:
            self.heartbeat.untie()

    def _end_heartbeat(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.stop()
        else:
            self.storage.delete(f"{HEARTBEAT_DIR}/{self.requested_time}")

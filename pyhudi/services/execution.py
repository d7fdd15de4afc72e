"""What every plan-executing table service (compaction, clustering) does with an interrupted run:
its files go, by their markers, and the instant goes back to requested, to run again from the
same plan — never re-planned (Hudi's rule for table services).
"""

from __future__ import annotations

from pyhudi.errors import ConcurrentWriteError, TimelineError
from pyhudi.storage.fs import Storage
from pyhudi.timeline.heartbeat import heartbeat_expired
from pyhudi.timeline.instant import Instant
from pyhudi.timeline.timeline import Locked, Timeline
from pyhudi.write.markers import delete_markers, list_markers


def undo_execution(storage: Storage, timeline: Timeline, instant: str) -> None:
    """A failed execution: the data files it wrote go (by their markers), the instant goes back
    to requested."""
    for marker in list_markers(storage, instant):
        storage.delete(marker.data_relpath)
    delete_markers(storage, instant)
    current = timeline.reload().get(instant)
    if current is not None and current.is_inflight:
        timeline.revert_to_requested(current)


def recover_inflight(storage: Storage, timeline: Timeline, inflight: Instant, interval: int, misses: int,
                     service: str) -> Instant:
    """An inflight ``service`` run whose executor is gone goes back to requested (its files
    deleted), decided under the timeline lock so two recoverers never undo each other's fresh run.
    A run whose heartbeat is fresh belongs to a live process: :class:`ConcurrentWriteError`."""
    instant = inflight.requested_time
    with Locked(timeline.lock):
        current = timeline.reload().get(instant)
        if current is None or not current.is_pending:
            raise TimelineError(f"no pending {service} at {instant}: it completed meanwhile")
        if current.is_inflight:
            if not heartbeat_expired(storage, instant, interval, misses):
                raise ConcurrentWriteError(f"{service} {instant} is being executed by another live process (its "
                                           "heartbeat is fresh); it is not run twice")
            undo_execution(storage, timeline, instant)
    return timeline.get(instant)

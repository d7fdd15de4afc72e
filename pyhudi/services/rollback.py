"""Rollback as a user-facing service: ``t.rollback(instant)`` (Hudi's ``rollback`` of a commit).

- A **pending** instant (a write, a compaction or a clustering: its plan is dropped) whose process is gone is rolled back through its
  markers — the same mechanism writers use on failed writes (:mod:`pyhudi.write.rollback`); one
  whose heartbeat is fresh belongs to a live process and is refused.
- A **completed** commit can be rolled back only while it is the latest completed commit (as Hudi
  requires; later commits may have read or merged its data): the files its write stats name are
  deleted and its instant files removed, recorded as a ``rollback`` instant. Readers that pinned a
  snapshot including it lose it; time travel to it is gone.

Either way the completed ``rollback`` instant records the plan and what was deleted.
"""

from __future__ import annotations

from typing import Mapping

from pyhudi.config.concurrency import HEARTBEAT_INTERVAL_MS, HEARTBEAT_TOLERABLE_MISSES
from pyhudi.errors import ConcurrentWriteError, TimelineError
from pyhudi.storage.fs import Storage
from pyhudi.timeline.heartbeat import Heartbeat, heartbeat_expired
from pyhudi.timeline.instant import Action, Instant
from pyhudi.timeline.metadata import InstantInfo, RollbackPlan, RollbackRequest
from pyhudi.timeline.timeline import Timeline
from pyhudi.write.rollback import execute_rollback, rollback_instant

_COMMITS = (Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT)


def rollback(storage: Storage, timeline: Timeline, instant_time: str, options: Mapping[str, str]) -> Instant:
    """Roll back ``instant_time``; returns the completed ``rollback`` instant."""
    target = timeline.get(instant_time)
    if target is None:
        raise TimelineError(f"no instant {instant_time} on the active timeline")
    interval = HEARTBEAT_INTERVAL_MS.get(options)
    if target.is_pending:
        if target.action not in (*_COMMITS, Action.COMPACTION, Action.CLUSTERING):
            raise TimelineError(f"{target.action} {instant_time} is not a write, a compaction or a clustering: it is "
                                "not rolled back")
        if not heartbeat_expired(storage, instant_time, interval, HEARTBEAT_TOLERABLE_MISSES.get(options)):
            raise ConcurrentWriteError(f"{target.action} {instant_time} is being written by a live process (its "
                                       "heartbeat is fresh); it is not rolled back")
        done = rollback_instant(storage, timeline, target, interval)
        if done is None:
            raise TimelineError(f"{target.action} {instant_time} completed or was rolled back meanwhile")
        return done
    if target.completed_action not in _COMMITS:
        raise TimelineError(f"{target.action} {instant_time} is not a commit: it is not rolled back")
    return _rollback_completed(storage, timeline, target, interval)


def _latest_commit(timeline: Timeline) -> Instant | None:
    commits = [i for i in timeline.completed() if i.completed_action in _COMMITS]
    return max(commits, key=lambda i: i.sort_time, default=None)


def _rollback_completed(storage: Storage, timeline: Timeline, target: Instant, interval: int) -> Instant:
    latest = _latest_commit(timeline)
    if latest is None or latest.requested_time != target.requested_time:
        raise TimelineError(f"commit {target.requested_time} is not the latest completed commit "
                            f"({latest.requested_time if latest else 'none'}): only the latest can be rolled back")
    metadata = timeline.read_metadata(target)
    requests = [RollbackRequest(partition_path=stat.partition_path or "", file_id=stat.file_id,
                                latest_base_instant=None, files_to_be_deleted=[stat.path],
                                log_blocks_to_be_deleted=None)
                for stat in metadata.write_stats() if stat.path]
    plan = RollbackPlan(instant_to_rollback=InstantInfo(commit_time=target.requested_time,
                                                        action=str(target.completed_action)),
                        rollback_requests=requests)
    rollback_time = timeline.new_instant_time()
    heartbeat = Heartbeat(storage, rollback_time, interval).start()
    try:
        pending = timeline.create_requested(Action.ROLLBACK, rollback_time, content=plan.to_avro_bytes())
        pending = timeline.transition_to_inflight(pending)

        def still_latest(current: Timeline) -> None:
            now = _latest_commit(current)
            if now is None or now.requested_time != target.requested_time:
                raise TimelineError(f"commit {target.requested_time} is no longer the latest completed commit "
                                    f"({now.requested_time if now else 'none'} completed meanwhile)")

        try:
            timeline.delete_completed(target, precondition=still_latest)
        except TimelineError:
            timeline.delete_pending(pending)
            raise
        return execute_rollback(storage, timeline, pending, plan)
    finally:
        heartbeat.stop()

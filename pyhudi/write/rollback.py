"""Rollback of failed writes, and the heartbeats that tell a failed writer from a slow one.

A write that fails (or whose process is killed) leaves a pending instant and, through its
markers, a list of every data file it may have created. Rolling it back deletes those files,
records a ``rollback`` instant (plan + metadata, as Hudi does) and removes the pending
instant's timeline files — so nothing of it is ever visible.

Every writer keeps a heartbeat (``.hoodie/.heartbeat/<instant>``, touched every interval by a
daemon thread), whatever the policy, and **no writer rolls back an instant whose heartbeat is
fresh**: it may belong to a live writer. Who rolls back the others
(:data:`~pyhudi.config.concurrency.FAILED_WRITES_POLICY`): EAGER (single writer) — the next
writer rolls back every pending write whose writer is gone; LAZY (several writers) — the same,
but a single-writer table refuses a second live writer instead (see
:func:`live_pending_writes`). A writer is gone when its heartbeat expired (interval × tolerable
misses), was never written, or names a process of this host that no longer exists (so a killed
writer is rolled back at once, not minutes later).
"""

from __future__ import annotations

import time

from pyhudi.config.concurrency import (
    FAILED_WRITES_POLICY,
    HEARTBEAT_INTERVAL_MS,
    HEARTBEAT_TOLERABLE_MISSES,
    ConcurrencyPolicy,
)
from pyhudi.errors import StorageError, TimelineError
from pyhudi.storage.fs import Storage
from pyhudi.timeline.heartbeat import HEARTBEAT_DIR, Heartbeat, heartbeat_expired
from pyhudi.timeline.instant import Action, Instant
from pyhudi.timeline.metadata import (
    InstantInfo,
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
)
from pyhudi.timeline.timeline import Timeline
from pyhudi.write.markers import delete_markers, list_markers

__all__ = [
    "FAILED_WRITES_POLICY", "HEARTBEAT_DIR", "HEARTBEAT_INTERVAL_MS", "HEARTBEAT_TOLERABLE_MISSES", "Heartbeat",
    "WRITE_ACTIONS", "execute_rollback", "heartbeat_expired", "live_pending_writes", "rollback_failed_writes",
    "rollback_instant",
]

WRITE_ACTIONS = (Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT)


def _writer_gone(storage: Storage, instant: Instant, policy: ConcurrencyPolicy) -> bool:
    return heartbeat_expired(storage, instant.requested_time, policy.heartbeat_interval_ms, policy.heartbeat_misses)


def live_pending_writes(storage: Storage, timeline: Timeline, policy: ConcurrencyPolicy,
                        exclude: str | None = None) -> list[Instant]:
    """Pending write instants (of the cached listing) whose writer is alive (fresh heartbeat)."""
    return [i for i in timeline.pending() if i.action in WRITE_ACTIONS and i.requested_time != exclude
            and not _writer_gone(storage, i, policy)]


def rollback_instant(storage: Storage, timeline: Timeline, failed: Instant,
                     heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS.default) -> Instant | None:
    """Roll back one pending write instant; returns the completed rollback instant, or None if
    the instant completed or another rollback claimed it meanwhile.

    Data files are found through the failed instant's markers. The rollback keeps a heartbeat of
    its own while it runs, so other writers finish only rollbacks whose executor is gone.
    """
    if failed.is_completed:
        raise ValueError(f"instant {failed} is completed; only pending writes are rolled back here")
    markers = list_markers(storage, failed.requested_time)
    plan = RollbackPlan(
        instant_to_rollback=InstantInfo(commit_time=failed.requested_time, action=str(failed.action)),
        rollback_requests=[
            RollbackRequest(partition_path=m.partition_path, file_id=None, latest_base_instant=None,
                            files_to_be_deleted=[m.data_relpath], log_blocks_to_be_deleted=None)
            for m in markers
        ],
    )
    rollback_time = timeline.new_instant_time()
    heartbeat = Heartbeat(storage, rollback_time, heartbeat_interval_ms).start()
    try:
        rollback = timeline.create_requested(Action.ROLLBACK, rollback_time, content=plan.to_avro_bytes())
        rollback = timeline.transition_to_inflight(rollback)
        try:
            # Claim the failed instant first, under the timeline lock: once its pending files are
            # gone its writer can no longer complete it; if it completed meanwhile, or another
            # rollback claimed it first, touch nothing.
            timeline.delete_pending(failed, must_exist=True)
        except TimelineError:
            timeline.delete_pending(rollback)
            return None
        return execute_rollback(storage, timeline, rollback, plan)
    finally:
        heartbeat.stop()


def execute_rollback(storage: Storage, timeline: Timeline, rollback: Instant, plan: RollbackPlan) -> Instant:
    """Delete the files a rollback plan names and complete the rollback (idempotent: re-runnable)."""
    started = time.time()
    target = plan.instant_to_rollback
    deleted: dict[str, list[str]] = {}
    for request in plan.rollback_requests or []:
        files = deleted.setdefault(request.partition_path, [])
        for relpath in request.files_to_be_deleted:
            if storage.delete(relpath):
                files.append(relpath)
    metadata = RollbackMetadata(
        start_rollback_time=rollback.requested_time,
        time_taken_in_millis=int((time.time() - started) * 1000),
        total_files_deleted=sum(len(v) for v in deleted.values()),
        commits_rollback=[target.commit_time],
        partition_metadata={
            p: RollbackPartitionMetadata(partition_path=p, success_delete_files=files, failed_delete_files=[])
            for p, files in deleted.items()
        },
        instants_rollback=[target],
    )
    completed = timeline.complete(rollback, metadata.to_avro_bytes())
    delete_markers(storage, target.commit_time)
    storage.delete(f"{HEARTBEAT_DIR}/{target.commit_time}")
    return completed


def rollback_failed_writes(
    storage: Storage, timeline: Timeline, policy: ConcurrencyPolicy, exclude: str | None = None,
    reload: bool = True,
) -> list[str]:
    """Roll back the pending write instants whose writer is gone (never one with a fresh
    heartbeat, whatever the policy); returns the rolled-back instant times. The NEVER policy
    rolls back nothing.

    ``reload=False`` when ``timeline`` was just listed (saves a listing per commit).
    """
    if policy.failed_writes == "NEVER":
        return []
    if reload:
        timeline.reload()
    done = []
    for instant in timeline.pending():  # a rollback killed before it went inflight claimed nothing
        if instant.action == Action.ROLLBACK and not instant.is_inflight and _writer_gone(storage, instant, policy):
            try:
                timeline.delete_pending(instant)
            except TimelineError:
                pass  # it completed meanwhile
    for instant in timeline.pending():  # rollbacks interrupted after claiming their target
        if instant.action == Action.ROLLBACK and instant.is_inflight and _writer_gone(storage, instant, policy):
            try:
                plan = timeline.read_metadata(instant.as_requested())
            except StorageError:  # abandoned and removed since the listing
                continue
            if isinstance(plan, RollbackPlan) and plan.instant_to_rollback is not None:
                target = timeline.get(plan.instant_to_rollback.commit_time)
                if target is None or target.is_pending:
                    try:
                        if target is not None:
                            timeline.delete_pending(target)
                        execute_rollback(storage, timeline, instant, plan)
                    except TimelineError:  # another writer finished this rollback first
                        continue
                    done.append(plan.instant_to_rollback.commit_time)
    if done:
        timeline.reload()
    gone = [i.requested_time for i in timeline.pending() if i.action in WRITE_ACTIONS
            and i.requested_time != exclude and _writer_gone(storage, i, policy)]
    if gone:
        # a writer deletes its heartbeat once its instant completed: list again, so an instant
        # that completed since the listing is not taken for a failed one
        timeline.reload()
    for requested_time in gone:
        instant = timeline.get(requested_time)
        if instant is None or not instant.is_pending:
            continue
        if rollback_instant(storage, timeline, instant, policy.heartbeat_interval_ms) is not None:
            done.append(instant.requested_time)
    return done

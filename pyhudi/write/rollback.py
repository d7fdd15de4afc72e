"""Rollback of failed writes, and the heartbeats that tell a failed writer from a slow one.

A write that fails (or whose process is killed) leaves a pending instant and, through its
markers, a list of every data file it may have created. Rolling it back deletes those files,
records a ``rollback`` instant (plan + metadata, as Hudi does) and removes the pending
instant's timeline files — so nothing of it is ever visible.

Who rolls back (``hoodie.cleaner.policy.failed.writes``): EAGER (single writer, the default)
— the next writer rolls back every pending write instant before it starts; LAZY (several
writers) — only instants whose heartbeat (``.hoodie/.heartbeat/<instant>``, touched by a
live writer every interval) has expired, since a pending instant may belong to a live writer.
"""

from __future__ import annotations

import os
import threading
import time

from pyhudi.config.keys import ConfigKey
from pyhudi.errors import StorageError, TimelineError
from pyhudi.storage.fs import Storage
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

FAILED_WRITES_POLICY = ConfigKey(
    "hoodie.cleaner.policy.failed.writes", str, "EAGER",
    "EAGER: the next writer rolls back pending writes; LAZY: only writes whose heartbeat expired.",
    choices=("EAGER", "LAZY", "NEVER"),
)
HEARTBEAT_INTERVAL_MS = ConfigKey(
    "hoodie.client.heartbeat.interval_in_ms", int, 60_000, "How often a live writer touches its heartbeat."
)
HEARTBEAT_TOLERABLE_MISSES = ConfigKey(
    "hoodie.client.heartbeat.tolerable.misses", int, 2, "Missed heartbeats before a writer counts as failed."
)
HEARTBEAT_DIR = ".hoodie/.heartbeat"
WRITE_ACTIONS = (Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT)


class Heartbeat:
    """Touches ``.hoodie/.heartbeat/<instant>`` from a daemon thread while a write runs.

    Only the LAZY policy reads heartbeats (several writers: a pending instant may be alive), so
    as in Hudi a writer under another policy (``enabled=False``) keeps none.
    """

    def __init__(self, storage: Storage, instant: str, interval_ms: int, enabled: bool = True) -> None:
        self.storage = storage
        self.relpath = f"{HEARTBEAT_DIR}/{instant}"
        self.interval_s = max(interval_ms, 10) / 1000.0
        self.enabled = enabled
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "Heartbeat":
        if not self.enabled:
            return self
        self._beat()
        self._thread = threading.Thread(target=self._run, name=f"pyhudi-heartbeat-{self.relpath}", daemon=True)
        self._thread.start()
        return self

    def _beat(self) -> None:
        # write-then-rename: a reader never sees an empty (torn) heartbeat
        tmp = f"{self.relpath}.{os.getpid()}.{threading.get_ident()}.tmp"  # unique across processes too
        self.storage.write(tmp, str(int(time.time() * 1000)).encode())
        self.storage.rename(tmp, self.relpath)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self._beat()
            except StorageError:
                pass  # a missed beat is tolerated; enough of them mark the writer failed

    def stop(self, delete: bool = True) -> None:
        if not self.enabled:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if delete:
            self.storage.delete(self.relpath)


def heartbeat_expired(storage: Storage, instant: str, interval_ms: int, misses: int, now_ms: int | None = None) -> bool:
    """True if the writer of ``instant`` stopped beating (or never started) long enough ago."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    try:
        last = int(storage.read(f"{HEARTBEAT_DIR}/{instant}").decode().strip() or 0)
    except (StorageError, ValueError):
        last = 0
    return now_ms - last > interval_ms * misses


def rollback_instant(storage: Storage, timeline: Timeline, failed: Instant) -> Instant | None:
    """Roll back one pending write instant; returns the completed rollback instant.

    Data files are found through the failed instant's markers, plus a listing fallback for
    files whose marker-less creation cannot happen in pyhudi but may in other writers.
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
    rollback = timeline.create_requested(Action.ROLLBACK, content=plan.to_avro_bytes())
    rollback = timeline.transition_to_inflight(rollback)
    try:
        # Claim the failed instant first, under the timeline lock: once its pending files are
        # gone its writer can no longer complete it; if it completed meanwhile, touch nothing.
        timeline.delete_pending(failed)
    except TimelineError:
        timeline.delete_pending(rollback)
        return None
    return execute_rollback(storage, timeline, rollback, plan)


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
    storage: Storage, timeline: Timeline, policy: str, interval_ms: int, misses: int, exclude: str | None = None,
    reload: bool = True,
) -> list[str]:
    """Roll back pending write instants per ``policy``; returns the rolled-back instant times.

    ``reload=False`` when ``timeline`` was just listed (saves a listing per commit).
    """
    if policy == "NEVER":
        return []
    if reload:
        timeline.reload()
    done = []
    for instant in timeline.pending():  # rollbacks interrupted after claiming their target
        if instant.action == Action.ROLLBACK and instant.is_inflight:
            plan = timeline.read_metadata(instant.as_requested())
            if isinstance(plan, RollbackPlan) and plan.instant_to_rollback is not None:
                target = timeline.get(plan.instant_to_rollback.commit_time)
                if target is None or target.is_pending:
                    if target is not None:
                        timeline.delete_pending(target)
                    execute_rollback(storage, timeline, instant, plan)
                    done.append(plan.instant_to_rollback.commit_time)
    if done:
        timeline.reload()
    for instant in timeline.pending():
        if instant.action not in WRITE_ACTIONS or instant.requested_time == exclude:
            continue
        if policy == "LAZY" and not heartbeat_expired(storage, instant.requested_time, interval_ms, misses):
            continue
        if rollback_instant(storage, timeline, instant) is not None:
            done.append(instant.requested_time)
    return done

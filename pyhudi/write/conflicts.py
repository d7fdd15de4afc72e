"""Conflict detection at commit time, under the timeline lock (Hudi's pre-commit check).

A write plans on the timeline it listed when it began; commits that complete while it runs are
*concurrent*. What a concurrent commit means depends on the concurrency mode
(:mod:`pyhudi.config.concurrency`):

* every mode — a new base file version of a copy-on-write file group that a concurrent commit
  also rewrote would hide that commit's rows (:func:`check_no_concurrent_base_version`);
* ``SINGLE_WRITER`` — any concurrent write commit means a second writer ran against a
  single-writer table: the later one to commit fails (:class:`ConcurrentWriteError`) naming the
  setting to change, and nothing of the earlier one is touched;
* ``OPTIMISTIC_CONCURRENCY_CONTROL`` — Hudi's ``SimpleConcurrentFileWritesConflictResolutionStrategy``:
  the write fails if a concurrent commit touched one of its file groups (on bucketed tables: one of
  its ``(partition, bucket)``s, Hudi's bucket-index variant); a compaction never conflicts;
* ``NON_BLOCKING_CONCURRENCY_CONTROL`` — appends never conflict (readers order log files by
  completion time); only files that create a base file are checked as under OCC (Hudi resolves
  conflicts for BULK_INSERT under NBCC), since a second base file would hide the first.

A refused commit is rolled back by the caller; the table stays as the concurrent commits left it.
"""

from __future__ import annotations

from typing import Iterator, Sequence

from pyhudi.config.concurrency import NBCC, OCC, SINGLE_WRITER, WRITE_CONCURRENCY_MODE, ConcurrencyPolicy
from pyhudi.errors import CommitConflictError, ConcurrentWriteError
from pyhudi.timeline.instant import Action, Instant
from pyhudi.timeline.timeline import Timeline
from pyhudi.write.handle import KIND_CREATE, KIND_MERGE, WriteStatus

_WRITE_COMMITS = ("commit", "deltacommit", "replacecommit")


def concurrent_commits(txn_instant: str, current: Timeline, seen: set[str] | None,
                       merge_on_read: bool) -> Iterator[Instant]:
    """Completed write commits of ``current`` that this write did not see when it began, in
    completion order. ``seen``: requested times completed in the listing the write planned on;
    without it, commits that completed after the write's own requested time. Compactions
    (``commit`` on merge-on-read) never conflict with a write: its log files complete after the
    compaction's instant, so readers apply them on top of the compacted base."""
    for instant in sorted(current.completed(), key=lambda i: i.sort_time):
        if instant.requested_time == txn_instant or str(instant.action) not in _WRITE_COMMITS:
            continue
        if seen is not None and instant.requested_time in seen:
            continue
        if seen is None and (instant.completion_time or instant.requested_time) <= txn_instant:
            continue
        if merge_on_read and instant.action == Action.COMMIT:
            continue  # a compaction: completion-time slicing puts this write's files after its base
        if instant.is_clustering:
            continue  # a table service: it only replaces groups (check_not_replaced) and writes new ones
        yield instant


def check_write_conflicts(txn_instant: str, statuses: Sequence[WriteStatus], seen: set[str] | None,
                          current: Timeline, policy: ConcurrencyPolicy, *, bucketed: bool,
                          merge_on_read: bool) -> None:
    """Refuse this commit per the concurrency mode (module docstring); ``current`` is the timeline
    listed under the lock just before completion."""
    if policy.mode == NBCC:
        mine = _touched([s for s in statuses if s.kind == KIND_CREATE], bucketed)
        if not mine:
            return
    else:
        mine = _touched(statuses, bucketed)
    for other in concurrent_commits(txn_instant, current, seen, merge_on_read):
        if policy.mode == SINGLE_WRITER:
            raise ConcurrentWriteError(
                f"write {txn_instant} ran at the same time as {other.action} {other.requested_time}, which completed "
                f"first: this table has a single writer ({WRITE_CONCURRENCY_MODE.key}={SINGLE_WRITER}); the write is "
                f"rolled back. To let several writers work at once, set {WRITE_CONCURRENCY_MODE.key}={OCC}"
            )
        metadata = current.read_metadata(other)
        if metadata is None or not hasattr(metadata, "partition_file_ids"):
            continue
        theirs = {(p, _group_key(f, bucketed)) for p, ids in metadata.partition_file_ids().items() for f in ids}
        hit = sorted(mine & theirs)
        if hit:
            partition, group = hit[0]
            what = f"bucket {group}" if bucketed else f"file group {group}"
            raise CommitConflictError(
                f"write {txn_instant} conflicts with {other.action} {other.requested_time}, which changed {what} of "
                f"partition {partition!r} while this write ran ({WRITE_CONCURRENCY_MODE.key}={policy.mode}); "
                "the write is rolled back and the table is as that commit left it: retry the write"
            )


def _group_key(file_id: str, bucketed: bool) -> str:
    """The unit two writes conflict on: the file id, or its 8-digit bucket prefix."""
    return file_id[:8] if bucketed else file_id


def _touched(statuses: Sequence[WriteStatus], bucketed: bool) -> set[tuple[str, str]]:
    return {(s.partition_path, _group_key(s.file_id, bucketed)) for s in statuses}


def check_no_concurrent_base_version(txn_instant: str, statuses: Sequence[WriteStatus], seen: set[str] | None,
                                     current: Timeline) -> None:
    """Under the timeline lock: refuse a new base file version (copy-on-write merge) of a file
    group that another commit wrote since this write was planned — Hudi's OCC check on
    overlapping ``(partition, file id)``, needed under every mode. Both versions start from the
    same older one, so the later would hide the rows the earlier added (two inserts padding one
    small file, two upserts of one group).

    ``seen``: requested times of the commits completed in the listing the write was planned on;
    without it, commits completed after the merged base files' own commits count.
    """
    merged = {(s.partition_path, s.file_id): s.prev_commit for s in statuses if s.kind == KIND_MERGE}
    if not merged:
        return
    completion = current.completion_times()
    since = min((completion.get(prev, "") for prev in merged.values()), default="")
    for instant in sorted(current.completed(), key=lambda i: i.sort_time):
        if instant.requested_time == txn_instant or str(instant.action) not in _WRITE_COMMITS:
            continue
        if (instant.requested_time in seen) if seen is not None else instant.sort_time <= since:
            continue
        metadata = current.read_metadata(instant)
        if metadata is None or not hasattr(metadata, "partition_file_ids"):
            continue
        # without ``seen``: a commit conflicts with a group only if it completed after the
        # group's merged base version did (the commit that wrote that version is no conflict)
        hit = sorted((p, f) for p, ids in metadata.partition_file_ids().items() for f in ids if (p, f) in merged
                     and (seen is not None or instant.sort_time > completion.get(merged[(p, f)], "")))
        if hit:
            partition, file_id = hit[0]
            raise CommitConflictError(
                f"write {txn_instant} conflicts with {instant.action} {instant.requested_time}, which wrote a new "
                f"version of file group {file_id} of partition {partition!r} while this write ran; the write is "
                "rolled back, retry it"
            )

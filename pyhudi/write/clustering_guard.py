"""Writers beside a pending clustering (Hudi's update strategies, ``hoodie.clustering.updates.strategy``).

A clustering rewrites its input file groups into new ones and, when it completes, replaces
them: whatever a write adds to an input group after the plan was made would vanish with it.

- **Reject** (``SparkRejectUpdateStrategy``, Hudi's default): an upsert or delete whose records
  update a file group under pending clustering fails with
  :class:`~pyhudi.errors.ClusteringConflictError` naming the clustering instant — checked when
  the write is planned (before any file is written) and again under the timeline lock at commit
  (a clustering scheduled while the write ran), where the write is rolled back. Inserts go to
  other or new file groups (small-file assignment skips groups under clustering).
- **Insert overwrite** of a partition holding a file group under pending clustering is refused
  the same way, whatever the strategy: the clustering would bring the overwritten rows back.
- **Allow** (``SparkAllowUpdateStrategy``): updates and deletes pass; when the clustering
  completes it carries what they wrote over into its new file groups by key, in the same
  replacecommit (:mod:`pyhudi.services.clustering_carry`), or — where that is not safe, or
  ``hoodie.clustering.rollback.pending.replacecommit.on.conflict=true`` — it is rolled back (a
  writer given that option rolls back, as Hudi's does, the pending clusterings it updates).
  Nothing the writer wrote is lost either way. A write still in flight when the clustering
  completes finds its file groups replaced; the write client then plans it again on the new
  file groups (:meth:`pyhudi.write.client.WriteClient.write`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from pyhudi.config.clustering import (
    ALLOW_UPDATE_STRATEGY,
    REJECT_UPDATE_STRATEGY,
    ROLLBACK_PENDING_ON_CONFLICT,
    UPDATES_STRATEGY,
)
from pyhudi.config.concurrency import HEARTBEAT_INTERVAL_MS, HEARTBEAT_TOLERABLE_MISSES
from pyhudi.errors import ClusteringConflictError, ConfigError, HudiError
from pyhudi.timeline.heartbeat import heartbeat_expired
from pyhudi.timeline.timeline import Timeline

if TYPE_CHECKING:
    from pyhudi.write.handle import FileGroupWriteTask, WriteStatus
    from pyhudi.write.txn import WriteTxn

_STRATEGIES = (REJECT_UPDATE_STRATEGY, ALLOW_UPDATE_STRATEGY)
OVERWRITES = ("insert_overwrite", "insert_overwrite_table")


def pending_clustering_file_groups(timeline: Timeline) -> dict[tuple[str, str], str]:
    """(partition, file id) → instant of every clustering not completed on ``timeline``."""
    out: dict[tuple[str, str], str] = {}
    for instant in timeline.pending():
        if str(instant.action) not in ("clustering", "replacecommit"):
            continue
        try:
            requested = timeline.read_metadata(instant.as_requested())
        except HudiError:  # a pending replace without a readable plan (an insert overwrite)
            continue
        if requested is not None and getattr(requested, "is_clustering", False):
            out.update((group, instant.requested_time) for group in requested.file_groups())
    return out


def replans_after_clustering(options: Mapping[str, str]) -> bool:
    """Allow mode: a write whose file groups a clustering replaced while it ran is planned again
    on the new file groups (reject mode keeps Hudi's behaviour: that write fails)."""
    return _strategy(options) == ALLOW_UPDATE_STRATEGY


def _rejects_updates(txn: WriteTxn) -> bool:
    return _strategy(txn.options) == REJECT_UPDATE_STRATEGY


def _strategy(options: Mapping[str, str]) -> str:
    name = UPDATES_STRATEGY.get(options)
    if name not in _STRATEGIES:
        raise ConfigError(f"unknown {UPDATES_STRATEGY.key} {name!r}: pyhudi knows {', '.join(_STRATEGIES)} "
                          "(class names are looked up, never loaded)")
    return name


def _refuse(txn: WriteTxn, groups: Iterable[tuple[str, str]], pending: dict[tuple[str, str], str],
            when: str = "") -> None:
    hit = sorted(g for g in groups if g in pending)
    if not hit:
        return
    partition, file_id = hit[0]
    instant = pending[hit[0]]
    who = f"{txn.operation} {txn.instant}" if txn.instant else txn.operation
    if txn.operation in OVERWRITES:
        raise ClusteringConflictError(
            f"{who} conflicts with pending clustering {instant}, which is rewriting file group {file_id} of "
            f"partition {partition!r} that this overwrite would replace{when}; the table is unchanged — run or "
            "roll back that clustering first")
    raise ClusteringConflictError(
        f"{who} updates file group {file_id} of partition {partition!r}, which pending clustering {instant} is "
        f"rewriting ({UPDATES_STRATEGY.key}={REJECT_UPDATE_STRATEGY.rsplit('.', 1)[-1]}){when}; the table is "
        f"unchanged — retry once the clustering completed, or set {UPDATES_STRATEGY.key}={ALLOW_UPDATE_STRATEGY}")


def reject_planned_overwrite(txn: WriteTxn, partitions: Iterable[str] | None, timeline: Timeline) -> None:
    """At planning, before any file is written: refuse an overwrite of partitions (None: the
    whole table) holding a file group under pending clustering."""
    pending = pending_clustering_file_groups(timeline)
    wanted = None if partitions is None else set(partitions)
    _refuse(txn, [g for g in pending if wanted is None or g[0] in wanted], pending)


def reject_planned_updates(txn: WriteTxn, tasks: Sequence[FileGroupWriteTask], timeline: Timeline) -> None:
    """At planning, before any file is written: refuse updates of groups under pending clustering
    (reject mode), or — allow mode with ``rollback.pending.replacecommit.on.conflict=true``, as
    Hudi does — roll back the pending clusterings they update that no live process executes."""
    touched = [(t.partition_path, t.file_id) for t in tasks if not t.is_new_file_group]
    if not touched:
        return
    if _rejects_updates(txn):
        _refuse(txn, touched, pending_clustering_file_groups(timeline))
    elif ROLLBACK_PENDING_ON_CONFLICT.get(txn.options):
        _roll_back_clusterings(txn, touched, timeline)


def _roll_back_clusterings(txn: WriteTxn, touched: Sequence[tuple[str, str]], timeline: Timeline) -> None:
    """Roll back the pending clusterings of ``touched`` groups; one being executed (fresh
    heartbeat) is left to its executor, which rolls it back or carries the update over."""
    from pyhudi.write.rollback import rollback_instant  # (the rollback sits above this guard)

    pending = pending_clustering_file_groups(timeline)
    interval, misses = HEARTBEAT_INTERVAL_MS.get(txn.options), HEARTBEAT_TOLERABLE_MISSES.get(txn.options)
    for instant in sorted({pending[g] for g in touched if g in pending}):
        current = timeline.get(instant)
        if current is None or (current.is_inflight and not heartbeat_expired(txn.storage, instant, interval, misses)):
            continue
        rollback_instant(txn.storage, timeline, current)


def check_clustering_conflicts(txn: WriteTxn, statuses: Sequence[WriteStatus], replaced: Iterable[tuple[str, str]],
                               current: Timeline) -> None:
    """Under the timeline lock at commit: the write's updated groups (reject mode) and the groups
    an overwrite replaces (always) are not under a clustering pending now."""
    overwrite = txn.operation in OVERWRITES
    touched = list(replaced) if overwrite else []
    if not overwrite and _rejects_updates(txn):
        touched = [(s.partition_path, s.file_id) for s in statuses if not s.is_new_file_group]
    if touched:
        _refuse(txn, touched, pending_clustering_file_groups(current), " (the clustering was scheduled while the "
                "write ran)" if not overwrite else "")

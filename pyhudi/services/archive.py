"""Timeline archival: move old completed instants from the active timeline into the LSM history.

Which instants (Hudi 1.x ``TimelineArchiverV2``): nothing until the active timeline holds more
than ``hoodie.keep.max.commits`` completed commits (commit, deltacommit, replacecommit — completed
compactions and clusterings included); then the oldest are archived, leaving
``hoodie.keep.min.commits``, but never at or past

* the last completed commit before the oldest pending write (pending instants stay, and so does
  the commit before them, as Hudi keeps it);
* the ``earliestCommitToRetain`` of the latest completed clean (the cleaner still needs those);
* the oldest replacecommit not yet behind a clean's ``earliestCommitToRetain`` (its replaced file
  groups are only known from it until cleaning deletes them);
* on merge-on-read tables with an inline compaction counting delta commits: the latest
  compaction (the trigger counts delta commits since it);
* the first savepoint.

Completed cleans and rollbacks older than the newest archived commit go along. pyhudi adds one
rule so that readers can tell from the active timeline alone whether a question reaches into the
archive: every archived instant must have *completed* before the oldest remaining write was
requested (the cut moves earlier when an overlapping write straddles it). So a time travel or
incremental read needs the archive only for times before :attr:`Timeline.first_active_time`.

How (crash-safe; ``LSMTimelineWriter``): write ``<min>_<max>_0.parquet`` (one row per action:
times, action, completed metadata bytes, plan bytes) → write ``manifest_<N+1>`` listing it with the
files of ``manifest_<N>`` → point ``_version_`` at N+1 (the commit point) → delete the instants'
files from the active timeline (pending-state files first, then completed ones oldest first). A
crash before the version file moves leaves the archive as it was and the active timeline whole; a
crash after it leaves instants in both, which readers resolve to the same instant (the active copy
wins) and the next archival finishes deleting. Then the LSM levels are compacted: once a level
holds ``hoodie.timeline.compaction.batch.size`` files, they are merged into one file of the next
level and published the same way; manifests older than the latest three (and files only they
list) are deleted.

Archival holds the timeline lock, so no instant completes while it decides and deletes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from pyhudi.config import archive as ac
from pyhudi.config import compaction as cc
from pyhudi.errors import MetadataError, StorageError, TimelineError
from pyhudi.timeline.archived import (
    LsmFileName,
    Manifest,
    all_versions,
    instants_table,
    latest_version,
    manifest_name,
    publish,
    read_manifest,
    write_lsm_file,
)
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import COMMIT_ACTIONS, PENDING_COMMIT_ACTIONS, Timeline

RETAINED_MANIFESTS = 3
"""Snapshot versions kept for readers that are still loading an older one (Hudi keeps 3)."""
_PLAN_ACTIONS = frozenset({Action.COMPACTION, Action.LOGCOMPACTION, Action.CLEAN, Action.CLUSTERING,
                           Action.REPLACECOMMIT})


@dataclass(frozen=True)
class ArchiveResult:
    """What one archival did: the archived instants and the LSM file written (None: nothing)."""

    instants: tuple[Instant, ...]
    file_name: str | None
    version: int

    def __bool__(self) -> bool:
        return bool(self.instants)


def archive(timeline: Timeline, options: Mapping[str, str], table_type: str = "MERGE_ON_READ") -> ArchiveResult:
    """Archive what the rules allow (see the module docstring); returns what was archived.

    Bad options (``hoodie.keep.*``) raise :class:`ConfigError` before anything is touched.
    """
    low, high = ac.keep_bounds(options)
    batch = ac.compaction_batch(options)
    if sum(1 for i in timeline.completed() if i.action in COMMIT_ACTIONS) <= high:
        return ArchiveResult((), None, 0)  # (a cheap check on the listing at hand, before the lock)
    with timeline.lock:
        timeline.reload()
        chosen = instants_to_archive(timeline, options, low, high, table_type)
        if not chosen:
            return ArchiveResult((), None, latest_version(timeline.storage, timeline.history_dir))
        name, version = _write_history(timeline, chosen)
        _delete_active_files(timeline, chosen)
        timeline.reload()
    _compact_levels(timeline, batch)
    return ArchiveResult(tuple(chosen), name, version)


# ------------------------------------------------------------------------------ choosing
def instants_to_archive(timeline: Timeline, options: Mapping[str, str], low: int, high: int,
                        table_type: str = "MERGE_ON_READ") -> list[Instant]:
    """The completed instants archival would take now, by requested time."""
    commits = [i for i in timeline.completed() if i.action in COMMIT_ACTIONS]
    if len(commits) <= high:
        return []
    limit = _retain_from(timeline, commits, options, table_type)
    candidates = [c for c in commits if limit is None or c.requested_time < limit][: len(commits) - low]
    writes = [i for i in timeline.instants if i.action in PENDING_COMMIT_ACTIONS]
    while candidates:
        last = candidates[-1].requested_time
        extras = [i for i in timeline.completed()
                  if i.action in (Action.CLEAN, Action.ROLLBACK) and i.requested_time < last]
        chosen = sorted([*candidates, *extras])
        taken = {i.requested_time for i in candidates}
        remaining = next((w.requested_time for w in writes if w.requested_time not in taken), None)
        if remaining is None or max(i.sort_time for i in chosen) < remaining:
            return chosen
        candidates.pop()  # the cut straddles a write still running when a later one began
    return []


def _retain_from(timeline: Timeline, commits: list[Instant], options: Mapping[str, str],
                 table_type: str) -> str | None:
    """The earliest requested time archival must keep (None: no bound besides the counts)."""
    bounds: list[str] = []
    pending = [i for i in timeline.pending() if i.action in PENDING_COMMIT_ACTIONS]
    if pending:
        first = pending[0].requested_time
        before = [c.requested_time for c in commits if c.requested_time < first]
        bounds.append(before[-1] if before else first)
    ectr = _earliest_commit_to_retain(timeline)
    if ectr:
        bounds.append(ectr)
    replaces = [c.requested_time for c in commits
                if c.action is Action.REPLACECOMMIT and (ectr is None or c.requested_time >= ectr)]
    if replaces:
        bounds.append(replaces[0])
    if table_type == "MERGE_ON_READ" and cc.INLINE_COMPACT.get(options) \
            and cc.INLINE_TRIGGER_STRATEGY.get(options) in ("NUM_COMMITS", "NUM_AND_TIME"):
        compactions = [c.requested_time for c in commits if c.action is Action.COMMIT]
        if compactions:
            bounds.append(compactions[-1])
    savepoints = timeline.filter(Action.SAVEPOINT, State.COMPLETED)
    if savepoints:
        bounds.append(savepoints[0].requested_time)
    return min(bounds) if bounds else None


def _earliest_commit_to_retain(timeline: Timeline) -> str | None:
    """``earliestCommitToRetain`` of the latest completed clean, if it recorded one."""
    cleans = timeline.filter(Action.CLEAN, State.COMPLETED)
    if not cleans:
        return None
    latest = max(cleans, key=lambda i: (i.sort_time, i.requested_time))
    try:
        metadata = timeline.read_metadata(latest)
    except (MetadataError, StorageError) as exc:
        raise TimelineError(f"cannot archive: the clean {latest.requested_time} that bounds archival "
                            f"is unreadable: {exc}") from None
    value = getattr(metadata, "earliest_commit_to_retain", None)
    if value is None and isinstance(metadata, dict):
        value = metadata.get("earliestCommitToRetain")
    return value or None


# ------------------------------------------------------------------------------ writing
def _row(timeline: Timeline, instant: Instant) -> dict:
    plan = None
    origin = instant.origin_action
    if origin in _PLAN_ACTIONS:
        requested, _ = Instant(instant.requested_time, origin, State.REQUESTED).pending_file_names(2)
        path = f"{timeline.timeline_dir}/{requested}"
        plan = timeline.storage.read(path) if timeline.storage.exists(path) else None
    return {
        "instantTime": instant.requested_time,
        "completionTime": instant.completion_time,
        "action": instant.action.value,
        "metadata": timeline.read_bytes(instant),
        "plan": plan or None,
        "version": 1,
    }


def _write_history(timeline: Timeline, chosen: list[Instant]) -> tuple[str, int]:
    storage, history = timeline.storage, timeline.history_dir
    storage.makedirs(history)
    version = latest_version(storage, history)
    manifest = read_manifest(storage, history, version)
    name = LsmFileName(chosen[0].requested_time, chosen[-1].requested_time, 0).name
    if name in manifest.file_names:
        return name, version  # published by an archival that crashed before deleting the instants
    size = write_lsm_file(storage, f"{history}/{name}", instants_table([_row(timeline, i) for i in chosen]))
    new = manifest.with_files(version + 1, [(name, size)])
    publish(storage, history, new)
    return name, new.version


def _delete_active_files(timeline: Timeline, chosen: list[Instant]) -> None:
    """Pending-state files first (a completed file removed first would make the instant look
    pending to a concurrent reader), then completed files oldest first (no holes)."""
    names = [timeline.state_files(i) for i in chosen]
    for files in names:
        for state, name in files:
            if state is not State.COMPLETED:
                timeline.storage.delete(f"{timeline.timeline_dir}/{name}")
    for files in names:
        for state, name in files:
            if state is State.COMPLETED:
                timeline.storage.delete(f"{timeline.timeline_dir}/{name}")


# ------------------------------------------------------------------------------ LSM compaction
def _compact_levels(timeline: Timeline, batch: int) -> None:
    storage, history = timeline.storage, timeline.history_dir
    with timeline.lock:
        compacted = 0
        level = 0
        while True:
            version = latest_version(storage, history)
            manifest = read_manifest(storage, history, version)
            files = sorted(n for n in manifest.file_names if LsmFileName.parse(n).level == level)
            if len(files) < batch:
                break
            sources = files[:batch]
            parsed = [LsmFileName.parse(n) for n in sources]
            target = LsmFileName(min(p.min_instant for p in parsed), max(p.max_instant for p in parsed), level + 1)
            merged = pa.concat_tables([_read_all(timeline, f"{history}/{n}") for n in sources])
            merged = merged.sort_by("instantTime")
            size = write_lsm_file(storage, f"{history}/{target.name}", merged)
            publish(storage, history, manifest.with_files(version + 1, [(target.name, size)], remove=sources))
            compacted += 1
            level += 1
        if compacted:
            _clean_history(timeline, RETAINED_MANIFESTS + compacted)


def _read_all(timeline: Timeline, path: str) -> pa.Table:
    with timeline.storage.open_input(path) as handle:
        return pq.read_table(handle)


def _clean_history(timeline: Timeline, keep: int) -> None:
    """Delete manifests older than the ``keep`` latest and LSM files none of those lists."""
    storage, history = timeline.storage, timeline.history_dir
    versions = sorted(all_versions(storage, history), reverse=True)
    kept, dropped = versions[:keep], versions[keep:]
    if not dropped:
        return
    live = {n for v in kept for n in read_manifest(storage, history, v).file_names}
    for v in dropped:
        storage.delete(f"{history}/{manifest_name(v)}")
    for info in storage.list_files(history):
        name = info.path.rsplit("/", 1)[-1]
        if name.endswith(".parquet") and name not in live:
            storage.delete(f"{history}/{name}")


__all__ = ["ArchiveResult", "Manifest", "archive", "instants_to_archive"]

"""Which files a clean deletes (Hudi's ``CleanPlanner``, with column families and reader pins).

**Earliest commit to retain** (ECTR, ``CleanerUtils.getEarliestCommitToRetain``), over the
completed commits (commit, deltacommit, replacecommit; compactions complete as commits) by
requested time: KEEP_LATEST_COMMITS with more than N of them → the N-th newest;
KEEP_LATEST_BY_HOURS → the first requested within the last N hours; never past a pending commit
(then the last completed one before the earliest pending). KEEP_LATEST_FILE_VERSIONS has none.
Without an ECTR the time-based policies delete nothing.

**Snapshots kept.** Rather than Hudi's per-slice approximation ("the latest slice before the
ECTR and every later one"), pyhudi keeps exactly what the snapshots it promises read. For every
file the completion-time interval ``[from, until)`` of the snapshots that read it is computed
from the file-system rules (:mod:`pyhudi.fsview.view`): a base file is read from its commit's
completion until a newer base of its family (or a full-row base) completes; a log file from its
completion until a base whose instant is not before that completion completes. A family dropped
by ALTER, or a file group replaced (clustering, insert overwrite), stops every interval at the
ALTER's or the replacecommit's completion. A file is kept if any retained snapshot lies in one of
its intervals — the snapshots ``as_of`` each retained commit, the latest snapshot, and every
live reader pin (:mod:`pyhudi.read.retention`) — or if a pending compaction's plan names it, or
if its file group is in a pending clustering. KEEP_LATEST_FILE_VERSIONS keeps instead the newest
N slices per file group and family (replaced groups and dropped families: none), and pinned
files. A full-row base file serves every family: it goes only if no family keeps it.

**Incremental mode** (``hoodie.cleaner.incremental.mode``, time-based policies): only partitions
written by commits that completed at or after the previous clean's ECTR are listed (a file
becomes deletable only when a commit in its partition supersedes or replaces it, or an ALTER
drops its family — then every partition is listed), plus partitions where a reader pin held files
back last time (recorded in the clean's ``extraMetadata``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Mapping

from pyhudi.config import clean as cl
from pyhudi.evolution import ALTER_OPERATION, SchemaHistory
from pyhudi.fsview.view import FileGroup, FileSystemView
from pyhudi.keygen import partition_layout
from pyhudi.read.file_slice import TableContext
from pyhudi.read.retention import PIN_EXPIRY, UNREADABLE_KEY, format_intervals, live_pins
from pyhudi.services.clean_trigger import SETTLED_KEY, incremental_window_start
from pyhudi.timeline.instant import Instant, format_instant_time, parse_instant_time
from pyhudi.timeline.metadata_plans import ActionInstant, CleanerPlan, CleanFileInfo
from pyhudi.timeline.timeline import COMMIT_ACTIONS, Timeline

DEFERRED_KEY = "pyhudi.clean.deferred.partitions"
"""Clean ``extraMetadata``: partitions (comma-separated, "" = unpartitioned as ``.``) where a reader
pin kept files this clean would otherwise delete; the next incremental clean lists them again."""
Interval = tuple[str, "str | None"]  # [from, until): until None = still read by the latest snapshot


# ------------------------------------------------------------------------------ retention
def earliest_commit_to_retain(timeline: Timeline, policy: str, retained: int, now: str) -> Instant | None:
    """Hudi's ECTR for ``policy`` at time ``now`` (the clean's instant time; see the module
    docstring); None when there is none."""
    commits = sorted(timeline.commits_timeline(), key=lambda i: i.requested_time)
    ectr = None
    if policy == cl.KEEP_LATEST_COMMITS and len(commits) > retained:
        ectr = commits[len(commits) - retained]
    elif policy == cl.KEEP_LATEST_BY_HOURS and commits:
        moment = parse_instant_time(now, timeline.timezone)
        cutoff = format_instant_time(moment - timedelta(hours=retained), timeline.timezone)
        ectr = next((c for c in commits if c.requested_time >= cutoff), None)
    pending = [i.requested_time for i in timeline.pending() if i.completed_action in COMMIT_ACTIONS]
    if ectr is not None and pending and min(pending) < ectr.requested_time:
        before = [c for c in commits if c.requested_time < min(pending)]
        ectr = before[-1] if before else None
    return ectr


def _drop_times(timeline: Timeline, context: TableContext, names: set[str]) -> dict[str, str]:
    """Family → completion time of the commit from which it is no longer in effect (ALTER UNSET)."""
    if not names:
        return {}
    history = SchemaHistory()
    out: dict[str, str] = {}
    alive: dict[str, bool] = {}
    for instant in history.commits(timeline):
        declared = history.declared_families_at(timeline, context.config, instant.sort_time)
        for name in names:
            if name in declared:
                alive[name] = True
                out.pop(name, None)
            elif alive.get(name, True) and name not in out:
                out[name] = instant.sort_time
                alive[name] = False
    return out


# ------------------------------------------------------------------------------ intervals
class _CleanerView(FileSystemView):
    """The file-system view with replaced file groups listed (the cleaner deletes them), and
    when each was replaced."""

    def _replaced_file_groups(self) -> set[tuple[str, str]]:
        self.replaced_at: dict[tuple[str, str], str] = {}
        for instant in self.timeline.completed():
            if str(instant.action) != "replacecommit" or instant.requested_time not in self.completion:
                continue
            metadata = self.timeline.read_metadata(instant)
            for partition, file_ids in (getattr(metadata, "partition_to_replace_file_ids", None) or {}).items():
                for fid in file_ids:
                    key = (partition, fid)
                    self.replaced_at[key] = min(self.replaced_at.get(key, instant.sort_time), instant.sort_time)
        return set()


def _cap(until: str | None, bound: str | None) -> str | None:
    if bound is None:
        return until
    return bound if until is None else min(until, bound)


def _family_intervals(group: FileGroup, family: str, family_table: bool, bound: str | None,
                      out: dict[str, list[Interval]]) -> None:
    """Add the snapshot interval of each of ``family``'s files (and the full-row base and log
    files it reads: such a file is deleted only when no family's retained snapshot reads it)."""
    candidates = group.family_bases(family, family_table)  # (the slices' own rules: family_since too)
    for i, base in enumerate(candidates):
        later = [c.completion_time for c in candidates[i + 1:]]
        out.setdefault(base.relpath, []).append((base.completion_time, _cap(min(later) if later else None, bound)))
    for log in group.family_logs(family, family_table):
        newer = [c.completion_time for c in candidates if c.instant >= log.completion_time]
        out.setdefault(log.relpath, []).append((log.completion_time, _cap(min(newer) if newer else None, bound)))

def _needed(intervals: list[Interval], points: list[str]) -> bool:
    return any(until is None or any(start <= p < until for p in points) for start, until in intervals)


# ------------------------------------------------------------------------------ plan
@dataclass
class _Selection:
    deletes: dict[str, list[str]] = field(default_factory=dict)  # partition → relpaths
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    deferred: set[str] = field(default_factory=set)

    def delete(self, partition: str, relpath: str, intervals: list[Interval]) -> None:
        self.deletes.setdefault(partition, []).append(relpath)
        self.unreadable.extend((a, b) for a, b in intervals if b is not None and a < b)


def _merged(intervals: list[tuple[str, str]]) -> list[tuple[str, str]]:
    out: list[list[str]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


def _touched_partitions(timeline: Timeline, since: str) -> set[str] | None:
    """Partitions written or replaced by commits completed at or after ``since``; None when an
    ALTER in that window may have dropped a family (every partition is listed then)."""
    touched: set[str] = set()
    history = SchemaHistory()
    for instant in timeline.commits_timeline():
        if instant.sort_time < since:
            continue
        if history.of(timeline, instant).operation == ALTER_OPERATION:
            return None
        metadata = timeline.read_metadata(instant)
        touched.update(p or "" for p in (getattr(metadata, "partition_to_write_stats", None) or {}))
        touched.update(p or "" for p in (getattr(metadata, "partition_to_replace_file_ids", None) or {}))
    return touched


def _partitions_to_list(timeline: Timeline, options: Mapping[str, str], policy: str) -> set[str] | None:
    """The incremental listing (None = every partition)."""
    if policy == cl.KEEP_LATEST_FILE_VERSIONS or not cl.INCREMENTAL_MODE.get(options):
        return None
    cleans = [i for i in timeline.completed() if str(i.action) == "clean"]
    if not cleans:
        return None
    previous = timeline.read_metadata(max(cleans, key=lambda i: i.requested_time))
    since = incremental_window_start(previous.earliest_commit_to_retain,
                                     (previous.extra_metadata or {}).get(SETTLED_KEY))
    first = timeline.instants[0].requested_time if timeline.instants else None
    if not since or (first is not None and since < first):
        return None  # (what the previous clean retained is archived: its window is unknown)
    touched = _touched_partitions(timeline, since)
    if touched is None:
        return None
    deferred = (previous.extra_metadata or {}).get(DEFERRED_KEY)
    touched.update("" if p == "." else p for p in (deferred.split(",") if deferred else ()))
    return touched


def _pending_compaction_files(timeline: Timeline) -> set[str]:
    out = set()
    for instant in timeline.pending():
        if instant.is_compaction:
            plan = timeline.read_metadata(instant.as_requested())
            for op in plan.operations or ():
                prefix = f"{op.partition_path}/" if op.partition_path else ""
                names = [op.data_file_path] if op.data_file_path else []
                out.update(prefix + n.rpartition("/")[2] for n in [*names, *(op.delta_file_paths or ())])
    return out


def _select_group(group: FileGroup, families: list[str], family_table: bool, bounds: dict[str | None, str],
                  replaced_at: str | None, points: list[str], pins: list[str], versions: int | None,
                  protected: set[str], selection: _Selection) -> None:
    intervals: dict[str, list[Interval]] = {}
    for family in families:
        bound = _cap(replaced_at, bounds.get(family))
        _family_intervals(group, family, family_table, bound, intervals)
    kept = set(protected)
    if versions is not None and replaced_at is None:
        for family in families:
            if family not in bounds:  # (a dropped family keeps no version)
                for file_slice in group.all_slices(family, family_table)[-versions:]:
                    kept.update(f.relpath for f in (file_slice.base_file, *file_slice.log_files) if f is not None)
    for data_file in (*group.base_files, *group.log_files):
        path = data_file.relpath
        need = intervals.get(path, [(data_file.completion_time, bound)
                                    for bound in [_cap(replaced_at, bounds.get(data_file.name.family))]])
        if path in kept or _needed(need, points):
            continue
        if _needed(need, pins):
            selection.deferred.add(group.partition_path)
            continue
        selection.delete(group.partition_path, path, need)


def plan_clean(context: TableContext, timeline: Timeline, instant_time: str,
               options: Mapping[str, str] | None = None) -> CleanerPlan | None:
    """The plan a clean at ``instant_time`` would carry (None: nothing to delete); writes nothing."""
    options = {**context.config.props, **(options or {})}
    policy, retained = cl.checked(options)
    ectr = earliest_commit_to_retain(timeline, policy, retained, instant_time)
    if policy != cl.KEEP_LATEST_FILE_VERSIONS and ectr is None:
        return None
    storage = context.storage
    pins = live_pins(storage, PIN_EXPIRY.get(options))
    commits = timeline.commits_timeline()
    # the snapshot as of each retained commit: requested at or after the ECTR, or completed at or
    # after it (a compaction scheduled long before completes late: its snapshot is retained too)
    points = sorted({*(c.sort_time for c in commits if ectr is not None and (
        c.requested_time >= ectr.requested_time or c.sort_time >= ectr.sort_time)), *pins})
    depth = partition_layout(context.config).depth
    view = _CleanerView(storage, timeline, depth, family_since=context.family_since)
    # (an unpartitioned table has one folder to list: which partitions changed is not asked)
    groups = view.file_groups(None if depth == 0 else _partitions_to_list(timeline, options, policy))
    declared = [name for name, f in context.families.items() if not f.is_default]
    family_table = bool(declared)
    in_files = {f for g in groups for f in g.families() if f is not None} if family_table else set()
    bounds: dict[str | None, str] = dict(_drop_times(timeline, context, in_files - set(declared)))  # dropped ones
    clustering = set(view.pending_clustering_file_groups())
    protected = _pending_compaction_files(timeline)
    versions = retained if policy == cl.KEEP_LATEST_FILE_VERSIONS else None
    selection = _Selection()
    for group in groups:
        if (group.partition_path, group.file_id) in clustering:
            continue
        families = sorted(set(declared) | (group.families() - {None})) if family_table else [None]
        _select_group(group, families, family_table, bounds, view.replaced_at.get((group.partition_path, group.file_id)),
                      points, pins, versions, protected, selection)
    if not selection.deletes:
        return None
    last = max(commits, key=lambda i: i.requested_time).requested_time if commits else ""
    extra = {UNREADABLE_KEY: format_intervals(_merged(selection.unreadable))}
    if selection.deferred:
        extra[DEFERRED_KEY] = ",".join(sorted(p or "." for p in selection.deferred))
    return CleanerPlan(
        earliest_instant_to_retain=None if ectr is None else ActionInstant(
            timestamp=ectr.requested_time, action=str(ectr.action), state="COMPLETED"),
        last_completed_commit_timestamp=last,
        policy=policy,
        files_to_be_deleted_per_partition=None,
        version=2,
        file_paths_to_be_deleted_per_partition={
            partition: [CleanFileInfo(file_path=storage.uri(p), is_bootstrap_base_file=False) for p in sorted(paths)]
            for partition, paths in sorted(selection.deletes.items())},
        partitions_to_be_deleted=[],
        extra_metadata=extra,
    )


def describe_plan(plan: CleanerPlan | None) -> list[dict[str, Any]]:
    """A plan as plain rows (partition, file) for people and JSON."""
    if plan is None:
        return []
    return [{"partition": partition, "file": path.rpartition("/")[2]}
            for partition, paths in sorted(plan.files_to_delete().items()) for path in paths]

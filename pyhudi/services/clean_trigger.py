"""Whether an automatic clean can delete anything, decided on the timeline alone (issue 15).

Cleaning is due after every commit by default (``hoodie.clean.max.commits`` = 1), and planning a
clean builds a file-system view of the partitions to clean. Most commits can leave nothing to
delete, and this precheck tells those apart without listing a data file; when it answers "maybe",
the clean is planned as before (:func:`pyhudi.services.clean_plan.plan_clean` decides, unchanged).

**Closing instants.** A file becomes deletable only once its snapshot interval closes
(:mod:`pyhudi.services.clean_plan`): a newer base file of its family lands in its file group, its
file group is replaced, or an ALTER drops its family. The completed instants that can do that are
*closing*: every ``replacecommit`` (clustering, insert overwrite), every compaction, and every
other ``commit`` or ``deltacommit`` except a plain write (upsert, insert, bulk insert, delete)
that wrote no base file over an earlier one (``prevCommit`` set: a copy-on-write rewrite; new
base files of new file groups and log files close nothing). An ALTER is not a plain write.
A file closed by instant ``E`` is read from its writer's completion until ``E``'s completion ``tE``.

**Settled time** (:data:`SETTLED_KEY`, recorded by each clean in its plan's ``extraMetadata``):
every file closed by an instant completed at or before it is gone once that clean completed. A
clean settles ``min`` over the snapshots it retains (the retained commits' completions, and the
requested time of every pending write): no retained snapshot reads a file closed before that, so
it deleted all of them — unless something held files back (a reader pin, a pending compaction or
clustering: then it keeps the previous clean's settled time), or it listed only the partitions
written since the previous clean's ECTR while the previous settled time is older than that ECTR.
A KEEP_LATEST_FILE_VERSIONS clean makes a weaker claim (:data:`VERSIONS_SETTLED_KEY`): keeping
the newest N slices, nothing closed by an instant on its listing is left to delete — only a new
closing instant can make a file deletable then; a clean of another policy, or keeping fewer
slices, does not rely on it.

**The precheck** (:func:`may_delete`): a clean can delete something only if some closing instant
``E`` after the settled time is *ripe*: the last commit that completed before ``tE`` (every file
``E`` closes was written by it or earlier) is no longer retained — else its snapshot reads each
such file — or a write requested before ``tE`` completed after it (a file whose interval is
empty), or ``E`` may close archived writers' files. Under KEEP_LATEST_FILE_VERSIONS any closing
instant after the settled time answers "maybe". Tables whose last clean recorded nothing (written
by Hudi, or before this precheck existed) are planned on every due clean, as before.
"""

from __future__ import annotations

import bisect
from typing import Any, Mapping

from pyhudi.config import clean as cl
from pyhudi.timeline.instant import Action, Instant
from pyhudi.timeline.timeline import PENDING_COMMIT_ACTIONS, Timeline

SETTLED_KEY = "pyhudi.clean.settled"
"""Clean ``extraMetadata``: the settled time (see the module docstring); absent = nothing known."""
VERSIONS_SETTLED_KEY = "pyhudi.clean.settled.versions"
"""Clean ``extraMetadata`` of a KEEP_LATEST_FILE_VERSIONS clean: ``<N>:<time>`` — keeping the newest
N slices, nothing closed by an instant completed by then is left to delete (closed files may still
be there, as kept versions: only a clean keeping N or more slices may rely on it)."""

_HOLDING_ACTIONS = frozenset({Action.COMPACTION, Action.LOGCOMPACTION, Action.CLUSTERING, Action.REPLACECOMMIT})
_PLAIN_WRITES = frozenset({"UPSERT", "INSERT", "BULK_INSERT", "DELETE", "UPSERT_PREPPED", "INSERT_PREPPED",
                           "BULK_INSERT_PREPPED", "DELETE_PREPPED"})
_CLOSES: dict[tuple[str, str, str], bool] = {}  # (table, requested, completion) -> closing (completed: immutable)
_CLOSES_MAX = 100_000


# ------------------------------------------------------------------------------ closing instants
def closes_files(timeline: Timeline, instant: Instant) -> bool:
    """Whether the completed ``instant`` can close other files' snapshot intervals."""
    if instant.action is Action.REPLACECOMMIT:
        return True
    if instant.action not in (Action.COMMIT, Action.DELTACOMMIT):
        return False
    if instant.is_compaction:
        return True
    key = (timeline.storage.base_uri, instant.requested_time, instant.completion_time or "")
    found = _CLOSES.get(key)
    if found is None:
        found = _write_closes(timeline.read_record(instant) or {})
        if len(_CLOSES) >= _CLOSES_MAX:
            _CLOSES.clear()
        _CLOSES[key] = found
    return found


def _write_closes(record: Mapping[str, Any]) -> bool:
    """A commit or delta commit closes files unless it is a plain write (by its operation) that
    wrote no base file over an earlier one."""
    if str(record.get("operationType") or "").upper() not in _PLAIN_WRITES:
        return True  # (a compaction, an ALTER, an operation not known here: conservatively)
    if record.get("partitionToReplaceFileIds"):
        return True
    for stats in (record.get("partitionToWriteStats") or {}).values():
        for stat in stats or ():
            name = str(stat.get("path") or "").rpartition("/")[2]
            is_log = name.startswith(".") and ".log." in name
            if not is_log and str(stat.get("prevCommit") or "null") not in ("null", ""):
                return True  # a base file over an earlier one of its file group
    return False


# ------------------------------------------------------------------------------ settled time
def last_clean(timeline: Timeline) -> Instant | None:
    cleans = [i for i in timeline.completed() if i.action is Action.CLEAN]
    return max(cleans, key=lambda i: i.requested_time) if cleans else None


def settled_time(timeline: Timeline, versions: int | None = None) -> str:
    """The settled time the latest completed clean recorded ("" when none); with ``versions``
    (KEEP_LATEST_FILE_VERSIONS keeping that many slices) its file-versions claim counts too."""
    clean = last_clean(timeline)
    if clean is None:
        return ""
    extra = (timeline.read_record(clean) or {}).get("extraMetadata") or {}
    settled = str(extra.get(SETTLED_KEY) or "")
    kept, _, weak = str(extra.get(VERSIONS_SETTLED_KEY) or "").partition(":")
    if versions is not None and kept.isdigit() and int(kept) <= versions:
        settled = max(settled, weak)
    return settled


def incremental_window_start(ectr: str | None, settled: str | None) -> str | None:
    """Where a partitioned clean's incremental listing starts, from the previous clean's ECTR
    and settled time: the older of the two. After a held clean the settled time stays behind the
    ECTR; listing the partitions of every commit completed since it lets the next clean delete
    what the closing instants in between left and move the settled time on (a listing from the
    ECTR alone could not, so every later clean would carry the old time and plan each commit)."""
    return min(ectr, settled) if ectr and settled else ectr


def settled_by_plan(timeline: Timeline, policy: str, retained: int, ectr: Instant | None, held: bool,
                    options: Mapping[str, str], partitioned: bool) -> dict[str, str]:
    """What a clean planned on ``timeline`` (with ECTR ``ectr``) settles once it completed, as
    ``extraMetadata`` entries; ``held``: a reader pin or a pending compaction / clustering kept
    files back (then it claims what the previous clean claimed)."""
    prior = last_clean(timeline)
    carried = {k: v for k, v in ((timeline.read_record(prior) or {}).get("extraMetadata") or {}).items()
               if k in (SETTLED_KEY, VERSIONS_SETTLED_KEY)} if prior is not None else {}
    previous = str(carried.get(SETTLED_KEY) or "")
    if held or any(i.action in _HOLDING_ACTIONS for i in timeline.pending()):
        return carried
    if policy == cl.KEEP_LATEST_FILE_VERSIONS:  # (files closed earlier may stay as kept versions)
        listed = max((i.sort_time for i in timeline.completed()), default="")
        return {**({SETTLED_KEY: previous} if previous else {}), VERSIONS_SETTLED_KEY: f"{retained}:{listed}"}
    if ectr is None:
        return carried  # (nothing to clean was looked at)
    if partitioned and prior is not None and cl.INCREMENTAL_MODE.get(options):
        since = incremental_window_start((timeline.read_record(prior) or {}).get("earliestCommitToRetain"),
                                         previous) or ""
        if previous < since:
            return carried  # (the previous clean claimed nothing: closing instants before its ECTR not listed)
    kept = [c.sort_time for c in timeline.commits_timeline()
            if c.requested_time >= ectr.requested_time or c.sort_time >= ectr.sort_time]
    running = [i.requested_time for i in timeline.pending() if i.action in PENDING_COMMIT_ACTIONS]
    return {SETTLED_KEY: max(previous, min([*kept, *running], default=previous))}


# ------------------------------------------------------------------------------ the precheck
def may_delete(timeline: Timeline, policy: str, ectr: Instant | None, versions: int | None = None) -> bool:
    """False only when a clean planned now must delete nothing (see the module docstring);
    ``versions``: the slices KEEP_LATEST_FILE_VERSIONS keeps."""
    settled = settled_time(timeline, versions if policy == cl.KEEP_LATEST_FILE_VERSIONS else None)
    first = timeline.first_active_time
    if (not settled or first is None or settled < first) and timeline.has_archive():
        return True  # (archived closing instants may have left files nobody cleaned)
    commits = sorted(timeline.commits_timeline(), key=lambda i: i.sort_time)
    ends = [c.sort_time for c in commits]
    for event in timeline.completed():
        if event.sort_time <= settled or not closes_files(timeline, event):
            continue
        if policy == cl.KEEP_LATEST_FILE_VERSIONS:
            return True
        if ectr is None:
            return False  # (the time-based policies delete nothing without an ECTR)
        if _ripe(event, commits, ends, ectr) or (ends[0] >= event.sort_time and timeline.has_archive()):
            return True
    return False


def _ripe(event: Instant, commits: list[Instant], ends: list[str], ectr: Instant) -> bool:
    """Whether some file ``event`` closes may be read by no retained snapshot now (its active
    writers; the caller asks about archived ones)."""
    at = bisect.bisect_left(ends, event.sort_time)
    if at > 0:
        writer = commits[at - 1]  # (the last to complete before the event: every file it closes is this old)
        if not (writer.requested_time >= ectr.requested_time or writer.sort_time >= ectr.sort_time):
            return True
    return any(c.requested_time < event.sort_time < c.sort_time for c in commits[at:])

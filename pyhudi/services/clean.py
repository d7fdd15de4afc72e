"""Cleaning, scheduled and executed as Hudi does (reference: hudi-internals-services.md §3).

**Schedule** (:func:`schedule_clean`): the clean's instant time is generated first, then the
timeline is listed; :func:`pyhudi.services.clean_plan.plan_clean` picks the files, and the plan —
Hudi's Avro ``HoodieCleanerPlan`` — is saved as ``<t>.clean.requested``. A plan with nothing to
delete is not saved.

**Execute** (:func:`run_clean`): requested → inflight (with a heartbeat, through
:class:`~pyhudi.write.commit.ActiveInstant`), the plan's files are deleted (a file already gone
counts as deleted, so re-running is harmless), and the instant completes as ``clean`` with
Hudi's ``HoodieCleanMetadata`` (per partition: the files deleted). A clean whose executor died
(inflight, heartbeat expired) is executed again from its stored plan — never re-planned; one
whose executor is alive is refused.

**Automatic cleaning** (:func:`clean_due`): after a write commits, ``hoodie.clean.automatic``
(default true) cleans once ``hoodie.clean.max.commits`` commits completed since the last clean.
With ``hoodie.clean.async`` the clean runs in a background thread of the writing process
(``Table.wait_for_clean`` joins it); pending cleans left by a crash are finished by the next one.

**Steady-state file bound** (:func:`files_per_group_bound`). With KEEP_LATEST_COMMITS retaining
``R`` commits, inline compaction every ``D`` delta commits and automatic cleaning (the defaults
plus ``hoodie.compact.inline=true``: R = 10, D = 5), a file group's family holds at most
``(ceil((R - 1) / (D + 1)) + 1) x (D + 1)`` data files once each write's services have run
(18 with the defaults), however long the table lives: a file slice is a base file and at most D log
files, it owns D + 1 consecutive commits (the compaction that starts it and its D delta
commits), and the snapshots of R consecutive commits read at most ``ceil((R - 1) / (D + 1)) + 1``
slices — every older slice is deleted by the clean that follows the commit retiring it.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Mapping

from pyhudi.config import clean as cl
from pyhudi.config.concurrency import HEARTBEAT_INTERVAL_MS, HEARTBEAT_TOLERABLE_MISSES
from pyhudi.errors import ConcurrentWriteError, ConfigError, StaleTimelineError, TimelineError
from pyhudi.read.file_slice import TableContext
from pyhudi.keygen import partition_layout
from pyhudi.read.retention import PIN_EXPIRY, live_pins
from pyhudi.services.clean_plan import earliest_commit_to_retain, plan_clean
from pyhudi.services.clean_trigger import may_delete, settled_by_plan
from pyhudi.timeline.heartbeat import Heartbeat, heartbeat_expired
from pyhudi.timeline.instant import Action, Instant, format_instant_time_ms
from pyhudi.timeline.metadata_plans import CleanerPlan, CleanMetadata, CleanPartitionMetadata
from pyhudi.timeline.timeline import Locked, Timeline
from pyhudi.write.commit import ActiveInstant


def _check_layout(context: TableContext) -> None:
    if context.config.layout_version != 2:
        raise ConfigError(f"cleaning table {context.config.name!r} (timeline layout {context.config.layout_version}, "
                          "table version 6) is not supported: pyhudi cleans tables of timeline layout 2")


def schedule_clean(context: TableContext, timeline: Timeline, options: Mapping[str, str] | None = None) -> str | None:
    """Plan a clean; returns its instant, or None when there is nothing to delete (nothing written)."""
    _check_layout(context)
    cl.checked({**context.config.props, **(options or {})})  # bad settings fail before a time is taken
    # planned before its instant time is taken (none is taken for nothing to do): a commit that
    # completes in between only adds files, which the plan does not name
    merged = {**context.config.props, **(options or {})}
    pinned = bool(live_pins(context.storage, PIN_EXPIRY.get(merged)))
    plan = _plan_on_a_fresh_listing(context, timeline, options)
    _ATTEMPTED[context.storage.base_uri] = plan.earliest_instant_to_retain.timestamp if (
        plan is not None and plan.earliest_instant_to_retain is not None) else _ectr_time(timeline, options, context)
    if plan is None:
        return None
    plan = _record_settled(context, timeline, plan, merged, pinned)
    instant_time = timeline.new_instant_time()
    timeline.create_requested(Action.CLEAN, instant_time, content=plan.to_avro_bytes())
    return instant_time


def _plan_on_a_fresh_listing(context: TableContext, timeline: Timeline,
                              options: Mapping[str, str] | None) -> CleanerPlan | None:
    """Plan on a fresh listing; when another process archives instants of that listing while
    the plan reads them (its clean moved on), list again and plan anew."""
    for attempt in range(_PLAN_ATTEMPTS):
        timeline.reload()
        try:
            return plan_clean(context, timeline, _now(timeline), options)
        except StaleTimelineError:
            if attempt == _PLAN_ATTEMPTS - 1:
                raise
    return None


_PLAN_ATTEMPTS = 3


def _record_settled(context: TableContext, timeline: Timeline, plan: CleanerPlan, options: Mapping[str, str],
                    pinned: bool) -> CleanerPlan:
    """Record in the plan what this clean settles (:mod:`pyhudi.services.clean_trigger`): on the
    listing it was planned on; pins are looked at before and after the plan."""
    policy, retained = cl.checked(options)
    held = pinned or bool(live_pins(context.storage, PIN_EXPIRY.get(options)))
    ectr = None
    if plan.earliest_instant_to_retain is not None:
        ectr = timeline.get(plan.earliest_instant_to_retain.timestamp)
        if ectr is None:
            return plan  # (archived meanwhile: nothing is claimed)
    partitioned = partition_layout(context.config).depth > 0
    settled = settled_by_plan(timeline, policy, retained, ectr, held, options, partitioned)
    return replace(plan, extra_metadata={**(plan.extra_metadata or {}), **settled})

_ATTEMPTED: dict[str, str | None] = {}
"""Table → the ECTR of this process's last clean plan (saved or empty): an automatic clean is not
planned again until the ECTR moves (files held back meanwhile are cleaned then)."""


def _now(timeline: Timeline) -> str:
    return format_instant_time_ms(int(time.time() * 1000), timeline.timezone)


def _ectr_time(timeline: Timeline, options: Mapping[str, str] | None, context: TableContext) -> str | None:
    policy, retained = cl.checked({**context.config.props, **(options or {})})
    ectr = earliest_commit_to_retain(timeline, policy, retained, _now(timeline))
    return None if ectr is None else ectr.requested_time


def pending_cleans(timeline: Timeline) -> list[Instant]:
    return [i for i in timeline.pending() if i.action is Action.CLEAN]


def run_clean(context: TableContext, timeline: Timeline, instant: str,
              options: Mapping[str, str] | None = None) -> Instant:
    """Execute the clean planned at ``instant``; returns the completed ``clean`` instant."""
    options = {**context.config.props, **(options or {})}
    storage = context.storage
    pending = timeline.get(instant)
    if pending is None or pending.action is not Action.CLEAN or pending.is_completed:
        done = pending is not None and pending.is_completed and pending.action is Action.CLEAN
        raise TimelineError(f"no pending clean at {instant}" + (": it completed already" if done else ""))
    interval = HEARTBEAT_INTERVAL_MS.get(options)
    plan: CleanerPlan = timeline.read_metadata(pending.as_requested())
    if pending.is_inflight:
        active = _take_over(storage, timeline, instant, interval, HEARTBEAT_TOLERABLE_MISSES.get(options))
    else:
        try:
            active = ActiveInstant.resume(storage, timeline, pending, heartbeat_interval_ms=interval)
        except TimelineError:  # another process moved it to inflight first: it is that one's now
            raise ConcurrentWriteError(f"clean {instant} was started by another process meanwhile; it is not "
                                       "run twice") from None
    try:
        metadata = _execute(storage, plan, instant)
        return active.commit(metadata.to_avro_bytes())
    except BaseException:
        active.abort(lambda: None)  # (stays pending: the next clean executes the same plan)
        raise


def _take_over(storage, timeline: Timeline, instant: str, interval: int, misses: int) -> ActiveInstant:
    """Resume an inflight clean whose executor is gone — decided under the timeline lock on a fresh
    listing (an executor deletes its heartbeat once it completed: a stale listing would show a
    finished clean as abandoned)."""
    with Locked(timeline.lock):
        current = timeline.reload().get(instant)
        if current is None or current.is_completed:
            raise TimelineError(f"no pending clean at {instant}: it completed already")
        if not heartbeat_expired(storage, instant, interval, misses):
            raise ConcurrentWriteError(f"clean {instant} is being executed by another live process (its heartbeat "
                                       "is fresh); it is not run twice")
        return ActiveInstant(storage, timeline, current, Heartbeat(storage, instant, interval).start())


def _execute(storage, plan: CleanerPlan, instant: str) -> CleanMetadata:
    started = time.perf_counter()
    partitions = {}
    total = 0
    for partition, paths in sorted(plan.files_to_delete().items()):
        names = [p.rpartition("/")[2] for p in paths]
        for name in names:
            storage.delete(f"{partition}/{name}" if partition else name)  # (already gone: deleted)
        total += len(names)
        partitions[partition] = CleanPartitionMetadata(
            partition_path=partition, policy=plan.policy, delete_path_patterns=names, success_delete_files=names,
            failed_delete_files=[], is_partition_deleted=False)
    ectr = plan.earliest_instant_to_retain
    return CleanMetadata(
        start_clean_time=instant, time_taken_in_millis=int((time.perf_counter() - started) * 1000),
        total_files_deleted=total, earliest_commit_to_retain=ectr.timestamp if ectr else "",
        last_completed_commit_timestamp=plan.last_completed_commit_timestamp or "", partition_metadata=partitions,
        version=2, bootstrap_partition_metadata=None, extra_metadata=dict(plan.extra_metadata or {}),
    )


def clean(context: TableContext, timeline: Timeline, options: Mapping[str, str] | None = None) -> str | None:
    """Finish pending cleans (from their plans), then plan and run a new one. Returns the new
    clean's instant (or the last pending one finished), None when there was nothing to delete."""
    _check_layout(context)
    merged = {**context.config.props, **(options or {})}
    finished = None
    pending_before = pending_cleans(timeline)
    for pending in pending_before:
        if pending.is_inflight and not heartbeat_expired(context.storage, pending.requested_time,
                                                         HEARTBEAT_INTERVAL_MS.get(merged),
                                                         HEARTBEAT_TOLERABLE_MISSES.get(merged)):
            continue  # another process is executing it
        try:
            finished = run_clean(context, timeline, pending.requested_time, options).requested_time
        except (ConcurrentWriteError, TimelineError):
            continue  # another process took it over, or finished it, meanwhile

    policy, retained = cl.checked(merged)
    if pending_before:
        timeline.reload()  # (what finishing them changed, here or in another process)
    if policy == cl.KEEP_LATEST_COMMITS and earliest_commit_to_retain(timeline, policy, retained, "") is None:
        return finished  # (not more commits than retained: nothing to clean, and no instant time taken)
    instant = schedule_clean(context, timeline, options)  # (which plans on a fresh listing)
    if instant is not None:
        try:
            run_clean(context, timeline, instant, options)
        except ConcurrentWriteError:
            pass  # another process picked the plan up first: it runs it
        return instant
    return finished


def files_per_group_bound(options: Mapping[str, str]) -> int:
    """The most data files a file group's family keeps in steady state under KEEP_LATEST_COMMITS
    with inline compaction on a delta-commit count (see the module docstring)."""
    from pyhudi.config.compaction import INLINE_MAX_DELTA_COMMITS

    policy, retained = cl.checked(options)
    if policy != cl.KEEP_LATEST_COMMITS:
        raise ConfigError(f"the steady-state file bound is derived for {cl.KEEP_LATEST_COMMITS}, not {policy}")
    per_slice = INLINE_MAX_DELTA_COMMITS.get(options) + 1
    return (-(-(retained - 1) // per_slice) + 1) * per_slice


def clean_due(timeline: Timeline, options: Mapping[str, str]) -> bool:
    """Hudi's trigger (NUM_COMMITS): ``hoodie.clean.max.commits`` commits completed since the
    last clean (since the first commit when none), or a clean is pending. Not due while the
    time-based policies have no ECTR, or the same ECTR as this process's last plan, nor when the
    timeline shows that a plan must be empty (:func:`~pyhudi.services.clean_trigger.may_delete`)."""
    if pending_cleans(timeline):
        return True
    policy, retained = cl.checked(options)
    if policy != cl.KEEP_LATEST_FILE_VERSIONS:
        ectr = earliest_commit_to_retain(timeline, policy, retained, _now(timeline))
        if ectr is None or _ATTEMPTED.get(timeline.storage.base_uri, "") == ectr.requested_time:
            return False
    cleans = [i.requested_time for i in timeline.completed() if i.action is Action.CLEAN]
    last = max(cleans, default="")
    commits = sum(1 for i in timeline.commits_timeline() if i.requested_time > last)
    if commits < cl.MAX_COMMITS.get(options):
        return False
    if policy == cl.KEEP_LATEST_FILE_VERSIONS:
        return may_delete(timeline, policy, None, versions=retained)
    return may_delete(timeline, policy, ectr)

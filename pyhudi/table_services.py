"""The table services face of :class:`pyhudi.table.Table`: compaction, clustering, cleaning,
archival and rollback (``pyhudi/services/``), scheduled, run and triggered after writes.

A mixin, so ``table.py`` keeps the table's identity, schema, writes and reads; every method here
works through the table's public handle (storage, config, a fresh timeline, its context).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from pyhudi.config.keys import format_value, warn_misspelled
from pyhudi.timeline.instant import Instant
from pyhudi.timeline.timeline import Timeline

if TYPE_CHECKING:
    from pyhudi.context import TableContext


_LISTING_ATTEMPTS = 3  # (listings a service takes when concurrent archival moves a commit it reads)


def _string_options(options: Mapping[str, Any] | None) -> dict[str, str]:
    return {k: v if isinstance(v, str) else format_value(v) for k, v in (options or {}).items()}


class PostCommitListing:
    """One timeline listing shared by the checks that follow a write (compaction, clustering,
    cleaning, archival): the write's own, taken under the lock when it completed. A check that
    ran a service calls :meth:`changed`, and the next check lists the timeline again."""

    def __init__(self, table: Any, options: Mapping[str, str], timeline: Timeline | None = None) -> None:
        self._table, self._options, self._timeline = table, options, timeline

    def timeline(self) -> Timeline:
        if self._timeline is None:
            self._timeline = self._table.active_timeline(self._options)
        return self._timeline

    def changed(self) -> None:
        self._timeline = None


class TableServices:
    """Table services of a table handle (mixed into :class:`~pyhudi.table.Table`)."""

    # (the handle provides ``storage``, ``config`` and ``active_timeline(options)``)

    def _options(self, options: Mapping[str, Any] | None) -> dict[str, str]:
        """A service's options as strings; a misspelled key is warned of (it would have no effect),
        unless the table's properties hold it (a write passes them on to its inline services)."""
        if options:
            warn_misspelled([k for k in options if k not in self.config.props])
        return _string_options(options)

    def table_context(self, timeline: Timeline | None = None) -> TableContext:
        """What services and file-slice readers need of the table now (picklable).

        It reads commits of ``timeline`` (the schema, when families were added); when another
        process archives one of them meanwhile (writers archive after every commit), ``timeline``
        is listed again — in place: the service that passed it decides on the fresh listing."""
        from pyhudi.context import TableContext  # (services only: a read imports less, issue 15)
        from pyhudi.errors import StaleTimelineError

        timeline = timeline if timeline is not None else self.active_timeline()
        for attempt in range(_LISTING_ATTEMPTS):
            try:
                return TableContext.of(self, timeline)
            except StaleTimelineError:
                if attempt == _LISTING_ATTEMPTS - 1:
                    raise
                timeline.reload()
        raise AssertionError("unreachable")

    def schedule_compaction(self, families: Sequence[str] | str | None = None, full: bool = False,
                            options: Mapping[str, Any] | None = None) -> str | None:
        """Plan a compaction (``<t>.compaction.requested``): of the named families (default: every
        family whose latest slice has log files), or ``full`` — every family of a file group into
        one full-row base file. Returns the instant, or None when nothing qualifies."""
        from pyhudi.services.compaction import schedule_compaction

        opts = self._options(options)
        timeline = self.active_timeline(opts)
        return schedule_compaction(self.table_context(timeline), timeline, families=families, full=full,
                                   options=opts)

    def plan_compaction(self, families: Sequence[str] | str | None = None, full: bool = False,
                        options: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """What :meth:`schedule_compaction` would plan now, as rows; nothing is written (a dry run)."""
        from pyhudi.services.compaction import describe_plan, plan_compaction

        opts = self._options(options)
        timeline = self.active_timeline(opts)
        plan = plan_compaction(self.table_context(timeline), timeline, timeline.new_instant_time(dry_run=True),
                               families=families, full=full, options=opts)
        return describe_plan(plan)

    def run_compaction(self, instant: str, *, engine: Any = None, options: Mapping[str, Any] | None = None) -> str:
        """Execute the compaction planned at ``instant`` (completes as a ``commit``); returns it."""
        from pyhudi.services.compaction import run_compaction

        opts = self._options(options)
        timeline = self.active_timeline(opts)
        return run_compaction(self.table_context(timeline), timeline, instant, engine=engine,
                              options=opts).requested_time

    def compact(self, families: Sequence[str] | str | None = None, full: bool = False, *, engine: Any = None,
                options: Mapping[str, Any] | None = None) -> str | None:
        """Run the pending compactions (scheduled earlier, or killed: as Hudi's inline compaction
        does, so their file groups are not left out forever), then schedule and run a new one.
        Returns the new compaction's instant, else the last pending one run, else None."""
        from pyhudi.errors import ConcurrentWriteError

        ran = self._run_pending_compactions(engine, options)
        instant = self.schedule_compaction(families, full, options)
        if instant is None:
            return ran[-1] if ran else None
        try:
            return self.run_compaction(instant, engine=engine, options=options)
        except ConcurrentWriteError:  # another process picked the plan up first: it runs it
            return instant

    def _run_pending_compactions(self, engine: Any, options: Mapping[str, Any] | None) -> list[str]:
        """Execute every pending compaction no live process is executing; returns their instants."""
        return self._run_pending(lambda i: i.is_compaction, self.run_compaction, engine, options)

    def _run_pending(self, selected: Callable[[Instant], bool], run: Callable[..., str], engine: Any,
                     options: Mapping[str, Any] | None, timeline: Timeline | None = None) -> list[str]:
        """Run every pending plan ``selected`` picks that no live process is executing (another
        process may run or complete one meanwhile: it is left to it); returns the instants run.
        ``timeline``: a listing just taken (else the timeline is listed here)."""
        from pyhudi.errors import ConcurrentWriteError, TimelineError

        ran = []
        timeline = timeline if timeline is not None else self.active_timeline(self._options(options))
        for instant in timeline.pending():
            if not selected(instant):
                continue
            try:
                ran.append(run(instant.requested_time, engine=engine, options=options))
            except ConcurrentWriteError:
                continue  # another process runs it
            except TimelineError:
                now = self.active_timeline().get(instant.requested_time)
                if now is None or not now.is_pending:
                    continue  # another process completed (or rolled back) it meanwhile
                raise
        return ran

    def rollback(self, instant: str, options: Mapping[str, Any] | None = None) -> str:
        """Roll back ``instant``: a pending write or compaction whose process is gone, or the
        latest completed commit (:mod:`pyhudi.services.rollback`). Returns the rollback instant."""
        from pyhudi.services.rollback import rollback

        opts = {**self.config.props, **self._options(options)}
        return rollback(self.storage, self.active_timeline(opts), instant, opts).requested_time

    def _listing(self, options: Mapping[str, str], listing: PostCommitListing | None) -> PostCommitListing:
        return listing if listing is not None else PostCommitListing(self, options)

    def _compact_inline(self, options: Mapping[str, str], engine: Any,
                        listing: PostCommitListing | None = None) -> None:
        """``hoodie.compact.inline``: after a write, compact when the trigger strategy says so."""
        from pyhudi.config.compaction import INLINE_COMPACT
        from pyhudi.services.compaction import compaction_due

        if not INLINE_COMPACT.get(options) or self.config.table_type != "MERGE_ON_READ":
            return
        from pyhudi.timeline.instant import format_instant_time_ms

        listing = self._listing(options, listing)
        timeline = listing.timeline()  # (one listing serves both steps unless a compaction ran)
        if self._run_pending(lambda i: i.is_compaction, self.run_compaction, engine, options, timeline):
            timeline.reload()
            listing.changed()
        # now: the clock, or the latest time on the timeline if that is ahead (instant times may
        # run ahead of the clock) — not a new instant time: asking costs no lock, persists nothing
        clock = format_instant_time_ms(int(time.time() * 1000), timeline.timezone)
        if compaction_due(timeline, options, max(clock, timeline.latest_time() or clock)):
            self.compact(engine=engine, options=options)
            listing.changed()

    # clustering (pyhudi/services/clustering.py, clustering_run.py)
    def schedule_clustering(self, sort_columns: Sequence[str] | str | None = None,
                            options: Mapping[str, Any] | None = None) -> str | None:
        """Plan a clustering (``<t>.clustering.requested``) of the small file slices, to be sorted
        by ``sort_columns`` (default ``hoodie.clustering.plan.strategy.sort.columns``). Returns the
        instant, or None when nothing is eligible. Refused on bucketed tables."""
        from pyhudi.services.clustering import schedule_clustering

        opts = self._options(options)
        timeline = self.active_timeline(opts)
        return schedule_clustering(self.table_context(timeline), timeline, sort_columns=sort_columns, options=opts)

    def plan_clustering(self, sort_columns: Sequence[str] | str | None = None,
                        options: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """What :meth:`schedule_clustering` would plan now, as rows; nothing is written (a dry run)."""
        from pyhudi.services.clustering import describe_plan, plan_clustering

        opts = self._options(options)
        timeline = self.active_timeline(opts)
        return describe_plan(plan_clustering(self.table_context(timeline), timeline, timeline.new_instant_time(dry_run=True),
                                             sort_columns=sort_columns, options=opts))

    def run_clustering(self, instant: str, *, engine: Any = None, options: Mapping[str, Any] | None = None) -> str:
        """Execute the clustering planned at ``instant`` (completes as a ``replacecommit``); returns it."""
        from pyhudi.services.clustering_run import run_clustering

        opts = self._options(options)
        timeline = self.active_timeline(opts)
        return run_clustering(self.table_context(timeline), timeline, instant, engine=engine,
                              options=opts).requested_time

    def cluster(self, sort_columns: Sequence[str] | str | None = None, options: Mapping[str, Any] | None = None, *,
                engine: Any = None) -> str | None:
        """Run the pending clusterings no live process runs (scheduled earlier, or killed), then
        schedule and run a new one. Returns the new clustering's instant, else the last pending
        one run, else None (nothing to cluster)."""
        from pyhudi.errors import ConcurrentWriteError

        ran = self._run_pending_clusterings(engine, options)
        instant = self.schedule_clustering(sort_columns, options)
        if instant is None:
            return ran[-1] if ran else None
        try:
            return self.run_clustering(instant, engine=engine, options=options)
        except ConcurrentWriteError:  # another process picked the plan up first: it runs it
            return instant

    def _run_pending_clusterings(self, engine: Any, options: Mapping[str, Any] | None) -> list[str]:
        """Execute every pending clustering no live process is executing; returns their instants."""
        from pyhudi.timeline.instant import Action

        return self._run_pending(lambda i: i.action is Action.CLUSTERING, self.run_clustering, engine, options)

    def _check_cluster_inline(self, options: Mapping[str, str]) -> tuple[bool, bool]:
        """(inline, schedule inline), refused together (checked before a write starts)."""
        from pyhudi.config.clustering import INLINE_CLUSTERING, SCHEDULE_INLINE
        from pyhudi.errors import ConfigError

        merged = {**self.config.props, **options}
        inline, schedule_only = INLINE_CLUSTERING.get(merged), SCHEDULE_INLINE.get(merged)
        if inline and schedule_only:
            raise ConfigError(f"{INLINE_CLUSTERING.key} and {SCHEDULE_INLINE.key} cannot both be true: the first "
                              "runs clusterings after writes, the second only schedules them")
        return inline, schedule_only

    def _cluster_inline(self, options: Mapping[str, str], engine: Any,
                        listing: PostCommitListing | None = None) -> None:
        """``hoodie.clustering.inline``: after a write, cluster every ``inline.max.commits`` commits
        (``hoodie.clustering.schedule.inline``: only schedule it, to run elsewhere)."""
        from pyhudi.services.clustering import clustering_due

        merged = {**self.config.props, **options}
        inline, schedule_only = self._check_cluster_inline(merged)
        if not (inline or schedule_only) or self.config.is_bucketed:
            return
        listing = self._listing(options, listing)
        if clustering_due(listing.timeline(), merged):
            if schedule_only:
                self.schedule_clustering(options=options)
            else:
                self.cluster(options=options, engine=engine)
            listing.changed()

    # cleaning (pyhudi/services/clean.py)
    def schedule_clean(self, options: Mapping[str, Any] | None = None) -> str | None:
        """Plan a clean (``<t>.clean.requested``, policy ``hoodie.cleaner.policy``); returns its
        instant, or None when there is nothing to delete (nothing is written then)."""
        from pyhudi.services.clean import schedule_clean

        opts = self._options(options)
        timeline = self.active_timeline(opts)
        return schedule_clean(self.table_context(timeline), timeline, opts)

    def plan_clean(self, options: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The files :meth:`schedule_clean` would delete now, as rows; nothing is written (a dry run)."""
        from pyhudi.services.clean_plan import describe_plan, plan_clean

        opts = self._options(options)
        timeline = self.active_timeline(opts)
        return describe_plan(plan_clean(self.table_context(timeline), timeline, timeline.new_instant_time(dry_run=True), opts))

    def run_clean(self, instant: str, options: Mapping[str, Any] | None = None) -> str:
        """Execute the clean planned at ``instant`` (from its stored plan); returns it."""
        from pyhudi.services.clean import run_clean

        opts = self._options(options)
        timeline = self.active_timeline(opts)
        return run_clean(self.table_context(timeline), timeline, instant, opts).requested_time

    def clean(self, options: Mapping[str, Any] | None = None) -> str | None:
        """Delete file versions no retained snapshot reads (pending cleans are finished first);
        returns the clean's instant, or None when there was nothing to delete. Time travel to the
        retained commits (``hoodie.cleaner.commits.retained``, 10) keeps working; older snapshots
        are refused with :class:`~pyhudi.errors.CleanedSnapshotError`."""
        from pyhudi.services.clean import clean

        opts = self._options(options)
        timeline = self.active_timeline(opts)
        return clean(self.table_context(timeline), timeline, opts)

    def wait_for_clean(self, timeout: float | None = None) -> None:
        """Wait for the automatic clean running in the background (``hoodie.clean.async``), if
        any; an error it raised is raised here."""
        thread = getattr(self, "_clean_thread", None)
        if thread is not None:
            thread.join(timeout)
            error, self._clean_error = getattr(self, "_clean_error", None), None
            if error is not None:
                raise error

    def _clean_after_commit(self, options: Mapping[str, str], listing: PostCommitListing | None = None) -> None:
        """``hoodie.clean.automatic``: after a write, clean when ``hoodie.clean.max.commits`` says
        one is due; in a background thread with ``hoodie.clean.async``."""
        import threading

        from pyhudi.config.clean import ASYNC_CLEAN, AUTO_CLEAN
        from pyhudi.services.clean import clean_due

        merged = {**self.config.props, **options}
        if not AUTO_CLEAN.get(merged) or self.config.layout_version != 2:
            return
        if not ASYNC_CLEAN.get(merged):
            listing = self._listing(options, listing)
            timeline = listing.timeline()
            if clean_due(timeline, merged):
                from pyhudi.services.clean import clean

                clean(self.table_context(timeline), timeline, options)  # (as self.clean, on this listing)
                listing.changed()
            return
        self.wait_for_clean()  # (one background clean at a time per handle)

        def run() -> None:
            try:
                if clean_due(self.active_timeline(options), merged):
                    self.clean(options)
            except BaseException as exc:  # reported by wait_for_clean
                self._clean_error = exc

        self._clean_thread = threading.Thread(target=run, name="pyhudi-clean", daemon=True)
        self._clean_thread.start()

    # ----------------------------------------------------------------- timeline archival
    def archive(self, options: Mapping[str, Any] | None = None) -> list[str]:
        """Archive old completed instants into the LSM history (``.hoodie/timeline/history``) when
        more than ``hoodie.keep.max.commits`` commits are active (rules: :mod:`pyhudi.services.archive`).
        Returns the archived instants' requested times (empty when nothing was due)."""
        from pyhudi.services.archive import archive

        opts = {**self.config.props, **self._options(options)}
        result = archive(self.active_timeline(opts), opts, self.config.table_type)
        return [i.requested_time for i in result.instants]

    def archived_timeline(self) -> list[Instant]:
        """The archived instants (completed, with their completion times), by requested time."""
        return list(self.active_timeline().archived().instants)

    def _archive_inline(self, options: Mapping[str, str], listing: PostCommitListing | None = None) -> None:
        """``hoodie.archive.automatic``: after a write, archive when the timeline is long enough
        (decided on the listing at hand; archival lists again under the lock before it acts)."""
        from pyhudi.config.archive import AUTO_ARCHIVE
        from pyhudi.services.archive import archive

        opts = {**self.config.props, **options}
        if AUTO_ARCHIVE.get(opts):
            archive(self._listing(options, listing).timeline(), opts, self.config.table_type)

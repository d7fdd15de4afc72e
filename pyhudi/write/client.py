"""The write client: commits of upserts / inserts / bulk inserts / deletes, in phases.

Phases (CONTRACTS C2), so a distributed engine can write files on executors and commit on
the driver:

- :meth:`WriteClient.begin` — roll back failed writes (pending instants whose writer is gone;
  never one with a fresh heartbeat), refuse to start beside a live writer on a single-writer
  table, start the heartbeat, create the requested and inflight instant; returns a picklable
  :class:`~pyhudi.write.txn.WriteTxn`;
- :meth:`WriteTxn.write_rows <pyhudi.write.txn.WriteTxn.write_rows>` — executor side: prepare,
  de-duplicate, sort and write files for any subset of the rows; returns write statuses;
- :meth:`WriteClient.commit` — reconcile against markers (files no status names — failed or
  duplicate task attempts — are deleted), write the commit metadata (every write stat and the
  writer schema), check conflicts with concurrent commits per the concurrency mode
  (:mod:`pyhudi.write.conflicts`) and complete the instant, under the lock; a failure rolls the
  instant back;
- :meth:`WriteClient.abort` — roll the instant back (deletes everything written).

:meth:`WriteClient.write` is all of it in one call: validation before the instant exists,
planning on the driver, one task per file group on the engine.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Mapping, Sequence

import pyarrow as pa

from pyhudi.config.concurrency import SINGLE_WRITER, WRITE_CONCURRENCY_MODE, ConcurrencyPolicy, resolve_concurrency
from pyhudi.config.keys import lookup, warn_misspelled
from pyhudi.context import TableHandle
from pyhudi.engine.base import Engine, get_engine
from pyhudi.errors import (
    ClusteredMeanwhileError,
    CommitConflictError,
    ConcurrentWriteError,
    SplitFileGroupError,
    StaleTimelineError,
    TimelineError,
)
from pyhudi.evolution import check_schema_unchanged, commit_extra_metadata
from pyhudi.schema import avro_schema_json
from pyhudi.storage.naming import PARTITION_METAFILE
from pyhudi.timeline.metadata import CommitMetadata, RuntimeStats, WriteStat
from pyhudi.timeline.instant import Instant, State
from pyhudi.timeline.timeline import COMMIT_ACTIONS, Timeline
from pyhudi.write.clustering_guard import check_clustering_conflicts, replans_after_clustering
from pyhudi.write.commit import ActiveInstant
from pyhudi.write.conflicts import check_no_concurrent_base_version, check_write_conflicts
from pyhudi.write.handle import KIND_MERGE, WriteStatus
from pyhudi.write.markers import list_markers
from pyhudi.write.overwrite import ReplacePlan, check_not_replaced, is_overwrite, requested_content
from pyhudi.write.rollback import live_pending_writes, rollback_failed_writes, rollback_instant
from pyhudi.write.txn import OPERATIONS, WriteTxn, check_operation

__all__ = ["OPERATIONS", "WriteClient", "WriteResult", "WriteTxn"]

MAX_REPLANS = 3
"""Allow mode: how often one write is planned again after clusterings replaced its file groups."""
_LISTING_ATTEMPTS = 3  # (fresh listings tried when concurrent archival moves a commit being read)
_YOUNG_ATTEMPTS = 8  # (new times tried by a write overtaken on a young table: WriteClient._overtaken_while_young)


@dataclass
class WriteResult:
    """What a commit did, returned to the caller and passed to commit callbacks."""

    instant: str
    operation: str
    completion_time: str
    statuses: list[WriteStatus]
    elapsed_ms: int
    rolled_back: list[str] = field(default_factory=list)
    discarded_files: list[str] = field(default_factory=list)  # files of task attempts not committed

    @property
    def rows_per_family(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.statuses:
            out[s.family] = out.get(s.family, 0) + s.num_records
        return out

    @property
    def files(self) -> list[str]:
        return [s.relpath for s in self.statuses]

    @property
    def bytes_written(self) -> int:
        return sum(s.bytes_written for s in self.statuses)


@dataclass
class _OpenTxn:
    """Driver-side state of a begun transaction (never shipped to executors)."""

    active: ActiveInstant
    started: float
    rolled_back: list[str]
    timeline: Timeline  # listed at begin: planning and commit reuse it (completion re-lists under the lock)


class WriteClient:
    """Writes commits to one table with one engine (``"local"`` by default, or ``"spark"``)."""

    def __init__(self, table: TableHandle, engine: str | Engine | None = None, options: Mapping[str, Any] | None = None,
                 on_commit: Callable[[WriteResult], None] | None = None) -> None:
        self.table = table
        self.engine = get_engine(engine)
        given = {k: str(v) for k, v in (options or {}).items()}
        _check_options(given)  # a bad value is refused before the timeline changes
        self.options = {**table.properties, **given}
        self.policy: ConcurrencyPolicy = resolve_concurrency(
            self.options, table.config.table_type, table.config.num_buckets is not None)
        self.on_commit = on_commit
        self._open: dict[str, _OpenTxn] = {}
        self.committed_timeline: Timeline | None = None

    # ------------------------------------------------------------------ one call
    def write(self, data: Any, operation: str) -> WriteResult:
        """Validate, begin, write one task per file group on the engine, commit.

        In allow mode (``hoodie.clustering.updates.strategy=SparkAllowUpdateStrategy``) a write
        whose file groups a clustering replaced while it ran (:class:`ClusteredMeanwhileError`)
        is not lost: its instant is rolled back and the same prepared rows are written again
        under a new instant, planned on the clustering's new file groups — at most
        :data:`MAX_REPLANS` times. Phased writes (``begin``/``commit``) get the error instead:
        their rows live on the executors.
        """
        check_operation(operation)
        started = time.perf_counter()
        table = self.table
        # one listing serves the schema, the families and begin (commit re-lists under the lock,
        # where the schema and families are checked again)
        timeline = table.active_timeline(self.options)
        schema = table.history.schema_at(timeline, table.config)
        families = table.history.declared_families_at(timeline, table.config)
        # every input check happens before the timeline changes
        prepared = self._txn(operation, schema, instant="", families=families).prepare(data)
        for attempt in range(MAX_REPLANS + 1):
            txn = self.begin(operation, schema=schema, timeline=timeline, families=families)
            self._open[txn.instant].started = started
            try:
                tasks = txn.plan_tasks(prepared, timeline=self._open[txn.instant].timeline)
                statuses = [s for batch in self.engine.run_tasks(tasks) for s in batch]
            except BaseException:
                self.abort(txn)
                raise
            try:
                return self.commit(txn, statuses)
            except ClusteredMeanwhileError:  # (the commit rolled its instant back)
                if attempt == MAX_REPLANS or is_overwrite(operation) or not replans_after_clustering(self.options):
                    raise
            timeline = table.active_timeline(self.options)  # plan again, on the clustering's file groups
        raise AssertionError("unreachable")

    def unbegun(self, operation: str) -> WriteTxn:
        """A transaction for ``operation`` on the table as it is now, without an instant: what
        an engine prepares or routes rows with before the write begins (``WriteTxn.routes``)."""
        check_operation(operation)
        table = self.table
        timeline = table.active_timeline(self.options)
        schema = table.history.schema_at(timeline, table.config)
        families = table.history.declared_families_at(timeline, table.config)
        return self._txn(operation, schema, instant="", families=families)

    # ------------------------------------------------------------------ phases
    def begin(self, operation: str, schema: pa.Schema | None = None, *, timeline: Timeline | None = None,
              families: Mapping[str, Any] | None = None) -> WriteTxn:
        """Roll back failed writes, start the heartbeat, create the requested + inflight instant.

        ``timeline``: a listing just taken (else the timeline is listed here); ``schema`` and
        ``families``: what the write was prepared for (else the table's, from that listing).
        """
        check_operation(operation)
        started = time.perf_counter()
        table = self.table
        timeline = timeline if timeline is not None else table.active_timeline(self.options)
        schema = schema if schema is not None else table.history.schema_at(timeline, table.config)
        if families is None:
            families = table.history.declared_families_at(timeline, table.config)
        rolled_back = rollback_failed_writes(table.storage, timeline, self.policy, reload=False)
        if self.policy.mode == SINGLE_WRITER:
            self._refuse_second_writer(timeline)
        since = self._families_added(timeline) if families else None
        for attempt in range(_YOUNG_ATTEMPTS):
            requested_time = timeline.new_instant_time()
            txn = self._txn(operation, schema, instant=requested_time, families=families)
            if families:  # (a family table: slices cut as readers cut them, see WriteTxn.family_since)
                txn.family_since = since
            active = ActiveInstant.begin(table.storage, timeline, txn.action, requested_time,
                                         heartbeat_interval_ms=self.policy.heartbeat_interval_ms,
                                         heartbeat_misses=self.policy.heartbeat_misses, plan=requested_content(txn))
            if attempt == _YOUNG_ATTEMPTS - 1 or not self._overtaken_while_young(timeline, requested_time):
                break
            active.abort(partial(timeline.delete_pending, active.instant))  # (nothing written yet)
            timeline.reload()  # (a write that completed meanwhile ends the young case)
        self._open[requested_time] = _OpenTxn(active, started, rolled_back, timeline)
        return txn

    def _overtaken_while_young(self, timeline: Timeline, requested_time: str) -> bool:
        """Whether a reader may have listed the timeline without this write's instant and
        without any write older than it, yet with a later one: on such a listing an instant
        older than the first active write counts as archived (completed), so this write's files
        would be visible before it commits. Only a young table — no completed write older than
        this one on the listing it began on — can give such a listing; then the timeline is
        listed again, and any instant issued after ``requested_time`` that is already there
        means the write takes a new time (it has written nothing yet)."""
        if any(i.is_completed and i.action in COMMIT_ACTIONS and i.requested_time < requested_time
               for i in timeline.instants):
            return False
        fresh = self.table.active_timeline(self.options)
        return any(i.requested_time > requested_time for i in fresh.instants)

    def _families_added(self, timeline: Timeline) -> dict[str, str]:
        """When ALTERs added the table's families (``SchemaHistory.families_added``). Its commits
        are read from the listing the write began on; when another process archives one of them
        meanwhile, they are read again from a fresh listing (the write's own listing is kept)."""
        for attempt in range(_LISTING_ATTEMPTS):
            try:
                return self.table.history.families_added(timeline)
            except StaleTimelineError:
                if attempt == _LISTING_ATTEMPTS - 1:
                    raise
                timeline = self.table.active_timeline(self.options)
        return {}  # pragma: no cover (the loop returns or raises)

    def commit(self, txn: WriteTxn, statuses: Sequence[WriteStatus]) -> WriteResult:
        """Commit exactly ``statuses`` (what the tasks that count reported).

        Files the instant's markers name but no status does — written by failed or duplicate
        task attempts — are deleted first (Hudi's marker reconciliation). A failure rolls the
        instant back and re-raises.
        """
        state = self._open.pop(txn.instant, None)
        storage = self.table.storage
        timeline = state.timeline if state is not None else self.table.active_timeline(self.options)
        pending = timeline.get(txn.instant)
        if pending is None or not pending.is_inflight:
            if state is not None:
                state.active.heartbeat.stop()
            found = "not on the timeline (rolled back?)" if pending is None else f"{pending.state.value}"
            raise TimelineError(f"cannot commit instant {txn.instant}: it is {found}, not INFLIGHT")
        active = state.active if state is not None else ActiveInstant.adopt(storage, timeline, pending)
        statuses = list(statuses)
        try:
            _check_statuses(txn, statuses)
            discarded = self._reconcile_markers(txn.instant, statuses)
            self._write_partition_metafiles(statuses, txn.instant)
            metadata = self._commit_metadata(statuses, txn.operation_type, txn.schema, txn.families)
            replace = ReplacePlan(txn, statuses, timeline) if is_overwrite(txn.operation) else None
            if replace is not None:
                metadata = replace.metadata(metadata)

            # the commits the plan saw (the listing is refreshed in place under the lock)
            seen = {i.requested_time for i in state.timeline.completed()} if state is not None else None

            def precondition(current: Timeline) -> None:
                # C3: checked under the timeline lock, so no ALTER completes between check and commit
                check_schema_unchanged(self.table.history, current, self.table.config, txn.schema, txn.families)
                check_not_replaced(txn, statuses, current)  # no file written went to a just-replaced group
                check_no_concurrent_base_version(txn.instant, statuses, seen, current)
                check_write_conflicts(txn.instant, statuses, seen, current, self.policy,
                                      bucketed=txn.config.num_buckets is not None,
                                      merge_on_read=txn.config.table_type == "MERGE_ON_READ")
                if replace is not None:
                    replace.check(current)  # no file group appeared in (or left) the overwritten scope
                check_clustering_conflicts(txn, statuses, replace.groups() if replace is not None else (), current)

            completed = active.commit(metadata.to_avro_bytes(), precondition=precondition)
        except BaseException:
            active.abort(lambda: self._rollback_quietly(txn.instant))
            raise
        started = state.started if state is not None else time.perf_counter()
        result = WriteResult(
            instant=completed.requested_time, operation=txn.operation_type,
            completion_time=completed.completion_time or "", statuses=statuses,
            elapsed_ms=int((time.perf_counter() - started) * 1000),
            rolled_back=state.rolled_back if state is not None else [], discarded_files=discarded,
        )
        self.committed_timeline = timeline  # (listed under the lock at completion: the post-commit checks reuse it)
        if self.on_commit is not None:
            self.on_commit(result)
        return result

    def detach(self, txn: WriteTxn) -> None:
        """Stop this process's part of ``txn`` (its heartbeat thread; the heartbeat file stays
        for the tasks to keep fresh) — for a driver that hands the instant to workers and may
        commit or abort it from another client object or process."""
        state = self._open.pop(txn.instant, None)
        if state is not None:
            state.active.detach()

    def abort(self, txn: WriteTxn) -> None:
        """Roll the instant back: delete every file written for it and remove it from the timeline."""
        state = self._open.pop(txn.instant, None)
        if state is not None:
            state.active.abort(lambda: self._rollback_quietly(txn.instant))
        else:  # begun by another client object: its heartbeat file is all that is left of it here
            timeline = self.table.active_timeline(self.options)
            adopted = ActiveInstant.adopt(self.table.storage, timeline, Instant(txn.instant, txn.action, State.INFLIGHT))
            adopted.abort(lambda: self._rollback_quietly(txn.instant))

    # ------------------------------------------------------------------ helpers
    def _txn(self, operation: str, schema: pa.Schema, instant: str, families: Mapping[str, Any]) -> WriteTxn:
        return WriteTxn(base_uri=self.table.storage.base_uri, config=self.table.config, instant=instant,
                        operation=operation, schema=schema, options=dict(self.options),
                        declared_families=dict(families))  # C3: from the timeline

    def _refuse_second_writer(self, timeline: Timeline) -> None:
        """On a single-writer table, a pending write with a fresh heartbeat is a live second
        writer: refuse to start rather than roll it back (its data would be lost)."""
        live = live_pending_writes(self.table.storage, timeline, self.policy)
        if live:
            other = live[0]
            raise ConcurrentWriteError(
                f"another writer is writing {other.action} {other.requested_time} on this table (its heartbeat is "
                f"fresh), and the table has a single writer ({WRITE_CONCURRENCY_MODE.key}={SINGLE_WRITER}): this "
                f"write did not start and changed nothing. Wait for that write, or set {WRITE_CONCURRENCY_MODE.key}="
                "OPTIMISTIC_CONCURRENCY_CONTROL to let several writers work at once"
            )

    def _reconcile_markers(self, instant: str, statuses: list[WriteStatus]) -> list[str]:
        """Delete data files written for ``instant`` that no committed status names."""
        keep = {s.relpath for s in statuses}
        discarded = []
        for marker in list_markers(self.table.storage, instant):
            if marker.data_relpath not in keep and self.table.storage.delete(marker.data_relpath):
                discarded.append(marker.data_relpath)
        return sorted(discarded)

    def _commit_metadata(self, statuses: list[WriteStatus], operation: str, schema: pa.Schema,
                         families: Mapping[str, Any]) -> CommitMetadata:
        stats = [write_stat_of(s) for s in statuses]
        return CommitMetadata.from_write_stats(
            stats, operation_type=operation, schema=avro_schema_json(schema, self.table.name),
            extra_metadata=commit_extra_metadata(families),  # C3: the families in effect
        )

    def _write_partition_metafiles(self, statuses: list[WriteStatus], instant: str) -> None:
        """``.hoodie_partition_metadata`` of each partition that gets its first file group. A
        partition where the write found a file group has one already: the listing knows
        partitions by it (no ``stat`` per touched partition, ~0.5 ms each on some file systems)."""
        listed = {s.partition_path for s in statuses if not s.is_new_file_group}
        for partition in sorted({s.partition_path for s in statuses} - listed):
            if not partition:
                continue
            relpath = f"{partition}/{PARTITION_METAFILE}"
            if not self.table.storage.exists(relpath):
                text = f"#partition metadata\ncommitTime={instant}\npartitionDepth={partition.count('/') + 1}\n"
                try:
                    self.table.storage.create_if_absent(relpath, text.encode())
                except Exception:  # another writer created it first
                    pass

    def _rollback_quietly(self, instant: str) -> None:
        try:
            timeline = self.table.active_timeline(self.options)
            pending = timeline.get(instant)
            if pending is not None and pending.is_pending:
                rollback_instant(self.table.storage, timeline, pending, self.policy.heartbeat_interval_ms)
        except Exception:  # the original error matters more; the next writer rolls back again
            pass


def write_stat_of(status: WriteStatus) -> WriteStat:
    """The commit metadata's write stat of one written file (base or log)."""
    base_kind = status.writes_base_file
    return WriteStat(
        file_id=status.file_id, path=status.relpath, prev_commit=status.prev_commit, num_writes=status.num_records,
        num_deletes=status.num_deletes, num_update_writes=status.num_updates, num_inserts=status.num_inserts,
        total_write_bytes=status.bytes_written, total_write_errors=0, partition_path=status.partition_path,
        total_log_records=0, total_log_files=0, total_updated_records_compacted=0, total_log_blocks=0,
        total_corrupt_log_block=0, total_rollback_blocks=0, file_size_in_bytes=status.bytes_written,
        log_version=None if base_kind else 1, log_offset=None if base_kind else 0,
        base_file=None if base_kind else status.base_file,
        log_files=None if base_kind else [status.file_name],
        prev_base_file=status.base_file if status.kind == KIND_MERGE else None,
        runtime_stats=RuntimeStats(total_scan_time=0, total_create_time=0, total_upsert_time=status.elapsed_ms),
        total_log_files_compacted=0, total_log_read_time_ms=0, total_log_size_compacted=0,
        num_updates=status.num_updates,
    )


def _check_options(options: Mapping[str, str]) -> None:
    """Parse every declared key among the write options (ConfigError naming the key); warn of a
    misspelled one (it would have no effect)."""
    for name, value in options.items():
        key = lookup(name)
        if key is not None:
            key.parse(value)
    warn_misspelled(options)


def _check_statuses(txn: WriteTxn, statuses: list[WriteStatus]) -> None:
    """Statuses belong to this instant, name each file once, and give each (file group, family)
    at most one new base file (two would hide one another)."""
    seen: set[str] = set()
    bases: dict[tuple[str, str], dict[str, str]] = {}  # (partition, file id) -> family -> file name
    for s in statuses:
        if s.instant != txn.instant:
            raise CommitConflictError(f"write status for {s.relpath} belongs to instant {s.instant}, not {txn.instant}")
        if s.relpath in seen:
            raise CommitConflictError(f"write status for {s.relpath} is given twice")
        seen.add(s.relpath)
        if s.writes_base_file:
            written = bases.setdefault((s.partition_path, s.file_id), {})
            # a full-row base file ("" in a family table) holds every family: it clashes with any other
            other = s.family if s.family in written else next(
                (f for f in written if "" in (f, s.family)), None) if len(txn.families) > 1 else None
            if other is not None:
                raise SplitFileGroupError(
                    f"two tasks wrote a base file for file group {s.file_id} ({_base_kind(txn, other, s.family)}) "
                    f"of partition {s.partition_path!r} in instant {txn.instant}: {written[other]} and "
                    f"{s.file_name}; give all rows of a file group to one task"
                )
            written[s.family] = s.file_name


def _base_kind(txn: WriteTxn, first: str, second: str) -> str:
    """What two clashing base files hold, for the error: one family, full rows, or both."""
    def kind(family: str) -> str:
        return f"family {family!r}" if family else "full row" if len(txn.families) > 1 else "family 'default'"
    return kind(first) if first == second else f"{kind(first)} and {kind(second)}"

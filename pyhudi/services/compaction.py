"""Compaction (RFC-80 family-level and full), scheduled and executed as Hudi does.

**Schedule** (:func:`schedule_compaction`): the compaction instant time is generated first, then
the timeline is listed, so every deltacommit that completed before that time is seen. Per file
group and family, the latest slice's log files that completed before the instant are what the
plan merges (completion-time slicing, RFC-66): a deltacommit completing later lands in the slice
after the new base file, so writers never wait. File groups in a pending compaction are skipped.
The plan is Hudi's Avro ``HoodieCompactionPlan`` in ``<t>.compaction.requested``: one operation
per (file group, family) — the family is in the file names (``_<cf>`` suffix) — and, in
``extraMetadata``, whether the plan is a full compaction. A plan with no operation is not written.

**Strategies** (``hoodie.compaction.strategy``, Hudi's class names): LogFileSizeBased (default:
slices whose log files reach ``hoodie.compaction.logfile.size.threshold``, largest first),
LogFileNumBased (``hoodie.compaction.logfile.num.threshold``), BoundedIO, UnBounded; every
bounded one stops after ``hoodie.compaction.target.io`` MB (the slice that crosses it is kept).

**Execute** (:func:`run_compaction`): requested → inflight (with a heartbeat); one task per file
group streams each family's slice (base + logs, sort-merge, bounded memory) through the shared
file-slice reader into a new base file ``<fileId>_<token>_<instant>_<cf>.parquet`` keeping each
record's ``_hoodie_commit_time`` / ``_hoodie_commit_seqno``; a family compaction never opens
another family's files. A **full** compaction joins every family of the group into one
complete-row base file without suffix (DESIGN §4) — as does a compaction of every family of a
group whose families' slices are all the same full-row files (:func:`_full_row_only`); the column chunks of the families whose data
is final (a base file, no log file) are copied byte for byte when their base files align
(:mod:`pyhudi.write.chunk_copy`), else every column is merged and encoded. The instant completes as a ``commit`` with
operation ``COMPACT``. A failed run deletes what it wrote and goes back to requested; a killed
one (inflight, heartbeat gone) is re-executed from its plan — never re-planned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pyarrow as pa

from pyhudi.config import compaction as cc
from pyhudi.config import table as tc
from pyhudi.config.concurrency import HEARTBEAT_INTERVAL_MS, HEARTBEAT_TOLERABLE_MISSES
from pyhudi.context import TableContext
from pyhudi.engine.base import Engine, get_engine
from pyhudi.errors import ConcurrentWriteError, ConfigError, CorruptFileError, TimelineError
from pyhudi.fsview.view import FileGroup, FileSlice, FileSystemView, Visibility
from pyhudi.keygen import partition_layout
from pyhudi.read.file_slice import read_file_slices
from pyhudi.schema import avro_schema_json
from pyhudi.storage.naming import BaseFileName, WriteToken, parse_data_file_name
from pyhudi.services.execution import recover_inflight, undo_execution
from pyhudi.timeline.instant import Action, Instant, parse_instant_time
from pyhudi.timeline.metadata import CommitMetadata
from pyhudi.timeline.metadata_plans import CompactionOperation, CompactionPlan
from pyhudi.timeline.timeline import Locked, Timeline
from pyhudi.write.client import write_stat_of
from pyhudi.write.commit import ActiveInstant
from pyhudi.write.base_file import row_group_buffer_bytes, write_base_file
from pyhudi.write.chunk_copy import copy_full_compaction
from pyhudi.write.handle import KIND_CREATE, WriteStatus
from pyhudi.write.markers import IO_CREATE, create_marker
from pyhudi.read.task import DEFAULT_BATCH_SIZE  # (bounded memory: a compaction streams)
from pyhudi.write.plan import family_file_columns

FULL_KEY = "pyhudi.compaction.full"
"""Plan ``extraMetadata``: "true" when every family of a file group merges into one full-row base file."""
FAMILIES_KEY = "pyhudi.compaction.families"
"""Plan ``extraMetadata``: the family of each operation, comma-separated in operation order ("" for the
default family / full-row files). File names carry it too, except a slice whose only file is a full-row
base file — which a full compaction reads for every family."""
COMPACT_OPERATION = "COMPACT"
_MB = 1024 * 1024


# ------------------------------------------------------------------------------ plan
@dataclass
class _Unit:
    """What a strategy picks or drops as a whole: one family's slice, or (full) a file group."""

    operations: list[CompactionOperation]
    families: list[str | None]

    @property
    def log_bytes(self) -> float:
        return sum(op.metrics["TOTAL_LOG_FILES_SIZE"] for op in self.operations)

    @property
    def log_files(self) -> float:
        return sum(op.metrics["TOTAL_LOG_FILES"] for op in self.operations)

    @property
    def io_mb(self) -> float:
        return sum(op.metrics["TOTAL_IO_MB"] for op in self.operations)


def _operation(file_slice: FileSlice, max_file_size: int) -> CompactionOperation:
    """Hudi's operation for one slice, with ``FileSliceMetricUtils``' metrics."""
    base = file_slice.base_file
    log_bytes = float(sum(lf.size for lf in file_slice.log_files))
    read_mb = ((base.size if base else 0) + log_bytes) / _MB
    write_mb = (base.size if base else max_file_size) / _MB
    return CompactionOperation(
        base_instant_time=base.instant if base else None,
        delta_file_paths=[lf.name.name for lf in file_slice.log_files],
        data_file_path=base.name.name if base else None,
        file_id=file_slice.file_id,
        partition_path=file_slice.partition_path,
        metrics={"TOTAL_IO_READ_MB": read_mb, "TOTAL_IO_WRITE_MB": write_mb, "TOTAL_IO_MB": read_mb + write_mb,
                 "TOTAL_LOG_FILES_SIZE": log_bytes, "TOTAL_LOG_FILES": float(len(file_slice.log_files))},
        bootstrap_file_path=None,
    )


def _select(units: list[_Unit], options: Mapping[str, str]) -> list[_Unit]:
    """Apply the configured strategy: filter, order, then bound the IO."""
    strategy = cc.strategy_name(cc.COMPACTION_STRATEGY.get(options))
    if strategy == cc.UNBOUNDED_STRATEGY:
        return units
    if strategy == cc.LOG_FILE_SIZE_STRATEGY:
        threshold = cc.LOG_FILE_SIZE_THRESHOLD.get(options)
        units = sorted((u for u in units if u.log_bytes >= threshold), key=lambda u: -u.log_bytes)
    elif strategy == cc.LOG_FILE_NUM_STRATEGY:
        threshold = cc.LOG_FILE_NUM_THRESHOLD.get(options)
        units = sorted((u for u in units if u.log_files >= threshold), key=lambda u: -u.log_files)
    budget = float(cc.TARGET_IO.get(options))
    chosen = []
    for unit in units:
        if budget <= 0:
            break
        chosen.append(unit)
        budget -= unit.io_mb
    return chosen


def pending_compactions(timeline: Timeline) -> dict[str, CompactionPlan]:
    """Plans of the compactions not completed yet, by instant time."""
    out = {}
    for instant in timeline.pending():
        if instant.action is Action.COMPACTION:
            out[instant.requested_time] = timeline.read_metadata(instant.as_requested())
    return out


def _before(file_slice: FileSlice, instant_time: str) -> FileSlice:
    """The slice without log files that completed at or after ``instant_time``."""
    logs = [lf for lf in file_slice.log_files if lf.completion_time < instant_time]
    return FileSlice(file_slice.partition_path, file_slice.file_id, file_slice.family, file_slice.base_file, logs)


def _group_units(group: FileGroup, families: Sequence[str | None], family_table: bool, full: bool,
                 instant_time: str, max_file_size: int) -> list[_Unit]:
    present = group.families()
    if family_table and None in present:  # a full-row base file (full compaction or insert) serves every family
        present = present | set(families)
    slices = [_before(group.latest_slice(f, family_table), instant_time) for f in families if f in present]
    if family_table:  # full-row logs are every family's logs: read through the families' slices
        slices = [FileSlice(s.partition_path, s.file_id, None, s.base_file, []) if s.family is None else s
                  for s in slices]
        # a full-row base file every family has a newer base file of its own over holds nothing
        # the snapshot reads: the plan leaves it out (a clean may delete it before the plan runs)
        served = {s.base_file.relpath for s in slices if s.family is not None and s.base_file is not None}
        slices = [s for s in slices if s.family is not None or s.base_file is None or s.base_file.relpath in served]
    slices = [s for s in slices if not s.is_empty]
    if not full:
        return [_Unit([_operation(s, max_file_size)], [s.family]) for s in slices if s.log_files]
    if not slices:
        return []
    bases = {s.base_file.name.name for s in slices if s.base_file is not None}
    already = len(bases) == 1 and not any(s.log_files for s in slices) and all(
        s.base_file is not None and s.base_file.name.family is None for s in slices)
    return [] if already else [_Unit([_operation(s, max_file_size) for s in slices], [s.family for s in slices])]


def plan_compaction(context: TableContext, timeline: Timeline, instant_time: str, *,
                    families: Sequence[str] | None = None, full: bool = False,
                    options: Mapping[str, str] | None = None) -> CompactionPlan | None:
    """The plan a compaction at ``instant_time`` would carry (None: nothing qualifies); writes nothing.
    ``timeline`` must be listed after ``instant_time`` was generated."""
    options = {**context.config.props, **(options or {})}
    if context.config.table_type != "MERGE_ON_READ":
        raise ConfigError(f"compaction applies to MERGE_ON_READ tables; table {context.config.name!r} is "
                          f"{context.config.table_type} (its base files are rewritten on every write)")
    chosen, family_table = _families_to_compact(context, families, full)
    view = FileSystemView(context.storage, timeline, partition_layout(context.config).depth,
                          family_since=context.family_since)
    busy = {*view.pending_compaction_file_groups(), *view.pending_clustering_file_groups()}
    max_file_size = int(options.get("hoodie.parquet.max.file.size", 125 * _MB))
    units = []
    for group in view.file_groups():
        if (group.partition_path, group.file_id) not in busy:
            units.extend(_group_units(group, chosen, family_table, full, instant_time, max_file_size))
    selected = _select(units, options)
    operations = [op for unit in selected for op in unit.operations]
    if not operations:
        return None
    extra = {FULL_KEY: "true" if full else "false",
             FAMILIES_KEY: ",".join(f or "" for unit in selected for f in unit.families)}
    return CompactionPlan(operations=operations, extra_metadata=extra, version=2, strategy=None,
                          preserve_hoodie_metadata=True, missing_schedule_partitions=None)


def _families_to_compact(context: TableContext, families: Sequence[str] | str | None,
                         full: bool) -> tuple[list[str | None], bool]:
    declared = [name for name, f in context.families.items() if not f.is_default]
    family_table = bool(declared)
    if families is not None:
        if isinstance(families, str):
            families = [families]
        if full:
            raise ConfigError("a full compaction merges every family of a file group; do not name families")
        unknown = [f for f in families if f not in context.families or context.families[f].is_default]
        if unknown:
            raise ConfigError(f"unknown column family {unknown[0]!r}: the table's families are "
                              f"{', '.join(declared) or 'none (a table without families)'}")
        chosen: list[str | None] = list(families)
    else:
        chosen = list(declared) if family_table else [None]
    if full and family_table:
        chosen = [*chosen, None]  # full-row base files of an earlier full compaction take part too
    return chosen, family_table


def schedule_compaction(context: TableContext, timeline: Timeline, *, families: Sequence[str] | None = None,
                        full: bool = False, options: Mapping[str, str] | None = None) -> str | None:
    """Plan a compaction; returns its instant, or None when nothing qualifies (nothing written)."""
    _families_to_compact(context, families, full)  # bad requests fail before an instant time is taken
    # Under the lock (as Hudi's transaction manager schedules services): no other scheduler can
    # plan a file group between this listing and the plan's requested file.
    with Locked(timeline.lock):
        instant_time = timeline.new_instant_time()
        timeline.reload()  # after the time: every deltacommit that completed before it is listed
        plan = plan_compaction(context, timeline, instant_time, families=families, full=full, options=options)
        if plan is None:
            return None
        timeline.create_requested(Action.COMPACTION, instant_time, content=plan.to_avro_bytes())
    return instant_time


def describe_plan(plan: CompactionPlan | None) -> list[dict[str, Any]]:
    """A plan as plain rows (partition, file id, family, base file, log files) for people and JSON."""
    if plan is None:
        return []
    return [{"partition": op.partition_path or "", "file_id": op.file_id, "family": family or "",
             "base_file": op.data_file_path, "log_files": list(op.delta_file_paths or ())}
            for op, family in zip(plan.operations or (), _operation_families(plan))]


# ------------------------------------------------------------------------------ execute
@dataclass
class CompactionTask:
    """Compact one file group: each family's slice into its own base file, or (``full``) every
    family into one full-row base file. Picklable: the local and Spark engines run it alike."""

    context: TableContext
    instant: str
    partition_path: str
    file_id: str
    slices: list[FileSlice]
    full: bool
    write_token: str
    visibility: Visibility
    copy_chunks: bool = True  # (hoodie.compaction.full.copy.chunks)

    def run(self) -> list[WriteStatus]:
        if self.full:
            return [self._compact(None, self.slices)]
        return [self._compact(s.family, [s]) for s in self.slices]

    def _columns(self, family: str | None) -> list[str]:
        config = self.context.config
        drop = config.get(tc.DROP_PARTITION_COLUMNS)
        dropped = set() if not drop else set(config.partition_fields) - set(config.record_key_fields)
        if family is None:
            return [c for c in self.context.schema.names if c not in dropped]
        return list(family_file_columns(self.context.families[family], config.record_key_fields,
                                        config.partition_fields, drop))

    def _compact(self, family: str | None, slices: list[FileSlice]) -> WriteStatus:
        started = time.perf_counter()
        storage = self.context.storage
        name = BaseFileName(self.file_id, self.write_token, self.instant, family).name
        relpath = f"{self.partition_path}/{name}" if self.partition_path else name

        def merged() -> pa.RecordBatchReader:
            return read_file_slices(self.context, slices, self.visibility, columns=self._columns(family),
                                    with_meta=True, batch_size=DEFAULT_BATCH_SIZE)

        create_marker(storage, self.instant, self.partition_path, name, IO_CREATE)
        copied = None
        if self.full and self.copy_chunks:  # families whose data is final: copied chunk for chunk if aligned
            copied = copy_full_compaction(self.context, slices, self.visibility, relpath, name, self._columns(None))
        rows, first_key, last_key = copied or write_base_file(
            storage, relpath, merged, name, self.context.config.record_key_fields,
            buffer_bytes=row_group_buffer_bytes(self.context.config.props))
        base = next((s.base_file for s in slices if s.base_file is not None), None)
        return WriteStatus(
            instant=self.instant, partition_path=self.partition_path, file_id=self.file_id, family=family or "",
            file_name=name, kind=KIND_CREATE, num_records=rows, num_inserts=0, num_updates=rows, num_deletes=0,
            bytes_written=storage.size(relpath), base_file=base.name.name if base else "",
            prev_commit=base.instant if base else "null", is_new_file_group=False,
            elapsed_ms=int((time.perf_counter() - started) * 1000), min_key=first_key, max_key=last_key,
        )


def _plan_slices(view_groups: dict[tuple[str, str], FileGroup], operation: CompactionOperation,
                 family: str | None) -> FileSlice:
    """The slice an operation names, from the listing: its base file and log files (an error
    naming the file when one is missing — a plan never silently compacts less)."""
    key = (operation.partition_path or "", operation.file_id or "")
    group = view_groups.get(key)
    names = [operation.data_file_path] if operation.data_file_path else []
    names += list(operation.delta_file_paths or ())
    found = {}
    if group is not None:
        found = {f.name.name: f for f in (*group.base_files, *group.log_files)}
    missing = [n for n in names if n not in found]
    if missing:
        where = f"{key[0]}/{missing[0]}" if key[0] else missing[0]
        raise CorruptFileError(f"compaction plan names {where}, which is not a visible data file of the table")
    base = found[operation.data_file_path] if operation.data_file_path else None
    logs = sorted((found[n] for n in operation.delta_file_paths or ()), key=lambda lf: lf.sort_key())
    return FileSlice(key[0], key[1], family, base, logs)


def run_compaction(context: TableContext, timeline: Timeline, instant: str, *, engine: str | Engine | None = None,
                   options: Mapping[str, str] | None = None) -> Instant:
    """Execute the compaction planned at ``instant``; returns the completed ``commit`` instant.

    An inflight compaction whose executor is gone (its heartbeat expired or names a dead process)
    is rolled back to requested first and executed again from the same plan; one whose executor
    is alive is refused (:class:`ConcurrentWriteError`).
    """
    options = {**context.config.props, **(options or {})}
    storage = context.storage
    pending = timeline.get(instant)
    if pending is None or pending.action is not Action.COMPACTION:
        done = pending is not None and pending.is_completed and pending.action is Action.COMMIT
        raise TimelineError(f"no pending compaction at {instant}" + (": it completed already" if done else ""))
    interval = HEARTBEAT_INTERVAL_MS.get(options)
    if pending.is_inflight:
        pending = recover_inflight(storage, timeline, pending, interval, HEARTBEAT_TOLERABLE_MISSES.get(options),
                                   "compaction")
    plan = timeline.read_metadata(pending)
    full = (plan.extra_metadata or {}).get(FULL_KEY) == "true"
    try:
        active = ActiveInstant.resume(storage, timeline, pending, heartbeat_interval_ms=interval,
                                      heartbeat_misses=HEARTBEAT_TOLERABLE_MISSES.get(options))
    except TimelineError:  # another runner moved it to inflight first: it is that runner's now
        raise ConcurrentWriteError(f"compaction {instant} was started by another runner meanwhile; it is not "
                                   "run twice") from None
    try:
        view = FileSystemView(storage, timeline, partition_layout(context.config).depth,
                              family_since=context.family_since)
        groups = {(g.partition_path, g.file_id): g for g in view.file_groups()}
        by_group: dict[tuple[str, str], list[FileSlice]] = {}
        for operation, family in zip(plan.operations or (), _operation_families(plan)):
            if family is not None and family not in context.families:
                continue  # dropped (ALTER UNSET) since the plan: its files are no longer read
            if ((operation.partition_path or ""), operation.file_id) in view.replaced:
                continue  # replaced (insert overwrite) since the plan: nothing reads it any more
            file_slice = _plan_slices(groups, operation, family)
            by_group.setdefault((file_slice.partition_path, file_slice.file_id), []).append(file_slice)
        declared = {name for name, f in context.families.items() if not f.is_default}
        tasks = [CompactionTask(context, instant, partition, file_id, slices, full or _full_row_only(slices, declared),
                                str(WriteToken(index, 0, 0)), view.visibility, cc.FULL_COPY_CHUNKS.get(options))
                 for index, ((partition, file_id), slices) in enumerate(by_group.items())]
        statuses = [s for batch in get_engine(engine).run_tasks(tasks) for s in batch]
        metadata = CommitMetadata.from_write_stats(
            [write_stat_of(s) for s in statuses], operation_type=COMPACT_OPERATION,
            schema=avro_schema_json(context.schema, context.config.name),
            extra_metadata=dict(plan.extra_metadata or {}),  # (the schema only: services never change families)
            compacted=True,
        )
        return active.commit(metadata.to_avro_bytes())
    except BaseException:
        active.abort(lambda: undo_execution(storage, timeline, instant))
        raise


def _full_row_only(slices: Sequence[FileSlice], declared: set[str]) -> bool:
    """Whether a compaction of every family of a group writes one full-row base file instead of
    one per family: every declared family's slice is the same full-row files (full-row logs, on a
    full-row base or none; an insert into a new file group), so the families' base files would
    hold the same keys, each its own columns of the same rows. One full-row file holds exactly
    those columns (each family's merge under its own ordering, as a full compaction does) and
    reads, cleans and goes to Spark like a full compaction's output. Decided from the plan's
    slices: a re-executed plan decides the same."""
    if len(declared) < 2 or {s.family for s in slices} != declared:
        return False

    def files(s: FileSlice) -> tuple:
        return (s.base_file.relpath if s.base_file is not None else None, *(lf.relpath for lf in s.log_files))

    first = slices[0]
    return bool(first.log_files) and all(files(s) == files(first) for s in slices) and \
        (first.base_file is None or first.base_file.name.family is None) and \
        all(lf.name.family is None for lf in first.log_files)


def _operation_families(plan: CompactionPlan) -> list[str | None]:
    """The family of each operation: from the plan's extraMetadata, else (a plan written by Apache
    Hudi) from the operation's file names."""
    operations = plan.operations or []
    recorded = (plan.extra_metadata or {}).get(FAMILIES_KEY)
    if recorded is not None and len(recorded.split(",")) == len(operations):
        return [name or None for name in recorded.split(",")]
    return [parse_data_file_name((op.delta_file_paths or [op.data_file_path])[0]).family for op in operations]


def compaction_due(timeline: Timeline, options: Mapping[str, str], now: str) -> bool:
    """Hudi's inline trigger: delta commits since the last compaction (or since the first delta
    commit) and/or seconds elapsed, per ``hoodie.compact.inline.trigger.strategy``."""
    completed = timeline.completed()
    last = max((i.requested_time for i in completed if i.action is Action.COMMIT), default=None)
    deltas = sorted(i.requested_time for i in completed
                    if i.action is Action.DELTACOMMIT and (last is None or i.requested_time > last))
    if not deltas:
        return False
    by_count = len(deltas) >= cc.INLINE_MAX_DELTA_COMMITS.get(options)
    since = last or deltas[0]
    by_time = _seconds_between(since, now) >= cc.INLINE_MAX_DELTA_SECONDS.get(options)
    trigger = cc.INLINE_TRIGGER_STRATEGY.get(options)
    return {"NUM_COMMITS": by_count, "TIME_ELAPSED": by_time, "NUM_AND_TIME": by_count and by_time,
            "NUM_OR_TIME": by_count or by_time}[trigger]


def _seconds_between(earlier: str, later: str) -> float:
    return (parse_instant_time(later) - parse_instant_time(earlier)).total_seconds()

"""Scan planning (contract C1): a table, columns, filters and a point in time → read tasks.

``plan_scan`` runs on the driver: it pins the snapshot (the resolved ``as_of``, or the latest
completion time), builds the file-system view as of that snapshot, prunes partitions by the
filters, and makes one :class:`~pyhudi.read.task.ReadTask` per file group — or, with
``max_rows_per_task``, one per key range of a large file group (:mod:`pyhudi.read.split`).
Tasks are plain picklable values, so the same plan runs in process or on Spark executors, and a
plan replayed later reads the same data (as long as the cleaner has not removed its files).

Query types (Hudi's names):

- ``snapshot``: the latest merged state (``as_of``: instants completed at or before it);
- ``read_optimized``: base files only (data as of each file group's last compaction);
- ``incremental``: rows whose latest state (as of ``end``) was written by an instant that
  completed in ``(begin, end]``. Rows deleted by ``end`` are not returned (a deletion has no
  state to show); a row changed in the window and changed again after ``end`` shows its state
  as of ``end``.
"""

from __future__ import annotations

import copy
import os
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable

import pyarrow as pa

from pyhudi.config import table as tc
from pyhudi.errors import HudiError, ReadError, SchemaError
from pyhudi.fsview.view import FileGroup, FileSystemView
from pyhudi.read.family_reader import STRATEGIES, FamilyScan
from pyhudi.read.filters import Filter, normalize_filters
from pyhudi.read.damage import decoding, missing_files_error, skip_corrupt_blocks
from pyhudi.read.keys import RECORD_KEY, KeySpec, integer_key_column
from pyhudi.keygen import PartitionLayout, partition_layout
from pyhudi.read.retention import check_time_travel, pinned_batches
from pyhudi.read.pruning import partition_columns_from_path, partition_pruned_groups
from pyhudi.read.skipping import FileSkipper
from pyhudi.read.split import key_splits, split_rows
from pyhudi.read.task import DEFAULT_BATCH_SIZE, FamilyPart, ReadTask, TaskSettings
from pyhudi.schema import META_FIELDS
from pyhudi.timeline.instant import format_instant_time
from pyhudi.timeline.timeline import COMMIT_ACTIONS
from pyhudi.value import Record

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

QUERY_TYPES = ("snapshot", "read_optimized", "incremental")
COMMIT_TIME = META_FIELDS[0]
_TIME_PUNCTUATION = re.compile(r"[-: .T]")


class ScanPlan(Record):
    """The read tasks of one scan, the exact schema of their batches, and the pinned snapshot."""

    schema: pa.Schema
    instant: str | None
    tasks: list[ReadTask]
    query_type: str = "snapshot"
    snapshot: str | None = None
    """The pinned snapshot as a completion time (``instant`` may be a write's requested time)."""
    metrics: dict[str, int]
    """What planning decided: file groups and data files considered and skipped by statistics
    (:mod:`pyhudi.read.skipping`), footers read, ranges taken from commit metadata."""

    def __init__(self, schema: pa.Schema, instant: str | None, tasks: list[ReadTask], query_type: str = "snapshot",
                 snapshot: str | None = None, metrics: dict[str, int] | None = None) -> None:
        self._set(schema=schema, instant=instant, tasks=tasks, query_type=query_type, snapshot=snapshot,
                  metrics={} if metrics is None else metrics)

    def explain(self) -> str:
        """One line per planning step: what was considered and what was skipped."""
        m = self.metrics
        return "\n".join([
            f"{self.query_type} scan as of {self.snapshot or self.instant or 'the empty table'}",
            f"file groups: {m.get('file_groups_considered', 0)} considered, "
            f"{m.get('file_groups_skipped', 0)} skipped by statistics",
            f"files: {m.get('files_considered', 0)} considered, {m.get('files_skipped', 0)} skipped",
            f"statistics: {m.get('footers_read', 0)} footers read, "
            f"{m.get('ranges_from_commit_metadata', 0)} files ranged by commit metadata",
            f"tasks: {len(self.tasks)}",
        ])

    def batches(self) -> Iterator[pa.RecordBatch]:
        for task in self.tasks:
            yield from task.batches()

    def to_reader(self) -> pa.RecordBatchReader:
        """The rows as a stream; while it is open its snapshot is pinned against the cleaner
        (:mod:`pyhudi.read.retention`)."""
        batches = self.batches()
        snapshot = self.snapshot or self.instant
        if self.tasks and snapshot is not None:
            batches = pinned_batches(self.tasks[0].storage, snapshot, batches)
        return pa.RecordBatchReader.from_batches(self.schema, batches)

    def to_table(self, max_workers: int | None = None) -> pa.Table:
        """Every task's rows in one table; tasks run on a thread pool (Arrow releases the GIL)."""
        workers = min(len(self.tasks), max_workers or os.cpu_count() or 1)
        if not len(self.schema):  # counts: tables without columns keep their row counts
            return pa.Table.from_batches(list(self.batches()), schema=self.schema)
        # the whole result is kept: base files may be memory-mapped; with several workers the
        # tasks are the parallelism (Parquet decoding on more threads would only contend)
        collected: dict[int, TaskSettings] = {}  # (tasks share their scan's settings: replaced once)
        tasks = []
        for t in self.tasks:
            settings = collected.get(id(t.settings))
            if settings is None:
                settings = collected[id(t.settings)] = t.settings.replace(memory_map=True, decode_threads=workers <= 1)
            task = copy.copy(t)  # (not ReadTask.replace: its __init__ already shared the bases of t)
            task.settings, task.metrics = settings, {}
            tasks.append(task)
        parts = run_tasks(tasks, workers)
        return pa.concat_tables(parts) if parts else self.schema.empty_table()


def run_tasks(tasks: Sequence[ReadTask], workers: int) -> list[pa.Table]:
    """Run ``tasks`` on ``workers`` threads (the caller's and helpers); results in task order.

    Each thread takes the next task when it finishes one, so unequal file groups balance out.
    The first error stops the remaining tasks and is raised once every helper has stopped.
    """
    if workers <= 1 or len(tasks) <= 1:
        return [task.run() for task in tasks]
    results: list = [None] * len(tasks)
    errors: list[BaseException] = []
    pending = iter(range(len(tasks)))
    lock = threading.Lock()

    def runner() -> None:
        while not errors:
            with lock:
                i = next(pending, None)
            if i is None:
                return
            try:
                results[i] = tasks[i].run()
            except BaseException as exc:  # (raised by the caller's thread, below)
                errors.append(exc)
                return

    wait = _start_helpers(runner, min(workers, len(tasks)) - 1)
    try:
        runner()
    finally:
        wait()
    if errors:
        raise errors[0]
    return results


_POOL: tuple[int, ThreadPoolExecutor] | None = None
_POOL_LOCK = threading.Lock()
_READ_BEFORE: int | None = None  # the pid of a process that has run a parallel read


def _start_helpers(runner: Callable[[], None], count: int) -> Callable[[], None]:
    """Start ``count`` helpers running ``runner``; returns what waits for them.

    A process's first parallel read starts plain threads (~0.06 ms each here): one that reads
    once — the CLI, a script — never imports ``concurrent.futures`` with ``logging``, ~2.3 ms of
    a 0.12 s cold read and part of its exit (issue 15). A process that reads again keeps a pool:
    a submit costs ~0.1 ms less than a thread's start and join, 10% of a warm 2-column read.
    More helpers than cores (an explicit ``max_workers``) are plain threads too.
    """
    pool = _kept_pool() if count < (os.cpu_count() or 1) else None
    if pool is None:
        threads: list[threading.Thread] = []

        def join() -> None:
            for thread in threads:
                thread.join()

        try:
            for n in range(count):
                thread = threading.Thread(target=runner, name=f"pyhudi-read-{n}", daemon=True)
                thread.start()
                threads.append(thread)
        except RuntimeError:  # ("can't start new thread": the caller and the helpers started do the work)
            pass
        return join
    futures = [pool.submit(runner) for _ in range(count)]

    def wait() -> None:
        for future in futures:
            if not future.cancel():  # (one still queued behind other reads has nothing left to do)
                future.result()

    return wait


def _kept_pool() -> ThreadPoolExecutor | None:
    """The process's kept read threads; None at its first parallel read (see
    :func:`_start_helpers`). A forked child starts its own."""
    global _POOL, _READ_BEFORE
    with _POOL_LOCK:
        pid = os.getpid()
        if _POOL is not None and _POOL[0] == pid:
            return _POOL[1]
        if _READ_BEFORE != pid:
            _READ_BEFORE = pid
            return None
        from concurrent.futures import ThreadPoolExecutor  # (a process's second parallel read)

        _POOL = (pid, ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="pyhudi-read"))
        return _POOL[1]


def normalize_time(value: Any, what: str, timezone: str = "UTC") -> str | None:
    """An instant time (17 digits) from ``yyyyMMddHHmmssSSS``, ``yyyyMMddHHmmss`` (Hudi pads it
    with ``999``), ``yyyyMMdd``, their dashed/colon forms, or a ``datetime``; all zeros (``"000"``,
    Hudi's ``00000000000000``): before every instant."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return format_instant_time(value, timezone)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise ReadError(f"{what} must be an instant time string like '20240101120000000', got {value!r}")
    digits = _TIME_PUNCTUATION.sub("", value.strip())
    if digits.isdigit() and not digits.strip("0"):
        return "0" * 17  # the start of time: Hudi's docs begin incremental queries at "000"
    if not digits.isdigit() or len(digits) not in (8, 14, 17):
        raise ReadError(f"{what} {value!r} is not an instant time (yyyyMMddHHmmssSSS, yyyyMMddHHmmss or yyyyMMdd, "
                        "also as ISO text like 2024-01-31 or 2024-01-31T12:00:00.000, or a datetime)")
    return {8: digits + "000000000", 14: digits + "999", 17: digits}[len(digits)]


def resolve_instant_time(timeline: Any, time: str | None) -> str | None:
    """The completion time a point in time stands for.

    Snapshots are pinned by completion time (an instant is in a snapshot if it completed at or
    before it), but a write returns its requested time, which is earlier than its completion: so
    the requested time of a completed instant stands for that instant's completion time, and a
    read ``as_of`` the value a write returned includes that write (and exactly what had completed
    when it completed). Any other time is a completion time as given.
    """
    if time is None:
        return None
    instant = getattr(timeline, "lookup", timeline.get)(time)  # (archived instants too)
    if instant is None or not instant.is_completed:
        return time
    return instant.completion_time or time


def _families_and_schema(table: Any, instant: str | None, timeline: Any):
    instant = resolve_instant_time(timeline, instant)  # (a write's requested time: its completion)
    history = getattr(table, "history", None)
    if history is not None:  # C3, from the timeline this plan listed (not listed again per question)
        schema = history.schema_at(timeline, table.config, instant)
        return schema, history.families_at(timeline, table.config, instant, schema)
    schema = table.schema_at(instant) if hasattr(table, "schema_at") else table.schema  # C3
    if hasattr(table, "families_at"):
        families = table.families_at(instant, schema)  # C3
    else:
        families = table.effective_families(schema)
    return schema, families


def key_spec(config: tc.TableConfig, schema: pa.Schema) -> KeySpec:
    """How a table's record keys are read: its key fields, whether files carry
    ``_hoodie_record_key``, and the integer column whose key codes stand in for it."""
    return KeySpec(tuple(config.record_key_fields), config.populate_meta_fields,
                   integer_key_column(config.record_key_fields, schema, config.get(tc.KEYGEN_TYPE),
                                      config.get(tc.KEYGEN_CLASS)))


def _output_schema(schema: pa.Schema, columns: Sequence[str] | None, with_meta: bool) -> pa.Schema:
    if isinstance(columns, str):
        raise SchemaError(f"columns must be a list of column names, got the string {columns!r}")
    present = set(schema.names)  # (fields looked up by name: iterating a wide schema builds every field)
    wanted = list(columns) if columns is not None else schema.names
    for name in wanted:
        if name not in present and name not in META_FIELDS:
            raise SchemaError(f"column {name!r} is not in the table schema ({', '.join(schema.names)})")
    names = list(dict.fromkeys([*(META_FIELDS if with_meta else ()), *wanted]))
    return pa.schema([schema.field(n) if n in present else pa.field(n, pa.string()) for n in names])


def _family_scans(table: Any, families: dict, schema: pa.Schema, needed: set[str]) -> list[tuple[FamilyScan, tuple]]:
    config = table.config
    keys, partitions = table.record_key_fields, table.partition_fields
    implicit = set(keys) | set(partitions)
    event_time_default = config.merge_mode == "EVENT_TIME_ORDERING"
    meta = [n for n in META_FIELDS if n in needed]
    extra = [c for c in (*keys, *partitions) if c in needed]
    present = set(schema.names)  # (``schema.names`` builds a list on every access)
    scans = []
    for family in families.values():
        own = [c for c in family.columns if c in needed and c not in implicit]
        names = list(dict.fromkeys([*meta, *extra, *own]))
        fields = tuple(schema.field(n) if n in present else pa.field(n, pa.string()) for n in names)
        ordering = family.ordering_field if family.name else (family.ordering_field or config.ordering_field)
        event_time = ordering is not None and (event_time_default or bool(family.name))
        ordering_type = schema.field(ordering).type if ordering in present else None
        scan = FamilyScan(family.name or None, fields, event_time, ordering, ordering_type)
        scans.append((scan, tuple(c for c in family.columns if c not in implicit)))
    return scans


def _dropped_partition_columns(config: Any, partition_fields: Sequence[str]) -> tuple[str, ...]:
    """Partition columns the data files do not store (``hoodie.datasource.write.drop.partition.columns``):
    read from the partition path instead. Key columns are always stored."""
    if not partition_fields or not config.get(tc.DROP_PARTITION_COLUMNS):
        return ()
    return tuple(f for f in partition_fields if f not in config.record_key_fields)


def _window_instants(timeline: Any, begin: str, end: str, end_given: bool = True) -> tuple[str, ...]:
    """Commits completed in ``(begin, end]`` (a write's requested time stands for its completion);
    a ``begin`` after an ``end`` the caller gave is an error."""
    given = (begin, end)
    begin, end = resolve_instant_time(timeline, begin), resolve_instant_time(timeline, end)
    if end_given and begin > end:
        raise ReadError(f"incremental query: begin {given[0]!r} is after end {given[1]!r} "
                        "(rows changed in (begin, end] are returned)")
    return tuple(sorted(
        i.requested_time for i in _completed_since(timeline, begin)
        if i.action in COMMIT_ACTIONS and begin < (i.completion_time or i.requested_time) <= end
    ))


def _completed_since(timeline: Any, begin: str | None) -> list:
    """Completed instants, with the archived ones when ``begin`` reaches before the active
    timeline (archived instants all completed before it: :mod:`pyhudi.services.archive`)."""
    if hasattr(timeline, "reaches_archive") and timeline.reaches_archive(begin):
        return timeline.completed_with_archived()
    return timeline.completed()


def _touched_file_groups(timeline: Any, instants: Sequence[str]) -> set[tuple[str, str]] | None:
    """(partition, file id) written by ``instants`` (None: unknown, read every file group)."""
    touched: set[tuple[str, str]] = set()
    wanted = set(instants)
    if not wanted:
        return touched
    for instant in _completed_since(timeline, min(instants, default=None)):
        if instant.requested_time not in wanted:
            continue
        try:
            metadata = timeline.read_metadata(instant)
        except (HudiError, OSError, ValueError):  # metadata pyhudi cannot decode: do not prune
            return None
        stats = getattr(metadata, "partition_to_write_stats", None)
        if stats is None:
            return None
        for partition, entries in stats.items():
            for stat in entries or ():
                if stat.file_id:
                    touched.add((partition or "", stat.file_id))
    return touched


_PLANS_KEPT = 8
"""Scan plans a table handle keeps for its repeated reads (see :func:`plan_scan`)."""


def plan_scan(table: Any, columns: Sequence[str] | None = None, filters: Sequence[tuple] | None = None,
              as_of: Any = None, query_type: str = "snapshot", begin: Any = None, end: Any = None,
              with_meta: bool = False, *, batch_size: int | None = None, strategy: str = "auto",
              max_rows_per_task: int | None = None, options: Mapping[str, Any] | None = None) -> ScanPlan:
    """Plan a scan of ``table`` (see the module docstring for the query types).

    ``max_rows_per_task`` (or ``hoodie.pyhudi.read.split.rows`` in ``options``) splits file groups
    with more base-file rows into several tasks by key range (:mod:`pyhudi.read.split`).

    A latest-snapshot scan without filters is kept on the table handle: the next one asking the
    same reuses its file-system view and tasks while the timeline lists the same instant files
    (another writer's commit, a clean, a rollback or a compaction all add one) and the data files
    are listed alike (same names, sizes and modification times: a file rewritten from outside is
    noticed, as by a new plan) — the two listings every plan makes anyway are then a warm read's
    planning.
    """
    timeline = _snapshot_listing(table)
    key = _plan_key(table, columns, filters, as_of, query_type, begin, end, with_meta, batch_size, strategy,
                    max_rows_per_task, options)
    kept = _kept_plans(table) if key is not None else None
    if kept is not None:
        found = kept.get(key)
        if found is not None and found[0] == timeline.listing:
            listed, view, plan = found[1]
            if view.data_files() == listed:
                return _fresh_copy(plan)
    plan, view = _plan_scan(table, timeline, columns, filters, as_of, query_type, begin, end, with_meta,
                            batch_size=batch_size, strategy=strategy, max_rows_per_task=max_rows_per_task,
                            options=options)
    if kept is not None:
        if len(kept) >= _PLANS_KEPT and key not in kept:
            kept.pop(next(iter(kept.copy()), None), None)  # (the oldest; another thread may drop it first)
        kept[key] = (timeline.listing, (view.data_files(), view, _fresh_copy(plan)))
    return plan


def _snapshot_listing(table: Any) -> Any:
    """The read's listing, kept as its snapshot: its commits that another process archives
    before the plan reads them (ALTERs, cleans, ...) are read from the archive instead."""
    timeline = table.active_timeline()
    follow = getattr(timeline, "follow_archival", None)
    return follow() if follow is not None else timeline


def _plan_key(table: Any, columns, filters, as_of, query_type, begin, end, with_meta, batch_size, strategy,
              max_rows_per_task, options) -> tuple | None:
    """What a kept plan is looked up by, or None when the scan is not kept (a pinned or
    incremental one, filters, unhashable arguments)."""
    if filters or as_of is not None or begin is not None or end is not None or query_type == "incremental":
        return None
    try:
        key = (tuple(columns) if columns is not None else None, query_type, bool(with_meta), batch_size, strategy,
               max_rows_per_task, tuple(sorted(options.items())) if options else None, id(table.config))
        hash(key)
    except TypeError:
        return None
    return key


def _kept_plans(table: Any) -> dict | None:
    """The table handle's kept plans (None: a handle that takes no attributes)."""
    kept = getattr(table, "_kept_scan_plans", None)
    if kept is None:
        try:
            kept = table._kept_scan_plans = {}
        except AttributeError:
            return None
    return kept


def _fresh_copy(plan: ScanPlan) -> ScanPlan:
    """The plan with its own task objects and counters (runs record metrics on their task)."""
    tasks = []
    for task in plan.tasks:
        task = copy.copy(task)
        task.metrics = {}
        tasks.append(task)
    return plan.replace(tasks=tasks, metrics=dict(plan.metrics))


def _plan_scan(table: Any, timeline: Any, columns: Sequence[str] | None, filters: Sequence[tuple] | None,
               as_of: Any, query_type: str, begin: Any, end: Any, with_meta: bool, *, batch_size: int | None,
               strategy: str, max_rows_per_task: int | None, options: Mapping[str, Any] | None
               ) -> tuple[ScanPlan, FileSystemView]:
    max_rows = split_rows(max_rows_per_task, options)
    if query_type not in QUERY_TYPES:
        raise ReadError(f"unknown query type {query_type!r}: expected one of {', '.join(QUERY_TYPES)}")
    if strategy not in STRATEGIES:
        raise ReadError(f"unknown merge strategy {strategy!r}: expected one of {', '.join(STRATEGIES)}")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0):
        raise ReadError(f"batch_size must be a positive integer, got {batch_size!r}")
    config = table.config
    timezone = config.timezone
    as_of = normalize_time(as_of, "as_of", timezone)
    begin = normalize_time(begin, "begin", timezone)
    end = normalize_time(end, "end", timezone)
    incremental: tuple[str, ...] | None = None
    if query_type == "incremental":
        if begin is None:
            raise ReadError("an incremental query needs a begin instant (rows changed after it are returned)")
        if as_of is not None:
            raise ReadError("an incremental query takes begin/end, not as_of")
        if not config.populate_meta_fields:
            raise ReadError(f"table {table.name!r} has no meta fields (hoodie.populate.meta.fields=false): "
                            "incremental queries need _hoodie_commit_time")
        as_of = end
    elif begin is not None or end is not None:
        raise ReadError(f"begin/end apply to incremental queries, not to a {query_type} query")
    layout = partition_layout(config)
    history = getattr(table, "history", None)
    view = FileSystemView(table.storage, timeline, layout.depth, as_of,
                          family_since=history.families_added(timeline)
                          if history is not None and config.column_families else None)
    pinned = as_of if as_of is not None else view.visibility.latest_completion
    if view.as_of is not None:
        check_time_travel(timeline, view.as_of)  # (a snapshot whose files a clean deleted: refused)
    if query_type == "incremental":
        end = pinned or begin
        incremental = _window_instants(timeline, begin, end, as_of is not None)
    schema, families = _families_and_schema(table, pinned, timeline)
    dropped = _dropped_partition_columns(config, table.partition_fields)
    if dropped:  # (Hudi's schema resolver appends partition columns the recorded schema lacks as strings)
        schema = pa.schema([*schema, *[pa.field(n, pa.string()) for n in dropped if n not in schema.names]])
    output = _output_schema(schema, columns, with_meta)
    filter_schema = _with_meta_fields(schema)
    normalized = normalize_filters(filters, filter_schema)
    needed = set(output.names) | {f.column for f in normalized}
    if incremental is not None:
        needed.add(COMMIT_TIME)
    scans = _family_scans(table, families, schema, needed - set(dropped))
    key_columns = set(table.record_key_fields) | ({RECORD_KEY} if config.populate_meta_fields else set())
    settings = TaskSettings(
        table_schema=filter_schema,
        output=output,
        keys=key_spec(config, schema),
        visibility=view.visibility,
        filters=tuple(normalized),
        key_filters=tuple(f for f in normalized if f.column in key_columns),
        read_optimized=query_type == "read_optimized",
        incremental=incremental,
        batch_size=batch_size or DEFAULT_BATCH_SIZE,
        strategy=strategy,
        skip_corrupt_blocks=skip_corrupt_blocks(options),
    )
    groups = _pruned_groups(table, view, normalized, schema, timeline, incremental, layout)
    skipper = FileSkipper(table.storage, timeline, normalized, filter_schema, frozenset(key_columns),
                          read_optimized=query_type == "read_optimized")
    tasks = []
    has_families = not all(f.is_default for f in families.values())  # (a plain table never gets any)
    rebuilt: dict[str, dict] = {}  # partition path → values of the dropped partition columns
    layout_version = config.layout_version
    planned = []
    for group in groups:
        if group.missing:  # (pruned partitions and untouched file groups are not read: not checked)
            raise missing_files_error(table.storage, group, table, timeline)
        parts = [FamilyPart(scan, group.latest_slice(scan.family, has_families, layout_version), own)
                 for scan, own in scans]
        if not all(p.file_slice.is_empty for p in parts):
            planned.append((group, parts))
    skipper.prefetch([parts for _, parts in planned])
    for group, parts in planned:
        if not skipper.may_match(parts):
            continue
        values = None
        if dropped and needed & set(dropped):
            if not layout.identity:
                raise ReadError(f"table {table.name!r} keeps its partition columns ({', '.join(dropped)}) out of its "
                                f"data files, and its key generator ({layout.kind or 'unknown'}) formats them into "
                                "paths that do not hold their values: they cannot be read")
            values = rebuilt.get(group.partition_path)
            if values is None:
                values = rebuilt[group.partition_path] = partition_columns_from_path(
                    group.partition_path, table.partition_fields, config.hive_style_partitioning, schema,
                    config.get(tc.URL_ENCODE_PARTITIONING))
        task = ReadTask(table.storage, group.partition_path, group.file_id, parts, settings, partition_values=values)
        tasks.extend(_split(task, max_rows) if max_rows else [task])
    return ScanPlan(output, pinned, tasks, query_type, view.as_of or pinned, skipper.metrics), view


_WITH_META: dict[int, tuple[pa.Schema, pa.Schema]] = {}


def _with_meta_fields(schema: pa.Schema) -> pa.Schema:
    """``schema`` after the five meta columns (strings), kept per schema object: the table
    handle's schema history hands out the same object on every read, and inserting five fields
    into a wide schema costs a warm read tens of microseconds."""
    found = _WITH_META.get(id(schema))
    if found is not None and found[0] is schema:
        return found[1]
    out = schema
    for i, name in enumerate(META_FIELDS):  # (inserted: building it from a wide schema's fields costs more)
        out = out.insert(i, pa.field(name, pa.string()))
    if len(_WITH_META) >= 64:
        _WITH_META.clear()
    _WITH_META[id(schema)] = (schema, out)
    return out


def _split(task: ReadTask, max_rows: int) -> list[ReadTask]:
    """The task, or one task per key range when its file group's base file is larger."""
    base = next((p.file_slice.base_file for p in task.families if p.file_slice.base_file is not None), None)
    if base is None:
        return [task]
    settings = task.settings
    with decoding(task.storage, [base.relpath]):  # (its footer is read here, on the driver)
        ranges = key_splits(task.storage, base.relpath, settings.keys, settings.table_schema, max_rows)
    if len(ranges) == 1:
        return [task]
    return [task.replace(key_range=bounds, metrics={}) for bounds in ranges]


def _pruned_groups(table: Any, view: FileSystemView, filters: list[Filter], schema: pa.Schema, timeline: Any,
                   incremental: tuple[str, ...] | None, layout: PartitionLayout) -> list[FileGroup]:
    """File groups that may hold matching rows: partition pruning (values decoded from identity
    paths; TIMESTAMP paths through their format; other key generators never prune), incremental
    touch sets."""
    groups = partition_pruned_groups(view, table.config, filters, schema, layout)
    if incremental is not None:
        if not incremental:
            return []
        touched = _touched_file_groups(timeline, incremental)
        if touched is not None:
            groups = [g for g in groups if (g.partition_path, g.file_id) in touched]
    return groups

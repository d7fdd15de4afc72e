"""Executing a clustering plan (Hudi's ``SparkSortAndSizeExecutionStrategy``), completing it as a
``replacecommit``.

**Execute** (:func:`run_clustering`): requested → inflight with a heartbeat (the instant
lifecycle of :mod:`pyhudi.write.commit`). One :class:`ClusteringTask` per plan group — the local
engine's threads or Spark tasks alike — reads the group's slices merged (base + logs, through the
shared file-slice reader, every record's ``_hoodie_*`` values kept: ``preserveHoodieMetadata``),
orders the rows by the sort columns with ``hoodie.layout.optimize.strategy`` (linear, z-order,
hilbert: :func:`pyhudi.layout.curve_order`, the first column given
``hoodie.pyhudi.layout.optimize.lead.bits`` more bits) — by record key when there are none — and
writes them into ``numOutputFileGroups`` NEW file groups of near-equal row counts (so about
``target.file.max.bytes`` each; a curve's files cut at its cells,
:meth:`~pyhudi.layout.CurveLayout.file_bounds`), named after the clustering instant,
``_hoodie_file_name`` renamed. Memory: a group that fits
``hoodie.pyhudi.clustering.execution.buffer.bytes`` (Arrow bytes) is ordered in memory as above; a larger one is ordered in sorted runs spilled to
``.hoodie/.temp/<instant>/.spill/`` and merged back streaming, in exactly the same order, into
files rolled at ``target.file.max.bytes`` — a curve's cut at the same cells as in memory, from its
rows counted per cell while spilling (:mod:`~pyhudi.services.clustering_sort` states the
bound: about twice the budget + one output row group, whatever the group's size).

**Key order.** Files ordered by record key declare it (Parquet ``sorting_columns``), so readers
sort-merge their log files later; files ordered by sort columns declare those columns (linear)
or nothing (curves), and readers of a merge-on-read group then merge by hash — both read right.

**Complete**: a ``replacecommit`` (``<t>_<completion>.replacecommit``) whose
``HoodieReplaceCommitMetadata`` has the new files' write stats, ``partitionToReplaceFileIds`` (every
input file group), operation type ``CLUSTER``, the writer schema, and under
:data:`~pyhudi.read.skipping.COLUMN_RANGES_KEY` each written file's rows and min/max/nulls per sort column
(what data skipping reads instead of the file's footer).
Writes committed to an input group after the plan (allow mode, ``SparkAllowUpdateStrategy``;
reject mode refuses them) are carried over by key into the new file groups in the same
replacecommit (:mod:`pyhudi.services.clustering_carry`); where that is not safe (another
replacecommit replaced an input group, a schema change, or
``hoodie.clustering.rollback.pending.replacecommit.on.conflict=true``) the clustering aborts and is
rolled back (plan dropped, rollback instant written) rather than lose their rows.

A failed run deletes what it wrote (markers) and goes back to requested; a killed one (inflight,
heartbeat gone) is rolled back the same way and re-executed from its plan — never re-planned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.config import clustering as cl
from pyhudi.config import table as tc
from pyhudi.config.concurrency import HEARTBEAT_INTERVAL_MS, HEARTBEAT_TOLERABLE_MISSES
from pyhudi.config.write import PARQUET_BLOCK_SIZE
from pyhudi.context import TableContext
from pyhudi.engine.base import Engine, get_engine
from pyhudi.errors import ClusteringConflictError, ConcurrentWriteError, CorruptFileError, TimelineError
from pyhudi.fsview.view import FileGroup, FileSlice, FileSystemView, Visibility
from pyhudi.keygen import partition_layout
from pyhudi.layout import check_lead_bits, curve_layout
from pyhudi.logformat.parquet_options import constant_strings, parquet_options_for
from pyhudi.read.file_slice import read_file_slices
from pyhudi.read.skipping import COLUMN_RANGES_KEY, encode_column_ranges
from pyhudi.read.skipping import column_ranges as skipping_ranges
from pyhudi.read.task import READ_BATCH_SIZE
from pyhudi.schema import META_FIELDS, avro_schema_json
from pyhudi.services.clustering_carry import CarryOver, complete_carrying, refuse_replaced_inputs
from pyhudi.services.clustering_output import SizedFiles
from pyhudi.services.clustering_sort import CURVE, CellCounts, CurveMapping, ExternalSort, SortKey
from pyhudi.services.clustering import (
    CLUSTER_OPERATION,
    LAYOUT_PARAM,
    LEAD_BITS_PARAM,
    check_clusterable,
    check_execution_strategy,
    plan_sort_columns,
    sort_columns_of,
)
from pyhudi.storage.naming import BaseFileName, WriteToken, marker_dir, new_file_id
from pyhudi.services.execution import recover_inflight, undo_execution
from pyhudi.timeline.instant import Action, Instant
from pyhudi.timeline.metadata import CommitMetadata, ReplaceCommitMetadata
from pyhudi.timeline.metadata_plans import ClusteringGroup, ClusteringPlan
from pyhudi.timeline.timeline import Timeline
from pyhudi.write.client import write_stat_of
from pyhudi.write.commit import ActiveInstant
from pyhudi.write.handle import KIND_CREATE, META_PARQUET_OPTIONS, WriteStatus
from pyhudi.write.markers import IO_CREATE, create_marker
from pyhudi.write.rollback import rollback_instant

RECORD_KEY = META_FIELDS[2]
_NAME_INDEX = len(META_FIELDS) - 1
SPILL_FOLDER = ".spill"
"""Under the instant's ``.hoodie/.temp/<instant>/``: the sorted runs of groups over the budget."""
Ranges = dict[str, Any]
"""One written file's :func:`~pyhudi.read.skipping.column_ranges` of the sort columns."""


# ------------------------------------------------------------------------------ one group
@dataclass
class ClusteringTask:
    """Rewrite one plan group into ``len(file_ids)`` new file groups. Picklable: the local and
    Spark engines run it alike."""

    context: TableContext
    instant: str
    partition_path: str
    slices: list[FileSlice]
    file_ids: list[str]
    write_token: str
    sort_columns: list[str]
    layout: str
    curve_method: str
    sample_size: int
    visibility: Visibility

    buffer_bytes: int = cl.EXECUTION_BUFFER_BYTES.default
    target_file_bytes: int = cl.TARGET_FILE_MAX_BYTES.default
    lead_bits: int = cl.LAYOUT_LEAD_BITS.default

    def run(self) -> list[tuple[WriteStatus, Ranges]]:
        sort = [c for c in self.sort_columns if c in self._columns()]  # (not dropped partition columns)
        table, row_bytes = self._rows_within(self.buffer_bytes)
        if table is None:
            return self._run_spilled(sort, row_bytes)
        count = max(1, min(len(self.file_ids), table.num_rows))
        if sort:  # files cut at the curve's cell boundaries, so each file's min/max stays tight
            layout = curve_layout(table, sort, self.layout, method=self.curve_method, sample_size=self.sample_size,
                                  lead_bits=self.lead_bits)
            table, bounds = table.take(layout.order), layout.file_bounds(count)
        else:
            table = table.take(pc.sort_indices(table, [(RECORD_KEY, "ascending")]))
            bounds = [round(i * table.num_rows / count) for i in range(count + 1)]
        return [self._write(self.file_ids[i], table.slice(low, high - low))
                for i, (low, high) in enumerate(zip(bounds, bounds[1:])) if high > low]

    def _columns(self) -> list[str]:
        config = self.context.config
        drop = config.get(tc.DROP_PARTITION_COLUMNS)
        dropped = set() if not drop else set(config.partition_fields) - set(config.record_key_fields)
        return [c for c in self.context.schema.names if c not in dropped]

    def _batches(self, columns: Sequence[str] | None = None, batch_size: int = READ_BATCH_SIZE):
        """The group's live records in read order, slice after slice (each slice merged): every
        column with the meta values as stored, or only ``columns`` (a curve's first passes)."""
        wanted = self._columns() if columns is None else list(columns)
        for file_slice in self.slices:
            yield from read_file_slices(self.context, [file_slice], self.visibility, columns=wanted,
                                        with_meta=columns is None, batch_size=batch_size)

    def _rows_within(self, budget: int) -> tuple[pa.Table | None, float]:
        """The whole group as one table if it fits the budget; else None and its bytes per row."""
        batches, held, rows = [], 0, 0
        for batch in self._batches():
            batches.append(batch)
            held, rows = held + batch.nbytes, rows + batch.num_rows
            if held > budget:
                return None, held / max(1, rows)
        if not batches:
            schema = read_file_slices(self.context, [self.slices[0]], self.visibility, columns=self._columns(),
                                      with_meta=True).schema
            return schema.empty_table(), 0.0
        return pa.Table.from_batches(batches).combine_chunks(), held / max(1, rows)

    def _run_spilled(self, sort: list[str], row_bytes: float) -> list[tuple[WriteStatus, Ranges]]:
        """A group over the budget: sorted runs spilled under the instant's temporary folder and
        merged into files of about ``target_file_bytes`` (:mod:`~pyhudi.services.clustering_sort`)."""
        run_rows = max(1, int(self.buffer_bytes // 2 // (row_bytes + 16)))  # a run and its sorted copy
        batch_rows = max(1, min(READ_BATCH_SIZE, run_rows // 4))
        curve = cells = None
        if sort and self.layout != "linear":
            curve = CurveMapping(self.layout, sort, self.curve_method, self.sample_size,
                                 lambda: self._batches(sort, batch_rows), self.lead_bits)
            cells = CellCounts(curve.index_bits, len(self.file_ids))
        key = SortKey(sort, self.layout, curve)
        spill = ExternalSort(self.context.storage, f"{marker_dir(self.instant)}/{SPILL_FOLDER}/{self.write_token}",
                             key, run_rows)
        try:
            seen = 0
            for batch in self._batches(None, batch_rows):
                decorated = key.decorate(batch, seen)
                if cells is not None:  # (the curve's files are cut at its cells, as in memory)
                    cells.add(decorated.column(CURVE).to_numpy())
                spill.add(decorated)
                seen += batch.num_rows
            strict = not sort and _keys_strictly_increase(spill.merged([RECORD_KEY]))
            files = SizedFiles(self.context, self.instant, self.partition_path, self.write_token, self.file_ids,
                               sort, lambda first: self._stream_order(first, strict), self.target_file_bytes,
                               min(PARQUET_BLOCK_SIZE.default, self.buffer_bytes // 4, self.target_file_bytes),
                               cells.bounds() if cells is not None else None)
            try:
                for window in spill.merged():
                    files.add(key.strip(window))
                return files.close()
            except BaseException:
                files.abort()
                raise
        finally:
            spill.cleanup()

    def _stream_order(self, rows: pa.Table, strict: bool) -> list[pq.SortingColumn] | None:
        """:meth:`_declared_order` for streamed files: key order only if no key repeats in the group."""
        if not self.sort_columns:
            return [pq.SortingColumn(META_FIELDS.index(RECORD_KEY))] if strict else None
        return self._declared_order(rows)

    def _write(self, file_id: str, rows: pa.Table) -> tuple[WriteStatus, Ranges]:
        started = time.perf_counter()
        storage = self.context.storage
        name = BaseFileName(file_id, self.write_token, self.instant, None).name
        relpath = f"{self.partition_path}/{name}" if self.partition_path else name
        names = constant_strings(name, rows.num_rows).dictionary_decode()
        rows = rows.set_column(_NAME_INDEX, META_FIELDS[_NAME_INDEX], names)
        keys = rows.column(RECORD_KEY)
        create_marker(storage, self.instant, self.partition_path, name, IO_CREATE)
        options = parquet_options_for(rows, fixed=META_PARQUET_OPTIONS,
                                      delta_columns=self.context.config.record_key_fields)
        per_row = max(1, rows.nbytes // max(1, rows.num_rows))
        with storage.open_output(relpath) as sink:
            pq.write_table(rows, sink, row_group_size=max(1, PARQUET_BLOCK_SIZE.default // per_row),
                           sorting_columns=self._declared_order(rows), **options)
        sorted_by = [c for c in self.sort_columns if c in rows.column_names]
        ranges = skipping_ranges(rows, sorted_by) if sorted_by else {}
        status = WriteStatus(
            instant=self.instant, partition_path=self.partition_path, file_id=file_id, family="", file_name=name,
            kind=KIND_CREATE, num_records=rows.num_rows, num_inserts=rows.num_rows, num_updates=0, num_deletes=0,
            bytes_written=storage.size(relpath), base_file="", prev_commit="null", is_new_file_group=True,
            elapsed_ms=int((time.perf_counter() - started) * 1000),
            min_key=pc.min(keys).as_py(), max_key=pc.max(keys).as_py(),
        )
        return status, ranges

    def _declared_order(self, rows: pa.Table) -> list[pq.SortingColumn] | None:
        """What the file may declare: record key order (strictly increasing keys only), or the
        sort columns of a linear layout."""
        if not self.sort_columns:
            keys = rows.column(RECORD_KEY).combine_chunks()
            n = len(keys)
            if n < 2 or pc.all(pc.greater(keys.slice(1), keys.slice(0, n - 1))).as_py():
                return [pq.SortingColumn(META_FIELDS.index(RECORD_KEY))]
            return None
        if self.layout == "linear":
            return [pq.SortingColumn(rows.column_names.index(c)) for c in self.sort_columns]
        return None


def _keys_strictly_increase(windows) -> bool:
    """Whether the record keys of the ordered windows never repeat (a vectorized check per window)."""
    last = None
    for window in windows:
        keys = window.column(RECORD_KEY).combine_chunks()
        n = len(keys)
        if last is not None and n and not pc.greater(keys[0], last).as_py():
            return False
        if n > 1 and not pc.all(pc.greater(keys.slice(1), keys.slice(0, n - 1))).as_py():
            return False
        last = keys[n - 1] if n else last
    return True


def _group_slices(groups: Mapping[tuple[str, str], FileGroup], group: ClusteringGroup) -> list[FileSlice]:
    """The slices a plan group names, from the listing (an error naming a missing file: a plan
    never silently clusters less)."""
    out = []
    for info in group.slices or ():
        key = (info.partition_path or "", info.file_id or "")
        found = {}
        if key in groups:
            found = {f.name.name: f for f in (*groups[key].base_files, *groups[key].log_files)}
        base_name = (info.data_file_path or "").rsplit("/", 1)[-1]
        log_names = [p.rsplit("/", 1)[-1] for p in info.delta_file_paths or ()]
        missing = [n for n in ([base_name] if base_name else []) + log_names if n not in found]
        if missing:
            where = f"{key[0]}/{missing[0]}" if key[0] else missing[0]
            raise CorruptFileError(f"clustering plan names {where}, which is not a visible data file of the table")
        logs = sorted((found[n] for n in log_names), key=lambda lf: lf.sort_key())
        out.append(FileSlice(key[0], key[1], None, found[base_name] if base_name else None, logs))
    return out


def _tasks(context: TableContext, view: FileSystemView, instant: str, plan: ClusteringPlan,
           sort_columns: list[str], layout: str, options: Mapping[str, str]) -> list[ClusteringTask]:
    groups = {(g.partition_path, g.file_id): g for g in view.file_groups()}
    params = (plan.strategy.strategy_params if plan.strategy else None) or {}
    lead_bits = check_lead_bits(cl.LAYOUT_LEAD_BITS.parse(params.get(LEAD_BITS_PARAM))
                                if LEAD_BITS_PARAM in params else cl.LAYOUT_LEAD_BITS.get(options))
    tasks = []
    for index, group in enumerate(plan.input_groups or ()):
        slices = [s for s in _group_slices(groups, group) if not s.is_empty]
        if not slices:
            continue
        outputs = max(1, group.num_output_file_groups or 1)
        tasks.append(ClusteringTask(
            context, instant, slices[0].partition_path, slices, [new_file_id(0) for _ in range(outputs)],
            str(WriteToken(index, 0, 0)), sort_columns, layout, cl.CURVE_BUILD_METHOD.get(options),
            cl.CURVE_SAMPLE_SIZE.get(options), view.visibility, cl.EXECUTION_BUFFER_BYTES.get(options),
            cl.TARGET_FILE_MAX_BYTES.get(options), lead_bits))
    return tasks


def _replace_metadata(context: TableContext, plan: ClusteringPlan,
                      results: Sequence[tuple[WriteStatus, Ranges]]) -> ReplaceCommitMetadata:
    statuses = [s for s, _ in results]
    ranges = {s.file_name: r for s, r in results if r}
    extra = dict(plan.extra_metadata or {})
    if ranges:
        extra[COLUMN_RANGES_KEY] = encode_column_ranges(ranges)
    commit = CommitMetadata.from_write_stats(
        [write_stat_of(s) for s in statuses], operation_type=CLUSTER_OPERATION,
        schema=avro_schema_json(context.schema, context.config.name), extra_metadata=extra)
    replaced: dict[str, list[str]] = {}
    for partition, file_id in plan.file_groups():
        replaced.setdefault(partition, []).append(file_id)
    return ReplaceCommitMetadata(
        partition_to_write_stats=commit.partition_to_write_stats, compacted=False,
        extra_metadata=commit.extra_metadata, version=1, operation_type=CLUSTER_OPERATION,
        partition_to_replace_file_ids={p: sorted(ids) for p, ids in sorted(replaced.items())})


def run_clustering(context: TableContext, timeline: Timeline, instant: str, *, engine: str | Engine | None = None,
                   options: Mapping[str, str] | None = None) -> Instant:
    """Execute the clustering planned at ``instant``; returns the completed ``replacecommit``.

    An inflight clustering whose executor is gone (heartbeat expired, or naming a dead process
    of this host) is rolled back to requested first and executed again from the same plan; one
    whose executor is alive is refused (:class:`ConcurrentWriteError`).
    """
    options = {**context.config.props, **(options or {})}
    check_clusterable(context)
    storage = context.storage
    pending = timeline.get(instant)
    if pending is None or pending.action is not Action.CLUSTERING:
        done = pending is not None and pending.is_completed and pending.is_clustering
        raise TimelineError(f"no pending clustering at {instant}" + (": it completed already" if done else ""))
    interval, misses = HEARTBEAT_INTERVAL_MS.get(options), HEARTBEAT_TOLERABLE_MISSES.get(options)
    if pending.is_inflight:
        pending = recover_inflight(storage, timeline, pending, interval, misses, "clustering")
    plan = timeline.read_metadata(pending.as_requested()).clustering_plan
    check_execution_strategy(plan.strategy.strategy_class_name if plan.strategy else None)
    sort_columns = sort_columns_of(context, plan_sort_columns(plan), options)
    params = (plan.strategy.strategy_params if plan.strategy else None) or {}
    layout = params.get(LAYOUT_PARAM) or cl.LAYOUT_OPTIMIZE_STRATEGY.get(options)
    layout = cl.LAYOUT_OPTIMIZE_STRATEGY.parse(layout)
    try:
        active = ActiveInstant.resume(storage, timeline, pending, heartbeat_interval_ms=interval,
                                      heartbeat_misses=misses)
    except TimelineError:  # another runner moved it to inflight first: it is that runner's now
        raise ConcurrentWriteError(f"clustering {instant} was started by another runner meanwhile; it is not "
                                   "run twice") from None
    try:
        refuse_replaced_inputs(instant, plan, timeline)
        view = FileSystemView(storage, timeline, partition_layout(context.config).depth,
                              family_since=context.family_since)
        tasks = _tasks(context, view, instant, plan, sort_columns, layout, options)
        results = [r for batch in get_engine(engine).run_tasks(tasks) for r in batch]
        carry = CarryOver(context, instant, plan, tasks, results, options)
        return complete_carrying(active, timeline, carry,
                                 lambda done: _replace_metadata(context, plan, done).to_avro_bytes())
    except ClusteringConflictError:  # its inputs changed: the plan is stale, so it is dropped
        active.abort(lambda: _roll_back(storage, timeline, instant))
        raise
    except BaseException:
        active.abort(lambda: undo_execution(storage, timeline, instant))
        raise


def _roll_back(storage: Any, timeline: Timeline, instant: str) -> None:
    """Roll the clustering back entirely (files by markers, a ``rollback`` instant, the plan
    gone): the next clustering plans those file groups anew, with what the write added."""
    current = timeline.reload().get(instant)
    if current is not None and current.is_pending:
        rollback_instant(storage, timeline, current)



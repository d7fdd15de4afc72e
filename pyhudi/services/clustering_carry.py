"""Completing a clustering whose input file groups were written after its plan: carry-over.

With ``hoodie.clustering.updates.strategy=SparkAllowUpdateStrategy`` writers update and delete
keys of file groups under pending clustering (:mod:`pyhudi.write.clustering_guard`). The
clustering's tasks rewrote the groups as the plan saw them, so completing the replacecommit as
is would hide what those writes added. Instead, at completion the clustering **carries them
over by key** into its new file groups, in the same replacecommit:

- the *later writes* are the commits that completed after the plan (requested time) and wrote
  into an input group (:func:`later_writes`);
- for each plan group they touched, the touched input groups are read as of the listing —
  their latest slices merged (base + logs, ``_hoodie_*`` values as the writes stored them),
  which is exactly what a reader would see of those keys without the clustering;
- each output file of the group drops every key those input groups held at plan time or hold
  now, takes back the current rows of its own keys, and is ordered and written again (a new
  write token of the same file group; the previous version, never committed, is deleted); keys
  new to the groups (inserts planned before the clustering was scheduled) go to the group's
  smallest output file. Write stats, column ranges and markers cover exactly the final files.

**Passes.** A pass reads a listing without holding the timeline lock; the commit's precondition
(under the lock) then finds no later write the pass has not carried — or another pass runs.
The last pass runs under the lock, so the clustering always lands in boundedly many passes.

**When carry-over is not safe** the clustering aborts and is rolled back (plan dropped, rollback
instant written: nothing any write wrote is lost, the next clustering plans the groups anew):
another replacecommit replaced an input group, a later write changed the table schema, or
``hoodie.clustering.rollback.pending.replacecommit.on.conflict=true`` asks for Hudi's rollback.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.config import clustering as cl
from pyhudi.context import TableContext
from pyhudi.errors import ClusteringConflictError
from pyhudi.fsview.view import FileSystemView
from pyhudi.keygen import partition_layout
from pyhudi.layout import curve_order
from pyhudi.read.file_slice import read_file_slices
from pyhudi.read.task import READ_BATCH_SIZE
from pyhudi.schema import META_FIELDS, avro_schema_json
from pyhudi.storage.naming import WriteToken
from pyhudi.timeline.instant import Instant
from pyhudi.timeline.metadata import ReplaceCommitMetadata
from pyhudi.timeline.metadata_plans import ClusteringPlan
from pyhudi.timeline.timeline import Locked, Timeline
from pyhudi.write.commit import ActiveInstant

if TYPE_CHECKING:
    from pyhudi.services.clustering_run import ClusteringTask, Ranges
    from pyhudi.write.handle import WriteStatus

RECORD_KEY = META_FIELDS[2]
OPTIMISTIC_PASSES = 3
"""Carry-over passes without the lock before the last one, which holds it."""

Group = tuple[str, str]


@dataclass(frozen=True)
class LaterWrite:
    """A commit completed after a clustering's plan that wrote into (or replaced) input groups."""

    instant: Instant
    groups: frozenset[Group]
    replaced: bool
    schema: str | None


class InputsChangedError(ClusteringConflictError):
    """Internal to a clustering's completion: later writes the current pass has not carried."""


def later_writes(instant: str, plan: ClusteringPlan, current: Timeline) -> list[LaterWrite]:
    """The commits completed after ``instant``'s plan that wrote into or replaced an input group."""
    inputs = set(plan.file_groups())
    out = []
    for other in sorted(current.completed(), key=lambda i: i.sort_time):
        if other.requested_time == instant or (other.completion_time or other.requested_time) <= instant:
            continue
        if str(other.action) not in ("commit", "deltacommit", "replacecommit"):
            continue
        metadata = current.read_metadata(other)
        written = {(p, f) for p, ids in (getattr(metadata, "partition_file_ids", lambda: {})() or {}).items()
                   for f in ids}
        replaced = metadata.replaced_file_groups() if isinstance(metadata, ReplaceCommitMetadata) else set()
        hit = inputs & (written | replaced)
        if hit:
            out.append(LaterWrite(other, frozenset(hit), bool(inputs & replaced), getattr(metadata, "schema", None)))
    return out


def conflict(instant: str, write: LaterWrite, why: str = "") -> ClusteringConflictError:
    """The error of a clustering that cannot complete over ``write``: it is rolled back."""
    partition, file_id = sorted(write.groups)[0]
    other = write.instant
    return ClusteringConflictError(
        f"clustering {instant} cannot complete: {other.action} {other.requested_time} changed its input file "
        f"group {file_id} of partition {partition!r} after the plan was made{why}; the clustering is rolled back "
        "(its plan is dropped, nothing that write wrote is lost) and the next clustering plans the group anew")


def refuse_replaced_inputs(instant: str, plan: ClusteringPlan, current: Timeline) -> None:
    """Before executing: a plan whose input groups another replacecommit replaced (two schedulers
    racing, or another engine's writer) cannot run at all — it is rolled back."""
    for write in later_writes(instant, plan, current):
        if write.replaced:
            raise conflict(instant, write)


@dataclass
class CarryOver:
    """A clustering's output as carried over so far: ``results`` hold the current version of
    every output file, ``carried`` the later writes already in them."""

    context: TableContext
    instant: str
    plan: ClusteringPlan
    tasks: Sequence[ClusteringTask]
    results: list[tuple[WriteStatus, Ranges]]
    options: Mapping[str, str]
    carried: set[str] = field(default_factory=set)
    dropped: dict[int, pa.Array] = field(default_factory=dict)  # per task: keys replaced by current rows
    passes: int = 0

    # ------------------------------------------------------------------ decisions
    def check(self, current: Timeline) -> None:
        """Precondition of the commit (under the lock): every later write is carried; one that
        cannot be is a :class:`ClusteringConflictError` (the clustering is rolled back)."""
        fresh = [w for w in later_writes(self.instant, self.plan, current)
                 if w.instant.requested_time not in self.carried]
        if not fresh:
            return
        self._refuse_uncarriable(fresh)
        raise InputsChangedError(f"clustering {self.instant}: later writes to carry over: "
                                 + ", ".join(w.instant.requested_time for w in fresh))

    def _refuse_uncarriable(self, writes: Sequence[LaterWrite]) -> None:
        own_schema = avro_schema_json(self.context.schema, self.context.config.name)
        for write in writes:
            if write.replaced:
                raise conflict(self.instant, write)
            if cl.ROLLBACK_PENDING_ON_CONFLICT.get(self.options):
                raise conflict(self.instant, write, f" ({cl.ROLLBACK_PENDING_ON_CONFLICT.key}=true)")
            if write.schema is not None and write.schema != own_schema:
                raise conflict(self.instant, write, " and changed the table schema")
        if not self.tasks or any(not self._task_of(g) for w in writes for g in w.groups):
            raise conflict(self.instant, writes[0], " (a group this clustering wrote nothing for)")

    def _task_of(self, group: Group) -> list[int]:
        return [i for i, t in enumerate(self.tasks) if group in {(s.partition_path, s.file_id) for s in t.slices}]

    # ------------------------------------------------------------------ one pass
    def catch_up(self, current: Timeline) -> None:
        """Carry every later write of ``current`` into the output files."""
        writes = later_writes(self.instant, self.plan, current)
        self._refuse_uncarriable(writes)
        touched = {g for w in writes for g in w.groups}
        self.passes += 1
        view = FileSystemView(self.context.storage, current, partition_layout(self.context.config).depth,
                              family_since=self.context.family_since)
        groups = {(g.partition_path, g.file_id): g for g in view.file_groups({p for p, _ in touched})}
        for index, task in enumerate(self.tasks):
            hit = [s for s in task.slices if (s.partition_path, s.file_id) in touched]
            if hit:
                now = [groups[(s.partition_path, s.file_id)].latest_slice(None, False)
                       for s in hit if (s.partition_path, s.file_id) in groups]
                self._carry_task(index, task, hit, [s for s in now if not s.is_empty], view)
        self.carried |= {w.instant.requested_time for w in writes}

    def _read(self, task: ClusteringTask, slices: Sequence, view: FileSystemView, columns: list[str]) -> pa.Table:
        tables = [read_file_slices(self.context, [s], view.visibility, columns=columns, with_meta=True,
                                   batch_size=READ_BATCH_SIZE).read_all() for s in slices]
        return pa.concat_tables(tables).combine_chunks() if tables else None

    def _carry_task(self, index: int, task: ClusteringTask, planned: Sequence, now_slices: Sequence,
                    view: FileSystemView) -> None:
        """Rewrite the task's output files so the touched groups' keys hold their current rows."""
        columns = task._columns()
        before = self._read(task, planned, view, columns)  # (the plan's slices: still on storage)
        now = self._read(task, now_slices, view, columns) if now_slices else None
        keys = [before.column(RECORD_KEY)] if before is not None else []
        if now is not None:
            keys.append(now.column(RECORD_KEY))
        if index in self.dropped:
            keys.append(self.dropped[index])
        drop = pc.unique(pa.chunked_array(keys, pa.string()).combine_chunks())
        self.dropped[index] = drop
        outputs = [(i, r) for i, r in enumerate(self.results) if r[0].file_id in task.file_ids]
        tables = {i: self._output_rows(r[0]) for i, r in outputs}
        placed = []
        rewritten: dict[int, pa.Table] = {}
        for i, rows in tables.items():
            if now is not None:
                mine = now.filter(pc.is_in(now.column(RECORD_KEY), value_set=rows.column(RECORD_KEY)))
                placed.append(mine.column(RECORD_KEY))
            else:
                mine = None
            kept = rows.filter(pc.invert(pc.is_in(rows.column(RECORD_KEY), value_set=drop)))
            rewritten[i] = kept if mine is None or not mine.num_rows else pa.concat_tables(
                [kept, mine.select(kept.column_names).cast(kept.schema)])
        if now is not None:
            seen = pa.chunked_array(placed, pa.string()).combine_chunks() if placed else pa.array([], pa.string())
            new = now.filter(pc.invert(pc.is_in(now.column(RECORD_KEY), value_set=seen)))
            if new.num_rows:
                self._place_new(task, new, rewritten)
        self._write_back(index, task, rewritten)

    def _place_new(self, task: ClusteringTask, new: pa.Table, rewritten: dict[int, pa.Table]) -> None:
        """Keys new to the groups go to the group's smallest output file (its first file id when
        the group has none left)."""
        if rewritten:
            smallest = min(rewritten, key=lambda i: rewritten[i].num_rows)
            rows = rewritten[smallest]
            rewritten[smallest] = pa.concat_tables([rows, new.select(rows.column_names).cast(rows.schema)])
        else:
            rewritten[-1] = new

    def _output_rows(self, status: WriteStatus) -> pa.Table:
        with self.context.storage.open_input(status.relpath) as source:
            return pq.read_table(source)

    def _write_back(self, index: int, task: ClusteringTask, rewritten: dict[int, pa.Table]) -> None:
        token = WriteToken.parse(task.write_token)
        writer = replace(task, write_token=str(WriteToken(token.task_partition, token.stage, self.passes)))
        gone = []
        for i, rows in sorted(rewritten.items()):
            old = self.results[i][0] if i >= 0 else None
            if rows.num_rows:
                file_id = old.file_id if old is not None else task.file_ids[0]
                result = writer._write(file_id, _ordered(task, rows))
                if old is None:
                    self.results.append(result)
                else:
                    self.results[i] = result
            elif old is not None:
                gone.append(i)
            if old is not None:
                self.context.storage.delete(old.relpath)  # the previous version, never committed
        self.results[:] = [r for i, r in enumerate(self.results) if i not in gone]


def _ordered(task: ClusteringTask, rows: pa.Table) -> pa.Table:
    """The rows in the task's order (sort columns along its layout, else record key)."""
    sort = [c for c in task.sort_columns if c in rows.column_names]
    if sort:
        order = curve_order(rows, sort, task.layout, method=task.curve_method, sample_size=task.sample_size,
                            lead_bits=task.lead_bits)
    else:
        order = pc.sort_indices(rows, [(RECORD_KEY, "ascending")])
    return rows.take(order)


def complete_carrying(active: ActiveInstant, timeline: Timeline, carry: CarryOver,
                      content_of: Callable[[Sequence[tuple[WriteStatus, Ranges]]], bytes]) -> Instant:
    """Complete the clustering, carrying later writes over first when there are any; the last
    pass holds the timeline lock from the listing it reads to the completed instant."""
    for attempt in range(OPTIMISTIC_PASSES + 1):
        last = attempt == OPTIMISTIC_PASSES
        with Locked(timeline.lock) if last else nullcontext():
            if attempt:
                carry.catch_up(timeline.reload())
            try:
                return active.commit(content_of(carry.results), precondition=carry.check)
            except InputsChangedError:
                if last:
                    raise
    raise AssertionError("unreachable")

"""The write client: one commit of upserts / inserts / deletes on a bucketed merge-on-read table.

Steps (DESIGN §3, RFC-80 "Writing data"), each vectorised over Arrow:
prepare (conform to the schema, record keys, partition paths) → bucketize (Java-compatible
bucket id per row) → per family: keep the latest row per key (event time on the family's
ordering column, else arrival order) and sort by key → split into (partition, bucket) file
groups → engine runs one :class:`FileGroupWriteTask` per file group → commit (deltacommit with
every write stat and the writer schema). A failure anywhere rolls the instant back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.config.families import ColumnFamily
from pyhudi.engine.base import Engine, get_engine
from pyhudi.errors import ConfigError, SchemaError
from pyhudi.evolution import check_schema_unchanged, commit_extra_metadata
from pyhudi.fsview.view import FileGroup, FileSystemView
from pyhudi.index.bucket import bucket_ids
from pyhudi.schema import META_FIELDS, avro_schema_json
from pyhudi.storage.naming import PARTITION_METAFILE, bucket_file_id
from pyhudi.timeline.instant import Action, Instant
from pyhudi.timeline.metadata import CommitMetadata, RuntimeStats, WriteStat
from pyhudi.write import prepare
from pyhudi.write.handle import KIND_APPEND, KIND_CREATE, KIND_DELETE, FamilyPayload, FileGroupWriteTask, WriteStatus
from pyhudi.write.markers import delete_markers
from pyhudi.write.rollback import (
    FAILED_WRITES_POLICY,
    HEARTBEAT_INTERVAL_MS,
    HEARTBEAT_TOLERABLE_MISSES,
    Heartbeat,
    rollback_failed_writes,
    rollback_instant,
)

RECORD_KEY = META_FIELDS[2]
_PARTITION = "__pyhudi_partition"
_BUCKET = "__pyhudi_bucket"
OPERATIONS = {"upsert": "UPSERT", "insert": "INSERT", "bulk_insert": "BULK_INSERT", "delete": "DELETE"}


@dataclass
class WriteResult:
    """What a commit did, returned to the caller and passed to commit callbacks."""

    instant: str
    operation: str
    completion_time: str
    statuses: list[WriteStatus]
    elapsed_ms: int
    rolled_back: list[str] = field(default_factory=list)

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


def _family_file_columns(family: ColumnFamily, key_fields: Sequence[str], partition_fields: Sequence[str]) -> list[str]:
    cols = list(key_fields)
    cols += [p for p in partition_fields if p not in cols]
    cols += [c for c in family.columns if c not in cols]
    return cols


class WriteClient:
    """Writes commits to one table with one engine (``"local"`` by default, or ``"spark"``)."""

    def __init__(self, table: Any, engine: str | Engine | None = None, options: Mapping[str, Any] | None = None,
                 on_commit: Callable[[WriteResult], None] | None = None) -> None:
        self.table = table
        self.engine = get_engine(engine)
        self.options = {**table.properties, **{k: str(v) for k, v in (options or {}).items()}}
        self.on_commit = on_commit
        if table.num_buckets is None:
            raise ConfigError(
                f"table {table.name!r} has no bucket index: pyhudi writes bucketed merge-on-read tables "
                "(create it with num_buckets=...)"
            )

    # ------------------------------------------------------------------ public
    def write(self, data: Any, operation: str) -> WriteResult:
        if operation not in OPERATIONS:
            raise ConfigError(f"unknown write operation {operation!r}: expected one of {', '.join(OPERATIONS)}")
        started = time.perf_counter()
        table = self.table
        schema = table.schema
        rows = prepare.to_arrow_table(data)
        required = table.partition_fields
        rows = prepare.conform(rows, schema, table.record_key_fields, required)
        self._families = table.effective_families(schema)
        if operation != "delete" and len(rows.column_names) == len(table.record_key_fields) + len(
            [p for p in required if p not in table.record_key_fields]
        ):
            raise SchemaError("input has only record key and partition columns: nothing to write (use delete to delete)")
        prepared = self._prepare(rows)  # every input check happens before the timeline changes
        timeline = table.active_timeline()
        rolled_back = rollback_failed_writes(
            table.storage, timeline, FAILED_WRITES_POLICY.get(self.options),
            HEARTBEAT_INTERVAL_MS.get(self.options), HEARTBEAT_TOLERABLE_MISSES.get(self.options),
        )
        # The heartbeat starts before the instant exists, so a lazy cleaner never sees a pending
        # instant of a live writer without a fresh heartbeat.
        requested_time = timeline.new_instant_time()
        heartbeat = Heartbeat(table.storage, requested_time, HEARTBEAT_INTERVAL_MS.get(self.options)).start()
        try:
            instant = timeline.create_requested(Action.DELTACOMMIT, requested_time)
            instant = timeline.transition_to_inflight(instant)
        except BaseException:
            heartbeat.stop()
            raise
        try:
            tasks = self._plan(prepared, instant.requested_time, operation, timeline)
            statuses = [s for batch in self.engine.run_tasks(tasks) for s in batch]
            self._write_partition_metafiles(statuses, instant.requested_time)
            metadata = self._commit_metadata(statuses, OPERATIONS[operation], schema)
            completed = timeline.complete(instant, metadata.to_avro_bytes(), precondition=lambda current: (
                # C3: checked under the timeline lock, so no ALTER completes between check and commit
                check_schema_unchanged(table._history, current, table.config, schema, self._families)))
        except BaseException:
            heartbeat.stop(delete=False)
            self._rollback_quietly(timeline, instant)
            raise
        delete_markers(table.storage, instant.requested_time)
        heartbeat.stop()
        result = WriteResult(
            instant=completed.requested_time, operation=OPERATIONS[operation],
            completion_time=completed.completion_time or "", statuses=statuses,
            elapsed_ms=int((time.perf_counter() - started) * 1000), rolled_back=rolled_back,
        )
        if self.on_commit is not None:
            self.on_commit(result)
        return result

    # ------------------------------------------------------------------ planning
    def _prepare(self, rows: pa.Table) -> pa.Table:
        """Add record keys, partition paths and bucket ids (validating partition values)."""
        table = self.table
        keys = prepare.record_keys(rows, table.record_key_fields)
        paths = prepare.partition_paths(rows, table.partition_fields, table.config.hive_style_partitioning)
        hash_cols = [rows.column(f) for f in table.config.bucket_hash_fields]
        buckets = pa.array(bucket_ids(hash_cols, table.num_buckets))
        rows = prepare.with_arrival(rows).append_column(RECORD_KEY, keys)
        return rows.append_column(_PARTITION, paths).append_column(_BUCKET, buckets)

    def _plan(self, rows: pa.Table, instant: str, operation: str, timeline) -> list[FileGroupWriteTask]:
        table = self.table
        view = FileSystemView(table.storage, timeline, len(table.partition_fields))
        existing = {(g.partition_path, g.file_id): g for g in view.file_groups()}
        if operation == "delete":
            return self._plan_deletes(rows, instant, existing)
        families = self._families
        groups: dict[tuple[str, int], list[FamilyPayload]] = {}
        present = set(rows.column_names)
        plans: dict[str | None, tuple[pa.Array, list]] = {}  # families with the same ordering share one sort
        for family in families.values():
            own = [c for c in family.columns if c not in table.record_key_fields and c not in table.partition_fields]
            given = [c for c in own if c in present]
            if not given and own:
                continue  # family not touched by this write
            cols = [c for c in _family_file_columns(family, table.record_key_fields, table.partition_fields) if c in present]
            ordering = family.ordering_field if family.ordering_field in present else None
            if ordering not in plans:
                plans[ordering] = _dedupe_plan(rows, ordering)
            indices, runs = plans[ordering]
            family_rows = rows.select([RECORD_KEY, *cols]).take(indices)
            for group, start, length in runs:
                payload = FamilyPayload(family.name, family_rows.slice(start, length), is_partial=len(given) < len(own))
                groups.setdefault(group, []).append(payload)
        tasks = []
        for index, ((partition, bucket), payloads) in enumerate(sorted(groups.items())):
            # bulk_insert writes base files into file groups that have no data yet; otherwise
            # (and for upsert/insert) one new log file per family, as non-blocking writers do.
            new_group = (partition, bucket_file_id(bucket)) not in existing
            kind = KIND_CREATE if operation == "bulk_insert" and new_group else KIND_APPEND
            tasks.append(self._task(instant, partition, bucket, kind, existing, index, payloads=payloads))
        return tasks

    def _plan_deletes(self, rows: pa.Table, instant: str, existing) -> list[FileGroupWriteTask]:
        families = tuple(self._families)
        indices, runs = _dedupe_plan(rows, None)
        keys_sorted = rows.column(RECORD_KEY).take(indices)
        tasks = []
        for index, ((partition, bucket), start, length) in enumerate(runs):
            keys = pa.table({"record_key": keys_sorted.slice(start, length)})
            tasks.append(self._task(instant, partition, bucket, KIND_DELETE, existing, index,
                                    delete_keys=keys, delete_families=families))
        return tasks

    def _task(self, instant, partition, bucket, kind, existing, index, **kwargs) -> FileGroupWriteTask:
        file_id = bucket_file_id(bucket)
        group: FileGroup | None = existing.get((partition, file_id))
        base = max(group.base_files, key=lambda b: b.instant, default=None) if group else None
        return FileGroupWriteTask(
            base_uri=self.table.storage.base_uri, instant=instant, table_name=self.table.name,
            partition_path=partition, file_id=file_id, kind=kind, write_token=f"{index}-1-0",
            base_file=base.name.name if base else "", prev_commit=base.instant if base else "null",
            is_new_file_group=group is None, **kwargs,
        )

    # ------------------------------------------------------------------ commit
    def _commit_metadata(self, statuses: list[WriteStatus], operation: str, schema: pa.Schema) -> CommitMetadata:
        stats = []
        for s in statuses:
            inserts = s.num_records if s.is_new_file_group else 0
            stats.append(WriteStat(
                file_id=s.file_id, path=s.relpath, prev_commit=s.prev_commit, num_writes=s.num_records,
                num_deletes=s.num_deletes, num_update_writes=s.num_records - inserts, num_inserts=inserts,
                total_write_bytes=s.bytes_written, total_write_errors=0, partition_path=s.partition_path,
                total_log_records=0, total_log_files=0, total_updated_records_compacted=0, total_log_blocks=0,
                total_corrupt_log_block=0, total_rollback_blocks=0, file_size_in_bytes=s.bytes_written,
                log_version=1, log_offset=0, base_file=s.base_file, log_files=[s.file_name],
                runtime_stats=RuntimeStats(total_scan_time=0, total_create_time=0, total_upsert_time=s.elapsed_ms),
                total_log_files_compacted=0, total_log_read_time_ms=0, total_log_size_compacted=0,
                num_updates=s.num_records - inserts,
            ))
        return CommitMetadata.from_write_stats(
            stats, operation_type=operation, schema=avro_schema_json(schema, self.table.name),
            extra_metadata=commit_extra_metadata(self._families),  # C3: the families in effect
        )

    def _write_partition_metafiles(self, statuses: list[WriteStatus], instant: str) -> None:
        depth = len(self.table.partition_fields)
        for partition in sorted({s.partition_path for s in statuses}):
            if not partition:
                continue
            relpath = f"{partition}/{PARTITION_METAFILE}"
            if not self.table.storage.exists(relpath):
                text = f"#partition metadata\ncommitTime={instant}\npartitionDepth={depth}\n"
                try:
                    self.table.storage.create_if_absent(relpath, text.encode())
                except Exception:  # another writer created it first
                    pass

    def _rollback_quietly(self, timeline, instant: Instant) -> None:
        try:
            timeline.reload()
            pending = timeline.get(instant.requested_time)
            if pending is not None and pending.is_pending:
                rollback_instant(self.table.storage, timeline, pending)
        except Exception:  # the original error matters more; the next writer rolls back again
            pass


def _dedupe_plan(rows: pa.Table, ordering: str | None) -> tuple[pa.Array, list]:
    """Row indices that keep the latest row per (partition, key), sorted by (partition, bucket, key),
    and the runs ``((partition, bucket), start, length)`` of the file groups in that order.

    Latest = highest ``ordering`` value (ties → later arrival), or the later arrival without one.
    """
    sort_keys = [(_PARTITION, "ascending", "at_start"), (_BUCKET, "ascending", "at_start"),
                 (RECORD_KEY, "ascending", "at_start")]
    if ordering is not None:
        sort_keys.append((ordering, "ascending", "at_start"))  # a null ordering value loses
    sort_keys.append((prepare.ARRIVAL_COLUMN, "ascending", "at_start"))
    names = list(dict.fromkeys(k[0] for k in sort_keys))
    order = pc.sort_indices(rows.select(names), sort_keys=sort_keys)
    n = len(order)
    parts = rows.column(_PARTITION).take(order).combine_chunks()
    keys = rows.column(RECORD_KEY).take(order).combine_chunks()
    if n > 1:
        keep = np.ones(n, dtype=bool)  # the last row of each (partition, key) run wins
        keep[:-1] = np.asarray(pc.not_equal(keys.slice(0, n - 1), keys.slice(1))) | np.asarray(
            pc.not_equal(parts.slice(0, n - 1), parts.slice(1))
        )
        if not keep.all():
            order = order.filter(pa.array(keep))
            parts = parts.filter(pa.array(keep))
    buckets = np.asarray(rows.column(_BUCKET).take(order).combine_chunks())
    return order, _runs(parts, buckets)


def _runs(parts: pa.Array, buckets: np.ndarray) -> list:
    """``((partition, bucket), start, length)`` for each run of equal (partition, bucket)."""
    n = len(buckets)
    if n == 0:
        return []
    change = np.zeros(n, dtype=bool)
    change[0] = True
    if n > 1:
        change[1:] = np.asarray(pc.not_equal(parts.slice(1), parts.slice(0, n - 1))) | (buckets[1:] != buckets[:-1])
    starts = np.flatnonzero(change).tolist() + [n]
    return [((parts[a].as_py(), int(buckets[a])), a, b - a) for a, b in zip(starts[:-1], starts[1:])]

"""Insert overwrite: Hudi's ``insert_overwrite`` / ``insert_overwrite_table`` as ``replacecommit`` instants.

An overwrite writes its rows to NEW file groups and, in the same instant, replaces existing file
groups: those of the partitions present in the input (``insert_overwrite``; plus the partitions
named by :data:`OVERWRITE_PARTITIONS`, e.g. SQL's static ``PARTITION (p='x')`` — replaced even
when no row goes there) or every file group of the table (``insert_overwrite_table``). The
instant is a ``replacecommit``:

- ``<t>.replacecommit.requested`` holds a ``HoodieRequestedReplaceMetadata`` with the operation
  type (no clustering plan), ``<t>.replacecommit.inflight`` is empty;
- ``<t>_<c>.replacecommit`` holds a ``HoodieReplaceCommitMetadata``: the write stats of the new
  files and ``partitionToReplaceFileIds`` (the replaced file ids per partition). Readers (pyhudi,
  hudi-rs, Hudi) hide those file groups once it completes; until then — or for a time-travel
  read before it — the old file groups are what a reader sees. A failed overwrite is rolled back
  like any write (its markers name its new files; the replaced groups were never touched).

File ids of new groups: without a bucket index random (``<uuid4>-0``), as Hudi's insert does.
With a bucket index the first 8 characters are the bucket number (Hudi's
``newBucketFileIdPrefix`` form) and the rest a UUID-5 of the instant, partition and bucket, so every
task writing a bucket of this instant agrees on the file id without coordination; later upserts
and deletes route to it through :class:`pyhudi.index.bucket.BucketFileIds` (a replaced file group
is never written again).

The set of replaced file groups is listed when the commit starts and checked again under the
timeline lock: a file group that another writer created meanwhile in an overwritten partition
(it would survive the overwrite) or another overwrite fails the commit with
:class:`~pyhudi.errors.CommitConflictError` (the instant is rolled back; the table is unchanged).
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pyhudi.errors import ClusteredMeanwhileError, CommitConflictError, ConfigError, FileNameError
from pyhudi.fsview.view import FileSystemView
from pyhudi.keygen import partition_layout
from pyhudi.storage.naming import bucket_id_from_file_id
from pyhudi.timeline.metadata import CommitMetadata, ReplaceCommitMetadata, RequestedReplaceMetadata
from pyhudi.timeline.timeline import Timeline
from pyhudi.config.write import OVERWRITE_PARTITIONS, OVERWRITE_LOG_FILES  # noqa: F401 (declared there)

if TYPE_CHECKING:
    from pyhudi.write.handle import FileGroupWriteTask, WriteStatus
    from pyhudi.write.txn import WriteTxn

INSERT_OVERWRITE = "insert_overwrite"
INSERT_OVERWRITE_TABLE = "insert_overwrite_table"
OVERWRITE_OPERATIONS = (INSERT_OVERWRITE, INSERT_OVERWRITE_TABLE)


_FILE_ID_NAMESPACE = uuid.UUID("5f3c9a52-0d4e-4a57-9b8e-6c1d2f7a8e10")


def is_overwrite(operation: str) -> bool:
    return operation in OVERWRITE_OPERATIONS


def partitions_option(partitions: Iterable[str]) -> str:
    """The value of :data:`OVERWRITE_PARTITIONS` for ``partitions`` (partition paths)."""
    paths = list(partitions)
    for path in paths:
        if not isinstance(path, str):
            raise ConfigError(f"partitions to overwrite must be partition paths (strings), got {path!r}")
    return json.dumps(sorted(set(paths)))


def static_partitions(options: dict[str, str], config: Any = None) -> list[str]:
    """The partition paths of :data:`OVERWRITE_PARTITIONS`; with ``config`` (the table's) each is
    checked to be one of the table's partition paths (depth, no escape, hive-style ``field=``)."""
    raw = OVERWRITE_PARTITIONS.get(options)
    if not raw:
        return []
    try:
        paths = json.loads(raw)
    except ValueError:
        paths = None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise ConfigError(f"{OVERWRITE_PARTITIONS.key} must be a JSON list of partition paths, got {raw!r}")
    if config is not None and paths:
        check_partition_paths(paths, config, f"{OVERWRITE_PARTITIONS.key}: ")
    return paths


def check_partition_paths(paths: Iterable[str], config: Any, context: str = "") -> None:
    """Refuse paths that cannot be partitions of the table: an unpartitioned table, wrong depth,
    escaping names, or (hive-style tables) segments without their ``field=`` — each of which would
    otherwise make the overwrite a silent no-op."""
    from pyhudi.write.prepare import check_partition_values

    paths, fields = list(paths), list(config.partition_fields)
    if not fields:
        raise ConfigError(f"{context}the table is not partitioned, there are no partitions to overwrite "
                          f"(got {paths!r}; insert_overwrite_table replaces the whole table)")
    check_partition_values(paths, fields)
    if config.hive_style_partitioning:
        for path in paths:
            if any(not segment.startswith(f"{field}=") for field, segment in zip(fields, path.split("/"))):
                raise ConfigError(f"{context}partition path {path!r} does not match the table's hive-style "
                                  f"partitioning: expected {'/'.join(f'{f}=<value>' for f in fields)}")


# ------------------------------------------------------------------------------ file ids
def overwrite_bucket_file_id(instant: str, partition: str, bucket: int) -> str:
    """The file id of bucket ``bucket``'s new file group in ``partition`` written by ``instant``:
    ``<8-digit bucket>-<uuid tail>-0``, the same in every task of the instant."""
    digest = uuid.uuid5(_FILE_ID_NAMESPACE, f"{instant}/{partition}/{bucket}")
    return f"{bucket:08d}{str(digest)[8:]}-0"


# ------------------------------------------------------------------------------ planning
def plan_overwrite(txn: WriteTxn, rows: Any, token_for: Any) -> list[FileGroupWriteTask]:
    """Tasks writing ``rows`` (prepared) into new file groups only.

    Bucketed: one new file group per (partition, bucket) — base files per family present (log
    files with :data:`OVERWRITE_LOG_FILES`); without buckets: new file groups of at most
    ``hoodie.parquet.max.file.size``, as inserts make. Existing file groups are never written.
    """
    from pyhudi.write.plan import plan_bucketed, plan_simple_index

    static_partitions(txn.options, txn.config)  # a bad partition list fails before any file is written
    if txn.config.num_buckets is None:
        return plan_simple_index(dataclasses.replace(txn, operation="insert"), rows, {}, token_for,
                                 keep_partitions=txn.operation == INSERT_OVERWRITE)
    inner = "insert" if OVERWRITE_LOG_FILES.get(txn.options) else "bulk_insert"
    tasks = plan_bucketed(dataclasses.replace(txn, operation=inner), rows, {}, token_for)
    return [dataclasses.replace(task, file_id=overwrite_bucket_file_id(
        txn.instant, task.partition_path, bucket_id_from_file_id(task.file_id)), is_new_file_group=True)
        for task in tasks]


# ------------------------------------------------------------------------------ timeline
def requested_content(txn: WriteTxn) -> bytes:
    """Content of the ``.requested`` file: a ``HoodieRequestedReplaceMetadata`` for overwrites."""
    if not is_overwrite(txn.operation):
        return b""
    return RequestedReplaceMetadata(operation_type=txn.operation_type, clustering_plan=None,
                                    extra_metadata={}, version=1).to_avro_bytes()


def _replaced(txn: WriteTxn, statuses: Sequence[WriteStatus], timeline: Timeline) -> dict[str, list[str]]:
    view = FileSystemView(txn.storage, timeline, partition_layout(txn.config).depth)
    if txn.operation == INSERT_OVERWRITE_TABLE:
        groups = view.file_groups()
    else:
        partitions = {s.partition_path for s in statuses} | set(static_partitions(txn.options, txn.config))
        groups = view.file_groups(partitions) if partitions else []
    new = {(s.partition_path, s.file_id) for s in statuses}
    out: dict[str, list[str]] = {}
    for group in groups:
        if (group.partition_path, group.file_id) not in new:
            out.setdefault(group.partition_path, []).append(group.file_id)
    return {p: sorted(ids) for p, ids in sorted(out.items())}


class ReplacePlan:
    """The file groups an overwrite replaces, listed at commit start and re-checked under the lock."""

    def __init__(self, txn: WriteTxn, statuses: Sequence[WriteStatus], timeline: Timeline) -> None:
        self.txn = txn
        self.statuses = list(statuses)
        self.replaced = _replaced(txn, self.statuses, timeline)

    def metadata(self, commit: CommitMetadata) -> ReplaceCommitMetadata:
        fields = {f.name: getattr(commit, f.name) for f in dataclasses.fields(CommitMetadata)}
        return ReplaceCommitMetadata(**fields, partition_to_replace_file_ids=self.replaced)

    def groups(self) -> list[tuple[str, str]]:
        """(partition, file id) of every file group replaced."""
        return [(p, f) for p, ids in self.replaced.items() for f in ids]

    def check(self, current: Timeline) -> None:
        """Under the timeline lock: the file groups to replace are still exactly those listed."""
        now = _replaced(self.txn, self.statuses, current)
        if now == self.replaced:
            return
        before = {(p, f) for p, ids in self.replaced.items() for f in ids}
        after = {(p, f) for p, ids in now.items() for f in ids}
        changed = sorted(after ^ before)
        partition, file_id = changed[0]
        raise CommitConflictError(
            f"insert overwrite {self.txn.instant} conflicts with a concurrent write: file group {file_id} of "
            f"partition {partition!r} was {'created' if (partition, file_id) in after else 'replaced'} while it "
            "ran; the overwrite is rolled back, retry it"
        )


def check_not_replaced(txn: WriteTxn, statuses: Sequence[WriteStatus], current: Timeline) -> None:
    """Under the timeline lock, for any write: refuse to commit files that a replacecommit on the
    timeline makes unreadable or duplicate — the write was planned on a view that missed it.

    - a file written into a file group that a completed replacecommit replaced: its rows would
      never be read (Hudi hides the whole group);
    - bucket index, not an overwrite: a file written into a file group of bucket ``b`` while a
      replacecommit's new, still live, file group holds bucket ``b`` of that partition: two file
      groups of one bucket would both hold keys of it (the bucket index finds a key in ONE group).

    Every completed replacecommit counts, not only those completed after this instant was
    requested: a writer lists its timeline before it takes its instant time, so a replacecommit
    completing in between has a lower completion time yet was not seen by the plan.
    """
    written = {(s.partition_path, s.file_id) for s in statuses}
    if not written:
        return
    replaces = [(instant, current.read_metadata(instant)) for instant in current.completed()
                if str(instant.action) == "replacecommit"]
    replaces = [(instant, md) for instant, md in replaces if isinstance(md, ReplaceCommitMetadata)]
    replaced: set[tuple[str, str]] = set()
    for instant, metadata in replaces:
        hit = sorted(written & metadata.replaced_file_groups())
        if hit:
            partition, file_id = hit[0]
            error = ClusteredMeanwhileError if metadata.operation_type == "CLUSTER" else CommitConflictError
            raise error(
                f"write {txn.instant} conflicts with replacecommit {instant.requested_time} ({metadata.operation_type}), "
                f"which replaced file group {file_id} of partition {partition!r} while this write ran; "
                "the write is rolled back, retry it"
            )
        replaced |= metadata.replaced_file_groups()
    if txn.config.num_buckets is None or is_overwrite(txn.operation):
        return  # an overwrite replaces every file group of its partitions (ReplacePlan.check)
    mine = {(p, _bucket_or_none(f)): f for p, f in written}
    for instant, metadata in replaces:
        for partition, file_ids in sorted(metadata.partition_file_ids().items()):
            for file_id in sorted(file_ids):
                bucket = _bucket_or_none(file_id)
                own = mine.get((partition, bucket))
                if bucket is None or own is None or own == file_id or (partition, file_id) in replaced:
                    continue
                raise CommitConflictError(
                    f"write {txn.instant} conflicts with replacecommit {instant.requested_time} "
                    f"({metadata.operation_type}), which wrote file group {file_id} for bucket {bucket} of partition "
                    f"{partition!r} while this write ran; this write put that bucket's rows in file group {own}. "
                    "The write is rolled back, retry it"
                )


def _bucket_or_none(file_id: str) -> int | None:
    try:
        return bucket_id_from_file_id(file_id)
    except FileNameError:
        return None


__all__ = [
    "INSERT_OVERWRITE",
    "INSERT_OVERWRITE_TABLE",
    "OVERWRITE_LOG_FILES",
    "OVERWRITE_OPERATIONS",
    "OVERWRITE_PARTITIONS",
    "ReplacePlan",
    "check_not_replaced",
    "check_partition_paths",
    "is_overwrite",
    "overwrite_bucket_file_id",
    "partitions_option",
    "plan_overwrite",
    "requested_content",
]

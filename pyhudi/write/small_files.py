"""Small-file handling: inserts fill existing small file groups before new ones are opened.

Tables without a bucket index would otherwise gain a new file group (a small base file) with
every commit that inserts. Like Hudi's upsert partitioner, a write that inserts (``upsert`` and
``insert``; ``bulk_insert`` never does) first gives its new records, partition by partition, to
the file groups whose files are smaller than ``hoodie.parquet.small.file.limit``:

- a small file takes ``(hoodie.parquet.max.file.size - its size) // average record size``
  records, the average coming from the most recent commit that wrote more than
  ``hoodie.record.size.estimation.threshold x`` the small-file limit (its base files' bytes /
  records), else ``hoodie.copyonwrite.record.size.estimate``;
- **copy-on-write**: every latest base file under the limit is a candidate (in file id order);
  its inserts are merged into the file's next version, together with the updates it receives;
- **merge-on-read** (the simple index cannot index log files): only file slices that have a base
  file under the limit and *no* log files are candidates, smallest first, at most
  ``hoodie.merge.small.file.group.candidates.limit`` per partition; the inserts are appended to
  the group as a log file (with its updates), after which the group is no longer a candidate;
- file groups in a pending clustering are never candidates (the clustering would drop the rows).

The remaining inserts open new file groups as before. Copy-on-write small files are filled only
by writes planned in one place (:meth:`WriteClient.write <pyhudi.write.client.WriteClient.write>`):
executor tasks that each plan their own share of the rows (``WriteTxn.write_rows``) would each
write a version of the same small file, so there inserts open new file groups. Records are given out in key order, so
each small file receives a contiguous key range.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.errors import HudiError
from pyhudi.fsview.view import FileGroup
from pyhudi.timeline.instant import Instant
from pyhudi.timeline.timeline import Timeline
from pyhudi.config.write import SMALL_FILE_LIMIT, RECORD_SIZE_ESTIMATE, RECORD_SIZE_ESTIMATION_THRESHOLD, SMALL_FILE_GROUP_CANDIDATES_LIMIT, MERGE_ALLOW_DUPLICATE_ON_INSERTS  # noqa: F401 (declared there)


_COMMIT_ACTIONS = ("commit", "replacecommit", "deltacommit")


_WRITTEN: dict[tuple[str, str], tuple[int, int]] = {}
"""(table, completed instant file) -> (bytes, records) its base files wrote; completed instants
never change, so each is read once per process however often writes estimate record sizes."""
_WRITTEN_MAX = 100_000


def _base_file_bytes_and_records(timeline: Timeline, instant: Instant) -> tuple[int, int]:
    key = (timeline.storage.base_uri, timeline.path_of(instant))
    found = _WRITTEN.get(key)
    if found is None:
        metadata = timeline.read_metadata(instant)
        stats = list(metadata.write_stats()) if metadata is not None else []
        if str(instant.action) == "deltacommit":  # log files hold only some columns: base files only
            stats = [s for s in stats if (s.path or "").endswith(".parquet")]
        found = (sum(s.total_write_bytes or 0 for s in stats), sum(s.num_writes or 0 for s in stats))
        if len(_WRITTEN) >= _WRITTEN_MAX:
            _WRITTEN.clear()
        _WRITTEN[key] = found
    return found


def average_record_size(timeline: Timeline, options: Mapping[str, str]) -> int:
    """Bytes per record of the latest commit big enough to tell, else the configured estimate."""
    threshold = RECORD_SIZE_ESTIMATION_THRESHOLD.get(options) * SMALL_FILE_LIMIT.get(options)
    for instant in sorted(timeline.commits_timeline(), key=lambda i: i.sort_time, reverse=True):
        if str(instant.action) not in _COMMIT_ACTIONS:
            continue
        written, records = _base_file_bytes_and_records(timeline, instant)
        if written > threshold and records > 0:
            return max(1, math.ceil(written / records))
    return max(1, RECORD_SIZE_ESTIMATE.get(options))


def pending_clustering_groups(timeline: Timeline) -> set[tuple[str, str]]:
    """(partition, file id) of every file group a pending clustering will replace."""
    groups: set[tuple[str, str]] = set()
    for instant in timeline.pending():
        if str(instant.action) not in ("clustering", "replacecommit"):
            continue
        try:
            plan = timeline.read_metadata(instant.as_requested())
        except HudiError:  # a pending replace without a readable plan (insert overwrite)
            continue
        if plan is not None and getattr(plan, "is_clustering", False):
            groups.update(plan.file_groups())
    return groups


def small_file_candidates(groups: Sequence[FileGroup], copy_on_write: bool, options: Mapping[str, str],
                          excluded: set[tuple[str, str]]) -> list[tuple[str, int]]:
    """``(file id, size)`` of one partition's small files, in the order inserts fill them."""
    limit = SMALL_FILE_LIMIT.get(options)
    if limit <= 0:
        return []
    found = []
    for group in groups:
        if (group.partition_path, group.file_id) in excluded or not group.base_files:
            continue
        current = group.latest_slice(None, False)
        if current.base_file is None or current.base_file.size >= limit:
            continue
        if not copy_on_write and current.log_files:
            continue  # its log files cannot be indexed: padding it would hide keys from upserts
        found.append((group.file_id, current.base_file.size))
    if copy_on_write:
        return sorted(found)
    found.sort(key=lambda item: (item[1], item[0]))
    return found[: max(0, SMALL_FILE_GROUP_CANDIDATES_LIMIT.get(options))]


def assign_inserts(
    locations: pa.Array,
    partition_runs: Sequence[tuple[str, int, int]],
    candidates: Mapping[str, list[tuple[str, int]]],
    record_size: int,
    max_file_size: int,
) -> tuple[pa.Array, dict[str, int]]:
    """``locations`` with the inserts (null entries) of each partition run given, in order, to
    that partition's small files; and how many inserts each small file got."""
    if not any(candidates.values()):
        return locations, {}
    free = np.flatnonzero(np.asarray(locations.is_null()))
    target = np.full(len(locations), -1, dtype=np.int64)  # index into file_ids, -1: stays an insert
    file_ids: list[str] = []
    for partition, start, length in partition_runs:
        lo, hi = (int(x) for x in np.searchsorted(free, [start, start + length]))
        for file_id, size in candidates.get(partition, ()):
            if lo >= hi:
                break
            take = min(max(0, (max_file_size - size) // record_size), hi - lo)
            if take <= 0:
                continue
            target[free[lo:lo + take]] = len(file_ids)
            file_ids.append(file_id)
            lo += take
    if not file_ids:
        return locations, {}
    given = pa.array(file_ids, pa.string()).take(pa.array(target, mask=target < 0))
    counts = dict(zip(file_ids, np.bincount(target[target >= 0], minlength=len(file_ids)).tolist()))
    return pc.coalesce(locations, given), counts

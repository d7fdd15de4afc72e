"""Data skipping at planning: file groups whose statistics prove no row matches are never read.

A filter ``column op value`` (``=``, ``<``, ``<=``, ``>``, ``>=``, ``in``, ``!=``, ranges as two
filters, ...) rules out a file group when the min/max (and null counts) of the files it would read
exclude every value — by the soundness rules of :mod:`pyhudi.read.pruning`:

- a **record key column** (``_hoodie_record_key`` or a key field) is the same in every version of
  a row, but a log file may add keys: the group is skipped when every family's slice is empty or
  is a base file alone (no log file, or a read-optimized query) whose statistics exclude the value;
- **another column** is owned by one family: when that family's slice is a base file alone, every
  row of the file group has that base file's value or null (the family lacks the key), and the
  filters are null-rejecting, so failing statistics skip the whole group. A family with no file
  in the group has only nulls. A family with log files is never trusted (a log may change the
  value).

The task-level pruning (row groups, key ranges: :mod:`pyhudi.read.task`) still runs on the file
groups kept. Statistics come, in this order of preference, from

1. **column ranges recorded in commit metadata**: a completed ``replacecommit`` (clustering's)
   may carry, under the extra-metadata key :data:`COLUMN_RANGES_KEY`, a JSON object
   ``{"<base file name>": {"numRows": n, "columns": {"<column>": {"min": v, "max": v,
   "nullCount": k}}}}`` (build it with :func:`column_ranges` and :func:`encode_column_ranges`);
   values are JSON numbers, booleans or strings that Arrow casts to the column's type (timestamps,
   dates and decimals as their Arrow string form). Hudi's Avro ``HoodieWriteStat`` has no field for
   them, so they live beside the write stats; readers that do not know the key ignore it;
2. the base file's **Parquet footer** (every row group must fail), kept in the process's
   :data:`~pyhudi.read.metadata_cache.METADATA_CACHE` so the read tasks of kept groups do not
   read it again.

:class:`FileSkipper` counts what it decided (``plan.metrics`` of a scan).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from pyhudi.fsview.view import BaseFile
from pyhudi.lazy import pc
from pyhudi.read.family_reader import file_key
from pyhudi.read.filters import NULL_REJECTING, Filter
from pyhudi.read.metadata_cache import METADATA_CACHE
from pyhudi.read.pruning import row_group_may_match, stats_may_match
from pyhudi.read.task import FamilyPart
from pyhudi.storage.fs import Storage
from pyhudi.value import Value
from pyhudi.storage.parquet import parquet_file

if TYPE_CHECKING:
    import pyarrow.parquet as pq

COLUMN_RANGES_KEY = "pyhudi.column.ranges"
"""Extra-metadata key of a commit holding per-base-file column ranges (see the module docstring)."""
RANGES_ACTIONS = ("replacecommit",)
PREFETCH_THREADS = 16
"""Actions whose completed metadata is read for recorded column ranges (clustering's)."""


# ---------------------------------------------------------------------------- recorded ranges
def column_ranges(data: pa.Table, columns: Sequence[str]) -> dict[str, Any]:
    """The JSON-ready ranges of ``columns`` in ``data`` (the rows of one base file): its row count
    and per column min, max and null count. Columns whose values JSON cannot carry exactly
    (binary, nested, NaN-only floats) are left out — readers then use the footer."""
    out: dict[str, Any] = {}
    for name in columns:
        column = data.column(name)
        type_ = column.type
        if pa.types.is_nested(type_) or pa.types.is_binary(type_) or pa.types.is_large_binary(type_) \
                or pa.types.is_dictionary(type_) or pa.types.is_null(type_):
            continue
        nulls = column.null_count
        entry: dict[str, Any] = {"nullCount": nulls}
        if nulls < len(column):
            bounds = pc.min_max(column)
            low, high = _json_value(bounds["min"]), _json_value(bounds["max"])
            if low is None or high is None:
                continue
            entry.update(min=low, max=high)
        out[name] = entry
    return {"numRows": data.num_rows, "columns": out}


def _json_value(scalar: pa.Scalar) -> Any:
    if not scalar.is_valid:
        return None
    value = scalar.as_py()
    if isinstance(value, bool) or isinstance(value, (int, str)) and not pa.types.is_decimal(scalar.type):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return scalar.cast(pa.string()).as_py()


def encode_column_ranges(files: Mapping[str, Mapping[str, Any]]) -> str:
    """The extra-metadata value of :data:`COLUMN_RANGES_KEY`: base file name → :func:`column_ranges`."""
    return json.dumps(dict(files), separators=(",", ":"), sort_keys=True)


class RecordedStats(Value):
    """Column statistics from commit metadata, shaped like ``pyarrow.parquet.Statistics``."""

    min: Any
    max: Any
    null_count: int | None
    has_min_max: bool
    has_null_count: bool

    def __init__(self, min: Any, max: Any, null_count: int | None, has_min_max: bool, has_null_count: bool) -> None:
        self._set(min=min, max=max, null_count=null_count, has_min_max=has_min_max, has_null_count=has_null_count)


def _decode_stats(entry: Any, type_: pa.DataType) -> RecordedStats | None:
    if not isinstance(entry, Mapping):
        return None
    nulls = entry.get("nullCount")
    nulls = nulls if isinstance(nulls, int) and not isinstance(nulls, bool) else None
    if "min" not in entry or "max" not in entry:
        return RecordedStats(None, None, nulls, False, nulls is not None)
    try:
        low, high = pa.array([entry["min"], entry["max"]]).cast(type_).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError, OverflowError):
        return None  # not a value of the column's type: not trusted
    return RecordedStats(low, high, nulls, low is not None and high is not None, nulls is not None)


# ---------------------------------------------------------------------------- the skipper
class FileSkipper:
    """Decides, per file group of a scan plan, whether its statistics rule it out."""

    def __init__(self, storage: Storage, timeline: Any, filters: Sequence[Filter], schema: pa.Schema,
                 key_columns: frozenset[str], read_optimized: bool = False,
                 metrics: dict[str, int] | None = None) -> None:
        self.storage = storage
        self.timeline = timeline
        self.filters = filters
        self.schema = schema
        self.key_columns = key_columns
        self.read_optimized = read_optimized
        self.metrics: dict[str, int] = metrics if metrics is not None else dict.fromkeys(
            ("file_groups_considered", "file_groups_skipped", "files_considered", "files_skipped",
             "footers_read", "ranges_from_commit_metadata"), 0)
        names = set(schema.names)
        self._usable = [f for f in filters if f.op in NULL_REJECTING and f.column in names]
        self._carriers: dict[str, Any] | None = None
        self._recorded: dict[str, dict] = {}
        self._lock = threading.Lock()

    def prefetch(self, groups: Sequence[Sequence[FamilyPart]]) -> None:
        """Read, on up to :data:`PREFETCH_THREADS` threads, the footers :meth:`may_match` will
        consult for ``groups`` (each a file group's parts) and the cache lacks: on object
        stores a footer costs a round trip, and planning would otherwise pay them one by one."""
        if not self._usable or self.storage.is_local:
            return
        wanted: dict[str, BaseFile] = {}
        for parts in groups:
            for part in parts:
                base = part.file_slice.base_file
                if base is None or (part.file_slice.log_files and not self.read_optimized):
                    continue
                relevant = [f for f in self._usable if f.column in self.key_columns or f.column in part.own_columns]
                recorded = self._recorded_for(base) if relevant else None
                if relevant and (recorded is None or any(f.column not in recorded["columns"] for f in relevant)) \
                        and METADATA_CACHE.footer(file_key(self.storage, base)) is None:
                    wanted[base.relpath] = base
        if len(wanted) > 1:
            from concurrent.futures import ThreadPoolExecutor  # (object stores only: a local read needs none)

            with ThreadPoolExecutor(max_workers=min(PREFETCH_THREADS, len(wanted))) as pool:
                list(pool.map(self._footer, wanted.values()))

    def may_match(self, parts: Sequence[FamilyPart]) -> bool:
        """Whether the file group of ``parts`` (its families' latest slices) may hold a matching
        row; counted in :attr:`metrics`."""
        files = sum((p.file_slice.base_file is not None) + len(p.file_slice.log_files) for p in parts)
        self.metrics["file_groups_considered"] += 1
        self.metrics["files_considered"] += files
        if self._usable and self._ruled_out(parts):
            self.metrics["file_groups_skipped"] += 1
            self.metrics["files_skipped"] += files
            return False
        return True

    def _ruled_out(self, parts: Sequence[FamilyPart]) -> bool:
        key_filters = [f for f in self._usable if f.column in self.key_columns]
        if key_filters and all(self._holds_no_match(p, key_filters) for p in parts):
            return True
        for part in parts:
            own = [f for f in self._usable if f.column in part.own_columns]
            if own and self._holds_no_match(part, own):
                return True
        return False

    def _holds_no_match(self, part: FamilyPart, filters: list[Filter]) -> bool:
        """Whether no row of this family's slice can satisfy ``filters`` (ANDed): the slice has
        nothing to read, or it is a base file alone whose statistics fail a filter."""
        file_slice = part.file_slice
        base = file_slice.base_file
        if file_slice.is_empty or (self.read_optimized and base is None):
            return True
        if base is None or (file_slice.log_files and not self.read_optimized):
            return False
        return self._base_fails(base, filters)

    def _base_fails(self, base: BaseFile, filters: list[Filter]) -> bool:
        recorded = self._recorded_for(base)
        if recorded is not None and all(f.column in recorded["columns"] for f in filters):
            stats = {c: _decode_stats(recorded["columns"][c], self.schema.field(c).type)
                     for c in {f.column for f in filters}}
            if all(s is not None for s in stats.values()):
                self.metrics["ranges_from_commit_metadata"] += 1
                rows = recorded["numRows"]
                return rows == 0 or any(not stats_may_match(stats[f.column], rows, f, self.schema.field(f.column).type)
                                        for f in filters)
        metadata = self._footer(base)
        if metadata is None:
            return False
        return all(not row_group_may_match(metadata, i, filters, self.schema) for i in range(metadata.num_row_groups))

    def _footer(self, base: BaseFile) -> pq.FileMetaData | None:
        """The base file's footer (cached for the read tasks); None when it cannot be read —
        the task that reads the file then reports the damage."""
        key = file_key(self.storage, base)
        metadata = METADATA_CACHE.footer(key)
        if metadata is not None:
            return metadata
        try:
            with self.storage.open_input(base.relpath) as source:
                metadata = parquet_file(source).metadata
        except (OSError, pa.ArrowException, ValueError):
            return None
        with self._lock:
            self.metrics["footers_read"] += 1
        METADATA_CACHE.put_footer(key, metadata)
        return metadata

    def _recorded_for(self, base: BaseFile) -> dict | None:
        """The ranges recorded for ``base`` by the replacecommit that wrote it, if any (each
        instant's metadata read once per plan, only when one of its files is considered)."""
        if self._carriers is None:
            self._carriers = {} if self.timeline is None else {
                i.requested_time: i for i in self.timeline.completed() if i.action.value in RANGES_ACTIONS}
        instant = self._carriers.get(base.instant)
        if instant is None:
            return None
        files = self._recorded.get(base.instant)
        if files is None:
            files = self._recorded[base.instant] = self._load_recorded(instant)
        entry = files.get(base.name.name)
        if not isinstance(entry, Mapping) or not isinstance(entry.get("columns"), Mapping):
            return None
        rows = entry.get("numRows")
        return entry if isinstance(rows, int) and not isinstance(rows, bool) else None

    def _load_recorded(self, instant: Any) -> dict:
        """Base file name → recorded ranges in one instant's metadata ({} when it has none)."""
        try:
            extra = getattr(self.timeline.read_metadata(instant), "extra_metadata", None) or {}
            text = extra.get(COLUMN_RANGES_KEY)
            decoded = json.loads(text) if text else None
        except (OSError, ValueError, pa.ArrowException):  # (undecodable metadata: footers instead)
            return {}
        return decoded if isinstance(decoded, dict) else {}

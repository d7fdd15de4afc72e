"""Pruning: skip partitions, file groups, row groups and rows that cannot produce a matching row.

Everything here must be *sound*: filters are applied exactly after the merge anyway, so pruning
may only drop data whose merged rows could never match. Three facts make that possible:

- **Partition values** come from the partition path (hive-style ``col=value`` or plain
  ``value``), and every version of a row lives in its partition: a partition whose values fail
  a filter on a partition column holds no matching row. Paths that do not decode to a typed
  value (``__HIVE_DEFAULT_PARTITION__``, key generators that transform values) never prune.
- **Record key columns** are the same in every version of a row, so a key-column filter may
  drop versions (row groups of any input, rows of any data block) before the merge.
- **Other columns** change across versions: a base row group may only be skipped for them when
  the family owning the column has no log file in the slice (its base value is final). A row of
  the file group whose key falls in such a row group's key range then cannot match a
  null-rejecting filter — its value is either that failing base value or, if the family lacks
  the key, null — so that key range is excluded for every family of the file group.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from pyhudi.config import table as tc
from pyhudi.errors import ReadError
from pyhudi.fsview.view import FileGroup, FileSystemView
from pyhudi.keygen import PartitionLayout
from pyhudi.lazy import pc
from pyhudi.read.damage import check_written_files, written_partitions
from pyhudi.read.filters import NULL_REJECTING, Filter, filter_table, typed_values
from pyhudi.read.keys import text_keys
from pyhudi.storage.naming import DEFAULT_PARTITION_PATH

if TYPE_CHECKING:
    import pyarrow.parquet as pq

KeyRange = tuple[str, str]
"""An inclusive ``(low, high)`` range of record keys."""

def partition_values(path: str, fields: Sequence[str], hive_style: bool,
                     url_encoded: bool = False) -> dict[str, str] | None:
    """The raw partition values encoded in ``path``, or None when it does not decode."""
    if not fields:
        return {}
    segments = path.split("/") if path else []
    if len(segments) != len(fields):
        return None
    out = {}
    for field, segment in zip(fields, segments):
        name, sep, value = segment.partition("=")
        if hive_style:
            if not sep or name != field:
                return None
            segment = value
        elif sep and name == field:
            return None  # looks hive-style although the table says otherwise: ambiguous
        if segment == DEFAULT_PARTITION_PATH:
            return None
        out[field] = _unquote(segment) if url_encoded else segment
    return out


def _unquote(segment: str) -> str:
    """A URL-encoded partition path segment decoded (``urllib.parse`` loads on first use: with
    ``ipaddress`` it is ~1.5 ms of a cold read, which most tables never need, issue 15)."""
    from urllib.parse import unquote

    return unquote(segment)


def partition_columns_from_path(path: str, fields: Sequence[str], hive_style: bool, schema: pa.Schema,
                                url_encoded: bool = False) -> dict[str, pa.Scalar]:
    """The partition columns' values of every row stored under ``path``, typed per ``schema``.

    Tables written with ``hoodie.datasource.write.drop.partition.columns=true`` keep partition
    columns out of their data files; readers rebuild them from the path, as Hudi's do. Segments
    are ``col=value`` (hive-style) or ``value``; ``__HIVE_DEFAULT_PARTITION__`` (a null or empty
    value at write time) reads as null. Raises :class:`ReadError` naming the path when it does not
    have one segment per partition field or a value does not convert to the column's type.
    """
    segments = path.split("/") if path else []
    if len(segments) != len(fields):
        raise ReadError(f"partition path {path!r} does not hold one value per partition field ({', '.join(fields)}): "
                        "cannot rebuild the partition columns the data files do not store")
    out = {}
    for field, segment in zip(fields, segments):
        type_ = schema.field(field).type if field in schema.names else pa.string()
        name, sep, value = segment.partition("=")
        if hive_style:
            if not sep or name != field:
                raise ReadError(f"partition path {path!r}: segment {segment!r} is not {field}=<value> (hive-style)")
            segment = value
        if segment == DEFAULT_PARTITION_PATH:
            out[field] = pa.scalar(None, type_)
            continue
        text = _unquote(segment) if url_encoded else segment
        try:
            out[field] = pa.array([text], pa.string()).cast(type_)[0]
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            raise ReadError(f"partition path {path!r}: value {text!r} of partition column {field!r} "
                            f"is not a {type_}") from None
    return out


def partition_may_match(path: str, fields: Sequence[str], hive_style: bool, filters: Iterable[Filter],
                        schema: pa.Schema, url_encoded: bool = False) -> bool:
    """False only when the values in ``path`` certainly fail a filter on a partition column."""
    return partitions_may_match([path], fields, hive_style, filters, schema, url_encoded)[0]


_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)


def partition_pruned_groups(view: FileSystemView, config: tc.TableConfig, filters: Sequence[Filter],
                            schema: pa.Schema, layout: PartitionLayout) -> list[FileGroup]:
    """The file groups of the partitions whose values may match ``filters`` (all of them without
    a filter on a partition column; values decoded from identity paths, TIMESTAMP paths through
    their format, other key generators never prune), checked against what commits wrote to them
    (:func:`~pyhudi.read.damage.check_written_files`).

    A table of known partition depth lists its partition folders first (without their files),
    adds the partitions commits wrote to (a folder lost is then still noticed), and lists the
    files of the matching ones only: a filtered read of a table of many partitions costs one
    folder listing per level, not a listing of every partition."""
    fields = config.partition_fields
    prunes = bool(fields and filters and (layout.identity or layout.timestamp is not None))
    listed = view.partition_paths() if prunes and view.partition_depth else None
    if listed is not None:
        candidates = sorted(set(listed) | written_partitions(view))
        verdicts = _partition_verdicts(config, layout, candidates, filters, schema)
        wanted = {path for path, ok in zip(candidates, verdicts) if ok}
        return check_written_files(view, view.file_groups(wanted), wanted)
    groups = check_written_files(view, view.file_groups())
    if not prunes:
        return groups
    paths = list(dict.fromkeys(g.partition_path for g in groups))
    verdict = dict(zip(paths, _partition_verdicts(config, layout, paths, filters, schema)))
    return [g for g in groups if verdict[g.partition_path]]


def _partition_verdicts(config: tc.TableConfig, layout: PartitionLayout, paths: list[str], filters: Sequence[Filter],
                        schema: pa.Schema) -> list[bool]:
    """For each partition path, whether its values may match ``filters``."""
    timestamp = layout.timestamp
    if timestamp is not None:
        type_ = schema.field(timestamp.field).type if timestamp.field in schema.names else pa.string()
        return [timestamp.may_match(path, filters, type_) for path in paths]
    return partitions_may_match(paths, config.partition_fields, config.hive_style_partitioning, filters, schema,
                                config.get(tc.URL_ENCODE_PARTITIONING))


def partitions_may_match(paths: Sequence[str], fields: Sequence[str], hive_style: bool, filters: Iterable[Filter],
                         schema: pa.Schema, url_encoded: bool = False) -> list[bool]:
    """For each of ``paths``, False only when its values certainly fail a filter on a partition
    column: each filter evaluated once over a table of every path's values, however many
    partitions the table has (not once per partition)."""
    relevant = [f for f in filters if f.column in fields]
    if not relevant or not paths:
        return [True] * len(paths)
    decoded = [partition_values(path, fields, hive_style, url_encoded) for path in paths]
    unknown = np.array([values is None for values in decoded])  # (never pruned)
    columns = {}
    for field in dict.fromkeys(f.column for f in relevant):
        typed, failed = _typed_partition_values([None if v is None else v[field] for v in decoded],
                                                schema.field(field).type)
        columns[field] = typed
        unknown |= failed  # the path does not hold the value as typed: never prune on it
    columns[_ROW] = pa.array(np.arange(len(paths)))
    rows = pa.table(columns)
    keep = np.ones(len(paths), dtype=bool)
    for f in relevant:
        try:
            matched = filter_table(rows, [f], schema).column(_ROW).to_numpy()
        except _ARROW_ERRORS:
            continue
        passes = np.zeros(len(paths), dtype=bool)
        passes[matched] = True
        keep &= passes | unknown
    return keep.tolist()


_ROW = "\x00row"
"""A column name no table column has: each partition's position in the evaluated table."""


def _typed_partition_values(texts: list[str | None], type_: pa.DataType) -> tuple[pa.Array, np.ndarray]:
    """``texts`` cast to ``type_`` — one cast of them all, or one by one when some do not cast —
    and the mask of those that did not (null in the result)."""
    strings = pa.array(texts, pa.string())
    try:
        return strings.cast(type_), np.zeros(len(texts), dtype=bool)
    except _ARROW_ERRORS:
        pass
    values, failed = [], np.zeros(len(texts), dtype=bool)
    for i, text in enumerate(texts):
        try:
            values.append(pa.array([text], pa.string()).cast(type_)[0].as_py())
        except _ARROW_ERRORS:
            values.append(None)
            failed[i] = True
    return pa.array(values, type_), failed


# ---------------------------------------------------------------------------- statistics
def _comparable(stat: Any, value: Any) -> bool:
    try:
        stat < value  # noqa: B015 - probing comparability
        return True
    except TypeError:
        return False


def stats_may_match(stats: pq.Statistics | None, num_rows: int, f: Filter, type_: pa.DataType) -> bool:
    """False only when the column chunk statistics prove no row satisfies ``f``."""
    if stats is None:
        return True
    null_count = stats.null_count if stats.has_null_count else None
    if f.op == "is null":
        return null_count is None or null_count > 0
    if null_count is not None and null_count >= num_rows and f.op in NULL_REJECTING:
        return False  # every value is null
    if f.op == "is not null" or not stats.has_min_max:
        return True
    lo, hi = stats.min, stats.max
    floating = pa.types.is_floating(type_)
    if floating and (isinstance(lo, float) and math.isnan(lo) or isinstance(hi, float) and math.isnan(hi)):
        return True
    if f.op in ("starts_with", "ends_with", "contains"):
        if f.op != "starts_with" or not isinstance(lo, str) or not isinstance(hi, str):
            return True
        n = len(f.value)
        return lo[:n] <= f.value <= hi[:n]
    exact, others = typed_values(f.value if f.op in ("in", "not in") else (f.value,), type_)
    converted = [*exact.to_pylist(), *(o.as_py() for o in others)]
    for v in converted:
        if v is None or not _comparable(lo, v) or not _comparable(hi, v):
            return True
    if f.op in ("=", "in"):
        return any(lo <= v <= hi for v in converted)
    if f.op in ("!=", "not in"):
        # NaN != x holds, and NaN is not in statistics: never prune float inequalities
        return floating or not (lo == hi and lo in converted)
    v = converted[0]
    return {"<": lo < v, "<=": lo <= v, ">": hi > v, ">=": hi >= v}[f.op]


def row_group_may_match(metadata: pq.FileMetaData, index: int, filters: Iterable[Filter],
                        schema: pa.Schema) -> bool:
    """Whether row group ``index`` may hold a row satisfying every filter (by its statistics)."""
    group = metadata.row_group(index)
    positions = _column_positions(metadata)
    for f in filters:
        pos = positions.get(f.column)
        if pos is None or f.column not in schema.names:
            continue
        if not stats_may_match(group.column(pos).statistics, group.num_rows, f, schema.field(f.column).type):
            return False
    return True


def _column_positions(metadata: pq.FileMetaData) -> dict[str, int]:
    """Top-level column name → leaf index (only flat columns can be judged by statistics)."""
    out = {}
    arrow = metadata.schema.to_arrow_schema()
    leaf = 0
    for field in arrow:
        width = _leaf_count(field.type)
        if width == 1 and not pa.types.is_nested(field.type):
            out[field.name] = leaf
        leaf += width
    return out


def _leaf_count(type_: pa.DataType) -> int:
    if pa.types.is_struct(type_):
        return sum(_leaf_count(type_.field(i).type) for i in range(type_.num_fields))
    if pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_):
        return _leaf_count(type_.value_type)
    if pa.types.is_map(type_):
        return _leaf_count(type_.key_type) + _leaf_count(type_.item_type)
    return 1


def key_range_of(metadata: pq.FileMetaData, index: int, key_column: str) -> KeyRange | None:
    """The record-key range of a row group, from the statistics of the record-key column."""
    pos = _column_positions(metadata).get(key_column)
    if pos is None:
        return None
    stats = metadata.row_group(index).column(pos).statistics
    if stats is None or not stats.has_min_max or not isinstance(stats.min, str):
        return None
    return stats.min, stats.max


def excluded_key_ranges(metadata: pq.FileMetaData, filters: Sequence[Filter], schema: pa.Schema,
                        key_column: str) -> list[KeyRange] | None:
    """Key ranges of a final base file whose rows cannot satisfy the null-rejecting filters.

    Returns None when *every* row group fails (no row of the file group can match); otherwise
    the ranges of the failing row groups (empty when no range can be proven: missing key
    statistics, or row groups whose key ranges overlap, so a key could sit in another group).
    """
    usable = [f for f in filters if f.op in NULL_REJECTING]
    if not usable or metadata.num_row_groups == 0:
        return []
    failing = [not row_group_may_match(metadata, i, usable, schema) for i in range(metadata.num_row_groups)]
    if all(failing):
        return None
    if not any(failing):
        return []
    ranges = [key_range_of(metadata, i, key_column) for i in range(metadata.num_row_groups)]
    if any(r is None for r in ranges):
        return []
    ordered = sorted(range(len(ranges)), key=lambda i: ranges[i])
    for a, b in pairwise(ordered):
        if ranges[a][1] >= ranges[b][0]:
            return []  # overlapping row groups: a failing range may hold another group's keys
    merged: list[list[str]] = []
    previous_failed = False
    for i in ordered:
        if failing[i]:
            if previous_failed:
                merged[-1][1] = ranges[i][1]
            else:
                merged.append([ranges[i][0], ranges[i][1]])
        previous_failed = failing[i]
    return [(lo, hi) for lo, hi in merged]


def range_covered(key_range: KeyRange | None, excluded: Sequence[KeyRange]) -> bool:
    """Whether ``key_range`` lies inside one excluded range."""
    if key_range is None:
        return False
    return any(lo <= key_range[0] and key_range[1] <= hi for lo, hi in excluded)


def excluded_mask(keys: pa.Array, excluded: Sequence[KeyRange]) -> pa.Array | None:
    """Boolean mask of the keys to keep (outside every excluded range), or None to keep all."""
    if not excluded or not len(keys):
        return None
    keys = text_keys(keys)  # key codes compare as their spelling
    drop = None
    for lo, hi in excluded:
        inside = pc.and_(pc.greater_equal(keys, lo), pc.less_equal(keys, hi))
        drop = inside if drop is None else pc.or_(drop, inside)
    return pc.invert(drop)

"""Which file slices a clustering plan takes and how it groups them: the planner's one entry to
Hudi's plan strategies and partition filters (reference: hudi-internals-services.md §2).

The planner (``services/clustering.py``) lists eligible slices as :class:`Candidate` rows, filters
partitions with :func:`filter_partitions`, fills the statistics its strategy needs with
:func:`candidates_with_statistics`, and turns each partition's candidates into groups with
:func:`group_candidates`. Groups never span partitions; each partition gives at most
``max.num.groups`` groups and the plan at most ``max.num.groups`` in all (Hudi 1.x).
:func:`plan_rows` describes a plan as rows (dry runs, the CLI).

**Strategies** (``hoodie.clustering.plan.strategy.class``) are a registry of names, never code:
Hudi's class names are kept as the stored names, pyhudi's own strategies have names in a
``pyhudi.`` package, and every strategy also answers to its simple class name and a short name
(``size-based``, ``single-file-sort``, ``key-range``, ``commit-time``, ``sort-column-overlap``,
``random``). Hudi's deprecated SparkRecentDays/SparkSelectedPartitions (and JavaRecentDays)
classes are size-based with their partition filter mode forced, as Hudi's
``checkAndGetClusteringPlanStrategy`` rewrites them. An unknown name is a :class:`ConfigError`.

**Partitions** (Hudi 1.x PartitionAwareClusteringPlanStrategy, ClusteringPlanPartitionFilter):

1. The starting list: ``hoodie.clustering.plan.strategy.partition.selected`` (a comma list) when
   set — it replaces the table's listing, and the regex is not applied to it, as in Hudi —
   otherwise the listed partitions whose *whole* path matches
   ``hoodie.clustering.plan.strategy.partition.regex.pattern`` (Java's ``Pattern.matches``).
2. The mode, ``hoodie.clustering.plan.partition.filter.mode``: NONE keeps the list; RECENT_DAYS
   sorts paths descending (string order), skips ``skipfromlatest`` (a negative count skips none),
   takes ``lookback`` (``<= 0`` takes all); SELECTED_PARTITIONS keeps ``begin <= path <= end``
   (string order, inclusive; a missing bound leaves that side open — Hudi 1.x's behaviour, older
   releases failed on a null bound); DAY_ROLLING sorts ascending and keeps index ``i`` where
   ``i % 24`` is the current hour, so each hour of a day clusters another 1/24th.

The order returned matters: groups are capped at ``max.num.groups`` in that order, so RECENT_DAYS
keeps the newest partitions' groups. String order compares code points (Java compares UTF-16
units; they differ only for characters outside the Basic Multilingual Plane).

**Statistics** come from base-file footers alone: a column's range is the min of the row-group
minima and the max of the maxima; row groups of nulls only add nothing, and a column that is all
null has the range ``(None, None)``. An absent or nested column, or a row group with values but no
min/max, gives no range (the strategies set such a slice aside rather than guess). Record-key
ranges are Hudi's footer entries ``hoodie_min_record_key``/``hoodie_max_record_key``, else the
statistics of ``_hoodie_record_key``; both describe the base file only, not its log files.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import pyarrow.parquet as pq

from pyhudi.config import clustering as cl
from pyhudi.errors import ConfigError
from pyhudi.schema import RECORD_KEY_FIELD
from pyhudi.services import clustering_strategies as strategies
from pyhudi.services.clustering_strategies import (
    Candidate,
    GroupSpec,
    group_cap,
    planned_size,
    single_file_groups,
    size_based_groups,
)
from pyhudi.storage.fs import Storage

__all__ = [
    "Candidate", "GroupSpec", "PlanStrategy", "STRATEGIES", "candidates_with_statistics", "column_ranges_of",
    "filter_partitions", "group_candidates", "plan_rows", "resolve_plan_strategy", "single_file_groups",
    "size_based_groups",
]

GroupBuilder = Callable[[Sequence[Candidate], Mapping[str, str]], "list[GroupSpec]"]

MIN_KEY_FOOTER = b"hoodie_min_record_key"
MAX_KEY_FOOTER = b"hoodie_max_record_key"
_UNKNOWN = object()
"""A column without a known range (absent, nested, or values without min/max statistics)."""


@dataclass(frozen=True)
class PlanStrategy:
    """One registered plan strategy: its names, how it groups one partition's candidates, and
    what the planner must read for it."""

    name: str
    """The name stored in ``hoodie.clustering.plan.strategy.class`` (Hudi's class name where Hudi has one)."""
    short_name: str
    build: GroupBuilder
    filter_mode: str | None = None
    """A partition filter mode this (deprecated) class forces, whatever the mode option says."""
    needs_key_ranges: bool = False
    needs_sort_column_ranges: bool = False

    @property
    def simple_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]


STRATEGIES: tuple[PlanStrategy, ...] = (
    PlanStrategy(cl.SIZE_BASED_PLAN_STRATEGY, "size-based", size_based_groups),
    PlanStrategy(cl.SINGLE_FILE_SORT_PLAN_STRATEGY, "single-file-sort", single_file_groups),
    PlanStrategy(cl.KEY_RANGE_PLAN_STRATEGY, "key-range", strategies.key_range_groups, needs_key_ranges=True),
    PlanStrategy(cl.COMMIT_TIME_PLAN_STRATEGY, "commit-time", strategies.commit_time_groups),
    PlanStrategy(cl.SORT_COLUMN_OVERLAP_PLAN_STRATEGY, "sort-column-overlap", strategies.sort_overlap_groups,
                 needs_sort_column_ranges=True),
    PlanStrategy(cl.RANDOM_PLAN_STRATEGY, "random", strategies.random_groups),
    # other engines' spellings of the default, and Hudi's deprecated partition-filter classes
    PlanStrategy(cl.FLINK_SIZE_BASED_PLAN_STRATEGY, "flink-size-based", size_based_groups),
    PlanStrategy(cl.JAVA_SIZE_BASED_PLAN_STRATEGY, "java-size-based", size_based_groups),
    PlanStrategy(cl.RECENT_DAYS_PLAN_STRATEGY, "recent-days", size_based_groups, filter_mode="RECENT_DAYS"),
    PlanStrategy(cl.SELECTED_PARTITIONS_PLAN_STRATEGY, "selected-partitions", size_based_groups,
                 filter_mode="SELECTED_PARTITIONS"),
    PlanStrategy(cl.JAVA_RECENT_DAYS_PLAN_STRATEGY, "java-recent-days", size_based_groups, filter_mode="RECENT_DAYS"),
)


def resolve_plan_strategy(options: Mapping[str, str]) -> PlanStrategy:
    """The registered strategy named by ``hoodie.clustering.plan.strategy.class`` (full class name,
    simple class name or short name; case does not matter)."""
    raw = cl.PLAN_STRATEGY.get(options)
    wanted = (raw or "").strip().lower()
    for strategy in STRATEGIES:
        if wanted in (strategy.name.lower(), strategy.simple_name.lower(), strategy.short_name):
            return strategy
    known = ", ".join(f"{s.short_name} ({s.simple_name})" for s in STRATEGIES)
    raise ConfigError(f"unknown clustering plan strategy {raw!r} for {cl.PLAN_STRATEGY.key}: known strategies "
                      f"are {known}")


def filter_partitions(partitions: Sequence[str], options: Mapping[str, str], now_hour: int | None = None) -> list[str]:
    """The partitions a plan considers, in the order their groups are taken: the explicit
    selection or the regex-filtered listing, then the partition filter mode (a deprecated
    strategy class forces its own). ``now_hour`` is DAY_ROLLING's hour (default: the local clock)."""
    strategy = resolve_plan_strategy(options)
    mode = strategy.filter_mode or cl.PARTITION_FILTER_MODE.get(options)
    return apply_filter_mode(starting_partitions(partitions, options), mode, options, now_hour)


def group_candidates(by_partition: Mapping[str, Sequence[Candidate]], options: Mapping[str, str], *,
                     sort_columns: Sequence[str] | None = None) -> list[GroupSpec]:
    """The plan's groups: each partition's (in the mapping's order, which should be
    :func:`filter_partitions`' order) grouped by the configured strategy and capped at
    ``max.num.groups``, then the whole capped at ``max.num.groups``. ``sort_columns`` (the
    schedule call's) stand in for ``hoodie.clustering.plan.strategy.sort.columns``."""
    options = _with_sort_columns(options, sort_columns)
    strategy = resolve_plan_strategy(options)
    cap = group_cap(options)
    groups: list[GroupSpec] = []
    for candidates in by_partition.values():
        if len(groups) >= cap:
            break
        groups.extend(strategy.build(candidates, options)[:cap])
    return groups[:cap]


def candidates_with_statistics(candidates: Sequence[Candidate], storage: Storage, options: Mapping[str, str], *,
                               sort_columns: Sequence[str] | None = None) -> list[Candidate]:
    """The candidates with what the configured strategy compares filled from their base files'
    footers: record-key ranges (key-range) or sort-column ranges (sort-column-overlap); other
    strategies read nothing."""
    options = _with_sort_columns(options, sort_columns)
    strategy = resolve_plan_strategy(options)
    columns = cl.SORT_COLUMNS.get(options) if strategy.needs_sort_column_ranges else ()
    return with_statistics(candidates, storage, key_ranges=strategy.needs_key_ranges, columns=columns)


def plan_rows(groups: Sequence[GroupSpec], options: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """One row per group, for dry runs and the CLI: its partition, file ids, base file sizes,
    planned input bytes (log-only slices count as ``hoodie.parquet.max.file.size``), how many file
    groups it writes and whether it keeps its file id."""
    return [
        {
            "group": index,
            "partition": group.partition_path,
            "file_ids": list(group.file_ids),
            "sizes": [c.size for c in group.candidates],
            "input_bytes": sum(planned_size(c, options) for c in group.candidates),
            "output_file_groups": group.num_output_file_groups,
            "preserve_file_id": group.preserve_file_id,
        }
        for index, group in enumerate(groups)
    ]


def _with_sort_columns(options: Mapping[str, str], sort_columns: Sequence[str] | None) -> Mapping[str, str]:
    if sort_columns is None:
        return options
    return {**options, cl.SORT_COLUMNS.key: ",".join(sort_columns)}


# ----------------------------------------------------------------- partition filters
def starting_partitions(partitions: Sequence[str], options: Mapping[str, str]) -> list[str]:
    """Step 1: the explicit selection, else the listing filtered by the regex (duplicates dropped)."""
    selected = cl.PARTITION_SELECTED.get(options)
    if selected:
        return list(dict.fromkeys(selected))
    pattern = cl.PARTITION_REGEX.get(options)
    if not pattern:
        return list(dict.fromkeys(partitions))
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"invalid value {pattern!r} for {cl.PARTITION_REGEX.key}: {exc}") from None
    return [p for p in dict.fromkeys(partitions) if regex.fullmatch(p)]


def apply_filter_mode(partitions: Sequence[str], mode: str, options: Mapping[str, str],
                      now_hour: int | None = None) -> list[str]:
    """Step 2: the partition filter mode (see the module docstring)."""
    if mode == "NONE":
        return list(partitions)
    if mode == "RECENT_DAYS":
        return recent_days(partitions, cl.LOOKBACK_PARTITIONS.get(options), cl.SKIP_LATEST_PARTITIONS.get(options))
    if mode == "SELECTED_PARTITIONS":
        return selected_range(partitions, cl.BEGIN_PARTITION.get(options), cl.END_PARTITION.get(options))
    if mode == "DAY_ROLLING":
        return day_rolling(partitions, current_hour() if now_hour is None else now_hour)
    known = ", ".join(cl.PARTITION_FILTER_MODE.choices or ())
    raise ConfigError(f"invalid value {mode!r} for {cl.PARTITION_FILTER_MODE.key}: expected one of {known}")


def recent_days(partitions: Sequence[str], lookback: int, skip: int) -> list[str]:
    """RECENT_DAYS: newest first (descending string order), ``skip`` skipped, ``lookback`` taken."""
    ordered = sorted(partitions, reverse=True)[max(skip, 0):]
    return ordered[:lookback] if lookback > 0 else ordered


def selected_range(partitions: Sequence[str], begin: str | None, end: str | None) -> list[str]:
    """SELECTED_PARTITIONS: ``begin <= path <= end`` (string order), listing order kept."""
    return [p for p in partitions if (begin is None or p >= begin) and (end is None or p <= end)]


def day_rolling(partitions: Sequence[str], hour: int) -> list[str]:
    """DAY_ROLLING: ascending order, every 24th path starting at index ``hour``."""
    if not 0 <= hour <= 23:
        raise ConfigError(f"DAY_ROLLING partition filter: hour {hour!r} is not an hour of the day (0-23)")
    return sorted(partitions)[hour::24]


def current_hour() -> int:
    """The hour of the local clock, as Hudi's ``DateTime.now().getHourOfDay()``."""
    return datetime.datetime.now().hour


# ----------------------------------------------------------------- footer statistics


def read_footer(storage: Storage, relpath: str) -> pq.FileMetaData:
    """The footer of a base file (one ranged read of its tail)."""
    with storage.open_input(relpath) as handle:
        return pq.ParquetFile(handle).metadata


def column_ranges_of(storage: Storage, relpath: str, columns: Iterable[str]) -> dict[str, tuple[Any, Any]]:
    """min/max of each of ``columns`` in the Parquet file at ``relpath`` (see the module docstring
    for nulls and unknowns); values are Python values as pyarrow decodes statistics (int, str,
    datetime, date, Decimal ...)."""
    return ranges_from_footer(read_footer(storage, relpath), columns)


def ranges_from_footer(metadata: pq.FileMetaData, columns: Iterable[str]) -> dict[str, tuple[Any, Any]]:
    """:func:`column_ranges_of` over an already read footer."""
    leaves = _top_level_leaves(metadata)
    out: dict[str, tuple[Any, Any]] = {}
    for column in columns:
        leaf = leaves.get(column)
        span = _column_range(metadata, leaf) if leaf is not None else _UNKNOWN
        if span is not _UNKNOWN:
            out[column] = span  # type: ignore[assignment]
    return out


def key_range_from_footer(metadata: pq.FileMetaData) -> tuple[str | None, str | None]:
    """The record-key range: Hudi's footer entries when present, else the key column's statistics."""
    extra = metadata.metadata or {}
    if MIN_KEY_FOOTER in extra and MAX_KEY_FOOTER in extra:
        return extra[MIN_KEY_FOOTER].decode(), extra[MAX_KEY_FOOTER].decode()
    span = ranges_from_footer(metadata, [RECORD_KEY_FIELD]).get(RECORD_KEY_FIELD)
    if span is None or span[0] is None or not isinstance(span[0], str):
        return None, None
    return span[0], span[1]


def with_statistics(candidates: Sequence[Candidate], storage: Storage, *, key_ranges: bool,
                    columns: Sequence[str]) -> list[Candidate]:
    """The candidates with ``min_key``/``max_key`` (when ``key_ranges``) and ``column_ranges`` of
    ``columns`` filled from their base files' footers (one footer read per base file; slices
    without a base file are returned as they are)."""
    if not key_ranges and not columns:
        return list(candidates)
    out = []
    for candidate in candidates:
        if not candidate.base_relpath:
            out.append(candidate)
            continue
        metadata = read_footer(storage, candidate.base_relpath)
        changes: dict[str, Any] = {}
        if key_ranges:
            changes["min_key"], changes["max_key"] = key_range_from_footer(metadata)
        if columns:
            changes["column_ranges"] = ranges_from_footer(metadata, columns)
        out.append(replace(candidate, **changes))
    return out


def _top_level_leaves(metadata: pq.FileMetaData) -> dict[str, int]:
    """Column name → leaf index, for top-level primitive columns only: a leaf whose schema path
    is its own name (a nested leaf's path has its parents in front)."""
    schema = metadata.schema
    out: dict[str, int] = {}
    for i in range(len(schema)):
        leaf = schema.column(i)
        if leaf.path == leaf.name and leaf.max_repetition_level == 0:
            out[leaf.name] = i
    return out


def _column_range(metadata: pq.FileMetaData, leaf: int) -> Any:
    low = high = None
    for i in range(metadata.num_row_groups):
        group = metadata.row_group(i)
        if group.num_rows == 0:
            continue
        stats = group.column(leaf).statistics
        if stats is not None and stats.has_min_max:
            low = stats.min if low is None else min(low, stats.min)
            high = stats.max if high is None else max(high, stats.max)
        elif stats is None or not stats.has_null_count or stats.null_count < group.num_rows:
            return _UNKNOWN
    return (low, high)

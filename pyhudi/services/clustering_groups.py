"""Which file slices a clustering plan takes and how it groups them (Hudi's plan strategies and
partition filters, reference: hudi-internals-services.md §2).

Pure functions over :class:`Candidate` rows, so every strategy is tested on constructed sizes.
The planner (``services/clustering.py``) lists eligible slices, filters partitions with
:func:`filter_partitions`, and turns each partition's candidates into groups with
:func:`group_candidates`; groups never span partitions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from pyhudi.config import clustering as cl
from pyhudi.config.write import MAX_FILE_SIZE


@dataclass(frozen=True)
class Candidate:
    """One eligible file slice (the latest of its file group) and what strategies look at."""

    partition_path: str
    file_id: str
    size: int
    """Base file bytes (0 when the slice has no base file)."""
    base_relpath: str = ""
    log_relpaths: tuple[str, ...] = ()
    base_instant: str = ""
    min_key: str | None = None
    max_key: str | None = None
    column_ranges: Mapping[str, tuple[Any, Any]] = field(default_factory=dict)
    """min/max of the sort columns in the base file, where known (Parquet statistics)."""


@dataclass(frozen=True)
class GroupSpec:
    """One clustering group: its input slices and how many file groups it writes."""

    candidates: tuple[Candidate, ...]
    num_output_file_groups: int

    @property
    def size(self) -> int:
        return sum(_planned_size(c, None) for c in self.candidates)


def _planned_size(candidate: Candidate, options: Mapping[str, str] | None) -> int:
    """A slice's size for packing: its base file, or ``hoodie.parquet.max.file.size`` without one."""
    return candidate.size or MAX_FILE_SIZE.get(options or {})


def filter_partitions(partitions: Sequence[str], options: Mapping[str, str], now_hour: int) -> list[str]:
    """The partitions a plan considers: the regex filter, then the partition filter mode."""
    mode = cl.PARTITION_FILTER_MODE.get(options)
    if mode != "NONE":
        raise NotImplementedError(mode)  # other modes: filled in by the strategies work
    return list(partitions)


def group_candidates(by_partition: Mapping[str, Sequence[Candidate]], options: Mapping[str, str]) -> list[GroupSpec]:
    """Groups of every partition (in partition order), capped at ``max.num.groups`` in total."""
    cap = cl.MAX_NUM_GROUPS.get(options)
    groups: list[GroupSpec] = []
    for partition in sorted(by_partition):
        groups.extend(size_based_groups(by_partition[partition], options))
    return groups[:cap]


def size_based_groups(candidates: Sequence[Candidate], options: Mapping[str, str]) -> list[GroupSpec]:
    """Hudi's default (SparkSizeBasedClusteringPlanStrategy, 1.x): largest slices first, packed
    greedily up to ``max.bytes.per.group``; at most ``max.num.groups`` groups; a last group of one
    slice is kept only when single-group clustering is enabled."""
    max_bytes = cl.MAX_BYTES_PER_GROUP.get(options)
    cap = cl.MAX_NUM_GROUPS.get(options)
    ordered = sorted(candidates, key=lambda c: _planned_size(c, options), reverse=True)
    groups: list[GroupSpec] = []
    current: list[Candidate] = []
    total = 0
    for candidate in ordered:
        size = _planned_size(candidate, options)
        if current and total + size > max_bytes:
            groups.append(_spec(current, total, options))
            if len(groups) >= cap:
                return groups
            current, total = [], 0
        current.append(candidate)
        total += size
    if current and (len(current) > 1 or cl.SINGLE_GROUP_CLUSTERING.get(options)):
        groups.append(_spec(current, total, options))
    return groups[:cap]


def _spec(candidates: list[Candidate], total: int, options: Mapping[str, str]) -> GroupSpec:
    target = cl.TARGET_FILE_MAX_BYTES.get(options)
    return GroupSpec(tuple(candidates), max(1, math.ceil(total / target)))

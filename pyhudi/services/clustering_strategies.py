"""Clustering groups: the rows a plan is made of (:class:`Candidate`, :class:`GroupSpec`), Hudi's
packing rule, and every grouping strategy (reference: hudi-internals-services.md §2 "Group
formation"; RFC-19 "Grouping").

Every strategy orders one partition's candidates into one or more *runs* and packs each run with
:func:`pack`, Hudi 1.x's rule (PartitionAwareClusteringPlanStrategy): walk the run, close the
current group when the next slice would push it past ``max.bytes.per.group``, and keep a run's
last group only when it holds more than one slice or single-group clustering is enabled; a group
writes ``ceil(bytes / target.file.max.bytes)`` file groups. Strategies differ only in the order
and the runs, so the rule is written once and means the same for all of them:

- size-based (Hudi's default): largest first;
- single-file sort (Hudi): one group per slice, one output keeping the file id;
- record-key range: by min/max record key, so neighbouring key ranges share a group;
- commit time: by base instant, oldest first;
- sort-column overlap: connected components of overlapping sort-column ranges;
- random: a seeded, reproducible shuffle.

Slices whose statistics are unknown (no base file, no Parquet statistics) are never guessed into
a range: they form their own run, largest first, after the others. Pure functions, no I/O and no
strategy names (those are in ``clustering_groups``), so each strategy is tested on constructed rows.
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from pyhudi.config import clustering as cl
from pyhudi.config.keys import ConfigKey
from pyhudi.config.write import MAX_FILE_SIZE
from pyhudi.errors import ConfigError

Options = Mapping[str, str]


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
    """min/max of the sort columns in the base file, where known (Parquet statistics); ``(None,
    None)`` for a column whose values in the file are all null."""


@dataclass(frozen=True)
class GroupSpec:
    """One clustering group: its input slices and how many file groups it writes.

    ``preserve_file_id``: the group's single output keeps its input's file id
    (SparkSingleFileSortPlanStrategy, paired with Hudi's single-file sort execution).
    """

    candidates: tuple[Candidate, ...]
    num_output_file_groups: int
    preserve_file_id: bool = False

    @property
    def size(self) -> int:
        """Planned input bytes, a slice without a base file counted as the default
        ``hoodie.parquet.max.file.size`` (:func:`planned_size` with the options is exact)."""
        return sum(planned_size(c, None) for c in self.candidates)

    @property
    def partition_path(self) -> str:
        return self.candidates[0].partition_path

    @property
    def file_ids(self) -> tuple[str, ...]:
        return tuple(c.file_id for c in self.candidates)


def planned_size(candidate: Candidate, options: Mapping[str, str] | None) -> int:
    """A slice's size for packing: its base file, or ``hoodie.parquet.max.file.size`` without one
    (Hudi counts a log-only slice as a full file, so it is never packed as if free)."""
    return candidate.size or MAX_FILE_SIZE.get(options or {})


def positive(key: ConfigKey[int], options: Mapping[str, str]) -> int:
    """A size or count that must be above zero (it divides or bounds the packing)."""
    value = key.get(options)
    if value <= 0:
        raise ConfigError(f"invalid value {value!r} for {key.key}: must be greater than 0")
    return value


def group_cap(options: Mapping[str, str]) -> int:
    """``max.num.groups``: 0 plans nothing (as Hudi's ``limit(0)``); a negative cap is refused."""
    cap = cl.MAX_NUM_GROUPS.get(options)
    if cap < 0:
        raise ConfigError(f"invalid value {cap!r} for {cl.MAX_NUM_GROUPS.key}: must be 0 or more")
    return cap


def pack(run: Sequence[Candidate], options: Mapping[str, str]) -> list[GroupSpec]:
    """Hudi's greedy packing of one ordered run (see the module docstring)."""
    max_bytes = positive(cl.MAX_BYTES_PER_GROUP, options)
    groups: list[GroupSpec] = []
    current: list[Candidate] = []
    total = 0
    for candidate in run:
        size = planned_size(candidate, options)
        if current and total + size > max_bytes:
            groups.append(make_spec(current, total, options))
            current, total = [], 0
        current.append(candidate)
        total += size
    if current and (len(current) > 1 or cl.SINGLE_GROUP_CLUSTERING.get(options)):
        groups.append(make_spec(current, total, options))
    return groups


def pack_runs(runs: Sequence[Sequence[Candidate]], options: Mapping[str, str]) -> list[GroupSpec]:
    """Each run packed on its own (a group never mixes two runs), groups in run order."""
    return [group for run in runs if run for group in pack(run, options)]


def make_spec(candidates: Sequence[Candidate], total: int, options: Mapping[str, str]) -> GroupSpec:
    """A group writing ``ceil(total / target.file.max.bytes)`` file groups (at least one)."""
    target = positive(cl.TARGET_FILE_MAX_BYTES, options)
    return GroupSpec(tuple(candidates), max(1, math.ceil(total / target)))


def size_based_groups(candidates: Sequence[Candidate], options: Mapping[str, str]) -> list[GroupSpec]:
    """Hudi's default (SparkSizeBasedClusteringPlanStrategy, 1.x): largest slices first (a stable
    sort, so equal sizes keep the listing order), packed greedily."""
    ordered = sorted(candidates, key=lambda c: planned_size(c, options), reverse=True)
    return pack(ordered, options)


def single_file_groups(candidates: Sequence[Candidate], options: Mapping[str, str]) -> list[GroupSpec]:
    """SparkSingleFileSortPlanStrategy: one group per slice in listing order, one output that keeps
    the slice's file id. Its groups are single by design, so (as in Hudi) the single-group switch
    does not drop them."""
    del options  # the same for every setting
    return [GroupSpec((c,), 1, preserve_file_id=True) for c in candidates]



def key_range_groups(candidates: Sequence[Candidate], options: Options) -> list[GroupSpec]:
    """Slices in record-key order (by min key, then max key), packed: neighbouring and overlapping
    key ranges share a group, so the rewritten files hold disjoint key ranges (the bloom and range
    index prune them). Ranges come from the base file, so a slice's log files may reach beyond."""
    keyed = [c for c in candidates if c.min_key is not None and c.max_key is not None]
    keyed.sort(key=lambda c: (c.min_key, c.max_key, c.file_id))
    unknown = [c for c in candidates if c.min_key is None or c.max_key is None]
    return pack_runs([keyed, _largest_first(unknown, options)], options)


def commit_time_groups(candidates: Sequence[Candidate], options: Options) -> list[GroupSpec]:
    """Slices by base instant, oldest first (slices without one last), packed: data written close
    in time is rewritten together, and the oldest small files go first under ``max.num.groups``."""
    ordered = sorted(candidates, key=lambda c: (c.base_instant == "", c.base_instant, c.file_id))
    return pack(ordered, options)


def random_groups(candidates: Sequence[Candidate], options: Options) -> list[GroupSpec]:
    """Slices shuffled, packed. Reproducible: the shuffle starts from file-id order and its seed is
    ``hoodie.pyhudi.clustering.plan.strategy.random.seed`` with the partition path, so the same
    inputs give the same plan in any process (string seeds do not depend on hash randomization)."""
    ordered = sorted(candidates, key=lambda c: c.file_id)
    if ordered:
        seed = cl.RANDOM_SEED.get(options)
        random.Random(f"{seed}/{ordered[0].partition_path}").shuffle(ordered)
    return pack(ordered, options)


def sort_overlap_groups(candidates: Sequence[Candidate], options: Options) -> list[GroupSpec]:
    """Slices whose sort-column ranges overlap are grouped (RFC-19 2.4): the connected components of
    "the boxes of min/max on every sort column intersect", each packed on its own, components of
    more slices first. A slice overlapping nothing is a group of one (kept when single-group
    clustering is enabled: its rewrite sorts it). Slices missing a range come last, packed by size."""
    columns = cl.SORT_COLUMNS.get(options)
    if not columns:
        raise ConfigError(
            f"the sort-column overlap clustering strategy needs {cl.SORT_COLUMNS.key} "
            "(the columns whose min/max ranges are compared)")
    known = [c for c in candidates if all(col in c.column_ranges for col in columns)]
    unknown = [c for c in candidates if not all(col in c.column_ranges for col in columns)]
    components = overlap_components(known, columns)
    return pack_runs([*components, _largest_first(unknown, options)], options)


def overlap_components(candidates: Sequence[Candidate], columns: Sequence[str]) -> list[list[Candidate]]:
    """Connected components of the overlap relation over ``column_ranges`` (every candidate must
    have a range for every column). Within a component slices are in order of their range on the
    first column; components are ordered by size (most slices first), then by that order.

    A sweep over the first column (ranges sorted by min, stop once a min passes the current max)
    keeps the pair checks near linear when files are already well clustered."""
    first = columns[0]
    ordered = sorted(candidates, key=functools.cmp_to_key(
        lambda a, b: _compare_ranges(a.column_ranges[first], b.column_ranges[first]) or _cmp(a.file_id, b.file_id)))
    parent = list(range(len(ordered)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(ordered):
        span = a.column_ranges[first]
        for j in range(i + 1, len(ordered)):
            b = ordered[j]
            if _starts_after(b.column_ranges[first], span):
                break
            if root(j) != root(i) and all(ranges_overlap(a.column_ranges[c], b.column_ranges[c]) for c in columns):
                parent[root(j)] = root(i)
    members: dict[int, list[Candidate]] = {}
    for i, candidate in enumerate(ordered):
        members.setdefault(root(i), []).append(candidate)
    components = list(members.values())  # in order of each component's first member
    components.sort(key=len, reverse=True)  # stable: equal sizes keep range order
    return components


def ranges_overlap(a: tuple[Any, Any], b: tuple[Any, Any]) -> bool:
    """Whether two closed ranges share a value. An all-null range ``(None, None)`` shares only with
    another all-null one (both hold null); ranges of incomparable types never overlap (there is no
    evidence they do: the files come from different schemas)."""
    if _is_null(a) or _is_null(b):
        return _is_null(a) and _is_null(b)
    try:
        return bool(a[0] <= b[1] and b[0] <= a[1])
    except TypeError:
        return False


def _starts_after(later: tuple[Any, Any], span: tuple[Any, Any]) -> bool:
    """In the sweep's order: ``later`` and every range after it cannot overlap ``span``."""
    if _is_null(span):
        return not _is_null(later)
    try:
        return bool(later[0] > span[1])
    except TypeError:
        return True  # another type: sorted apart, and never overlapping


def _compare_ranges(a: tuple[Any, Any], b: tuple[Any, Any]) -> int:
    """All-null ranges first, then by min, then by max."""
    if _is_null(a) or _is_null(b):
        return _cmp(not _is_null(a), not _is_null(b))
    return _cmp(a[0], b[0]) or _cmp(a[1], b[1])


def _cmp(x: Any, y: Any) -> int:
    """Three-way compare; values of incomparable types order by type name (a total order)."""
    try:
        return (x > y) - (x < y)
    except TypeError:
        return _cmp(type(x).__name__, type(y).__name__)


def _is_null(span: tuple[Any, Any]) -> bool:
    return span[0] is None or span[1] is None


def _largest_first(candidates: Sequence[Candidate], options: Options) -> list[Candidate]:
    return sorted(candidates, key=lambda c: planned_size(c, options), reverse=True)

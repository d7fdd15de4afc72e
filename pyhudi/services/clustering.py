"""Clustering (RFC-19 as Apache Hudi 1.x implements it): the plan, its schedule, and its triggers.

**Schedule** (:func:`schedule_clustering`), under the timeline lock as compaction's: the instant
time is generated, the timeline listed, and the latest slice of every file group that is not in
a pending compaction or clustering becomes a :class:`~pyhudi.services.clustering_groups.Candidate`
when its base file is smaller than ``hoodie.clustering.plan.strategy.small.file.limit`` (a slice
without base file counts as size 0). File groups whose latest slice has log files are left out
unless :data:`~pyhudi.config.clustering.INCLUDE_LOG_FILES` is set (their slice is then read
merged). Partitions are filtered and candidates grouped by
:mod:`pyhudi.services.clustering_groups` (Hudi's plan strategies); groups never span partitions.
The plan is Hudi's Avro ``HoodieRequestedReplaceMetadata{operationType: CLUSTER, clusteringPlan}``
in ``<t>.clustering.requested``: slices as full paths (as Hudi stores them), per group the
``TOTAL_IO_*`` metrics and ``numOutputFileGroups``, the execution strategy's class name with the
sort columns in ``strategyParams``, ``preserveHoodieMetadata = true``. Nothing eligible: no plan.

**Refused on bucketed tables** (with or without column families): the bucket index fixes the
file group of every key (RFC-80: one file group per bucket), so rewriting rows into new file
groups would lose them to the index.

Execution lives in :mod:`pyhudi.services.clustering_run`.
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any, Mapping, Sequence

from pyhudi.config import clustering as cl
from pyhudi.config.write import MAX_FILE_SIZE
from pyhudi.context import TableContext
from pyhudi.errors import ConfigError
from pyhudi.fsview.view import FileSlice, FileSystemView
from pyhudi.keygen import partition_layout
from pyhudi.layout import check_lead_bits
from pyhudi.read.skipping import COLUMN_RANGES_KEY
from pyhudi.services.clustering_groups import (
    Candidate, GroupSpec, candidates_with_statistics, filter_partitions, group_candidates,
)
from pyhudi.timeline.instant import Action, parse_instant_time
from pyhudi.timeline.metadata_plans import (
    ClusteringGroup,
    ClusteringPlan,
    ClusteringStrategy,
    RequestedReplaceMetadata,
    SliceInfo,
)
from pyhudi.timeline.timeline import Locked, Timeline

CLUSTER_OPERATION = "CLUSTER"
EXECUTION_STRATEGIES = {cl.SORT_AND_SIZE_EXECUTION_STRATEGY: "sort_and_size"}
"""Hudi's execution strategy class names pyhudi runs (a registry: a plan's name is looked up here,
never imported)."""
LAYOUT_PARAM = cl.LAYOUT_OPTIMIZE_STRATEGY.key
"""ReplaceCommitMetadata ``extraMetadata``: JSON ``{file path: {sort column: [min, max]}}`` of every
file a clustering wrote (values as JSON scalars; dates, times and decimals as ISO / decimal strings)."""
LEAD_BITS_PARAM = cl.LAYOUT_LEAD_BITS.key
"""Strategy params of a plan: a curve's lead bits when not 0 (a re-executed plan orders alike)."""
_MB = 1024 * 1024


# ------------------------------------------------------------------------------ checks
def check_clusterable(context: TableContext) -> None:
    """Refuse tables whose index fixes the file group of a key (the bucket index of RFC-80)."""
    config = context.config
    if config.is_bucketed:
        families = [n for n, f in context.families.items() if not f.is_default]
        kind = f"with column families ({', '.join(families)})" if families else "without column families"
        raise ConfigError(
            f"clustering is refused on table {config.name!r}: it uses the bucket index "
            f"({config.num_buckets} buckets, {kind}), and RFC-80 fixes the file group of every record key to "
            "its bucket's file group — rewriting rows into new file groups would hide them from the index. "
            "Clustering serves tables without buckets"
        )


def sort_columns_of(context: TableContext, sort_columns: Sequence[str] | str | None,
                    options: Mapping[str, str]) -> list[str]:
    """The sort columns asked for (argument, else ``hoodie.clustering.plan.strategy.sort.columns``),
    each checked to be a column of the table."""
    if sort_columns is None:
        columns = list(cl.SORT_COLUMNS.get(options))
    elif isinstance(sort_columns, str):
        columns = [c.strip() for c in sort_columns.split(",") if c.strip()]
    else:
        columns = [str(c).strip() for c in sort_columns]
    names = context.schema.names
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise ConfigError(f"unknown sort column {unknown[0]!r} for clustering: the table's columns are "
                          f"{', '.join(names)}")
    if len(set(columns)) != len(columns):
        raise ConfigError(f"sort columns for clustering are given twice: {', '.join(columns)}")
    return columns


def check_execution_strategy(name: str | None) -> str:
    """The registry entry for an execution strategy class name (an unknown name is an error)."""
    entry = EXECUTION_STRATEGIES.get(name or cl.SORT_AND_SIZE_EXECUTION_STRATEGY)
    if entry is None:
        raise ConfigError(f"unknown clustering execution strategy {name!r} ({cl.EXECUTION_STRATEGY.key}): pyhudi "
                          f"runs {', '.join(EXECUTION_STRATEGIES)}; class names in plans are never loaded")
    return entry


# ------------------------------------------------------------------------------ plan
def _candidate(file_slice: FileSlice) -> Candidate:
    base = file_slice.base_file
    return Candidate(
        partition_path=file_slice.partition_path, file_id=file_slice.file_id, size=base.size if base else 0,
        base_relpath=base.relpath if base else "", log_relpaths=tuple(lf.relpath for lf in file_slice.log_files),
        base_instant=base.instant if base else "",
    )


def _metrics(candidates: Sequence[Candidate], sizes: Mapping[str, int], max_file_size: int) -> dict[str, float]:
    """Hudi's ``FileSliceMetricUtils`` metrics, summed over a group's slices."""
    read = write = log_bytes = logs = 0.0
    for c in candidates:
        slice_logs = float(sum(sizes.get(p, 0) for p in c.log_relpaths))
        read += (c.size + slice_logs) / _MB
        write += (c.size if c.base_relpath else max_file_size) / _MB
        log_bytes += slice_logs
        logs += len(c.log_relpaths)
    return {"TOTAL_IO_READ_MB": read, "TOTAL_IO_WRITE_MB": write, "TOTAL_IO_MB": read + write,
            "TOTAL_LOG_FILES_SIZE": log_bytes, "TOTAL_LOG_FILES": logs}


def _slice_info(context: TableContext, c: Candidate) -> SliceInfo:
    storage = context.storage
    return SliceInfo(data_file_path=storage.uri(c.base_relpath) if c.base_relpath else "",
                     delta_file_paths=[storage.uri(p) for p in c.log_relpaths], file_id=c.file_id,
                     partition_path=c.partition_path, bootstrap_file_path="", version=1)


def _now_hour(instant_time: str) -> int:
    try:
        return parse_instant_time(instant_time).hour
    except Exception:  # (a malformed time never reaches here; the clock is the fallback)
        return _dt.datetime.now().hour


def eligible_candidates(context: TableContext, view: FileSystemView, instant_time: str,
                        sort_columns: Sequence[str], options: Mapping[str, str]) -> dict[str, list[Candidate]]:
    """Per partition (after the partition filters), the latest slices a plan may take: not in a
    pending compaction or clustering, base file under the small-file limit, no log files unless
    included."""
    busy = {*view.pending_compaction_file_groups(), *view.pending_clustering_file_groups()}
    limit = cl.SMALL_FILE_LIMIT.get(options)
    include_logs = cl.INCLUDE_LOG_FILES.get(options)
    selected = list(cl.PARTITION_SELECTED.get(options))
    groups = view.file_groups(selected) if selected else view.file_groups()
    by_partition: dict[str, list[FileSlice]] = {}
    for group in groups:
        if (group.partition_path, group.file_id) in busy:
            continue
        latest = group.latest_slice(None, False)
        if latest.is_empty or (latest.log_files and not include_logs):
            continue
        if (latest.base_file.size if latest.base_file else 0) >= limit:
            continue
        by_partition.setdefault(group.partition_path, []).append(latest)
    # Hudi filters the table's partition listing (RECENT_DAYS counts partitions, not eligible
    # ones) and keeps the filter's order, which the group cap then follows
    listed = selected or view.partitions()
    kept = filter_partitions(listed, options, _now_hour(instant_time))
    return {p: candidates_with_statistics([_candidate(s) for s in by_partition[p]], context.storage, options,
                                          sort_columns=sort_columns)
            for p in kept if p in by_partition}


def plan_clustering(context: TableContext, timeline: Timeline, instant_time: str, *,
                    sort_columns: Sequence[str] | str | None = None,
                    options: Mapping[str, str] | None = None) -> RequestedReplaceMetadata | None:
    """The requested metadata a clustering at ``instant_time`` would carry (None: nothing is
    eligible); writes nothing. ``timeline`` must be listed after ``instant_time`` was generated."""
    options = {**context.config.props, **(options or {})}
    check_clusterable(context)
    columns = sort_columns_of(context, sort_columns, options)
    strategy_name = cl.EXECUTION_STRATEGY.get(options)
    check_execution_strategy(strategy_name)
    layout = cl.LAYOUT_OPTIMIZE_STRATEGY.get(options)
    lead_bits = check_lead_bits(cl.LAYOUT_LEAD_BITS.get(options))
    view = FileSystemView(context.storage, timeline, partition_layout(context.config).depth,
                          family_since=context.family_since)
    by_partition = eligible_candidates(context, view, instant_time, columns, options)
    specs: list[GroupSpec] = group_candidates(by_partition, options, sort_columns=columns) if by_partition else []
    if not specs:
        return None
    sizes = {lf.relpath: lf.size for g in view.file_groups(list(by_partition)) for lf in g.log_files}
    max_file_size = MAX_FILE_SIZE.get(options)
    groups = [ClusteringGroup(slices=[_slice_info(context, c) for c in spec.candidates],
                              metrics=_metrics(spec.candidates, sizes, max_file_size),
                              num_output_file_groups=spec.num_output_file_groups, extra_metadata=None, version=1)
              for spec in specs]
    params = {cl.SORT_COLUMNS.key: ",".join(columns)} if columns else {}
    if columns and layout != cl.LAYOUT_OPTIMIZE_STRATEGY.default:
        params[LAYOUT_PARAM] = layout
        if lead_bits:
            params[LEAD_BITS_PARAM] = str(lead_bits)
    plan = ClusteringPlan(input_groups=groups,
                          strategy=ClusteringStrategy(strategy_class_name=strategy_name, strategy_params=params,
                                                      version=1),
                          extra_metadata={}, version=1, preserve_hoodie_metadata=True,
                          missing_schedule_partitions=None)
    return RequestedReplaceMetadata(operation_type=CLUSTER_OPERATION, clustering_plan=plan, extra_metadata={},
                                    version=1)


def schedule_clustering(context: TableContext, timeline: Timeline, *, sort_columns: Sequence[str] | str | None = None,
                        options: Mapping[str, str] | None = None) -> str | None:
    """Plan a clustering; returns its instant, or None when nothing is eligible (nothing written)."""
    merged = {**context.config.props, **(options or {})}
    check_clusterable(context)  # bad requests fail before an instant time is taken
    sort_columns_of(context, sort_columns, merged)
    with Locked(timeline.lock):  # no other scheduler plans a file group between listing and plan
        instant_time = timeline.new_instant_time()
        timeline.reload()
        requested = plan_clustering(context, timeline, instant_time, sort_columns=sort_columns, options=options)
        if requested is None:
            return None
        timeline.create_requested(Action.CLUSTERING, instant_time, content=requested.to_avro_bytes())
    return instant_time


# ------------------------------------------------------------------------------ questions about plans
def pending_clusterings(timeline: Timeline) -> dict[str, ClusteringPlan]:
    """Plans of the clusterings not completed yet, by instant time."""
    out = {}
    for instant in timeline.pending():
        if instant.action is Action.CLUSTERING:
            requested = timeline.read_metadata(instant.as_requested())
            if requested is not None and requested.clustering_plan is not None:
                out[instant.requested_time] = requested.clustering_plan
    return out


def plan_sort_columns(plan: ClusteringPlan) -> list[str]:
    params = (plan.strategy.strategy_params if plan.strategy else None) or {}
    return [c for c in params.get(cl.SORT_COLUMNS.key, "").split(",") if c]


def describe_plan(requested: RequestedReplaceMetadata | None) -> list[dict[str, Any]]:
    """A plan as plain rows (group, partition, file id, base file, log files) for people and JSON."""
    if requested is None or requested.clustering_plan is None:
        return []
    out = []
    for index, group in enumerate(requested.clustering_plan.input_groups or ()):
        for s in group.slices or ():
            out.append({"group": index, "partition": s.partition_path or "", "file_id": s.file_id,
                        "base_file": (s.data_file_path or "").rsplit("/", 1)[-1] or None,
                        "log_files": [p.rsplit("/", 1)[-1] for p in s.delta_file_paths or ()],
                        "output_file_groups": group.num_output_file_groups})
    return out


def clustering_due(timeline: Timeline, options: Mapping[str, str]) -> bool:
    """Hudi's inline trigger: at least ``hoodie.clustering.inline.max.commits`` write commits
    completed since the last clustering, pending or completed (or since the table began)."""
    completed = timeline.completed()
    last = max((i.requested_time for i in timeline.instants if i.is_clustering), default="")
    writes = [i for i in completed if str(i.action) in ("commit", "deltacommit", "replacecommit")
              and not i.is_clustering and not i.is_compaction and i.requested_time > last]
    return len(writes) >= cl.INLINE_MAX_COMMITS.get(options)


def column_ranges(metadata: Any) -> dict[str, dict[str, tuple[Any, Any]]]:
    """``{base file name: {sort column: (min, max)}}`` a clustering recorded in its replacecommit
    (:data:`~pyhudi.read.skipping.COLUMN_RANGES_KEY`, what data skipping reads; empty for other commits)."""
    raw = (getattr(metadata, "extra_metadata", None) or {}).get(COLUMN_RANGES_KEY)
    if not raw:
        return {}
    return {name: {c: (v.get("min"), v.get("max")) for c, v in entry["columns"].items()}
            for name, entry in json.loads(raw).items()}

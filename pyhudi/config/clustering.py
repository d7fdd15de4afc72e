"""Clustering settings (Hudi's ``HoodieClusteringConfig`` and layout-optimization keys, names and
defaults), declared once here for the planner, the executor, the write client's inline trigger
and the docs generator (reference: hudi-internals-services.md §2).

Strategy keys hold Hudi's class names so plans and properties written by Apache Hudi stay
meaningful; pyhudi maps each name to its own registry and never loads a class.
"""

from __future__ import annotations

from pyhudi.config.keys import ConfigKey

_PLAN_PACKAGE = "org.apache.hudi.client.clustering.plan.strategy."
_RUN_PACKAGE = "org.apache.hudi.client.clustering.run.strategy."
_UPDATE_PACKAGE = "org.apache.hudi.client.clustering.update.strategy."

SIZE_BASED_PLAN_STRATEGY = _PLAN_PACKAGE + "SparkSizeBasedClusteringPlanStrategy"
SINGLE_FILE_SORT_PLAN_STRATEGY = _PLAN_PACKAGE + "SparkSingleFileSortPlanStrategy"
FLINK_SIZE_BASED_PLAN_STRATEGY = _PLAN_PACKAGE + "FlinkSizeBasedClusteringPlanStrategy"
JAVA_SIZE_BASED_PLAN_STRATEGY = _PLAN_PACKAGE + "JavaSizeBasedClusteringPlanStrategy"
RECENT_DAYS_PLAN_STRATEGY = _PLAN_PACKAGE + "SparkRecentDaysClusteringPlanStrategy"
"""Deprecated in Hudi: size-based with the RECENT_DAYS partition filter (checkAndGetClusteringPlanStrategy)."""
SELECTED_PARTITIONS_PLAN_STRATEGY = _PLAN_PACKAGE + "SparkSelectedPartitionsClusteringPlanStrategy"
"""Deprecated in Hudi: size-based with the SELECTED_PARTITIONS partition filter."""
JAVA_RECENT_DAYS_PLAN_STRATEGY = _PLAN_PACKAGE + "JavaRecentDaysClusteringPlanStrategy"
"""Deprecated in Hudi: Java size-based with the RECENT_DAYS partition filter."""
_PYHUDI_PLAN_PACKAGE = "pyhudi.clustering.plan.strategy."
KEY_RANGE_PLAN_STRATEGY = _PYHUDI_PLAN_PACKAGE + "RecordKeyRangeClusteringPlanStrategy"
COMMIT_TIME_PLAN_STRATEGY = _PYHUDI_PLAN_PACKAGE + "CommitTimeClusteringPlanStrategy"
SORT_COLUMN_OVERLAP_PLAN_STRATEGY = _PYHUDI_PLAN_PACKAGE + "SortColumnOverlapClusteringPlanStrategy"
RANDOM_PLAN_STRATEGY = _PYHUDI_PLAN_PACKAGE + "RandomClusteringPlanStrategy"
SORT_AND_SIZE_EXECUTION_STRATEGY = _RUN_PACKAGE + "SparkSortAndSizeExecutionStrategy"
REJECT_UPDATE_STRATEGY = _UPDATE_PACKAGE + "SparkRejectUpdateStrategy"
ALLOW_UPDATE_STRATEGY = _UPDATE_PACKAGE + "SparkAllowUpdateStrategy"

PLAN_STRATEGY = ConfigKey(
    "hoodie.clustering.plan.strategy.class", str, SIZE_BASED_PLAN_STRATEGY,
    "How a clustering plan groups file slices: Hudi's class names (SparkSizeBasedClusteringPlanStrategy, "
    "SparkSingleFileSortPlanStrategy and the deprecated SparkRecentDays/SparkSelectedPartitions ones) or "
    "pyhudi's (record-key range, commit time, sort-column overlap, random), by full or short name; mapped to "
    "pyhudi's registry, never loaded as code.",
)
EXECUTION_STRATEGY = ConfigKey(
    "hoodie.clustering.execution.strategy.class", str, SORT_AND_SIZE_EXECUTION_STRATEGY,
    "How a clustering group is rewritten: sorted by the sort columns into files of about "
    "target.file.max.bytes (stored in the plan's strategy).",
)
SMALL_FILE_LIMIT = ConfigKey(
    "hoodie.clustering.plan.strategy.small.file.limit", int, 314_572_800,
    "Only file slices whose base file is smaller than this many bytes are clustered.",
)
TARGET_FILE_MAX_BYTES = ConfigKey(
    "hoodie.clustering.plan.strategy.target.file.max.bytes", int, 1_073_741_824,
    "Size of the files a clustering writes; a group's numOutputFileGroups is ceil(size / this).",
)
MAX_BYTES_PER_GROUP = ConfigKey(
    "hoodie.clustering.plan.strategy.max.bytes.per.group", int, 2_147_483_648,
    "A clustering group holds at most this many bytes of input (the greedy packing closes a group there).",
)
MAX_NUM_GROUPS = ConfigKey(
    "hoodie.clustering.plan.strategy.max.num.groups", int, 30,
    "A clustering plan holds at most this many groups (per partition, and in total).",
)
SORT_COLUMNS = ConfigKey(
    "hoodie.clustering.plan.strategy.sort.columns", tuple, (),
    "Comma-separated columns a clustering sorts its output by (passed to the executor in the plan).",
)
SINGLE_GROUP_CLUSTERING = ConfigKey(
    "hoodie.clustering.plan.strategy.single.group.clustering.enabled", bool, True,
    "Whether a group of a single file slice is kept in a plan (it is rewritten sorted).",
)
PARTITION_FILTER_MODE = ConfigKey(
    "hoodie.clustering.plan.partition.filter.mode", str, "NONE",
    "Which partitions a plan considers: all (NONE), the most recent (RECENT_DAYS), a range "
    "(SELECTED_PARTITIONS) or one slice per hour of the day (DAY_ROLLING).",
    choices=("NONE", "RECENT_DAYS", "SELECTED_PARTITIONS", "DAY_ROLLING"),
)
LOOKBACK_PARTITIONS = ConfigKey(
    "hoodie.clustering.plan.strategy.daybased.lookback.partitions", int, 2,
    "RECENT_DAYS: how many of the latest partitions are clustered (<= 0: all).",
)
SKIP_LATEST_PARTITIONS = ConfigKey(
    "hoodie.clustering.plan.strategy.daybased.skipfromlatest.partitions", int, 0,
    "RECENT_DAYS: how many of the very latest partitions are skipped first.",
)
BEGIN_PARTITION = ConfigKey(
    "hoodie.clustering.plan.strategy.cluster.begin.partition", str, None,
    "SELECTED_PARTITIONS: the first partition path clustered (inclusive, string order).",
)
END_PARTITION = ConfigKey(
    "hoodie.clustering.plan.strategy.cluster.end.partition", str, None,
    "SELECTED_PARTITIONS: the last partition path clustered (inclusive, string order).",
)
PARTITION_REGEX = ConfigKey(
    "hoodie.clustering.plan.strategy.partition.regex.pattern", str, None,
    "Only partitions whose whole path matches this regular expression are clustered (applied first).",
)
PARTITION_SELECTED = ConfigKey(
    "hoodie.clustering.plan.strategy.partition.selected", tuple, (),
    "Comma-separated partition paths to cluster, instead of listing the table's partitions.",
)
RANDOM_SEED = ConfigKey(
    "hoodie.pyhudi.clustering.plan.strategy.random.seed", int, 0,
    "pyhudi: seed of the random plan strategy; the same seed, partition and slices give the same groups.",
)
INLINE_CLUSTERING = ConfigKey(
    "hoodie.clustering.inline", bool, False,
    "Schedule and run a clustering after a write commits, every inline.max.commits commits.",
    aliases=("hoodie.datasource.clustering.inline.enable",),
)
INLINE_MAX_COMMITS = ConfigKey(
    "hoodie.clustering.inline.max.commits", int, 4,
    "Commits since the last clustering after which an inline clustering is due.",
)
SCHEDULE_INLINE = ConfigKey(
    "hoodie.clustering.schedule.inline", bool, False,
    "Only schedule a clustering after a write (run it elsewhere); not together with hoodie.clustering.inline.",
)
ASYNC_CLUSTERING = ConfigKey(
    "hoodie.clustering.async.enabled", bool, False,
    "Run clustering asynchronously, apart from the writer.",
    aliases=("hoodie.datasource.clustering.async.enable",),
)
ASYNC_MAX_COMMITS = ConfigKey(
    "hoodie.clustering.async.max.commits", int, 4,
    "Commits since the last clustering after which an asynchronous clustering is scheduled.",
)
UPDATES_STRATEGY = ConfigKey(
    "hoodie.clustering.updates.strategy", str, REJECT_UPDATE_STRATEGY,
    "What a write does to a file group under pending clustering: reject the update (Hudi's default, "
    "SparkRejectUpdateStrategy) or accept it and carry it into the clustering's output (SparkAllowUpdateStrategy).",
)
ROLLBACK_PENDING_ON_CONFLICT = ConfigKey(
    "hoodie.clustering.rollback.pending.replacecommit.on.conflict", bool, False,
    "Allow mode: roll the pending clustering back when an update conflicts with it (the writer rolls back "
    "the plans it updates; a clustering completing over later updates rolls itself back), instead of "
    "carrying the update over.",
)
LAYOUT_OPTIMIZE_STRATEGY = ConfigKey(
    "hoodie.layout.optimize.strategy", str, "linear",
    "How clustering orders rows by the sort columns: lexicographically (linear), along a z-order curve or "
    "a Hilbert curve (z-order and hilbert keep every sort column selective for data skipping).",
    choices=("linear", "z-order", "hilbert"),
)
CURVE_BUILD_METHOD = ConfigKey(
    "hoodie.layout.optimize.curve.build.method", str, "direct",
    "How a space-filling curve maps values: from their rank or value bits (direct) or from boundaries of a "
    "sample (sample).",
    choices=("direct", "sample"),
)
CURVE_SAMPLE_SIZE = ConfigKey(
    "hoodie.layout.optimize.build.curve.sample.size", int, 200_000,
    "Rows sampled to build the curve's boundaries with the sample method.",
)
LAYOUT_LEAD_BITS = ConfigKey(
    "hoodie.pyhudi.layout.optimize.lead.bits", int, 0,
    "pyhudi: z-order and hilbert give the first sort column this many more bits of resolution than the "
    "others: its top bits order the rows linearly before the curve, so clustered files cut the first "
    "column into 2^N times as many ranges as each other sort column (a point filter on it reads about "
    "2^(N/2) times fewer files, one on the others about as many more). 0 (Hudi's curves): every sort "
    "column alike. 0 to 16; the plan stores it.",
)
MAX_PARALLELISM = ConfigKey(
    "hoodie.clustering.max.parallelism", int, 15,
    "At most this many clustering groups run at once.",
)
INCLUDE_LOG_FILES = ConfigKey(
    "hoodie.pyhudi.clustering.plan.include.log.files", bool, False,
    "pyhudi: also cluster file groups whose latest slice has log files (merge-on-read; the slice is read "
    "merged). Off by default, as RFC-19 first specified: such groups are left out of plans.",
)
EXECUTION_BUFFER_BYTES = ConfigKey(
    "hoodie.pyhudi.clustering.execution.buffer.bytes", int, 536_870_912,
    "pyhudi: memory (Arrow bytes) one clustering group may hold while it is ordered. A group that fits is "
    "sorted in memory; a larger one is sorted in runs of this size spilled to .hoodie/.temp/<instant>/ and "
    "merged back streaming, so executing a group holds about this much, whatever the group's size.",
)

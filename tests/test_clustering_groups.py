"""Clustering plan strategies and partition filters (issue 14 item 1), on constructed file slices.

Every grouping strategy is checked on hand-made sizes, key ranges, instants and column ranges
with the exact groups and output counts Hudi's packing rule gives; every partition filter mode on
exact partition lists; the name registry (Hudi's class names, short names, deprecated classes,
unknown names); the footer statistics on real Parquet files; and, with hypothesis, the invariants
every strategy keeps (a slice in at most one group, no group over max bytes unless it is one
slice, no group across partitions, the caps).
"""

from __future__ import annotations

import datetime
import math
import random
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyhudi.config import clustering as cl
from pyhudi.errors import ConfigError
from pyhudi.services import clustering_groups as cg
from pyhudi.services.clustering_groups import (
    Candidate,
    GroupSpec,
    candidates_with_statistics,
    column_ranges_of,
    filter_partitions,
    group_candidates,
    plan_rows,
    resolve_plan_strategy,
)
from pyhudi.services.clustering_strategies import overlap_components, ranges_overlap
from pyhudi.storage.fs import Storage

MB = 1 << 20

STRATEGY = cl.PLAN_STRATEGY.key
MAX_BYTES = cl.MAX_BYTES_PER_GROUP.key
TARGET = cl.TARGET_FILE_MAX_BYTES.key
MAX_GROUPS = cl.MAX_NUM_GROUPS.key
SINGLE = cl.SINGLE_GROUP_CLUSTERING.key
SORT_COLUMNS = cl.SORT_COLUMNS.key
MODE = cl.PARTITION_FILTER_MODE.key


def c(file_id: str, size: int, partition: str = "p", **kw) -> Candidate:
    return Candidate(partition, file_id, size, **kw)


def ids(groups: list[GroupSpec]) -> list[list[str]]:
    return [list(g.file_ids) for g in groups]


def outputs(groups: list[GroupSpec]) -> list[int]:
    return [g.num_output_file_groups for g in groups]


def small(**extra: str) -> dict[str, str]:
    """Byte-sized limits so sizes read as plain numbers: 100 bytes a group, 100-byte output files."""
    return {MAX_BYTES: "100", TARGET: "100", **extra}


# ----------------------------------------------------------------- size-based (Hudi's default)
def test_size_based_with_default_options_packs_largest_first():
    """Defaults: 2 GB a group, 1 GB output files. 1500 MB alone (adding 900 MB passes 2 GB), then
    900+700 (adding 600 passes), then 600+300+100 as the last group."""
    slices = [c("a", 100 * MB), c("b", 700 * MB), c("c", 300 * MB), c("d", 900 * MB),
              c("e", 1500 * MB), c("f", 600 * MB)]
    groups = group_candidates({"p": slices}, {})
    assert ids(groups) == [["e"], ["d", "b"], ["f", "c", "a"]]
    assert outputs(groups) == [2, 2, 1]  # ceil(1500/1024), ceil(1600/1024), ceil(1000/1024)
    assert [g.preserve_file_id for g in groups] == [False, False, False]


def test_size_based_single_group_rule_drops_only_a_last_group_of_one():
    """Hudi 1.x checks the single-slice rule on the last group only: ``[1500]`` (closed because the
    next slice did not fit) stays either way; the trailing ``[400]`` goes when disabled."""
    slices = [c("a", 1500 * MB), c("b", 1000 * MB), c("c", 400 * MB), c("d", 900 * MB)]
    assert ids(group_candidates({"p": slices}, {})) == [["a"], ["b", "d"], ["c"]]
    assert ids(group_candidates({"p": slices}, {SINGLE: "false"})) == [["a"], ["b", "d"]]


def test_a_single_slice_partition_is_planned_only_with_single_group_clustering():
    assert ids(group_candidates({"p": [c("a", 10)]}, {})) == [["a"]]
    assert group_candidates({"p": [c("a", 10)]}, {SINGLE: "false"}) == []


def test_equal_sizes_keep_listing_order_and_exact_fit_closes_no_group():
    """A group may reach max bytes exactly (Hudi closes only when the total would exceed it)."""
    groups = group_candidates({"p": [c("x", 50), c("y", 50), c("z", 50)]}, small())
    assert ids(groups) == [["x", "y"], ["z"]]
    assert outputs(groups) == [1, 1]


def test_output_file_groups_are_ceil_of_bytes_over_target():
    groups = group_candidates({"p": [c("a", 150), c("b", 100)]}, {MAX_BYTES: "1000", TARGET: "100"})
    assert outputs(groups) == [3]  # ceil(250 / 100)
    groups = group_candidates({"p": [c("a", 100), c("b", 100)]}, {MAX_BYTES: "1000", TARGET: "100"})
    assert outputs(groups) == [2]  # exactly 2 targets


def test_a_slice_without_base_file_counts_as_parquet_max_file_size():
    """Log-only slices (size 0) are packed as ``hoodie.parquet.max.file.size`` (120 MB by default)."""
    slices = [c("base", 50 * MB), c("logonly", 0, log_relpaths=(".logonly_1.log.1_0-1-1",))]
    groups = group_candidates({"p": slices}, {})
    assert ids(groups) == [["logonly", "base"]]
    assert plan_rows(groups, {})[0]["input_bytes"] == 170 * MB
    groups = group_candidates({"p": slices}, {"hoodie.parquet.max.file.size": str(10 * MB)})
    assert ids(groups) == [["base", "logonly"]]


def test_groups_never_span_partitions_and_follow_the_partition_order():
    by_partition = {"2024/01/02": [c("n1", 30, "2024/01/02"), c("n2", 30, "2024/01/02")],
                    "2024/01/01": [c("o1", 30, "2024/01/01"), c("o2", 30, "2024/01/01")]}
    groups = group_candidates(by_partition, small())
    assert ids(groups) == [["n1", "n2"], ["o1", "o2"]]
    assert [g.partition_path for g in groups] == ["2024/01/02", "2024/01/01"]


def test_max_num_groups_caps_each_partition_and_the_whole_plan():
    """Partition A yields 2 groups, B would yield 4: with a cap of 3 the plan is A's 2 and B's first."""
    a = [c(f"a{i}", 60, "A") for i in range(4)]
    b = [c(f"b{i}", 60, "B") for i in range(8)]
    groups = group_candidates({"A": a, "B": b}, small(**{MAX_GROUPS: "3"}))
    assert ids(groups) == [["a0"], ["a1"], ["a2"]]  # 60+60 > 100: every slice alone; A alone fills 3
    groups = group_candidates({"A": a[:2], "B": b}, small(**{MAX_GROUPS: "3"}))
    assert ids(groups) == [["a0"], ["a1"], ["b0"]]
    assert group_candidates({"A": a}, small(**{MAX_GROUPS: "0"})) == []


@pytest.mark.parametrize(("key", "value", "message"), [
    (MAX_GROUPS, "-1", "invalid value -1 for hoodie.clustering.plan.strategy.max.num.groups: must be 0 or more"),
    (MAX_BYTES, "0",
     "invalid value 0 for hoodie.clustering.plan.strategy.max.bytes.per.group: must be greater than 0"),
    (TARGET, "-5",
     "invalid value -5 for hoodie.clustering.plan.strategy.target.file.max.bytes: must be greater than 0"),
    (MAX_BYTES, "lots", "invalid value 'lots' for hoodie.clustering.plan.strategy.max.bytes.per.group"),
])
def test_bad_limits_are_config_errors_naming_the_key(key, value, message):
    with pytest.raises(ConfigError) as info:
        group_candidates({"p": [c("a", 10), c("b", 10)]}, {key: value})
    assert str(info.value).startswith(message)


# ----------------------------------------------------------------- single-file sort (Hudi)
def test_single_file_sort_makes_one_group_per_slice_keeping_its_file_id():
    slices = [c("s1", 10), c("s2", 500 * MB), c("s3", 0)]
    options = {STRATEGY: "SparkSingleFileSortPlanStrategy"}
    groups = group_candidates({"p": slices}, options)
    assert ids(groups) == [["s1"], ["s2"], ["s3"]]  # listing order, no packing
    assert outputs(groups) == [1, 1, 1]
    assert [g.preserve_file_id for g in groups] == [True, True, True]
    # its groups are single by design: the single-group switch does not empty the plan (as Hudi)
    assert ids(group_candidates({"p": slices}, {**options, SINGLE: "false"})) == [["s1"], ["s2"], ["s3"]]
    assert ids(group_candidates({"p": slices}, {**options, MAX_GROUPS: "2"})) == [["s1"], ["s2"]]


# ----------------------------------------------------------------- record-key range
def test_key_range_groups_neighbouring_key_ranges_and_sets_unknown_ranges_apart():
    slices = [
        c("f1", 40, min_key="k20", max_key="k29"),
        c("f2", 40, min_key="k00", max_key="k09"),
        c("f3", 40, min_key="k10", max_key="k19"),
        c("f4", 40, min_key="k05", max_key="k15"),
        c("f5", 30),
        c("f6", 50),
    ]
    groups = group_candidates({"p": slices}, small(**{STRATEGY: "key-range"}))
    # k00 k05 | k10 k20 in key order; the two without a key range packed by size on their own
    assert ids(groups) == [["f2", "f4"], ["f3", "f1"], ["f6", "f5"]]
    assert outputs(groups) == [1, 1, 1]


def test_key_range_with_default_options_is_one_group_in_key_order():
    slices = [c("b", 10 * MB, min_key="m", max_key="p"), c("a", 10 * MB, min_key="a", max_key="f"),
              c("c", 10 * MB, min_key="a", max_key="c")]
    groups = group_candidates({"p": slices}, {STRATEGY: cl.KEY_RANGE_PLAN_STRATEGY})
    assert ids(groups) == [["c", "a", "b"]]  # equal min keys: the smaller max key first
    assert outputs(groups) == [1]


# ----------------------------------------------------------------- commit time
def test_commit_time_groups_oldest_base_instants_first():
    slices = [c("a", 60, base_instant="20240103000000000"), c("b", 60, base_instant="20240101000000000"),
              c("c", 60, base_instant="20240102000000000"), c("d", 60)]
    options = {STRATEGY: "commit-time", MAX_BYTES: "130", TARGET: "100"}
    groups = group_candidates({"p": slices}, options)
    assert ids(groups) == [["b", "c"], ["a", "d"]]  # no instant known: last
    assert outputs(groups) == [2, 2]
    groups = group_candidates({"p": slices[:3]}, {**options, SINGLE: "false"})
    assert ids(groups) == [["b", "c"]]  # the trailing single group [a] is dropped


def test_commit_time_caps_at_max_num_groups_keeping_the_oldest():
    slices = [c(f"f{i}", 80, base_instant=f"2024010{9 - i}000000000") for i in range(5)]
    groups = group_candidates({"p": slices}, small(**{STRATEGY: "CommitTimeClusteringPlanStrategy",
                                                      MAX_GROUPS: "2"}))
    assert ids(groups) == [["f4"], ["f3"]]


# ----------------------------------------------------------------- random
def _expected_random(file_ids: list[str], seed: int, partition: str) -> list[str]:
    """The documented permutation: file-id order shuffled by Random("<seed>/<partition>")."""
    order = sorted(file_ids)
    random.Random(f"{seed}/{partition}").shuffle(order)
    return order


def test_random_is_the_seeded_shuffle_packed_and_reproducible():
    slices = [c(f"f{i:02d}", 30, "2024/01/01") for i in range(12)]
    options = small(**{STRATEGY: "random", cl.RANDOM_SEED.key: "7"})
    groups = group_candidates({"2024/01/01": slices}, options)
    order = _expected_random([s.file_id for s in slices], 7, "2024/01/01")
    assert ids(groups) == [order[0:3], order[3:6], order[6:9], order[9:12]]
    assert outputs(groups) == [1, 1, 1, 1]
    shuffled = list(reversed(slices))  # the listing order does not matter
    assert ids(group_candidates({"2024/01/01": shuffled}, options)) == ids(groups)


def test_random_seeds_give_different_orders_and_default_seed_is_zero():
    slices = [c(f"f{i:02d}", 1, "p") for i in range(10)]
    by_seed = {seed: ids(group_candidates({"p": slices}, {STRATEGY: "random", cl.RANDOM_SEED.key: str(seed)}))[0]
               for seed in range(4)}
    assert len({tuple(v) for v in by_seed.values()}) > 1
    assert ids(group_candidates({"p": slices}, {STRATEGY: "random"}))[0] == by_seed[0]
    assert by_seed[0] == _expected_random([s.file_id for s in slices], 0, "p")


# ----------------------------------------------------------------- sort-column overlap
def ranged(file_id: str, size: int, **ranges) -> Candidate:
    return c(file_id, size, column_ranges=ranges)


OVERLAP_SLICES = [
    ranged("s1", 10, a=(0, 10), b=(0, 10)),
    ranged("s2", 10, a=(5, 15), b=(5, 15)),       # overlaps s1 on a and b
    ranged("s3", 10, a=(20, 30), b=(0, 10)),      # a apart from s1, s2
    ranged("s4", 10, a=(25, 35), b=(50, 60)),     # a overlaps s3, b does not: apart
    ranged("s5", 10, a=(12, 22), b=(12, 14)),     # overlaps s2 (a and b); s3 on a only
    ranged("s6", 10, a=(None, None), b=(1, 2)),   # a all null
    ranged("s7", 10, a=(None, None), b=(2, 3)),   # a all null, b touches s6 at 2
    c("s8", 10),                                   # no statistics
]


def test_sort_column_overlap_groups_connected_components():
    options = {STRATEGY: "sort-column-overlap", SORT_COLUMNS: "a,b"}
    groups = group_candidates({"p": OVERLAP_SLICES}, options)
    # components by size, then by the order of their ranges on a (all-null first); unknown last
    assert ids(groups) == [["s1", "s2", "s5"], ["s6", "s7"], ["s3"], ["s4"], ["s8"]]
    assert outputs(groups) == [1, 1, 1, 1, 1]
    groups = group_candidates({"p": OVERLAP_SLICES}, {**options, SINGLE: "false"})
    assert ids(groups) == [["s1", "s2", "s5"], ["s6", "s7"]]


def test_sort_column_overlap_on_one_column_and_a_component_over_max_bytes():
    options = {STRATEGY: cl.SORT_COLUMN_OVERLAP_PLAN_STRATEGY, SORT_COLUMNS: "a", MAX_BYTES: "25", TARGET: "100"}
    groups = group_candidates({"p": OVERLAP_SLICES[:5]}, options)
    # on a alone s3, s4 and s5 join s1/s2's chain: one component of 5 in order of a, split at 25 bytes
    assert ids(groups) == [["s1", "s2"], ["s5", "s3"], ["s4"]]


def test_closed_ranges_touching_at_one_value_overlap():
    assert ranges_overlap((0, 10), (10, 20))
    assert not ranges_overlap((0, 9), (10, 20))
    assert ranges_overlap(("2024-01-01", "2024-01-31"), ("2024-01-31", "2024-02-28"))
    assert ranges_overlap((None, None), (None, None))
    assert not ranges_overlap((None, None), (1, 2))
    assert not ranges_overlap(("a", "z"), (1, 5))  # incomparable types: no evidence of overlap


def test_overlap_components_chain_through_intermediate_ranges():
    chain = [ranged("x", 1, a=(0, 2)), ranged("z", 1, a=(4, 6)), ranged("y", 1, a=(2, 4)), ranged("w", 1, a=(9, 9))]
    assert [[m.file_id for m in comp] for comp in overlap_components(chain, ["a"])] == [["x", "y", "z"], ["w"]]


def test_sort_columns_given_to_the_call_stand_in_for_the_option():
    options = {STRATEGY: "sort-column-overlap", SORT_COLUMNS: "nothing"}
    groups = group_candidates({"p": OVERLAP_SLICES}, options, sort_columns=["a", "b"])
    assert ids(groups) == [["s1", "s2", "s5"], ["s6", "s7"], ["s3"], ["s4"], ["s8"]]
    assert ids(group_candidates({"p": OVERLAP_SLICES}, options))[0] == ["s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8"]


def test_sort_column_overlap_without_sort_columns_is_a_config_error():
    with pytest.raises(ConfigError) as info:
        group_candidates({"p": OVERLAP_SLICES}, {STRATEGY: "sort-column-overlap"})
    assert str(info.value) == ("the sort-column overlap clustering strategy needs "
                               "hoodie.clustering.plan.strategy.sort.columns (the columns whose min/max ranges "
                               "are compared)")


# ----------------------------------------------------------------- names
@pytest.mark.parametrize(("name", "expected"), [
    (None, cl.SIZE_BASED_PLAN_STRATEGY),
    ("org.apache.hudi.client.clustering.plan.strategy.SparkSizeBasedClusteringPlanStrategy",
     cl.SIZE_BASED_PLAN_STRATEGY),
    ("SparkSizeBasedClusteringPlanStrategy", cl.SIZE_BASED_PLAN_STRATEGY),
    ("size-based", cl.SIZE_BASED_PLAN_STRATEGY),
    ("  Key-Range ", cl.KEY_RANGE_PLAN_STRATEGY),
    ("sparksinglefilesortplanstrategy", cl.SINGLE_FILE_SORT_PLAN_STRATEGY),
    ("org.apache.hudi.client.clustering.plan.strategy.FlinkSizeBasedClusteringPlanStrategy",
     cl.FLINK_SIZE_BASED_PLAN_STRATEGY),
    ("pyhudi.clustering.plan.strategy.RandomClusteringPlanStrategy", cl.RANDOM_PLAN_STRATEGY),
])
def test_strategy_names_resolve_by_full_simple_or_short_name(name, expected):
    options = {} if name is None else {STRATEGY: name}
    assert resolve_plan_strategy(options).name == expected


@pytest.mark.parametrize("name", ["com.example.SparkSizeBasedClusteringPlanStrategy", "os.system", "sizebased"])
def test_unknown_strategy_names_are_config_errors_listing_the_known_ones(name):
    with pytest.raises(ConfigError) as info:
        group_candidates({"p": [c("a", 1), c("b", 1)]}, {STRATEGY: name})
    message = str(info.value)
    assert message.startswith(f"unknown clustering plan strategy {name!r} for hoodie.clustering.plan.strategy.class: "
                              "known strategies are size-based (SparkSizeBasedClusteringPlanStrategy), "
                              "single-file-sort (SparkSingleFileSortPlanStrategy), "
                              "key-range (RecordKeyRangeClusteringPlanStrategy), "
                              "commit-time (CommitTimeClusteringPlanStrategy), "
                              "sort-column-overlap (SortColumnOverlapClusteringPlanStrategy), "
                              "random (RandomClusteringPlanStrategy), ")
    assert "recent-days (SparkRecentDaysClusteringPlanStrategy)" in message
    with pytest.raises(ConfigError):
        filter_partitions(["a"], {STRATEGY: name})


def test_every_registered_name_is_unique():
    names = [n.lower() for s in cg.STRATEGIES for n in (s.name, s.simple_name, s.short_name)]
    assert len(names) == len(set(names))


# ----------------------------------------------------------------- partition filters
PARTITIONS = ["2024/01/01", "2024/01/02", "2024/01/03", "2024/01/04", "2023/12/31"]


def test_none_keeps_every_partition_in_listing_order():
    assert filter_partitions(PARTITIONS, {}) == PARTITIONS
    assert filter_partitions(PARTITIONS, {MODE: "NONE"}) == PARTITIONS
    assert filter_partitions([], {}) == []


@pytest.mark.parametrize(("lookback", "skip", "expected"), [
    (None, None, ["2024/01/04", "2024/01/03"]),  # defaults: lookback 2, skip 0
    ("2", "1", ["2024/01/03", "2024/01/02"]),
    ("0", "0", ["2024/01/04", "2024/01/03", "2024/01/02", "2024/01/01", "2023/12/31"]),
    ("-1", "3", ["2024/01/01", "2023/12/31"]),
    ("3", "-2", ["2024/01/04", "2024/01/03", "2024/01/02"]),  # a negative skip skips none
    ("2", "9", []),
])
def test_recent_days_takes_the_newest_after_skipping(lookback, skip, expected):
    options = {MODE: "RECENT_DAYS"}
    if lookback is not None:
        options[cl.LOOKBACK_PARTITIONS.key] = lookback
        options[cl.SKIP_LATEST_PARTITIONS.key] = skip
    assert filter_partitions(PARTITIONS, options) == expected


@pytest.mark.parametrize(("begin", "end", "expected"), [
    ("2024/01/02", "2024/01/03", ["2024/01/02", "2024/01/03"]),
    ("2024/01/03", None, ["2024/01/03", "2024/01/04"]),          # no end: open above (Hudi 1.x)
    (None, "2024/01/01", ["2024/01/01", "2023/12/31"]),          # no begin: open below
    (None, None, PARTITIONS),
    ("2024/01/02", "2024/01/02", ["2024/01/02"]),                 # both bounds inclusive
    ("2024/01/05", "2024/01/01", []),
])
def test_selected_partitions_keeps_the_inclusive_string_range(begin, end, expected):
    options = {MODE: "SELECTED_PARTITIONS"}
    if begin is not None:
        options[cl.BEGIN_PARTITION.key] = begin
    if end is not None:
        options[cl.END_PARTITION.key] = end
    assert filter_partitions(PARTITIONS, options) == expected


def test_day_rolling_keeps_every_24th_partition_from_the_current_hour(monkeypatch):
    partitions = [f"dt=2024-01-{d:02d}" for d in range(30, 0, -1)]  # listed newest first
    options = {MODE: "DAY_ROLLING"}
    assert filter_partitions(partitions, options, now_hour=5) == ["dt=2024-01-06", "dt=2024-01-30"]
    assert filter_partitions(partitions, options, now_hour=0) == ["dt=2024-01-01", "dt=2024-01-25"]
    assert filter_partitions(partitions, options, now_hour=23) == ["dt=2024-01-24"]
    assert filter_partitions(partitions[:3], options, now_hour=3) == []
    monkeypatch.setattr(cg, "current_hour", lambda: 1)
    assert filter_partitions(partitions, options) == ["dt=2024-01-02", "dt=2024-01-26"]
    with pytest.raises(ConfigError, match="hour 24 is not an hour of the day"):
        filter_partitions(partitions, options, now_hour=24)


def test_regex_matches_the_whole_path_and_runs_before_the_mode():
    regex = cl.PARTITION_REGEX.key
    assert filter_partitions(PARTITIONS, {regex: "2024/01/0[12]"}) == ["2024/01/01", "2024/01/02"]
    assert filter_partitions(PARTITIONS, {regex: "2024"}) == []  # a prefix is not a whole-path match
    assert filter_partitions(PARTITIONS, {regex: "2023.*"}) == ["2023/12/31"]
    # the regex first, then RECENT_DAYS picks the newest two of what is left
    assert filter_partitions(PARTITIONS, {regex: ".*/0[123]", MODE: "RECENT_DAYS"}) == ["2024/01/03", "2024/01/02"]
    with pytest.raises(ConfigError) as info:
        filter_partitions(PARTITIONS, {regex: "2024/(01"})
    assert str(info.value).startswith(
        "invalid value '2024/(01' for hoodie.clustering.plan.strategy.partition.regex.pattern: missing )")


def test_selected_partitions_list_replaces_the_listing_and_skips_the_regex():
    options = {cl.PARTITION_SELECTED.key: "2022/06/01, 2024/01/01,2022/06/01", cl.PARTITION_REGEX.key: "2024.*"}
    assert filter_partitions(PARTITIONS, options) == ["2022/06/01", "2024/01/01"]
    options[MODE] = "RECENT_DAYS"
    options[cl.LOOKBACK_PARTITIONS.key] = "1"
    assert filter_partitions(PARTITIONS, options) == ["2024/01/01"]  # the mode still applies


def test_deprecated_strategy_classes_force_their_filter_mode_and_group_by_size():
    recent = {STRATEGY: cl.RECENT_DAYS_PLAN_STRATEGY, MODE: "NONE"}
    assert filter_partitions(PARTITIONS, recent) == ["2024/01/04", "2024/01/03"]
    selected = {STRATEGY: "SparkSelectedPartitionsClusteringPlanStrategy",
                cl.BEGIN_PARTITION.key: "2024/01/02", cl.END_PARTITION.key: "2024/01/02"}
    assert filter_partitions(PARTITIONS, selected) == ["2024/01/02"]
    java = {STRATEGY: cl.JAVA_RECENT_DAYS_PLAN_STRATEGY, cl.LOOKBACK_PARTITIONS.key: "1"}
    assert filter_partitions(PARTITIONS, java) == ["2024/01/04"]
    slices = [c("a", 1500 * MB), c("b", 1000 * MB), c("c", 400 * MB)]
    for options in (recent, selected, java):
        assert ids(group_candidates({"p": slices}, options)) == [["a"], ["b", "c"]]


def test_an_unknown_filter_mode_is_a_config_error():
    with pytest.raises(ConfigError) as info:
        filter_partitions(PARTITIONS, {MODE: "LATEST"})
    assert str(info.value) == ("invalid value 'LATEST' for hoodie.clustering.plan.partition.filter.mode: "
                               "expected one of NONE, RECENT_DAYS, SELECTED_PARTITIONS, DAY_ROLLING")


# ----------------------------------------------------------------- plan rows
def test_plan_rows_describe_each_group():
    slices = [c("a", 60, "dt=1"), c("b", 30, "dt=1"), c("c", 0, "dt=1")]
    groups = group_candidates({"dt=1": slices}, {MAX_BYTES: "100", TARGET: "50", "hoodie.parquet.max.file.size": "40"})
    assert plan_rows(groups, {"hoodie.parquet.max.file.size": "40"}) == [
        {"group": 0, "partition": "dt=1", "file_ids": ["a", "c"], "sizes": [60, 0], "input_bytes": 100,
         "output_file_groups": 2, "preserve_file_id": False},
        {"group": 1, "partition": "dt=1", "file_ids": ["b"], "sizes": [30], "input_bytes": 30,
         "output_file_groups": 1, "preserve_file_id": False},
    ]  # [b] alone is the trailing single group: kept by default
    groups = group_candidates({"dt=1": slices}, {MAX_BYTES: "100", TARGET: "50", "hoodie.parquet.max.file.size": "40",
                                                 SINGLE: "false"})
    assert [r["file_ids"] for r in plan_rows(groups)] == [["a", "c"]]
    rows = plan_rows(group_candidates({"dt=1": slices[:1]}, {STRATEGY: "single-file-sort"}))
    assert rows == [{"group": 0, "partition": "dt=1", "file_ids": ["a"], "sizes": [60], "input_bytes": 60,
                     "output_file_groups": 1, "preserve_file_id": True}]


# ----------------------------------------------------------------- footer statistics
def _write(path, table, **kwargs):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, str(path), **kwargs)


def test_column_ranges_of_reads_min_max_over_row_groups(tmp_path):
    ts = datetime.datetime
    table = pa.table({
        "i": pa.array([5, -3, 40, None, 7, 12], pa.int64()),
        "s": pa.array(["m", "b", None, "zz", "c", "a"]),
        "t": pa.array([ts(2024, 1, 3), ts(2023, 12, 31, 23), ts(2024, 2, 1), None, None, ts(2024, 1, 1)],
                      pa.timestamp("us")),
        "nulls": pa.array([None] * 6, pa.int32()),
        "late": pa.array([None, None, None, 1.5, -2.0, None]),   # nulls in the first row group only
        "dec": pa.array([Decimal("1.50"), Decimal("-2.25"), None, None, None, Decimal("9.00")], pa.decimal128(5, 2)),
        "nested": pa.array([{"x": 1}] * 6),
    })
    _write(tmp_path / "p" / "f.parquet", table, row_group_size=3)
    storage = Storage(str(tmp_path))
    ranges = column_ranges_of(storage, "p/f.parquet", ["i", "s", "t", "nulls", "late", "dec", "nested", "missing"])
    assert ranges == {
        "i": (-3, 40),
        "s": ("a", "zz"),
        "t": (ts(2023, 12, 31, 23), ts(2024, 2, 1)),
        "nulls": (None, None),
        "late": (-2.0, 1.5),
        "dec": (Decimal("-2.25"), Decimal("9.00")),
    }  # a nested column and an absent one have no range


def test_column_ranges_of_without_statistics_gives_no_range(tmp_path):
    table = pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    _write(tmp_path / "f.parquet", table, write_statistics=["a"])
    assert column_ranges_of(Storage(str(tmp_path)), "f.parquet", ["a", "b"]) == {"a": (1, 3)}


def test_candidates_with_statistics_feed_the_overlap_and_key_range_strategies(tmp_path):
    storage = Storage(str(tmp_path))
    files = {"f1": [1, 5, 9], "f2": [8, 12], "f3": [30, 31], "f4": [20, 29]}
    slices = []
    for file_id, values in files.items():
        keys = [f"key{v:03d}" for v in values]
        table = pa.table({"_hoodie_record_key": keys, "a": pa.array(values, pa.int64())})
        _write(tmp_path / "p" / f"{file_id}.parquet", table)
        slices.append(c(file_id, 10, base_relpath=f"p/{file_id}.parquet"))
    slices.append(c("logonly", 0, log_relpaths=("p/.logonly_x.log.1_0-1-1",)))

    overlap = {STRATEGY: "sort-column-overlap", SORT_COLUMNS: "a"}
    enriched = candidates_with_statistics(slices, storage, overlap)
    assert [s.column_ranges for s in enriched] == [{"a": (1, 9)}, {"a": (8, 12)}, {"a": (30, 31)}, {"a": (20, 29)}, {}]
    assert [s.min_key for s in enriched] == [None] * 5  # not needed by this strategy: not read
    assert ids(group_candidates({"p": enriched}, overlap)) == [["f1", "f2"], ["f4"], ["f3"], ["logonly"]]

    keyed = candidates_with_statistics(slices, storage, {STRATEGY: "key-range"})
    assert [(s.min_key, s.max_key) for s in keyed] == [
        ("key001", "key009"), ("key008", "key012"), ("key030", "key031"), ("key020", "key029"), (None, None)]
    assert [s.column_ranges for s in keyed] == [{}] * 5
    assert candidates_with_statistics(slices, storage, {}) == slices  # size-based reads no footer


def test_key_range_prefers_hudis_footer_entries(tmp_path):
    table = pa.table({"_hoodie_record_key": ["b", "c"]}).replace_schema_metadata(
        {"hoodie_min_record_key": "a", "hoodie_max_record_key": "d"})
    _write(tmp_path / "f.parquet", table)
    [enriched] = candidates_with_statistics([c("f", 1, base_relpath="f.parquet")], Storage(str(tmp_path)),
                                            {STRATEGY: "key-range"})
    assert (enriched.min_key, enriched.max_key) == ("a", "d")


# ----------------------------------------------------------------- invariants (hypothesis)
STRATEGY_NAMES = ["size-based", "single-file-sort", "key-range", "commit-time", "sort-column-overlap", "random"]


@st.composite
def candidate_sets(draw):
    partitions = draw(st.lists(st.sampled_from(["p1", "p2", "p3"]), min_size=1, max_size=3, unique=True))
    by_partition = {}
    for partition in partitions:
        n = draw(st.integers(0, 12))
        rows = []
        for i in range(n):
            low = draw(st.integers(0, 50))
            known = draw(st.booleans())
            rows.append(Candidate(
                partition, f"{partition}-f{i}", draw(st.integers(0, 120)),
                base_instant=draw(st.sampled_from(["", "20240101000000000", "20240102000000000"])),
                min_key=f"k{low:03d}" if known else None, max_key=f"k{low + 5:03d}" if known else None,
                column_ranges={"a": (low, low + draw(st.integers(0, 10)))} if draw(st.booleans()) else {},
            ))
        by_partition[partition] = rows
    return by_partition


@settings(max_examples=150, deadline=None)
@given(by_partition=candidate_sets(), strategy=st.sampled_from(STRATEGY_NAMES),
       max_bytes=st.integers(1, 300), cap=st.integers(0, 8), single=st.booleans())
def test_every_strategy_keeps_the_plan_invariants(by_partition, strategy, max_bytes, cap, single):
    options = {STRATEGY: strategy, MAX_BYTES: str(max_bytes), TARGET: "50", MAX_GROUPS: str(cap),
               SINGLE: str(single).lower(), SORT_COLUMNS: "a", "hoodie.parquet.max.file.size": "40"}
    groups = group_candidates(by_partition, options)
    assert len(groups) <= cap
    seen = [m for g in groups for m in g.candidates]
    assert len(seen) == len({(m.partition_path, m.file_id) for m in seen})  # in at most one group
    inputs = {(m.partition_path, m.file_id) for rows in by_partition.values() for m in rows}
    assert {(m.partition_path, m.file_id) for m in seen} <= inputs
    for group in groups:
        assert len({m.partition_path for m in group.candidates}) == 1  # never across partitions
        planned = sum(m.size or 40 for m in group.candidates)
        assert planned <= max_bytes or len(group.candidates) == 1
        expected_outputs = 1 if strategy == "single-file-sort" else max(1, math.ceil(planned / 50))
        assert group.num_output_file_groups == expected_outputs
        assert group.preserve_file_id == (strategy == "single-file-sort")
    # partition order is kept: groups of a later partition never come before an earlier one's
    order = list(by_partition)
    positions = [order.index(g.partition_path) for g in groups]
    assert positions == sorted(positions)

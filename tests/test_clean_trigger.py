"""The automatic clean's precheck (issue 15 item 2, pyhudi/services/clean_trigger.py): a due clean
is not planned when the timeline shows that nothing can be deleted — and still cleans, with the
same files, exactly when something can.

The oracle (``oracle``): every time the precheck answers "nothing", the clean plan is computed
anyway on the same listing at the same time and must be empty; so automatic cleaning deletes the
same files at the same commits as planning on every commit did. Scenarios cover compaction,
KEEP_LATEST_FILE_VERSIONS, KEEP_LATEST_BY_HOURS, clustering, insert overwrite, copy-on-write,
a dropped family, reader pins and archival.
"""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.services import clean as clean_mod
from pyhudi.services.clean_plan import describe_plan
from pyhudi.services.clean_trigger import SETTLED_KEY, closes_files, settled_time
from pyhudi.timeline.instant import format_instant_time, parse_instant_time
from write_helpers import data_files, of

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.float64()), ("b", pa.string())])
PSCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("p", pa.string()), ("a", pa.float64())])



def cleans(t) -> list[str]:
    return [i.requested_time for i in t.active_timeline() if i.action.value == "clean" and i.is_completed]


class Oracle:
    """Checks every "nothing to delete" answer against the plan, and counts the plans made."""

    def __init__(self, monkeypatch, t) -> None:
        self.table, self.skipped, self.plans, self.empty_plans = t, 0, 0, 0
        real_may, real_plan = clean_mod.may_delete, clean_mod.plan_clean

        def may_delete(timeline, policy, ectr, versions=None):
            answer = real_may(timeline, policy, ectr, versions)
            if not answer:
                self.skipped += 1
                plan = real_plan(self.table.table_context(timeline), timeline, clean_mod._now(timeline), {})
                assert plan is None, f"skipped a clean that deletes {describe_plan(plan)}"
            return answer

        def plan_clean(*args, **kwargs):
            plan = real_plan(*args, **kwargs)
            self.plans += 1
            self.empty_plans += plan is None
            return plan

        monkeypatch.setattr(clean_mod, "may_delete", may_delete)
        monkeypatch.setattr(clean_mod, "plan_clean", plan_clean)


def upsert(t, i, ids=(1, 2), options=None):
    return t.upsert(pa.table({"id": list(ids), "a": [float(i)] * len(ids), "b": [str(i)] * len(ids)}),
                    options=options)


# ------------------------------------------------------------------------------ exact behaviour
def test_skipped_commits_do_not_plan_and_the_clean_comes_when_a_compaction_retires(tmp_path, monkeypatch):
    """Retain 2 commits, compact every 2 delta commits: commits u1 u2 k1 u3 u4 k2 u5 ... The
    slice a compaction closes can be deleted once the ECTR reaches that compaction."""
    options = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2",
               "hoodie.cleaner.commits.retained": "2"}
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, options=options)
    oracle = Oracle(monkeypatch, t)
    u1 = upsert(t, 1)
    u2 = upsert(t, 2)  # + compaction k1
    (k1,) = [i.requested_time for i in t.active_timeline() if i.action.value == "commit"]
    assert cleans(t) == [] and t.plan_clean() == []  # u2's snapshot (retained) reads u1's and u2's logs
    slice0 = data_files(t) - of(data_files(t), k1)
    assert slice0 == of(data_files(t), u1, u2)
    assert oracle.plans == 0

    u3 = upsert(t, 3)  # ECTR = k1: no retained snapshot reads slice 0
    (c1,) = cleans(t)
    assert data_files(t) == of(data_files(t), k1, u3)
    assert oracle.plans == 1 and oracle.empty_plans == 0
    assert [(i.action.value, i.state.value) for i in t.active_timeline()][-1] == ("clean", "COMPLETED")

    u4 = upsert(t, 4)  # + compaction k2; retained u4 and k2: u4's snapshot reads k1's slice
    k2 = max(i.requested_time for i in t.active_timeline() if i.action.value == "commit")
    assert cleans(t) == [c1] and t.plan_clean() == []
    slice1 = of(data_files(t), k1, u3, u4)
    assert oracle.plans == 1  # (not planned: the precheck knew)

    upsert(t, 5)  # ECTR = k2: slice 1 retires
    assert len(cleans(t)) == 2
    assert data_files(t) & slice1 == set() and of(data_files(t), k2)
    assert oracle.plans == 2 and oracle.empty_plans == 0 and oracle.skipped >= 2
    assert t.read().sort_by("id").to_pylist() == [{"id": 1, "a": 5.0, "b": "5"}, {"id": 2, "a": 5.0, "b": "5"}]
    assert t.read(as_of=k2).sort_by("id").column("a").to_pylist() == [4.0, 4.0]
    del u1, u2, u4


def test_each_clean_records_the_time_it_settled(tmp_path):
    options = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2",
               "hoodie.cleaner.commits.retained": "2"}
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, options=options)
    for i in range(3):
        upsert(t, i)
    timeline = t.active_timeline()
    k1 = next(i for i in timeline if i.action.value == "commit")
    # every file closed by an instant completed by the ECTR's (k1's) completion is gone
    assert settled_time(timeline) == k1.completion_time
    (clean,) = [i for i in timeline if i.action.value == "clean"]
    assert timeline.read_metadata(clean).extra_metadata[SETTLED_KEY] == k1.completion_time
    assert [closes_files(timeline, i) for i in timeline.commits_timeline()] == [False, False, True, False]


def test_a_file_a_reader_pin_keeps_is_cleaned_by_the_first_commit_after_the_pin_is_released(tmp_path, monkeypatch):
    options = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1",
               "hoodie.cleaner.commits.retained": "1"}
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, options=options)
    oracle = Oracle(monkeypatch, t)
    u1 = upsert(t, 1)  # + compaction k1
    k1 = max(i.requested_time for i in t.active_timeline() if i.action.value == "commit")
    reader = t.scan(batch_size=1)  # pins k1's snapshot: its base file
    k1_base = of(data_files(t), k1)
    upsert(t, 2)  # + k2: u1's log goes; k1's base is pinned
    assert not {f for f in data_files(t) if f"_{u1}" in f}
    assert k1_base <= data_files(t)
    upsert(t, 3)  # + k3: still pinned
    assert k1_base <= data_files(t)
    assert pa.Table.from_batches(list(reader)).sort_by("id").column("a").to_pylist() == [1.0, 1.0]  # released
    cleaned = len(cleans(t))
    upsert(t, 4)  # + k4: nothing reads k1's base now
    assert k1_base & data_files(t) == set() and len(cleans(t)) == cleaned + 1
    last = max(i for i in t.active_timeline() if i.action.value == "clean")
    deleted = t.active_timeline().read_metadata(last).partition_metadata[""].success_delete_files
    assert {f for f in deleted if f in k1_base} == k1_base
    assert t.read().sort_by("id").column("a").to_pylist() == [4.0, 4.0]
    assert oracle.plans >= 3


# ------------------------------------------------------------------------------ oracle scenarios
@pytest.mark.parametrize("families", [None, {"fa": "a", "fb": "b"}])
@pytest.mark.parametrize("policy", [
    {"hoodie.cleaner.commits.retained": "3"},
    {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.cleaner.fileversions.retained": "2"},
])
def test_inline_compaction_cleans_exactly_as_planning_every_commit(tmp_path, monkeypatch, policy, families):
    """(With families: new file groups start as full-row log files.)"""
    options = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "3", **policy}
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2, options=options,
                            column_families=families)
    oracle = Oracle(monkeypatch, t)
    for i in range(40):
        upsert(t, i, ids=(i % 5, 7, 100 + i))
    assert len(cleans(t)) >= 5
    assert oracle.skipped >= 15
    if "hoodie.cleaner.policy" not in policy:
        assert oracle.empty_plans == 0  # a plan only when it deletes
    assert t.read().num_rows == 46


def test_keep_latest_by_hours_cleans_exactly_as_planning_every_commit(tmp_path, monkeypatch):
    """The clock is moved so that the last three commits are within the retained hour."""
    options = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2",
               "hoodie.cleaner.policy": "KEEP_LATEST_BY_HOURS", "hoodie.cleaner.hours.retained": "1"}
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, options=options)

    def now(timeline):
        commits = sorted(i.requested_time for i in timeline.commits_timeline())
        if len(commits) < 3:
            return format_instant_time(parse_instant_time(commits[0]) + timedelta(minutes=1)) if commits else "0"
        return format_instant_time(parse_instant_time(commits[-3]) + timedelta(hours=1))

    monkeypatch.setattr(clean_mod, "_now", now)
    oracle = Oracle(monkeypatch, t)
    for i in range(24):
        upsert(t, i)
    assert len(cleans(t)) >= 5 and oracle.skipped >= 5
    assert t.read().sort_by("id").column("a").to_pylist() == [23.0, 23.0]


def test_clustering_and_insert_overwrite_clean_exactly_as_planning_every_commit(tmp_path, monkeypatch):
    t = pyhudi.create_table(str(tmp_path / "p"), PSCHEMA, "id", partition_fields="p", table_type="COPY_ON_WRITE",
                            options={"hoodie.cleaner.commits.retained": "3", "hoodie.parquet.small.file.limit": "0"})
    oracle = Oracle(monkeypatch, t)
    for i in range(4):
        t.insert(pa.table({"id": [10 * i, 10 * i + 1], "p": ["x", "y"], "a": [float(i)] * 2}))
    x_files = {f for f in data_files(t) if f.startswith("x/")}
    assert len(x_files) == 4
    clustering = t.cluster(options={"hoodie.clustering.plan.strategy.small.file.limit": "1000000"})
    assert clustering is not None
    before = len(cleans(t))
    t.insert(pa.table({"id": [100], "p": ["y"], "a": [9.0]}))
    assert x_files <= data_files(t)  # retained: the last insert before the clustering, which reads them
    skipped = oracle.skipped
    t.insert(pa.table({"id": [101], "p": ["y"], "a": [9.0]}))  # ECTR = the clustering
    assert x_files & data_files(t) == set() and len(cleans(t)) == before + 1
    overwritten = {f for f in data_files(t) if f.startswith("y/")}
    t.insert_overwrite(pa.table({"id": [200], "p": ["y"], "a": [7.0]}))
    t.insert(pa.table({"id": [201], "p": ["x"], "a": [7.0]}))
    assert overwritten <= data_files(t)  # retained: the insert before the overwrite
    t.insert(pa.table({"id": [202], "p": ["x"], "a": [7.0]}))  # ECTR = the overwrite
    assert overwritten & data_files(t) == set()
    assert skipped >= 1
    assert sorted(t.read().column("id").to_pylist()) == [0, 10, 20, 30, 200, 201, 202]


def test_copy_on_write_cleans_exactly_as_planning_every_commit(tmp_path, monkeypatch):
    t = pyhudi.create_table(str(tmp_path / "c"), PSCHEMA, "id", partition_fields="p", table_type="COPY_ON_WRITE",
                            options={"hoodie.cleaner.commits.retained": "2"})
    oracle = Oracle(monkeypatch, t)
    firsts = []
    for i in range(8):
        firsts.append(t.upsert(pa.table({"id": [1, 2 + i], "p": ["x", "y"], "a": [float(i)] * 2})))
    files = data_files(t)
    # x's file group is rewritten by every commit: only the last two versions stay
    assert {f for f in files if f.startswith("x/")} == {f for f in of(files, *firsts[-2:]) if f.startswith("x/")}
    assert len(cleans(t)) >= 5
    assert t.read().num_rows == 9
    del oracle


def test_a_dropped_family_cleans_exactly_as_planning_every_commit(tmp_path, monkeypatch):
    t = pyhudi.create_table(str(tmp_path / "f"), SCHEMA, "id", num_buckets=1, column_families={"fa": "a", "fb": "b"},
                            options={"hoodie.cleaner.commits.retained": "3",
                                     "hoodie.pyhudi.insert.full.row": "false"})  # (fb's own files)
    oracle = Oracle(monkeypatch, t)
    upsert(t, 1)
    fb_files = {f for f in data_files(t) if "_fb." in f}
    assert fb_files
    t.alter(unset_properties=["hoodie.colFamily.fb"])
    t.upsert(pa.table({"id": [1], "a": [5.0]}))
    assert fb_files <= data_files(t)  # the first upsert's snapshot (retained) reads fb's files
    t.upsert(pa.table({"id": [2], "a": [6.0]}))  # retained: the ALTER and after
    assert fb_files & data_files(t) == set()
    assert oracle.skipped == 0 and oracle.plans == 1
    t.upsert(pa.table({"id": [3], "a": [7.0]}))  # (log files only: nothing new to clean)
    assert oracle.skipped == 1 and oracle.plans == 1
    assert t.read().sort_by("id").to_pylist() == [{"id": 1, "a": 5.0}, {"id": 2, "a": 6.0}, {"id": 3, "a": 7.0}]


def test_archival_keeps_the_settled_time_reachable_and_cleans_exactly_as_planning(tmp_path, monkeypatch):
    options = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2",
               "hoodie.cleaner.commits.retained": "3", "hoodie.keep.min.commits": "5", "hoodie.keep.max.commits": "7"}
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, options=options)
    oracle = Oracle(monkeypatch, t)
    for i in range(45):
        upsert(t, i)
    timeline = t.active_timeline()
    assert len(t.archived_timeline()) > 20
    assert settled_time(timeline) >= timeline.first_active_time  # (the archive needs no second look)
    assert oracle.empty_plans == 0 and oracle.skipped >= 20
    assert t.read().sort_by("id").column("a").to_pylist() == [44.0, 44.0]


def test_after_a_clean_that_recorded_no_settled_time_every_due_clean_is_planned(tmp_path, monkeypatch):
    """A clean written by Hudi (or an older pyhudi) says nothing of what it settled: the
    precheck cannot skip, and cleans as planning every commit does."""
    options = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2",
               "hoodie.cleaner.commits.retained": "2"}
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, options=options)
    monkeypatch.setattr(clean_mod, "_record_settled", lambda context, timeline, plan, options, pinned: plan)
    for i in range(3):
        upsert(t, i)
    (clean,) = [i for i in t.active_timeline() if i.action.value == "clean"]
    assert SETTLED_KEY not in t.active_timeline().read_metadata(clean).extra_metadata
    monkeypatch.undo()
    oracle = Oracle(monkeypatch, t)
    upsert(t, 3)  # + compaction: planned (nothing settled is known), nothing to delete
    assert oracle.plans == 1 and oracle.empty_plans == 1 and oracle.skipped == 0
    upsert(t, 4)  # the compaction's predecessor slice retires
    assert oracle.plans == 2 and len(cleans(t)) == 2
    upsert(t, 5)
    assert oracle.skipped == 1 and oracle.plans == 2  # (the second clean recorded its settled time)


@pytest.mark.parametrize("then", [
    {"hoodie.cleaner.policy": "KEEP_LATEST_COMMITS", "hoodie.cleaner.commits.retained": "2"},
    {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.cleaner.fileversions.retained": "1"},
])
def test_a_file_versions_clean_is_not_relied_on_by_a_clean_of_another_policy_or_fewer_versions(tmp_path, monkeypatch,
                                                                                                then):
    """KEEP_LATEST_FILE_VERSIONS keeps closed files as versions: after its cleans, a clean of
    another policy or keeping fewer versions deletes them at the next commit, though that commit
    (log files only) closes nothing."""
    versions = {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.cleaner.fileversions.retained": "3"}
    options = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1", **versions}
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, options=options)
    oracle = Oracle(monkeypatch, t)
    for i in range(5):
        upsert(t, i)  # + a compaction each: slices [u0], [k0 u1], [k1 u2], [k2 u3], [k3 u4], [k4]
    clean = [i for i in t.active_timeline() if i.action.value == "clean"][-1]
    extra = t.active_timeline().read_metadata(clean).extra_metadata
    assert SETTLED_KEY not in extra and extra["pyhudi.clean.settled.versions"].startswith("3:")
    assert len(data_files(t)) == 5  # the newest 3 slices: k2 u3, k3 u4, k4
    k4 = max(i.requested_time for i in t.active_timeline() if i.action.value == "commit")
    plans = oracle.plans
    u5 = upsert(t, 5, options={**then, "hoodie.compact.inline": "false"})  # a log file: closes nothing
    assert oracle.plans == plans + 1 and oracle.skipped == 0
    assert data_files(t) == of(data_files(t), k4, u5)  # retained: k4 and u5 / the newest slice [k4 u5]
    assert t.read().sort_by("id").column("a").to_pylist() == [5.0, 5.0]


def test_a_held_clean_on_a_partitioned_table_does_not_stop_the_precheck_for_good(tmp_path, monkeypatch):
    """A clean held back by a reader pin carries the previous settled time; the next cleans list
    the partitions of every commit since that time (not only since their ECTR), delete what the
    pin kept, and move the settled time on — so commits stop planning cleans again. (Before, each
    later clean carried the held time forever and every commit planned a clean.)"""
    options = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "3",
               "hoodie.cleaner.commits.retained": "3"}
    t = pyhudi.create_table(str(tmp_path / "t"), PSCHEMA, "id", partition_fields="p", num_buckets=1, options=options)

    def write(i):
        t.upsert(pa.table({"id": [i % 4, 9], "p": ["x" if i % 2 else "y", "x"], "a": [float(i)] * 2}))

    oracle = Oracle(monkeypatch, t)
    for i in range(8):
        write(i)
    reader = t.scan(batch_size=1)  # a pin held through the next cleans
    for i in range(8, 12):
        write(i)
    held = settled_time(t.active_timeline(), None)
    list(reader)  # released
    for i in range(12, 16):
        write(i)
    settled = settled_time(t.active_timeline(), None)
    assert held and settled > held  # the claim moved past the held clean's
    plans_before = oracle.plans
    for i in range(16, 28):
        write(i)
    assert oracle.skipped >= 6 and oracle.plans - plans_before <= 8  # commits skip planning again
    want = {}
    for i in range(28):
        want[i % 4] = float(i)
    want[9] = 27.0
    got = t.read(columns=["id", "a"]).to_pylist()
    assert {r["id"]: r["a"] for r in got} == want and len(got) == 5

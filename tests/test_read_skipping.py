"""Data skipping at planning (pyhudi.read.skipping): file groups whose statistics exclude a filter's
values are never read, on any column — soundly: a family with log files is not trusted (a log may
change a value or add a key), and the rows are always exactly those of an unskipped read."""

from __future__ import annotations

import datetime as dt
import json
import threading

import pyarrow as pa
import pytest
from conftest import extract_table, fixture_zips

import pyhudi
from pyhudi.read.metadata_cache import METADATA_CACHE
from pyhudi.read.skipping import COLUMN_RANGES_KEY, FileSkipper, column_ranges, encode_column_ranges
from pyhudi.timeline.metadata import ReplaceCommitMetadata

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string()),
                    ("ts", pa.timestamp("us")), ("n", pa.int64())])
T0 = dt.datetime(2024, 1, 1)


@pytest.fixture(autouse=True)
def cache():
    METADATA_CACHE.clear()
    yield METADATA_CACHE
    METADATA_CACHE.clear()


def _rows(ids, n=None) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "v": [i * 2 for i in ids], "s": [f"s{i:03d}" for i in ids],
                     "ts": [T0 + dt.timedelta(hours=i) for i in ids],
                     "n": n if n is not None else [i if i % 3 else None for i in ids]}, schema=SCHEMA)


def _new_group(table, before: set) -> str:
    (file_id,) = {g.file_id for g in table.file_groups()} - before
    before.add(file_id)
    return file_id


def _sorted_table(tmp_path, table_type="COPY_ON_WRITE"):
    """Four bulk inserts of ids 0-9, 10-19, 20-29, 30-39: four file groups with disjoint ranges.
    Column n is all null in the third file."""
    table = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", table_type=table_type)
    groups: list[str] = []
    seen: set = set()
    for k in range(4):
        ids = range(10 * k, 10 * k + 10)
        table.bulk_insert(_rows(ids, [None] * 10 if k == 2 else None))
        groups.append(_new_group(table, seen))
    return table, groups


def _scan(table, filters, **kw):
    plan = table.plan_scan(None, filters, **kw)
    rows = plan.to_table().sort_by("id")
    return rows.column("id").to_pylist(), plan


def _read_groups(plan) -> set:
    return {task.file_id for task in plan.tasks}


# (filters, ids returned, indices of the file groups read)
CASES = [
    ([("v", "=", 24)], [12], {1}),
    ([("v", "==", 25)], [], {1}),  # inside file 1's range: statistics cannot rule it out
    ([("v", "<", 20)], list(range(10)), {0}),
    ([("v", "<=", 20)], list(range(11)), {0, 1}),
    ([("v", ">", 58)], list(range(30, 40)), {3}),
    ([("v", ">=", 58)], list(range(29, 40)), {2, 3}),
    ([("v", "in", [4, 66, 1000])], [2, 33], {0, 3}),
    ([("v", ">=", 22), ("v", "<=", 38)], list(range(11, 20)), {1}),  # a between
    ([("v", ">=", 30), ("v", "<", 50)], list(range(15, 25)), {1, 2}),
    ([("v", ">", 1000)], [], set()),
    ([("v", "!=", 4)], [i for i in range(40) if i != 2], {0, 1, 2, 3}),
    ([("id", "in", [5, 35])], [5, 35], {0, 3}),  # the record key column
    ([("id", ">=", 38)], [38, 39], {3}),
    ([("_hoodie_record_key", "=", "17")], [17], {0, 1}),  # keys compare as strings: "0" <= "17" <= "9"
    ([("s", "=", "s015")], [15], {1}),
    ([("s", ">=", "s030")], list(range(30, 40)), {3}),
    ([("s", "starts_with", "s02")], list(range(20, 30)), {2}),
    ([("ts", "<", T0 + dt.timedelta(hours=10))], list(range(10)), {0}),
    ([("ts", ">=", T0 + dt.timedelta(hours=25)), ("ts", "<=", T0 + dt.timedelta(hours=31))],
     list(range(25, 32)), {2, 3}),
    ([("n", "=", 7)], [7], {0}),
    ([("n", ">=", 0)], [i for i in range(40) if i % 3 and not 20 <= i < 30], {0, 1, 3}),  # file 2: only nulls
    ([("n", "is not null")], [i for i in range(40) if i % 3 and not 20 <= i < 30], {0, 1, 3}),
    ([("n", "is null")], [i for i in range(40) if i % 3 == 0 or 20 <= i < 30], {0, 1, 2, 3}),  # never skips
    ([("n", "!=", 7), ("v", "<", 40)], [i for i in range(20) if i % 3 and i != 7], {0, 1}),
]


@pytest.mark.parametrize("filters,ids,read", CASES, ids=[str(c[0]) for c in CASES])
def test_each_operator_reads_exactly_the_files_that_may_match(tmp_path, filters, ids, read):
    table, groups = _sorted_table(tmp_path)
    got, plan = _scan(table, filters)
    assert got == ids
    assert _read_groups(plan) == {groups[i] for i in read}
    assert plan.metrics["file_groups_considered"] == 4
    assert plan.metrics["file_groups_skipped"] == 4 - len(read)
    assert plan.metrics["files_considered"] == 4
    assert plan.metrics["files_skipped"] == 4 - len(read)
    unskipped = pa.Table.from_batches(table.plan_scan(None, with_meta=True).batches()).filter(
        _expression(table, filters)).sort_by("id").column("id").to_pylist()
    assert got == unskipped  # the same rows as filtering everything


def _expression(table, filters):
    from pyhudi.read.filters import normalize_filters
    schema = table.schema
    for i, name in enumerate(["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                              "_hoodie_partition_path", "_hoodie_file_name"]):
        schema = schema.insert(i, pa.field(name, pa.string()))
    expression = None
    for f in normalize_filters(filters, schema):
        e = f.expression(schema.field(f.column))
        expression = e if expression is None else expression & e
    return expression


def test_footers_read_at_planning_are_reused_by_the_tasks(tmp_path, cache):
    table, groups = _sorted_table(tmp_path)
    METADATA_CACHE.clear()
    got, plan = _scan(table, [("v", "=", 24)])
    assert got == [12]
    assert plan.metrics["footers_read"] == 4
    again = table.plan_scan(None, [("v", "<", 20)])
    assert again.metrics["footers_read"] == 0  # cached
    assert plan.explain().splitlines()[1:] == [
        "file groups: 4 considered, 3 skipped by statistics",
        "files: 4 considered, 3 skipped",
        "statistics: 4 footers read, 0 files ranged by commit metadata",
        "tasks: 1",
    ]


def test_object_store_footers_are_read_on_threads_before_deciding(tmp_path, monkeypatch):
    table, groups = _sorted_table(tmp_path, "MERGE_ON_READ")
    table.upsert(pa.table({"id": [3], "v": [1000], "s": ["s003"], "ts": [T0], "n": [3]}, schema=SCHEMA))
    METADATA_CACHE.clear()
    monkeypatch.setattr(table.storage, "is_local", False)  # (as on S3: a footer is a round trip)
    prefetched = set()
    footer = FileSkipper._footer

    def spy(self, base):
        if threading.current_thread() is not threading.main_thread():
            prefetched.add(base.relpath)
        return footer(self, base)

    monkeypatch.setattr(FileSkipper, "_footer", spy)
    got, plan = _scan(table, [("v", "=", 24)])
    assert got == [12]
    assert _read_groups(plan) == {groups[0], groups[1]}  # group 0 has a log: its footer is not consulted
    assert plan.metrics["footers_read"] == 3
    assert len(prefetched) == 3 and all(groups[0] not in path for path in prefetched)


def test_no_filter_or_unprovable_filters_read_no_footer(tmp_path):
    table, _ = _sorted_table(tmp_path)
    METADATA_CACHE.clear()
    for filters in (None, [("n", "is null")], [("_hoodie_commit_time", ">", "0")]):
        plan = table.plan_scan(None, filters)
        assert plan.metrics["footers_read"] == 0
        assert plan.metrics["file_groups_skipped"] == 0
        assert len(plan.tasks) == 4


def test_time_travel_skips_by_the_files_of_its_snapshot(tmp_path):
    table, groups = _sorted_table(tmp_path)
    before = table.timeline[-1].requested_time
    table.upsert(pa.table({"id": [3], "v": [1000], "s": ["s003"], "ts": [T0], "n": [3]}, schema=SCHEMA))
    got, plan = _scan(table, [("v", "=", 1000)])
    assert got == [3] and _read_groups(plan) == {groups[0]}
    got, plan = _scan(table, [("v", "=", 1000)], as_of=before)
    assert got == [] and plan.metrics["file_groups_skipped"] == 4 and not plan.tasks
    got, plan = _scan(table, [("v", "=", 6)], as_of=before)
    assert got == [3] and _read_groups(plan) == {groups[0]}


def test_incremental_query_skips_among_the_touched_file_groups(tmp_path):
    table, groups = _sorted_table(tmp_path)
    first = table.timeline[0].requested_time
    plan = table.plan_scan(None, [("v", ">=", 58)], query_type="incremental", begin=first)
    assert sorted(plan.to_table().column("id").to_pylist()) == list(range(29, 40))
    assert plan.metrics["file_groups_considered"] == 3  # the first commit's group is not in the window
    assert plan.metrics["file_groups_skipped"] == 1
    assert _read_groups(plan) == {groups[2], groups[3]}


def test_partition_pruning_comes_before_statistics(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64())])
    table = pyhudi.create_table(str(tmp_path / "t"), schema, "id", partition_fields="p", table_type="COPY_ON_WRITE")
    for k, p in enumerate(["x", "x", "y"]):
        ids = list(range(10 * k, 10 * k + 10))
        table.bulk_insert(pa.table({"id": ids, "p": [p] * 10, "v": ids}, schema=schema))
    plan = table.plan_scan(None, [("p", "=", "x"), ("v", ">=", 15)])
    assert sorted(plan.to_table().column("id").to_pylist()) == list(range(15, 20))
    assert plan.metrics["file_groups_considered"] == 2  # partition y was pruned before
    assert plan.metrics["file_groups_skipped"] == 1


# ---------------------------------------------------------------------------- merge-on-read
def test_mor_a_family_with_log_files_is_never_skipped_on_its_values(tmp_path):
    table, groups = _sorted_table(tmp_path, "MERGE_ON_READ")
    table.upsert(pa.table({"id": [3], "v": [1000], "s": ["s003"], "ts": [T0], "n": [3]}, schema=SCHEMA))
    assert [len(g.log_files) for g in sorted(table.file_groups(), key=lambda g: groups.index(g.file_id))] == [1, 0, 0, 0]
    got, plan = _scan(table, [("v", "=", 1000)])
    assert got == [3]  # the base says v <= 18, but its log holds 1000
    assert _read_groups(plan) == {groups[0]}
    assert plan.metrics["file_groups_skipped"] == 3
    assert plan.metrics["files_considered"] == 5 and plan.metrics["files_skipped"] == 3
    got, plan = _scan(table, [("v", "=", 6)])
    assert got == []  # the base matches, the log changed it: read, merged, filtered
    assert _read_groups(plan) == {groups[0]}
    got, plan = _scan(table, [("v", "=", 1000)], query_type="read_optimized")
    assert got == [] and plan.metrics["file_groups_skipped"] == 4  # base files only: they are final


def test_mor_key_filters_do_not_skip_a_group_whose_log_may_add_keys(tmp_path):
    table, groups = _sorted_table(tmp_path, "MERGE_ON_READ")
    table.insert(_rows([45]))  # a new key: inserted into the log of a small file group
    (holder,) = [g.file_id for g in table.file_groups() if g.log_files]
    low = {0: 0, 1: 10, 2: 20, 3: 30}[groups.index(holder)]
    got, plan = _scan(table, [("id", "=", 45)])
    assert got == [45]
    assert _read_groups(plan) == {holder}
    assert plan.metrics["file_groups_skipped"] == 3
    got, plan = _scan(table, [("id", "=", low + 1)])
    assert got == [low + 1] and _read_groups(plan) == {holder}
    got, plan = _scan(table, [("id", "=", 45)], query_type="read_optimized")
    assert got == [] and plan.metrics["file_groups_skipped"] == 4


FAMILY_SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("a", pa.int64()), ("b", pa.int64())])


def test_families_trust_each_family_whose_slice_has_no_log(tmp_path):
    table = pyhudi.create_table(str(tmp_path / "t"), FAMILY_SCHEMA, "id", partition_fields="p", num_buckets=1,
                                column_families={"fa": "a", "fb": "b"})
    for k, p in enumerate(["x", "y", "z"]):
        ids = list(range(10 * k, 10 * k + 10))
        table.bulk_insert(pa.table({"id": ids, "p": [p] * 10, "a": ids, "b": [100 + i for i in ids]},
                                   schema=FAMILY_SCHEMA))
    groups = {g.partition_path: g.file_id for g in table.file_groups()}
    table.upsert(pa.table({"id": [1], "p": ["x"], "a": [500]}))  # family fa of partition x gets a log
    got, plan = _scan(table, [("b", "=", 125)])  # fb has no log anywhere: its base values are final
    assert got == [25] and _read_groups(plan) == {groups["z"]}
    got, plan = _scan(table, [("a", "=", 500)])
    assert got == [1] and _read_groups(plan) == {groups["x"]}  # fa of x has a log: not skipped
    got, plan = _scan(table, [("a", "=", 15)])
    assert got == [15] and _read_groups(plan) == {groups["x"], groups["y"]}
    assert plan.metrics["file_groups_skipped"] == 1


# ---------------------------------------------------------------------------- recorded ranges
def _record_ranges(table, instant, ranges: dict) -> None:
    timeline = table.active_timeline()
    completed = [i for i in timeline.completed() if i.requested_time == instant]
    metadata = timeline.read_metadata(completed[0])
    assert isinstance(metadata, ReplaceCommitMetadata)
    extra = dict(metadata.extra_metadata or {})
    extra[COLUMN_RANGES_KEY] = encode_column_ranges(ranges)
    table.storage.write(timeline.path_of(completed[0]), ReplaceCommitMetadata(
        partition_to_write_stats=metadata.partition_to_write_stats, compacted=metadata.compacted,
        extra_metadata=extra, version=metadata.version, operation_type=metadata.operation_type,
        partition_to_replace_file_ids=metadata.partition_to_replace_file_ids).to_avro_bytes())


def test_column_ranges_recorded_in_a_replacecommit_replace_footer_reads(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64()), ("ts", pa.timestamp("us"))])
    table = pyhudi.create_table(str(tmp_path / "t"), schema, "id", partition_fields="p", table_type="COPY_ON_WRITE")
    data = {p: pa.table({"id": list(range(10 * k, 10 * k + 10)), "p": [p] * 10,
                         "v": list(range(10 * k, 10 * k + 10)),
                         "ts": [T0 + dt.timedelta(days=10 * k + i) for i in range(10)]}, schema=schema)
            for k, p in enumerate(["x", "y"])}
    table.bulk_insert(pa.concat_tables(data.values()))
    instant = table.insert_overwrite(pa.concat_tables(data.values()), partitions=["x", "y"])
    bases = {g.partition_path: g.base_files[-1] for g in table.file_groups()}
    _record_ranges(table, instant, {bases[p].name.name: column_ranges(data[p], ["v", "ts"]) for p in data})
    assert json.loads(encode_column_ranges({"f": column_ranges(data["y"], ["ts"])}))["f"]["columns"]["ts"] == {
        "min": "2024-01-11 00:00:00.000000", "max": "2024-01-20 00:00:00.000000", "nullCount": 0}
    METADATA_CACHE.clear()
    got, plan = _scan(table, [("ts", ">=", T0 + dt.timedelta(days=15))])
    assert got == list(range(15, 20))
    assert plan.metrics["ranges_from_commit_metadata"] == 2 and plan.metrics["footers_read"] == 0
    assert plan.metrics["file_groups_skipped"] == 1
    got, plan = _scan(table, [("v", "in", [3, 4])])
    assert got == [3, 4] and plan.metrics["file_groups_skipped"] == 1 and plan.metrics["footers_read"] == 0
    METADATA_CACHE.clear()
    got, plan = _scan(table, [("id", "=", 3)])  # not recorded: the footers
    assert got == [3] and plan.metrics["footers_read"] == 2 and plan.metrics["ranges_from_commit_metadata"] == 0


def test_column_ranges_of_every_type_and_nulls():
    data = pa.table({"i": [3, None, -2], "f": [1.5, float("nan"), -0.5], "s": ["b", "a", None],
                     "d": pa.array([dt.date(2024, 1, 2), None, dt.date(2023, 5, 1)]),
                     "all_null": pa.nulls(3, pa.int64()), "bin": [b"x", b"y", b"z"], "l": [[1], [2], [3]]})
    got = column_ranges(data, data.column_names)
    assert got == {"numRows": 3, "columns": {
        "i": {"min": -2, "max": 3, "nullCount": 1},
        "f": {"min": -0.5, "max": 1.5, "nullCount": 0},
        "s": {"min": "a", "max": "b", "nullCount": 1},
        "d": {"min": "2023-05-01", "max": "2024-01-02", "nullCount": 1},
        "all_null": {"nullCount": 3},
    }}


# ---------------------------------------------------------------------------- Apache Hudi tables
def _probe_filters(full: pa.Table, key: str) -> list[list[tuple]]:
    """Point, range and set filters on every primitive column, from values the table holds."""
    out = []
    for name in full.column_names:
        column = full.column(name)
        type_ = column.type
        if name.startswith("_hoodie") or not (pa.types.is_integer(type_) or pa.types.is_floating(type_)
                                              or pa.types.is_string(type_) or pa.types.is_timestamp(type_)
                                              or pa.types.is_date(type_)):
            continue
        values = sorted(v for v in column.to_pylist() if v is not None)
        if not values:
            continue
        low, middle = values[0], values[len(values) // 2]
        out += [[(name, "=", middle)], [(name, "<", middle)], [(name, ">=", middle)], [(name, "in", [low, middle])],
                [(name, ">", values[-1])]]
    return out


@pytest.mark.parametrize("zip_path", fixture_zips(), ids=lambda p: p.stem)
def test_apache_hudi_tables_skip_only_what_cannot_match(zip_path, tmp_path):
    table = pyhudi.open_table(str(extract_table(zip_path, tmp_path)))
    full = table.read()
    key = table.record_key_fields[0]
    skipped = 0
    for filters in _probe_filters(full, key):
        plan = table.plan_scan(None, filters)
        got = plan.to_table()
        expected = full.filter(_expression(table, filters))
        assert sorted(got.column(key).to_pylist()) == sorted(expected.column(key).to_pylist()), filters
        skipped += plan.metrics["file_groups_skipped"]
    if zip_path.stem == "v9_txns_simple_nometa" and "cow" in zip_path.parts:
        assert skipped > 0  # clustered and overwritten files with narrow ranges

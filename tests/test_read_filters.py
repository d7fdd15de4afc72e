"""Filters: exact after the merge; partition pruning and statistics skipping drop only what cannot match."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
import pyhudi.write.plan as write_plan
from pyhudi.errors import SchemaError
from pyhudi.read.filters import Filter
from pyhudi.read.plan import plan_scan
from pyhudi.read.pruning import excluded_key_ranges, partition_may_match, partition_values, stats_may_match

SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False), ("a", pa.float64()), ("b", pa.string()),
                    ("ts", pa.int64()), ("c", pa.int64()), ("d", pa.string())])
FAMILIES = {"f1": "a,b;ts", "f2": "c", "f3": "d"}


def ids(t: pa.Table) -> list[str]:
    return sorted(t.column("id").to_pylist())


def run_plan(plan) -> tuple[pa.Table, dict]:
    """Run every task of a plan; also sum their metrics."""
    parts, metrics = [], {}
    for task in plan.tasks:
        parts.append(task.run())
        for k, v in task.metrics.items():
            metrics[k] = metrics.get(k, 0) + v
    return (pa.concat_tables(parts) if parts else plan.schema.empty_table()), metrics


@pytest.fixture
def small_row_groups(monkeypatch):
    """pyhudi writes one row group per file at test sizes; two-row groups exercise skipping."""
    monkeypatch.setattr(write_plan, "rows_per_row_group", lambda txn, rows: 2)


@pytest.fixture
def fam(tmp_path):
    return pyhudi.create_table(str(tmp_path / "f"), SCHEMA, "id", num_buckets=2, column_families=FAMILIES)


ROWS = pa.table({"id": [f"k{i:02d}" for i in range(12)], "a": [float(i) for i in range(12)],
                 "b": [f"b{i}" for i in range(12)], "ts": [1] * 12, "c": list(range(0, 120, 10)),
                 "d": [f"dd{i}" if i % 3 else None for i in range(12)]})


def test_filter_on_updated_column_returns_the_new_version_only(fam):
    fam.bulk_insert(ROWS)
    fam.upsert(pa.table({"id": ["k01", "k02"], "c": [5000, 20]}))  # k01 updated; k02 rewritten unchanged
    assert ids(fam.read(filters=[("c", ">", 1000)])) == ["k01"]
    assert ids(fam.read(filters=[("c", "=", 10)])) == []  # k01's old value is not resurrected
    assert ids(fam.read(filters=[("c", "in", [10, 20, 30])])) == ["k02", "k03"]
    assert fam.read(columns=["id", "c"], filters=[("c", ">=", 5000)]).to_pylist() == [{"id": "k01", "c": 5000}]


def test_statistics_skip_file_groups_whose_final_values_cannot_match(fam):
    fam.bulk_insert(ROWS)
    plan = plan_scan(fam, filters=[("c", ">", 1000)])
    table, _ = run_plan(plan)
    assert table.num_rows == 0 and plan.metrics["file_groups_skipped"] == 2  # base-only: both groups skipped
    assert not plan.tasks  # (skipped at planning: never opened for reading)
    fam.upsert(pa.table({"id": ["k04"], "c": [4000]}))
    plan = plan_scan(fam, filters=[("c", ">", 1000)])
    table, _ = run_plan(plan)
    assert ids(table) == ["k04"]
    assert plan.metrics["file_groups_skipped"] == 1  # the group with f2 logs is read, the other skipped


def test_is_null_filters_are_not_pruned_by_statistics(fam):
    fam.bulk_insert(ROWS.select(["id", "a", "b", "ts", "c"]))  # f3 never written: d is null everywhere
    assert ids(fam.read(filters=[("d", "is null")])) == ids(ROWS)
    assert fam.read(filters=[("d", "is not null")]).num_rows == 0
    plan = plan_scan(fam, filters=[("d", "=", "x")])
    table, _ = run_plan(plan)
    assert table.num_rows == 0 and plan.metrics["file_groups_skipped"] == 2


def test_string_operators_and_null_semantics(fam):
    fam.upsert(ROWS)
    assert ids(fam.read(filters=[("d", "starts_with", "dd1")])) == ["k01", "k10", "k11"]
    assert ids(fam.read(filters=[("d", "ends_with", "1")])) == ["k01", "k11"]
    assert ids(fam.read(filters=[("b", "contains", "1")])) == ["k01", "k10", "k11"]
    # nulls never satisfy != or not in
    assert ids(fam.read(filters=[("d", "!=", "dd1")])) == ["k02", "k04", "k05", "k07", "k08", "k10", "k11"]
    assert ids(fam.read(filters=[("d", "not in", ["dd1", "dd2"])])) == ["k04", "k05", "k07", "k08", "k10", "k11"]
    assert ids(fam.read(filters=[("c", ">=", 30), ("c", "<", 60), ("a", "!=", 4.0)])) == ["k03", "k05"]


def test_key_filter_skips_row_groups_in_every_input(fam, small_row_groups):
    fam.bulk_insert(ROWS)
    fam.upsert(pa.table({"id": ["k03", "k07"], "c": [33, 77]}))
    table, metrics = run_plan(plan_scan(fam, filters=[("id", "=", "k07")]))
    assert table.to_pylist() == [{"id": "k07", "a": 7.0, "b": "b7", "ts": 1, "c": 77, "d": "dd7"}]
    assert metrics["row_groups_skipped"] >= metrics["row_groups"] - 4
    table, metrics = run_plan(plan_scan(fam, filters=[("id", ">=", "k03"), ("id", "<", "k05")]))
    assert table.sort_by("id").column("c").to_pylist() == [33, 40]
    fam.delete(pa.table({"id": ["k07"]}))
    assert fam.read(filters=[("id", "=", "k07")]).num_rows == 0


def test_value_filter_on_final_base_skips_key_ranges_of_all_families(fam, small_row_groups):
    fam.bulk_insert(ROWS)
    full, _ = run_plan(plan_scan(fam, filters=[("c", "<", 20)]))
    assert ids(full) == ["k00", "k01"]
    _, baseline = run_plan(plan_scan(fam))
    _, metrics = run_plan(plan_scan(fam, filters=[("c", "<", 20)]))
    assert metrics["row_groups_skipped"] > 0 and baseline["row_groups_skipped"] == 0
    # once f2 has a log, its base values are not final: nothing is skipped, the update is seen
    fam.upsert(pa.table({"id": ["k09"], "c": [1]}))
    table, metrics = run_plan(plan_scan(fam, filters=[("c", "<", 20)]))
    assert ids(table) == ["k00", "k01", "k09"]


def test_partition_pruning(tmp_path):
    schema = pa.schema([pa.field("id", pa.string(), nullable=False), ("region", pa.string()), ("year", pa.int64()),
                        ("v", pa.int64())])
    for hive in (True, False):
        t = pyhudi.create_table(str(tmp_path / f"p{hive}"), schema, "id", partition_fields=["region", "year"],
                                num_buckets=1, options={"hoodie.datasource.write.hive_style_partitioning": hive})
        t.upsert(pa.table({"id": ["a", "b", "c", "d"], "region": ["eu", "eu", "us", None],
                           "year": [2023, 2024, 2024, 2024], "v": [1, 2, 3, 4]}))
        plan = plan_scan(t, filters=[("region", "=", "eu")])
        assert len(plan.tasks) == 3  # eu/2023, eu/2024 and the null-region partition (never pruned)
        assert ids(plan.to_table()) == ["a", "b"]
        plan = plan_scan(t, filters=[("year", ">=", 2024), ("region", "in", ["us", "eu"])])
        assert len(plan.tasks) == 3 and ids(plan.to_table()) == ["b", "c"]
        assert ids(t.read(filters=[("region", "is null")])) == ["d"]
        assert ids(t.read(filters=[("region", "!=", "eu")])) == ["c"]


def test_partition_values_from_paths():
    assert partition_values("region=eu/year=2024", ["region", "year"], True) == {"region": "eu", "year": "2024"}
    assert partition_values("eu/2024", ["region", "year"], False) == {"region": "eu", "year": "2024"}
    assert partition_values("region=eu", ["region"], False) is None  # ambiguous: never prune
    assert partition_values("__HIVE_DEFAULT_PARTITION__", ["region"], False) is None
    assert partition_values("eu", ["region"], True) is None
    assert partition_values("a%2Fb", ["region"], False, url_encoded=True) == {"region": "a/b"}
    schema = pa.schema([("year", pa.int64())])
    assert not partition_may_match("2023", ["year"], False, [Filter("year", ">", 2023)], schema)
    assert partition_may_match("2024", ["year"], False, [Filter("year", ">", 2023)], schema)
    assert partition_may_match("x", ["year"], False, [Filter("year", ">", 2023)], schema)  # not an int: keep


def test_statistics_verdicts(tmp_path):
    pq.write_table(pa.table({"x": [1, 5, None], "s": ["apple", "banana", "cherry"], "f": [1.0, float("nan"), 2.0]}),
                   tmp_path / "s.parquet")
    meta = pq.ParquetFile(tmp_path / "s.parquet").metadata.row_group(0)
    x, s, f = (meta.column(i).statistics for i in range(3))
    i64, text, f64 = pa.int64(), pa.string(), pa.float64()
    assert stats_may_match(x, 3, Filter("x", "=", 5), i64) and not stats_may_match(x, 3, Filter("x", "=", 6), i64)
    assert not stats_may_match(x, 3, Filter("x", ">", 5), i64) and stats_may_match(x, 3, Filter("x", ">=", 5), i64)
    assert not stats_may_match(x, 3, Filter("x", "<", 1), i64) and stats_may_match(x, 3, Filter("x", "in", [0, 3]), i64)
    assert stats_may_match(x, 3, Filter("x", "is null"), i64)
    assert stats_may_match(s, 3, Filter("s", "starts_with", "ban"), text)
    assert not stats_may_match(s, 3, Filter("s", "starts_with", "d"), text)
    assert stats_may_match(s, 3, Filter("s", "contains", "zzz"), text)  # cannot be judged: kept
    assert stats_may_match(f, 3, Filter("f", "!=", 1.0), f64)  # NaN != 1.0 holds: never prune
    pq.write_table(pa.table({"k": ["a", "b", "c", "d"], "v": [1, 1, 9, 9]}), tmp_path / "r.parquet", row_group_size=2)
    meta = pq.ParquetFile(tmp_path / "r.parquet").metadata
    schema = pa.schema([("k", pa.string()), ("v", pa.int64())])
    assert excluded_key_ranges(meta, [Filter("v", ">", 5)], schema, "k") == [("a", "b")]
    assert excluded_key_ranges(meta, [Filter("v", ">", 10)], schema, "k") is None
    assert excluded_key_ranges(meta, [Filter("v", "is null")], schema, "k") == []


# ------------------------------------------------------------------ values of other types, nested columns
TYPED_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("day", pa.date32()),
                          ("ms", pa.timestamp("ms", tz="UTC")), ("dec", pa.decimal128(10, 2)),
                          ("ls", pa.list_(pa.int64())), ("st", pa.struct([("x", pa.float64())])),
                          ("mp", pa.map_(pa.string(), pa.int64()))])
TYPED_ROWS = pa.table({"id": [1, 2], "day": [dt.date(2024, 1, 1), None],
                       "ms": [dt.datetime(2024, 1, 1, 0, 0, 0, 1000, tzinfo=dt.timezone.utc), None],
                       "dec": [decimal.Decimal("1.50"), None], "ls": [[None, 2], None], "st": [None, {"x": 1.0}],
                       "mp": [[("k", None)], []]}, schema=TYPED_SCHEMA)


@pytest.fixture(params=["cow", "mor"])
def typed(request, tmp_path):
    """Copy-on-write (base files: statistics are consulted) and merge-on-read (log blocks only)."""
    kw = {"table_type": "COPY_ON_WRITE"} if request.param == "cow" else {"num_buckets": 1}
    t = pyhudi.create_table(str(tmp_path / "t"), TYPED_SCHEMA, "id", **kw)
    t.upsert(TYPED_ROWS)
    return t


def typed_ids(t, f) -> list[int]:
    return sorted(t.read(columns=["id"], filters=[f]).column("id").to_pylist())


def test_filter_value_the_column_type_cannot_hold_is_compared_not_truncated(typed):
    """pyarrow converts ``1.5`` to the int64 ``1``, a datetime to its day, microseconds to
    milliseconds without a word: filters selected by the truncated value (``id = 1.5`` found
    id 1, ``id < 1.5`` found nothing)."""
    assert typed_ids(typed, ("id", "=", 1.5)) == []
    assert typed_ids(typed, ("id", "<", 1.5)) == [1]
    assert typed_ids(typed, ("id", "in", [1.5, 2])) == [2]
    assert typed_ids(typed, ("id", "not in", [1.5])) == [1, 2]
    assert typed_ids(typed, ("day", "=", dt.datetime(2024, 1, 1, 1))) == []
    assert typed_ids(typed, ("day", "in", [dt.datetime(2024, 1, 1, 1)])) == []
    assert typed_ids(typed, ("day", ">=", dt.datetime(2024, 1, 1, 1))) == []
    assert typed_ids(typed, ("day", "<", dt.datetime(2024, 1, 1, 1))) == [1]
    assert typed_ids(typed, ("day", "in", [dt.date(2024, 1, 1)])) == [1]
    late = dt.datetime(2024, 1, 1, 0, 0, 0, 1234, tzinfo=dt.timezone.utc)
    assert typed_ids(typed, ("ms", ">=", late)) == [] and typed_ids(typed, ("ms", "<", late)) == [1]
    # a value of another comparable type: copy-on-write used to fail in the statistics check
    # (AttributeError: 'pyarrow._compute.Expression' object has no attribute 'as_py')
    assert typed_ids(typed, ("dec", "=", 1.5)) == [1]
    assert typed_ids(typed, ("dec", "in", [1.5, 7])) == [1]


def test_filters_that_cannot_compare_are_refused_before_reading(typed):
    """Lists, structs and maps have no order or equality in Arrow, and a value of an
    incomparable type has no kernel: these used to fail mid-read with ArrowNotImplementedError."""
    nested = "only 'is null' and 'is not null' apply to it"
    refused = [
        (("ls", "=", [None, 2]), f"filter ('ls', '=', [None, 2]): column 'ls' is nested (list<element: int64>); {nested}"),
        (("st", "in", [{"x": 1.0}]), f"filter ('st', 'in', [{{'x': 1.0}}]): column 'st' is nested (struct<x: double>); {nested}"),
        (("mp", "!=", []), f"filter ('mp', '!=', []): column 'mp' is nested (map<string, int64>); {nested}"),
        (("id", "=", "1"), "filter ('id', '=', '1'): the value cannot be compared with column 'id' (int64)"),
        (("day", "<", "2024-01-01"),
         "filter ('day', '<', '2024-01-01'): the value cannot be compared with column 'day' (date32[day])"),
        (("dec", "in", [1.5, "x"]),
         "filter ('dec', 'in', [1.5, 'x']): the value cannot be compared with column 'dec' (decimal128(10, 2))"),
        (("id", "in", [None, 1]), "filter ('id', 'in', [None, 1]): a null in an 'in' list never compares equal; "
                                  "test nulls with 'is null' / 'is not null'"),
    ]
    for f, message in refused:
        with pytest.raises(SchemaError) as err:
            typed.read(filters=[f])
        assert str(err.value) == message
    assert typed_ids(typed, ("ls", "is null")) == [2]
    assert typed_ids(typed, ("st", "is not null")) == [2]
    assert typed_ids(typed, ("mp", "is not null")) == [1, 2]


def test_an_in_list_mixing_dates_and_datetimes_compares_each_value_in_its_own_type(tmp_path):
    """Arrow infers one type for a mixed list: a datetime past midnight beside a date became that
    date and matched it (found by the model-based test)."""
    import datetime as dt

    schema = pa.schema([pa.field("id", pa.int64(), False), ("day", pa.date32())])
    t = pyhudi.create_table(str(tmp_path / "t"), schema, "id")
    t.upsert(pa.table({"id": [1, 2], "day": [dt.date(2024, 2, 29), dt.date(2024, 3, 1)]}, schema=schema))
    assert t.read(filters=[("day", "in", [dt.date(1, 1, 1), dt.datetime(2024, 2, 29, 12, 0)])]).num_rows == 0
    got = t.read(filters=[("day", "in", [dt.datetime(2024, 3, 1, 0, 0), dt.date(2024, 2, 29)])])
    assert sorted(got.column("id").to_pylist()) == [1, 2]


_MASK_TABLE = pa.table({
    "i": pa.array([1, 2, None, 4, -3], pa.int64()),
    "f": pa.array([0.5, float("nan"), None, 2.0, -1.0], pa.float32()),
    "s": pa.array(["apple", None, "banana", "cherry", "apricot"]),
    "d": pa.array([dt.date(2024, 1, 1), dt.date(2024, 1, 2), None, dt.date(2024, 2, 1), dt.date(2023, 12, 31)]),
    "t": pa.array([dt.datetime(2024, 1, 1, 12), None, dt.datetime(2024, 1, 2), dt.datetime(2024, 1, 1),
                   dt.datetime(2024, 1, 1, 0, 0, 0, 1)], pa.timestamp("us", "UTC")),
    "m": pa.array([decimal.Decimal("1.10"), None, decimal.Decimal("2.00"), decimal.Decimal("-1.00"),
                   decimal.Decimal("1.00")], pa.decimal128(5, 2)),
})
_MASK_FILTERS = [
    ("i", "=", 2), ("i", "!=", 2), ("i", "<", 1.5), ("i", ">=", 2.0), ("i", "in", [1, 4, 2.5]),
    ("i", "not in", [1, 4.0]), ("i", "is null"), ("i", "is not null"), ("f", ">", 0.1), ("f", "=", 0.5),
    ("f", "in", [0.5, 2]), ("f", "not in", [0.5]), ("f", "is null"), ("s", "=", "apple"), ("s", "<", "b"),
    ("s", "in", ["apple", "cherry"]), ("s", "not in", ["apple"]), ("s", "starts_with", "ap"),
    ("s", "ends_with", "y"), ("s", "contains", "an"), ("d", ">=", dt.date(2024, 1, 2)),
    ("d", "=", dt.datetime(2024, 1, 1, 0, 0)), ("d", "=", dt.datetime(2024, 1, 1, 6, 0)),
    ("d", "in", [dt.date(2024, 1, 1), dt.datetime(2024, 2, 1, 1)]),
    ("t", ">", dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)), ("t", "is not null"),
    ("m", ">", decimal.Decimal("1.05")), ("m", "=", 1), ("m", "in", [decimal.Decimal("2"), 1.1]),
]


@pytest.mark.parametrize("given", _MASK_FILTERS, ids=[" ".join(map(str, f[:2])) for f in _MASK_FILTERS])
def test_filters_evaluated_on_masks_select_what_their_expressions_select(given):
    """Filters run as masks of compute kernels (no Acero plan per batch, no pyarrow.dataset
    import): the same rows as the filter's expression, nulls and mixed types included."""
    from pyhudi.read.filters import filter_table, normalize_filters

    schema = _MASK_TABLE.schema
    (f,) = normalize_filters([given], schema)
    rows = _MASK_TABLE.append_column("row", pa.array(range(_MASK_TABLE.num_rows)))  # (NaN != NaN: compare rows)
    expected = rows.filter(f.expression(schema.field(f.column))).column("row").to_pylist()
    assert filter_table(rows, [f], schema).column("row").to_pylist() == expected


def test_several_filters_on_masks_are_anded_with_sql_nulls():
    from pyhudi.read.filters import filter_table, normalize_filters

    schema = _MASK_TABLE.schema
    filters = normalize_filters([("i", "!=", 4), ("s", "not in", ["banana"]), ("f", "<", 1.0)], schema)
    assert filter_table(_MASK_TABLE, filters, schema).column("i").to_pylist() == [1, -3]
    assert filter_table(_MASK_TABLE, [], schema) is _MASK_TABLE

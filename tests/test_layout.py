"""Layout orders (pyhudi.layout.curve_order): linear, z-order and Hilbert curves, direct and sampled."""

from __future__ import annotations

import datetime as dt
import itertools
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from pyhudi.errors import ConfigError
from pyhudi.layout import curve_layout, curve_order

GRID = [(a, b) for a in range(4) for b in range(4)]


def _grid_table(points):
    return pa.table({"a": [p[0] for p in points], "b": [p[1] for p in points]})


def _visit(table, columns, strategy, **kw):
    order = curve_order(table, columns, strategy, **kw).to_pylist()
    rows = table.to_pylist()
    return [tuple(rows[i][c] for c in columns) for i in order]


def test_z_order_visits_a_4x4_grid_in_morton_order():
    # the first column's bit is the higher one of each level: index bits a1 b1 a0 b0
    expected = [(0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (0, 3), (1, 2), (1, 3),
                (2, 0), (2, 1), (3, 0), (3, 1), (2, 2), (2, 3), (3, 2), (3, 3)]
    shuffled = [GRID[i] for i in np.random.default_rng(3).permutation(16)]
    assert _visit(_grid_table(shuffled), ["a", "b"], "z-order") == expected


def test_hilbert_visits_a_4x4_grid_along_the_curve():
    # quadrants in the order (low a, low b), (low a, high b), (high a, high b), (high a, low b)
    expected = [(0, 0), (1, 0), (1, 1), (0, 1), (0, 2), (0, 3), (1, 3), (1, 2),
                (2, 2), (2, 3), (3, 3), (3, 2), (3, 1), (2, 1), (2, 0), (3, 0)]
    shuffled = [GRID[i] for i in np.random.default_rng(4).permutation(16)]
    assert _visit(_grid_table(shuffled), ["a", "b"], "hilbert") == expected


@pytest.mark.parametrize("dims,side", [(2, 16), (3, 4), (4, 4)])
def test_hilbert_steps_to_a_neighbour_cell_every_time(dims, side):
    points = list(itertools.product(range(side), repeat=dims))
    table = pa.table({f"c{i}": [p[i] for p in points] for i in range(dims)})
    seq = _visit(table, table.column_names, "hilbert")
    assert sorted(seq) == sorted(points)
    assert seq[0] == (0,) * dims
    assert all(sum(abs(x - y) for x, y in zip(u, v)) == 1 for u, v in zip(seq, seq[1:]))


def test_z_order_of_three_columns_interleaves_three_bits_per_level():
    points = list(itertools.product(range(2), repeat=3))
    table = pa.table({c: [p[i] for p in reversed(points)] for i, c in enumerate("xyz")})
    assert _visit(table, ["x", "y", "z"], "z-order") == points  # binary counting with x highest


def test_linear_sorts_lexicographically_with_nulls_last():
    table = pa.table({"a": [2, None, 1, 2, 1], "b": ["y", "x", None, "x", "z"]})
    assert _visit(table, ["a", "b"], "linear") == [(1, "z"), (1, None), (2, "x"), (2, "y"), (None, "x")]


@pytest.mark.parametrize("strategy", ["z-order", "hilbert"])
@pytest.mark.parametrize("method", ["direct", "sample"])
def test_one_column_curves_sort_by_the_column(strategy, method):
    values = [5, -3, None, 12, 0, -3, None, 7]
    table = pa.table({"v": values})
    got = [values[i] for i in curve_order(table, ["v"], strategy, method=method).to_pylist()]
    assert got == [-3, -3, 0, 5, 7, 12, None, None]


TYPED = {
    "int": (pa.int64(), [-5, 10**12, -(10**12), 0, 3]),
    "int8": (pa.int8(), [-128, 127, 0, -1, 1]),
    "uint": (pa.uint64(), [2**63 + 5, 0, 2**64 - 1, 7, 2**63]),
    "float": (pa.float64(), [-1.5, 2.25, -1e300, 0.0, 1e-300]),
    "float32": (pa.float32(), [-0.5, 3.5, -7.25, 0.25, 1.0]),
    "string": (pa.string(), ["pear", "apple", "applesauce-long-text", "", "zebra"]),
    "large_string": (pa.large_string(), ["b", "aa", "a", "ab", "abcdefghij"]),
    "binary": (pa.binary(), [b"\xff", b"\x00", b"\x00\x01", b"\x7f", b"a"]),
    "timestamp": (pa.timestamp("us"), [dt.datetime(2024, 1, 2), dt.datetime(1969, 12, 31, 23, 59),
                                        dt.datetime(2030, 5, 5), dt.datetime(2024, 1, 1, 0, 0, 0, 1),
                                        dt.datetime(1900, 1, 1)]),
    "timestamp_tz": (pa.timestamp("ms", "UTC"), [dt.datetime(2024, 1, 2, tzinfo=dt.timezone.utc),
                                                 dt.datetime(2001, 1, 1, tzinfo=dt.timezone.utc),
                                                 dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
                                                 dt.datetime(1960, 1, 1, tzinfo=dt.timezone.utc),
                                                 dt.datetime(2100, 1, 1, tzinfo=dt.timezone.utc)]),
    "date": (pa.date32(), [dt.date(2024, 3, 1), dt.date(1950, 1, 1), dt.date(2024, 2, 29),
                           dt.date(1970, 1, 1), dt.date(2099, 12, 31)]),
    "bool": (pa.bool_(), [True, False, True, False, False]),
    "decimal": (pa.decimal128(10, 2), [Decimal("-1.50"), Decimal("3.25"), Decimal("0.00"),
                                       Decimal("-100.00"), Decimal("99.99")]),
}


@pytest.mark.parametrize("name", sorted(TYPED))
@pytest.mark.parametrize("strategy", ["z-order", "hilbert"])
@pytest.mark.parametrize("method", ["direct", "sample"])
def test_each_type_is_ordered_by_value_with_nulls_last(name, strategy, method):
    type_, values = TYPED[name]
    column = [*values, None]
    table = pa.table({"v": pa.array(column, type_)})
    got = [column[i] for i in curve_order(table, ["v"], strategy, method=method).to_pylist()]
    assert got[-1] is None
    assert got[:-1] == sorted(values)


@pytest.mark.parametrize("strategy", ["z-order", "hilbert"])
def test_nulls_take_the_coordinate_after_the_largest_value(strategy):
    # a null in b acts as b=4 on a 4-wide grid of a: with a single a value, nulls come last
    table = pa.table({"a": [1, 1, 1, 1], "b": [None, 3, 0, 2]})
    assert _visit(table, ["a", "b"], strategy) == [(1, 0), (1, 2), (1, 3), (1, None)]
    only_nulls = pa.table({"a": [2, 1, 3], "b": pa.nulls(3, pa.int64())})
    assert _visit(only_nulls, ["a", "b"], strategy) == [(1, None), (2, None), (3, None)]


def _random_table(n, seed=7):
    rng = np.random.default_rng(seed)
    return pa.table({
        "a": rng.integers(-1_000_000, 1_000_000, n),
        "b": rng.normal(size=n),
        "c": pa.array([f"k{v:06d}" for v in rng.integers(0, 100_000, n)]),
    })


@pytest.mark.parametrize("strategy", ["z-order", "hilbert"])
def test_sample_covering_every_row_gives_the_direct_order(strategy):
    table = _random_table(5000)
    direct = curve_order(table, ["a", "b", "c"], strategy, method="direct")
    sampled = curve_order(table, ["a", "b", "c"], strategy, method="sample", sample_size=5000)
    assert sampled.equals(direct)


@pytest.mark.parametrize("strategy", ["z-order", "hilbert"])
def test_small_sample_is_deterministic_and_keeps_files_selective(strategy):
    table = _random_table(20_000)
    first = curve_order(table, ["a", "b"], strategy, method="sample", sample_size=300)
    again = curve_order(table, ["a", "b"], strategy, method="sample", sample_size=300)
    assert first.equals(again)  # seeded: a re-executed plan writes the same order
    assert sorted(first.to_pylist()) == list(range(20_000))
    assert not first.equals(curve_order(table, ["a", "b"], strategy, method="direct"))
    for column in ("a", "b"):
        assert _hit_fraction(table, first, column, files=64) <= 0.35


def _hit_fraction(table, order, column, files, probes=300):
    """Average fraction of files whose [min, max] holds a random value of ``column``."""
    values = table.column(column).to_numpy()[order.to_numpy()]
    parts = np.array_split(values, files)
    lows = np.array([p.min() for p in parts])
    highs = np.array([p.max() for p in parts])
    points = np.random.default_rng(11).choice(values, probes)
    return float(np.mean([np.mean((lows <= x) & (x <= highs)) for x in points]))


@pytest.mark.parametrize("method", ["direct", "sample"])
def test_curves_keep_both_columns_selective_where_linear_keeps_one(method):
    table = _random_table(40_000)
    linear = curve_order(table, ["a", "b"], "linear")
    assert _hit_fraction(table, linear, "a", 64) <= 0.05
    assert _hit_fraction(table, linear, "b", 64) >= 0.95
    for strategy in ("z-order", "hilbert"):
        order = curve_order(table, ["a", "b"], strategy, method=method, sample_size=5000)
        assert _hit_fraction(table, order, "a", 64) <= 0.35, strategy
        assert _hit_fraction(table, order, "b", 64) <= 0.35, strategy


def test_three_columns_stay_selective_on_every_column():
    table = _random_table(40_000)
    for strategy in ("z-order", "hilbert"):
        order = curve_order(table, ["a", "b", "c"], strategy)
        for column in ("a", "b", "c"):
            assert _hit_fraction(table, order, column, 64) <= 0.45, (strategy, column)


def test_chunked_and_dictionary_columns_are_ordered_by_value():
    chunked = pa.chunked_array([["m", "a"], ["z", None, "b"]])
    table = pa.table({"s": chunked, "d": pa.array(["x", "y", "x", "y", "x"]).dictionary_encode()})
    assert _visit(table, ["s"], "hilbert") == [("a",), ("b",), ("m",), ("z",), (None,)]
    assert [r[0] for r in _visit(table, ["d"], "z-order")] == ["x", "x", "x", "y", "y"]


def test_empty_table_and_no_columns():
    empty = pa.table({"a": pa.array([], pa.int64())})
    assert curve_order(empty, ["a"], "hilbert").to_pylist() == []
    assert curve_order(pa.table({"a": [3, 1, 2]}), [], "z-order").to_pylist() == [0, 1, 2]


def test_bad_inputs_are_named():
    table = pa.table({"a": [1, 2], "l": [[1], [2]]})
    with pytest.raises(ConfigError, match="unknown layout strategy 'spiral'.*linear, z-order, hilbert"):
        curve_order(table, ["a"], "spiral")
    with pytest.raises(ConfigError, match="unknown sort column\\(s\\) nope: the table has a, l"):
        curve_order(table, ["nope"], "hilbert")
    with pytest.raises(ConfigError, match="unknown curve build method 'guess'"):
        curve_order(table, ["a"], "z-order", method="guess")
    with pytest.raises(ConfigError, match="sample.size must be a positive integer, got 0"):
        curve_order(table, ["a"], "z-order", method="sample", sample_size=0)
    with pytest.raises(ConfigError, match="list<item: int64> column cannot be a layout sort column"):
        curve_order(table, ["l"], "hilbert")
    with pytest.raises(ConfigError, match="list of column names, got the string 'a'"):
        curve_order(table, "a", "hilbert")


def test_strategy_names_are_case_insensitive():
    table = _grid_table(GRID)
    assert curve_order(table, ["a", "b"], " Z-ORDER ").equals(curve_order(table, ["a", "b"], "z-order"))
    assert curve_order(table, ["a", "b"], "HILBERT", method="Sample").equals(
        curve_order(table, ["a", "b"], "hilbert", method="sample"))


def _shuffled_grid(side: int) -> pa.Table:
    """Every point of a ``side`` x ``side`` grid once, shuffled (each curve cell equally full)."""
    a, b = np.meshgrid(np.arange(side), np.arange(side), indexing="ij")
    order = np.random.default_rng(3).permutation(side * side)
    return pa.table({"a": a.ravel()[order], "b": b.ravel()[order]})


@pytest.mark.parametrize("strategy", ["z-order", "hilbert"])
def test_file_bounds_of_a_power_of_two_cut_at_curve_cells(strategy):
    table = _shuffled_grid(16)  # 256 rows, 4 bits per column: 4 files = the 4 quadrants
    layout = curve_layout(table, ["a", "b"], strategy)
    assert layout.index_bits == 8
    assert layout.file_bounds(4) == [0, 64, 128, 192, 256]
    ordered = table.take(layout.order)
    boxes = sorted((min(f["a"]), max(f["a"]), min(f["b"]), max(f["b"]))
                   for f in (ordered.slice(i * 64, 64).to_pydict() for i in range(4)))
    assert boxes == [(0, 7, 0, 7), (0, 7, 8, 15), (8, 15, 0, 7), (8, 15, 8, 15)]


def test_file_bounds_snap_equal_row_cuts_to_the_nearest_cell_boundary():
    # 100 grid rows: the cells of the 2-bit prefix (quadrants) hold 25 rows each; 10 more rows
    # in the first make the equal-row cuts 28, 55, 82 of 110, moved to the cells' starts
    grid = _shuffled_grid(10)
    extra = pa.table({"a": np.zeros(10, dtype=np.int64), "b": np.zeros(10, dtype=np.int64)})
    table = pa.concat_tables([grid, extra])
    layout = curve_layout(table, ["a", "b"], "z-order")
    cells = layout.keys >> np.uint64(layout.index_bits - 2)
    starts = [int(np.searchsorted(cells, c)) for c in range(1, 4)]
    assert starts == [35, 60, 85]
    assert layout.file_bounds(4) == [0, 35, 60, 85, 110]


def test_file_bounds_of_linear_and_other_counts_are_near_equal_rows():
    table = _shuffled_grid(10)
    assert curve_layout(table, ["a", "b"], "linear").file_bounds(3) == [0, 33, 67, 100]
    assert curve_layout(table, ["a"], "z-order").file_bounds(1) == [0, 100]
    assert curve_layout(table, ["a", "b"], "z-order").file_bounds(500) == list(range(101))
    bounds = curve_layout(table, ["a", "b"], "hilbert").file_bounds(3)  # cells of 1/8 file at most
    sizes = np.diff(bounds)
    assert len(bounds) == 4 and bounds[0] == 0 and bounds[-1] == 100 and sizes.min() >= 29 and sizes.max() <= 38
    empty = pa.table({"a": pa.array([], pa.int64())})
    assert curve_layout(empty, ["a"], "z-order").file_bounds(4) == [0]

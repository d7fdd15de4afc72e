"""Lead bits (``hoodie.pyhudi.layout.optimize.lead.bits``): the first sort column's top bits before
the curve, so clustered files cut it into more ranges than the other sort columns — the exact
index, the exact files (boxes) a grid is cut into, what point filters then skip, the plan that
stores the option, the spill path cutting the same files, and bad values named.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.errors import ConfigError
from pyhudi.layout import curve_index, curve_layout, curve_order, cut_at_cells
from pyhudi.services import clustering_run

LEAD = "hoodie.pyhudi.layout.optimize.lead.bits"
LAYOUT = "hoodie.layout.optimize.strategy"
TARGET = "hoodie.clustering.plan.strategy.target.file.max.bytes"
NO_SMALL_FILES = {"hoodie.parquet.small.file.limit": "0"}


def grid(side: int, seed: int = 3) -> pa.Table:
    """Every point of a ``side`` x ``side`` grid once, shuffled (every curve cell equally full)."""
    a, b = np.meshgrid(np.arange(side), np.arange(side), indexing="ij")
    order = np.random.default_rng(seed).permutation(side * side)
    return pa.table({"a": a.ravel()[order], "b": b.ravel()[order]})


def boxes(table: pa.Table, strategy: str, files: int, lead_bits: int) -> list[tuple[int, int, int, int]]:
    """Each file's (min a, max a, min b, max b), in file order."""
    layout = curve_layout(table, ["a", "b"], strategy, lead_bits=lead_bits)
    ordered = table.take(layout.order)
    bounds = layout.file_bounds(files)
    out = []
    for low, high in zip(bounds, bounds[1:]):
        part = ordered.slice(low, high - low).to_pydict()
        out.append((min(part["a"]), max(part["a"]), min(part["b"]), max(part["b"])))
    return out


def files_read(file_boxes, column: int, value: int) -> int:
    """How many files a point filter ``column = value`` reads (its min/max hold the value)."""
    return sum(1 for box in file_boxes if box[2 * column] <= value <= box[2 * column + 1])


# ------------------------------------------------------------------------------ the index
def test_z_order_index_puts_the_lead_bits_before_the_interleaved_rest():
    # 3-bit coordinates, 1 lead bit: a = 101, b = 011 -> lead 1; the curve over a's low bits
    # moved up (010) and b: bits r2 b2 r1 b1 r0 b0 = 0 0 1 1 0 1 = 13; index 1 << 6 | 13
    a, b = np.array([5, 0, 7], np.uint64), np.array([3, 0, 7], np.uint64)
    index, width = curve_index("z-order", [a, b], 3, lead_bits=1)
    assert width == 7
    assert index.tolist() == [77, 0, (1 << 6) | 0b111101]  # (a = 111: lead 1, rest 110)
    plain, plain_width = curve_index("z-order", [a, b], 3)
    assert plain_width == 6 and plain.tolist() == [0b100111, 0, 0b111111]


def test_z_order_with_lead_bits_visits_an_8x8_grid_in_the_weighted_order():
    # 1 lead bit of 3: the index's bits are a2 | a1 b2 a0 b1 0 b0 — rows sort by that tuple
    table = grid(8)
    order = curve_order(table, ["a", "b"], "z-order", lead_bits=1).to_pylist()
    rows = table.to_pylist()
    visited = [(rows[i]["a"], rows[i]["b"]) for i in order]

    def bit(v, k):
        return (v >> k) & 1

    expected = sorted(visited, key=lambda p: (bit(p[0], 2), bit(p[0], 1), bit(p[1], 2), bit(p[0], 0),
                                              bit(p[1], 1), bit(p[1], 0)))
    assert visited == expected


@pytest.mark.parametrize("strategy", ["z-order", "hilbert"])
def test_lead_bits_cut_a_grid_into_strips_of_the_first_column(strategy):
    # 16 files of a 16 x 16 grid: 2 lead bits + 2 curve bits = 8 ranges of a x 2 of b (a: 2 wide)
    got = boxes(grid(16), strategy, 16, lead_bits=2)
    assert sorted(got) == [(a, a + 1, b, b + 7) for a in range(0, 16, 2) for b in (0, 8)]
    assert [box[0] for box in got] == [a for a in range(0, 16, 2) for _ in (0, 1)]  # the lead: a ascending
    # without lead bits the same files are the 4 x 4 squares of the plain curves
    assert sorted(boxes(grid(16), strategy, 16, lead_bits=0)) == [
        (a, a + 3, b, b + 3) for a in range(0, 16, 4) for b in range(0, 16, 4)]


@pytest.mark.parametrize("strategy", ["z-order", "hilbert"])
def test_point_filters_on_64_files_read_a_sixteenth_of_them_on_the_first_column(strategy):
    # 64 files of a 64 x 64 grid: plain curves 8 x 8 (8 files per point filter on either
    # column); 2 lead bits 16 x 4 — a = x reads 4 files (6.25%), b = y 16 (25%)
    plain = boxes(grid(64), strategy, 64, lead_bits=0)
    lead = boxes(grid(64), strategy, 64, lead_bits=2)
    assert {files_read(plain, 0, v) for v in range(64)} == {8}
    assert {files_read(plain, 1, v) for v in range(64)} == {8}
    assert {files_read(lead, 0, v) for v in range(64)} == {4}
    assert {files_read(lead, 1, v) for v in range(64)} == {16}
    assert len(lead) == 64 and all(box[1] - box[0] == 3 and box[3] - box[2] == 15 for box in lead)


def test_lead_bits_past_the_first_columns_resolution_order_it_linearly():
    # 2-bit coordinates, 5 lead bits: all of a leads (clamped to its 2 bits), then b
    table = grid(4)
    layout = curve_layout(table, ["a", "b"], "hilbert", lead_bits=5)
    assert layout.index_bits == 6
    ordered = table.take(layout.order).to_pylist()
    assert [(r["a"], r["b"]) for r in ordered][:4] == [(0, 0), (0, 1), (0, 2), (0, 3)]
    assert [r["a"] for r in ordered] == sorted(r["a"] for r in ordered)


def test_linear_ignores_lead_bits_and_default_is_the_plain_curve():
    table = grid(8)
    assert curve_order(table, ["a", "b"], "linear", lead_bits=3).to_pylist() == \
        curve_order(table, ["a", "b"], "linear").to_pylist()
    for strategy in ("z-order", "hilbert"):
        default = curve_layout(table, ["a", "b"], strategy)
        zero = curve_layout(table, ["a", "b"], strategy, lead_bits=0)
        assert default.index_bits == 6 and default.keys.tolist() == zero.keys.tolist()


def test_cut_at_cells_moves_each_cut_to_the_nearer_end_of_its_cell():
    # 100 rows in cells of 30, 20, 30, 20 rows; 4 files: equal cuts 25, 50, 75 -> 30, 50, 80
    assert cut_at_cells(np.array([0, 30, 50, 80, 100]), 4) == [0, 30, 50, 80, 100]
    # a cell of 70 rows: the cut at 50 is 20 rows from its start and 30 from its end, over half
    # a file (12.5) either way, so it stays; empty cells are skipped
    assert cut_at_cells(np.array([0, 30, 30, 100]), 4) == [0, 30, 50, 75, 100]
    assert cut_at_cells(np.array([0, 0]), 4) == [0]
    assert cut_at_cells(np.array([0, 3]), 5) == [0, 1, 2, 3]


@pytest.mark.parametrize("value", [-1, 17, 1.5, True, "2"])
def test_bad_lead_bits_are_named(value):
    with pytest.raises(ConfigError, match=rf"{LEAD} must be an integer from 0 to 16 .* got {value!r}"):
        curve_order(grid(4), ["a", "b"], "z-order", lead_bits=value)


# ------------------------------------------------------------------------------ clustering
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("p", pa.string()), ("a", pa.int64()), ("b", pa.int64())])


def grid_table(tmp_path, side=32, inserts=8) -> pyhudi.Table:
    """A table of ``side`` x ``side`` grid rows in one partition, in ``inserts`` small files."""
    data = grid(side)
    n = data.num_rows
    rows = pa.table({"id": np.arange(n), "p": ["x"] * n, "a": data.column("a"), "b": data.column("b")},
                    schema=SCHEMA)
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", partition_fields="p")
    for k in range(inserts):
        t.insert(rows.slice(k * n // inserts, n // inserts), options=NO_SMALL_FILES)
    return t


def target_for(t, files: int) -> str:
    """``target.file.max.bytes`` that makes the group's numOutputFileGroups ``files``."""
    total = sum(g.base_files[0].size for g in t.file_groups())
    return str(math.ceil(total / files))


def plan_params(t, instant) -> dict:
    path = Path(t.path) / ".hoodie" / "timeline" / f"{instant}.clustering.requested"
    with open(path, "rb") as f:
        (record,) = list(fastavro.reader(f))
    plan = record["clusteringPlan"]
    assert [g["numOutputFileGroups"] for g in plan["inputGroups"]] == [16]
    return plan["strategy"]["strategyParams"]


@pytest.mark.parametrize("strategy", ["z-order", "hilbert"])
def test_clustering_with_lead_bits_skips_more_files_on_the_first_column(tmp_path, strategy):
    t = grid_table(tmp_path)
    before = t.read().sort_by("id")
    options = {LAYOUT: strategy, LEAD: "2", TARGET: target_for(t, 16)}
    instant = t.schedule_clustering(sort_columns=["a", "b"], options=options)
    assert plan_params(t, instant) == {"hoodie.clustering.plan.strategy.sort.columns": "a,b", LAYOUT: strategy,
                                       LEAD: "2"}
    t.run_clustering(instant, options={LEAD: "0"})  # the plan's lead bits decide
    assert t.read().sort_by("id").to_pylist() == before.to_pylist()
    groups = t.file_groups()
    assert len(groups) == 16
    # 16 files of a 32 x 32 grid: 8 ranges of a (4 wide) x 2 of b (16 wide)
    file_boxes = []
    for g in groups:
        data = pq.read_table(Path(t.path) / g.base_files[0].relpath, columns=["a", "b"]).to_pydict()
        file_boxes.append((min(data["a"]), max(data["a"]), min(data["b"]), max(data["b"])))
    assert sorted(file_boxes) == [(a, a + 3, b, b + 15) for a in range(0, 32, 4) for b in (0, 16)]
    for column, value, read in (("a", 5, 2), ("a", 31, 2), ("b", 0, 8), ("b", 20, 8)):
        plan = t.plan_scan(None, [(column, "=", value)])
        assert (plan.metrics["files_considered"], plan.metrics["files_skipped"]) == (16, 16 - read)
        assert plan.metrics["footers_read"] == 0
        assert sorted(plan.to_table().column("id").to_pylist()) == \
            sorted(r["id"] for r in before.to_pylist() if r[column] == value)


def test_clustering_with_default_options_stores_no_lead_bits_and_cuts_squares(tmp_path):
    t = grid_table(tmp_path)
    instant = t.schedule_clustering(sort_columns=["a", "b"], options={LAYOUT: "z-order", TARGET: target_for(t, 16)})
    assert plan_params(t, instant) == {"hoodie.clustering.plan.strategy.sort.columns": "a,b", LAYOUT: "z-order"}
    t.run_clustering(instant)
    for column, value in (("a", 5), ("b", 20)):  # 4 x 4 squares: 4 of 16 files either way
        metrics = t.plan_scan(None, [(column, "=", value)]).metrics
        assert (metrics["files_considered"], metrics["files_skipped"]) == (16, 12)


@pytest.mark.parametrize("value,message", [
    ("x", f"invalid value 'x' for {LEAD}: invalid literal for int"),
    ("-1", f"{LEAD} must be an integer from 0 to 16 \\(the first sort column's extra bits of resolution\\), got -1"),
    ("40", f"{LEAD} must be an integer from 0 to 16 .*, got 40"),
])
def test_bad_lead_bits_fail_the_schedule_and_leave_the_table_unchanged(tmp_path, value, message):
    t = grid_table(tmp_path, side=8, inserts=2)
    timeline = sorted(p.name for p in (Path(t.path) / ".hoodie" / "timeline").iterdir())
    with pytest.raises(ConfigError, match=message):
        t.schedule_clustering(sort_columns=["a", "b"], options={LAYOUT: "z-order", LEAD: value})
    with pytest.raises(ConfigError, match=message):
        t.cluster(sort_columns=["a", "b"], options={LAYOUT: "hilbert", LEAD: value})
    assert sorted(p.name for p in (Path(t.path) / ".hoodie" / "timeline").iterdir()) == timeline


# ------------------------------------------------------------------------------ the spill path
class Stop(Exception):
    """Ends the run after both executions (the clustering is then undone)."""


@pytest.mark.parametrize("strategy,lead,files,method", [
    ("z-order", "2", 16, "direct"), ("hilbert", "1", 16, "direct"), ("hilbert", "0", 6, "direct"),
    ("z-order", "3", 8, "sample"), ("hilbert", "2", 1, "direct")])
def test_a_spilled_curve_group_is_cut_into_the_in_memory_files(tmp_path, monkeypatch, strategy, lead, files, method):
    t = grid_table(tmp_path)
    curve = {"hoodie.layout.optimize.curve.build.method": method, "hoodie.layout.optimize.build.curve.sample.size": "300"}
    instant = t.schedule_clustering(sort_columns=["a", "b"], options={LAYOUT: strategy, LEAD: lead,
                                                                       TARGET: target_for(t, files)})
    got = []

    def run_twice(self, tasks):
        (task,) = tasks
        assert (task.curve_method, task.lead_bits) == (method, int(lead))
        for budget in (task.buffer_bytes, 4_000):  # in memory, then spilled in runs of a few rows
            results = dataclasses.replace(task, buffer_bytes=budget).run()
            tables = [pq.read_table(Path(t.path) / s.relpath) for s, _ in results]
            got.append(([w.drop_columns(["_hoodie_file_name"]).to_pylist() for w in tables],
                        [r for _, r in results]))
        raise Stop()

    spills = []
    original = clustering_run.ClusteringTask._run_spilled

    def recording(self, *args):
        spills.append(self.buffer_bytes)
        return original(self, *args)

    monkeypatch.setattr(clustering_run.ClusteringTask, "_run_spilled", recording)
    monkeypatch.setattr("pyhudi.engine.local.LocalEngine.run_tasks", run_twice)
    with pytest.raises(Stop):
        t.run_clustering(instant, options=curve)
    (memory, memory_ranges), (spilled, spilled_ranges) = got
    assert len(memory) == files and [len(f) for f in spilled] == [len(f) for f in memory]
    assert spilled == memory  # the same rows in the same files, in the same order
    assert json.dumps(spilled_ranges, sort_keys=True) == json.dumps(memory_ranges, sort_keys=True)
    assert spills == [4_000]  # (the second run took the spill path)


def test_a_plan_without_lead_bits_takes_them_from_the_run_options(tmp_path):
    # (a plan Apache Hudi wrote has no pyhudi key: the executor's options decide, as for the layout)
    t = grid_table(tmp_path)
    instant = t.schedule_clustering(sort_columns=["a", "b"], options={LAYOUT: "hilbert", TARGET: target_for(t, 16)})
    assert LEAD not in plan_params(t, instant)
    t.run_clustering(instant, options={LEAD: "2"})
    for column, value, read in (("a", 9, 2), ("b", 30, 8)):
        metrics = t.plan_scan(None, [(column, "=", value)]).metrics
        assert (metrics["files_considered"], metrics["files_skipped"]) == (16, 16 - read)

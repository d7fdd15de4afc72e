"""A clustering group larger than the execution budget (issue 14, Performance: memory of executing
one group stays bounded): sorted runs spilled under ``.hoodie/.temp/<instant>/``, merged back
streaming into files of about the target size — the same rows in the same order as the in-memory
path, holding at most the budget's rows.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.layout import curve_order
from pyhudi.read.skipping import COLUMN_RANGES_KEY, column_ranges
from pyhudi.services import clustering_run, clustering_sort

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("p", pa.string()), ("x", pa.int64()), ("s", pa.string()),
                    ("d", pa.float64())])
NO_SMALL_FILES = {"hoodie.parquet.small.file.limit": "0"}
BUFFER = "hoodie.pyhudi.clustering.execution.buffer.bytes"
INCLUDE_LOGS = {"hoodie.pyhudi.clustering.plan.include.log.files": "true"}
TINY = 6_000  # bytes: runs of a few dozen rows


def batch(first: int, n: int) -> pa.Table:
    ids = list(range(first, first + n))
    return pa.table({
        "id": ids, "p": ["a"] * n,
        "x": [None if i % 13 == 0 else (i * 37) % 11 for i in ids],  # few values: many ties
        "s": [None if i % 17 == 0 else f"k{(i * 7) % 23:02d}" for i in ids],
        "d": [None if i % 19 == 0 else float("nan") if i % 23 == 0 else -0.0 if i % 29 == 0 else
              ((i * 53) % 41 - 20) / 4 for i in ids],
    }, schema=SCHEMA)


def seeded(tmp_path, table_type="COPY_ON_WRITE", inserts=6, rows_each=60):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", partition_fields="p", table_type=table_type)
    for k in range(inserts):
        t.insert(batch(k * 1000, rows_each), options=NO_SMALL_FILES)
    if table_type == "MERGE_ON_READ":  # log files: updates and deletes in some groups
        changed = batch(0, 30).set_column(2, "x", pa.array([5] * 30, pa.int64()))
        t.upsert(changed)
        t.delete(pa.table({"id": [2001, 2002, 4005], "p": ["a"] * 3}))
    return t


def data_rows(tables: list[pa.Table]) -> pa.Table:
    """The rows of the files in their order, without the file name (it differs per file)."""
    return pa.concat_tables(tables).drop_columns(["_hoodie_file_name"])


def records(table: pa.Table) -> list[dict]:
    """Rows as dicts, NaN spelled "NaN" (so that equal rows compare equal)."""
    return [{k: "NaN" if v != v else v for k, v in r.items()} for r in table.to_pylist()]


class Stop(Exception):
    """Ends the run after both executions (the clustering is then undone)."""


def both_paths(monkeypatch, t, instant, options=None):
    """Execute every group of the plan in memory and through the spill path (tiny budget);
    returns per group (in-memory files, spilled files, the ExternalSort used)."""
    sorts, groups = [], []
    original_cleanup = clustering_sort.ExternalSort.cleanup

    def recording_cleanup(self):
        sorts.append(self)
        original_cleanup(self)

    def run_twice(self, tasks):
        for task in tasks:
            memory = task.run()
            spilled = dataclasses.replace(task, buffer_bytes=TINY, file_ids=[f"{i}" * 8 for i in "12"]).run()
            root = Path(t.path)  # (read now: the files go with the undone run)
            groups.append(([pq.read_table(root / s.relpath) for s, _ in memory],
                           [pq.read_table(root / s.relpath) for s, _ in spilled], sorts[-1], memory, spilled))
        raise Stop()

    monkeypatch.setattr(clustering_sort.ExternalSort, "cleanup", recording_cleanup)
    monkeypatch.setattr("pyhudi.engine.local.LocalEngine.run_tasks", run_twice)
    with pytest.raises(Stop):
        t.run_clustering(instant, options=options)
    return groups


CASES = [
    pytest.param(["x", "s"], {}, id="linear"),
    pytest.param(["x", "d"], {"hoodie.layout.optimize.strategy": "z-order"}, id="z-order"),
    pytest.param(["s", "x", "d"], {"hoodie.layout.optimize.strategy": "hilbert"}, id="hilbert"),
    pytest.param(["d", "s"], {"hoodie.layout.optimize.strategy": "z-order",
                              "hoodie.layout.optimize.curve.build.method": "sample",
                              "hoodie.layout.optimize.build.curve.sample.size": "50"}, id="z-order-sample"),
    pytest.param(["x", "s"], {"hoodie.layout.optimize.strategy": "hilbert",
                              "hoodie.layout.optimize.curve.build.method": "sample"}, id="hilbert-sample-all"),
    pytest.param(None, {}, id="no-sort-columns"),
]


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("sort_columns,options", CASES)
def test_spilled_execution_writes_the_in_memory_rows_in_the_same_order(tmp_path, monkeypatch, table_type,
                                                                        sort_columns, options):
    t = seeded(tmp_path, table_type)
    instant = t.schedule_clustering(sort_columns=sort_columns, options={**options, **INCLUDE_LOGS})
    ((memory, spilled, spill, _, _),) = both_paths(monkeypatch, t, instant, options)
    assert len(spill.run_sizes) >= 4  # the group was spilled in runs
    expected = data_rows(memory)
    assert expected.num_rows == len(t.read())
    got = data_rows(spilled)
    assert records(got) == records(expected)


def test_a_spilled_group_never_holds_more_than_the_budgets_rows(tmp_path, monkeypatch):
    t = seeded(tmp_path, inserts=12)
    instant = t.schedule_clustering(sort_columns=["x", "s"], options={"hoodie.layout.optimize.strategy": "z-order"})
    held = []
    original_add = clustering_sort.ExternalSort.add

    def counting_add(self, table):  # the rows the run buffer holds after each read batch
        held.append(self._held + table.num_rows)
        original_add(self, table)

    monkeypatch.setattr(clustering_sort.ExternalSort, "add", counting_add)
    ((memory, spilled, spill, _, _),) = both_paths(monkeypatch, t, instant)
    total = sum(m.num_rows for m in memory)
    assert total == 720
    run_rows = spill.run_rows
    batch_rows = max(1, run_rows // 4)  # the spill path reads batches of a quarter run
    assert run_rows < total // clustering_sort.FAN_IN  # more runs than one merge takes: merged in two levels
    assert spill.run_sizes == [run_rows] * (total // run_rows) + ([total % run_rows] if total % run_rows else [])
    assert max(held) <= run_rows + batch_rows
    assert spill.peak_rows <= run_rows + batch_rows
    assert 0 < spill.peak_merge_rows <= 2 * run_rows  # one batch per run, and the window cut from them
    assert records(data_rows(spilled)) == records(data_rows(memory))


def ranges_of(t, instant) -> dict:
    timeline = t.active_timeline()
    return json.loads(timeline.read_metadata(timeline.get(instant)).extra_metadata[COLUMN_RANGES_KEY])


def test_a_group_over_the_budget_clusters_into_files_of_about_the_target_size(tmp_path):
    t = seeded(tmp_path, inserts=12)
    expected = t.read().sort_by("id").to_pylist()
    target = 6_000
    instant = t.cluster(sort_columns=["x", "s"], options={BUFFER: str(TINY),
                                                         "hoodie.clustering.plan.strategy.target.file.max.bytes":
                                                             str(target)})
    assert [str(i.action) for i in t.timeline if i.requested_time == instant] == ["replacecommit"]
    assert records(t.read().sort_by("id")) == records(pa.Table.from_pylist(expected, t.read().schema))
    groups = t.file_groups()
    files = [Path(t.path) / g.base_files[0].relpath for g in groups]
    sizes = sorted(f.stat().st_size for f in files)
    assert len(files) >= 3 and all(s <= 2 * target for s in sizes)  # rolled by bytes written
    ranges = ranges_of(t, instant)
    for f in files:
        written = pq.read_table(f)
        order = pc.sort_indices(written, [("x", "ascending", "at_end"), ("s", "ascending", "at_end")])
        assert order.to_pylist() == list(range(written.num_rows))  # each file in (x, s) order
        assert ranges[f.name] == column_ranges(written, ["x", "s"])
        assert pq.read_table(f).column("_hoodie_file_name").unique().to_pylist() == [f.name]
    assert not (Path(t.path) / ".hoodie" / ".temp" / instant).exists()  # runs and markers gone


def spill_folder(t, instant) -> Path:
    return Path(t.path) / ".hoodie" / ".temp" / instant / clustering_run.SPILL_FOLDER


def test_a_failed_spilled_run_leaves_no_runs_and_no_files_then_runs_again(tmp_path, monkeypatch):
    from pyhudi.services import clustering_output

    t = seeded(tmp_path, inserts=8)
    expected = records(t.read(with_meta=True).sort_by("id"))
    instant = t.schedule_clustering(sort_columns=["x"], options={"hoodie.layout.optimize.strategy": "hilbert"})
    seen = []
    original = clustering_output.SizedFiles._append

    def failing(self, rows):
        seen.append(sorted(p.name for p in spill_folder(t, instant).rglob("*.parquet")))
        if len(seen) == 2:
            raise OSError("disk full")
        original(self, rows)

    monkeypatch.setattr(clustering_output.SizedFiles, "_append", failing)
    with pytest.raises(OSError, match="disk full"):
        t.run_clustering(instant, options={BUFFER: str(TINY)})
    assert seen[0] and all(n.startswith("run-") for n in seen[0])  # the runs existed while merging
    assert not spill_folder(t, instant).exists()
    assert [str(i.state) for i in t.timeline if i.requested_time == instant] == ["REQUESTED"]
    assert not [p for p in Path(t.path, "a").glob(f"*{instant}.parquet")]
    monkeypatch.setattr(clustering_output.SizedFiles, "_append", original)
    t.run_clustering(instant, options={BUFFER: str(TINY)})
    got = records(t.read(with_meta=True).sort_by("id"))
    assert [{k: v for k, v in r.items() if k != "_hoodie_file_name"} for r in got] == \
        [{k: v for k, v in r.items() if k != "_hoodie_file_name"} for r in expected]
    assert not (Path(t.path) / ".hoodie" / ".temp" / instant).exists()


KILL_DURING_SPILL = """
import os, sys, pyhudi
from pyhudi.services import clustering_sort
original = clustering_sort.ExternalSort._spill
count = []

def dying(self, rows):
    original(self, rows)
    count.append(1)
    if len(count) == 3:
        os._exit(9)

clustering_sort.ExternalSort._spill = dying
pyhudi.open_table(sys.argv[1]).run_clustering(sys.argv[2], options={sys.argv[3]: sys.argv[4]})
"""


def test_a_clustering_killed_while_spilling_is_rolled_back_with_its_runs_and_re_executed(tmp_path):
    import subprocess
    import sys

    t = seeded(tmp_path, inserts=8)
    expected = [{k: v for k, v in r.items() if k != "_hoodie_file_name"}
                for r in records(t.read(with_meta=True).sort_by("id"))]
    instant = t.schedule_clustering(sort_columns=["s", "x"], options={"hoodie.layout.optimize.strategy": "z-order"})
    proc = subprocess.run([sys.executable, "-c", KILL_DURING_SPILL, t.path, instant, BUFFER, str(TINY)],
                          capture_output=True, text=True)
    assert proc.returncode == 9, proc.stderr
    runs = sorted(p.name for p in spill_folder(t, instant).rglob("*.parquet"))
    assert runs == ["run-00001.parquet", "run-00002.parquet", "run-00003.parquet"]
    t.cluster(options={BUFFER: str(TINY), "hoodie.clustering.plan.strategy.small.file.limit": "1"})
    assert [(str(i.action), str(i.state)) for i in t.timeline if i.is_clustering] == [("replacecommit", "COMPLETED")]
    assert not (Path(t.path) / ".hoodie" / ".temp" / instant).exists()
    got = [{k: v for k, v in r.items() if k != "_hoodie_file_name"}
           for r in records(t.read(with_meta=True).sort_by("id"))]
    assert got == expected

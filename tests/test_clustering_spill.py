"""A clustering group larger than the execution budget (issue 14, Performance: memory of executing
one group stays bounded): sorted runs spilled under ``.hoodie/.temp/<instant>/``, merged back
streaming into files of about the target size — the same rows in the same order as the in-memory
path, holding at most the budget's rows.
"""

from __future__ import annotations

import dataclasses
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

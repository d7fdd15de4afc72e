"""Split reads: a large file group read as several tasks by key range returns exactly the rows of
the unsplit read — every key in exactly one split, also keys that only log blocks hold."""

from __future__ import annotations

from itertools import pairwise

import pyarrow as pa
import pytest

import pyhudi
import pyhudi.write.plan as write_plan
from pyhudi.errors import HudiError, ReadError
from pyhudi.logformat import parquet_options_for
from pyhudi.read.split import SPLIT_ROWS
from pyhudi.write import handle

STRING_SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False), ("a", pa.float64()), ("ts", pa.int64()),
                           ("c", pa.int64()), ("d", pa.string())])
INT_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), *list(STRING_SCHEMA)[1:]])
FAMILIES = {"f1": "a;ts", "f2": "c", "f3": "d"}
ROW_GROUP = 3


@pytest.fixture
def small_row_groups(monkeypatch):
    """Base files of three-row row groups (pyhudi writes one row group per file at test sizes)."""
    if hasattr(write_plan, "rows_per_row_group"):  # the write path's row-group size hook
        monkeypatch.setattr(write_plan, "rows_per_row_group", lambda txn, rows: ROW_GROUP)
        return

    def options(table, fixed=None):
        return {**parquet_options_for(table, fixed), "row_group_size": ROW_GROUP}
    monkeypatch.setattr(handle, "parquet_options_for", options)
    monkeypatch.setattr(write_plan, "parquet_options_for", options)


def _history(t, keys: list, key_type: pa.DataType) -> None:
    """Bulk insert, then updates of one family, inserts through another family only (keys before,
    between and after the base's keys), deletes (one re-inserted) and a full-row upsert."""
    n = len(keys)
    t.bulk_insert(pa.table({"id": pa.array(keys, key_type), "a": [float(i) for i in range(n)], "ts": [1] * n,
                            "c": list(range(n)), "d": [f"d{i}" for i in range(n)]}))
    t.upsert(pa.table({"id": pa.array(keys[1::4], key_type), "a": [100.0 + i for i in range(len(keys[1::4]))],
                       "ts": [2] * len(keys[1::4])}))
    t.delete(pa.table({"id": pa.array([keys[4], keys[9], keys[-1]], key_type)}))
    new = _new_keys(keys, key_type)
    t.upsert(pa.table({"id": pa.array([*new, keys[9]], key_type), "c": list(range(500, 500 + len(new) + 1))}))
    t.upsert(pa.table({"id": pa.array(keys[2:4], key_type), "a": [7.0, 8.0], "ts": [3, 3], "c": [70, 80],
                       "d": ["x", "y"]}))


def _new_keys(keys: list, key_type: pa.DataType) -> list:
    if pa.types.is_string(key_type):
        return ["a000", "k0155", "k0156", "z999"]  # before the first, between row groups, after the last
    return [0, 155, 1560, 99999]


def _rows(t, **kw) -> list[dict]:
    return sorted(t.read(**kw).to_pylist(), key=lambda r: str(r["id"]))


def _split_table(tmp_path, key_type: pa.DataType):
    schema = STRING_SCHEMA if pa.types.is_string(key_type) else INT_SCHEMA
    t = pyhudi.create_table(str(tmp_path / "s"), schema, "id", num_buckets=1, column_families=FAMILIES)
    keys = [f"k{i:04d}" for i in range(10, 310, 10)] if pa.types.is_string(key_type) else \
        [i * 7 for i in range(1, 31)]  # 7, 14, ..., 210: string order differs from numeric
    _history(t, keys, key_type)
    return t


@pytest.mark.parametrize("key_type", [pa.string(), pa.int64()])
def test_split_read_returns_the_rows_of_the_unsplit_read(tmp_path, small_row_groups, key_type):
    t = _split_table(tmp_path, key_type)
    whole = t.plan_scan()
    assert len(whole.tasks) == 1
    split = t.plan_scan(max_rows_per_task=7)
    ranges = [task.key_range for task in split.tasks]
    assert len(ranges) == 5  # 30 base rows in row groups of 3: splits of 6 rows
    assert ranges[0][0] is None and ranges[-1][1] is None
    assert all(a[1] == b[0] for a, b in pairwise(ranges))  # adjacent, no gap, no overlap
    expected = _rows(t)
    assert len(expected) == 30 - 3 + 4 + 1  # three deleted, four inserted, one re-inserted
    assert sorted(split.to_table().to_pylist(), key=lambda r: str(r["id"])) == expected
    seen = []
    for task in split.tasks:
        low, high = task.key_range
        keys = [str(k) for k in task.run().column("id").to_pylist()]
        assert all((low is None or k >= low) and (high is None or k < high) for k in keys)
        seen.extend(keys)
        assert task.metrics["row_groups_skipped"] > 0  # each split reads only its own row groups
    assert sorted(seen) == sorted(str(r["id"]) for r in expected)  # every key in exactly one split
    for columns in (["id", "a"], ["c"], ["d", "id"]):
        assert sorted(t.read(columns=columns, max_rows_per_task=7).to_pylist(), key=str) == \
            sorted(t.read(columns=columns).to_pylist(), key=str)
    assert _rows(t, max_rows_per_task=7, filters=[("c", ">=", 20)]) == _rows(t, filters=[("c", ">=", 20)])
    first = t.timeline[0].requested_time
    assert _rows(t, max_rows_per_task=4, as_of=first) == _rows(t, as_of=first)
    streamed = pa.Table.from_batches(list(t.scan(max_rows_per_task=7)))
    assert sorted(streamed.to_pylist(), key=lambda r: str(r["id"])) == expected


def test_split_size_comes_from_the_config_key_too(tmp_path, small_row_groups):
    t = _split_table(tmp_path, pa.string())
    by_option = t.plan_scan(options={SPLIT_ROWS.key: "7"})
    assert [task.key_range for task in by_option.tasks] == [task.key_range for task in
                                                            t.plan_scan(max_rows_per_task=7).tasks]
    assert len(t.plan_scan(options={SPLIT_ROWS.key: "100"}).tasks) == 1  # the file group fits
    assert len(t.plan_scan(max_rows_per_task=1).tasks) == 10  # one split per row group at most


@pytest.mark.parametrize("value", [0, -3, 2.5, True, "7"])
def test_split_size_must_be_a_positive_integer(tmp_path, value):
    t = pyhudi.create_table(str(tmp_path / "v"), STRING_SCHEMA, "id", num_buckets=1)
    with pytest.raises(ReadError, match=r"max_rows_per_task \(hoodie.pyhudi.read.split.rows\) must be a positive "
                                        r"integer"):
        t.plan_scan(max_rows_per_task=value)


def test_split_size_option_that_is_not_a_number_is_refused(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "v"), STRING_SCHEMA, "id", num_buckets=1)
    with pytest.raises(HudiError, match="hoodie.pyhudi.read.split.rows"):
        t.plan_scan(options={SPLIT_ROWS.key: "many"})


def test_base_files_without_sorted_row_groups_are_not_split(unzip_fixture):
    """Apache Hudi's base files are not sorted by key: their file groups stay whole."""
    t = pyhudi.open_table(str(unzip_fixture("sample_table/cow/v8_nonpartitioned.zip")))
    plan = t.plan_scan(max_rows_per_task=1)
    assert all(task.key_range is None for task in plan.tasks)
    assert len(plan.tasks) == len(t.plan_scan().tasks)


def test_split_keeps_log_rows_and_deletes_in_their_range(tmp_path, small_row_groups):
    """Log blocks (updates, inserts, deletes) are cut by key range, never by row group."""
    t = _split_table(tmp_path, pa.int64())
    plan = t.plan_scan(columns=["id", "c"], max_rows_per_task=7)
    by_split = [sorted(str(k) for k in task.run().column("id").to_pylist()) for task in plan.tasks]
    assert "0" in by_split[0] and "99999" in by_split[-1]  # inserts before / after every base key
    assert sum(len(keys) for keys in by_split) == len(_rows(t))
    assert not any("210" in keys for keys in by_split)  # deleted (the last base key)
    assert any("63" in keys for keys in by_split)  # deleted, then re-inserted through f2

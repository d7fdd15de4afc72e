"""Review of the session's soft-delete and record-position changes (review12): the bugs it found.

- A copy-on-write merge decided a soft delete (a true ``_hoodie_is_deleted``) without an ordering
  value by the event-time comparison, where it lost to the stored row; the merge rule (and every
  merge-on-read read of the same rows) takes it as a commit-time-ordering delete, which wins
  (reference: hudi-internals-core §5, ``isCommitTimeOrderingDelete``).
- ``insert_overwrite`` of a table without a bucket index replaced no file group of a partition
  whose every row was marked deleted: the planner dropped those rows, no file was written there,
  and the replaced partitions are those the written files name. Hudi replaces the partitions of
  its input records (its create handle writes an empty base file for the deleted ones).
"""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.write.merge import merge_into_base

hudi = pytest.importorskip("hudi")

TS_SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("ts", pa.int64()), ("_hoodie_is_deleted", pa.bool_())])
P_SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string()), ("_hoodie_is_deleted", pa.bool_())])


def _ts_rows(ids, values, ts, marks):
    return pa.table({"id": ids, "v": values, "ts": ts, "_hoodie_is_deleted": marks}, schema=TS_SCHEMA)


def _p_rows(ids, values, partitions, marks):
    return pa.table({"id": ids, "v": values, "p": partitions, "_hoodie_is_deleted": marks}, schema=P_SCHEMA)


def _pyhudi(path):
    return sorted((r["id"], r["v"]) for r in pyhudi.open_table(path).read(columns=["id", "v"]).to_pylist())


def _hudi_rs(path):
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read()
    return sorted((r["id"], r["v"]) for r in pa.Table.from_batches(batches).select(["id", "v"]).to_pylist()) if batches else []


# ---------------------------------------------------------------- soft deletes without an ordering value
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_soft_delete_without_an_ordering_value_wins_in_both_table_types(tmp_path, table_type):
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, TS_SCHEMA, "id", table_type=table_type, ordering_field="ts")
    t.upsert(_ts_rows([1, 2, 3, 4], ["a", "b", "c", "d"], [10, 10, 10, 10], [False] * 4))
    # 1: a stale soft delete (loses); 2: no ordering value (a commit-time-ordering delete: wins);
    # 3: a tie (the newer wins); 4: a plain update without an ordering value (loses)
    t.upsert(_ts_rows([1, 2, 3, 4], ["x", "y", "z", "w"], [5, None, 10, None], [True, True, True, False]))
    assert _pyhudi(path) == [(1, "a"), (4, "d")]
    assert _hudi_rs(path) == [(1, "a"), (4, "d")]


def test_merge_into_base_removes_the_row_of_a_soft_delete_without_an_ordering_value():
    old = pa.table({"_hoodie_commit_time": ["1", "1"], "_hoodie_commit_seqno": ["1_0_1", "1_0_2"],
                    "_hoodie_record_key": ["1", "2"], "_hoodie_partition_path": ["", ""],
                    "_hoodie_file_name": ["f", "f"], "id": [1, 2], "v": ["a", "b"], "ts": [10, 10],
                    "_hoodie_is_deleted": [False, False]})
    updates = pa.table({"_hoodie_record_key": ["1", "2"], "id": [1, 2], "v": ["x", "y"],
                        "ts": pa.array([None, None], pa.int64()), "_hoodie_is_deleted": [True, False]})
    merged = merge_into_base(old, updates, None, "ts")
    assert merged.kept.column("id").to_pylist() == [2]
    assert merged.new_data.num_rows == 0
    assert (merged.num_inserts, merged.num_updates, merged.num_deletes) == (0, 0, 1)


# ---------------------------------------------------------------- insert_overwrite of marked rows only
def test_insert_overwrite_of_only_marked_rows_empties_an_unpartitioned_table(tmp_path):
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, P_SCHEMA.remove(2), "id")
    t.insert(pa.table({"id": [1, 2], "v": ["a", "b"], "_hoodie_is_deleted": [False, False]}))
    instant = t.insert_overwrite(pa.table({"id": [3], "v": ["c"], "_hoodie_is_deleted": [True]}))
    assert _pyhudi(path) == _hudi_rs(path) == []
    written = [f for f in glob.glob(os.path.join(path, "*.parquet")) if f"_{instant}." in f]
    assert [pq.read_metadata(f).num_rows for f in written] == [0]  # an empty base file, as Hudi's create handle writes


def test_insert_overwrite_replaces_a_partition_whose_rows_are_all_marked(tmp_path):
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, P_SCHEMA, "id", partition_fields="p")
    t.insert(_p_rows([1, 2, 3], ["a", "b", "c"], ["x", "y", "z"], [False] * 3))
    t.insert_overwrite(_p_rows([4, 5, 6], ["d", "e", "f"], ["x", "x", "y"], [True, True, False]))
    # x: overwritten by soft deletes only (emptied); y: overwritten by 6; z: untouched
    assert _pyhudi(path) == _hudi_rs(path) == [(3, "c"), (6, "f")]
    for f in glob.glob(os.path.join(path, "*", "*.parquet")):
        assert not any(pq.read_table(f, columns=["_hoodie_is_deleted"]).column(0).to_pylist())


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_an_upsert_of_only_marked_new_keys_writes_no_file(tmp_path, table_type):
    """(Not an overwrite: soft deletes of keys the table does not hold change nothing.)"""
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, P_SCHEMA, "id", partition_fields="p", table_type=table_type)
    t.insert(_p_rows([1], ["a"], ["x"], [False]))
    before = sorted(glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True))
    t.upsert(_p_rows([2, 3], ["b", "c"], ["x", "y"], [True, True]))
    assert sorted(glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True)) == before
    assert _pyhudi(path) == _hudi_rs(path) == [(1, "a")]

"""A base file never holds a row marked deleted (``_hoodie_is_deleted`` true): pyhudi.write.soft_deletes.

Apache Hudi's and hudi-rs's readers scan a file slice without log files as plain Parquet, so a
marked row in a base file is a live row to them. Before the fix a copy-on-write upsert wrote its
marked rows into the merged base file (and a marked new key as an insert), and a bulk insert or
a first write of a table without a bucket index wrote them into new base files: pyhudi's own reads
dropped them, hudi-rs returned them.
"""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.write import handle as handle_module
from pyhudi.write.merge import merge_into_base

hudi = pytest.importorskip("hudi")

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("_hoodie_is_deleted", pa.bool_())])
TS_SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("ts", pa.int64()), ("_hoodie_is_deleted", pa.bool_())])


def _rows(ids, values, marks, schema=SCHEMA, ts=None):
    columns = {"id": ids, "v": values, "_hoodie_is_deleted": marks}
    if ts is not None:
        columns["ts"] = ts
    return pa.table(columns).select(schema.names).cast(schema)


def _base_files(path):
    return sorted(glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True))


def _latest_base_rows(path):
    """Every row of the newest base file of each file group (what a plain Parquet scan of a
    copy-on-write snapshot reads)."""
    newest = {}
    for f in _base_files(path):
        name = os.path.basename(f)
        file_id, instant = name.split("_")[0], name.rsplit("_", 1)[1].split(".")[0]
        if file_id not in newest or instant > newest[file_id][0]:
            newest[file_id] = (instant, f)
    rows = [r for _, f in newest.values() for r in pq.read_table(f).to_pylist()]
    return sorted(((r["id"], r["v"], r["_hoodie_is_deleted"]) for r in rows))


def _pyhudi(path):
    return sorted((r["id"], r["v"]) for r in pyhudi.open_table(path).read(columns=["id", "v"]).to_pylist())


def _hudi_rs(path):
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read()
    return sorted((r["id"], r["v"]) for r in pa.Table.from_batches(batches).select(["id", "v"]).to_pylist()) if batches else []


def _old_cow_table(path, monkeypatch, *writes):
    """A copy-on-write table written by ``writes`` as before the fix: marked rows in base files."""
    t = pyhudi.create_table(path, SCHEMA, "id", table_type="COPY_ON_WRITE", options={"hoodie.parquet.small.file.limit": "0"})
    with monkeypatch.context() as patched:
        patched.setattr(handle_module, "marked_rows", lambda rows: None)
        patched.setattr("pyhudi.write.plan.marked_rows", lambda rows: None)
        for rows in writes:
            t.upsert(rows)
    return t


def _stats(t):
    md = t.active_timeline().read_metadata(t.timeline[-1])
    return sorted((s.num_inserts, s.num_update_writes, s.num_deletes, s.num_writes)
                  for stats in md.partition_to_write_stats.values() for s in stats)


def test_copy_on_write_upsert_with_default_options_writes_no_marked_row(tmp_path):
    path = str(tmp_path / "cow")
    t = pyhudi.create_table(path, SCHEMA, "id", table_type="COPY_ON_WRITE")
    t.upsert(_rows([1, 2, 3, 5], ["a", "b", "c", "e"], [False, False, False, True]))
    assert _latest_base_rows(path) == [(1, "a", False), (2, "b", False), (3, "c", False)]  # 5: nothing to insert
    t.upsert(_rows([2, 4, 3], ["B", "D", "C"], [True, True, False]))
    assert _latest_base_rows(path) == [(1, "a", False), (3, "C", False)]
    assert _pyhudi(path) == [(1, "a"), (3, "C")]
    assert _hudi_rs(path) == [(1, "a"), (3, "C")]
    assert _stats(t) == [(0, 1, 1, 2)]  # one update, one delete (2), the marked new key 4 dropped


def test_copy_on_write_soft_delete_under_event_time_ordering(tmp_path):
    path = str(tmp_path / "cow")
    t = pyhudi.create_table(path, TS_SCHEMA, "id", table_type="COPY_ON_WRITE", ordering_field="ts")
    t.upsert(_rows([1, 2, 3], ["a", "b", "c"], [False] * 3, TS_SCHEMA, ts=[10, 10, 10]))
    t.upsert(_rows([1, 2], ["stale", "newer"], [True, True], TS_SCHEMA, ts=[5, 20]))
    assert _latest_base_rows(path) == [(1, "a", False), (3, "c", False)]  # the stale soft delete of 1 lost
    assert _pyhudi(path) == _hudi_rs(path) == [(1, "a"), (3, "c")]


def test_copy_on_write_insert_drops_marked_rows(tmp_path):
    path = str(tmp_path / "cow")
    t = pyhudi.create_table(path, SCHEMA, "id", table_type="COPY_ON_WRITE")
    t.insert(_rows([1, 2], ["a", "b"], [False, True]))
    t.insert(_rows([3, 4], ["c", "d"], [True, False]))  # into the small file: a merge
    assert _latest_base_rows(path) == [(1, "a", False), (4, "d", False)]
    assert _pyhudi(path) == _hudi_rs(path) == [(1, "a"), (4, "d")]


def test_a_key_repeated_in_one_write_is_decided_by_its_last_row(tmp_path):
    path = str(tmp_path / "cow")
    t = pyhudi.create_table(path, SCHEMA, "id", table_type="COPY_ON_WRITE")
    t.upsert(_rows([1, 1, 2, 2], ["a", "gone", "b", "back"], [False, True, True, False]))
    assert _latest_base_rows(path) == [(2, "back", False)]
    assert _hudi_rs(path) == [(2, "back")]


def test_merge_on_read_first_write_without_bucket_index_writes_no_marked_row(tmp_path):
    path = str(tmp_path / "mor")
    t = pyhudi.create_table(path, SCHEMA, "id")
    t.upsert(_rows([1, 2, 3], ["a", "b", "c"], [False, True, False]))
    assert _latest_base_rows(path) == [(1, "a", False), (3, "c", False)]
    t.upsert(_rows([3], ["C"], [True]))  # an existing key: a log block marks it, as Hudi writes it
    assert _pyhudi(path) == _hudi_rs(path) == [(1, "a")]
    t.compact()
    assert _latest_base_rows(path) == [(1, "a", False)]
    assert _pyhudi(path) == _hudi_rs(path) == [(1, "a")]


@pytest.mark.parametrize("families", [None, {"fa": "v,_hoodie_is_deleted"}])
def test_bulk_insert_into_new_bucket_groups_writes_no_marked_row(tmp_path, families):
    path = str(tmp_path / "b")
    if families:
        schema = SCHEMA.append(pa.field("w", pa.float64()))
        families = {**families, "fb": "w"}
        t = pyhudi.create_table(path, schema, "id", num_buckets=2, column_families=families)
        data = _rows([1, 2, 3, 4, 4], ["a", "b", "c", "d", "gone"], [False, True, False, False, True]).append_column(
            "w", pa.array([1.0, 2.0, 3.0, 4.0, 4.5]))
    else:
        t = pyhudi.create_table(path, SCHEMA, "id", num_buckets=2)
        data = _rows([1, 2, 3, 4, 4], ["a", "b", "c", "d", "gone"], [False, True, False, False, True])
    t.bulk_insert(data)
    stored = sorted(r["id"] for f in _base_files(path) for r in pq.read_table(f, columns=["id"]).to_pylist())
    assert stored == [1, 3]
    for f in _base_files(path):
        table = pq.read_table(f)
        if "_hoodie_is_deleted" in table.column_names:
            assert not any(table.column("_hoodie_is_deleted").to_pylist())
    assert _pyhudi(path) == [(1, "a"), (3, "c")]
    if not families:
        assert _hudi_rs(path) == [(1, "a"), (3, "c")]


def test_per_family_base_files_of_a_bulk_insert_hold_the_same_keys(tmp_path):
    path = str(tmp_path / "b")
    schema = SCHEMA.append(pa.field("w", pa.float64()))
    t = pyhudi.create_table(path, schema, "id", num_buckets=1, column_families={"fa": "v,_hoodie_is_deleted", "fb": "w"})
    instant = t.bulk_insert(_rows([1, 2, 3], ["a", "b", "c"], [False, True, False]).append_column(
        "w", pa.array([1.0, 2.0, 3.0])), options={"hoodie.pyhudi.insert.full.row": "false"})
    files = _base_files(path)
    assert [os.path.basename(f).split("_", 2)[2] for f in files] == [f"{instant}_fa.parquet", f"{instant}_fb.parquet"]
    assert [pq.read_table(f, columns=["id"]).column("id").to_pylist() for f in files] == [[1, 3], [1, 3]]
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a", "_hoodie_is_deleted": False, "w": 1.0},
        {"id": 3, "v": "c", "_hoodie_is_deleted": False, "w": 3.0},
    ]


def test_a_merge_drops_marked_rows_an_earlier_version_left_in_the_base_file(tmp_path, monkeypatch):
    path = str(tmp_path / "cow")
    t = _old_cow_table(path, monkeypatch, _rows([1, 2], ["a", "b"], [False, True]))
    assert _latest_base_rows(path) == [(1, "a", False), (2, "b", True)]
    assert _pyhudi(path) == [(1, "a")]
    t.upsert(_rows([1], ["A"], [False]))
    assert _latest_base_rows(path) == [(1, "A", False)]
    assert _pyhudi(path) == _hudi_rs(path) == [(1, "A")]


def test_merge_into_base_drops_a_marked_row_of_a_key_the_file_does_not_hold():
    old = pa.table({"_hoodie_commit_time": ["1"], "_hoodie_commit_seqno": ["1_0_1"], "_hoodie_record_key": ["1"],
                    "_hoodie_partition_path": [""], "_hoodie_file_name": ["f"], "id": [1], "v": ["a"],
                    "_hoodie_is_deleted": [False]})
    updates = pa.table({"_hoodie_record_key": ["1", "2", "3"], "id": [1, 2, 3], "v": ["A", "b", "c"],
                        "_hoodie_is_deleted": [True, True, False]})
    for insert_only in (False, True):
        merged = merge_into_base(old, updates, None, None, insert_only=insert_only)
        assert merged.new_data.column("id").to_pylist() == ([3] if not insert_only else [3])
        assert merged.num_inserts == 1
    merged = merge_into_base(old, updates, None, None)
    assert merged.kept.num_rows == 0 and (merged.num_updates, merged.num_deletes) == (0, 1)
    kept_by_concat = merge_into_base(old, updates, None, None, insert_only=True)
    assert kept_by_concat.kept.column("id").to_pylist() == [1] and kept_by_concat.num_deletes == 0


def test_spark_upsert_of_a_copy_on_write_table_writes_no_marked_row(spark, tmp_path):
    import pyhudi.spark

    path = str(tmp_path / "cow")
    options = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.table.name": "cow",
               "hoodie.datasource.write.table.type": "COPY_ON_WRITE"}
    df = spark.createDataFrame([(1, "a", False), (2, "b", False), (3, "c", True)], "id bigint, v string, _hoodie_is_deleted boolean")
    pyhudi.spark.write(df, path, operation="upsert", **options)
    df = spark.createDataFrame([(2, "B", True), (4, "d", False)], "id bigint, v string, _hoodie_is_deleted boolean")
    pyhudi.spark.write(df, path, operation="upsert", **options)
    assert _latest_base_rows(path) == [(1, "a", False), (4, "d", False)]
    assert _hudi_rs(path) == [(1, "a"), (4, "d")]


def test_clustering_writes_no_marked_row_an_earlier_version_left(tmp_path, monkeypatch):
    path = str(tmp_path / "cow")
    t = _old_cow_table(path, monkeypatch, _rows([1, 2], ["a", "b"], [False, True]), _rows([3, 4], ["c", "d"], [True, False]))
    assert _hudi_rs(path) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]  # what hudi-rs read before
    instant = t.cluster()
    [clustered] = [f for f in _base_files(path) if f"_{instant}." in f]
    assert pq.read_table(clustered).select(["id", "v", "_hoodie_is_deleted"]).to_pylist() == [
        {"id": 1, "v": "a", "_hoodie_is_deleted": False}, {"id": 4, "v": "d", "_hoodie_is_deleted": False}]
    assert _pyhudi(path) == _hudi_rs(path) == [(1, "a"), (4, "d")]


def test_a_marker_column_that_is_not_boolean_is_refused_at_create(tmp_path):
    path = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("_hoodie_is_deleted", pa.string())])
    with pytest.raises(pyhudi.SchemaError, match="column '_hoodie_is_deleted' marks soft deletes and must be boolean, "
                                                 "got string"):
        pyhudi.create_table(str(path), schema, "id", table_type="COPY_ON_WRITE")
    assert not path.exists()


def test_a_marker_column_that_is_not_boolean_is_refused_by_alter(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=1, column_families={"fa": "v"})
    properties = open(os.path.join(t.path, ".hoodie", "hoodie.properties")).read()
    with pytest.raises(pyhudi.SchemaError, match="must be boolean, got int64"):
        t.alter({"hoodie.colFamily.fb": "_hoodie_is_deleted"}, new_columns={"_hoodie_is_deleted": pa.int64()})
    assert open(os.path.join(t.path, ".hoodie", "hoodie.properties")).read() == properties
    assert pyhudi.open_table(t.path).schema.names == ["id", "v"]
    assert t.alter({"hoodie.colFamily.fb": "_hoodie_is_deleted"}, new_columns={"_hoodie_is_deleted": pa.bool_()})


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_soft_delete_without_an_ordering_value_wins_over_the_rows_of_its_key_before_it(tmp_path, table_type):
    """De-duplicating a batch folds its rows in arrival order (rule 3): such a delete wins over
    the earlier rows of its key whatever their ordering values; a later row is merged with it and
    wins (the delete has no ordering value), then meets the stored row by event time."""
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, TS_SCHEMA, "id", table_type=table_type, ordering_field="ts")
    t.upsert(_rows([1, 2, 3, 4], ["a", "b", "c", "d"], [False] * 4, TS_SCHEMA, ts=[5, 5, 5, 5]))
    t.upsert(_rows([1, 1, 2, 2, 3, 3, 4, 4, 4], ["x", "-", "y", "-", "-", "z", "p", "-", "q"],
                   [False, True, False, True, True, False, False, True, False], TS_SCHEMA,
                   ts=[10, None, 10, 7, None, 20, 50, None, 3]))
    # 1: deleted (x came before the delete); 2: y (the delete has a value, 7 < 10); 3: z after the
    # delete, 20 > 5; 4: q after the delete (p before it lost), then q's 3 loses to the stored 5
    assert _pyhudi(path) == _hudi_rs(path) == [(2, "y"), (3, "z"), (4, "d")]


def test_latest_per_key_folds_commit_time_soft_deletes_in_arrival_order():
    from pyhudi.record_merge import latest_per_key

    rows = pa.table({"k": ["a", "a", "a", "b", "b", "c"], "ts": pa.array([9, None, 1, None, None, 4]),
                     "_hoodie_is_deleted": [False, True, False, True, False, None]})
    assert latest_per_key(rows, ["k"], "ts").tolist() == [2, 4, 5]
    unmarked = rows.drop_columns(["_hoodie_is_deleted"])
    assert latest_per_key(unmarked, ["k"], "ts").tolist() == [0, 4, 5]

"""Soft deletes (``_hoodie_is_deleted``) in a family table delete the whole row (pyhudi.write.soft_deletes).

The marker belongs to one family; a row exists while any family holds a live record of it. Before
the fix a marked row written through several families (or through the marker's family alone)
stayed, with the marker's family's columns null.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.logformat.block import DeleteBlock
from pyhudi.logformat.data_block import ParquetDataBlock
from pyhudi.logformat.reader import read_log_blocks
from pyhudi.storage.fs import Storage

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.float64()), ("b", pa.string()), ("c", pa.int64()),
                    ("_hoodie_is_deleted", pa.bool_())])
FAMILIES = {"fa": "a,_hoodie_is_deleted", "fb": "b", "fc": "c"}


def _table(tmp_path, families=FAMILIES, options=None):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2, column_families=families,
                            options=options)
    t.upsert(pa.table({"id": [1, 2, 3, 4], "a": [1.0, 2.0, 3.0, 4.0], "b": ["w", "x", "y", "z"],
                       "c": [10, 20, 30, 40], "_hoodie_is_deleted": [False] * 4}))
    return t


def _rows(t, columns=None):
    return sorted(t.read(columns=columns).to_pylist(), key=lambda r: r["id"])


def _ids(t, columns=None):
    return [r["id"] for r in _rows(t, columns)]


def _logs_of(t, instant):
    return sorted(n for n in os.listdir(t.path) if n.startswith(".") and f"_{instant}" in n)


def test_a_full_row_upsert_marked_deleted_removes_the_row(tmp_path):
    t = _table(tmp_path)
    t.upsert(pa.table({"id": [2, 3], "a": [9.0, 9.5], "b": ["new", "new"], "c": [0, 0],
                       "_hoodie_is_deleted": [True, False]}))
    assert _rows(t) == [
        {"id": 1, "a": 1.0, "b": "w", "c": 10, "_hoodie_is_deleted": False},
        {"id": 3, "a": 9.5, "b": "new", "c": 0, "_hoodie_is_deleted": False},
        {"id": 4, "a": 4.0, "b": "z", "c": 40, "_hoodie_is_deleted": False},
    ]
    for columns in (["id", "b"], ["id", "c"], ["id", "a"]):  # pruned reads too
        assert [r["id"] for r in _rows(t, columns)] == [1, 3, 4]
    assert [r["b"] for r in _rows(t, ["id", "b"])] == ["w", "new", "z"]
    assert sorted(t.read(columns=["b"]).column("b").to_pylist()) == ["new", "w", "z"]


def test_a_partial_upsert_through_the_markers_family_deletes_every_family(tmp_path):
    t = _table(tmp_path)
    instant = t.upsert(pa.table({"id": [3], "a": [0.0], "_hoodie_is_deleted": [True]}))
    assert _ids(t) == [1, 2, 4]
    assert _ids(t, ["id", "b"]) == [1, 2, 4] and _ids(t, ["id", "c"]) == [1, 2, 4]
    # the families the write did not touch got a delete block of the marked key, in its file group
    storage = Storage(t.path)
    logs = _logs_of(t, instant)
    assert [n.split("_")[2].split(".")[0] for n in logs] == ["fa", "fb", "fc"]
    by_family = {n.split("_")[2].split(".")[0]: read_log_blocks(storage, n) for n in logs}
    assert isinstance(by_family["fa"][0], ParquetDataBlock)
    for family in ("fb", "fc"):
        [block] = by_family[family]
        assert isinstance(block, DeleteBlock)
        assert block.deletes().column("record_key").to_pylist() == ["3"]


def test_a_partial_upsert_through_another_family_carries_the_marker_into_its_file(tmp_path):
    t = _table(tmp_path)
    instant = t.upsert(pa.table({"id": [1, 4], "b": ["gone", "kept"], "_hoodie_is_deleted": [True, False]}))
    assert _rows(t) == [
        {"id": 2, "a": 2.0, "b": "x", "c": 20, "_hoodie_is_deleted": False},
        {"id": 3, "a": 3.0, "b": "y", "c": 30, "_hoodie_is_deleted": False},
        {"id": 4, "a": 4.0, "b": "kept", "c": 40, "_hoodie_is_deleted": False},
    ]
    storage = Storage(t.path)
    fb = [n for n in _logs_of(t, instant) if "_fb." in n]
    [block] = read_log_blocks(storage, fb[0])
    assert block.read().column_names[-3:] == ["id", "b", "_hoodie_is_deleted"]
    # fc untouched: a delete block, only in the file group holding key 1
    fc = [n for n in _logs_of(t, instant) if "_fc." in n]
    assert len(fc) == 1 and read_log_blocks(storage, fc[0])[0].deletes().column("record_key").to_pylist() == ["1"]


def test_a_write_without_a_true_marker_writes_no_marker_column_nor_deletes(tmp_path):
    t = _table(tmp_path)
    instant = t.upsert(pa.table({"id": [1], "b": ["v"], "_hoodie_is_deleted": [None]}))
    storage = Storage(t.path)
    fa, fb = _logs_of(t, instant)  # (the marker column is fa's: a partial block of fa)
    assert "_fa." in fa and "_fb." in fb
    [block] = read_log_blocks(storage, fb)
    assert block.read().column_names[-2:] == ["id", "b"]
    assert _ids(t) == [1, 2, 3, 4]


def test_a_deleted_key_written_again_through_one_family_is_a_new_row(tmp_path):
    t = _table(tmp_path)
    t.upsert(pa.table({"id": [2], "a": [5.0], "_hoodie_is_deleted": [True]}))
    t.upsert(pa.table({"id": [2], "c": [77]}))
    assert _rows(t)[1] == {"id": 2, "a": None, "b": None, "c": 77, "_hoodie_is_deleted": None}


def test_the_last_row_of_a_key_in_the_write_decides(tmp_path):
    t = _table(tmp_path)
    t.upsert(pa.table({"id": [1, 1, 2, 2], "a": [0.1, 0.2, 0.3, 0.4],
                       "_hoodie_is_deleted": [True, False, False, True]}))
    assert _rows(t) == [
        {"id": 1, "a": 0.2, "b": "w", "c": 10, "_hoodie_is_deleted": False},
        {"id": 3, "a": 3.0, "b": "y", "c": 30, "_hoodie_is_deleted": False},
        {"id": 4, "a": 4.0, "b": "z", "c": 40, "_hoodie_is_deleted": False},
    ]


@pytest.mark.parametrize("full", [False, True])
def test_compaction_keeps_the_rows_deleted(tmp_path, full):
    t = _table(tmp_path)
    t.upsert(pa.table({"id": [1, 3], "b": ["x1", "x3"], "_hoodie_is_deleted": [True, False]}))
    before = _rows(t)
    t.compact(full=full) if full else t.compact(families=["fb", "fc", "fa"])
    assert _rows(t) == before and [r["id"] for r in before] == [2, 3, 4]
    assert before[1]["b"] == "x3"


def test_stale_soft_delete_by_event_time_is_ignored_by_its_family_only(tmp_path):
    """Each family merges a marked row by its own rule, as it merges an update: ``fa`` orders by
    ``c`` here (event time) and ignores the stale marker; ``fb`` orders by commit time."""
    schema_families = {"fa": "a,c,_hoodie_is_deleted;c", "fb": "b"}
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=schema_families)
    t.upsert(pa.table({"id": [1, 2], "a": [1.0, 2.0], "b": ["p", "q"], "c": [100, 100],
                       "_hoodie_is_deleted": [False, False]}))
    t.upsert(pa.table({"id": [1, 2], "a": [0.0, 0.0], "b": ["r", "s"], "c": [50, 200],
                       "_hoodie_is_deleted": [True, True]}))
    assert _rows(t) == [{"id": 1, "a": 1.0, "b": None, "c": 100, "_hoodie_is_deleted": False}]


def test_a_one_family_table_is_unchanged(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1)
    t.upsert(pa.table({"id": [1, 2], "a": [1.0, 2.0], "b": ["p", "q"], "c": [1, 2], "_hoodie_is_deleted": [False, False]}))
    instant = t.upsert(pa.table({"id": [2], "a": [5.0], "_hoodie_is_deleted": [True]}))
    assert _ids(t) == [1]
    [log] = _logs_of(t, instant)
    [block] = read_log_blocks(Storage(t.path), log)
    assert isinstance(block, ParquetDataBlock)


def test_a_stale_soft_delete_loses_under_event_time_ordering(tmp_path):
    """Hudi: a delete with a real ordering value loses to a stored record with a greater one (only
    a delete without a value is a commit-time-ordering delete). A marked record carries its own
    ordering value, so a stale marker is ignored; before, every marker won."""
    schema = pa.schema([("id", pa.int64()), ("a", pa.float64()), ("c", pa.int64()), ("_hoodie_is_deleted", pa.bool_())])
    t = pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=1, ordering_field="c")
    t.upsert(pa.table({"id": [1, 2, 3], "a": [1.0, 2.0, 3.0], "c": [100, 100, 100], "_hoodie_is_deleted": [False] * 3}))
    t.upsert(pa.table({"id": [1, 2, 3], "a": [0.0, 0.0, 0.0], "c": [50, 200, None],
                       "_hoodie_is_deleted": [True, True, True]}))
    expected = [{"id": 1, "a": 1.0, "c": 100, "_hoodie_is_deleted": False}]
    assert t.read().to_pylist() == expected  # 2: newer marker; 3: no ordering value, a commit-time delete
    t.compact(full=True)
    assert t.read().to_pylist() == expected


def test_spark_reads_the_same_rows(spark, tmp_path):
    """Whichever branch reads a file group (native Parquet, the JVM merge, the Python source),
    the soft-deleted rows are gone there too."""
    import pyhudi.spark

    t = _table(tmp_path)
    t.upsert(pa.table({"id": [1, 4], "b": ["gone", "kept"], "_hoodie_is_deleted": [True, False]}))
    t.upsert(pa.table({"id": [2], "a": [0.5], "_hoodie_is_deleted": [True]}))
    for columns in (None, ["id", "b"], ["id", "c"]):
        got = sorted((r.asDict() for r in pyhudi.spark.read(spark, t.path, columns=columns).collect()),
                     key=lambda r: r["id"])
        assert got == _rows(t, columns) and [r["id"] for r in got] == [3, 4]


def test_only_the_file_groups_holding_a_marked_row_carry_the_marker(tmp_path):
    """A pipeline that sends ``_hoodie_is_deleted`` with every write, nearly always false: the
    files of file groups without a marked row are written as before (no marker column), so
    their reads still merge by position; the group holding the marked row carries it."""
    t = _table(tmp_path)  # two buckets: keys 1-4 over both
    instant = t.upsert(pa.table({"id": [1, 2, 3, 4], "b": ["p", "q", "r", "s"],
                                 "_hoodie_is_deleted": [False, False, True, False]}))
    storage = Storage(t.path)
    schemas = {}
    for name in _logs_of(t, instant):
        block = read_log_blocks(storage, name)[0]
        if isinstance(block, ParquetDataBlock):
            schemas[name] = block.read().column_names
    marked_group = next(n.split("_")[0] for n, cols in schemas.items() if "_fb." in n and "_hoodie_is_deleted" in cols)
    for name, cols in schemas.items():
        if "_fb." in name:
            assert ("_hoodie_is_deleted" in cols) == (name.split("_")[0] == marked_group), (name, cols)
    assert sum("_fb." in n for n in schemas) == 2  # (both groups written, one with the marker)
    assert _rows(t) == [
        {"id": 1, "a": 1.0, "b": "p", "c": 10, "_hoodie_is_deleted": False},
        {"id": 2, "a": 2.0, "b": "q", "c": 20, "_hoodie_is_deleted": False},
        {"id": 4, "a": 4.0, "b": "s", "c": 40, "_hoodie_is_deleted": False},
    ]

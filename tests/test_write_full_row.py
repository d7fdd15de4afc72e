"""``hoodie.pyhudi.insert.full.row``: a bulk insert into new file groups of a column-family table
writes one full-row base file per file group (what Spark reads with its own Parquet reader), and
the table reads, updates, compacts and time-travels exactly like the same table written with one
base file per family (the default)."""

from __future__ import annotations

import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi

FULL_ROW = {"hoodie.pyhudi.insert.full.row": "true"}
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.float64()), ("b", pa.string()), ("ts", pa.int64()),
                    ("c", pa.int32()), ("p", pa.string())])
FAMILIES = {"fa": "a,b;ts", "fc": "c"}  # (fa orders by event time, fc by commit time)
BASE = re.compile(r"^(?P<fid>[0-9a-f-]+-0)_\d+-\d+-\d+_(?P<instant>\d{17})(?:_(?P<family>[A-Za-z]\w*))?\.parquet$")


def rows(ids, ts=1) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "a": [i * 1.5 for i in ids], "b": [f"b{i}" for i in ids],
                     "ts": [ts] * len(ids), "c": pa.array([i * 10 for i in ids], pa.int32()),
                     "p": ["x" if i % 2 else "y" for i in ids]}, schema=SCHEMA)


def base_files(table) -> list[tuple[str, str | None]]:
    """(partition, family suffix) of every base file, sorted."""
    out = []
    for folder, _, names in os.walk(table.path):
        if ".hoodie" in folder:
            continue
        for name in names:
            m = BASE.match(name)
            if m:
                out.append((os.path.relpath(folder, table.path), m["family"]))
    return sorted(out, key=str)


def create(tmp_path, name: str):
    return pyhudi.create_table(str(tmp_path / name), SCHEMA, "id", name=name, num_buckets=2,
                               partition_fields=["p"], column_families=FAMILIES)


def sorted_rows(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


@pytest.fixture
def pair(tmp_path):
    """The same writes on a table with full-row inserts and on one with the default layout."""
    full, per_family = create(tmp_path, "full"), create(tmp_path, "families")
    data = pa.concat_tables([rows(range(10)), rows([3], ts=0)])  # id 3 twice: fa keeps ts=1, fc the later row
    full.bulk_insert(data, options=FULL_ROW)
    per_family.bulk_insert(data)
    return full, per_family


def test_bulk_insert_writes_one_full_row_base_file_per_file_group(pair):
    full, per_family = pair
    groups = sorted(g.partition_path for g in full.file_groups())
    assert groups == sorted(g.partition_path for g in per_family.file_groups()) and set(groups) == {"x", "y"}
    assert base_files(full) == [(p, None) for p in groups]
    assert base_files(per_family) == sorted([(p, f) for p in groups for f in ("fa", "fc")], key=str)
    path = next(os.path.join(d, n) for d, _, ns in os.walk(full.path) if ".hoodie" not in d for n in ns
                if n.endswith(".parquet"))
    assert pq.read_schema(path).names == [*pyhudi.schema.META_FIELDS, "id", "p", "a", "b", "ts", "c"]
    assert sorted_rows(full.read()) == sorted_rows(per_family.read())
    assert [(r["id"], r["a"], r["c"], r["ts"]) for r in sorted_rows(full.read()) if r["id"] == 3] == [(3, 4.5, 30, 1)]
    assert len(full.read()) == 10


def test_full_row_table_reads_updates_and_compacts_like_the_family_layout(pair):
    full, per_family = pair
    first, family_first = ([i.completion_time for i in t.timeline][0] for t in pair)
    for t in pair:
        t.upsert(pa.table({"id": pa.array([2, 5, 11], pa.int64()), "c": pa.array([-2, -5, -11], pa.int32()),
                           "p": ["y", "x", "x"]}))
    assert sorted_rows(full.read()) == sorted_rows(per_family.read())
    got = {r["id"]: (r["a"], r["c"]) for r in full.read().to_pylist()}
    assert got[2] == (3.0, -2) and got[5] == (7.5, -5) and got[11] == (None, -11) and got[4] == (6.0, 40)
    # pruned reads, filters, time travel and incremental reads
    for kwargs in ({"columns": ["id", "a"]}, {"columns": ["id", "c"], "filters": [("c", "<", 0)]},
                   {"filters": [("p", "=", "x")]}):
        assert sorted_rows(full.read(**kwargs)) == sorted_rows(per_family.read(**kwargs)), kwargs
    assert sorted_rows(full.read(as_of=first)) == sorted_rows(per_family.read(as_of=family_first))
    assert [r["id"] for r in sorted_rows(full.read(as_of=first))] == list(range(10))
    assert sorted_rows(full.read_incremental(first)) == sorted_rows(per_family.read_incremental(family_first))
    assert [r["id"] for r in sorted_rows(full.read_incremental(first))] == [2, 5, 11]
    # a family compaction writes that family's base file; the full-row file still serves the other
    full.compact("fc")
    assert ("x", "fc") in base_files(full) and ("x", None) in base_files(full)
    assert sorted_rows(full.read()) == sorted_rows(per_family.read())
    full.compact(full=True)
    assert sorted_rows(full.read()) == sorted_rows(per_family.read())


def test_partial_or_missing_families_keep_one_file_per_family(tmp_path):
    t = create(tmp_path, "partial")
    t.bulk_insert(rows(range(4)).drop_columns(["c"]), options=FULL_ROW)  # fc not given: fa alone
    assert {f for _, f in base_files(t)} == {"fa"}
    other = create(tmp_path, "partial2")
    other.bulk_insert(rows(range(4)).drop_columns(["b"]), options=FULL_ROW)  # fa partial: one file per family
    assert {f for _, f in base_files(other)} == {"fa", "fc"}
    assert [r["b"] for r in sorted_rows(other.read())] == [None] * 4


def test_upsert_and_tables_without_families_are_unchanged(tmp_path):
    t = create(tmp_path, "upsert")
    t.upsert(rows(range(4)), options=FULL_ROW)  # an upsert into empty buckets writes log files
    assert base_files(t) == []
    plain = pyhudi.create_table(str(tmp_path / "plain"), SCHEMA, "id", name="plain", num_buckets=2)
    plain.bulk_insert(rows(range(4)), options=FULL_ROW)
    assert {f for _, f in base_files(plain)} == {None} and len(plain.read()) == 4

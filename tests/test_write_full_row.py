"""``hoodie.pyhudi.insert.full.row`` (on by default): a bulk insert into new file groups of a
column-family table writes one full-row base file per file group (what Spark reads with its own
Parquet reader), and the table reads, updates, compacts and time-travels exactly like the same
table written with one base file per family (``hoodie.pyhudi.insert.full.row=false``)."""

from __future__ import annotations

import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi

PER_FAMILY = {"hoodie.pyhudi.insert.full.row": "false"}  # the layout before full-row inserts: one file per family
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
    """The same writes on a table with the default full-row inserts and on one with one base file
    per family."""
    full, per_family = create(tmp_path, "full"), create(tmp_path, "families")
    data = pa.concat_tables([rows(range(10)), rows([3], ts=0)])  # id 3 twice: fa keeps ts=1, fc the later row
    full.bulk_insert(data)
    per_family.bulk_insert(data, options=PER_FAMILY)
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
    t.bulk_insert(rows(range(4)).drop_columns(["c"]))  # fc not given: fa alone
    assert {f for _, f in base_files(t)} == {"fa"}
    other = create(tmp_path, "partial2")
    other.bulk_insert(rows(range(4)).drop_columns(["b"]))  # fa partial: one file per family
    assert {f for _, f in base_files(other)} == {"fa", "fc"}
    assert [r["b"] for r in sorted_rows(other.read())] == [None] * 4


def test_upsert_and_tables_without_families_are_unchanged(tmp_path):
    t = create(tmp_path, "upsert")
    t.upsert(rows(range(4)))  # an upsert into empty buckets writes log files
    assert base_files(t) == []
    plain = pyhudi.create_table(str(tmp_path / "plain"), SCHEMA, "id", name="plain", num_buckets=2)
    plain.bulk_insert(rows(range(4)))
    assert {f for _, f in base_files(plain)} == {None} and len(plain.read()) == 4


def _bucket(key: int) -> int:
    from pyhudi.index.bucket import bucket_ids

    return int(bucket_ids([pa.array([key], pa.int64())], 2)[0])


def _data_files(table) -> list[str]:
    """Every data file (base and log), as ``partition/name``, sorted."""
    return sorted(os.path.join(os.path.relpath(folder, table.path), n) for folder, _, names in os.walk(table.path)
                  if ".hoodie" not in folder for n in names if n != ".hoodie_partition_metadata")


def test_default_bulk_insert_then_one_family_updates_reads_and_full_compaction_are_exact(tmp_path):
    """Default options end to end: the exact full-row base files of a bulk insert, updates of one
    family at a time (logs per family on top of the full-row file), reads, and a full compaction."""
    t = create(tmp_path, "default")
    inserted = t.bulk_insert(rows(range(8)))
    groups = sorted({("x" if i % 2 else "y", _bucket(i)) for i in range(8)})
    assert _data_files(t) == sorted(
        f"{p}/{b:08d}-0000-0000-0000-000000000000-0_{task}-1-0_{inserted}.parquet"
        for task, (p, b) in enumerate(groups))
    expected = {i: {"id": i, "a": i * 1.5, "b": f"b{i}", "ts": 1, "c": i * 10, "p": "x" if i % 2 else "y"}
                for i in range(8)}
    assert sorted_rows(t.read()) == list(expected.values())

    t.upsert(pa.table({"id": pa.array([1, 2], pa.int64()), "c": pa.array([-1, -2], pa.int32()), "p": ["x", "y"]}))
    t.upsert(pa.table({"id": pa.array([3, 4, 9], pa.int64()), "a": [33.0, 44.0, 99.0], "b": ["B3", "B4", "B9"],
                       "ts": [2, 0, 2], "p": ["x", "y", "x"]}))  # id 4: an older event, fa keeps ts=1
    logs = [f for f in _data_files(t) if "/." in f]
    assert len(logs) == 4 and sum(f.split(".log")[0].endswith("_fc") for f in logs) == 2
    expected[1]["c"], expected[2]["c"] = -1, -2
    expected[3].update(a=33.0, b="B3", ts=2)
    expected[9] = {"id": 9, "a": 99.0, "b": "B9", "ts": 2, "c": None, "p": "x"}
    assert sorted_rows(t.read()) == list(expected.values())
    assert sorted_rows(t.read(columns=["id", "c"], filters=[("c", "<", 0)])) == [
        {"id": 1, "c": -1}, {"id": 2, "c": -2}]
    assert sorted_rows(t.read(as_of=t.timeline[0].completion_time)) == [
        {"id": i, "a": i * 1.5, "b": f"b{i}", "ts": 1, "c": i * 10, "p": "x" if i % 2 else "y"} for i in range(8)]

    compacted = t.compact(full=True)
    latest = sorted((g.partition_path, family, s.base_file.name.family, s.base_file.instant, len(s.log_files))
                    for g in t.file_groups() for family in FAMILIES for s in [g.latest_slice(family, True)])
    # every family of every file group: the full compaction's full-row base file, no log file
    assert latest == sorted((p, family, None, compacted, 0) for p, _ in groups for family in FAMILIES)
    assert sorted_rows(t.read()) == list(expected.values())

"""The write path (issue 3): upsert / insert / bulk_insert / delete on bucketed merge-on-read
tables, with and without column families; markers, rollback of failed and killed writers,
concurrent writer processes, and interop of one-family tables with hudi-rs (``hudi`` 0.5.0).

Files are checked byte-level by reading every log file back with ``pyhudi.logformat``;
one-family tables are also read with the independent reader ``hudi``. Write phases (C2) are in
test_write_phases.py, tables without buckets in test_write_simple_index.py.
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

import pyhudi
import pyhudi.write.handle as handle
from pyhudi.engine import LocalEngine
from pyhudi.errors import PathEscapeError, SchemaError
from pyhudi.index.bucket import bucket_ids
from pyhudi.logformat import DeleteBlock, HeaderKey, LogReader, ParquetDataBlock

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_helpers import fail_task_after, make_rows, value_of  # noqa: E402

PY = sys.executable
HELPER = str(Path(__file__).resolve().parent / "write_helpers.py")
META = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
        "_hoodie_file_name"]

# A wide-ish table: three families (event-time fa, commit-time fc, commit-time fd).
FAM_SCHEMA = pa.schema([
    pa.field("id", pa.int64(), False),
    ("a", pa.float64()), ("b", pa.string()), ("ts", pa.int64()),
    ("c", pa.int64()),
    ("d", pa.float64()), ("e", pa.string()),
])
FAMILIES = {"fa": "a,b;ts", "fc": "c", "fd": "d,e"}
FAM_COLS = {"fa": ["a", "b", "ts"], "fc": ["c"], "fd": ["d", "e"]}


# ------------------------------------------------------------------------------------ helpers
def fid(bucket: int) -> str:
    return f"{bucket:08d}-0000-0000-0000-000000000000-0"


def log_name(bucket: int, instant: str, family: str | None, task: int) -> str:
    suffix = f"_{family}" if family else ""
    return f".{fid(bucket)}_{instant}{suffix}.log.1_{task}-1-0"


def bucket_of(key: int, n: int) -> int:
    return int(bucket_ids([pa.array([key], pa.int64())], n)[0])


def data_files(root) -> set[str]:
    root = Path(root)
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".hoodie" not in p.relative_to(root).parts[:1]
            and p.name != ".hoodie_partition_metadata"}


def snapshot(root) -> dict[str, str]:
    root = Path(root)
    return {str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()}


def timeline_files(root) -> set[str]:
    return set(os.listdir(Path(root) / ".hoodie" / "timeline")) - {"history"}


def blocks(table, relpath):
    with LogReader(table.storage, relpath) as reader:
        out = reader.blocks()
    return out


def only_block(table, relpath):
    got = blocks(table, relpath)
    assert len(got) == 1, f"{relpath}: {got}"
    return got[0]


def hudi_rows(path, columns=None) -> list[dict]:
    import hudi

    t = hudi.HudiTableBuilder.from_base_uri(str(path)).build()
    batches = t.read()
    if not batches:
        return []
    table = pa.Table.from_batches(batches).sort_by("id")
    if columns is not None:
        table = table.select(columns)
    return table.to_pylist()


PER_FAMILY = {"hoodie.pyhudi.insert.full.row": "false"}
"""One log file per family also for upserts into new file groups (the default writes one full-row log)."""


def fam_table(tmp_path, dirname="wide", **kw):
    kw.setdefault("num_buckets", 3)
    return pyhudi.create_table(str(tmp_path / dirname), FAM_SCHEMA, "id", name="wide", column_families=FAMILIES, **kw)


def full_rows(ids, tag=0):
    ids = list(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "a": [i * 1.0 + tag for i in ids], "b": [f"b{i}-{tag}" for i in ids], "ts": [10] * len(ids),
        "c": [i * 10 + tag for i in ids], "d": [i * 0.5 + tag for i in ids], "e": [f"e{i}-{tag}" for i in ids],
    }, schema=FAM_SCHEMA)


def groups_of(ids, n):
    """bucket -> sorted string keys; plus the task index of each bucket (sorted order)."""
    by_bucket: dict[int, list[str]] = {}
    for i in ids:
        by_bucket.setdefault(bucket_of(i, n), []).append(str(i))
    for b in by_bucket:
        by_bucket[b] = sorted(set(by_bucket[b]))
    tasks = {b: n_ for n_, b in enumerate(sorted(by_bucket))}
    return by_bucket, tasks


# ============================================================ 1. create + upsert, family table
def test_upsert_family_table_files_buckets_meta_and_dedupe(tmp_path):
    t = fam_table(tmp_path)
    base = full_rows(range(12))
    # duplicates, arriving after the base rows:
    #  id 3: ts 20 > 10 -> wins in fa;      fc/fd: later arrival wins
    #  id 5: ts 5 < 10  -> loses in fa;     fc/fd: later arrival wins
    #  id 7: ts 10 = 10 -> tie, later wins; fc/fd: later arrival wins
    #  id 8: twice more, ts 30 then 25 -> the ts 30 row wins in fa, the last row wins in fc/fd
    dups = pa.table({
        "id": pa.array([3, 5, 7, 8, 8], pa.int64()),
        "a": [300.0, 500.0, 700.0, 800.0, 801.0], "b": ["B3", "B5", "B7", "B8", "B8x"], "ts": [20, 5, 10, 30, 25],
        "c": [333, 555, 777, 888, 889], "d": [3.3, 5.5, 7.7, 8.8, 8.9], "e": ["E3", "E5", "E7", "E8", "E8x"],
    }, schema=FAM_SCHEMA)
    data = pa.concat_tables([base, dups])
    instant = t.upsert(data, options=PER_FAMILY)  # (the default's full-row logs: tests/test_full_row_logs.py)

    expect = {i: {"a": i * 1.0, "b": f"b{i}-0", "ts": 10, "c": i * 10, "d": i * 0.5, "e": f"e{i}-0"} for i in range(12)}
    expect[3].update(a=300.0, b="B3", ts=20, c=333, d=3.3, e="E3")
    expect[5].update(c=555, d=5.5, e="E5")
    expect[7].update(a=700.0, b="B7", ts=10, c=777, d=7.7, e="E7")
    expect[8].update(a=800.0, b="B8", ts=30, c=889, d=8.9, e="E8x")

    by_bucket, tasks = groups_of(range(12), 3)
    assert sorted(by_bucket) == [0, 1, 2]
    expected_files = {log_name(b, instant, f, tasks[b]) for b in by_bucket for f in FAMILIES}
    assert data_files(t.path) == expected_files
    assert len(instant) == 17 and instant.isdigit()

    for b, keys in by_bucket.items():
        for fam, cols in FAM_COLS.items():
            name = log_name(b, instant, fam, tasks[b])
            block = only_block(t, name)
            assert isinstance(block, ParquetDataBlock)
            assert block.header[HeaderKey.INSTANT_TIME] == instant
            assert HeaderKey.IS_PARTIAL not in block.header
            schema_json = json.loads(block.header[HeaderKey.SCHEMA])
            assert [f["name"] for f in schema_json["fields"]] == META + ["id", *cols]
            rows = block.read()
            assert rows.column_names == META + ["id", *cols]
            # bucket assignment = pyhudi.index.bucket.bucket_ids, sorted by _hoodie_record_key (string order)
            assert rows.column("_hoodie_record_key").to_pylist() == keys
            assert list(bucket_ids([rows.column("id")], 3)) == [b] * len(keys)
            assert rows.column("_hoodie_commit_time").to_pylist() == [instant] * len(keys)
            assert rows.column("_hoodie_commit_seqno").to_pylist() == [
                f"{instant}_{tasks[b]}_{i}" for i in range(len(keys))]
            assert rows.column("_hoodie_partition_path").to_pylist() == [""] * len(keys)
            assert rows.column("_hoodie_file_name").to_pylist() == [fid(b)] * len(keys)
            assert rows.column("id").to_pylist() == [int(k) for k in keys]
            for col in cols:
                assert rows.column(col).to_pylist() == [expect[int(k)][col] for k in keys], (fam, col)

    result = t.last_write
    assert result.instant == instant
    assert result.operation == "UPSERT"
    assert result.rows_per_family == {"fa": 12, "fc": 12, "fd": 12}
    assert sorted(result.files) == sorted(expected_files)
    assert result.bytes_written == sum(os.path.getsize(Path(t.path) / f) for f in expected_files)
    assert result.rolled_back == []


def test_upsert_partitioned_family_table(tmp_path):
    schema = FAM_SCHEMA.append(pa.field("p", pa.string()))
    t = pyhudi.create_table(str(tmp_path / "pt"), schema, "id", name="pt", num_buckets=2, partition_fields=["p"],
                            column_families=FAMILIES, options={"hoodie.datasource.write.hive_style_partitioning": "true"})
    ids = list(range(8))
    parts = ["x" if i % 2 else "y" for i in ids]
    data = full_rows(ids).append_column("p", pa.array(parts))
    instant = t.upsert(data, options=PER_FAMILY)

    groups: dict[tuple[str, int], list[str]] = {}
    for i, p in zip(ids, parts):
        groups.setdefault((f"p={p}", bucket_of(i, 2)), []).append(str(i))
    tasks = {g: n for n, g in enumerate(sorted(groups))}
    expected = {f"{p}/{log_name(b, instant, f, tasks[(p, b)])}" for (p, b) in groups for f in FAMILIES}
    assert data_files(t.path) == expected
    for p in ("p=x", "p=y"):
        assert (Path(t.path) / p / ".hoodie_partition_metadata").read_text() == (
            f"#partition metadata\ncommitTime={instant}\npartitionDepth=1\n")
    for (p, b), keys in groups.items():
        for fam, cols in FAM_COLS.items():
            rows = only_block(t, f"{p}/{log_name(b, instant, fam, tasks[(p, b)])}").read()
            assert rows.column_names == META + ["id", "p", *cols]
            assert rows.column("_hoodie_record_key").to_pylist() == sorted(keys)
            assert rows.column("_hoodie_partition_path").to_pylist() == [p] * len(keys)
            assert rows.column("p").to_pylist() == [p[2:]] * len(keys)
            assert rows.column("_hoodie_commit_seqno").to_pylist() == [
                f"{instant}_{tasks[(p, b)]}_{i}" for i in range(len(keys))]


def test_second_upsert_writes_new_log_files_and_file_groups_attach(tmp_path):
    t = fam_table(tmp_path)
    i1 = t.upsert(full_rows(range(6)))
    i2 = t.upsert(full_rows(range(6), tag=1))
    assert i2 > i1
    groups = {g.file_id: g for g in t.file_groups()}
    by_bucket, tasks = groups_of(range(6), 3)
    assert set(groups) == {fid(b) for b in by_bucket}
    done = {i.requested_time: i.completion_time for i in t.timeline}
    for b in by_bucket:
        g = groups[fid(b)]
        assert g.partition_path == "" and g.base_files == []
        got = sorted((lf.name.family or "", lf.instant, lf.completion_time, lf.name.name) for lf in g.log_files)
        # the new file group's first upsert: one full-row log (no suffix); then one log per family
        assert got == sorted([("", i1, done[i1], log_name(b, i1, "", tasks[b])),
                              *((f, i2, done[i2], log_name(b, i2, f, tasks[b])) for f in FAMILIES)])
        sl = g.latest_slice("fa", True)
        assert [lf.instant for lf in sl.log_files] == [i1, i2]


# ============================================================ 2. partial writes
def test_partial_upsert_writes_only_present_families(tmp_path):
    t = fam_table(tmp_path)
    t.upsert(full_rows(range(6)))
    before = data_files(t.path)

    # only 'a' of fa: fa partial, fc and fd untouched
    i2 = t.upsert(pa.table({"id": pa.array([4, 1], pa.int64()), "a": [40.5, 10.5]}))
    by_bucket, tasks = groups_of([1, 4], 3)
    new = data_files(t.path) - before
    assert new == {log_name(b, i2, "fa", tasks[b]) for b in by_bucket}
    for b, keys in by_bucket.items():
        block = only_block(t, log_name(b, i2, "fa", tasks[b]))
        assert block.header[HeaderKey.IS_PARTIAL] == "true"
        assert [f["name"] for f in json.loads(block.header[HeaderKey.SCHEMA])["fields"]] == META + ["id", "a"]
        rows = block.read()
        assert rows.column_names == META + ["id", "a"]
        assert rows.column("_hoodie_record_key").to_pylist() == keys
        assert rows.column("a").to_pylist() == [{"1": 10.5, "4": 40.5}[k] for k in keys]
    assert t.last_write.rows_per_family == {"fa": 2}

    # c (all of fc) and d (part of fd): fc complete (no IS_PARTIAL), fd partial; fa not written
    before = data_files(t.path)
    i3 = t.upsert(pa.table({"id": pa.array([2], pa.int64()), "c": pa.array([22], pa.int64()), "d": [2.25]}))
    b = bucket_of(2, 3)
    assert data_files(t.path) - before == {log_name(b, i3, "fc", 0), log_name(b, i3, "fd", 0)}
    fc = only_block(t, log_name(b, i3, "fc", 0))
    assert HeaderKey.IS_PARTIAL not in fc.header
    assert fc.read().select(["id", "c"]).to_pylist() == [{"id": 2, "c": 22}]
    fd = only_block(t, log_name(b, i3, "fd", 0))
    assert fd.header[HeaderKey.IS_PARTIAL] == "true"
    assert fd.read().column_names == META + ["id", "d"]
    assert fd.read().select(["id", "d"]).to_pylist() == [{"id": 2, "d": 2.25}]

    # the ordering column alone is a partial fa block
    i4 = t.upsert(pa.table({"id": pa.array([2], pa.int64()), "ts": pa.array([99], pa.int64())}))
    fa = only_block(t, log_name(b, i4, "fa", 0))
    assert fa.header[HeaderKey.IS_PARTIAL] == "true"
    assert fa.read().select(["id", "ts"]).to_pylist() == [{"id": 2, "ts": 99}]

    # commit metadata schema stays the full table schema after a partial write
    md = t.active_timeline().read_metadata(t.timeline[-1])
    assert [f["name"] for f in json.loads(md.extra_metadata["schema"])["fields"]] == FAM_SCHEMA.names


def test_partial_event_time_dedupe_without_ordering_column_uses_arrival(tmp_path):
    t = fam_table(tmp_path)
    i = t.upsert(pa.table({"id": pa.array([1, 1, 1], pa.int64()), "a": [1.0, 2.0, 3.0]}))
    rows = only_block(t, log_name(bucket_of(1, 3), i, "fa", 0)).read()
    assert rows.select(["id", "a"]).to_pylist() == [{"id": 1, "a": 3.0}]


# ============================================================ 3. deletes
def test_delete_writes_delete_block_to_every_family(tmp_path):
    t = fam_table(tmp_path)
    t.upsert(full_rows(range(12)))
    before = data_files(t.path)
    keys = [11, 1, 4, 1, 9]
    instant = t.delete(pa.table({"id": pa.array(keys, pa.int64())}))
    by_bucket, tasks = groups_of(keys, 3)
    expected = {log_name(b, instant, f, tasks[b]) for b in by_bucket for f in FAMILIES}
    assert data_files(t.path) - before == expected
    for b, ks in by_bucket.items():
        for fam in FAMILIES:
            block = only_block(t, log_name(b, instant, fam, tasks[b]))
            assert isinstance(block, DeleteBlock)
            assert block.header == {HeaderKey.INSTANT_TIME: instant}
            deletes = block.deletes()
            assert deletes.column("record_key").to_pylist() == ks
            assert deletes.column("partition_path").to_pylist() == [""] * len(ks)
            assert deletes.column("is_default_ordering").to_pylist() == [True] * len(ks)
    assert t.last_write.operation == "DELETE"
    md = t.active_timeline().read_metadata(t.timeline[-1])
    assert md.operation_type == "DELETE"
    stats = md.partition_to_write_stats[""]
    assert sorted((s.path, s.num_deletes, s.num_writes) for s in stats) == sorted(
        (log_name(b, instant, f, tasks[b]), len(ks), 0) for b, ks in by_bucket.items() for f in FAMILIES)


def test_delete_accepts_extra_columns_and_needs_partition_column(tmp_path):
    schema = FAM_SCHEMA.append(pa.field("p", pa.string()))
    t = pyhudi.create_table(str(tmp_path / "pd"), schema, "id", name="pd", num_buckets=2, partition_fields=["p"],
                            column_families=FAMILIES)
    t.upsert(full_rows([1, 2]).append_column("p", pa.array(["x", "y"])))
    snap = snapshot(t.path)
    with pytest.raises(SchemaError) as err:
        t.delete(pa.table({"id": pa.array([1], pa.int64())}))
    assert str(err.value) == "input is missing the column 'p' (record key and partition columns are required)"
    assert snapshot(t.path) == snap
    instant = t.delete(pa.table({"id": pa.array([2], pa.int64()), "a": [1.0], "p": ["y"]}))
    b = bucket_of(2, 2)
    for fam in FAMILIES:
        d = only_block(t, f"y/{log_name(b, instant, fam, 0)}").deletes()
        assert d.select(["record_key", "partition_path"]).to_pylist() == [{"record_key": "2", "partition_path": "y"}]


# ============================================================ 4. commit metadata & timeline
EXPECTED_AVRO = {
    "type": "record", "name": "wide_record", "namespace": "hoodie.wide",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "a", "type": ["null", "double"], "default": None},
        {"name": "b", "type": ["null", "string"], "default": None},
        {"name": "ts", "type": ["null", "long"], "default": None},
        {"name": "c", "type": ["null", "long"], "default": None},
        {"name": "d", "type": ["null", "double"], "default": None},
        {"name": "e", "type": ["null", "string"], "default": None},
    ],
}


def test_commit_metadata_and_timeline_states(tmp_path):
    t = fam_table(tmp_path)
    instant = t.upsert(full_rows(range(5)))
    [done] = t.timeline
    assert (done.requested_time, str(done.action), str(done.state)) == (instant, "deltacommit", "COMPLETED")
    assert done.completion_time > instant
    assert timeline_files(t.path) == {
        f"{instant}.deltacommit.requested", f"{instant}.deltacommit.inflight",
        f"{instant}_{done.completion_time}.deltacommit"}
    assert not (Path(t.path) / ".hoodie" / ".temp" / instant).exists()
    assert not (Path(t.path) / ".hoodie" / ".heartbeat" / instant).exists()
    assert t.last_write.completion_time == done.completion_time

    md = t.active_timeline().read_metadata(done)
    assert md.operation_type == "UPSERT"
    assert md.compacted is False
    assert json.loads(md.extra_metadata["schema"]) == EXPECTED_AVRO
    assert list(md.partition_to_write_stats) == [""]
    by_bucket, tasks = groups_of(range(5), 3)
    stats = md.partition_to_write_stats[""]
    assert len(stats) == len(by_bucket)  # new file groups: one full-row log each
    seen = set()
    for s in stats:
        b = int(s.file_id[:8])
        assert s.file_id == fid(b)
        assert s.path == log_name(b, instant, "", tasks[b])
        assert s.log_files == [s.path]
        assert s.partition_path == ""
        assert s.num_writes == len(by_bucket[b])
        assert s.num_deletes == 0
        assert s.num_inserts == len(by_bucket[b])  # new file group
        assert s.prev_commit == "null"
        assert s.base_file == ""
        size = os.path.getsize(Path(t.path) / s.path)
        assert s.total_write_bytes == size and s.file_size_in_bytes == size
        seen.add(s.path)
    assert seen == data_files(t.path)

    # an update to existing file groups: update counts, same schema
    i2 = t.upsert(full_rows([0], tag=5))
    md2 = t.active_timeline().read_metadata(t.timeline[-1])
    b = bucket_of(0, 3)
    assert sorted((s.path, s.num_writes, s.num_update_writes, s.num_inserts) for s in md2.partition_to_write_stats[""]) == \
        sorted((log_name(b, i2, f, 0), 1, 1, 0) for f in FAMILIES)
    assert json.loads(md2.extra_metadata["schema"]) == EXPECTED_AVRO
    assert [str(i.state) for i in t.timeline] == ["COMPLETED", "COMPLETED"]


def test_insert_and_bulk_insert_on_family_table(tmp_path):
    import pyarrow.parquet as pq

    t = fam_table(tmp_path, num_buckets=2)
    i1 = t.bulk_insert(full_rows(range(4)))
    by_bucket, tasks = groups_of(range(4), 2)
    # by default one full-row base file per new file group (every family's columns, no family suffix)
    expected = {f"{fid(b)}_{tasks[b]}-1-0_{i1}.parquet" for b in by_bucket}
    assert data_files(t.path) == expected
    for b, keys in by_bucket.items():
        name = f"{fid(b)}_{tasks[b]}-1-0_{i1}.parquet"
        rows = pq.read_table(Path(t.path) / name)
        assert rows.column_names == META + ["id", *(c for cols in FAM_COLS.values() for c in cols)]
        assert rows.column("_hoodie_record_key").to_pylist() == keys
        assert rows.column("_hoodie_file_name").to_pylist() == [name] * len(keys)
        assert rows.select(["id", "a", "b", "ts", "c", "d", "e"]).to_pylist() == \
            full_rows([int(k) for k in keys]).select(["id", "a", "b", "ts", "c", "d", "e"]).to_pylist()
    assert t.last_write.operation == "BULK_INSERT"
    # with hoodie.pyhudi.insert.full.row=false: one base file per family, each with its own columns
    per_family = fam_table(tmp_path, "per_family", num_buckets=2)
    i0 = per_family.bulk_insert(full_rows(range(4)), options={"hoodie.pyhudi.insert.full.row": "false"})
    assert data_files(per_family.path) == {
        f"{fid(b)}_{tasks[b]}-1-0_{i0}_{f}.parquet" for b in by_bucket for f in FAMILIES}
    for b, keys in by_bucket.items():
        for fam, cols in FAM_COLS.items():
            name = f"{fid(b)}_{tasks[b]}-1-0_{i0}_{fam}.parquet"
            rows = pq.read_table(Path(per_family.path) / name)
            assert rows.column_names == META + ["id", *cols]
            assert rows.column("_hoodie_record_key").to_pylist() == keys
            assert rows.column("_hoodie_file_name").to_pylist() == [name] * len(keys)
    # bulk_insert into groups that already have data appends log files
    i2 = t.bulk_insert(full_rows([0], tag=1))
    assert log_name(bucket_of(0, 2), i2, "fa", 0) in data_files(t.path)
    i3 = t.insert(full_rows([1], tag=2))
    assert {log_name(bucket_of(1, 2), i3, f, 0) for f in FAMILIES} <= data_files(t.path)
    assert t.active_timeline().read_metadata(t.timeline[-1]).operation_type == "INSERT"
    assert t.read().sort_by("id").to_pylist() == pa.concat_tables(
        [full_rows([0], tag=1), full_rows([1], tag=2), full_rows([2, 3])]).to_pylist()


def test_on_commit_callback(tmp_path):
    from pyhudi.write.client import WriteClient

    t = fam_table(tmp_path)
    seen = []
    result = WriteClient(t, on_commit=seen.append).write(full_rows([1]), "upsert")
    assert seen == [result]
    assert result.rows_per_family == {"": 1}  # one full-row log (a new file group)


# ============================================================ 5. bad inputs & input kinds
PART_SCHEMA = FAM_SCHEMA.append(pa.field("p", pa.string()))

BAD_INPUTS = [
    ("unknown column", lambda: pa.table({"id": [1], "zz": [1], "p": ["x"]}),
     SchemaError, "input column 'zz' is not in the table schema (id, a, b, ts, c, d, e, p)"),
    ("string into double", lambda: pa.table({"id": [1], "a": ["abc"], "p": ["x"]}),
     SchemaError, "column 'a' has type string, which cannot be safely cast to double "
                  "(text is never parsed into other types)"),
    ("lossy float into int", lambda: pa.table({"id": [1], "c": [1.5], "p": ["x"]}),
     SchemaError, "column 'c' has type double, which cannot be safely cast to int64: "
                  "Float value 1.500000 was truncated converting to int64"),
    ("null key", lambda: pa.table({"id": pa.array([1, None], pa.int64()), "a": [1.0, 2.0], "p": ["x", "x"]}),
     SchemaError, "record key column 'id' has 1 null value(s) (first at row 1)"),
    ("missing key", lambda: pa.table({"a": [1.0], "p": ["x"]}),
     SchemaError, "input is missing the column 'id' (record key and partition columns are required)"),
    ("missing partition column", lambda: pa.table({"id": [1], "a": [1.0]}),
     SchemaError, "input is missing the column 'p' (record key and partition columns are required)"),
    ("only key", lambda: pa.table({"id": [1], "p": ["x"]}),
     SchemaError, "input has only record key and partition columns: nothing to write (use delete to delete)"),
    ("meta column", lambda: pa.table({"id": [1], "_hoodie_record_key": ["1"], "p": ["x"]}),
     SchemaError, "input column '_hoodie_record_key' is a Hudi meta column; pyhudi fills it in"),
    ("unsupported object", lambda: object(),
     SchemaError, "unsupported data type object: expected a pyarrow Table, RecordBatch(Reader), "
                  "iterable of RecordBatches, pandas DataFrame, list of row dicts or dict of column lists"),
    ("empty batch list", lambda: [],
     SchemaError, "data is empty: an iterable with no record batches"),
    ("path escape", lambda: pa.table({"id": [1], "a": [1.0], "p": [".."]}),
     PathEscapeError, "partition path '..' built from columns p cannot be used: partition values may not "
                      "contain '/', '\\\\' or NUL, nor be '.' or '..'"),
]


@pytest.mark.parametrize("what,make,exc,message", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_refused_and_table_unchanged(tmp_path, what, make, exc, message):
    t = pyhudi.create_table(str(tmp_path / "bad"), PART_SCHEMA, "id", name="bad", num_buckets=2,
                            partition_fields=["p"], column_families=FAMILIES)
    t.upsert(full_rows([1, 2]).append_column("p", pa.array(["x", "y"])))
    snap, timeline = snapshot(t.path), t.timeline
    with pytest.raises(exc) as err:
        t.upsert(make())
    assert str(err.value) == message
    assert snapshot(t.path) == snap
    assert t.timeline == timeline


def test_string_column_is_not_silently_parsed_into_double_column(tmp_path):
    """A string column is not a safe cast to double even when the strings look numeric."""
    t = fam_table(tmp_path)
    snap = snapshot(t.path)
    with pytest.raises(SchemaError, match="column 'a' has type string, which cannot be safely cast to double"):
        t.upsert(pa.table({"id": [1], "a": ["1.5"]}))
    assert snapshot(t.path) == snap


def _family_contents(t, instant):
    """{relative name with the instant blanked: [rows without instant-bearing meta values]}"""
    out = {}
    for name in data_files(t.path):
        block = only_block(t, name)
        rows = block.read()
        seq = [s[len(instant):] for s in rows.column("_hoodie_commit_seqno").to_pylist()]
        assert set(rows.column("_hoodie_commit_time").to_pylist()) <= {instant}
        rows = rows.drop_columns(["_hoodie_commit_time", "_hoodie_commit_seqno"]).append_column("seq", pa.array(seq, pa.string()))
        header = {k: v for k, v in block.header.items() if k != HeaderKey.INSTANT_TIME}
        out[name.replace(instant, "I")] = (header, rows.to_pylist())
    return out


@pytest.mark.parametrize("kind", ["pandas", "reader", "batch list", "batch iterator", "record batch"])
def test_input_kinds_write_the_same_as_a_table(tmp_path, kind):
    data = full_rows(range(9)).slice(0)
    ref = fam_table(tmp_path, "ref")
    i_ref = ref.upsert(data)
    t = fam_table(tmp_path, "other")
    if kind == "pandas":
        given = data.to_pandas()
        assert isinstance(given, pd.DataFrame)
    elif kind == "reader":
        given = pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=4))
    elif kind == "batch list":
        given = data.to_batches(max_chunksize=4)
        assert len(given) == 3
    elif kind == "batch iterator":
        given = iter(data.to_batches(max_chunksize=4))
    else:
        given = data.to_batches()[0]
    i = t.upsert(given)
    assert _family_contents(t, i) == _family_contents(ref, i_ref)


NESTED_SCHEMA = pa.schema([
    pa.field("id", pa.int64(), False), ("m", pa.map_(pa.string(), pa.int64())), ("l", pa.list_(pa.int64())),
    ("s", pa.struct([("x", pa.float64()), ("y", pa.string())])), ("dec", pa.decimal128(10, 2)),
    ("day", pa.date32()), ("ok", pa.bool_()), ("x", pa.int64()),
])


def test_pandas_input_of_nested_and_logical_columns_takes_the_table_types(tmp_path):
    """A DataFrame from ``to_pandas()`` holds maps as lists of pairs (values with a null become
    floats), lists as arrays, decimals and dates as objects: it used to be converted by type
    inference, which failed on the map (``ArrowTypeError: Expected bytes, got a 'float'``) and
    turned an all-null map column into ``list<null>``. The table's types are used instead."""
    data = pa.table({"id": [1, 2], "m": [[("a", 1), ("b", None)], None], "l": [[None, 2], []],
                     "s": [{"x": None, "y": "u"}, None], "dec": [decimal.Decimal("-1.50"), None],
                     "day": [dt.date(1, 1, 1), None], "ok": [None, True], "x": [None, 3]}, schema=NESTED_SCHEMA)
    t = pyhudi.create_table(str(tmp_path / "t"), NESTED_SCHEMA, "id", num_buckets=1)
    t.upsert(data.to_pandas())
    assert t.read().to_pylist() == data.to_pylist()
    t.upsert(pa.table({"id": [2], "m": pa.array([None], NESTED_SCHEMA.field("m").type)}).to_pandas())
    assert t.read(columns=["id", "m"]).to_pylist() == [{"id": 1, "m": [("a", 1), ("b", None)]}, {"id": 2, "m": None}]
    snap = snapshot(t.path)
    with pytest.raises(SchemaError) as err:
        t.upsert(pd.DataFrame({"id": [1], "x": [1.5]}))
    assert str(err.value) == ("pandas DataFrame cannot be converted to the table schema: ('Float value 1.500000 was "
                              "truncated converting to int64', 'Conversion failed for column x with type float64')")
    assert snapshot(t.path) == snap


# ============================================================ 6. failure -> rollback
def test_failed_write_is_rolled_back_and_next_write_succeeds(tmp_path, monkeypatch):
    t = fam_table(tmp_path)
    i1 = t.upsert(full_rows(range(6)))
    before = data_files(t.path)
    original = handle.write_log_file
    written = []
    lock = threading.Lock()

    def failing(storage, relpath, blocks_, **kwargs):
        size = original(storage, relpath, blocks_, **kwargs)
        with lock:
            written.append(relpath)
            first = len(written) == 1
        if first:
            raise RuntimeError("disk on fire")
        return size

    monkeypatch.setattr(handle, "write_log_file", failing)
    with pytest.raises(RuntimeError, match="^disk on fire$"):
        t.upsert(full_rows(range(6), tag=1))
    monkeypatch.setattr(handle, "write_log_file", original)

    failed = written[0].split("_")[1]
    assert failed > i1 and all(f"_{failed}" in w for w in written)
    assert data_files(t.path) == before  # every file of the failed instant is gone
    assert not (Path(t.path) / ".hoodie" / ".temp" / failed).exists()
    assert not (Path(t.path) / ".hoodie" / ".heartbeat" / failed).exists()
    assert not any(name.startswith(failed) for name in timeline_files(t.path))
    instants = t.timeline
    assert [(str(i.action), str(i.state)) for i in instants] == [("deltacommit", "COMPLETED"), ("rollback", "COMPLETED")]
    rb = instants[1]
    assert rb.requested_time > failed
    md = t.active_timeline().read_metadata(rb)
    assert md.commits_rollback == [failed]
    assert [(i.commit_time, i.action) for i in md.instants_rollback] == [(failed, "deltacommit")]
    assert md.total_files_deleted == len(written)
    assert sorted(f for p in md.partition_metadata.values() for f in p.success_delete_files) == sorted(written)
    assert {f"{rb.requested_time}.rollback.requested", f"{rb.requested_time}.rollback.inflight",
            f"{rb.requested_time}_{rb.completion_time}.rollback"} <= timeline_files(t.path)

    i3 = t.upsert(full_rows(range(6), tag=2))
    assert t.last_write.rolled_back == []
    assert [str(i.state) for i in t.timeline] == ["COMPLETED"] * 3
    assert {lf.instant for g in t.file_groups() for lf in g.log_files} == {i1, i3}


def test_failed_task_run_rolls_back_files_of_other_tasks(tmp_path, monkeypatch):
    """FileGroupWriteTask.run writes its families, then the last task raises."""
    t = fam_table(tmp_path, num_buckets=3)
    calls = fail_task_after(monkeypatch, 3, OSError("task lost"))
    with pytest.raises(OSError, match="task lost"):
        t.upsert(full_rows(range(12)), engine=LocalEngine(parallelism=1))
    assert len(calls) == 3
    assert data_files(t.path) == set()
    assert [str(i.action) for i in t.timeline] == ["rollback"]
    md = t.active_timeline().read_metadata(t.timeline[0])
    assert md.total_files_deleted == 3  # one full-row log per new file group


# ============================================================ 7. killed writer
LAZY = {"hoodie.cleaner.policy.failed.writes": "LAZY"}
PLAIN_SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.float64()), ("s", pa.string())])


def _start_slow_writer(path, ids, tag, ready):
    args = {"path": str(path), "ids": list(ids), "columns": ["id", "v", "s"], "tag": tag, "ready_file": str(ready)}
    proc = subprocess.Popen([PY, HELPER, "slow_upsert", json.dumps(args)], stderr=subprocess.PIPE)
    deadline = time.time() + 30
    while not ready.exists():
        if proc.poll() is not None:
            raise AssertionError(f"writer exited early: {proc.stderr.read().decode()}")
        assert time.time() < deadline, "slow writer never wrote its first file"
        time.sleep(0.01)
    return proc, ready.read_text()


def _kill(proc):
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL


def _plain_expected(*commits):
    """Apply (ids, tag) upserts in order -> sorted rows as hudi-rs returns them."""
    rows = {}
    for ids, tag in commits:
        for i in ids:
            rows[i] = {"id": i, "v": value_of(pa.float64(), "v", i, tag), "s": value_of(pa.string(), "s", i, tag)}
    return [rows[k] for k in sorted(rows)]


def test_killed_writer_is_rolled_back_by_next_writer_eager(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "k"), PLAIN_SCHEMA, "id", name="k", num_buckets=4)
    i1 = t.upsert(make_rows(PLAIN_SCHEMA, ["id", "v", "s"], range(100), 1))
    proc, first_file = _start_slow_writer(t.path, (50, 20050), 2, tmp_path / "ready")
    try:
        pending = [i for i in t.timeline if i.is_pending]
        assert len(pending) == 1 and str(pending[0].state) == "INFLIGHT"
        failed = pending[0].requested_time
        assert f"_{failed}." in first_file and (Path(t.path) / first_file).exists()
        assert (Path(t.path) / ".hoodie" / ".temp" / failed).is_dir()
        # files of a pending instant are invisible
        assert hudi_rows(t.path, ["id", "v", "s"]) == _plain_expected((range(100), 1))
        assert {lf.instant for g in t.file_groups() for lf in g.log_files} == {i1}
    finally:
        _kill(proc)
    i3 = t.upsert(make_rows(PLAIN_SCHEMA, ["id", "v", "s"], range(100, 110), 3))
    assert t.last_write.rolled_back == [failed]
    assert not (Path(t.path) / first_file).exists()
    assert not any(f"_{failed}" in f for f in data_files(t.path))
    assert not (Path(t.path) / ".hoodie" / ".temp" / failed).exists()
    assert not any(name.startswith(failed) for name in timeline_files(t.path))
    acts = [(str(i.action), str(i.state)) for i in t.timeline]
    assert acts == [("deltacommit", "COMPLETED"), ("rollback", "COMPLETED"), ("deltacommit", "COMPLETED")]
    rb = t.timeline[1]
    md = t.active_timeline().read_metadata(rb)
    assert md.commits_rollback == [failed]
    assert first_file in [f for p in md.partition_metadata.values() for f in p.success_delete_files]
    assert {lf.instant for g in t.file_groups() for lf in g.log_files} == {i1, i3}
    assert hudi_rows(t.path, ["id", "v", "s"]) == _plain_expected((range(100), 1), (range(100, 110), 3))


def test_lazy_policy_rolls_back_only_expired_heartbeats(tmp_path):
    opts = {"hoodie.cleaner.policy.failed.writes": "LAZY", "hoodie.client.heartbeat.interval_in_ms": 100,
            "hoodie.client.heartbeat.tolerable.misses": 2}
    t = pyhudi.create_table(str(tmp_path / "lz"), PLAIN_SCHEMA, "id", name="lz", num_buckets=2, options=opts)
    i1 = t.upsert(make_rows(PLAIN_SCHEMA, ["id", "v", "s"], range(20), 1))
    proc, first_file = _start_slow_writer(t.path, (0, 5000), 2, tmp_path / "ready")
    try:
        [pending] = [i for i in t.timeline if i.is_pending]
        failed = pending.requested_time
        time.sleep(0.35)  # > interval * misses: only a live writer's heartbeat keeps it fresh
        i2 = t.upsert(make_rows(PLAIN_SCHEMA, ["id", "v", "s"], range(20, 25), 2), options=opts)
        assert t.last_write.rolled_back == []
        assert (Path(t.path) / first_file).exists()
        assert any(i.requested_time == failed and i.is_pending for i in t.timeline)
    finally:
        _kill(proc)
    time.sleep(0.35)  # the heartbeat expires
    i3 = t.upsert(make_rows(PLAIN_SCHEMA, ["id", "v", "s"], range(25, 30), 3), options=opts)
    assert t.last_write.rolled_back == [failed]
    assert not (Path(t.path) / first_file).exists()
    assert not any(f"_{failed}" in f for f in data_files(t.path))
    assert not (Path(t.path) / ".hoodie" / ".heartbeat" / failed).exists()
    assert [str(i.action) for i in t.timeline] == ["deltacommit", "deltacommit", "rollback", "deltacommit"]
    assert all(i.is_completed for i in t.timeline)
    assert {lf.instant for g in t.file_groups() for lf in g.log_files} == {i1, i2, i3}
    assert hudi_rows(t.path, ["id", "v", "s"]) == _plain_expected((range(20), 1), (range(20, 25), 2),
                                                                   (range(25, 30), 3))


def _start_paused_writer(tmp_path, path, pauses, ids, tag):
    sig = tmp_path / "signals"
    sig.mkdir()
    args = {"path": str(path), "ids": list(ids), "columns": ["id", "v", "s"], "tag": tag, "pauses": pauses,
            "signal_dir": str(sig)}
    proc = subprocess.Popen([PY, HELPER, "paused_upsert", json.dumps(args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    return proc, sig


def _await_signal(sig, point, proc):
    deadline = time.time() + 30
    while not (sig / f"ready_{point}").exists():
        if proc.poll() is not None:
            raise AssertionError(f"writer exited before {point}: {proc.stderr.read().decode()}")
        assert time.time() < deadline, f"writer never reached {point}"
        time.sleep(0.005)


def _finish(proc, sig, points):
    for point in points:
        (sig / f"go_{point}").write_text("go")
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out.decode(), err.decode()


def test_lazy_does_not_roll_back_a_live_writer_before_its_first_heartbeat(tmp_path):
    """A writer between creating its requested instant and starting its heartbeat is alive:
    a LAZY writer must not roll it back (Hudi starts the heartbeat before the requested instant)."""
    t = pyhudi.create_table(str(tmp_path / "hb"), PLAIN_SCHEMA, "id", name="hb", num_buckets=2, options=LAZY)
    t.upsert(make_rows(PLAIN_SCHEMA, ["id", "v", "s"], range(10), 1))
    proc, sig = _start_paused_writer(tmp_path, t.path, ["inflight"], (10, 20), 2)
    try:
        _await_signal(sig, "inflight", proc)
        [pending] = [i for i in t.timeline if i.is_pending]
        assert str(pending.state) == "REQUESTED"
        t.upsert(make_rows(PLAIN_SCHEMA, ["id", "v", "s"], range(20, 25), 3))
        rolled_back = t.last_write.rolled_back
    finally:
        rc, out, err = _finish(proc, sig, ["inflight"])
    assert rolled_back == [], f"LAZY writer rolled back the live writer's instant {pending.requested_time}"
    assert rc == 0, err
    assert hudi_rows(t.path, ["id", "v", "s"]) == _plain_expected((range(10), 1), (range(10, 20), 2), (range(20, 25), 3))


def test_lazy_rollback_never_deletes_files_of_a_commit_that_completed_meanwhile(tmp_path, monkeypatch):
    """Writer A is pending when writer B lists the timeline; A completes (and deletes its
    heartbeat) before B checks A's heartbeat. B must not roll back the completed commit."""
    import pyhudi.write.rollback as rollback

    t = pyhudi.create_table(str(tmp_path / "rc"), PLAIN_SCHEMA, "id", name="rc", num_buckets=2, options=LAZY)
    t.upsert(make_rows(PLAIN_SCHEMA, ["id", "v", "s"], range(10), 1))
    proc, sig = _start_paused_writer(tmp_path, t.path, ["complete", "delete_markers"], (10, 20), 2)
    original = rollback.heartbeat_expired

    def expired(storage, instant, interval_ms, misses, now_ms=None):
        if not (sig / "go_complete").exists():
            (sig / "go_complete").write_text("go")  # A completes and deletes its heartbeat ...
            _await_signal(sig, "delete_markers", proc)  # ... and stops before deleting its markers
        return original(storage, instant, interval_ms, misses, now_ms)

    monkeypatch.setattr(rollback, "heartbeat_expired", expired)
    error = None
    try:
        _await_signal(sig, "complete", proc)
        [pending] = [i for i in t.timeline if i.is_pending]
        try:
            t.upsert(make_rows(PLAIN_SCHEMA, ["id", "v", "s"], range(20, 25), 3))
        except Exception as exc:  # noqa: BLE001 - reported below, after A finished
            error = exc
    finally:
        rc, out, err = _finish(proc, sig, ["complete", "delete_markers"])
    assert rc == 0, err
    a = json.loads(out.splitlines()[-1])
    assert a["instant"] == pending.requested_time
    missing = [f for f in a["files"] if not (Path(t.path) / f).exists()]
    assert missing == [], f"files of completed commit {a['instant']} were deleted by a rollback"
    assert error is None, repr(error)
    assert [str(i.action) for i in t.timeline] == ["deltacommit"] * 3
    assert hudi_rows(t.path, ["id", "v", "s"]) == _plain_expected((range(10), 1), (range(10, 20), 2), (range(20, 25), 3))


# ============================================================ 8. concurrent writer processes
def _run_concurrently(tmp_path, path, plans):
    go = tmp_path / "go"
    procs = []
    for commits in plans:
        args = {"path": str(path), "go_file": str(go), "commits": commits, "writers": len(plans)}
        procs.append(subprocess.Popen([PY, HELPER, "loop", json.dumps(args)], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE))
    deadline = time.time() + 60  # start both writers at once, after both finished importing
    while len(list(tmp_path.glob("go.ready.*"))) < len(procs) and time.time() < deadline:
        time.sleep(0.01)
    go.write_text("go")
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        results.append([json.loads(line) for line in out.decode().splitlines()])
    return results


def _check_commits_and_files(t, results):
    timeline = {i.requested_time: i for i in t.timeline}
    all_results = [r for rs in results for r in rs]
    assert all(i.is_completed for i in timeline.values()), [i for i in timeline.values() if i.is_pending]
    assert [str(i.action) for i in timeline.values()].count("rollback") == 0
    completions = [r["completion_time"] for r in all_results]
    assert len(set(completions)) == len(completions)
    for r in all_results:
        assert timeline[r["instant"]].completion_time == r["completion_time"]
        assert r["rolled_back"] == []
    files_on_groups = {}
    for g in t.file_groups():
        for lf in g.log_files:
            files_on_groups[lf.relpath] = (g.partition_path, g.file_id, lf.completion_time)
    for r in all_results:
        for f in r["files"]:
            assert (Path(t.path) / f).exists()
            name = f.rsplit("/", 1)[-1]
            assert files_on_groups[f] == ("", name[1:].split("_")[0], r["completion_time"])
    assert set(files_on_groups) == {f for r in all_results for f in r["files"]}
    # the writers really ran at the same time: some commit of one started before a commit of
    # the other completed, and the other way round
    spans = [[(r["instant"], r["completion_time"]) for r in rs] for rs in results]
    assert any(s1 < c2 and s2 < c1 for s1, c1 in spans[0] for s2, c2 in spans[1]), spans


def test_concurrent_writers_on_different_families_of_same_keys(tmp_path):
    t = fam_table(tmp_path, options=LAZY, num_buckets=2)
    ids = [0, 40]
    plan_a = [{"ids": ids, "columns": ["id", "a", "b"], "tag": k} for k in range(1, 5)]
    plan_c = [{"ids": ids, "columns": ["id", "c"], "tag": k} for k in range(1, 5)]
    res_a, res_c = _run_concurrently(tmp_path, t.path, [plan_a, plan_c])
    assert len(res_a) == len(res_c) == 4
    _check_commits_and_files(t, [res_a, res_c])
    # both families' updates are present: the latest fa log of each group holds tag 4 of a,b and
    # the latest fc log holds tag 4 of c
    for g in t.file_groups():
        for fam, cols in (("fa", ["a", "b"]), ("fc", ["c"])):
            sl = g.latest_slice(fam, True)
            assert len(sl.log_files) == 4
            rows = only_block(t, sl.log_files[-1].relpath).read()
            keys = [int(k) for k in rows.column("_hoodie_record_key").to_pylist()]
            assert keys and set(keys) <= set(range(*ids))
            for col in cols:
                typ = FAM_SCHEMA.field(col).type
                assert rows.column(col).to_pylist() == [value_of(typ, col, k, 4) for k in keys]
            # fa is written without its ordering column ts: a partial block; fc is complete
            assert only_block(t, sl.log_files[-1].relpath).header.get(HeaderKey.IS_PARTIAL) == (
                "true" if fam == "fa" else None)
    # every key was written by both writers, in every commit
    for fam, res in (("fa", res_a), ("fc", res_c)):
        for r in res:
            keys = []
            for f in r["files"]:
                assert f"_{fam}.log." in f
                keys += only_block(t, f).read().column("id").to_pylist()
            assert sorted(keys) == list(range(*ids))


def test_concurrent_writers_on_the_same_family(tmp_path):
    t = fam_table(tmp_path, options=LAZY, num_buckets=2)
    plan_1 = [{"ids": [0, 30], "columns": ["id", "c"], "tag": k} for k in range(1, 4)]
    plan_2 = [{"ids": [0, 30], "columns": ["id", "c"], "tag": k} for k in range(11, 14)]
    res_1, res_2 = _run_concurrently(tmp_path, t.path, [plan_1, plan_2])
    _check_commits_and_files(t, [res_1, res_2])
    # the newest fc log (by completion time) of each group holds the last-completing commit's values
    last = max(res_1 + res_2, key=lambda r: r["completion_time"])
    for g in t.file_groups():
        sl = g.latest_slice("fc", True)
        assert len(sl.log_files) == 6
        assert sl.log_files[-1].instant == last["instant"]
        assert [lf.completion_time for lf in sl.log_files] == sorted(r["completion_time"] for r in res_1 + res_2)


def test_concurrent_writers_plain_table_union_read_by_hudi_rs(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "cp"), PLAIN_SCHEMA, "id", name="cp", num_buckets=2, options=LAZY)
    plan_1 = [{"ids": [k * 10, k * 10 + 10], "columns": ["id", "v", "s"], "tag": 1} for k in range(3)]
    plan_2 = [{"ids": [100 + k * 10, 110 + k * 10], "columns": ["id", "v", "s"], "tag": 2} for k in range(3)]
    res = _run_concurrently(tmp_path, t.path, [plan_1, plan_2])
    _check_commits_and_files(t, res)
    assert hudi_rows(t.path, ["id", "v", "s"]) == _plain_expected((range(30), 1), (range(100, 130), 2))


# ============================================================ 9. one-family tables with hudi-rs
TYPES_SCHEMA = pa.schema([
    pa.field("id", pa.int64(), False), ("name", pa.string()), ("amount", pa.decimal128(10, 2)),
    ("d", pa.date32()), ("t", pa.timestamp("us", tz="UTC")), ("ok", pa.bool_()), ("x", pa.float64()),
    ("i", pa.int32()), ("st", pa.struct([("a", pa.int32()), ("b", pa.string())])), ("city", pa.string()),
])
D = decimal.Decimal
UTC = dt.timezone.utc


def _types_rows():
    return pa.table({
        "id": [1, 2, 3, 4],
        "name": ["a", "b", "c", None],
        "amount": [D("1.10"), D("-2.50"), None, D("99999999.99")],
        "d": [dt.date(2024, 1, 1), dt.date(1970, 1, 1), dt.date(2000, 2, 29), None],
        "t": [dt.datetime(2024, 1, 1, 12, 30, 0, 123456, tzinfo=UTC), None,
              dt.datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC), dt.datetime(2024, 6, 1, tzinfo=UTC)],
        "ok": [True, False, None, True],
        "x": [1.5, -0.0, None, 1e300],
        "i": [1, -2, None, 2147483647],
        "st": [{"a": 1, "b": "q"}, None, {"a": None, "b": "r"}, {"a": 4, "b": None}],
        "city": ["sf", "sf", "nyc", "nyc"],
    }, schema=TYPES_SCHEMA)


@pytest.mark.parametrize("partitioning", ["none", "hive", "plain"])
def test_one_family_table_read_by_hudi_rs(tmp_path, partitioning):
    kw = {}
    if partitioning != "none":
        kw = {"partition_fields": ["city"],
              "options": {"hoodie.datasource.write.hive_style_partitioning": str(partitioning == "hive").lower()}}
    t = pyhudi.create_table(str(tmp_path / "ty"), TYPES_SCHEMA, "id", name="ty", num_buckets=2, **kw)
    rows = _types_rows()
    i1 = t.upsert(rows)
    i2 = t.upsert(pa.table({"id": [2, 5], "name": ["B", "e"], "city": ["sf", "nyc"]}))
    i3 = t.delete(pa.table({"id": [3], "city": ["nyc"]}))
    # default family: no suffix on any file
    for f in data_files(t.path):
        assert f.rsplit("/", 1)[-1].split(".log.")[0].count("_") == 1
    expected = {r["id"]: r for r in rows.to_pylist()}
    expected[2]["name"] = "B"
    expected[5] = {c: None for c in TYPES_SCHEMA.names} | {"id": 5, "name": "e", "city": "nyc"}
    del expected[3]
    got = hudi_rows(t.path)
    assert [r["id"] for r in got] == [1, 2, 4, 5]
    for r in got:
        assert {c: r[c] for c in TYPES_SCHEMA.names} == expected[r["id"]]
        assert r["_hoodie_record_key"] == str(r["id"])
        part = "" if partitioning == "none" else (f"city={r['city']}" if partitioning == "hive" else r["city"])
        assert r["_hoodie_partition_path"] == part
        assert r["_hoodie_file_name"] == fid(bucket_of(r["id"], 2))
        assert r["_hoodie_commit_time"] == {1: i1, 2: i2, 4: i1, 5: i2}[r["id"]]
    assert i3 > i2 > i1


def test_one_family_table_event_time_ordering_read_by_hudi_rs(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), ("ts", pa.int64())])
    t = pyhudi.create_table(str(tmp_path / "ev"), schema, "id", name="ev", num_buckets=2, ordering_field="ts")
    t.upsert(pa.table({"id": [1, 2, 3, 1], "v": ["a", "b", "c", "a-old"], "ts": [10, 10, 10, 5]}))
    t.upsert(pa.table({"id": [1, 2], "v": ["late", "new"], "ts": [1, 20]}))
    assert hudi_rows(t.path, ["id", "v", "ts"]) == [
        {"id": 1, "v": "a", "ts": 10}, {"id": 2, "v": "new", "ts": 20}, {"id": 3, "v": "c", "ts": 10}]


def test_one_family_bulk_insert_then_upsert_read_by_hudi_rs(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "bi"), PLAIN_SCHEMA, "id", name="bi", num_buckets=2,
                            partition_fields=[], options=None)
    i1 = t.bulk_insert(make_rows(PLAIN_SCHEMA, ["id", "v", "s"], range(10), 1))
    assert {f for f in data_files(t.path) if f.endswith(".parquet")} == {
        f"{fid(b)}_{n}-1-0_{i1}.parquet" for n, b in enumerate(sorted({bucket_of(i, 2) for i in range(10)}))}
    t.upsert(make_rows(PLAIN_SCHEMA, ["id", "v"], range(5, 12), 2))
    t.delete(pa.table({"id": [0]}))
    expected = _plain_expected((range(10), 1), (range(10, 12), 2))[1:]
    for r in expected:
        if r["id"] >= 5:
            r["v"] = value_of(pa.float64(), "v", r["id"], 2)
        if r["id"] >= 10:
            r["s"] = None
    assert hudi_rows(t.path, ["id", "v", "s"]) == expected


def test_one_family_composite_key_read_by_hudi_rs(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("k", pa.string(), False), ("v", pa.float64())])
    t = pyhudi.create_table(str(tmp_path / "ck"), schema, ["id", "k"], name="ck", num_buckets=2)
    t.upsert(pa.table({"id": [1, 1, 2], "k": ["a", "b", "a"], "v": [1.0, 2.0, 3.0]}, schema=schema))
    t.upsert(pa.table({"id": [1], "k": ["b"], "v": [20.0]}, schema=schema))
    t.delete(pa.table({"id": [2], "k": ["a"]}))
    got = sorted(hudi_rows(t.path, ["_hoodie_record_key", "_hoodie_file_name", "id", "k", "v"]),
                 key=lambda r: r["_hoodie_record_key"])
    bucket = lambda i, k: int(bucket_ids([pa.array([i], pa.int64()), pa.array([k])], 2)[0])  # noqa: E731
    assert got == [
        {"_hoodie_record_key": "id:1,k:a", "_hoodie_file_name": fid(bucket(1, "a")), "id": 1, "k": "a", "v": 1.0},
        {"_hoodie_record_key": "id:1,k:b", "_hoodie_file_name": fid(bucket(1, "b")), "id": 1, "k": "b", "v": 20.0},
    ]


# ============================================================ 10. engines
def test_local_engine_parallelism_one_matches_default(tmp_path):
    data = full_rows(range(30))
    t1 = fam_table(tmp_path, "e1")
    i1 = t1.upsert(data, engine=LocalEngine(parallelism=1))
    t2 = fam_table(tmp_path, "e2")
    i2 = t2.upsert(data)
    c1, c2 = _family_contents(t1, i1), _family_contents(t2, i2)
    assert len(c1) == 3
    assert c1 == c2


def test_fsync_data_files_option(tmp_path, monkeypatch):
    """Data files are fsynced only with hoodie.pyhudi.fsync.data.files=true (base and log files)."""
    synced = []
    original = os.fsync

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return original(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    t = fam_table(tmp_path, num_buckets=2)
    t.bulk_insert(full_rows(range(4)))
    t.upsert(full_rows(range(4), tag=1))
    root = str(Path(t.path).resolve())
    # (.hoodie: synced after a commit; the table's root: its new .hoodie directory's entry)
    assert not [p for p in synced if p.startswith(root) and "/.hoodie/" not in p + "/" and not os.path.isdir(p)]
    t.upsert(full_rows(range(4), tag=2), options={"hoodie.pyhudi.fsync.data.files": "true"})
    t2 = pyhudi.create_table(str(tmp_path / "b"), PLAIN_SCHEMA, "id", name="b", num_buckets=1)
    rows = make_rows(PLAIN_SCHEMA, ["id", "v", "s"], range(3), 1)
    t2.bulk_insert(rows, options={"hoodie.pyhudi.fsync.data.files": True})
    data_synced = {p for p in synced if "/.hoodie/" not in p + "/" and not os.path.isdir(p)}
    assert data_synced == {str(Path(t.path).resolve() / f) for f in t.last_write.files} | {
        str(Path(t2.path).resolve() / f) for f in t2.last_write.files}
    assert len(data_synced) == 2 * 3 + 1


def test_per_column_encodings_stay_readable_by_hudi_rs(tmp_path):
    """Uncompressed random doubles, dictionary-encoded repeats, snappy strings and a delta-packed
    integer key in one block."""
    import numpy as np

    n = 3000
    rng = np.random.default_rng(5)
    schema = pa.schema([pa.field("id", pa.int64(), False), ("x", pa.float64()), ("cat", pa.float64()),
                        ("s", pa.string())])
    rows = pa.table({"id": pa.array(np.arange(n)), "x": rng.random(n), "cat": rng.integers(0, 3, n).astype(float),
                     "s": [f"name-{i % 7}-{i}" for i in range(n)]}, schema=schema)
    t = pyhudi.create_table(str(tmp_path / "enc"), schema, "id", name="enc", num_buckets=1)
    t.upsert(rows)
    block = only_block(t, t.last_write.files[0])
    meta = block.parquet_file().metadata.row_group(0)
    chunks = {meta.column(i).path_in_schema: meta.column(i) for i in range(meta.num_columns)}
    assert (chunks["x"].compression, chunks["x"].has_dictionary_page) == ("UNCOMPRESSED", False)
    assert (chunks["cat"].compression, chunks["cat"].has_dictionary_page) == ("SNAPPY", True)
    assert (chunks["s"].compression, chunks["s"].has_dictionary_page) == ("SNAPPY", False)
    assert (chunks["id"].compression, "DELTA_BINARY_PACKED" in chunks["id"].encodings) == ("UNCOMPRESSED", True)
    assert "DELTA_BINARY_PACKED" not in chunks["x"].encodings
    assert chunks["_hoodie_commit_time"].has_dictionary_page and not chunks["_hoodie_commit_seqno"].has_dictionary_page
    assert [c.column_index for c in meta.sorting_columns] == [2]  # sorted by _hoodie_record_key, declared
    assert hudi_rows(t.path, ["id", "x", "cat", "s"]) == rows.to_pylist()
    assert t.read().sort_by("id").equals(rows)

"""Merge-on-read in Apache Hudi's order (issue 11, items 3 and 4), on tables laid out as Hudi lays them out.

Hudi 1.x's file group reader first collects a file slice's log records into a map by record key
(the log versions of a key merge with each other, in log order), then walks the base file:
each base record meets the map entry of its key, which is *removed* when consumed; log records
left over (keys not in the base file) come last. So:

- a key the base file stores twice (Hudi's ``insert`` keeps duplicates) merges its log record
  into the first stored copy only; the second copy comes back as stored, and a duplicated key
  without log records keeps every copy (item 3);
- partial records (``IS_PARTIAL=true``) under event-time ordering: the log record with the
  higher ordering value wins the columns it carries and the other fills the ones it lacks,
  before the result meets the base record — an older partial record (lower ordering value)
  still supplies a column the newer one lacks (item 4).

The tables are built here file by file: a pyhudi-created merge-on-read table without a bucket
index (hoodie.properties, layout-2 timeline), a base file written the way Hudi's insert writes
it (meta columns, rows in arrival order, no declared sort), and log files of Avro data and
delete blocks, each committed by a completed deltacommit with its write stats.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.logformat import AvroDataBlock, DeleteBlock, write_log_file
from pyhudi.logformat.writer import data_block_header
from pyhudi.schema import META_FIELDS, avro_schema_json
from pyhudi.timeline.metadata import CommitMetadata, WriteStat, encode_instant_metadata

FILE_ID = "5d3c0f1e-9a47-4b52-8f0e-2c1d7e6a9b10-0"
SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False), ("a", pa.int64()), ("b", pa.string()),
                    ("ts", pa.int64())])
T1, T2, T3 = "20250301100000000", "20250301100100000", "20250301100200000"


def _table(tmp_path, ordering: str | None) -> pyhudi.Table:
    return pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", ordering_field=ordering)


def _with_meta(instant: str, file_name: str, rows: dict) -> pa.Table:
    """Rows with Hudi's five meta columns first, as Hudi writes base files and log records."""
    n = len(rows["id"])
    meta = {META_FIELDS[0]: [instant] * n, META_FIELDS[1]: [f"{instant}_0_{i}" for i in range(n)],
            META_FIELDS[2]: rows["id"], META_FIELDS[3]: [""] * n, META_FIELDS[4]: [file_name] * n}
    fields = [pa.field(m, pa.string()) for m in META_FIELDS] + [SCHEMA.field(c) for c in rows]
    return pa.table({**meta, **rows}, schema=pa.schema(fields))


def _commit(t: pyhudi.Table, instant: str, relpath: str, size: int, base_name: str | None) -> None:
    """A completed deltacommit that wrote ``relpath`` (a base file, or a log file of the slice
    whose base file is ``base_name``)."""
    is_log = base_name is not None
    stat = WriteStat(file_id=FILE_ID, path=relpath, prev_commit=T1 if is_log else "null", num_writes=1,
                     num_deletes=0, num_update_writes=0, num_inserts=0, total_write_bytes=size, total_write_errors=0,
                     partition_path="", total_log_records=0, total_log_files=0, total_updated_records_compacted=0,
                     total_log_blocks=0, total_corrupt_log_block=0, total_rollback_blocks=0, file_size_in_bytes=size,
                     log_version=1 if is_log else None, log_offset=0 if is_log else None,
                     base_file=base_name if is_log else None, log_files=[relpath.lstrip(".")] if is_log else None,
                     num_updates=0)
    timeline = t.active_timeline()
    requested = timeline.create_requested("deltacommit", instant)
    inflight = timeline.transition_to_inflight(requested)
    metadata = CommitMetadata.from_write_stats([stat], operation_type="upsert" if is_log else "insert",
                                               schema=avro_schema_json(SCHEMA, t.name))
    timeline.complete(inflight, encode_instant_metadata(metadata))


def _base(t: pyhudi.Table, rows: dict) -> str:
    """The base file Hudi's insert writes at T1: rows in arrival order, keys not sorted."""
    name = f"{FILE_ID}_0-1-0_{T1}.parquet"
    pq.write_table(_with_meta(T1, name, rows), t.storage.full_path(name))
    _commit(t, T1, name, t.storage.size(name), None)
    return name


def _log(t: pyhudi.Table, instant: str, base_name: str, block) -> None:
    relpath = f".{FILE_ID}_{instant}.log.1_0-1-0"
    size = write_log_file(t.storage, relpath, [block])
    _commit(t, instant, relpath, size, base_name)


def _avro(instant: str, rows: dict, partial: bool = False) -> AvroDataBlock:
    table = _with_meta(instant, FILE_ID, rows)
    return AvroDataBlock(table, data_block_header(instant, table.schema, table_name="t", is_partial=partial),
                         table_name="t")


def _read(t: pyhudi.Table, strategy: str = "auto") -> list[tuple]:
    table = pyhudi.open_table(t.path).read(strategy=strategy)
    return sorted((r["id"], r["a"], r["b"], r["ts"]) for r in table.to_pylist())


DUPLICATED = {"id": ["k1", "k2", "k1", "k2", "k3"], "a": [1, 2, 3, 4, 5], "b": ["x", "y", "z", "w", "v"],
              "ts": [5, 1, 1, 1, 1]}


@pytest.mark.parametrize("ordering", ["ts", None])
@pytest.mark.parametrize("strategy", ["auto", "hash"])
def test_an_update_of_a_key_the_base_file_stores_twice_merges_into_the_first_copy(tmp_path, ordering, strategy):
    """Item 3: k1 is stored twice, the log updates it: the first copy takes the update, the
    second comes back unchanged; k2, stored twice without an update, keeps both copies."""
    t = _table(tmp_path, ordering)
    base = _base(t, DUPLICATED)
    assert _read(t, strategy) == [("k1", 1, "x", 5), ("k1", 3, "z", 1), ("k2", 2, "y", 1), ("k2", 4, "w", 1),
                                  ("k3", 5, "v", 1)]
    _log(t, T2, base, _avro(T2, {"id": ["k1", "k4"], "a": [10, 40], "b": ["u", "n"], "ts": [7, 7]}))
    assert _read(t, strategy) == [("k1", 3, "z", 1), ("k1", 10, "u", 7), ("k2", 2, "y", 1), ("k2", 4, "w", 1),
                                  ("k3", 5, "v", 1), ("k4", 40, "n", 7)]


@pytest.mark.parametrize("strategy", ["auto", "hash"])
def test_an_older_update_of_a_key_stored_twice_loses_to_the_first_copy_only(tmp_path, strategy):
    """Event time: the update (ts 3) meets the first copy of k1 (ts 5) and loses; the second
    copy (ts 1) never meets it and comes back as stored — not updated either."""
    t = _table(tmp_path, "ts")
    base = _base(t, DUPLICATED)
    _log(t, T2, base, _avro(T2, {"id": ["k1"], "a": [10], "b": ["u"], "ts": [3]}))
    assert _read(t, strategy) == [("k1", 1, "x", 5), ("k1", 3, "z", 1), ("k2", 2, "y", 1), ("k2", 4, "w", 1),
                                  ("k3", 5, "v", 1)]


@pytest.mark.parametrize("ordering", ["ts", None])
@pytest.mark.parametrize("strategy", ["auto", "hash"])
def test_a_delete_of_a_key_the_base_file_stores_twice_removes_the_first_copy(tmp_path, ordering, strategy):
    """A delete block (default ordering value: wins regardless) takes the first stored copy of
    k2; the second copy stays."""
    t = _table(tmp_path, ordering)
    base = _base(t, DUPLICATED)
    _log(t, T2, base, DeleteBlock.from_keys(["k2"], T2))
    assert _read(t, strategy) == [("k1", 1, "x", 5), ("k1", 3, "z", 1), ("k2", 4, "w", 1), ("k3", 5, "v", 1)]


PARTIAL_BASE = {"id": ["k1", "k2"], "a": [1, 2], "b": ["x", "y"], "ts": [4, 4]}


@pytest.mark.parametrize("strategy", ["auto", "hash"])
def test_partial_log_records_merge_with_each_other_before_the_base_record(tmp_path, strategy):
    """Item 4, event time: T2 sets b (ts 6), T3 sets a (ts 3). The log records merge first: T2
    wins b and ts, T3 fills a, which T2 lacks; the result (ts 6) beats the base (ts 4). Merging
    each record into the base in turn kept the base's a (T3 loses to the base's ts 4).
    For k2, both partial records are older than the base: the base row wins whole."""
    t = _table(tmp_path, "ts")
    base = _base(t, PARTIAL_BASE)
    _log(t, T2, base, _avro(T2, {"id": ["k1", "k2"], "b": ["new", "new2"], "ts": [6, 2]}, partial=True))
    _log(t, T3, base, _avro(T3, {"id": ["k1", "k2"], "a": [30, 31], "ts": [3, 3]}, partial=True))
    assert _read(t, strategy) == [("k1", 30, "new", 6), ("k2", 2, "y", 4)]


@pytest.mark.parametrize("strategy", ["auto", "hash"])
def test_partial_log_records_under_commit_time_ordering_apply_in_log_order(tmp_path, strategy):
    """Commit time: the later record always wins the columns it carries; both orders agree."""
    t = _table(tmp_path, None)
    base = _base(t, PARTIAL_BASE)
    _log(t, T2, base, _avro(T2, {"id": ["k1", "k2"], "b": ["new", "new2"], "ts": [6, 2]}, partial=True))
    _log(t, T3, base, _avro(T3, {"id": ["k1", "k2"], "a": [30, 31], "ts": [3, 3]}, partial=True))
    assert _read(t, strategy) == [("k1", 30, "new", 3), ("k2", 31, "new2", 3)]


@pytest.mark.parametrize("families", [None, {"fab": "a,b,ts;ts"}])
@pytest.mark.parametrize("strategy", ["auto", "hash"])
def test_pyhudi_tables_merge_partial_upserts_in_hudis_order(tmp_path, families, strategy):
    """pyhudi's own tables (one family, or an event-time family) follow the same order: partial
    upserts written as partial log blocks merge with each other, then with the base record."""
    t = pyhudi.create_table(str(tmp_path / "own"), SCHEMA, "id", ordering_field=None if families else "ts",
                            num_buckets=1, column_families=families)
    t.bulk_insert(pa.table(PARTIAL_BASE, schema=SCHEMA))
    t.upsert(pa.table({"id": ["k1", "k2"], "b": ["new", "new2"], "ts": [6, 2]},
                      schema=pa.schema([SCHEMA.field("id"), SCHEMA.field("b"), SCHEMA.field("ts")])))
    t.upsert(pa.table({"id": ["k1", "k2"], "a": [30, 31], "ts": [3, 3]},
                      schema=pa.schema([SCHEMA.field("id"), SCHEMA.field("a"), SCHEMA.field("ts")])))
    assert _read(t, strategy) == [("k1", 30, "new", 6), ("k2", 2, "y", 4)]

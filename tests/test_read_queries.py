"""Queries: time travel, incremental windows, read-optimized reads, meta columns."""

from __future__ import annotations

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import ReadError
from read_helpers import just_before

SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False), ("a", pa.float64()), ("b", pa.string()),
                    ("ts", pa.int64()), ("c", pa.int64()), ("d", pa.string())])
FAMILIES = {"f1": "a,b;ts", "f2": "c", "f3": "d"}
META = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
        "_hoodie_file_name"]


@pytest.fixture
def table(tmp_path):
    return pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2, column_families=FAMILIES)


def by_id(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: r["id"])


def completion(t, instant: str) -> str:
    return next(i.completion_time for i in t.timeline if i.requested_time == instant)


def five_commits(table):
    """k1 inserted, k2 inserted, k1's c updated, k2 deleted, k2 re-inserted through f3 only."""
    steps = [
        pa.table({"id": ["k1"], "a": [1.0], "b": ["x"], "ts": [1], "c": [10], "d": ["p"]}),
        pa.table({"id": ["k2"], "a": [2.0], "b": ["y"], "ts": [1], "c": [20], "d": ["q"]}),
        pa.table({"id": ["k1"], "c": [11]}),
        None,
        pa.table({"id": ["k2"], "d": ["back"]}),
    ]
    instants = []
    for step in steps:
        instants.append(table.delete(pa.table({"id": ["k2"]})) if step is None else table.upsert(step))
    return instants


SNAPSHOTS = [
    [{"id": "k1", "a": 1.0, "b": "x", "ts": 1, "c": 10, "d": "p"}],
    [{"id": "k1", "a": 1.0, "b": "x", "ts": 1, "c": 10, "d": "p"}, {"id": "k2", "a": 2.0, "b": "y", "ts": 1, "c": 20, "d": "q"}],
    [{"id": "k1", "a": 1.0, "b": "x", "ts": 1, "c": 11, "d": "p"}, {"id": "k2", "a": 2.0, "b": "y", "ts": 1, "c": 20, "d": "q"}],
    [{"id": "k1", "a": 1.0, "b": "x", "ts": 1, "c": 11, "d": "p"}],
    [{"id": "k1", "a": 1.0, "b": "x", "ts": 1, "c": 11, "d": "p"}, {"id": "k2", "a": None, "b": None, "ts": None, "c": None, "d": "back"}],
]


def test_time_travel_to_each_instant_of_a_five_commit_history(table):
    instants = five_commits(table)
    for instant, expected in zip(instants, SNAPSHOTS):
        assert by_id(table.read(as_of=completion(table, instant))) == expected
        assert by_id(pa.Table.from_batches(list(table.scan(as_of=completion(table, instant))))) == expected
    before = just_before(table, completion(table, instants[0]))
    assert table.read(as_of=before).num_rows == 0
    assert by_id(table.read()) == SNAPSHOTS[-1]


def test_incremental_windows(table):
    instants = five_commits(table)
    done = [completion(table, i) for i in instants]
    start = just_before(table, done[0])
    # (before 1st, 1st]: k1 as of the 1st commit
    assert by_id(table.read_incremental(start, done[0])) == SNAPSHOTS[0]
    # (1st, 2nd]: only k2 changed
    assert by_id(table.read_incremental(done[0], done[1])) == [SNAPSHOTS[1][1]]
    # (1st, 3rd]: k2 inserted, k1's c updated — both in their state as of the 3rd commit
    assert by_id(table.read_incremental(done[0], done[2])) == SNAPSHOTS[2]
    # (2nd, 3rd]: k1 only (k2 unchanged)
    assert by_id(table.read_incremental(done[1], done[2])) == [SNAPSHOTS[2][0]]
    # (3rd, 4th]: k2 was deleted — deleted rows are not returned
    assert table.read_incremental(done[2], done[3]).num_rows == 0
    # (3rd, 5th]: k2 deleted then re-inserted through f3: its latest state
    assert by_id(table.read_incremental(done[2], done[4])) == [SNAPSHOTS[4][1]]
    # open end = latest; nothing after the last commit
    assert by_id(table.read_incremental(done[3])) == [SNAPSHOTS[4][1]]
    assert table.read_incremental(done[4]).num_rows == 0
    assert table.read_incremental(done[4]).schema == SCHEMA


def test_incremental_row_changed_again_after_the_window_shows_its_state_at_the_end(table):
    i1 = table.upsert(pa.table({"id": ["k1", "k2"], "c": [1, 2]}))
    i2 = table.upsert(pa.table({"id": ["k1"], "c": [10]}))
    table.upsert(pa.table({"id": ["k1"], "c": [100]}))
    got = table.read_incremental(completion(table, i1), completion(table, i2), columns=["id", "c"], with_meta=True)
    assert [(r["id"], r["c"], r["_hoodie_commit_time"]) for r in got.to_pylist()] == [("k1", 10, i2)]


def test_incremental_keeps_rows_changed_in_any_family(table):
    i1 = table.upsert(pa.table({"id": ["k1", "k2"], "a": [1.0, 2.0], "b": ["x", "y"], "ts": [1, 1], "c": [1, 2],
                                "d": ["p", "q"]}))
    table.upsert(pa.table({"id": ["k2"], "d": ["Q"]}))
    # (from the first write's completion: "completion - 1 ms" was the second write's own instant
    # whenever it completed within a millisecond, and a write's instant stands for its completion)
    got = table.read_incremental(completion(table, i1), columns=["id", "a", "d"])
    assert got.to_pylist() == [{"id": "k2", "a": 2.0, "d": "Q"}]


def test_incremental_needs_meta_fields(table):
    table.upsert(pa.table({"id": ["k1"], "c": [1]}))
    table.config.props["hoodie.populate.meta.fields"] = "false"  # as a table written without them
    with pytest.raises(ReadError, match="has no meta fields .* incremental queries need _hoodie_commit_time"):
        table.read_incremental("20240101000000000")
    assert table.read(columns=["id", "c"]).to_pylist() == [{"id": "k1", "c": 1}]  # keys from the key column


def test_read_optimized_reads_base_files_only(table):
    table.bulk_insert(pa.table({"id": ["k1", "k2"], "a": [1.0, 2.0], "b": ["x", "y"], "ts": [1, 1], "c": [10, 20], "d": ["p", "q"]}))
    table.upsert(pa.table({"id": ["k1", "k9"], "c": [11, 99]}))  # logs: an update and a log-only key
    assert by_id(table.read(columns=["id", "c"], query_type="read_optimized")) == [
        {"id": "k1", "c": 10}, {"id": "k2", "c": 20}]
    assert by_id(table.read(columns=["id", "c"])) == [{"id": "k1", "c": 11}, {"id": "k2", "c": 20}, {"id": "k9", "c": 99}]


def test_with_meta_plain_table(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "p"), SCHEMA, "id", num_buckets=1)
    i1 = t.bulk_insert(pa.table({"id": ["k1", "k2"], "a": [1.0, 2.0]}))
    i2 = t.upsert(pa.table({"id": ["k2"], "a": [3.0]}))
    base = next(g for g in t.file_groups()).base_files[0].name.name
    got = t.read(columns=["id", "a"], with_meta=True)
    assert got.column_names == [*META, "id", "a"]
    rows = by_id(got)
    assert rows[0] == {"_hoodie_commit_time": i1, "_hoodie_commit_seqno": f"{i1}_0_0", "_hoodie_record_key": "k1",
                       "_hoodie_partition_path": "", "_hoodie_file_name": base, "id": "k1", "a": 1.0}
    assert rows[1]["_hoodie_commit_time"] == i2 and rows[1]["_hoodie_commit_seqno"] == f"{i2}_0_0"
    assert rows[1]["_hoodie_file_name"] == "00000000-0000-0000-0000-000000000000-0"  # log records carry the file id
    assert rows[1]["a"] == 3.0


def test_with_meta_family_table_takes_meta_of_the_newest_family(table):
    i1 = table.upsert(pa.table({"id": ["k1", "k2"], "a": [1.0, 2.0], "b": ["x", "y"], "ts": [1, 1], "c": [1, 2], "d": ["p", "q"]}))
    i2 = table.upsert(pa.table({"id": ["k2"], "d": ["Q"]}))
    rows = by_id(table.read(columns=["id", "a"], with_meta=True))
    assert [(r["id"], r["_hoodie_commit_time"], r["_hoodie_record_key"]) for r in rows] == [("k1", i1, "k1"), ("k2", i2, "k2")]
    assert rows[1]["_hoodie_commit_seqno"].startswith(f"{i2}_")
    assert table.read(filters=[("_hoodie_commit_time", "=", i2)], with_meta=True).column("id").to_pylist() == ["k2"]


def test_files_of_pending_compaction_and_clustering_are_not_read(table):
    """A compaction or clustering that has not completed has written files readers must ignore;
    logs that complete while the compaction is pending still apply to the current slice."""
    import pyarrow.parquet as pq

    from pyhudi.storage.naming import BaseFileName

    table.bulk_insert(pa.table({"id": ["k1", "k2"], "a": [1.0, 2.0], "b": ["x", "y"], "ts": [1, 1], "c": [10, 20], "d": ["p", "q"]}))
    timeline = table.active_timeline()
    compaction = timeline.create_requested("compaction")
    clustering = timeline.create_requested("clustering")
    for group in table.file_groups():
        for family, instant in (("f2", compaction.requested_time), (None, clustering.requested_time)):
            name = BaseFileName(group.file_id, "0-1-0", instant, family).name
            junk = pa.table({"_hoodie_record_key": ["k1", "k2", "k3"], "id": ["k1", "k2", "k3"], "c": [-1, -1, -1]})
            pq.write_table(junk, table.storage.full_path(f"{name}"))
    table.upsert(pa.table({"id": ["k2"], "c": [21]}))  # completes while the compaction is pending
    assert by_id(table.read(columns=["id", "c"])) == [{"id": "k1", "c": 10}, {"id": "k2", "c": 21}]
    assert all(b.instant not in (compaction.requested_time, clustering.requested_time)
               for g in table.file_groups() for b in g.base_files)

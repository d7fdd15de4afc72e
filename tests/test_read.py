"""Reading column-family tables: merges per family, row joins, pruning, filters, time travel."""

from __future__ import annotations

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import SchemaError

SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False), ("a", pa.float64()), ("b", pa.string()),
                    ("ts", pa.int64()), ("c", pa.int64()), ("d", pa.string())])


@pytest.fixture
def table(tmp_path):
    return pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=3,
                               column_families={"f1": "a,b;ts", "f2": "c", "f3": "d"})


def rows(t, **kw):
    return sorted(t.read(**kw).to_pylist(), key=lambda r: r.get("id") or "")


def test_partial_then_full_update_of_another_family(table):
    table.upsert(pa.table({"id": ["k1", "k2"], "a": [1.0, 2.0], "b": ["x", "y"], "ts": [1, 1], "c": [10, 20], "d": ["p", "q"]}))
    table.upsert(pa.table({"id": ["k1"], "b": ["X"]}))  # partial f1: a and ts keep their values
    table.upsert(pa.table({"id": ["k2", "k3"], "c": [200, 300]}))  # full f2, new key k3 via f2 only
    assert rows(table) == [
        {"id": "k1", "a": 1.0, "b": "X", "ts": 1, "c": 10, "d": "p"},
        {"id": "k2", "a": 2.0, "b": "y", "ts": 1, "c": 200, "d": "q"},
        {"id": "k3", "a": None, "b": None, "ts": None, "c": 300, "d": None},
    ]


def test_event_time_family_keeps_newer_ordering_value(table):
    table.upsert(pa.table({"id": ["k1"], "a": [1.0], "b": ["new"], "ts": [5]}))
    table.upsert(pa.table({"id": ["k1"], "a": [9.0], "b": ["stale"], "ts": [3], "c": [7]}))
    assert rows(table) == [{"id": "k1", "a": 1.0, "b": "new", "ts": 5, "c": 7, "d": None}]


def test_delete_then_reinsert_through_one_family(table):
    table.upsert(pa.table({"id": ["k1", "k2"], "a": [1.0, 2.0], "b": ["x", "y"], "ts": [1, 1], "c": [10, 20], "d": ["p", "q"]}))
    table.delete(pa.table({"id": ["k1"]}))
    assert [r["id"] for r in rows(table)] == ["k2"]
    table.upsert(pa.table({"id": ["k1"], "c": [11]}))
    assert rows(table)[0] == {"id": "k1", "a": None, "b": None, "ts": None, "c": 11, "d": None}


def test_pruned_read_returns_every_row(table):
    table.upsert(pa.table({"id": ["k1", "k2"], "a": [1.0, 2.0], "b": ["x", "y"], "ts": [1, 1]}))
    table.upsert(pa.table({"id": ["k3"], "d": ["only-d"]}))
    assert table.read(columns=["c"]).to_pylist() == [{"c": None}] * 3
    assert sorted(table.read(columns=["id", "d"]).to_pylist(), key=lambda r: r["id"]) == [
        {"id": "k1", "d": None}, {"id": "k2", "d": None}, {"id": "k3", "d": "only-d"}]


def test_filters_apply_after_merge(table):
    table.upsert(pa.table({"id": ["k1", "k2"], "a": [1.0, 2.0], "b": ["x", "y"], "ts": [1, 1], "c": [10, 20]}))
    table.upsert(pa.table({"id": ["k1"], "c": [25]}))
    assert [r["id"] for r in rows(table, filters=[("c", ">", 15)])] == ["k1", "k2"]
    assert [r["id"] for r in rows(table, filters=[("c", "=", 10)])] == []  # the old version is not resurrected
    assert [r["id"] for r in rows(table, filters=[("b", "in", ["y"]), ("d", "is null")])] == ["k2"]
    with pytest.raises(SchemaError, match="filter column 'zz' is not in the table schema"):
        table.read(filters=[("zz", "=", 1)])
    with pytest.raises(SchemaError, match="unsupported filter operator 'like'"):
        table.read(filters=[("b", "like", "x")])
    with pytest.raises(SchemaError, match="column 'nope' is not in the table schema"):
        table.read(columns=["nope"])


def test_time_travel_to_each_instant(table):
    history = []
    for i in range(5):
        table.upsert(pa.table({"id": [f"k{i}", "k0"], "c": [i, 100 + i]}))
        history.append(table.timeline[-1].completion_time)
    for i, as_of in enumerate(history):
        got = {r["id"]: r["c"] for r in table.read(columns=["id", "c"], as_of=as_of).to_pylist()}
        expected = {f"k{j}": j for j in range(1, i + 1)}
        expected["k0"] = 100 + i
        assert got == expected
    assert table.read(as_of="19700101000000000").num_rows == 0


def test_files_of_archived_instants_stay_visible(table):
    """Instants older than the active timeline were archived (always completed ones)."""
    first = table.upsert(pa.table({"id": ["k1"], "c": [1]}))
    table.upsert(pa.table({"id": ["k2"], "c": [2]}))
    timeline_dir = table.storage.full_path(".hoodie/timeline")
    import os

    for name in os.listdir(timeline_dir):
        if name.startswith(first):
            os.remove(os.path.join(timeline_dir, name))  # as the archiver moves it to history/
    assert sorted(r["id"] for r in table.read(columns=["id"]).to_pylist()) == ["k1", "k2"]


def _metrics(t, **kw) -> dict:
    from pyhudi.read.plan import plan_scan

    total: dict = {}
    for task in plan_scan(t, **kw).tasks:
        task.run()
        for k, v in task.metrics.items():
            total[k] = total.get(k, 0) + v
    return total


def test_pruned_read_skips_only_families_proven_redundant(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "r"), SCHEMA, "id", num_buckets=1,
                            column_families={"f1": "a,b;ts", "f2": "c", "f3": "d"})
    t.bulk_insert(pa.table({"id": ["k1", "k2"], "a": [1.0, 2.0], "b": ["x", "y"], "ts": [1, 1], "c": [10, 20], "d": ["p", "q"]}))
    # f2 and f3 hold exactly f1's keys (byte-identical key columns): not read for a read of f1's columns
    assert _metrics(t, columns=["id", "a"])["families_skipped"] == 2
    t.upsert(pa.table({"id": ["k3"], "d": ["only-d"]}))  # a key only f3 has: f3 must be read
    assert sorted(t.read(columns=["id", "a"]).to_pylist(), key=lambda r: r["id"]) == [
        {"id": "k1", "a": 1.0}, {"id": "k2", "a": 2.0}, {"id": "k3", "a": None}]
    assert _metrics(t, columns=["id", "a"])["families_skipped"] == 1  # f2 still redundant
    t.delete(pa.table({"id": ["k1"]}))  # every family gets a delete block: nothing is provably redundant
    assert _metrics(t, columns=["id", "a"]).get("families_skipped", 0) == 0
    assert sorted(r["id"] for r in t.read(columns=["id"]).to_pylist()) == ["k2", "k3"]


def test_base_only_families_are_read_side_by_side(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "l"), SCHEMA, "id", num_buckets=1,
                            column_families={"f1": "a,b;ts", "f2": "c", "f3": "d"})
    t.bulk_insert(pa.table({"id": ["k1", "k2"], "a": [1.0, 2.0], "b": ["x", "y"], "ts": [1, 1], "c": [10, 20], "d": ["p", "q"]}))
    t.upsert(pa.table({"id": ["k2"], "c": [21]}))
    metrics = _metrics(t)
    assert metrics["families_lockstep"] == 2 and metrics["strategy.sort_merge"] == 2  # f1+f3 together, f2 merged
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": "k1", "a": 1.0, "b": "x", "ts": 1, "c": 10, "d": "p"},
        {"id": "k2", "a": 2.0, "b": "y", "ts": 1, "c": 21, "d": "q"}]


def test_concurrent_writers_on_different_families(tmp_path):
    """Two writers update different families of the same keys at once; the read has both.

    Concurrent writers need the LAZY failed-writes policy (with EAGER, the default for a single
    writer, a writer rolls back any other pending instant it finds)."""
    import threading

    path = str(tmp_path / "cc")
    pyhudi.create_table(path, SCHEMA, "id", num_buckets=2, column_families={"f1": "a,b;ts", "f2": "c", "f3": "d"},
                        options={"hoodie.cleaner.policy.failed.writes": "LAZY"})
    keys = [f"k{i}" for i in range(20)]
    barrier = threading.Barrier(2)
    errors = []

    def writer(columns):
        try:
            t = pyhudi.open_table(path)
            barrier.wait()
            for round_ in range(1, 4):
                t.upsert(pa.table({"id": keys, **{c: fn(round_) for c, fn in columns.items()}}))
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=({"a": lambda r: [float(r)] * 20, "ts": lambda r: [r] * 20},)),
               threading.Thread(target=writer, args=({"c": lambda r: [100 * r + i for i in range(20)]},))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    rows = sorted(pyhudi.open_table(path).read().to_pylist(), key=lambda r: int(r["id"][1:]))
    assert rows == [{"id": f"k{i}", "a": 3.0, "b": None, "ts": 3, "c": 300 + i, "d": None} for i in range(20)]

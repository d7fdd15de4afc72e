"""Reading column-family tables: merges per family, row joins, pruning, filters, time travel."""

from __future__ import annotations

import os

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


PER_FAMILY_FILES = {"hoodie.pyhudi.insert.full.row": "false"}  # bulk inserts: one base file per family
BUCKET_0 = "00000000-0000-0000-0000-000000000000-0"


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
    # (about skipping other families' base files: one base file per family, not the default full row)
    t.bulk_insert(pa.table({"id": ["k1", "k2"], "a": [1.0, 2.0], "b": ["x", "y"], "ts": [1, 1], "c": [10, 20], "d": ["p", "q"]}),
                  options=PER_FAMILY_FILES)
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
    # (about zipping per-family base files: one base file per family, not the default full row)
    t.bulk_insert(pa.table({"id": ["k1", "k2"], "a": [1.0, 2.0], "b": ["x", "y"], "ts": [1, 1], "c": [10, 20], "d": ["p", "q"]}),
                  options=PER_FAMILY_FILES)
    t.upsert(pa.table({"id": ["k2"], "c": [21]}))
    t.upsert(pa.table({"id": ["k3"], "c": [30]}))  # a key only f2 has
    metrics = _metrics(t)
    # one wide input of the three base files; f2's logs merge into it (no family removes a row)
    assert metrics["families_lockstep"] == 3 and metrics["strategy.sort_merge"] == 1
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": "k1", "a": 1.0, "b": "x", "ts": 1, "c": 10, "d": "p"},
        {"id": "k2", "a": 2.0, "b": "y", "ts": 1, "c": 21, "d": "q"},
        {"id": "k3", "a": None, "b": None, "ts": None, "c": 30, "d": None}]
    t.upsert(pa.table({"id": ["k1"], "a": [5.0], "ts": [0]}))  # a stale f1 write (event time): a second family with logs
    metrics = _metrics(t)
    assert metrics["families_lockstep"] == 2 and metrics["strategy.sort_merge"] == 2  # f1 and f2: one of them joins
    assert t.read(columns=["id", "a", "c"], filters=[("id", "=", "k1")]).to_pylist() == [{"id": "k1", "a": 1.0, "c": 10}]
    t.delete(pa.table({"id": ["k2"]}))  # deletes in every family: no wide input
    assert _metrics(t).get("families_lockstep", 0) == 0
    assert sorted(r["id"] for r in t.read(columns=["id"]).to_pylist()) == ["k1", "k3"]


def test_concurrent_writers_on_different_families(tmp_path):
    """Two writers update different families of the same keys at once; the read has both.

    Concurrent writers need the LAZY failed-writes policy (with EAGER, the default for a single
    writer, a writer rolls back any other pending instant it finds)."""
    import threading

    path = str(tmp_path / "cc")
    # concurrent writers: failed writes are rolled back lazily (an eager writer would roll back the other)
    pyhudi.create_table(path, SCHEMA, "id", num_buckets=2, column_families={"f1": "a,b;ts", "f2": "c", "f3": "d"},
                        options={"hoodie.cleaner.policy.failed.writes": "LAZY"})
    keys = [f"k{i}" for i in range(20)]
    barrier = threading.Barrier(2)
    errors = []

    def writer(columns):
        try:
            t = pyhudi.open_table(path)
            barrier.wait()
            for round_ in range(1, 3):
                t.upsert(pa.table({"id": keys, **{c: fn(round_) for c, fn in columns.items()}}))
        except Exception as exc:  # noqa: BLE001 - any error of the thread is surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=({"a": lambda r: [float(r)] * 20, "ts": lambda r: [r] * 20},)),
               threading.Thread(target=writer, args=({"c": lambda r: [100 * r + i for i in range(20)]},))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    rows = sorted(pyhudi.open_table(path).read().to_pylist(), key=lambda r: int(r["id"][1:]))
    assert rows == [{"id": f"k{i}", "a": 2.0, "b": None, "ts": 2, "c": 200 + i, "d": None} for i in range(20)]


def test_key_only_family_with_logs_reads_only_its_logs(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "k"), SCHEMA, "id", num_buckets=1,
                            column_families={"f1": "a,b;ts", "f2": "c", "f3": "d"})
    # (about skipping family base files: one base file per family, not the default full row)
    t.bulk_insert(pa.table({"id": ["k1", "k2"], "a": [1.0, 2.0], "b": ["x", "y"], "ts": [1, 1], "c": [10, 20], "d": ["p", "q"]}),
                  options=PER_FAMILY_FILES)
    t.upsert(pa.table({"id": ["k2", "k5"], "c": [21, 50]}))  # f2: an update and a key only f2 has
    t.upsert(pa.table({"id": ["k6"], "c": [60]}))
    t.delete(pa.table({"id": ["k6"]}))  # deletes reach every family; f1's are still only its own logs
    metrics = _metrics(t, columns=["id", "a"])
    assert metrics.get("bases_skipped", 0) == 0  # f1 (the data family) has a delete: it anchors nothing
    t2 = pyhudi.create_table(str(tmp_path / "k2"), SCHEMA, "id", num_buckets=1,
                             column_families={"f1": "a,b;ts", "f2": "c", "f3": "d"})
    t2.bulk_insert(pa.table({"id": ["k1", "k2"], "a": [1.0, 2.0], "b": ["x", "y"], "ts": [1, 1], "c": [10, 20], "d": ["p", "q"]}),
                   options=PER_FAMILY_FILES)
    t2.upsert(pa.table({"id": ["k2", "k5"], "c": [21, 50]}))
    metrics = _metrics(t2, columns=["id", "a"])
    assert metrics["bases_skipped"] == 1 and metrics["families_skipped"] == 1  # f2: logs only; f3: nothing
    assert sorted(t2.read(columns=["id", "a"]).to_pylist(), key=lambda r: r["id"]) == [
        {"id": "k1", "a": 1.0}, {"id": "k2", "a": 2.0}, {"id": "k5", "a": None}]
    assert sorted(r["id"] for r in t.read(columns=["id", "a"]).to_pylist()) == ["k1", "k2", "k5"]


@pytest.mark.parametrize("seed", range(6))
def test_random_histories_read_the_same_with_every_strategy(tmp_path, seed):
    """Random commits (bulk inserts, partial and full upserts through some families, deletes):
    the streaming reader (sort-merge, lockstep, skipped families) equals the hash merge, for
    full and column-pruned reads, and the expected rows tracked here."""
    import random

    rng = random.Random(seed)
    t = pyhudi.create_table(str(tmp_path / "h"), SCHEMA, "id", num_buckets=2,
                            column_families={"f1": "a,b;ts", "f2": "c", "f3": "d"})
    expected: dict[str, dict] = {}
    groups = [["a", "b", "ts"], ["a", "b"], ["c"], ["d"], ["a", "b", "ts", "c", "d"]]
    for step in range(6):
        keys = sorted(rng.sample([f"k{i:02d}" for i in range(30)], rng.randint(1, 12)))
        if step and seed % 2 == 0 and rng.random() < 0.25:  # odd seeds: no deletes (wide inputs with logs)
            t.delete(pa.table({"id": keys}))
            for k in keys:
                expected.pop(k, None)
            continue
        cols = rng.sample(groups, rng.randint(1, 2))
        cols = sorted({c for g in cols for c in g})
        data = {"id": keys}
        for c in cols:
            if c in ("a",):
                data[c] = [float(rng.randint(0, 99)) for _ in keys]
            elif c in ("b", "d"):
                data[c] = [f"{c}{rng.randint(0, 99)}" for _ in keys]
            else:
                data[c] = [step + 1 if c == "ts" else rng.randint(0, 999) for _ in keys]
        (t.bulk_insert if step == 0 else t.upsert)(pa.table(data))
        for i, k in enumerate(keys):
            row = expected.setdefault(k, {"id": k, "a": None, "b": None, "ts": None, "c": None, "d": None})
            row.update({c: data[c][i] for c in cols})
    want = sorted(expected.values(), key=lambda r: r["id"])
    for columns in (None, ["id", "a"], ["id", "c"], ["d"]):
        names = columns or SCHEMA.names
        auto = t.read(columns=columns)
        hashed = t.read(columns=columns, strategy="hash")
        key = names[0]
        assert sorted(auto.to_pylist(), key=lambda r: r[key] or "") == sorted(hashed.to_pylist(), key=lambda r: r[key] or "")
        if columns is None or "id" in names:
            assert sorted(auto.to_pylist(), key=lambda r: r["id"]) == [{n: r[n] for n in names} for r in want]
        else:
            assert auto.num_rows == len(want)


def test_bulk_inserted_family_table_is_read_in_one_pass(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "b"), SCHEMA, "id", num_buckets=1,
                            column_families={"f1": "a,b;ts", "f2": "c", "f3": "d"})
    rows = pa.table({"id": ["k2", "k1"], "a": [2.0, 1.0], "b": ["y", "x"], "ts": [1, 1], "c": [20, 10], "d": ["q", "p"]})
    t.bulk_insert(rows)  # (by default: one full-row base file, read as it is, without a merge)
    assert sorted(os.listdir(t.path)) == [".hoodie", f"{BUCKET_0}_0-1-0_{t.last_write.instant}.parquet"]
    assert _metrics(t) == {"families_skipped": 0, "bases_skipped": 0, "row_groups": 1, "row_groups_skipped": 0,
                           "strategy.keyless": 1}
    assert t.read().sort_by("id").to_pylist() == rows.sort_by("id").to_pylist()
    per_family = pyhudi.create_table(str(tmp_path / "pf"), SCHEMA, "id", num_buckets=1,
                                     column_families={"f1": "a,b;ts", "f2": "c", "f3": "d"})
    per_family.bulk_insert(rows, options=PER_FAMILY_FILES)  # three aligned base files: zipped in one pass
    assert _metrics(per_family) == {"families_skipped": 0, "bases_skipped": 0, "row_groups": 3,
                                    "row_groups_skipped": 0, "families_lockstep": 3, "strategy.pass_through": 1}
    assert per_family.read().sort_by("id").to_pylist() == rows.sort_by("id").to_pylist()

"""Default reads of family tables written by the default insert (one full-row log file per new
file group) against the merge by key (``strategy="hash"``), on seeded random sequences of
inserts, family updates of existing keys (the shape where the insert's block leads a positional
merge and key-only families are skipped), updates adding keys, deletes and compactions. The
sequences are checked to take the positional path with a log block as lead, and to skip
key-only families, so the comparison covers those paths (the model test rarely reaches them)."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

import pyhudi
from read_helpers import POSITIONS_FAMILIES as FAMILIES
from read_helpers import POSITIONS_SCHEMA as SCHEMA
from read_helpers import fresh_metadata_cache, run_plan_tasks

pytestmark = pytest.mark.usefixtures(fresh_metadata_cache.__name__)
COLUMN_SETS = [["id", "a1", "a2"], ["id", "b"], ["id", "a1"], ["id", "a1", "a2", "b", "ts"], ["a1"]]


def _write(table: pyhudi.Table, rnd: random.Random, step: int, existing: set[int]) -> None:
    op = "update fa" if step == 1 else rnd.choice(["insert", "update fa", "update fb", "new key", "delete", "compact"])
    pool = sorted(existing) if existing and op not in ("insert", "new key") else list(range(40))
    ids = sorted(rnd.sample(pool, rnd.randint(1, min(8, len(pool)))))
    n, v = len(ids), float(step)
    key = pa.array(ids, pa.int64())
    if op == "insert":
        table.insert(pa.table({"id": key, "a1": [v] * n, "a2": [f"i{step}"] * n, "b": [v] * n,
                               "ts": pa.array([step] * n, pa.int64())}, schema=SCHEMA))
    elif op in ("update fa", "new key"):
        if op == "new key":
            ids, key, n = ids + [100 + step], pa.array(ids + [100 + step], pa.int64()), n + 1
        table.upsert(pa.table({"id": key, "a1": [v + 0.5] * n, "a2": [f"u{step}"] * n}))
    elif op == "update fb":
        table.upsert(pa.table({"id": key, "b": [v + 0.25] * n, "ts": pa.array([step] * n, pa.int64())}))
    elif op == "delete":
        table.delete(pa.table({"id": key}))
        existing.difference_update(ids)
        return
    else:
        table.compact(rnd.choice(["fa", "fb"]))
        return
    existing.update(ids)


def _sorted(rows: pa.Table) -> list[dict]:
    return rows.sort_by([(c, "ascending") for c in rows.column_names]).to_pylist()


@pytest.mark.parametrize("seed", range(12))
def test_default_reads_equal_the_merge_by_key_on_random_sequences(tmp_path, seed, fresh_metadata_cache):
    rnd = random.Random(seed)
    table = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=rnd.choice([1, 2]),
                                column_families=FAMILIES)
    ids = list(range(0, 40, 2))
    table.insert(pa.table({"id": pa.array(ids, pa.int64()), "a1": [float(i) for i in ids],
                           "a2": [f"s{i}" for i in ids], "b": [2.0 * i for i in ids],
                           "ts": pa.array([0] * len(ids), pa.int64())}, schema=SCHEMA))
    existing = set(ids)
    totals: dict[str, int] = {}
    for step in range(1, 8):
        _write(table, rnd, step, existing)
        if rnd.random() < 0.5:
            fresh_metadata_cache.clear()
        for columns in COLUMN_SETS:
            expected = _sorted(run_plan_tasks(table, columns, strategy="hash")[0])
            for _ in range(2):  # (the second run replays what the first kept)
                rows, metrics = run_plan_tasks(table, columns)
                assert _sorted(rows) == expected, (seed, step, columns)
                for name in ("strategy.positions", "families_skipped"):
                    totals[name] = totals.get(name, 0) + metrics.get(name, 0)
            assert _sorted(table.read(columns=columns)) == expected
            scanned = table.scan(columns=columns, batch_size=3)
            assert _sorted(pa.Table.from_batches(list(scanned), schema=scanned.schema)) == expected
    assert totals["strategy.positions"] > 0 and totals["families_skipped"] > 0

"""Seeded random sequences on tables written with default options (``insert`` first: full-row log
files, no base file), whose updates record their positions in the insert's block
(pyhudi/write/positions.py). Every read — latest and time travel to each earlier write — is
compared with a pure-Python model of the rows and with the merge by key (``strategy="hash"``),
on a process's first read (metadata cache emptied: positions taken from the headers) and on the
next (kept). Operations: inserts (new and existing keys), family updates, partial updates of one
family, updates adding keys, deletes, family and full compactions; string and integer keys, two
families or none."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.read.metadata_cache import METADATA_CACHE
from read_helpers import run_plan_tasks

COLUMNS = ["a1", "a2", "b"]
FAMILIES = {"fa": "a1,a2", "fb": "b"}
ALL_READS = [["id", "a1", "a2", "b"], ["id", "a1", "a2"], ["id", "a1"], ["id", "b"], ["a2"]]


def _key(i: int, key_type: pa.DataType):
    return i if key_type == pa.int64() else f"k{i:03d}"


class Model:
    """id -> {column: value} of the table's rows, as the writes define them."""

    def __init__(self, key_type: pa.DataType) -> None:
        self.rows: dict[int, dict] = {}
        self.key_type = key_type

    def write(self, ids: list[int], values: dict[str, object]) -> None:
        for i in ids:
            row = self.rows.setdefault(i, dict.fromkeys(COLUMNS))
            row.update(values)

    def expected(self, columns: list[str]) -> list[dict]:
        out = []
        for i in sorted(self.rows):
            row = {"id": _key(i, self.key_type), "p": _partition(i), **self.rows[i]}
            out.append({c: row[c] for c in columns})
        return _sorted(out)

    def snapshot(self) -> dict:
        return {i: dict(r) for i, r in self.rows.items()}


def _sorted(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: tuple((v is None, v) for v in r.values()))


def _table(tmp_path, key_type: pa.DataType, families: dict | None, buckets: int, partitioned: bool) -> pyhudi.Table:
    schema = pa.schema([("id", key_type), ("a1", pa.float64()), ("a2", pa.string()), ("b", pa.float64())]
                       + ([("p", pa.string())] if partitioned else []))
    return pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=buckets, column_families=families,
                               partition_fields=["p"] if partitioned else None)


def _partition(i: int) -> str:
    return "x" if i % 3 else "y"


def _data(table: pyhudi.Table, ids: list[int], values: dict[str, object]) -> pa.Table:
    key_type = table.schema.field("id").type
    columns = {"id": pa.array([_key(i, key_type) for i in ids], key_type)}
    if "p" in table.schema.names:
        columns["p"] = pa.array([_partition(i) for i in ids], pa.string())
    for name, value in values.items():
        columns[name] = pa.array([value] * len(ids), table.schema.field(name).type)
    return pa.table(columns)


def _step(table: pyhudi.Table, model: Model, rnd: random.Random, step: int, families: bool) -> str | None:
    existing = sorted(model.rows)
    ops = ["insert", "update fa", "partial fa", "update fb", "new keys", "delete", "compact fa", "compact fb",
           "compact full", "update all"]
    op = "update fa" if step == 1 else rnd.choice(ops)
    if not existing and op not in ("insert", "new keys"):
        op = "insert"
    if not families and op in ("compact fa", "compact fb"):
        op = "compact full"
    v = float(step)
    if op in ("insert", "new keys"):
        pool = range(60)
    else:
        pool = existing
    ids = sorted(rnd.sample(list(pool), rnd.randint(1, min(10, len(pool)))))
    if op == "new keys":
        ids = sorted(set(ids[: len(ids) // 2] if existing else ids) | {100 + step})
    if op == "insert":
        values = {"a1": v, "a2": f"i{step}", "b": v * 10}
        instant = table.insert(_data(table, ids, values))
    elif op in ("update fa", "new keys"):
        values = {"a1": v + 0.5, "a2": f"u{step}"}
        instant = table.upsert(_data(table, ids, values))
    elif op == "partial fa":
        values = {"a1": v + 0.75}
        instant = table.upsert(_data(table, ids, values))
    elif op == "update fb":
        values = {"b": v + 0.25}
        instant = table.upsert(_data(table, ids, values))
    elif op == "update all":
        values = {"a1": v + 0.125, "a2": f"w{step}", "b": v + 0.125}
        instant = table.upsert(_data(table, ids, values))
    elif op == "delete":
        instant = table.delete(_data(table, ids, {}))
        for i in ids:
            model.rows.pop(i, None)
        return instant
    else:
        family = op.split()[1]
        return table.compact(full=True) if family == "full" else table.compact(family)
    model.write(ids, values)
    return instant


def _check(table: pyhudi.Table, model_rows: list[dict], columns: list[str], totals: dict, **options) -> None:
    expected = _sorted(model_rows)
    assert _sorted(run_plan_tasks(table, columns, strategy="hash", **options)[0].to_pylist()) == expected
    for _ in range(2):  # (a first read, then one with what it kept)
        rows, metrics = run_plan_tasks(table, columns, **options)
        assert _sorted(rows.to_pylist()) == expected, (columns, options)
        for name in ("positions_written", "strategy.positions"):
            totals[name] = totals.get(name, 0) + metrics.get(name, 0)


CASES = [(seed, key_type, families, seed % 3 == 2) for seed in range(10)
         for key_type, families in [(pa.int64(), FAMILIES), (pa.string(), FAMILIES), (pa.int64(), None)]
         if seed < 6 or families is not None]


@pytest.mark.parametrize("seed,key_type,families,partitioned", CASES,
                         ids=[f"{s}-{'int' if k == pa.int64() else 'str'}-{'fam' if f else 'nofam'}{'-part' if p else ''}"
                              for s, k, f, p in CASES])
def test_random_sequences_read_as_the_model(tmp_path, seed, key_type, families, partitioned):
    rnd = random.Random(seed)
    METADATA_CACHE.clear()
    table = _table(tmp_path, key_type, families, rnd.choice([1, 2]), partitioned)
    model = Model(key_type)
    ids = sorted(rnd.sample(range(60), 30))
    values = {"a1": 0.0, "a2": "s0", "b": 0.0}
    history = [(table.insert(_data(table, ids, values)), None)]
    model.write(ids, values)
    history[0] = (history[0][0], model.snapshot())
    totals: dict = {}
    for step in range(1, 11):
        instant = _step(table, model, rnd, step, families is not None)
        if instant is not None:
            history.append((instant, model.snapshot()))
        if rnd.random() < 0.6:
            METADATA_CACHE.clear()  # (a new process: written positions are taken, not learnt)
        for columns in rnd.sample(ALL_READS + ([["p", "id", "a1", "b"]] if partitioned else []), 2):
            _check(table, model.expected(columns), columns, totals)
        instant, rows = rnd.choice(history)
        past = Model(key_type)
        past.rows = rows
        columns = rnd.choice(ALL_READS)
        _check(table, past.expected(columns), columns, totals, as_of=instant)
    # the reads took the positions the updates' writers recorded in the insert's block
    assert totals["positions_written"] > 0 and totals["strategy.positions"] > 0

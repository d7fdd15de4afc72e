"""Integer record keys: reading the key column as key codes instead of ``_hoodie_record_key``
keeps the string order, the merge results and the rows of every read the same."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyhudi
from pyhudi.read.family_reader import FamilyScan, read_family
from pyhudi.read.keys import (
    MAX_INTEGER_KEY,
    KeySpec,
    decode_keys,
    encode_keys,
    in_range_mask,
    integer_key_column,
    integer_keys,
    key_text,
    strictly_increasing,
    text_keys,
)
from pyhudi.read.merge import Versions, merge_versions
from pyhudi.read.sources import MemoryInput, slice_versions

EDGES = [0, 1, 9, 10, 11, 99, 100, 101, 19, 2, 10**16, 10**16 - 1, MAX_INTEGER_KEY - 1, 12345678901234567 % MAX_INTEGER_KEY]


def test_key_codes_sort_like_the_spellings_and_decode_back():
    rng = np.random.default_rng(3)
    values = np.unique(np.concatenate([rng.integers(0, MAX_INTEGER_KEY, 2000), rng.integers(0, 5000, 2000),
                                       np.array(EDGES, dtype=np.int64)]))
    codes = encode_keys(pa.array(values))
    by_spelling = sorted(values.tolist(), key=str)
    assert codes.take(pa.array(np.argsort(np.asarray(codes), kind="stable"))).to_pylist() == \
        encode_keys(pa.array(by_spelling)).to_pylist()
    assert decode_keys(codes).to_pylist() == values.tolist()
    assert text_keys(codes).to_pylist() == [str(v) for v in values]
    assert [key_text(codes[i]) for i in range(5)] == [str(v) for v in values[:5]]
    assert strictly_increasing(encode_keys(pa.array(by_spelling, pa.int32() if max(by_spelling) < 2**31 else pa.int64())))
    assert not strictly_increasing(encode_keys(pa.array([2, 10])))  # "10" < "2"
    assert strictly_increasing(encode_keys(pa.array([1, 10, 100, 11, 2], pa.uint16())))
    assert not strictly_increasing(encode_keys(pa.array([1, 10, 10])))


def test_key_codes_with_known_bounds_are_the_same_codes():
    """Bounds from statistics (any that hold, tight or not) replace the min/max pass."""
    rng = np.random.default_rng(5)
    for values in (rng.integers(0, 200_000, 5000), np.array(EDGES, dtype=np.int64), np.array([7, 8, 9])):
        expected = encode_keys(pa.array(values)).to_pylist()
        low, high = int(values.min()), int(values.max())
        assert encode_keys(pa.array(values), (low, high)).to_pylist() == expected
        assert encode_keys(pa.array(values), (0, MAX_INTEGER_KEY - 1)).to_pylist() == expected
        assert encode_keys(pa.chunked_array([values[:2], values[2:]]), (low, high)).to_pylist() == expected


def test_only_canonical_spellings_in_range_have_key_codes():
    strings = pa.array(["12", "0", "-7", "-0", "007", "1e3", "x", None, "", "99999999999999999",
                        "100000000000000000", " 5"])
    codes, canonical = integer_keys(strings)
    assert canonical.tolist() == [True, True, False, False, False, False, False, False, False, True, False, False]
    assert decode_keys(codes.filter(pa.array(canonical))).to_pylist() == [12, 0, MAX_INTEGER_KEY - 1]


def test_integer_key_column_needs_one_integer_field_and_a_simple_key_generator():
    schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("u", pa.uint64()), ("i", pa.int32())])
    assert integer_key_column(["u"], schema, "SIMPLE", None) == "u"  # files prove the values fit
    assert integer_key_column(["id"], schema, "SIMPLE", None) == "id"
    assert integer_key_column(["i"], schema, "NON_PARTITION", None) == "i"
    assert integer_key_column(["id"], schema, None, "org.apache.hudi.keygen.NonpartitionedKeyGenerator") == "id"
    assert integer_key_column(["id"], schema, None, None) == "id"
    assert integer_key_column(["id"], schema, "COMPLEX", None) is None  # Hudi may spell it "id:5"
    assert integer_key_column(["id"], schema, None, "org.apache.hudi.keygen.ComplexKeyGenerator") is None
    assert integer_key_column(["id"], schema, "TIMESTAMP", None) is None
    assert integer_key_column(["s"], schema, "SIMPLE", None) is None
    assert integer_key_column(["id", "i"], schema, "COMPLEX", None) is None


def test_delete_blocks_drop_keys_no_integer_row_can_have():
    deletes = MemoryInput(Versions(pa.array(["5", "007", "x", "30", "-3"]), None, True, None,
                                   pa.array([True, True, True, True, True])), "d")
    converted = deletes.with_keys(KeySpec(("id",), True, "id"))
    assert text_keys(converted.versions.keys).to_pylist() == ["5", "30"]
    assert converted.versions.default_delete.to_pylist() == [True, True]
    data = MemoryInput(Versions(pa.array(["5", "id:6"]), pa.table({"a": [1, 2]}), False), "a")
    assert data.with_keys(KeySpec(("id",), True, "id")) is None  # a record whose key is no integer


def test_range_masks_compare_integer_keys_by_spelling():
    keys = encode_keys(pa.array([1, 10, 100, 2, 25, 3], pa.int64()))
    assert in_range_mask(keys, "10", "25", high_inclusive=True).to_pylist() == [False, True, True, True, True, False]
    assert in_range_mask(keys, None, "2").to_pylist() == [True, True, True, False, False, False]
    assert in_range_mask(keys, "100", None).to_pylist() == [False, False, True, True, True, True]
    # bounds that spell no integer compare as text
    assert in_range_mask(keys, "10a", "3").to_pylist() == [False, False, False, True, True, False]


POOL = [0, 1, 7, 10, 12, 100, 123, 1000, 2**40, 99, 9, 19, 2]
FIELDS = [pa.field("a", pa.int64()), pa.field("ts", pa.int64())]


@st.composite
def integer_blocks(draw):
    out = []
    for _ in range(draw(st.integers(1, 5))):
        keys = sorted(draw(st.sets(st.sampled_from(POOL), min_size=1, max_size=9)), key=str)
        n = len(keys)
        kind = draw(st.sampled_from(["full", "full", "partial", "delete"]))
        if kind == "delete":
            ordering = pa.array(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), pa.int64())
            out.append(Versions(encode_keys(pa.array(keys, pa.int64())), None, True, ordering,
                                pa.array([v == 0 for v in ordering.to_pylist()])))
            continue
        ts = pa.array(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), pa.int64())
        a = pa.array(draw(st.lists(st.integers(0, 99), min_size=n, max_size=n)), pa.int64())
        data = pa.table({"a": a, "ts": ts}) if kind == "full" else pa.table({"a": a})
        out.append(Versions(encode_keys(pa.array(keys, pa.int64())), data, False, ts if kind == "full" else None))
    return out


class _Batches(MemoryInput):
    def __init__(self, versions: Versions, size: int) -> None:
        super().__init__(versions, "test")
        self.size = size

    def chunks(self, batch_size, verify=True):
        n = len(self.versions.keys)
        for s in range(0, n, self.size):
            yield slice_versions(self.versions, s, min(s + self.size, n))


def _as_strings(v: Versions) -> Versions:
    return Versions(text_keys(v.keys), v.data, v.is_delete, v.ordering, v.default_delete)


@settings(max_examples=120, deadline=None)
@given(integer_blocks(), st.booleans(), st.integers(1, 4))
def test_sort_merge_on_integer_keys_equals_hash_merge_on_strings(pieces, event_time, size):
    scan = FamilyScan("f", tuple(FIELDS), event_time, "ts", pa.int64())
    expected = merge_versions([_as_strings(p) for p in pieces], FIELDS, event_time, pa.int64())
    streamed = list(read_family([_Batches(p, size) for p in pieces], scan, size, need_sorted=True))
    got = pa.concat_tables(streamed) if streamed else None
    rows = [] if got is None else [dict(r, _key=key_text(pa.scalar(r["_key"]))) for r in got.to_pylist()]
    assert rows == expected.to_pylist()


INT_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.float64()), ("ts", pa.int64()),
                        ("c", pa.int64()), ("d", pa.string())])


def _task_metrics(t, **kw) -> dict:
    plan = t.plan_scan(**kw)
    total: dict = {}
    for task in plan.tasks:
        task.run()
        for k, v in task.metrics.items():
            total[k] = total.get(k, 0) + v
    return total


@pytest.mark.parametrize("seed", range(4))
def test_integer_key_table_reads_the_same_as_string_keys(tmp_path, seed):
    """Random histories on an int64-keyed family table (keys of mixed lengths and signs, whose
    string order is not their numeric order): inserts through logs, partial updates, deletes."""
    rng = random.Random(seed)
    t = pyhudi.create_table(str(tmp_path / "i"), INT_SCHEMA, "id", num_buckets=2,
                            column_families={"f1": "a;ts", "f2": "c", "f3": "d"})
    pool = [0, 1, 2, 9, 10, 11, 19, 100, 101, 999, 1000, 12345, 2**50]
    expected: dict[int, dict] = {}
    groups = [["a", "ts"], ["a"], ["c"], ["d"], ["a", "ts", "c", "d"]]
    for step in range(6):
        keys = sorted(rng.sample(pool, rng.randint(1, 9)))
        if step and rng.random() < 0.3:
            t.delete(pa.table({"id": pa.array(keys, pa.int64())}))
            for k in keys:
                expected.pop(k, None)
            continue
        cols = sorted({c for g in rng.sample(groups, rng.randint(1, 2)) for c in g})
        data = {"id": pa.array(keys, pa.int64())}
        for c in cols:
            data[c] = ([float(rng.randint(0, 99)) for _ in keys] if c == "a" else
                       [f"d{rng.randint(0, 99)}" for _ in keys] if c == "d" else
                       [step + 1 if c == "ts" else rng.randint(0, 999) for _ in keys])
        (t.bulk_insert if step == 0 else t.upsert)(pa.table(data))
        for i, k in enumerate(keys):
            row = expected.setdefault(k, {"id": k, "a": None, "ts": None, "c": None, "d": None})
            row.update({c: data[c][i].as_py() if c == "id" else data[c][i] for c in cols})
    want = sorted(expected.values(), key=lambda r: r["id"])
    assert _task_metrics(t).get("integer_keys") == len(t.plan_scan().tasks)
    for columns in (None, ["id", "a"], ["c"], ["id", "d"]):
        names = columns or INT_SCHEMA.names
        auto = t.read(columns=columns)
        hashed = t.read(columns=columns, strategy="hash")
        assert auto.schema == hashed.schema
        key = names[0]
        assert sorted(auto.to_pylist(), key=lambda r: (r[key] is None, r[key] or 0)) == \
            sorted(hashed.to_pylist(), key=lambda r: (r[key] is None, r[key] or 0))
        if "id" in names:
            assert sorted(auto.to_pylist(), key=lambda r: r["id"]) == [{n: r[n] for n in names} for r in want]
        else:
            assert auto.num_rows == len(want)
    with_meta = t.read(with_meta=True)
    assert all(r["_hoodie_record_key"] == str(r["id"]) for r in with_meta.to_pylist())


def test_batches_of_one_file_group_keep_the_string_order(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "o"), INT_SCHEMA, "id", num_buckets=1,
                            column_families={"f1": "a;ts", "f2": "c,d"})
    ids = [5, 40, 300, 2000, 7, 1]
    t.bulk_insert(pa.table({"id": pa.array(ids, pa.int64()), "a": [1.0] * 6, "ts": [1] * 6, "c": list(range(6)),
                            "d": ["x"] * 6}))
    t.upsert(pa.table({"id": pa.array([41, 3], pa.int64()), "a": [2.0, 3.0], "ts": [2, 2]}))
    got = t.read(columns=["id", "a", "c"])
    assert got.column("id").to_pylist() == sorted([*ids, 41, 3], key=str)
    assert got.to_pylist()[got.column("id").to_pylist().index(41)] == {"id": 41, "a": 2.0, "c": None}


def test_keys_without_codes_are_read_as_strings(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "n"), INT_SCHEMA, "id", num_buckets=1,
                            column_families={"f1": "a;ts", "f2": "c,d"})
    t.bulk_insert(pa.table({"id": pa.array([-5, 3, 10], pa.int64()), "a": [1.0, 2.0, 3.0], "ts": [1, 1, 1],
                            "c": [1, 2, 3], "d": ["x", "y", "z"]}))
    t.upsert(pa.table({"id": pa.array([-5, 4], pa.int64()), "c": [50, 40]}))
    assert "integer_keys" not in _task_metrics(t)  # -5 has no key code
    assert t.read(columns=["id", "a", "c"]).to_pylist() == [
        {"id": -5, "a": 1.0, "c": 50}, {"id": 10, "a": 3.0, "c": 3}, {"id": 3, "a": 2.0, "c": 2},
        {"id": 4, "a": None, "c": 40}]


@pytest.mark.parametrize("strategy", ["auto", "hash"])
def test_plain_table_with_keys_that_have_no_code_reads_them_as_strings(tmp_path, strategy):
    """Negative and 18-digit keys have no key code: every input then reads string keys (the
    inputs are built with string keys and switch to codes only when all of them can)."""
    schema = pa.schema([("id", pa.int64()), ("v", pa.float64())])
    t = pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=1)
    ids = [-5, -1, 0, 3, 12, 10**17 + 5, -(10**18)]
    t.bulk_insert(pa.table({"id": pa.array(ids, pa.int64()), "v": [float(i) for i in range(len(ids))]}))
    t.upsert(pa.table({"id": pa.array([-1, 12, 10**17 + 5], pa.int64()), "v": [100.0, 200.0, 300.0]}))
    assert "integer_keys" not in _task_metrics(t)
    assert t.read(strategy=strategy).sort_by("id").to_pylist() == [
        {"id": -(10**18), "v": 6.0}, {"id": -5, "v": 0.0}, {"id": -1, "v": 100.0}, {"id": 0, "v": 2.0},
        {"id": 3, "v": 3.0}, {"id": 12, "v": 200.0}, {"id": 10**17 + 5, "v": 300.0}]

"""Bucket index: Java-compatible String/List hashCode, vectorised over Arrow arrays."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyhudi.errors import SchemaError
from pyhudi.index.bucket import (
    bucket_ids,
    bucket_of_key,
    java_list_hash,
    java_string_hash,
    java_string_hash_scalar,
)


def test_known_java_string_hashes():
    values = ["hello", "Aa", "BB", "polygenelubricants", ""]
    assert java_string_hash(pa.array(values)).tolist() == [99162322, 2112, 2112, -2147483648, 0]
    assert [java_string_hash_scalar(v) for v in values] == [99162322, 2112, 2112, -2147483648, 0]


def test_non_ascii_uses_utf16_code_units():
    # "é" is one UTF-16 unit (233); "😀" is a surrogate pair 0xD83D 0xDE00
    assert java_string_hash(pa.array(["é"])).tolist() == [233]
    assert java_string_hash(pa.array(["😀"])).tolist() == [0xD83D * 31 + 0xDE00]
    values = ["日本語", "ключ-7", "a😀b😀", "x\u0000y", "ÿ"]
    assert java_string_hash(pa.array(values)).tolist() == [java_string_hash_scalar(v) for v in values]
    assert java_string_hash(pa.array(["日本語"])).tolist() == [25921943]


def test_list_hash_and_bucket_of_single_key():
    # List.hashCode(["hello"]) = 31 + 99162322
    assert java_list_hash([pa.array(["hello"])]).tolist() == [99162353]
    assert bucket_ids(pa.array(["hello"]), 7).tolist() == [99162353 % 7]
    # sign bit cleared, not abs(): "polygenelubricants" → 31 + MIN_INT
    h = (-2147483648 + 31) & 0x7FFFFFFF
    assert bucket_ids(pa.array(["polygenelubricants"]), 10).tolist() == [h % 10]


def test_multi_field_list_hash():
    h = ((31 * (31 + 2112)) + 99162322) & 0xFFFFFFFF
    h = h - (1 << 32) if h >= (1 << 31) else h
    assert java_list_hash([pa.array(["Aa"]), pa.array(["hello"])]).tolist() == [h]
    assert bucket_of_key(["Aa", "hello"], 16) == (h & 0x7FFFFFFF) % 16


def test_integers_hash_as_decimal_strings():
    ints = pa.array([0, 7, -12, 1234567890123], type=pa.int64())
    strs = pa.array(["0", "7", "-12", "1234567890123"])
    assert java_string_hash(ints).tolist() == java_string_hash(strs).tolist()
    assert bucket_ids(pa.array([5], pa.int32()), 4).tolist() == bucket_ids(pa.array(["5"]), 4).tolist()


def test_nulls_slices_chunks_and_large_strings():
    arr = pa.array(["a", None, "hello", "", "Aa"])
    assert java_string_hash(arr).tolist() == [97, 0, 99162322, 0, 2112]
    assert java_string_hash(arr.slice(2, 2)).tolist() == [99162322, 0]
    chunked = pa.chunked_array([["a"], ["hello", "Aa"]])
    assert java_string_hash(chunked).tolist() == [97, 99162322, 2112]
    assert java_string_hash(pa.array(["hello"], pa.large_string())).tolist() == [99162322]
    assert java_string_hash(pa.array(["hello"]).dictionary_encode()).tolist() == [99162322]


def test_bad_inputs():
    with pytest.raises(SchemaError, match="positive integer"):
        bucket_ids(pa.array(["a"]), 0)
    with pytest.raises(SchemaError, match="string and integer key columns, not double"):
        bucket_ids(pa.array([1.5]), 4)


@given(st.lists(st.text(), max_size=50), st.integers(min_value=1, max_value=1000))
def test_vectorised_equals_scalar_reference(values, n):
    got = java_string_hash(pa.array(values, pa.string()))
    assert got.tolist() == [java_string_hash_scalar(v) for v in values]
    buckets = bucket_ids(pa.array(values, pa.string()), n)
    expected = [((31 + java_string_hash_scalar(v)) & 0x7FFFFFFF) % n for v in values]
    assert buckets.tolist() == expected
    assert buckets.dtype == np.int32


def test_ascii_keys_of_close_lengths_hash_like_java():
    """The left-padded path (keys of a few different lengths) — leading NULs, nulls, slices."""
    keys = [str(i) for i in range(0, 30_000, 7)] + ["\x00a", "a", "", None, "zz"]
    expected = [0 if k is None else java_string_hash_scalar(k) for k in keys]
    for arr in (pa.array(keys), pa.array(keys, pa.large_string()), pa.array(["head", *keys]).slice(1)):
        assert java_string_hash(arr).tolist() == expected
    assert java_string_hash_scalar("\x00a") == java_string_hash_scalar("a") == 97


def test_integer_keys_at_digit_boundaries_hash_as_their_decimal_strings():
    """Integer keys (hashed through their decimal strings, the record keys): 0, 10**k - 1 / 10**k
    boundaries, negative and extreme values, in one column and as fixed-width (one length) keys."""
    values = [0, 1, 9, 10, 11, 99, 100, 999, 1000, 10**9 - 1, 10**9, 2**31 - 1, 2**31, 10**17, 10**18,
              2**63 - 1, -1, -9, -10, -(2**63)]
    expected = [java_string_hash_scalar(str(v)) for v in values]
    assert java_string_hash(pa.array(values, pa.int64())).tolist() == expected
    assert bucket_ids(pa.array(values, pa.int64()), 7).tolist() == [((31 + h) & 0x7FFFFFFF) % 7 for h in expected]
    same_width = [str(v) for v in range(100_000, 100_500)]  # one length: the fixed-width path
    assert java_string_hash(pa.array(same_width)).tolist() == [java_string_hash_scalar(v) for v in same_width]
    assert java_string_hash(pa.array(["7"])).tolist() == [55]
    assert java_string_hash(pa.array([], pa.int64())).tolist() == []
    assert bucket_ids(pa.array([], pa.string()), 4).tolist() == []


def test_bucket_ids_of_several_columns_equal_the_list_hash():
    a, b = pa.array(["x", "", None, "long key"]), pa.array([1, 22, 333, -4])
    list_hashes = [31 * (31 + java_string_hash_scalar(x or "") * (x is not None)) + java_string_hash_scalar(str(y))
                   for x, y in zip(["x", "", None, "long key"], [1, 22, 333, -4])]
    expected = [((h & 0xFFFFFFFF) & 0x7FFFFFFF) % 5 for h in list_hashes]
    assert bucket_ids([a, b], 5).tolist() == expected


def test_hashes_walked_in_row_blocks_equal_the_reference(monkeypatch):
    from pyhudi.index import bucket

    monkeypatch.setattr(bucket, "_HORNER_ROWS", 3)  # (blocks of 3 rows: partial last blocks too)
    for keys in ([str(i) for i in range(95, 112)], [f"{i:05d}" for i in range(17)], ["a", "bb", "ccc", "", "dd"]):
        assert java_string_hash(pa.array(keys)).tolist() == [java_string_hash_scalar(k) for k in keys]


def test_many_rows_are_hashed_in_two_halves_with_the_same_buckets(monkeypatch):
    from pyhudi.index import bucket

    monkeypatch.setattr(bucket, "SPLIT_ROWS", 4)
    keys = [str(i) for i in range(0, 2000, 37)] + ["é", "", "x" * 40]
    expected = [((31 + java_string_hash_scalar(k)) & 0x7FFFFFFF) % 9 for k in keys]
    n = len(keys)
    for column in (pa.array(keys), pa.chunked_array([pa.array(keys[:n // 2 + 1]), pa.array(keys[n // 2 + 1:])]),
                   pa.chunked_array([pa.array(keys[:3]), pa.array(keys[3:])])):
        assert bucket_ids([column], 9).tolist() == expected
    two = [pa.array(keys), pa.array(range(n))]
    assert bucket_ids(two, 9).tolist() == bucket._bucket_ids(two, 9).tolist()
    assert bucket.split_point(pa.chunked_array([pa.array(keys[:n // 2 + 1]), pa.array(keys[n // 2 + 1:])])) == n // 2 + 1
    assert bucket.split_point(pa.chunked_array([pa.array(keys[:3]), pa.array(keys[3:])])) == n // 2


def test_integer_keys_and_bucket_ids_in_one_step_equal_the_keys_and_buckets_built_apart():
    """The record keys (decimal strings) and bucket ids of a one-field integer key, computed in
    one step on two cores, are those of ``record_keys`` then ``bucket_ids``: every value, each
    half one chunk, sliced and chunked inputs, negative and extreme values, nulls hashing to 0."""
    from pyhudi.index.bucket import integer_keys_and_bucket_ids
    from pyhudi.keygen import record_keys

    rng = np.random.default_rng(7)
    values = np.concatenate([rng.integers(-10**15, 10**15, 501), [0, -1, 9, 10, 2**63 - 1, -2**63]])
    columns = {
        "int64": pa.array(values),
        "sliced": pa.array(values).slice(5, 400),
        "chunked": pa.chunked_array([pa.array(values[:100]), pa.array(values[100:])]),
        "int8": pa.array(rng.integers(-128, 128, 77).astype(np.int8)),
        "uint32": pa.array(rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)),
        "nulls": pa.array([5, None, -3, None, 12]),
        "one": pa.array([42]),
    }
    for name, column in columns.items():
        keys, ids = integer_keys_and_bucket_ids(column, 7)
        expected = record_keys(pa.table({"k": column}), ["k"])
        assert keys.type == pa.string() and keys.to_pylist() == expected.to_pylist(), name
        assert ids.dtype == np.int32 and ids.tolist() == bucket_ids([expected], 7).tolist(), name
        assert keys.num_chunks <= 2 + (column.num_chunks if isinstance(column, pa.ChunkedArray) else 0)
    keys, ids = integer_keys_and_bucket_ids(pa.array([], pa.int64()), 3)
    assert len(keys) == 0 and keys.type == pa.string() and ids.tolist() == []
    assert integer_keys_and_bucket_ids(pa.array([-12]), 5)[0].to_pylist() == ["-12"]
    assert integer_keys_and_bucket_ids(pa.array([-12]), 5)[1].tolist() == [
        ((31 + java_string_hash_scalar("-12")) & 0x7FFFFFFF) % 5]
    with pytest.raises(SchemaError, match="number of buckets must be a positive integer, got 0"):
        integer_keys_and_bucket_ids(pa.array([1]), 0)

"""Sequence numbers built straight into Arrow buffers equal the slow construction
(``f"{prefix}{i}"``: Arrow's cast of ``0..n-1`` joined to the prefix)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pyhudi.write import meta_values
from pyhudi.write.meta_values import sequence_numbers
from pyhudi.write.prepare import empty_strings


def _slow(prefix: str, n: int) -> pa.Array:
    return pc.binary_join_element_wise(prefix, pc.cast(pa.array(np.arange(n, dtype=np.int64)), pa.string()), "")


@pytest.mark.parametrize("n", [0, 1, 2, 9, 10, 11, 99, 100, 101, 999, 1000, 1001, 10_000, 12_345, 100_000, 100_001])
def test_sequence_numbers_equal_the_joined_cast(n):
    got = sequence_numbers("20261124120000123_3_", n)
    got.validate(full=True)
    assert got.type == pa.string()
    assert got.equals(_slow("20261124120000123_3_", n))


def test_sequence_numbers_edges():
    assert sequence_numbers("i_0_", 0).to_pylist() == []
    assert sequence_numbers("i_0_", 1).to_pylist() == ["i_0_0"]
    assert sequence_numbers("", 12).to_pylist() == [str(i) for i in range(12)]
    assert sequence_numbers("é_", 11).to_pylist() == [f"é_{i}" for i in range(11)]  # (a multi-byte prefix)
    tail = sequence_numbers("20261124120000123_17_", 1_000_001)
    assert tail[999_999].as_py() == "20261124120000123_17_999999"
    assert tail[1_000_000].as_py() == "20261124120000123_17_1000000"


def test_sequence_numbers_beyond_int32_offsets_take_arrow_kernels(monkeypatch):
    monkeypatch.setattr(meta_values, "_MAX_OFFSET", 50)  # (as if the data outgrew a string array's offsets)
    got = sequence_numbers("abc_", 20)
    assert got.equals(_slow("abc_", 20))


@pytest.mark.parametrize("n", [0, 1, 7])
def test_empty_strings(n):
    got = empty_strings(n)
    got.validate(full=True)
    assert got.equals(pa.array([""] * n, pa.string()))

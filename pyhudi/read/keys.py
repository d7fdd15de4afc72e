"""Record keys as the read path holds them: strings, or integer codes in string order.

Hudi orders and compares record keys as strings (``_hoodie_record_key``), and pyhudi writes
every base file and data block sorted by that string. When a table's record key is one integer
column written by a simple key generator, every record key is the decimal spelling of that
column's value (``str(id)``). Reading the integer column instead of the strings is then the
same data for less work: an int64 column decodes faster than a string column, and joins become
binary searches instead of hash lookups.

The inputs are sorted by the *spelling*, though (``"10" < "9"``), so integer keys are held as
*key codes*: an int64 per key whose numeric order is the order of the spellings. For a key
``k`` with ``d`` digits (``0 <= k < 10**17``), ``code = k * 10**(17 - d) * 32 + d`` — the digits
left-aligned, then the length, so a spelling that is a prefix of another (``1``, ``10``) sorts
first. Codes are exact and invertible (:func:`decode_keys`), and sort, compare and search as
plain integers. Keys outside that range (negative, or 18+ digits) are read as strings.

A read task switches to codes only when every input can supply them (:mod:`pyhudi.read.task`):
Parquet files prove it by the key column's statistics (no nulls, values in range); blocks read
whole (Avro data, deletes) carry string keys, converted by :func:`integer_keys`, which proves
each string is the canonical spelling of its integer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from pyhudi.lazy import pc
from pyhudi.schema import META_FIELDS
from pyhudi.keygen import record_keys
from pyhudi.value import Value

RECORD_KEY = META_FIELDS[2]

SIMPLE_KEYGENS = frozenset({"", "SIMPLE", "NON_PARTITION", "NONPARTITIONED"})
"""Key generator types whose record key, for one field, is the field's value as a string."""
_SIMPLE_KEYGEN_CLASSES = frozenset({"SimpleKeyGenerator", "SimpleAvroKeyGenerator", "NonpartitionedKeyGenerator",
                                    "NonpartitionedAvroKeyGenerator"})

MAX_INTEGER_KEY = 10**17
"""Integer keys from 0 up to (not including) this have key codes."""
_POWERS = np.array([10**k for k in range(1, 18)], dtype=np.int64)  # 10 .. 10^17
_SCALE = np.array([10 ** max(0, 17 - d) for d in range(19)], dtype=np.int64)  # by digit count
_SHIFTED_SCALE = _SCALE << 5


class KeySpec(Value):
    """How record keys are obtained: ``_hoodie_record_key``, built from the key columns, or
    (``integer`` set) the single integer key column itself."""

    fields: tuple[str, ...]
    populate_meta: bool
    integer: str | None = None

    def __init__(self, fields: tuple[str, ...], populate_meta: bool, integer: str | None = None) -> None:
        self._set(fields=fields, populate_meta=populate_meta, integer=integer)

    def columns(self, available: Sequence[str]) -> list[str]:
        if self.integer is not None:
            return [self.integer] if self.integer in available else []
        if self.populate_meta and RECORD_KEY in available:
            return [RECORD_KEY]
        return [c for c in self.fields if c in available]

    def keys(self, table: pa.Table, bounds: tuple[int, int] | None = None) -> pa.Array:
        """The record keys of ``table``'s rows (``bounds``: known lowest and highest integer key,
        e.g. from Parquet statistics, saving a pass over them)."""
        if self.integer is not None:
            return encode_keys(table.column(self.integer), bounds)
        if self.populate_meta and RECORD_KEY in table.column_names:
            column = table.column(RECORD_KEY)
        else:
            column = record_keys(table, self.fields)
        array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        return array if array.type == pa.string() else array.cast(pa.string())

    def stats_column(self, available: Sequence[str], schema: pa.Schema) -> str | None:
        """A file column whose statistics bound the record keys (string order), if any."""
        if RECORD_KEY in available:
            return RECORD_KEY
        single = self.fields[0] if len(self.fields) == 1 else None
        if single in available and single in schema.names and pa.types.is_string(schema.field(single).type):
            return single
        return None

def integer_key_column(fields: Sequence[str], schema: pa.Schema, keygen_type: str | None,
                       keygen_class: str | None) -> str | None:
    """The key column whose values spell every record key, if the table has one: a single
    integer key field and a simple key generator."""
    if len(fields) != 1 or fields[0] not in schema.names or not pa.types.is_integer(schema.field(fields[0]).type):
        return None
    if keygen_type is not None:
        simple = keygen_type.upper() in SIMPLE_KEYGENS
    else:
        simple = keygen_class is None or keygen_class.rsplit(".", 1)[-1] in _SIMPLE_KEYGEN_CLASSES
    return fields[0] if simple else None


# ----------------------------------------------------------------------------- key codes
def encode_keys(values: pa.Array | pa.ChunkedArray, bounds: tuple[int, int] | None = None) -> pa.Array:
    """Key codes of integer keys in ``[0, MAX_INTEGER_KEY)`` (see the module docstring);
    ``bounds``: a lowest and a highest value if known (any bounds that hold, within that range).

    The codes are written into a buffer of Arrow's memory pool, which reuses freed memory: a
    fresh NumPy array of that size would fault in new pages on every read.
    """
    values = single_array(values)
    if values.type != pa.int64():
        values = values.cast(pa.int64())
    k = np.asarray(values, dtype=np.int64)
    n = len(k)
    if not n:
        return pa.array(k)
    buffer = pa.allocate_buffer(n * 8)
    codes = np.frombuffer(buffer, dtype=np.int64)
    smallest, largest = bounds if bounds is not None else (k.min(), k.max())
    low = int(np.searchsorted(_POWERS, smallest, side="right"))  # digits of the smallest key, minus one
    high = int(np.searchsorted(_POWERS, largest, side="right"))
    if low == high:  # every key has the same number of digits: one multiply
        np.multiply(k, int(_SCALE[low + 1]) << 5, out=codes)
        codes += low + 1
        return pa.Array.from_buffers(pa.int64(), n, [None, buffer])
    digits = np.full(n, low + 1, dtype=np.intp)
    at_least = np.empty(n, dtype=bool)
    for power in _POWERS[low:high]:  # one pass per digit count the keys span
        np.greater_equal(k, power, out=at_least)
        digits += at_least
    np.take(_SHIFTED_SCALE, digits, out=codes)
    codes *= k
    codes += digits
    return pa.Array.from_buffers(pa.int64(), n, [None, buffer])


def single_array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``column`` as one array: its only chunk as is (``combine_chunks`` copies even that)."""
    if isinstance(column, pa.ChunkedArray):
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return column


def decode_keys(codes: pa.Array) -> pa.Array:
    """The integer keys of key codes."""
    c = np.asarray(codes, dtype=np.int64)
    return pa.array((c >> 5) // _SCALE[c & 31])


def key_text(scalar: pa.Scalar) -> str:
    """A key as the string it stands for (the bound of a merge window)."""
    value = scalar.as_py()
    if isinstance(value, str):
        return value
    return str((value >> 5) // 10 ** (17 - (value & 31)))


def text_keys(keys: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """The keys as strings (key codes decoded)."""
    if pa.types.is_string(keys.type):
        return keys
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    return decode_keys(keys).cast(pa.string())


def order_indices(keys: pa.Array) -> pa.Array:
    """Indices that sort ``keys`` (strings, or key codes: both in string order)."""
    return pc.sort_indices(keys)


def sorted_keys(keys: pa.Array) -> pa.Array:
    return keys.take(order_indices(keys))


def strictly_increasing(keys: pa.Array) -> bool:
    n = len(keys)
    if n <= 1:
        return True
    if pa.types.is_int64(keys.type):
        c = np.asarray(keys, dtype=np.int64)
        return bool((c[1:] > c[:-1]).all())
    return bool(pc.all(pc.less(keys.slice(0, n - 1), keys.slice(1))).as_py())


def integer_keys(keys: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """String keys → (key codes, mask of the strings that are the canonical spelling of an
    integer in ``[0, MAX_INTEGER_KEY)``). Keys outside the mask (``"007"``, ``"-1"``, ``"x"``,
    nulls) have no code; their code is that of 0."""
    keys = text_keys(keys)
    if not len(keys):
        return pa.array([], pa.int64()), np.zeros(0, dtype=bool)
    digits_only = pc.fill_null(pc.match_substring_regex(keys, r"^(0|[1-9][0-9]{0,16})$"), False)
    valid = np.asarray(digits_only, dtype=bool)
    candidates = pc.if_else(pa.array(valid), keys, "0")
    return encode_keys(candidates.cast(pa.int64())), valid


def in_range_mask(keys: pa.Array, low: str | None, high: str | None, high_inclusive: bool = False) -> pa.Array:
    """Keys whose spelling lies in ``[low, high)`` (``[low, high]``; None: unbounded). Key codes
    compare as codes when the bounds have codes (every key of a table read with codes does)."""
    if pa.types.is_int64(keys.type):
        bounds = [b for b in (low, high) if b is not None]
        codes, canonical = integer_keys(pa.array(bounds, pa.string()))
        if canonical.all():
            c = np.asarray(keys, dtype=np.int64)
            mask = np.ones(len(c), dtype=bool)
            at = iter(np.asarray(codes, dtype=np.int64))
            if low is not None:
                mask &= c >= next(at)
            if high is not None:
                upper = next(at)
                mask &= (c <= upper) if high_inclusive else (c < upper)
            return pa.array(mask)
    text = text_keys(keys)
    mask = None
    if low is not None:
        mask = pc.greater_equal(text, low)
    if high is not None:
        upper = pc.less_equal(text, high) if high_inclusive else pc.less(text, high)
        mask = upper if mask is None else pc.and_(mask, upper)
    return mask if mask is not None else pa.array(np.ones(len(keys), dtype=bool))

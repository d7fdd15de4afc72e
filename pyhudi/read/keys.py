"""Record keys as the read path holds them: strings, or the integers they spell.

Hudi orders and compares record keys as strings (``_hoodie_record_key``), and pyhudi writes
every base file and data block sorted by that string. When a table's record key is one integer
column written by a simple key generator, every record key is the decimal spelling of that
column's value (``str(id)``). Reading the integer column instead of the strings is then the
same data for less work: an int64 column decodes faster than a string column and hashes
faster in joins. The order stays the string order — the inputs are sorted that way — so every
comparison of integer keys here compares their spellings (:func:`order_indices`,
:func:`strictly_increasing`, :func:`key_text`), never their values.

A read task switches to integer keys only when every input can supply them
(:mod:`pyhudi.read.task`); delete blocks, which carry only strings, are converted by
:func:`integer_keys`, which proves each string is the canonical spelling of its integer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.schema import META_FIELDS
from pyhudi.write.prepare import record_keys

RECORD_KEY = META_FIELDS[2]

SIMPLE_KEYGENS = frozenset({"", "SIMPLE", "NON_PARTITION", "NONPARTITIONED"})
"""Key generator types whose record key, for one field, is the field's value as a string."""
_SIMPLE_KEYGEN_CLASSES = frozenset({"SimpleKeyGenerator", "SimpleAvroKeyGenerator", "NonpartitionedKeyGenerator",
                                    "NonpartitionedAvroKeyGenerator"})

_POWERS = np.array([10**k for k in range(1, 20)], dtype=np.uint64)  # 10 .. 10^19
_SCALE = np.array([10 ** max(0, 19 - d) for d in range(21)], dtype=np.uint64)  # by digit count


@dataclass(frozen=True)
class KeySpec:
    """How record keys are obtained: ``_hoodie_record_key``, built from the key columns, or
    (``integer`` set) the single integer key column itself."""

    fields: tuple[str, ...]
    populate_meta: bool
    integer: str | None = None

    def columns(self, available: Sequence[str]) -> list[str]:
        if self.integer is not None:
            return [self.integer] if self.integer in available else []
        if self.populate_meta and RECORD_KEY in available:
            return [RECORD_KEY]
        return [c for c in self.fields if c in available]

    def keys(self, table: pa.Table) -> pa.Array:
        if self.integer is not None:
            column = table.column(self.integer)
            array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
            return array if array.type == pa.int64() else array.cast(pa.int64())
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

    def as_strings(self) -> KeySpec:
        return KeySpec(self.fields, self.populate_meta)


def integer_key_column(fields: Sequence[str], schema: pa.Schema, keygen_type: str | None,
                       keygen_class: str | None) -> str | None:
    """The key column whose values spell every record key, if the table has one: a single
    signed (or narrow unsigned) integer key field and a simple key generator."""
    if len(fields) != 1 or fields[0] not in schema.names:
        return None
    type_ = schema.field(fields[0]).type
    if not pa.types.is_integer(type_) or type_ == pa.uint64():
        return None  # uint64 values may not fit int64
    if keygen_type is not None:
        simple = keygen_type.upper() in SIMPLE_KEYGENS
    else:
        simple = keygen_class is None or keygen_class.rsplit(".", 1)[-1] in _SIMPLE_KEYGEN_CLASSES
    return fields[0] if simple else None


# ----------------------------------------------------------------------------- string order
def key_text(scalar: pa.Scalar) -> str:
    """A key as the string it stands for (the bound of a merge window)."""
    value = scalar.as_py()
    return value if isinstance(value, str) else str(value)


def _text_order_key(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For int64 ``values``: (sign group, digits left-aligned to 19 places, digit count), whose
    lexicographic order is the order of the values' decimal spellings. ``-`` sorts before every
    digit; a spelling that is a prefix of another (``1``, ``10``) sorts first."""
    negative = values < 0
    magnitude = np.where(negative, -(values + 1), values).view(np.uint64) + negative  # |int64 min| fits
    digits = np.searchsorted(_POWERS, magnitude, side="right") + 1
    return ~negative, magnitude * _SCALE[digits], digits


def order_indices(keys: pa.Array) -> pa.Array:
    """Indices that sort ``keys`` by their string spelling."""
    if pa.types.is_integer(keys.type):
        values = np.asarray(keys.cast(pa.int64()), dtype=np.int64)
        group, scaled, digits = _text_order_key(values)
        return pa.array(np.lexsort((digits, scaled, group)))
    return pc.sort_indices(keys)


def sorted_keys(keys: pa.Array) -> pa.Array:
    return keys.take(order_indices(keys))


def strictly_increasing(keys: pa.Array) -> bool:
    """Whether the keys' spellings strictly increase."""
    n = len(keys)
    if n <= 1:
        return True
    if not pa.types.is_integer(keys.type):
        return bool(pc.all(pc.less(keys.slice(0, n - 1), keys.slice(1))).as_py())
    group, scaled, digits = _text_order_key(np.asarray(keys, dtype=np.int64))
    a, b = slice(0, n - 1), slice(1, n)
    same_group, same_scaled = group[a] == group[b], scaled[a] == scaled[b]
    less = (group[a] < group[b]) | (same_group & ((scaled[a] < scaled[b]) | (same_scaled & (digits[a] < digits[b]))))
    return bool(less.all())


def text_keys(keys: pa.Array) -> pa.Array:
    """The keys as strings."""
    return keys if pa.types.is_string(keys.type) else keys.cast(pa.string())


def integer_keys(keys: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """String keys → (int64 keys, mask of the strings that are the canonical spelling of their
    integer). Keys outside the mask (``"007"``, ``"x"``, nulls) spell no integer key; their int64
    value is 0."""
    keys = text_keys(keys)
    if not len(keys):
        return pa.array([], pa.int64()), np.zeros(0, dtype=bool)
    digits_only = pc.fill_null(pc.match_substring_regex(keys, r"^-?(0|[1-9][0-9]{0,18})$"), False)
    valid = np.asarray(digits_only, dtype=bool)
    candidates = pc.if_else(pa.array(valid), keys, "0")
    try:
        values = candidates.cast(pa.int64())
    except pa.ArrowInvalid:  # 19 digits beyond int64: check one by one (rare)
        values = pa.array([_to_int64(k) for k in candidates.to_pylist()], pa.int64())
        valid &= np.asarray(values.is_valid())
        values = values.fill_null(0)
    valid &= np.asarray(pc.equal(values.cast(pa.string()), candidates), dtype=bool)  # "-0" spells 0 as "0"
    return values, valid


def _to_int64(text: str) -> int | None:
    value = int(text)
    return value if -(1 << 63) <= value < (1 << 63) else None


def in_range_mask(keys: pa.Array, low: str | None, high: str | None, high_inclusive: bool = True) -> pa.Array:
    """Keys whose spelling lies in ``[low, high]`` (``[low, high)``; None: unbounded)."""
    text = text_keys(keys)
    mask = None
    if low is not None:
        mask = pc.greater_equal(text, low)
    if high is not None:
        upper = pc.less_equal(text, high) if high_inclusive else pc.less(text, high)
        mask = upper if mask is None else pc.and_(mask, upper)
    return mask if mask is not None else pa.array(np.ones(len(keys), dtype=bool))

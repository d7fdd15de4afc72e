"""Layout optimization: the order clustering writes rows in (``hoodie.layout.optimize.strategy``).

``linear`` sorts lexicographically by the sort columns: after cutting the sorted rows into files,
only the first column has narrow min/max ranges per file. ``z-order`` and ``hilbert`` order rows
along a space-filling curve over the sort columns, so that every sort column keeps narrow ranges
and stays selective for min/max data skipping (reference: hudi-internals-services.md §2).

A curve needs each column as an unsigned integer coordinate whose order is the column's order:

- ``direct`` (``hoodie.layout.optimize.curve.build.method=direct``): the dense rank of each value
  among the column's distinct values (any sortable type: integers, floats with their negatives,
  strings, timestamps, dates, booleans, decimals);
- ``sample``: Hudi's sample-based range partitioning — boundaries are the distinct values of a
  seeded sample of ``sample_size`` rows, and each value's coordinate is the number of boundaries
  below it (``searchsorted``), with no full sort of the column. When the sample holds every row
  the coordinates are the dense ranks, so both methods give the same order.

Nulls take the coordinate after the largest value (nulls last). Coordinates of every column are
then scaled to one common bit width (at most 64 bits in all), so that no column dominates the
curve because it has more distinct values. The z-order index interleaves the coordinates' bits
(the first column's bit highest); the Hilbert index comes from Skilling's transform ("Programming
the Hilbert curve", 2004), both vectorized over all rows with NumPy. Rows are returned in the
order of their index (stable: rows of equal index keep their input order).

**Lead bits** (``hoodie.pyhudi.layout.optimize.lead.bits``, ``k``; 0 by default, Hudi's curves):
the first sort column's top ``k`` bits go before the curve, a linear prefix, and the curve runs
over its remaining bits (moved up to the coordinate's top) and the other columns. A prefix of
the index then cuts the first column into about ``2**k`` times as many ranges as each other
column: with ``N`` files and two sort columns a point filter on the first reads about
``2**(-k/2) / sqrt(N)`` of them, one on the second ``2**(k/2) / sqrt(N)`` (64 files, ``k = 2``:
16 x 4 ranges, 1/16 and 1/4 of the files; z-order, whose levels put the first column's bit
first, already gives it the odd bit of an odd prefix). Sort columns come in priority order, so
the first may ask for more resolution; a prefix keeps the Hilbert curve on its square grid (a
weighted bit interleaving would not), and cells stay rectangles on both curves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.config.clustering import LAYOUT_LEAD_BITS
from pyhudi.errors import ConfigError

STRATEGIES = ("linear", "z-order", "hilbert")
METHODS = ("direct", "sample")
SAMPLE_SEED = 20_240_101
"""Seed of the sample method: a re-executed clustering plan orders its rows the same way."""
INDEX_BITS = 64
FINE_CELL_BITS = 3
"""Extra index bits of the cells file cuts snap to when the file count is not a power of two."""
MAX_LEAD_BITS = 16
"""Most lead bits (``2**16`` times the first column's ranges: far past any useful file count)."""


def curve_order(table: pa.Table, columns: Sequence[str], strategy: str = "linear", *,
                method: str = "direct", sample_size: int = 200_000, lead_bits: int = 0) -> pa.Array:
    """Row indices of ``table`` in the layout's order (an int64 array for ``table.take``).

    ``method`` (``direct`` / ``sample``), ``sample_size`` and ``lead_bits`` shape how the curves
    map values; ``linear`` ignores them. Nulls sort last in every strategy."""
    return curve_layout(table, columns, strategy, method=method, sample_size=sample_size,
                        lead_bits=lead_bits).order


@dataclass(frozen=True)
class CurveLayout:
    """Rows in curve order: ``order`` (indices for ``table.take``), the curve index of the rows
    in that order (``keys``, ascending uint64) and the index's width in bits (``index_bits``)."""

    order: pa.Array
    keys: np.ndarray
    index_bits: int

    def file_bounds(self, count: int) -> list[int]:
        """Row offsets cutting the ordered rows into ``count`` files (``count + 1`` offsets,
        empty files dropped), each equal-row cut moved to the nearest boundary of the curve's
        cells: of ``log2(count)`` index bits when ``count`` is a power of two (one cell per
        file, sizes within the cells' sampling noise), else of :data:`FINE_CELL_BITS` more bits
        than ``ceil(log2(count))`` (cells of at most 1/8 file: sizes stay near equal).

        Why: a file that takes even a few rows of the next cell gets that cell's corner in its
        min/max, which on a z-order jump doubles its range in one column, and point filters
        then read it too (1.5x the files at 32 files per group: 19% / 31% of the files for
        ``a = x`` / ``b = y`` instead of 12.5% / 25%). Cells of an index prefix are rectangles
        of the sort columns' space on both curves."""
        rows = len(self.keys)
        prefix = cell_prefix_bits(count, self.index_bits)  # (fewer rows than files: a file per row)
        if not prefix or not rows:
            return cut_at_cells(np.array([0, rows], dtype=np.int64), count)
        cells = self.keys >> np.uint64(self.index_bits - prefix)
        starts = np.searchsorted(cells, np.arange((1 << prefix) + 1, dtype=np.uint64), side="left")
        return cut_at_cells(starts, count)


def cell_prefix_bits(count: int, index_bits: int) -> int:
    """The index prefix whose cells ``count`` files are cut at (:meth:`CurveLayout.file_bounds`):
    ``log2(count)`` bits for a power of two, :data:`FINE_CELL_BITS` more than ``ceil(log2(count))``
    otherwise, at most ``index_bits`` (0: one file, or no curve)."""
    if count <= 1 or index_bits <= 0:
        return 0
    exact = count & (count - 1) == 0
    return min(index_bits, math.ceil(math.log2(count)) + (0 if exact else FINE_CELL_BITS))


def cut_at_cells(starts: np.ndarray, count: int) -> list[int]:
    """Row offsets of ``count`` files over rows grouped in consecutive cells (``starts``: the
    first row of each cell, then the row count): each equal-row cut moved to the nearer end of
    its cell when that is within half a file, else kept (empty files dropped).

    Only cell sizes are needed, not the rows: the spill path counts its rows per cell while it
    spills and cuts the merged stream at these offsets, as the in-memory path does."""
    starts = np.asarray(starts, dtype=np.int64)
    rows = int(starts[-1])
    if not rows:
        return [0]
    count = max(1, min(count, rows))
    ideal = np.round(np.arange(count + 1) * (rows / count)).astype(np.int64)
    if len(starts) > 2 and count > 1:
        inner = ideal[1:-1]
        cell = np.searchsorted(starts, inner, side="right") - 1
        start, end = starts[cell], starts[np.minimum(cell + 1, len(starts) - 1)]
        nearest = np.where(inner - start <= end - inner, start, end)
        ideal[1:-1] = np.where(np.abs(nearest - inner) <= rows / count / 2, nearest, inner)
    ideal = np.maximum.accumulate(ideal)
    return [int(x) for x in np.unique(ideal)]


def curve_layout(table: pa.Table, columns: Sequence[str], strategy: str, *, method: str = "direct",
                 sample_size: int = 200_000, lead_bits: int = 0) -> CurveLayout:
    """:func:`curve_order` with the sorted curve index, for :meth:`CurveLayout.file_bounds`
    (``linear`` and no columns: no index, ``index_bits`` 0, so files are cut by rows alone)."""
    order = _curve_checked(table, columns, strategy, method, sample_size, lead_bits)
    if isinstance(order, pa.Array):
        return CurveLayout(order, np.zeros(len(order), dtype=np.uint64), 0)
    strategy, columns = order
    codes = [_coordinates(table.column(c), method, sample_size) for c in columns]
    bits = common_bits([int(c.max()) for c in codes], lead_bits)
    index, index_bits = curve_index(strategy, [_scale(c, bits) for c in codes], bits, lead_bits)
    positions = np.argsort(index, kind="stable")
    return CurveLayout(pa.array(positions.astype(np.int64)), index[positions], index_bits)


def check_lead_bits(lead_bits: object) -> int:
    """``lead_bits`` as checked: an integer from 0 to :data:`MAX_LEAD_BITS` (else an error naming
    the key)."""
    if isinstance(lead_bits, bool) or not isinstance(lead_bits, (int, np.integer)) \
            or not 0 <= lead_bits <= MAX_LEAD_BITS:
        raise ConfigError(f"{LAYOUT_LEAD_BITS.key} must be an integer from 0 to {MAX_LEAD_BITS} (the first sort "
                          f"column's extra bits of resolution), got {lead_bits!r}")
    return int(lead_bits)


def curve_index(strategy: str, coordinates: Sequence[np.ndarray], bits: int,
                lead_bits: int = 0) -> tuple[np.ndarray, int]:
    """The curve index of each row and its width in bits, from ``bits``-bit coordinates (the
    first column's first; module docstring: lead bits). Without lead bits, the plain curve."""
    lead = min(lead_bits, bits)
    n = len(coordinates)
    if lead:
        first = coordinates[0]
        rest = (first << np.uint64(lead)) & np.uint64((1 << bits) - 1)  # its low bits, at the top
        coordinates = [rest, *coordinates[1:]]
    index = z_index(coordinates, bits) if strategy == "z-order" else hilbert_index(coordinates, bits)
    if lead:
        index |= (first >> np.uint64(bits - lead)) << np.uint64(bits * n)
    return index, index_width(n, bits, lead_bits)


def index_width(columns: int, bits: int, lead_bits: int = 0) -> int:
    """Bits of a curve index over ``columns`` coordinates of ``bits`` bits (lead bits included)."""
    return bits * columns + min(lead_bits, bits)


def common_bits(largest_codes: Sequence[int], lead_bits: int = 0) -> int:
    """Bits per coordinate: enough for the column with most distinct codes, at most
    ``(64 - lead_bits) / columns`` so that the curve index fits in 64 bits."""
    largest = max(largest_codes)
    return max(1, min((INDEX_BITS - lead_bits) // len(largest_codes), largest.bit_length()))


def _curve_checked(table: pa.Table, columns: Sequence[str], strategy: str, method: str,
                   sample_size: int, lead_bits: int) -> pa.Array | tuple[str, list[str]]:
    """The checked arguments of a curve (strategy, columns), or the order itself when no curve
    is needed (linear, no columns, no rows)."""
    strategy = str(strategy).strip().lower()
    method = str(method).strip().lower()
    if isinstance(columns, str):
        raise ConfigError(f"sort columns must be a list of column names, got the string {columns!r}")
    columns = list(columns)
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise ConfigError(f"unknown sort column(s) {', '.join(missing)}: the table has {', '.join(table.column_names)}")
    if strategy not in STRATEGIES:
        raise ConfigError(f"unknown layout strategy {strategy!r} for hoodie.layout.optimize.strategy: "
                          f"expected one of {', '.join(STRATEGIES)}")
    check_lead_bits(lead_bits)
    if not columns:
        return pa.array(np.arange(table.num_rows, dtype=np.int64))
    if strategy == "linear":
        return pc.sort_indices(table, [(c, "ascending", "at_end") for c in columns])
    if method not in METHODS:
        raise ConfigError(f"unknown curve build method {method!r} for hoodie.layout.optimize.curve.build.method: "
                          f"expected one of {', '.join(METHODS)}")
    if isinstance(sample_size, bool) or not isinstance(sample_size, int) or sample_size <= 0:
        raise ConfigError(f"hoodie.layout.optimize.build.curve.sample.size must be a positive integer, "
                          f"got {sample_size!r}")
    if table.num_rows == 0:
        return pa.array([], pa.int64())
    return strategy, columns


# ---------------------------------------------------------------------------- coordinates
def _coordinates(column: pa.ChunkedArray | pa.Array, method: str, sample_size: int) -> np.ndarray:
    """Integer coordinates (uint64) of one column: order-preserving, nulls after every value."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    _check_sortable(array.type)
    valid = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if method == "direct":
        codes = _dense_ranks(array)
    else:
        codes = _sample_buckets(_sort_keys(array), valid, sample_size)
    if not valid.all():
        top = codes[valid].max() + 1 if valid.any() else np.uint64(0)
        codes = np.where(valid, codes, np.uint64(top)).astype(np.uint64)
    return codes


def _check_sortable(type_: pa.DataType) -> None:
    if pa.types.is_nested(type_) or pa.types.is_null(type_):
        raise ConfigError(f"a {type_} column cannot be a layout sort column: only primitive values have an order")


def _dense_ranks(array: pa.Array) -> np.ndarray:
    """0-based dense rank of each value among the distinct values (nulls: anything, replaced)."""
    ranks = pc.rank(array, sort_keys="ascending", tiebreaker="dense")
    return ranks.to_numpy(zero_copy_only=False).astype(np.uint64) - np.uint64(1)


def _sample_buckets(keys: np.ndarray, valid: np.ndarray, sample_size: int) -> np.ndarray:
    """How many distinct sampled values lie below each value (Hudi's range bounds from a sample)."""
    present = np.flatnonzero(valid)
    if len(present) > sample_size:
        rng = np.random.default_rng(SAMPLE_SEED)
        present = rng.choice(present, size=sample_size, replace=False)
    bounds = np.unique(keys[present])
    return np.searchsorted(bounds, keys, side="left").astype(np.uint64)


_SIGN = np.uint64(1 << 63)


def _sort_keys(array: pa.Array) -> np.ndarray:
    """An order-preserving uint64 of each value without sorting (nulls: anything).

    Signed integers flip their sign bit; floats flip all bits when negative and the sign bit
    otherwise (IEEE 754 order); temporal values are their integer counts; strings and binaries
    are their first 8 bytes, big-endian (longer shared prefixes tie: an order that may only
    merge neighbours, as Hudi's byte mapping does). Other types fall back to dense ranks.
    """
    type_ = array.type
    if pa.types.is_boolean(type_):
        return np.asarray(array.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.uint64)
    if pa.types.is_temporal(type_):
        width = type_.bit_width
        array = array.view(pa.int64() if width == 64 else pa.int32())
        type_ = array.type
    if pa.types.is_integer(type_):
        values = array.fill_null(0).to_numpy(zero_copy_only=False)
        if pa.types.is_unsigned_integer(type_):
            return values.astype(np.uint64)
        return values.astype(np.int64).view(np.uint64) ^ _SIGN
    if pa.types.is_floating(type_):
        values = array.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
        bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
        return np.where(bits & _SIGN, ~bits, bits | _SIGN)
    if pa.types.is_string(type_) or pa.types.is_binary(type_) or pa.types.is_large_string(type_) \
            or pa.types.is_large_binary(type_):
        return _prefix_keys(array)
    return _dense_ranks(array)


def _prefix_keys(array: pa.Array) -> np.ndarray:
    """The first 8 bytes of each string or binary value as a big-endian uint64 (zero-padded)."""
    large = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
    offsets_buffer, data_buffer = array.buffers()[1:3]
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64 if large else np.int32)
    offsets = offsets[array.offset:array.offset + len(array) + 1].astype(np.int64)
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    keys = np.zeros(len(array), dtype=np.uint64)
    for j in range(8):  # (eight vectorized passes, one per byte)
        has = lengths > j
        byte = np.zeros(len(array), dtype=np.uint64)
        byte[has] = data[starts[has] + j]
        keys |= byte << np.uint64(8 * (7 - j))
    return keys


def _scale(codes: np.ndarray, bits: int, top: int | None = None) -> np.ndarray:
    """Stretch (or squeeze) codes ``0..top`` onto ``0..2**bits - 1``, keeping their order
    (``top``: the column's largest code, given when ``codes`` are a part of the column)."""
    top = int(codes.max()) if top is None else int(top)
    full = (1 << bits) - 1
    if top == full or top == 0:
        return codes
    if top < full and full % top == 0:
        return codes * np.uint64(full // top)
    scaled = np.floor(codes.astype(np.float64) * (full / top))
    return np.minimum(scaled, full).astype(np.uint64)


# ---------------------------------------------------------------------------- curves
def z_index(coordinates: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """The z-order (Morton) index: bit ``b`` of column ``i`` of ``n`` lands at position
    ``b * n + (n - 1 - i)`` (the first column's bit is the highest of each level)."""
    n = len(coordinates)
    index = np.zeros(len(coordinates[0]), dtype=np.uint64)
    one = np.uint64(1)
    for b in range(bits):
        for i, x in enumerate(coordinates):
            index |= ((x >> np.uint64(b)) & one) << np.uint64(b * n + (n - 1 - i))
    return index


def hilbert_index(coordinates: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """The Hilbert index of ``n``-dimensional points of ``bits``-bit coordinates.

    Skilling's AxesToTranspose (inverse undo, then Gray encoding) turns the coordinates into the
    "transposed" index, whose bits interleave into the index exactly as a z-order does.
    """
    x = [np.array(c, dtype=np.uint64, copy=True) for c in coordinates]
    n = len(x)
    one = np.uint64(1)
    t = np.empty_like(x[0])
    mask = np.empty_like(x[0])
    for level in range(bits - 1, 0, -1):  # inverse undo: per level, invert or exchange the low bits
        p = np.uint64((1 << level) - 1)
        for i in range(n):
            np.right_shift(x[i], np.uint64(level), out=mask)
            mask &= one
            np.negative(mask, out=mask)  # all ones where the bit is set
            np.bitwise_and(mask, p, out=t)
            x[0] ^= t  # set: invert the low bits of x[0]
            if i:  # clear: exchange the low bits of x[0] and x[i]
                np.bitwise_xor(x[0], x[i], out=t)
                t &= p
                np.invert(mask, out=mask)
                t &= mask
                x[0] ^= t
                x[i] ^= t
    for i in range(1, n):  # Gray encode
        x[i] ^= x[i - 1]
    t[:] = 0
    for level in range(bits - 1, 0, -1):
        np.right_shift(x[n - 1], np.uint64(level), out=mask)
        mask &= one
        np.negative(mask, out=mask)
        mask &= np.uint64((1 << level) - 1)
        t ^= mask
    for i in range(n):
        x[i] ^= t
    return z_index(x, bits)

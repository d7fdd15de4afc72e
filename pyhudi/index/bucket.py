"""Bucket index: record key → bucket id → file group, computed exactly as Java Hudi does.

``bucket = (javaListHash(hashKeys) & 0x7fffffff) % numBuckets`` where ``javaListHash`` is
``java.util.List.hashCode`` (start 1, ``h = 31*h + e.hashCode()``, int32 wrap-around) and each
element's hash is ``String.hashCode`` over **UTF-16 code units**. Integer keys hash as their
decimal string. Writers in other engines (Spark/Flink Hudi) must agree with us on every bucket,
so this is bit-exact, and it is vectorised: one pass of NumPy over the Arrow string buffers
(UTF-8 is decoded to UTF-16 code units in bulk; a pure-ASCII batch skips the decode), no Python
loop per key.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.errors import FileNameError, SchemaError
from pyhudi.storage.naming import BUCKET_FILE_ID_SUFFIX, bucket_file_id, bucket_id_from_file_id


def java_string_hash_scalar(text: str) -> int:
    """Reference (scalar) ``String.hashCode``; used by tests and for single keys."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def _pool_array(n: int, dtype: type) -> np.ndarray:
    """A writable NumPy array in Arrow's memory pool, which reuses freed memory: a fresh NumPy
    array of a few MB faults in new pages on every write (~0.25 ms per MB)."""
    return np.frombuffer(pa.allocate_buffer(max(1, n * np.dtype(dtype).itemsize)), dtype=dtype)[:n]


_HORNER_ROWS = 1 << 17
"""Rows walked together: the column passes over a block of the matrix (~1 MB for 7-character
keys) read it from the cache, not from memory (2M keys: 6.7 ms -> 4.8 ms)."""


def _horner_rows(matrix: np.ndarray) -> np.ndarray:
    """``h = 31*h + unit`` along each row of an ``(n, width)`` matrix of code units, one
    vectorised pass per column (uint32 wraps exactly like Java's int). The columns are read in
    place, strided: no transposed copy."""
    n, width = matrix.shape
    h = _pool_array(n, np.uint32)
    if width == 0:
        h[:] = 0
        return h
    thirty_one = np.uint32(31)
    for start in range(0, n, _HORNER_ROWS):
        block, out = matrix[start:start + _HORNER_ROWS], h[start:start + _HORNER_ROWS]
        np.copyto(out, block[:, 0])
        for j in range(1, width):
            np.multiply(out, thirty_one, out=out)
            np.add(out, block[:, j], out=out, casting="unsafe")
    return h


def _horner(units: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``h = 31*h + unit`` over each string's code units, one vectorised pass per position.

    Strings are processed column-wise (all first units, then all second units, ...), so the
    Python loop runs once per character *position* (the longest key's length), never per key.
    Arithmetic is uint32, which wraps exactly like Java's int.
    """
    n = len(offsets) - 1
    starts = offsets[:-1]
    lengths = np.diff(offsets)
    h = np.zeros(n, dtype=np.uint32)
    if n == 0:
        return h
    shortest, longest = int(lengths.min()), int(lengths.max())
    thirty_one = np.uint32(31)
    if shortest == longest:
        # Fixed-width keys (UUIDs, zero-padded ids): offsets are regular, so the units form an
        # (n, width) matrix walked column by column.
        first = int(starts[0])
        return _horner_rows(units[first : first + n * longest].reshape(n, longest))
    with np.errstate(over="ignore"):
        for j in range(shortest):
            h = h * thirty_one + units[starts + j]
        active = np.flatnonzero(lengths > shortest)
        for j in range(shortest, longest):
            active = active[lengths[active] > j]
            h[active] = h[active] * thirty_one + units[starts[active] + j]
    return h


def _ascii_padded_hash(arr: pa.Array, width: int) -> np.ndarray:
    """``String.hashCode`` of ASCII keys of different lengths: left-padded with NULs to ``width``
    (one Arrow kernel), they form an ``(n, width)`` matrix walked column by column. A leading
    zero unit never changes the hash (``31*0 + 0``), so the padding is invisible."""
    if arr.null_count:  # nulls would take no room in the padded data (they hash to 0 anyway)
        arr = arr.fill_null("")
    padded = pc.ascii_lpad(arr, width=width, padding="\x00")
    buffers = padded.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64 if pa.types.is_large_string(arr.type) else np.int32)
    first = int(offsets[padded.offset])
    units = np.frombuffer(buffers[2], dtype=np.uint8)[first:first + len(arr) * width]
    return _horner_rows(units.reshape(len(arr), width))


def _as_string_array(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return arr
    if pa.types.is_dictionary(t):
        return _as_string_array(arr.dictionary_decode())
    if pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_string_view(t):
        return pc.cast(arr, pa.string())
    raise SchemaError(
        f"bucket hashing supports string and integer key columns, not {t}; cast the key column first"
    )


def _utf16_units(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode UTF-8 bytes to UTF-16 code units; returns (units, byte position of each unit)."""
    lead_pos = np.flatnonzero((data & 0xC0) != 0x80)
    cp = data[lead_pos].astype(np.uint32)
    multi = np.flatnonzero(cp >= 0x80)  # only multi-byte characters need decoding
    if multi.size:
        padded = np.concatenate([data, np.zeros(3, dtype=np.uint8)])
        at = lead_pos[multi]
        lead = cp[multi]
        c1 = padded[at + 1].astype(np.uint32) & 0x3F
        c2 = padded[at + 2].astype(np.uint32) & 0x3F
        c3 = padded[at + 3].astype(np.uint32) & 0x3F
        two = ((lead & 0x1F) << 6) | c1
        three = ((lead & 0x0F) << 12) | (c1 << 6) | c2
        four = ((lead & 0x07) << 18) | (c1 << 12) | (c2 << 6) | c3
        cp[multi] = np.where(lead < 0xE0, two, np.where(lead < 0xF0, three, four))
    supplementary = cp > 0xFFFF
    if not supplementary.any():
        return cp, lead_pos
    reps = np.where(supplementary, 2, 1)
    units = np.repeat(cp, reps)
    positions = np.repeat(lead_pos, reps)
    first = np.cumsum(reps) - reps  # index of each character's first unit
    sup_first = first[supplementary]
    off = cp[supplementary] - 0x10000
    units[sup_first] = 0xD800 + (off >> 10)
    units[sup_first + 1] = 0xDC00 + (off & 0x3FF)
    return units, positions


def java_string_hash(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Vectorised ``String.hashCode`` of every element (int32); nulls hash to 0 like Java's List."""
    arr = _as_string_array(arr)
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    offset_type = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    buffers = arr.buffers()
    offsets = np.frombuffer(buffers[1], dtype=offset_type)[arr.offset : arr.offset + n + 1]
    start, end = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(buffers[2], dtype=np.uint8)[start:end] if buffers[2] is not None else np.zeros(0, np.uint8)
    if data.size and int(data.max()) >= 0x80:
        offsets = offsets.astype(np.int64) - start
        units, positions = _utf16_units(data)
        string_of_byte = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
        counts = np.bincount(string_of_byte[positions], minlength=n)
        offsets = np.concatenate([[0], np.cumsum(counts)])
        hashes = _horner(units, offsets)  # uint32 units; sums stay uint32
    else:
        lengths = np.diff(offsets)
        longest = int(lengths.max())
        if longest > int(lengths.min()) and n * longest <= 4 * len(data) + 1024:
            hashes = _ascii_padded_hash(arr, longest)  # keys of close lengths: no masked passes
        else:
            hashes = _horner(data, offsets.astype(np.int64) - start)
    if arr.null_count:
        hashes[np.asarray(arr.is_null())] = 0
    return hashes.view(np.int32)


def java_list_hash(columns: Sequence[pa.Array | pa.ChunkedArray]) -> np.ndarray:
    """``List.hashCode`` of per-row lists made of one element from each column (int32)."""
    if not columns:
        raise SchemaError("bucket hashing needs at least one hash column")
    h = np.ones(len(columns[0]), dtype=np.uint32)
    with np.errstate(over="ignore"):
        for column in columns:
            h = h * np.uint32(31) + java_string_hash(column).view(np.uint32)
    return h.view(np.int32)


SPLIT_ROWS = 100_000
"""Rows from which a write's record keys and bucket hashes are computed in two halves on two
cores (:func:`~pyhudi.engine.local.run_split`): both are serial steps before a write's tasks."""


def split_point(column: pa.Array | pa.ChunkedArray) -> int:
    """Where to cut ``column`` in two: at the chunk boundary nearest the middle when it is near
    (the halves of a column built in two halves stay one chunk each), else at the middle."""
    n = len(column)
    if isinstance(column, pa.ChunkedArray) and column.num_chunks > 1:
        ends = np.cumsum([len(c) for c in column.chunks])[:-1]
        nearest = int(ends[np.argmin(np.abs(ends - n // 2))])
        if abs(nearest - n // 2) <= n // 8:
            return nearest
    return n // 2


def bucket_ids(columns: Sequence[pa.Array | pa.ChunkedArray] | pa.Array | pa.ChunkedArray, num_buckets: int) -> np.ndarray:
    """Bucket id of every row: ``(listHash & 0x7fffffff) % num_buckets`` (int32); many rows
    (:data:`SPLIT_ROWS`) are hashed in two halves on two cores."""
    if not isinstance(num_buckets, int) or num_buckets <= 0:
        raise SchemaError(f"number of buckets must be a positive integer, got {num_buckets!r}")
    if isinstance(columns, (pa.Array, pa.ChunkedArray)):
        columns = [columns]
    n = len(columns[0]) if columns else 0
    if n < SPLIT_ROWS:
        return _bucket_ids(columns, num_buckets)
    from pyhudi.engine.local import run_split  # (the thread pool is imported by writes only)

    cut = split_point(columns[0])
    halves = run_split([lambda: _bucket_ids([c.slice(0, cut) for c in columns], num_buckets),
                        lambda: _bucket_ids([c.slice(cut) for c in columns], num_buckets)])
    out = _pool_array(n, np.int32)
    out[:cut], out[cut:] = halves
    return out


def integer_keys_and_bucket_ids(column: pa.Array | pa.ChunkedArray,
                                num_buckets: int) -> tuple[pa.ChunkedArray, np.ndarray]:
    """The record keys of a one-field integer key (its values as decimal strings) and their
    bucket ids: what :func:`~pyhudi.keygen.record_keys` and :func:`bucket_ids` give, in one step
    on two cores — each half's keys are hashed on the thread that just wrote them (still in its
    cache), and the halves meet once instead of twice."""
    if not isinstance(num_buckets, int) or num_buckets <= 0:
        raise SchemaError(f"number of buckets must be a positive integer, got {num_buckets!r}")
    n = len(column)
    if n == 0:
        return pa.chunked_array([pa.array([], pa.string())]), np.zeros(0, np.int32)
    from pyhudi.engine.local import run_split  # (the thread pool is imported by writes only)

    def half(part: pa.Array | pa.ChunkedArray) -> tuple[list[pa.Array], np.ndarray]:
        keys = part.cast(pa.string())
        chunks = keys.chunks if isinstance(keys, pa.ChunkedArray) else [keys]
        return chunks, _bucket_ids([keys], num_buckets) if len(keys) else np.zeros(0, np.int32)

    cut = n // 2
    (first, low), (second, high) = run_split([lambda: half(column.slice(0, cut)), lambda: half(column.slice(cut))])
    out = _pool_array(n, np.int32)
    out[:cut], out[cut:] = low, high
    return pa.chunked_array([c for c in (*first, *second) if len(c)], pa.string()), out


def _bucket_ids(columns: Sequence[pa.Array | pa.ChunkedArray], num_buckets: int) -> np.ndarray:
    if len(columns) == 1:  # List.hashCode of one element: 31 + its hash (in place: no temporaries)
        h = java_string_hash(columns[0]).view(np.uint32)
        np.add(h, np.uint32(31), out=h)
    else:
        h = java_list_hash(columns).view(np.uint32)
    np.bitwise_and(h, np.uint32(0x7FFFFFFF), out=h)
    np.remainder(h, np.uint32(num_buckets), out=h)
    return h.view(np.int32)  # (every id is below num_buckets <= 2**31 - 1)


def bucket_of_key(key_values: Sequence[object], num_buckets: int) -> int:
    """Bucket of a single key (tuple of field values); convenience for tools and tests."""
    columns = [pa.array([value]) for value in key_values]
    return int(bucket_ids(columns, num_buckets)[0])


class BucketFileIds:
    """Which file group a bucket's rows go to, given the partition's visible file groups.

    A bucket's file group is the visible (non-replaced) one whose id starts with the 8-digit
    bucket number — after an insert overwrite that is the overwrite's new group, never the
    replaced one. A bucket without one gets the fixed non-blocking-concurrency id
    ``%08d-0000-0000-0000-000000000000-<n>``, with the smallest ``n`` whose file group was never
    replaced (Hudi bumps the suffix the same way), so concurrent writers still agree on it —
    unless a completed replacecommit wrote a group for the bucket that nothing replaced since
    (``replace_written``): that group stays the bucket's, also once a clean removed all its
    files (e.g. those of a dropped family), so two groups never hold one bucket.
    """

    def __init__(self, existing: Mapping[tuple[str, str], object],
                 replaced: Iterable[tuple[str, str]] = (),
                 replace_written: Iterable[tuple[str, str]] = ()) -> None:
        self.replaced = set(replaced)
        self.overwritten: dict[tuple[str, int], str] = {}
        for partition, file_id in sorted(set(replace_written) - self.replaced):
            try:
                self.overwritten[(partition, bucket_id_from_file_id(file_id))] = file_id
            except FileNameError:
                continue
        self.live: dict[tuple[str, int], tuple[str, str]] = {}
        for partition, file_id in existing:
            try:
                bucket = bucket_id_from_file_id(file_id)
            except FileNameError:
                continue
            group = existing[(partition, file_id)]
            files = [*getattr(group, "base_files", ()), *getattr(group, "log_files", ())]
            newest = max((f.instant for f in files), default="")
            current = self.live.get((partition, bucket))
            if current is None or (newest, file_id) > current:
                self.live[(partition, bucket)] = (newest, file_id)

    def __call__(self, partition: str, bucket: int) -> str:
        found = self.live.get((partition, bucket))
        if found is not None:
            return found[1]
        if (partition, bucket) in self.overwritten:
            return self.overwritten[(partition, bucket)]
        file_id, n = bucket_file_id(bucket), 0
        while (partition, file_id) in self.replaced:
            n += 1
            file_id = f"{bucket:08d}{BUCKET_FILE_ID_SUFFIX}-{n}"
        return file_id


__all__ = [
    "BucketFileIds",
    "java_string_hash",
    "java_string_hash_scalar",
    "java_list_hash",
    "bucket_ids",
    "bucket_of_key",
    "integer_keys_and_bucket_ids",
    "bucket_file_id",
]

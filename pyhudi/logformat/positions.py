"""The ``RECORD_POSITIONS`` log block header: a block's record positions in its base file.

Hudi 1.x writers may record, for a data block whose every record updates a row of the file
slice's base file, the row numbers of those rows (``RECORD_POSITIONS``) and the instant time of
the base file they refer to (``BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS``). A reader then
merges the block by position instead of by key: the i-th record of the block overwrites the
base row at the i-th smallest position (writers list the records in position order).

The value is the Base64 text (standard alphabet, padded) of a 64-bit Roaring bitmap in the
portable format: a little-endian u64 count of 32-bit buckets, then per bucket, by increasing high
half, a u32 high half and a 32-bit portable Roaring bitmap of the low halves. A 32-bit bitmap is a
cookie (12346 then a u32 container count; or 12347 with the count minus one in the high 16 bits,
then a bitset marking run containers), per container a u16 key (high 16 bits) and a u16
cardinality minus one, a u32 byte offset per container (omitted when there are run containers
and fewer than 4 containers), then the containers: a sorted u16 array (up to 4096 values), a
bitmap of 1024 u64 words, or runs (a u16 run count, then u16 start and u16 length minus one).

Decoding and encoding work per container with NumPy (a container holds up to 65536 positions):
no loop over records.
"""

from __future__ import annotations

import binascii
import struct

import numpy as np

from pyhudi.errors import LogFormatError

_COOKIE_NO_RUNS, _COOKIE_RUNS = 12346, 12347
_NO_OFFSET_THRESHOLD = 4
_ARRAY_MAX = 4096


def encode_positions(positions: np.ndarray, increasing: bool = False) -> str:
    """The header value for ``positions`` (distinct non-negative row numbers, any order;
    ``increasing``: already strictly increasing, not sorted again)."""
    values = np.asarray(positions, dtype=np.int64)
    values = values if increasing else np.unique(values)
    if values.size and values[0] < 0:
        raise LogFormatError(f"record positions must be non-negative, got {int(values[0])}")
    if not values.size:
        parts = [struct.pack("<Q", 0)]
    elif values[-1] < (1 << 32):  # (every position in the first 32-bit bucket: the usual file)
        parts = [struct.pack("<QI", 1, 0), _encode_32(values.astype(np.uint32))]
    else:
        highs = values >> 32
        buckets = np.unique(highs)
        parts = [struct.pack("<Q", len(buckets))]
        for high in buckets:
            low = (values[highs == high] & 0xFFFFFFFF).astype(np.uint32)
            parts.append(struct.pack("<I", int(high)))
            parts.append(_encode_32(low))
    return binascii.b2a_base64(b"".join(parts), newline=False).decode("ascii")  # (base64.b64encode)


def _encode_32(values: np.ndarray) -> bytes:
    """A 32-bit portable Roaring bitmap of sorted distinct ``values`` (array and bitmap containers)."""
    keys = values >> 16
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if values.size else np.zeros(0, dtype=np.int64)
    bounds = np.r_[starts, values.size]
    containers = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        low = (values[a:b] & 0xFFFF).astype(np.uint16)
        if low.size <= _ARRAY_MAX:
            containers.append(low.astype("<u2").tobytes())
        else:
            bits = np.zeros(1 << 16, dtype=np.uint8)
            bits[low] = 1
            containers.append(np.packbits(bits, bitorder="little").tobytes())
    n = len(containers)
    header = struct.pack("<II", _COOKIE_NO_RUNS, n)
    descriptive = np.empty(2 * n, dtype="<u2")
    descriptive[0::2] = keys[starts] if n else []
    descriptive[1::2] = np.diff(bounds) - 1 if n else []
    offset = len(header) + 4 * n + 4 * n
    offsets = []
    for body in containers:
        offsets.append(offset)
        offset += len(body)
    return b"".join([header, descriptive.tobytes(), np.asarray(offsets, dtype="<u4").tobytes(), *containers])


def decode_positions(text: str) -> np.ndarray:
    """The positions (sorted, int64) in a ``RECORD_POSITIONS`` header value.

    Raises:
        LogFormatError: the value is not Base64 or not a portable 64-bit Roaring bitmap.
    """
    try:
        data = binascii.a2b_base64(text, strict_mode=True)  # (base64.b64decode(validate=True), without its module)
    except (binascii.Error, ValueError) as exc:
        raise LogFormatError(f"RECORD_POSITIONS header is not Base64: {exc}") from exc
    try:
        return _decode_64(memoryview(data))
    except (struct.error, IndexError, ValueError) as exc:
        raise LogFormatError(f"RECORD_POSITIONS header is not a portable Roaring bitmap: {exc}") from exc


def _decode_64(data: memoryview) -> np.ndarray:
    (count,), at = struct.unpack_from("<Q", data, 0), 8
    if count > len(data):
        raise ValueError(f"{count} buckets in {len(data)} bytes")
    parts = []
    for _ in range(count):
        (high,) = struct.unpack_from("<I", data, at)
        low, at = _decode_32(data, at + 4)
        parts.append((np.int64(high) << 32) | low.astype(np.int64))
    if at != len(data):
        raise ValueError(f"{len(data) - at} bytes after the bitmap")
    out = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    if out.size > 1 and not (out[1:] > out[:-1]).all():
        raise ValueError("buckets or containers out of order")
    return out


def _decode_32(data: memoryview, start: int) -> tuple[np.ndarray, int]:
    """The values of the 32-bit bitmap at ``start``, and the offset after it."""
    (cookie,) = struct.unpack_from("<I", data, start)
    at = start + 4
    if cookie & 0xFFFF == _COOKIE_RUNS:
        n = (cookie >> 16) + 1
        run_flags = np.unpackbits(np.frombuffer(data, np.uint8, (n + 7) // 8, at), bitorder="little")[:n]
        at += (n + 7) // 8
    elif cookie == _COOKIE_NO_RUNS:
        (n,), at = struct.unpack_from("<I", data, at), at + 4
        run_flags = np.zeros(n, dtype=np.uint8)
    else:
        raise ValueError(f"unknown cookie {cookie}")
    descriptive = np.frombuffer(data, "<u2", 2 * n, at).astype(np.int64)
    at += 4 * n
    if not run_flags.any() or n >= _NO_OFFSET_THRESHOLD:
        at += 4 * n  # (offsets: the containers follow each other, read in order below)
    parts = []
    for key, cardinality, is_run in zip(descriptive[0::2], descriptive[1::2] + 1, run_flags):
        if is_run:
            (runs,) = struct.unpack_from("<H", data, at)
            pairs = np.frombuffer(data, "<u2", 2 * runs, at + 2).astype(np.int64)
            at += 2 + 4 * runs
            lengths = pairs[1::2] + 1
            low = np.repeat(pairs[0::2] - np.r_[0, np.cumsum(lengths)[:-1]], lengths) + np.arange(lengths.sum())
        elif cardinality > _ARRAY_MAX:
            bits = np.unpackbits(np.frombuffer(data, np.uint8, 8192, at), bitorder="little")
            low = np.flatnonzero(bits.view(bool))  # (a bool view: 7× faster than on bytes)
            at += 8192
        else:
            low = np.frombuffer(data, "<u2", cardinality, at).astype(np.int64)
            at += 2 * cardinality
        if len(low) != cardinality:
            raise ValueError(f"container {key} holds {len(low)} values, its header says {cardinality}")
        parts.append((key << 16) | low)
    return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)), at

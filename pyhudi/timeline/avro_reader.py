"""A small Avro Object Container reader for the timeline's one-record files, without fastavro.

Importing fastavro costs ~11 ms (its package loads its writer, validation, JSON and codec
modules), more than a cold read's whole metadata work: a fresh process that reads a table
decodes a few small commit files and nothing else in Avro (issue 15). So a small container is
decoded here, by decoders built once per writer schema from the Avro specification's binary
encoding (zig-zag varint ints and longs, little-endian floats, length-prefixed bytes and
strings, blocked arrays and maps, indexed unions and enums); fastavro stays the
decoder of large containers (its C decoder is ~10x faster per field), of schemas with logical
types (fastavro converts them) and of codecs other than ``null`` and ``deflate``, and of every
container once another caller has loaded it.

The result equals fastavro's ``reader`` output (records as dicts, enums as their symbols,
``fixed`` and ``bytes`` as bytes): ``tests/test_avro_reader.py`` compares the two.
"""

from __future__ import annotations

import json
import struct
import sys
from typing import Any, Callable

MAGIC = b"Obj\x01"
SMALL_BYTES = 256 * 1024
"""Containers up to this size are decoded here while fastavro is not loaded (a few ms at most)."""

Decoder = Callable[[bytes, int], tuple[Any, int]]
_DECODERS: dict[bytes, tuple[str, Decoder]] = {}  # writer schema JSON -> (record name, decoder)
_FLOAT = struct.Struct("<f").unpack_from
_DOUBLE = struct.Struct("<d").unpack_from


class Unsupported(Exception):
    """The container needs fastavro (a logical type, another codec): the caller falls back."""


def usable(data: bytes) -> bool:
    """Whether :func:`read_one` should decode ``data`` instead of fastavro."""
    return len(data) <= SMALL_BYTES and "fastavro" not in sys.modules


def read_one(data: bytes) -> tuple[str, Any]:
    """(fully qualified writer record name, first record or None) of an Avro container.

    Raises:
        Unsupported: when the schema has a logical type or the codec is not null/deflate.
        ValueError, IndexError, KeyError, struct.error, UnicodeDecodeError, zlib.error: on
            bytes that are not a valid container (the caller turns them into its own error).
    """
    if data[:4] != MAGIC:
        raise ValueError("no 'Obj\\x01' magic")
    meta, pos = _map(data, 4, _bytes)
    sync = data[pos:pos + 16]
    pos += 16
    codec = meta.get("avro.codec", b"null")
    if codec not in (b"null", b"deflate"):
        raise Unsupported(f"codec {codec!r}")
    schema_json = meta["avro.schema"]
    name, decode = _decoder_for(schema_json)
    if pos >= len(data):
        return name, None
    count, pos = _long(data, pos)
    size, pos = _long(data, pos)
    block = data[pos:pos + size]
    if len(block) != size or data[pos + size:pos + size + 16] != sync:
        raise ValueError("truncated block or bad sync marker")
    if codec == b"deflate":
        import zlib

        block = zlib.decompress(block, -15)
    if count < 1:
        return name, None
    record, _ = decode(block, 0)
    return name, record


def _decoder_for(schema_json: bytes) -> tuple[str, Decoder]:
    found = _DECODERS.get(schema_json)
    if found is None:
        if b'"logicalType"' in schema_json:
            raise Unsupported("logical types")
        schema = json.loads(schema_json)
        decode = _build(schema, "", {})
        name = _fullname(schema, "") if isinstance(schema, dict) and schema.get("type") == "record" else ""
        found = _DECODERS[bytes(schema_json)] = (name, decode)
    return found


# --------------------------------------------------------------------------- primitives
def _long(buf: bytes, pos: int) -> tuple[int, int]:
    b = buf[pos]
    pos += 1
    n, shift = b & 0x7F, 7
    while b & 0x80:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
    return (n >> 1) ^ -(n & 1), pos


def _bytes(buf: bytes, pos: int) -> tuple[bytes, int]:
    n, pos = _long(buf, pos)
    end = pos + n
    if n < 0 or end > len(buf):
        raise ValueError("bytes run past the end")
    return bytes(buf[pos:end]), end


def _string(buf: bytes, pos: int) -> tuple[str, int]:
    n, pos = _long(buf, pos)
    end = pos + n
    if n < 0 or end > len(buf):
        raise ValueError("string runs past the end")
    return str(buf[pos:end], "utf-8"), end


def _null(buf: bytes, pos: int) -> tuple[None, int]:
    return None, pos


def _boolean(buf: bytes, pos: int) -> tuple[bool, int]:
    return buf[pos] != 0, pos + 1


def _float(buf: bytes, pos: int) -> tuple[float, int]:
    return _FLOAT(buf, pos)[0], pos + 4


def _double(buf: bytes, pos: int) -> tuple[float, int]:
    return _DOUBLE(buf, pos)[0], pos + 8


_PRIMITIVE: dict[str, Decoder] = {"null": _null, "boolean": _boolean, "int": _long, "long": _long, "float": _float,
                                  "double": _double, "bytes": _bytes, "string": _string}


def _blocks(buf: bytes, pos: int) -> tuple[int, int]:
    """The next block's item count of an array or map (a negative count is followed by the
    block's byte size, which a reader decoding every item ignores)."""
    count, pos = _long(buf, pos)
    if count < 0:
        count = -count
        _, pos = _long(buf, pos)
    return count, pos


def _map(buf: bytes, pos: int, value: Decoder) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    count, pos = _blocks(buf, pos)
    while count:
        for _ in range(count):
            key, pos = _string(buf, pos)
            out[key], pos = value(buf, pos)
        count, pos = _blocks(buf, pos)
    return out, pos


# --------------------------------------------------------------------------- schemas
def _fullname(schema: dict, namespace: str) -> str:
    name = schema["name"]
    if "." in name:
        return name
    space = schema.get("namespace", namespace)
    return f"{space}.{name}" if space else name


def _build(schema: Any, namespace: str, named: dict[str, list[Decoder]]) -> Decoder:
    """The decoder of ``schema``; ``named`` maps full names to a one-item cell (filled once the
    named type is built, so a recursive reference reads it at decode time)."""
    if isinstance(schema, str):
        if schema in _PRIMITIVE:
            return _PRIMITIVE[schema]
        cell = named.get(schema)
        if cell is None and namespace:
            cell = named.get(f"{namespace}.{schema}")
        if cell is None:
            raise ValueError(f"unknown type {schema!r}")
        return lambda buf, pos: cell[0](buf, pos)
    if isinstance(schema, list):
        return _union([_build(s, namespace, named) for s in schema])
    kind = schema["type"]
    if kind in _PRIMITIVE:
        return _PRIMITIVE[kind]
    if kind == "array":
        return _array(_build(schema["items"], namespace, named))
    if kind == "map":
        values = _build(schema["values"], namespace, named)
        return lambda buf, pos: _map(buf, pos, values)
    if kind not in ("record", "error", "enum", "fixed"):
        return _build(kind, namespace, named)  # ({"type": "SomeNamedType"})
    full = _fullname(schema, namespace)
    cell: list[Decoder] = []
    named[full] = cell
    if kind == "enum":
        cell.append(_enum(list(schema["symbols"])))
    elif kind == "fixed":
        cell.append(_fixed(int(schema["size"])))
    else:
        inner = full.rpartition(".")[0]
        fields = [(f["name"], _build(f["type"], inner, named)) for f in schema["fields"]]
        cell.append(_record(fields))
    return cell[0]


def _union(branches: list[Decoder]) -> Decoder:
    def decode(buf: bytes, pos: int) -> tuple[Any, int]:
        index, pos = _long(buf, pos)
        if index < 0:
            raise IndexError(f"union branch {index}")
        return branches[index](buf, pos)
    return decode


def _array(items: Decoder) -> Decoder:
    def decode(buf: bytes, pos: int) -> tuple[list, int]:
        out = []
        count, pos = _blocks(buf, pos)
        while count:
            for _ in range(count):
                item, pos = items(buf, pos)
                out.append(item)
            count, pos = _blocks(buf, pos)
        return out, pos
    return decode


def _enum(symbols: list[str]) -> Decoder:
    def decode(buf: bytes, pos: int) -> tuple[str, int]:
        index, pos = _long(buf, pos)
        if index < 0:
            raise IndexError(f"enum symbol {index}")
        return symbols[index], pos
    return decode


def _fixed(size: int) -> Decoder:
    def decode(buf: bytes, pos: int) -> tuple[bytes, int]:
        if pos + size > len(buf):
            raise ValueError("fixed runs past the end")
        return bytes(buf[pos:pos + size]), pos + size
    return decode


def _record(fields: list[tuple[str, Decoder]]) -> Decoder:
    def decode(buf: bytes, pos: int) -> tuple[dict[str, Any], int]:
        out = {}
        for name, field in fields:
            out[name], pos = field(buf, pos)
        return out, pos
    return decode

"""A small Avro decoder for the one-record container files of the timeline (cold start, issue 15).

A read looks up the schema and families the latest commits recorded, so it decodes a few
instant files: Avro Object Container Files of one record (timeline layout 2). fastavro decodes
them fast but costs more to import than the rest of a cold read's metadata work, so small
containers are decoded here, in pure Python, straight from the writer schema the file embeds;
large ones (a commit with thousands of write stats), and any file this decoder does not take
(another codec, logical types, damaged bytes), go to fastavro, which has the last word. Both give
the same plain values: records as dicts in field order, arrays as lists, maps as dicts, enums as
their symbols, unions as the chosen branch's value, bytes and fixed as ``bytes``.

Format (Avro 1.11 specification): ``Obj\\x01``, a metadata map (``avro.schema``, ``avro.codec``),
a 16-byte sync marker, then blocks of (record count, byte size, records, sync marker). Integers
are zig-zag varints; strings and bytes are length-prefixed; arrays and maps come in blocks whose
negative counts are followed by the block's byte size.
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

MAGIC = b"Obj\x01"
LITE_MAX_BYTES = 64 << 10
"""Containers up to this size are decoded here; larger ones by fastavro (faster per value)."""

_DOUBLE = struct.Struct("<d")
_FLOAT = struct.Struct("<f")


class NotLite(Exception):
    """This decoder does not take the file (fastavro decodes it)."""


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data, self.pos = data, pos

    def long(self) -> int:
        data, pos = self.data, self.pos
        byte = data[pos]
        value, shift = byte & 0x7F, 7
        pos += 1
        while byte & 0x80:
            byte = data[pos]
            value |= (byte & 0x7F) << shift
            shift += 7
            pos += 1
        self.pos = pos
        return (value >> 1) ^ -(value & 1)

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise NotLite("truncated")
        start = self.pos
        self.pos = start + n
        return self.data[start:self.pos]

    def bytes_(self) -> bytes:
        return self.raw(self.long())


def read_container_lite(data: bytes) -> tuple[str, Any]:
    """(full name of the writer schema, first record or None) of an Avro container file; raises :class:`NotLite`
    for a file to hand to fastavro (codec other than null/deflate, a logical type, bad bytes)."""
    try:
        return _read(data)
    except NotLite:
        raise
    except (IndexError, ValueError, KeyError, TypeError, struct.error, zlib.error, RecursionError) as exc:
        raise NotLite(str(exc)) from exc


def _read(data: bytes) -> tuple[str, Any]:
    if data[:4] != MAGIC:
        raise NotLite("no magic")
    reader = _Reader(bytes(data), 4)
    meta = {}
    for key, value in _blocks(reader, lambda r: (r.bytes_().decode("utf-8"), r.bytes_())):
        meta[key] = value
    codec = meta.get("avro.codec", b"null")
    if codec not in (b"null", b"deflate"):
        raise NotLite(f"codec {codec!r}")
    schema_bytes = meta.get("avro.schema")
    if schema_bytes is None or b"logicalType" in schema_bytes:
        raise NotLite("no schema, or logical types")
    schema = json.loads(schema_bytes)
    name = _full_name(schema["name"], schema.get("namespace", "")) if isinstance(schema, dict) and \
        schema.get("type") in ("record", "error", "enum", "fixed") else ""
    sync = reader.raw(16)
    if reader.pos >= len(reader.data):
        return name, None
    count = reader.long()
    block = reader.raw(reader.long())
    if reader.raw(16) != sync:
        raise NotLite("sync marker")
    if count <= 0:
        return name, None
    if codec == b"deflate":
        block = zlib.decompress(block, -15)
    names: dict[str, Any] = {}
    _register(schema, "", names)
    return name, _datum(_Reader(block), schema, "", names)


def _blocks(reader: _Reader, item: Any) -> list:
    """The items of an array or map encoding (blocks of count, [byte size,] items)."""
    out = []
    while True:
        count = reader.long()
        if count == 0:
            return out
        if count < 0:
            count = -count
            reader.long()  # (the block's byte size: not needed to read it)
        for _ in range(count):
            out.append(item(reader))


def _full_name(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _register(schema: Any, namespace: str, names: dict[str, Any]) -> None:
    """Record every named type (record, enum, fixed) of ``schema`` by its full name."""
    if isinstance(schema, list):
        for branch in schema:
            _register(branch, namespace, names)
        return
    if not isinstance(schema, dict):
        return
    kind = schema.get("type")
    if kind in ("record", "error", "enum", "fixed"):
        full = _full_name(schema["name"], schema.get("namespace", namespace))
        names[full] = schema
        inner = full.rpartition(".")[0]
        for field in schema.get("fields", ()) if kind != "enum" and kind != "fixed" else ():
            _register(field["type"], inner, names)
    elif kind == "array":
        _register(schema["items"], namespace, names)
    elif kind == "map":
        _register(schema["values"], namespace, names)
    elif isinstance(kind, (dict, list)):
        _register(kind, namespace, names)


def _datum(r: _Reader, schema: Any, namespace: str, names: dict[str, Any]) -> Any:
    if isinstance(schema, str):
        if schema == "null":
            return None
        if schema in ("long", "int"):
            return r.long()
        if schema == "string":
            return r.bytes_().decode("utf-8")
        if schema == "boolean":
            return r.raw(1) != b"\x00"
        if schema == "double":
            return _DOUBLE.unpack(r.raw(8))[0]
        if schema == "float":
            return _FLOAT.unpack(r.raw(4))[0]
        if schema == "bytes":
            return r.bytes_()
        named = names.get(_full_name(schema, namespace)) or names.get(schema)
        if named is None:
            raise NotLite(f"unknown type {schema!r}")
        return _datum(r, named, namespace, names)
    if isinstance(schema, list):
        index = r.long()
        if not 0 <= index < len(schema):
            raise NotLite(f"union branch {index}")
        return _datum(r, schema[index], namespace, names)
    kind = schema["type"]
    if kind in ("record", "error"):
        inner = _full_name(schema["name"], schema.get("namespace", namespace)).rpartition(".")[0]
        return {f["name"]: _datum(r, f["type"], inner, names) for f in schema["fields"]}
    if kind == "array":
        items = schema["items"]
        return _blocks(r, lambda rr: _datum(rr, items, namespace, names))
    if kind == "map":
        values = schema["values"]
        return dict(_blocks(r, lambda rr: (rr.bytes_().decode("utf-8"), _datum(rr, values, namespace, names))))
    if kind == "enum":
        symbols = schema["symbols"]
        index = r.long()
        if not 0 <= index < len(symbols):
            raise NotLite(f"enum index {index}")
        return symbols[index]
    if kind == "fixed":
        return r.raw(schema["size"])
    return _datum(r, kind, namespace, names)  # ({"type": "string", ...}: a primitive with properties)

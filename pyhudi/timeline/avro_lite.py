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
    return name, _reader_of(schema_bytes, schema)(_Reader(block))


_READERS: dict[bytes, Any] = {}


def _reader_of(schema_bytes: bytes, schema: Any) -> Any:
    """The datum reader of a writer schema, built once per schema text (every commit of a table
    embeds the same one)."""
    found = _READERS.get(schema_bytes)
    if found is None:
        names: dict[str, Any] = {}
        _register(schema, "", names)
        found = _compile(schema, "", names, {})
        if len(_READERS) >= 64:
            _READERS.clear()
        _READERS[schema_bytes] = found
    return found


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
        if count > len(reader.data) - reader.pos:  # (more items than bytes left: garbage, or nulls fastavro can take)
            raise NotLite(f"block of {count} items")
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


def _read_long(r: _Reader) -> int:
    return r.long()


def _read_string(r: _Reader) -> str:
    return r.bytes_().decode("utf-8")


def _read_bytes(r: _Reader) -> bytes:
    return r.bytes_()


def _read_boolean(r: _Reader) -> bool:
    return r.raw(1) != b"\x00"


def _read_double(r: _Reader) -> float:
    return _DOUBLE.unpack(r.raw(8))[0]


def _read_float(r: _Reader) -> float:
    return _FLOAT.unpack(r.raw(4))[0]


def _read_null(r: _Reader) -> None:
    return None


_PRIMITIVE_READERS = {"null": _read_null, "long": _read_long, "int": _read_long, "string": _read_string,
                      "boolean": _read_boolean, "double": _read_double, "float": _read_float, "bytes": _read_bytes}


def _compile(schema: Any, namespace: str, names: dict[str, Any], built: dict[str, Any]) -> Any:
    """A function reading one datum of ``schema`` (named types built once; a record that refers
    to itself reads through a forward reference)."""
    if isinstance(schema, str):
        primitive = _PRIMITIVE_READERS.get(schema)
        if primitive is not None:
            return primitive
        full = _full_name(schema, namespace) if _full_name(schema, namespace) in names else schema
        if full not in names:
            raise NotLite(f"unknown type {schema!r}")
        if full not in built:
            cell: list = []
            built[full] = lambda r: cell[0](r)  # (forward reference while it is being built)
            cell.append(_compile(names[full], namespace, names, built))
            built[full] = cell[0]
        return built[full]
    if isinstance(schema, list):
        branches = [_compile(branch, namespace, names, built) for branch in schema]

        def read_union(r: _Reader) -> Any:
            index = r.long()
            if not 0 <= index < len(branches):
                raise NotLite(f"union branch {index}")
            return branches[index](r)
        return read_union
    kind = schema["type"]
    if kind in ("record", "error"):
        inner = _full_name(schema["name"], schema.get("namespace", namespace)).rpartition(".")[0]
        fields = [(f["name"], _compile(f["type"], inner, names, built)) for f in schema["fields"]]
        return lambda r: {name: read(r) for name, read in fields}
    if kind == "array":
        items = _compile(schema["items"], namespace, names, built)
        return lambda r: _blocks(r, items)
    if kind == "map":
        values = _compile(schema["values"], namespace, names, built)
        return lambda r: dict(_blocks(r, lambda rr: (rr.bytes_().decode("utf-8"), values(rr))))
    if kind == "enum":
        symbols = schema["symbols"]

        def read_enum(r: _Reader) -> str:
            index = r.long()
            if not 0 <= index < len(symbols):
                raise NotLite(f"enum index {index}")
            return symbols[index]
        return read_enum
    if kind == "fixed":
        size = schema["size"]
        return lambda r: r.raw(size)
    return _compile(kind, namespace, names, built)  # ({"type": "string", ...}: a primitive with properties)

"""Serde machinery shared by the timeline metadata models.

A model is a frozen dataclass bound to one Avro record schema of :mod:`pyhudi.timeline.schemas` by
:func:`avro_model`. The binding is the single mapping between Python and Hudi names: the Python
attribute of an Avro field is its name in snake_case (``partitionToWriteStats`` →
``partition_to_write_stats``), and the defaults come from the schema. The class body only declares
the attributes with their types; the decorator checks at import time that they are exactly the
schema's fields, in order, so the two can never drift apart silently.

Wire formats:

* **Avro** (timeline layout 2, and table-service instants of layout 1): an Object Container File
  with the writer schema embedded, codec null, exactly one record. We write it the way Java's
  ``DataFileWriter`` does (only ``avro.schema`` in the file metadata) and read it with the writer
  schema it carries, so files written by other Hudi versions parse: unknown fields are ignored,
  missing fields take the schema default.
* **JSON** (timeline layout 1 commit metadata, Jackson-serialised POJOs): the same camelCase keys.
"""

from __future__ import annotations

import binascii
import inspect
import io
import json
import re
from typing import Any, Callable, ClassVar, TypeVar

from pyhudi.errors import MetadataError
from pyhudi.timeline import schemas

AVRO_MAGIC = b"Obj\x01"
SCHEMA_KEY = "schema"
"""extraMetadata key holding the writer's Avro schema (JSON, without ``_hoodie_*`` fields)."""

_M = TypeVar("_M", bound="AvroModel")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})

#: fully qualified record name -> model class, for decoding nested records
_REGISTRY: dict[str, type[AvroModel]] = {}


def snake_case(avro_name: str) -> str:
    """The Python attribute name of an Avro field (``RollbackRequests`` → ``rollback_requests``)."""
    return _CAMEL_BOUNDARY.sub("_", avro_name).lower()


def detect_format(data: bytes) -> str:
    """``"empty"``, ``"avro"`` (container magic), ``"json"`` (an object) or ``"unknown"``."""
    if not data or not data.strip():
        return "empty"
    if data[:4] == AVRO_MAGIC:
        return "avro"
    if data.lstrip()[:1] == b"{":
        return "json"
    return "unknown"


# --- Avro Object Container File -------------------------------------------------------------


def _zigzag_long(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _avro_bytes(b: bytes) -> bytes:
    return _zigzag_long(len(b)) + b


def encode_container(schema_json: str, datum: bytes, record_json: bytes | None = None) -> bytes:
    """One-record Object Container File, laid out as Java's ``DataFileWriter`` writes it.

    The sync marker is derived from the content instead of being random, so the same metadata
    always serialises to the same bytes (a retried commit writes an identical instant file).
    ``record_json`` (the record as JSON) goes into the file metadata as :data:`JSON_COPY_KEY`
    (:func:`json_copy_entry`): readers that find it need no Avro decoder (docs/format.md).
    """
    import hashlib  # (writes only: a read imports less, issue 15)

    schema_bytes = schema_json.encode("utf-8")
    sync = hashlib.md5(schema_bytes + datum).digest()
    entries = [(b"avro.schema", schema_bytes)]
    if record_json is not None:
        entries.append((JSON_COPY_KEY, json_copy_entry(schema_bytes, record_json, datum)))
    header = AVRO_MAGIC + _zigzag_long(len(entries))
    for key, value in entries:
        header += _avro_bytes(key) + _avro_bytes(value)
    header += _zigzag_long(0) + sync
    block = _zigzag_long(1) + _zigzag_long(len(datum)) + datum + sync
    return header + block


JSON_COPY_KEY = b"pyhudi.record.json"
"""File-metadata key of the JSON copy of a commit's record (pyhudi's own: Avro reserves only
``avro.*`` keys, and Hudi's and hudi-rs's readers ignore the others)."""


def json_copy_entry(schema: bytes, record_json: bytes, datum: bytes | memoryview) -> bytes:
    """The :data:`JSON_COPY_KEY` value: the CRC-32 of the writer schema, the JSON and the Avro
    datum together (8 hex digits), then the JSON. The checksum ties the copy to the schema and
    datum beside it: a copy that does not match them (a damaged file, or a tool that rewrote the
    datum or the schema and kept the rest of the metadata) is ignored and the datum decoded."""
    return b"%08x" % _copy_crc(schema, record_json, datum) + record_json


def _copy_crc(schema: bytes, record_json: bytes, datum: bytes | memoryview) -> int:
    return binascii.crc32(datum, binascii.crc32(record_json, binascii.crc32(schema)))  # (zlib's CRC-32)


def _json_copy(value: bytes, schema: bytes, datum: bytes | memoryview) -> dict[str, Any] | None:
    """The record a :func:`json_copy_entry` value holds, or None when it does not match
    ``schema`` and ``datum``."""
    record_json = value[8:]
    try:
        if int(value[:8], 16) != _copy_crc(schema, record_json, datum):
            return None
        record = json.loads(record_json)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def read_container(data: bytes) -> tuple[str, dict[str, Any] | None]:
    """(fully qualified writer record name, first record or None) of an Avro container file.

    Hudi stores exactly one record; a container without records reads as None (treated like an
    empty file by callers). Raises :class:`MetadataError` on anything that is not a valid container.
    """
    if data[:4] != AVRO_MAGIC:
        raise MetadataError("not an Avro container file (no 'Obj\\x01' magic)")
    quick = _read_plain_container(data)
    if quick is not None:
        return quick
    import fastavro  # (on first use: `import pyhudi` stays light, issue 15)

    try:
        reader = fastavro.reader(io.BytesIO(data))
        writer_schema = reader.writer_schema
        record = next(iter(reader), None)
    except MetadataError:
        raise
    except Exception as exc:  # fastavro raises a zoo of types on truncated/garbled input
        raise MetadataError(f"undecodable Avro container: {exc}") from exc
    return _container_result(writer_schema.get("name", "") if isinstance(writer_schema, dict) else "", record)


def _read_plain_container(data: bytes) -> tuple[str, dict[str, Any] | None] | None:
    """The record of a container as the instants pyhudi and Hudi write (null codec, one block),
    from its JSON copy when it has one that matches (:data:`JSON_COPY_KEY`: a cold read then
    loads no Avro decoder, issue 15), else decoded with its embedded writer schema parsed once
    per process (parsing it was most of the cost of decoding a commit: every write decodes the
    one before it). None for anything else — the general reader decides (and names what is
    wrong)."""
    try:
        buf = io.BytesIO(data)
        buf.seek(4)
        meta: dict[bytes, bytes] = {}
        while True:
            count = _read_long(buf)
            if count == 0:
                break
            if count < 0:
                count = -count
                _read_long(buf)  # (the block's size in bytes)
            for _ in range(count):
                key = buf.read(_read_long(buf))
                meta[key] = buf.read(_read_long(buf))
        sync = buf.read(16)
        schema = meta.get(b"avro.schema")
        if schema is None or meta.get(b"avro.codec", b"null") != b"null" or len(sync) != 16:
            return None
        if buf.tell() == len(data):
            return _container_result(_record_name(schema), None)  # (no blocks: no record)
        records, size = _read_long(buf), _read_long(buf)
        start = buf.tell()
        if records != 1 or data[start + size:start + size + 16] != sync or start + size + 16 != len(data):
            return None
        copy = meta.get(JSON_COPY_KEY)
        if copy is not None:
            record = _json_copy(copy, schema, memoryview(data)[start:start + size])
            if record is not None:
                return _container_result(_record_name(schema), record)
        record = _schemaless_read(buf, schema)
        if buf.tell() != start + size:
            return None
        return _container_result(_record_name(schema), record)
    except Exception:  # (garbled input: the general reader raises the error)
        return None


_WRITER_SCHEMAS: dict[bytes, Any] = {}  # embedded schema JSON -> parsed schema
_RECORD_NAMES: dict[bytes, str] = {}  # embedded schema JSON -> fully qualified record name


def _record_name(schema: bytes) -> str:
    """The fully qualified name of the record an embedded writer schema declares (Avro's rule:
    a dotted name is already full, else the namespace prefixes it)."""
    name = _RECORD_NAMES.get(schema)
    if name is None:
        parsed = json.loads(schema)
        name = parsed.get("name", "") if isinstance(parsed, dict) else ""
        namespace = parsed.get("namespace") if isinstance(parsed, dict) else None
        if name and "." not in name and namespace:
            name = f"{namespace}.{name}"
        if len(_RECORD_NAMES) < 64:
            _RECORD_NAMES[schema] = name
    return name


def _schemaless_read(buf: io.BytesIO, schema: bytes) -> Any:
    import fastavro

    parsed = _WRITER_SCHEMAS.get(schema)
    if parsed is None:
        parsed = fastavro.parse_schema(json.loads(schema))
        if len(_WRITER_SCHEMAS) < 64:
            _WRITER_SCHEMAS[schema] = parsed
    return fastavro.schemaless_reader(buf, parsed)


def _read_long(buf: io.BytesIO) -> int:
    shift = result = 0
    while True:
        byte = buf.read(1)
        if not byte:
            raise EOFError("truncated Avro long")
        b = byte[0]
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1)
        shift += 7
        if shift > 63:
            raise ValueError("Avro long too long")


def _container_result(name: str, record: Any) -> tuple[str, dict[str, Any] | None]:
    if record is not None and not isinstance(record, dict):
        raise MetadataError(f"Avro container holds a {type(record).__name__}, not a record")
    return name, record


def read_json(data: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MetadataError(f"undecodable JSON metadata: {exc}") from exc
    if not isinstance(obj, dict):
        raise MetadataError(f"JSON metadata is a {type(obj).__name__}, not an object")
    return obj


def decode_record(action: str, data: bytes) -> dict[str, Any] | None:
    """The plain record of a completed instant's file (camelCase keys, as Avro or JSON holds it;
    None for an empty file), without building a model: a read asks a few fields of each commit
    (its schema, the files it wrote), and the models cost more to load than a cold read's
    metadata work (issue 15).

    Raises:
        MetadataError: naming the action, if the bytes are neither an Avro container nor JSON.
    """
    fmt = detect_format(data)
    if fmt == "empty":
        return None
    where = f"{action.lower()} instant (COMPLETED)"
    try:
        if fmt == "avro":
            return read_container(data)[1]
        if fmt == "json":
            return read_json(data)
        raise MetadataError(f"content is neither an Avro container nor JSON (starts with {bytes(data[:8])!r})")
    except MetadataError as exc:
        raise MetadataError(f"{where}: {exc}") from exc


def decode_commit_summary(action: str, data: bytes) -> tuple[str | None, dict[str, str]]:
    """``(operationType, extraMetadata)`` of a completed commit's file, without building the
    whole model.

    Every write looks up the schema and families the latest commit recorded; decoding every
    write stat of a large commit into model objects for two fields would cost milliseconds.

    Raises:
        MetadataError: naming the action, if the bytes are neither an Avro container nor JSON.
    """
    return commit_summary(action, decode_record(action, data))


def commit_summary(action: str, record: dict[str, Any] | None) -> tuple[str | None, dict[str, str]]:
    """:func:`decode_commit_summary` of a record already decoded (:func:`decode_record`)."""
    record = record or {}
    extra = record.get("extraMetadata") or {}
    if not isinstance(extra, dict):
        raise MetadataError(f"{action.lower()} instant (COMPLETED): extraMetadata is a {type(extra).__name__}, "
                            "not a map")
    operation = record.get("operationType")
    return (str(operation) if operation is not None else None), {str(k): v for k, v in extra.items()}


# --- schema-driven conversion ------------------------------------------------------------------


def _schema_default(field: dict[str, Any]) -> Any:
    """Default of an Avro field for a Python model: the schema default, else null/zero."""
    if "default" in field:
        return field["default"]
    ftype = field["type"]
    if isinstance(ftype, list):
        return None if "null" in ftype else _zero(ftype[0])
    return _zero(ftype)


def _zero(t: Any) -> Any:
    name = t["type"] if isinstance(t, dict) else t
    return {"string": "", "long": 0, "int": 0, "boolean": False, "double": 0.0, "float": 0.0,
            "bytes": b"", "array": [], "map": {}}.get(name)


def _dataclass_default(value: Any) -> Any:
    import dataclasses  # (models are built where pyhudi.timeline.metadata is imported; not on a cold read)

    if isinstance(value, list):
        return dataclasses.field(default_factory=list)
    if isinstance(value, dict):
        return dataclasses.field(default_factory=dict)
    return value


def _fresh(value: Any) -> Any:
    return list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value


def _decode(t: Any, value: Any) -> Any:
    """Convert a value read from Avro/JSON to model form, guided by *our* schema type ``t``."""
    if value is None:
        return None
    if isinstance(t, list):
        branches = [b for b in t if b != "null"]
        return _decode(branches[0], value) if len(branches) == 1 else value
    if isinstance(t, str):
        if t in _PRIMITIVES:
            if t in ("double", "float") and isinstance(value, int) and not isinstance(value, bool):
                return float(value)
            return value
        model = _REGISTRY.get(t if "." in t else f"{schemas.NAMESPACE}.{t}")
        if model is None:
            raise MetadataError(f"no model for Avro type {t!r}")
        return model.from_dict(value)
    kind = t["type"]
    if kind == "record":
        model = _REGISTRY.get(schemas.full_name(t))
        return model.from_dict(value) if model is not None else value
    if kind == "array":
        if not isinstance(value, list):
            raise MetadataError(f"expected an array, got {type(value).__name__}")
        return [_decode(t["items"], v) for v in value]
    if kind == "map":
        if not isinstance(value, dict):
            raise MetadataError(f"expected a map, got {type(value).__name__}")
        return {str(k): _decode(t["values"], v) for k, v in value.items()}
    return _decode(kind, value)


def _encode(value: Any) -> Any:
    """Model form → plain Avro record form (camelCase dicts, lists, maps)."""
    if isinstance(value, AvroModel):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


# --- model base + binding ----------------------------------------------------------------------


class AvroModel:
    """Base of every timeline metadata model; see :func:`avro_model`."""

    __avro_schema__: ClassVar[dict[str, Any]]
    __avro_schema_json__: ClassVar[str]
    __avro_json_copy__: ClassVar[bool] = False
    """Whether the container also carries the record as JSON (:data:`JSON_COPY_KEY`)."""
    __avro_fields__: ClassVar[tuple[tuple[str, str, Any, Any], ...]]  # (attr, avro name, type, default)

    @classmethod
    def from_dict(cls: type[_M], record: dict[str, Any]) -> _M:
        """Build from a camelCase record (as read from Avro or JSON); unknown keys are ignored."""
        if not isinstance(record, dict):
            raise MetadataError(f"{cls.__name__}: expected a record, got {type(record).__name__}")
        kwargs = {}
        for attr, avro_name, ftype, default in cls.__avro_fields__:
            kwargs[attr] = _decode(ftype, record[avro_name]) if avro_name in record else _fresh(default)
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        """The camelCase record, in schema field order (what is written to Avro or JSON)."""
        return {avro_name: _encode(getattr(self, attr)) for attr, avro_name, _, _ in self.__avro_fields__}

    @classmethod
    def from_avro_bytes(cls: type[_M], data: bytes) -> _M:
        """Read an Avro container (writer schema from the file); empty bytes → default model."""
        if detect_format(data) == "empty":
            return cls()
        _, record = read_container(data)
        return cls() if record is None else cls.from_dict(record)

    @classmethod
    def from_json_bytes(cls: type[_M], data: bytes) -> _M:
        """Read layout-1 (0.x) JSON metadata; empty bytes → default model."""
        if detect_format(data) == "empty":
            return cls()
        return cls.from_dict(read_json(data))

    def to_avro_bytes(self) -> bytes:
        """One-record Avro container with our (Hudi's) writer schema embedded, codec null."""
        import fastavro
        from fastavro.validation import ValidationError

        cls = type(self)
        record = self.to_dict()
        parsed = _parsed_schema(cls)
        buf = io.BytesIO()
        try:
            # validate up front only when the writer refuses: validation of every union branch is
            # most of the cost of encoding a commit (a fixed cost of every write)
            fastavro.schemaless_writer(buf, parsed, record)
        except (TypeError, ValueError, OverflowError, KeyError, AttributeError):
            pass
        else:
            return encode_container(cls.__avro_schema_json__, buf.getvalue(), _record_json(cls, record))
        try:
            fastavro.validate(record, parsed, raise_errors=True)
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, parsed, record)
        except (ValidationError, TypeError, ValueError, OverflowError, KeyError, AttributeError) as exc:
            raise MetadataError(f"cannot encode {cls.__name__} as {cls.__avro_schema__['name']}: {exc}") from exc
        return encode_container(cls.__avro_schema_json__, buf.getvalue(), _record_json(cls, record))

    def to_json_bytes(self) -> bytes:
        """Layout-1 style JSON (for debugging and legacy tools; layout 2 always writes Avro)."""
        return json.dumps(self.to_dict(), indent=2).encode("utf-8")


def _record_json(cls: type[AvroModel], record: dict[str, Any]) -> bytes | None:
    """The JSON copy a model's container carries (:data:`JSON_COPY_KEY`), for the models whose
    records a read fetches (``__avro_json_copy__``); None for the others and for records JSON
    cannot spell."""
    if not cls.__avro_json_copy__:
        return None
    try:
        return json.dumps(record, separators=(",", ":"), allow_nan=False).encode("ascii")
    except (TypeError, ValueError):
        return None


_PARSED: dict[type, Any] = {}


def _parsed_schema(cls: type[AvroModel]) -> Any:
    parsed = _PARSED.get(cls)
    if parsed is None:
        import fastavro

        parsed = _PARSED[cls] = fastavro.parse_schema(cls.__avro_schema__, named_schemas={})
    return parsed


def avro_model(record_schema: dict[str, Any]) -> Callable[[type[_M]], type[_M]]:
    """Bind a model class to an Avro record schema and turn it into a frozen dataclass.

    The class declares its attributes (annotations only, no defaults); this decorator derives the
    attribute ↔ Avro-name mapping and the defaults from the schema and refuses (TypeError at import)
    a class whose attributes are not exactly the schema's fields in schema order. A subclass of a
    bound model (ReplaceCommitMetadata extends CommitMetadata) declares only the fields it adds.
    """

    def bind(cls: type[_M]) -> type[_M]:
        import dataclasses

        spec = []
        for f in record_schema["fields"]:
            spec.append((snake_case(f["name"]), f["name"], f["type"], _schema_default(f)))
        inherited = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []
        own = list(inspect.get_annotations(cls))
        declared = inherited + own
        expected = [s[0] for s in spec]
        if declared != expected:
            raise TypeError(f"{cls.__name__} declares {declared}, schema {record_schema['name']} needs {expected}")
        by_attr = {s[0]: s for s in spec}
        if inherited:
            for f in dataclasses.fields(cls):
                theirs = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
                if theirs != by_attr[f.name][3]:
                    raise TypeError(f"{cls.__name__}.{f.name}: inherited default differs from the schema")
        for attr in own:
            if attr in cls.__dict__:
                raise TypeError(f"{cls.__name__}.{attr}: defaults come from the schema, do not declare one")
            setattr(cls, attr, _dataclass_default(by_attr[attr][3]))
        cls = dataclasses.dataclass(frozen=True)(cls)
        cls.__avro_fields__ = tuple(spec)
        cls.__avro_schema__ = schemas.standalone(record_schema)
        cls.__avro_schema_json__ = schemas.to_json(cls.__avro_schema__)
        _REGISTRY.setdefault(schemas.full_name(record_schema), cls)
        return cls

    return bind


def model_for_record(full_record_name: str) -> type[AvroModel] | None:
    """The model class bound to a fully qualified Avro record name, if any."""
    return _REGISTRY.get(full_record_name)


__all__ = [
    "AVRO_MAGIC",
    "SCHEMA_KEY",
    "decode_commit_summary",
    "decode_record",
    "commit_summary",
    "AvroModel",
    "avro_model",
    "detect_format",
    "encode_container",
    "model_for_record",
    "read_container",
    "read_json",
    "snake_case",
]

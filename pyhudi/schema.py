"""Arrow <-> Avro schemas and records, the way Apache Hudi spells them.

Hudi stores schemas as Avro JSON: in ``hoodie.properties`` (``hoodie.table.create.schema``), in
commit metadata and in the SCHEMA header of every log block. pyhudi's data lives in Arrow, so
both directions are needed: Arrow -> Avro when pyhudi writes (nullable unions ``["null", T]`` with
``"default": null``, named types laid out like Spark/Hudi name them) and Avro -> Arrow for
everything Apache Hudi writes (either union order, fixed or bytes decimals, enums, the
timestamp logical types).
"""

from __future__ import annotations

import functools
import json
from typing import Any, Iterable, Mapping

import pyarrow as pa

from pyhudi.errors import SchemaError

META_FIELDS: tuple[str, ...] = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)
"""The five meta columns, in the order they lead every Hudi base file and data block."""

COMMIT_TIME_FIELD, COMMIT_SEQNO_FIELD, RECORD_KEY_FIELD, PARTITION_PATH_FIELD, FILE_NAME_FIELD = META_FIELDS

LIST_ITEM_NAME = "element"
"""Name of a list's item field; ``element`` is what Parquet files written by Spark/Hudi carry."""

_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}

_TIMESTAMP_LOGICAL: dict[str, tuple[str, str | None]] = {
    # Hudi's readers normalise every timestamp to microseconds; millis are widened losslessly.
    "timestamp-millis": ("us", "UTC"),
    "timestamp-micros": ("us", "UTC"),
    "timestamp-nanos": ("ns", "UTC"),
    "local-timestamp-millis": ("us", None),
    "local-timestamp-micros": ("us", None),
    "local-timestamp-nanos": ("ns", None),
}


SOFT_DELETE_FIELD = "_hoodie_is_deleted"
"""Hudi's soft-delete column: a true value in a written row deletes the record (a boolean)."""


def check_soft_delete_field(field: pa.Field) -> None:
    """Refuse a ``_hoodie_is_deleted`` column that is not boolean: Hudi reads it as one (a string
    ``"true"`` would be a live row to one reader and a delete to another)."""
    if field.name == SOFT_DELETE_FIELD and not pa.types.is_boolean(field.type):
        raise SchemaError(f"column {SOFT_DELETE_FIELD!r} marks soft deletes and must be boolean, got {field.type}")


def hudi_record_names(table_name: str) -> tuple[str, str]:
    """The Avro record name and namespace Hudi uses for a table: ``<t>_record``, ``hoodie.<t>``."""
    return f"{table_name}_record", f"hoodie.{table_name}"


def decimal_fixed_size(precision: int) -> int:
    """Fewest bytes whose two's complement holds every ``precision``-digit decimal (Spark's rule)."""
    if precision < 1:
        raise SchemaError(f"decimal precision must be >= 1, got {precision}")
    size = 1
    while 2 ** (8 * size - 1) - 1 < 10**precision - 1:
        size += 1
    return size


# --------------------------------------------------------------------------------- meta fields
def with_meta_fields(schema: pa.Schema) -> pa.Schema:
    """Prepend the five ``_hoodie_*`` columns (nullable strings) unless they already lead.

    Raises:
        SchemaError: a meta column is present but not in its place at the front.
    """
    names = schema.names
    if tuple(names[: len(META_FIELDS)]) == META_FIELDS:
        return schema
    misplaced = [n for n in META_FIELDS if n in names]
    if misplaced:
        raise SchemaError(f"meta columns {misplaced} must be the first five columns, in order {list(META_FIELDS)}")
    meta = [pa.field(name, pa.string(), nullable=True) for name in META_FIELDS]
    return pa.schema(meta + list(schema), metadata=schema.metadata)


def without_meta_fields(schema: pa.Schema) -> pa.Schema:
    """The data columns only (drops any ``_hoodie_*`` meta column)."""
    return pa.schema([f for f in schema if f.name not in META_FIELDS], metadata=schema.metadata)


# --------------------------------------------------------------------------------- Arrow -> Avro
def avro_schema_from_arrow(schema: pa.Schema, record_name: str, namespace: str) -> dict:
    """The Avro record schema (as a JSON-ready dict) of an Arrow schema, Hudi style.

    Nullable fields become ``["null", T]`` with ``"default": null``; non-nullable fields stay
    ``T``. Named types follow Spark/Hudi's naming so that schemas compare equal to Hudi's: a nested
    struct is a record named after its field in namespace ``<parent ns>.<parent record>``, a
    decimal is ``fixed`` named ``fixed`` in namespace ``<ns>.<record>.<field>``.
    """
    return _record_from_fields(list(schema), record_name, namespace)


@functools.lru_cache(maxsize=256)
def avro_schema_json(schema: pa.Schema, table_name: str) -> str:
    """Compact Avro JSON for ``schema`` with Hudi's record naming for ``table_name``.

    Memoised: every commit and every data block header spells the table's schema, and a wide
    schema takes milliseconds to convert (Arrow schemas are immutable and hashable)."""
    record_name, namespace = hudi_record_names(table_name)
    return json.dumps(avro_schema_from_arrow(schema, record_name, namespace), separators=(",", ":"))


def _record_from_fields(fields: Iterable[pa.Field], name: str, namespace: str) -> dict:
    child_ns = f"{namespace}.{name}" if namespace else name
    out = []
    for field in fields:
        avro_type = _avro_type(field.type, field.name, child_ns)
        if field.nullable:
            out.append({"name": field.name, "type": ["null", avro_type], "default": None})
        else:
            out.append({"name": field.name, "type": avro_type})
    record: dict[str, Any] = {"type": "record", "name": name}
    if namespace:
        record["namespace"] = namespace
    record["fields"] = out
    return record


def _nullable(avro_type: Any, nullable: bool) -> Any:
    return ["null", avro_type] if nullable else avro_type


def _avro_type(t: pa.DataType, field_name: str, ns: str) -> Any:
    """Avro type of one Arrow type; ``ns`` is the full name of the enclosing record."""
    if pa.types.is_dictionary(t):
        return _avro_type(t.value_type, field_name, ns)
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return "int"
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return "long"
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "bytes"
    if pa.types.is_decimal(t):
        if not 0 <= t.scale <= t.precision:
            raise SchemaError(f"column {field_name!r} has type {t}: Avro (and Hudi) decimals need "
                              f"0 <= scale <= precision")
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{ns}.{field_name}",
            "size": decimal_fixed_size(t.precision),
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    if pa.types.is_fixed_size_binary(t):
        return {"type": "fixed", "name": "fixed", "namespace": f"{ns}.{field_name}", "size": t.byte_width}
    if pa.types.is_date(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(t):
        millis = t.unit in ("s", "ms")
        if t.tz is None:
            return {"type": "long", "logicalType": "local-timestamp-millis" if millis else "local-timestamp-micros"}
        return {"type": "long", "logicalType": "timestamp-millis" if millis else "timestamp-micros"}
    if pa.types.is_time32(t):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_time64(t):
        return {"type": "long", "logicalType": "time-micros"}
    if pa.types.is_struct(t):
        names = [f.name for f in t]
        if not names:
            raise SchemaError(f"column {field_name!r} is a struct without fields, which Parquet cannot store")
        if len(set(names)) != len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            raise SchemaError(f"column {field_name!r} is a struct with the field name {twice[0]!r} twice "
                              "(Avro record fields need distinct names)")
        return _record_from_fields(list(t), field_name, ns)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or pa.types.is_list_view(t):
        item = t.value_field
        return {"type": "array", "items": _nullable(_avro_type(item.type, field_name, ns), item.nullable)}
    if pa.types.is_map(t):
        if not (pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)):
            raise SchemaError(f"Avro maps need string keys; column {field_name!r} has {t.key_type}")
        item = t.item_field
        return {"type": "map", "values": _nullable(_avro_type(item.type, field_name, ns), item.nullable)}
    raise SchemaError(f"Arrow type {t} of column {field_name!r} has no Avro equivalent")


def has_order(t: pa.DataType) -> bool:
    """Whether values of ``t`` compare (an ordering field needs it): lists, structs and maps do not."""
    if pa.types.is_dictionary(t):
        return has_order(t.value_type)
    return not pa.types.is_nested(t)


# --------------------------------------------------------------------------------- Avro -> Arrow
def parse_avro_schema(avro: dict | str) -> dict:
    """The Avro schema as a dict (``avro`` may be its JSON text)."""
    if isinstance(avro, (str, bytes)):
        try:
            avro = json.loads(avro)
        except ValueError as exc:
            raise SchemaError(f"invalid Avro schema JSON: {exc}") from exc
    if not isinstance(avro, dict):
        raise SchemaError(f"an Avro record schema must be a JSON object, got {type(avro).__name__}")
    return avro


def arrow_schema_from_avro(avro: dict | str) -> pa.Schema:
    """The Arrow schema of an Avro record schema written by Hudi (or by pyhudi).

    Timestamps become ``timestamp[us, tz="UTC"]`` (``local-timestamp-*``: no time zone), decimals
    (fixed or bytes) ``decimal128``, enums ``string``. A union of null and one type is that type,
    nullable, whichever order the branches are in.

    Raises:
        SchemaError: not a record, or a type Arrow cannot hold (a union of two non-null types).
    """
    avro = parse_avro_schema(avro)
    if avro.get("type") != "record":
        raise SchemaError(f"expected an Avro record schema, got type {avro.get('type')!r}")
    converter = _AvroToArrow()
    return pa.schema(converter.fields(avro, avro.get("namespace", "")))


class _AvroToArrow:
    """One conversion; remembers named types so later references by name resolve."""

    def __init__(self) -> None:
        self.named: dict[str, pa.DataType] = {}

    def fields(self, record: dict, enclosing_ns: str) -> list[pa.Field]:
        ns = self._register_ns(record, enclosing_ns)
        out = []
        for f in record.get("fields", []):
            t, nullable = self.convert(f["type"], ns)
            out.append(pa.field(f["name"], t, nullable=nullable))
        return out

    def _register_ns(self, named: dict, enclosing_ns: str) -> str:
        name = named["name"]
        if "." in name:
            return name.rsplit(".", 1)[0]
        return named.get("namespace", enclosing_ns) or ""

    def _full_name(self, named: dict, enclosing_ns: str) -> str:
        name = named["name"]
        if "." in name:
            return name
        ns = named.get("namespace", enclosing_ns)
        return f"{ns}.{name}" if ns else name

    def convert(self, avro_type: Any, ns: str) -> tuple[pa.DataType, bool]:
        """(Arrow type, nullable) of an Avro type in the context of namespace ``ns``."""
        if isinstance(avro_type, list):
            branches = [b for b in avro_type if b != "null" and not (isinstance(b, dict) and b.get("type") == "null")]
            has_null = len(branches) < len(avro_type)
            if len(branches) == 0:
                return pa.null(), True
            if len(branches) > 1:
                raise SchemaError(f"Avro union {json.dumps(avro_type)} has more than one non-null branch")
            t, inner_nullable = self.convert(branches[0], ns)
            return t, has_null or inner_nullable
        if isinstance(avro_type, str):
            if avro_type in _PRIMITIVES:
                return _PRIMITIVES[avro_type], avro_type == "null"
            for key in (f"{ns}.{avro_type}" if ns else avro_type, avro_type):
                if key in self.named:
                    return self.named[key], False
            raise SchemaError(f"unknown Avro type name {avro_type!r}")
        if not isinstance(avro_type, dict):
            raise SchemaError(f"invalid Avro type {avro_type!r}")
        kind = avro_type.get("type")
        if isinstance(kind, (list, dict)):  # {"type": {...}} wrappers
            return self.convert(kind, ns)
        logical = avro_type.get("logicalType")
        if kind == "record" or kind == "error":
            full = self._full_name(avro_type, ns)
            struct = pa.struct(self.fields(avro_type, ns))
            self.named[full] = struct
            return struct, False
        if kind == "enum":
            self.named[self._full_name(avro_type, ns)] = pa.string()
            return pa.string(), False
        if kind == "fixed":
            t = _decimal_type(avro_type) if logical == "decimal" else pa.binary(int(avro_type["size"]))
            self.named[self._full_name(avro_type, ns)] = t
            return t, False
        if kind == "array":
            item, item_nullable = self.convert(avro_type["items"], ns)
            return pa.list_(pa.field(LIST_ITEM_NAME, item, nullable=item_nullable)), False
        if kind == "map":
            value, value_nullable = self.convert(avro_type["values"], ns)
            return pa.map_(pa.string(), pa.field("value", value, nullable=value_nullable)), False
        if kind == "bytes" and logical == "decimal":
            return _decimal_type(avro_type), False
        if kind == "int" and logical == "date":
            return pa.date32(), False
        if kind == "int" and logical == "time-millis":
            return pa.time32("ms"), False
        if kind == "long" and logical == "time-micros":
            return pa.time64("us"), False
        if kind == "long" and logical in _TIMESTAMP_LOGICAL:
            unit, tz = _TIMESTAMP_LOGICAL[logical]
            return pa.timestamp(unit, tz=tz), False
        if kind in _PRIMITIVES:  # unknown logical types fall back to the physical type (Avro rule)
            return _PRIMITIVES[kind], kind == "null"
        raise SchemaError(f"unsupported Avro type {json.dumps(avro_type)}")


def _decimal_type(avro_type: Mapping[str, Any]) -> pa.DataType:
    precision = int(avro_type["precision"])
    scale = int(avro_type.get("scale", 0))
    return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)


# --------------------------------------------------------------------------------- records
def avro_compatible_schema(schema: pa.Schema) -> pa.Schema:
    """The Arrow schema that survives Arrow -> Avro -> Arrow unchanged (e.g. int16 -> int32)."""
    avro = avro_schema_from_arrow(schema, "r", "")
    return arrow_schema_from_avro(avro)


def arrow_table_from_avro_records(records: list[dict], schema: pa.Schema) -> pa.Table:
    """Records decoded by fastavro (with logical types) -> an Arrow table of ``schema``.

    fastavro already turns decimals (fixed or bytes) into ``Decimal``, dates into ``date`` and
    timestamps into ``datetime``, which Arrow converts exactly; fields missing from a record
    (a partial schema) become null. This is Hudi's legacy Avro path, so a row-wise
    ``from_pylist`` is acceptable here.
    """
    try:
        return pa.Table.from_pylist(records, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
        raise SchemaError(f"Avro records do not match Arrow schema: {exc}") from exc


def avro_records_from_arrow(table: pa.Table | pa.RecordBatch) -> list[dict]:
    """An Arrow table -> plain dicts that fastavro encodes with ``avro_schema_from_arrow``.

    Columns are first cast to their Avro-compatible Arrow types (small ints widen, nanosecond
    timestamps truncate to microseconds as Spark does), maps come out as dicts.
    """
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    target = avro_compatible_schema(table.schema)
    columns = []
    for column, src, dst in zip(table.columns, table.schema, target):
        if src.type != dst.type:
            try:
                column = column.cast(dst.type, safe=not pa.types.is_timestamp(src.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaError(f"column {src.name!r} ({src.type}) cannot be written as Avro: {exc}") from exc
        columns.append(column)
    normalised = pa.Table.from_arrays(columns, schema=target)
    return normalised.to_pylist(maps_as_pydicts="strict")


__all__ = [
    "META_FIELDS",
    "COMMIT_TIME_FIELD",
    "COMMIT_SEQNO_FIELD",
    "RECORD_KEY_FIELD",
    "PARTITION_PATH_FIELD",
    "FILE_NAME_FIELD",
    "LIST_ITEM_NAME",
    "hudi_record_names",
    "decimal_fixed_size",
    "has_order",
    "with_meta_fields",
    "without_meta_fields",
    "avro_schema_from_arrow",
    "avro_schema_json",
    "parse_avro_schema",
    "arrow_schema_from_avro",
    "avro_compatible_schema",
    "arrow_table_from_avro_records",
    "avro_records_from_arrow",
]


def stored_type(t: pa.DataType) -> pa.DataType:
    """The type as Parquet stores it: string and binary in any of their Arrow spellings (large,
    view) are one Parquet type, read back as the plain one."""
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    return t

"""Partition layout of a table: how partition paths are made, found and pruned.

A :class:`PartitionLayout` answers three questions for readers and writers:

- **depth** — how many folder levels a partition path has: one per field for identity key
  generators, the levels of the formatted date for Hudi's TIMESTAMP generator (``yyyy/MM/dd/HH``
  is four levels for one field), unknown (None) for CUSTOM or unknown generators: their
  partitions are then found by the ``.hoodie_partition_metadata`` marker Hudi writes in each;
- **paths** — the partition path of every row (TIMESTAMP: :class:`TimestampKeyGen`, which
  follows ``TimestampBasedAvroKeyGenerator``: numbers are epoch values in the type's unit, a null
  is the value 1, date strings are parsed with the input patterns, the path is the output
  pattern in the output zone, prefixed ``field=`` hive-style);
- **pruning** — whether a partition can hold rows matching a filter on the source column. Paths
  are never compared with the column's values; a partition is skipped only when the *formatted*
  filter value proves it: ``=``/``in`` when its path differs from every formatted value; ranges
  on epoch numbers when the pattern lists fields from the year down (``yyyy/MM/dd``) in a zone
  without daylight saving, so formatting keeps order (``t >= v`` ⇒ path(t) >= path(v)).

Hudi uses the JVM's default zone when no zone is configured; pyhudi uses UTC (Hudi's documented
default), so tables written on UTC machines — the usual case — get the same paths.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from pyhudi.config import keygen as kg
from pyhudi.errors import ConfigError, PathEscapeError, SchemaError
from pyhudi.lazy import pc
from pyhudi.value import Value
from pyhudi.timeformat import (
    FORMAT_LETTERS,
    PARSE_LETTERS,
    Token,
    format_millis,
    is_fixed_offset,
    parse_pattern,
    parse_text,
    pattern_regex,
    zone_name,
)

_MS_PER_UNIT = {"NANOSECONDS": (1, 1_000_000), "MICROSECONDS": (1, 1000), "MILLISECONDS": (1, 1), "SECONDS": (1000, 1),
                "MINUTES": (60_000, 1), "HOURS": (3_600_000, 1), "DAYS": (86_400_000, 1)}
_MIN_PATH_MILLIS, _MAX_PATH_MILLIS = -62_135_596_800_000, 253_402_300_799_999
"""0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the instants a date path can name."""
_EPOCH_UNITS = {"EPOCHMILLISECONDS": "MILLISECONDS", "EPOCHMICROSECONDS": "MICROSECONDS", "UNIX_TIMESTAMP": "SECONDS"}
_ORDERS = ("yMdHmsS", "yDHmsS")
_RANGE_OPS = (">", ">=", "<", "<=")


class TimestampKeyGen(Value):
    """Hudi's timestamp-based key generator for one partition field (settings already checked)."""

    field: str
    timestamp_type: str
    unit: str | None
    input_patterns: tuple[tuple[Token, ...], ...]
    input_zone: str | None
    output: tuple[Token, ...]
    output_zone: str | None
    hive_style: bool

    def __init__(self, field: str, timestamp_type: str, unit: str | None, input_patterns: tuple[tuple[Token, ...], ...],
                 input_zone: str | None, output: tuple[Token, ...], output_zone: str | None, hive_style: bool) -> None:
        self._set(field=field, timestamp_type=timestamp_type, unit=unit, input_patterns=input_patterns,
                  input_zone=input_zone, output=output, output_zone=output_zone, hive_style=hive_style)

    @classmethod
    def from_properties(cls, props: Mapping[str, str], field: str, hive_style: bool) -> "TimestampKeyGen":
        """Read and check the ``hoodie.keygen.timebased.*`` settings; errors name the key."""
        kind = kg.TIMESTAMP_TYPE.get(props)
        if kind is None:
            raise ConfigError(f"the TIMESTAMP key generator needs {kg.TIMESTAMP_TYPE.key} "
                              f"(one of {', '.join(kg.TIMESTAMP_TYPES)})")
        output = parse_pattern(kg.OUTPUT_DATE_FORMAT.get(props), kg.OUTPUT_DATE_FORMAT.key)
        patterns: tuple[tuple[Token, ...], ...] = ()
        if kind in ("DATE_STRING", "MIXED"):
            raw = kg.INPUT_DATE_FORMAT.get(props)
            if not raw.strip():
                raise ConfigError(f"{kg.TIMESTAMP_TYPE.key}={kind} needs {kg.INPUT_DATE_FORMAT.key}")
            delimiter = kg.INPUT_DATE_FORMAT_DELIMITER.get(props)
            try:
                texts = re.split(delimiter, raw)
            except re.error as exc:
                raise ConfigError(f"{kg.INPUT_DATE_FORMAT_DELIMITER.key}={delimiter!r} is not a regex: {exc}") from None
            patterns = tuple(parse_pattern(t.strip(), kg.INPUT_DATE_FORMAT.key, PARSE_LETTERS) for t in texts)
        unit = _EPOCH_UNITS.get(kind)
        if kind == "SCALAR":  # (Hudi upper-cases the unit)
            unit = kg.SCALAR_TIME_UNIT.parse((kg.SCALAR_TIME_UNIT.raw(props) or kg.SCALAR_TIME_UNIT.default).upper())
        both = kg.TIMEZONE.get(props).strip()
        zones = [both or kg.INPUT_TIMEZONE.get(props).strip(), both or kg.OUTPUT_TIMEZONE.get(props).strip()]
        keys = [kg.TIMEZONE.key if both else k.key for k in (kg.INPUT_TIMEZONE, kg.OUTPUT_TIMEZONE)]
        input_zone, output_zone = (zone_name(z, k) if z else None for z, k in zip(zones, keys))
        return cls(field, kind, unit, patterns, input_zone, output, output_zone, hive_style)

    # ------------------------------------------------------------------------------ paths
    def paths(self, column: pa.Array | pa.ChunkedArray) -> pa.Array:
        """The partition path of every value (hive-style: ``field=`` + the formatted date)."""
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        textual = pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
        if textual and self.timestamp_type not in ("DATE_STRING", "MIXED"):
            column, textual = self._epoch_digits(column), False
        text = self._from_strings(column) if textual else self._from_numbers(column)
        return pc.binary_join_element_wise(f"{self.field}=", text, "") if self.hive_style else text

    def check_type(self, type_: pa.DataType) -> None:
        """Refuse a column type the configured timestamp type cannot read (as Hudi would fail)."""
        textual = pa.types.is_string(type_) or pa.types.is_large_string(type_)
        strings = self.timestamp_type in ("DATE_STRING", "MIXED")
        numeric = (pa.types.is_integer(type_) or pa.types.is_floating(type_) or pa.types.is_decimal(type_)
                   or pa.types.is_date(type_) or pa.types.is_timestamp(type_))
        if strings and not textual or not strings and not numeric:
            wanted = "date strings" if strings else "numbers, dates or timestamps"
            raise SchemaError(f"partition column {self.field!r} has type {type_}, but "
                              f"{kg.TIMESTAMP_TYPE.key}={self.timestamp_type} takes {wanted}")

    def _epoch_digits(self, column: pa.Array) -> pa.Array:
        """A string column of an epoch timestamp type as the numbers it spells: Apache Hudi's
        Spark writer records such a partition column as a string in the table's schema (what its
        reads return) while its files hold the numbers, so rows read from its table come back
        as strings of digits. The syntax is Java's ``Long.parseLong`` (a sign, digits; Arrow's
        cast alone would also take ``0x`` hexadecimal); anything else is refused, naming the value."""
        spelled = pc.match_substring_regex(column, r"^[-+]?[0-9]+$").fill_null(True)
        if pc.all(spelled).as_py():
            try:
                return pc.replace_substring_regex(column, r"^\+", "").cast(pa.int64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # (out of the long range)
                spelled = pa.array([v is None or -(1 << 63) <= int(v) < 1 << 63 for v in column.to_pylist()])
        bad = column.filter(pc.invert(spelled))[0].as_py()
        raise SchemaError(f"partition column {self.field!r}: value {bad!r} is not an epoch "
                          f"number, as {kg.TIMESTAMP_TYPE.key}={self.timestamp_type} needs")

    def _from_numbers(self, column: pa.Array) -> pa.Array:
        self.check_type(column.type)
        if pa.types.is_timestamp(column.type):  # as Hudi's Spark rows carry them: epoch microseconds
            column = column.cast(pa.timestamp("us"))
        elif pa.types.is_date(column.type):  # as Hudi takes a LocalDate: its epoch day, in the configured unit
            column = column.cast(pa.date32()).cast(pa.int32())
        try:
            if pa.types.is_floating(column.type) or pa.types.is_decimal(column.type):
                column = pc.trunc(column.cast(pa.float64()) if pa.types.is_decimal(column.type) else column)
            numbers = np.asarray(column.cast(pa.int64()).fill_null(1), dtype=np.int64)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise SchemaError(f"partition column {self.field!r} holds a value that is not an epoch number: "
                              f"{exc}") from None
        multiply, divide = _MS_PER_UNIT[self.unit]
        # years 1-9999 only (a date path names a calendar day): NumPy integers wrap silently on
        # overflow, and an instant past year 9999 formats into no date at all
        if multiply > 1:
            outside = (numbers < -(-_MIN_PATH_MILLIS // multiply)) | (numbers > _MAX_PATH_MILLIS // multiply)
            millis = np.where(outside, 0, numbers) * multiply
        else:
            millis = _truncating_divide(numbers, divide)
            outside = (millis < _MIN_PATH_MILLIS) | (millis > _MAX_PATH_MILLIS)
        if outside.any():
            bad = int(numbers[np.flatnonzero(outside)[0]])
            raise SchemaError(f"partition column {self.field!r} holds {bad}, out of range for "
                              f"{self.unit.lower()} since 1970 (a date path needs a year from 1 to 9999)")
        return format_millis(pa.array(millis), self.output, self.output_zone or "UTC")

    def _from_strings(self, column: pa.Array) -> pa.Array:
        self.check_type(column.type)
        column = column.cast(pa.string())
        default_zone = self.input_zone or self.output_zone or "UTC"
        default = format_millis(pa.array([1], pa.int64()), self.input_patterns[0], default_zone)[0]
        text = column.fill_null(default)
        parsed = parse_text(text, list(self.input_patterns), self.input_zone)
        if parsed.instant.null_count:
            bad = text.filter(parsed.instant.is_null())[0].as_py()
            raise SchemaError(f"partition column {self.field!r}: value {bad!r} does not match "
                              f"{kg.INPUT_DATE_FORMAT.key} ({', '.join(_spell(p) for p in self.input_patterns)})")
        if self.output_zone or self.input_zone:
            return format_millis(parsed.instant, self.output, self.output_zone or self.input_zone)
        return format_millis(parsed.wall, self.output, "UTC")  # Hudi keeps the offset each string carried

    @property
    def depth(self) -> int:
        """Folder levels of every path (the pattern's ``/`` are the same for every value)."""
        sample = format_millis(pa.array([0], pa.int64()), self.output, self.output_zone or "UTC")[0].as_py()
        return sample.count("/") + 1

    # ------------------------------------------------------------------------------ pruning
    def may_match(self, path: str, filters: Iterable[Any], type_: pa.DataType) -> bool:
        """False only when the formatted filter values prove ``path`` holds no matching row."""
        text = self._strip_hive(path)
        if text is None:
            return True
        for f in filters:
            if f.column != self.field:
                continue
            if f.op in ("=", "in"):
                formatted = self._formatted(f.value if f.op == "in" else [f.value], type_)
                if formatted is not None and text not in formatted:
                    return False
            elif f.op in _RANGE_OPS and self._orderable(type_):
                formatted = self._formatted([f.value], type_)
                have, bound = self._fields(text), self._fields(next(iter(formatted))) if formatted else None
                if have is None or bound is None:
                    continue
                if (have < bound) if f.op in (">", ">=") else (have > bound):
                    return False
        return True

    def _strip_hive(self, path: str) -> str | None:
        if not self.hive_style:
            return path
        prefix = f"{self.field}="
        return path[len(prefix):] if path.startswith(prefix) else None

    def _formatted(self, values: Sequence[Any], type_: pa.DataType) -> set[str] | None:
        """The paths (without ``field=``) of filter values, or None when one does not convert
        exactly to the column's type or cannot be formatted."""
        from pyhudi.read.filters import typed_values  # (the read layer builds on this module)

        try:
            exact, others = typed_values(list(values), type_)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError):
            return None
        if others or exact.null_count:
            return None
        try:
            plain = TimestampKeyGen(self.field, self.timestamp_type, self.unit, self.input_patterns, self.input_zone,
                                    self.output, self.output_zone, hive_style=False)
            paths = plain.paths(exact)
        except (SchemaError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        return set(paths.to_pylist())

    def _orderable(self, type_: pa.DataType) -> bool:
        """Whether formatting keeps the order of epoch numbers (see the module docstring)."""
        if self.unit is None or pa.types.is_string(type_) or pa.types.is_large_string(type_):
            return False
        if not is_fixed_offset(self.output_zone or "UTC"):
            return False
        letters = "".join(t.letter for t in self.output if t.letter)
        numeric = all(not (t.letter == "M" and t.count > 2 or t.letter == "y" and t.count == 2) for t in self.output)
        return numeric and len(set(letters)) == len(letters) and any(o.startswith(letters) for o in _ORDERS)

    def _fields(self, text: str) -> tuple[int, ...] | None:
        match = re.match(pattern_regex(self.output), text)
        return tuple(int(v) for v in match.groups()) if match else None


def _truncating_divide(numbers: np.ndarray, divide: int) -> np.ndarray:
    """Java's long division (toward zero), as ``TimeUnit.convert`` to a coarser unit does."""
    if divide == 1:
        return numbers
    quotient = numbers // divide
    return quotient + ((numbers % divide != 0) & (numbers < 0))


def _spell(tokens: tuple[Token, ...]) -> str:
    return "".join(t.letter * t.count if t.letter else t.text for t in tokens)


class PartitionLayout(Value):
    """How a table's partition paths relate to its partition columns (see the module docstring)."""

    fields: tuple[str, ...]
    kind: str | None
    timestamp: TimestampKeyGen | None = None

    def __init__(self, fields: tuple[str, ...], kind: str | None, timestamp: TimestampKeyGen | None = None) -> None:
        self._set(fields=fields, kind=kind, timestamp=timestamp)

    @property
    def identity(self) -> bool:
        return kg.is_identity(self.kind)

    def require_writable(self) -> None:
        """Refuse to write a table whose partition paths pyhudi cannot make as its key generator does."""
        if self.identity or self.timestamp is not None:
            return
        what = f"key generator {self.kind}" if self.kind else "an unknown key generator class"
        raise ConfigError(f"the table's partition paths are made by {what}, which pyhudi cannot reproduce: "
                          "pyhudi reads this table but does not write it (TIMESTAMP needs its "
                          f"{kg.TIMESTAMP_TYPE.key} and {kg.OUTPUT_DATE_FORMAT.key} settings)")

    def check_paths(self, paths: Iterable[str]) -> None:
        check_paths(paths, self.fields[0] if self.fields else "")

    @property
    def depth(self) -> int | None:
        if self.identity:
            return len(self.fields)
        return self.timestamp.depth if self.timestamp is not None else None


def partition_layout(config: Any) -> PartitionLayout:
    """The layout of a table from its ``hoodie.properties`` (a :class:`TableConfig`)."""
    from pyhudi.config import table as tc  # (config.table is below this module: no cycle at import)

    fields = tuple(config.partition_fields)
    kind = kg.keygen_type(config.get(tc.KEYGEN_TYPE), config.get(tc.KEYGEN_CLASS))
    if not fields:
        return PartitionLayout(fields, kind if kind else "")
    timestamp = None
    if kind == "TIMESTAMP" and len(fields) == 1 and kg.TIMESTAMP_TYPE.raw(config.props) is not None:
        try:
            timestamp = TimestampKeyGen.from_properties(config.props, fields[0], config.hive_style_partitioning)
        except ConfigError:
            timestamp = None  # settings pyhudi cannot follow: find partitions by marker, never prune
    return PartitionLayout(fields, kind, timestamp)


def check_paths(paths: Iterable[str], field: str) -> None:
    """Refuse formatted paths with empty, ``.``/``..`` or unsafe segments (a pattern literal)."""
    for path in paths:
        if any(s in ("", ".", "..") or "\\" in s or "\x00" in s for s in path.split("/")):
            raise PathEscapeError(f"partition path {path!r} formatted from column {field!r} cannot be used: "
                                  "empty, '.' or '..' folders and '\\\\' or NUL are not allowed")


def timestamp_table_properties(options: dict[str, str], partition_fields: Sequence[str],
                               record_key_fields: Sequence[str], schema: pa.Schema, hive_style: bool) -> dict[str, str]:
    """Check a new table's TIMESTAMP key generator options; the properties to store (canonical
    keys). Pops the keys it consumes from ``options``."""
    if len(partition_fields) != 1:
        raise ConfigError(f"the TIMESTAMP key generator partitions by exactly one field, got "
                          f"{len(partition_fields)} ({', '.join(partition_fields) or 'none'})")
    if len(record_key_fields) != 1:
        raise ConfigError("the TIMESTAMP key generator takes one record key field (Hudi's SimpleKeyGenerator keys), "
                          f"got {', '.join(record_key_fields)}")
    settings = kg.timestamp_settings(options)
    for key in kg.TIMESTAMP_KEYS:
        for name in (key.key, *key.aliases):
            options.pop(name, None)
    generator = TimestampKeyGen.from_properties(settings, partition_fields[0], hive_style)
    generator.check_type(schema.field(partition_fields[0]).type)
    try:
        check_paths([format_millis(pa.array([0], pa.int64()), generator.output, "UTC")[0].as_py()], partition_fields[0])
    except PathEscapeError as exc:
        raise ConfigError(f"{kg.OUTPUT_DATE_FORMAT.key}={_spell(generator.output)!r} makes unusable paths: "
                          f"{exc}") from None
    return settings


__all__ = ["FORMAT_LETTERS", "PartitionLayout", "TimestampKeyGen", "as_strings", "check_paths", "partition_layout",
           "record_keys", "timestamp_table_properties"]


# ------------------------------------------------------------------------------ record keys
def record_keys(data: pa.Table, key_fields: Sequence[str]) -> pa.ChunkedArray:
    """``_hoodie_record_key`` values: the raw value for one field, ``f1:v1,f2:v2`` for several.

    Empty strings are written as ``__empty__`` and nulls as ``__null__`` inside composite keys,
    as Hudi's complex key generator does.
    """
    if len(key_fields) == 1:
        return as_strings(data.column(key_fields[0]))
    parts = []
    for field in key_fields:
        text = as_strings(data.column(field))
        text = pc.if_else(pc.equal(text, ""), "__empty__", text)
        text = pc.fill_null(text, "__null__")
        parts.append(pc.binary_join_element_wise(f"{field}:", text, ""))
    return pc.binary_join_element_wise(*parts, ",")


def as_strings(column: pa.ChunkedArray, what: str = "record key") -> pa.ChunkedArray:
    """The values as text; ``what`` (with the column name) names them in the error."""
    if pa.types.is_string(column.type):
        return column
    if pa.types.is_large_string(column.type):
        return column.cast(pa.string())
    if pa.types.is_integer(column.type) and len(column) >= SPLIT_ROWS:
        return _integers_as_strings(column)
    try:
        return column.cast(pa.string())
    except pa.ArrowNotImplementedError:
        raise SchemaError(f"{what} values of type {column.type} cannot be turned into strings") from None
    except pa.ArrowInvalid as exc:  # bytes that are not UTF-8 text
        raise SchemaError(f"{what} values of type {column.type} cannot be turned into strings: {exc}") from None


SPLIT_ROWS = 100_000
"""Integer keys from which the cast to strings runs in two halves on two cores (the record keys
are a serial step before a write's tasks: 200k keys 2.3 ms, 2M keys 25 ms)."""


def _integers_as_strings(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray:
    """An integer column cast to strings in two halves at once (two chunks, one per half:
    :func:`~pyhudi.index.bucket.bucket_ids` hashes them half by half again)."""
    from pyhudi.engine.local import run_split  # (the thread pool is imported by writes only)

    cut = len(column) // 2
    halves = run_split([lambda: column.slice(0, cut).cast(pa.string()), lambda: column.slice(cut).cast(pa.string())])
    chunks = [c for half in halves for c in (half.chunks if isinstance(half, pa.ChunkedArray) else [half])]
    return pa.chunked_array([c for c in chunks if len(c)] or chunks, pa.string())

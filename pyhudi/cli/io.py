"""Input, filter and output conversions for the ``pyhudi`` command line.

The API takes Arrow objects and typed filter values; a shell gives file names and strings. This
module turns one into the other, using the table's schema to type filter values so that
``--filter "price>=9.5"`` compares doubles, not strings.
"""

from __future__ import annotations

import os
import re
from typing import Any

import pyarrow as pa

from pyhudi.errors import HudiError
from pyhudi.read.filters import OPERATORS

INPUT_FORMATS = ("parquet", "csv", "json")
_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json",
             ".ndjson": "json"}
# Longest operators first so "<=" is not read as "<" followed by "=...".
_SYMBOLS = sorted((op for op in OPERATORS if not op[0].isalpha()), key=len, reverse=True)
_WORDS = sorted((op for op in OPERATORS if op[0].isalpha()), key=len, reverse=True)


class CliInputError(HudiError):
    """A command-line argument (input file, filter, output) cannot be used."""


def input_format(path: str, given: str | None) -> str:
    """The format named by ``--format`` or, failing that, by the file's suffix."""
    if given:
        return given
    fmt = _SUFFIXES.get(os.path.splitext(os.path.basename(path.rstrip("/")))[1].lower())
    if fmt is None:
        raise CliInputError(f"cannot tell the format of {path!r} from its suffix; pass --format {'|'.join(INPUT_FORMATS)}")
    return fmt


def load_input(path: str, fmt: str | None, schema: pa.Schema) -> pa.Table:
    """Read an input file; CSV and JSON columns are typed by the table schema (where named)."""
    fmt = input_format(path, fmt)
    if not os.path.exists(path):
        raise CliInputError(f"input file {path!r} does not exist")
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq  # (loads on use: `pyhudi read` starts faster, issue 15)

            return pq.read_table(path)
        if fmt == "csv":
            import pyarrow.csv as pa_csv  # (CSV and JSON readers load on use: `pyhudi read` starts faster)

            types = {field.name: field.type for field in schema}  # columns absent from the file are ignored
            return pa_csv.read_csv(path, convert_options=pa_csv.ConvertOptions(column_types=types))
        import pyarrow.json as pa_json

        return _conform(pa_json.read_json(path), schema)
    except (pa.ArrowInvalid, OSError) as exc:
        raise CliInputError(f"cannot read {fmt} input {path!r}: {exc}") from exc


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Cast inferred JSON columns to the table's types where Arrow can (``"2024-01-01"`` → date).

    Only columns present in the file are touched: an absent column must stay absent, or a
    partial upsert would overwrite it with nulls. A column that does not cast is left as read,
    so the write path reports it with its own schema-mismatch error.
    """
    for i, name in enumerate(table.column_names):
        if name in schema.names and table.schema.field(i).type != schema.field(name).type:
            try:
                table = table.set_column(i, schema.field(name), table.column(i).cast(schema.field(name).type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass
    return table


def parse_filter(text: str, schema: pa.Schema) -> tuple:
    """``"price>=9.5"``, ``"country in FR,DE"``, ``"age is null"`` → ``(column, op, typed value)``."""
    column, op, raw = _split_filter(text)
    if column not in schema.names:
        raise CliInputError(f"filter {text!r}: unknown column {column!r} (columns: {', '.join(schema.names)})")
    if op in ("is null", "is not null"):
        if raw:
            raise CliInputError(f"filter {text!r}: {op!r} takes no value")
        return (column, op, None)
    if not raw:
        raise CliInputError(f"filter {text!r}: {op!r} needs a value")
    kind = schema.field(column).type
    if op in ("in", "not in"):
        return (column, op, [_typed(part.strip(), kind, text) for part in raw.split(",")])
    return (column, op, _typed(raw, kind, text))


def _split_filter(text: str) -> tuple[str, str, str]:
    for op in _WORDS:
        match = re.fullmatch(rf"\s*(\S+)\s+{op}(?:\s+(.*))?\s*", text, flags=re.IGNORECASE)
        if match:
            return match.group(1), op, (match.group(2) or "").strip()
    for op in _SYMBOLS:
        column, found, raw = text.partition(op)
        if found and column.strip():
            return column.strip(), op, raw.strip()
    raise CliInputError(f"filter {text!r}: expected 'column OP value' with OP one of {', '.join(OPERATORS)}")


def _typed(raw: str, kind: pa.DataType, text: str) -> Any:
    """Cast a string to the column's type with Arrow's own parsers (numbers, dates, timestamps)."""
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return raw
    try:
        return pa.array([raw]).cast(kind)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise CliInputError(f"filter {text!r}: {raw!r} is not a valid {kind}") from exc


def write_output(table: pa.Table, path: str) -> None:
    """Write rows to a Parquet, CSV or JSON-lines file chosen by the suffix; a file that cannot be
    written (no such folder, nested columns in CSV) is an input error naming the file."""
    fmt = _SUFFIXES.get(os.path.splitext(os.path.basename(path.rstrip("/")))[1].lower())
    if fmt is None:
        raise CliInputError(f"--output {path!r}: name the file *.parquet, *.csv or *.json (the suffix says the format)")
    if fmt == "csv":
        nested = next((f for f in table.schema if pa.types.is_nested(f.type)), None)
        if nested is not None:
            raise CliInputError(f"--output {path!r}: column {nested.name!r} has type {nested.type}, which CSV cannot "
                                "hold; write a .parquet or .json file (or leave it out with --columns)")
    try:
        _write_output(table, path, fmt)
    except (OSError, pa.ArrowInvalid) as exc:
        raise CliInputError(f"cannot write {path!r}: {getattr(exc, 'strerror', None) or exc}") from exc


def _write_output(table: pa.Table, path: str, fmt: str) -> None:
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, path)
    elif fmt == "csv":
        import pyarrow.csv as pa_csv

        pa_csv.write_csv(table, path)
    else:
        import json

        with open(path, "w", encoding="utf-8") as out:
            for row in table.to_pylist():
                out.write(json.dumps(row, default=str) + "\n")


def parse_instant_range(text: str) -> tuple[str, str | None]:
    """``"START"`` or ``"START:END"`` for incremental reads."""
    start, _, end = text.partition(":")
    if not start:
        raise CliInputError(f"--incremental {text!r}: expected START or START:END instants")
    return start, end or None

"""Write preparation: accept the user's data, check it against the table schema, derive keys.

Everything here is vectorised over Arrow arrays. The checks run before any file is written, so
a bad input (unknown column, a type that cannot be cast safely, a null or missing key) leaves
the table unchanged; every error names the column. De-duplication keeps the winner of the one
merge rule (:mod:`pyhudi.record_merge`).
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.errors import PathEscapeError, SchemaError
from pyhudi.record_merge import last_of_runs, latest_per_key
from pyhudi.keygen import as_strings, record_keys  # noqa: F401 (record_keys: part of prepare's API)
from pyhudi.schema import META_FIELDS
from pyhudi.storage.naming import DEFAULT_PARTITION_PATH


_ACCEPTED = ("a pyarrow Table, RecordBatch(Reader), iterable of RecordBatches, pandas DataFrame, "
             "list of row dicts or dict of column lists")


def to_arrow_table(data: Any, schema: pa.Schema | None = None) -> pa.Table:
    """Accept a pyarrow Table/RecordBatch/RecordBatchReader, an iterable of batches, pandas, a
    list of rows (dicts) or a dict of columns (lists).

    A pandas DataFrame, rows and columns are converted with the types of ``schema`` (the
    table's) for their columns: pandas keeps lists, structs, maps, decimals and dates as Python
    objects, whose types Arrow cannot always infer back (a map whose values hold a null comes out
    as pairs with floats), and Python's ``int`` would otherwise become int64 whatever the column.
    """
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    module = type(data).__module__
    if module.startswith("pandas"):
        return _from_pandas(data, schema)
    if isinstance(data, Mapping):
        return _from_python({str(k): _column_values(v) for k, v in data.items()}, schema, "columns")
    if isinstance(data, (list, tuple)) and data and all(isinstance(row, Mapping) for row in data):
        return _from_rows(data, schema)
    if isinstance(data, (list, tuple, Iterator)) or hasattr(data, "__iter__"):
        batches = [b if isinstance(b, pa.RecordBatch) else None for b in data]
        if any(b is None for b in batches):
            raise SchemaError(f"data must be {_ACCEPTED}")
        if not batches:
            raise SchemaError("data is empty: an iterable with no record batches")
        return pa.Table.from_batches(batches)
    raise SchemaError(f"unsupported data type {type(data).__name__}: expected {_ACCEPTED}")


def _from_rows(rows: Sequence[Mapping[str, Any]], schema: pa.Schema | None) -> pa.Table:
    """Rows (dicts) as Arrow, in C (``Table.from_pylist``) under the table's types; a key missing
    from a row reads null. Only a failed conversion goes column by column, to name the column."""
    names = list(rows[0])
    extra = set().union(*rows).difference(names)  # (keys the first row lacks)
    if extra:
        order = {n: i for i, n in enumerate(schema.names)} if schema is not None else {}
        names += sorted(extra, key=lambda n: (order.get(n, len(order)), str(n)))
    if schema is not None and all(n in schema.names for n in names):
        try:
            return pa.Table.from_pylist(rows, schema=pa.schema([(n, schema.field(n).type) for n in names]))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError):
            pass  # (diagnosed below)
    return _from_python({n: [row.get(n) for row in rows] for n in names}, schema, "rows")


def _column_values(values: Any) -> Any:
    """One column of a dict of columns as :func:`_from_python` converts it: numpy and Arrow arrays
    whole (one vectorised conversion, buffers shared), any other iterable as a list."""
    if isinstance(values, (pa.Array, pa.ChunkedArray, np.ndarray)):
        return values
    return list(values)


def _from_python(columns: dict[str, Any], schema: pa.Schema | None, what: str) -> pa.Table:
    """Python values per column as Arrow, typed by ``schema`` where it names the column (other
    columns are inferred, and refused later as unknown); the error names the column that fails."""
    arrays = {}
    for name, values in columns.items():
        kind = schema.field(name).type if schema is not None and name in schema.names else None
        try:
            if isinstance(values, (pa.Array, pa.ChunkedArray)):
                arrays[name] = values if kind is None or values.type == kind else values.cast(kind)
            else:
                arrays[name] = pa.array(values, type=kind)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError) as exc:
            against = f"the column's type {kind}" if kind is not None else "one Arrow type"
            raise SchemaError(f"{what}: column {name!r} cannot be converted to {against}: {exc}") from None
    lengths = {len(a) for a in arrays.values()}
    if len(lengths) > 1:
        raise SchemaError(f"{what}: the columns have different lengths ({', '.join(f'{n}: {len(a)}' for n, a in arrays.items())})")
    return pa.table(arrays)


def _from_pandas(frame: Any, schema: pa.Schema | None) -> pa.Table:
    known = schema is not None and all(isinstance(n, str) and n in schema.names for n in frame.columns)
    target = pa.schema([schema.field(n) for n in frame.columns]) if known else None
    try:
        return pa.Table.from_pandas(frame, schema=target, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        against = "the table schema" if known else "Arrow types"
        raise SchemaError(f"pandas DataFrame cannot be converted to {against}: {exc}") from None


def _cast_column(column: pa.ChunkedArray, target: pa.DataType, name: str) -> pa.ChunkedArray:
    if column.type == target:
        return column
    if pa.types.is_null(column.type):
        return pa.chunked_array([pa.nulls(len(column), target)])
    textual = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)
    if any(t(column.type) for t in textual) and not any(t(target) for t in textual):
        raise SchemaError(f"column {name!r} has type {column.type}, which cannot be safely cast to {target} "
                          "(text is never parsed into other types)")
    try:
        return column.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaError(f"column {name!r} has type {column.type}, which cannot be safely cast to {target}: {exc}") from None


def conform(
    data: pa.Table,
    table_schema: pa.Schema,
    key_fields: Sequence[str],
    required: Sequence[str] = (),
) -> pa.Table:
    """Check ``data`` against the table schema and cast it; returns only the columns given.

    The result keeps the table's column order (a subset). Key columns and ``required`` columns
    must be present; key values must not be null.
    """
    names = data.column_names
    if len(set(names)) != len(names):
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise SchemaError(f"input has duplicate columns: {', '.join(dupes)}")
    known = set(table_schema.names)
    for name in names:
        if name in META_FIELDS:
            raise SchemaError(f"input column {name!r} is a Hudi meta column; pyhudi fills it in")
        if name not in known:
            raise SchemaError(f"input column {name!r} is not in the table schema ({', '.join(table_schema.names)})")
    for name in (*key_fields, *required):
        if name not in names:
            raise SchemaError(f"input is missing the column {name!r} (record key and partition columns are required)")
    columns, fields = [], []
    position = {name: i for i, name in enumerate(names)}  # (a wide input: no scan of the names per column)
    for field in table_schema:
        at = position.get(field.name)
        if at is None:
            continue
        column = _cast_column(data.column(at), field.type, field.name)
        if field.name in key_fields and column.null_count:
            first = int(np.flatnonzero(np.asarray(column.is_null()))[0])
            raise SchemaError(f"record key column {field.name!r} has {column.null_count} null value(s) (first at row {first})")
        if not field.nullable and column.null_count and field.name not in key_fields:
            raise SchemaError(f"column {field.name!r} is not nullable but has {column.null_count} null value(s)")
        columns.append(column)
        fields.append(field)
    _refuse_empty_keys([c for c, f in zip(columns, fields) if f.name in key_fields],
                       [f.name for f in fields if f.name in key_fields])
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def _refuse_empty_keys(columns: list[pa.ChunkedArray], names: list[str]) -> None:
    """Hudi's key generators refuse an empty record key: a single key field may not be ``""``, and
    a composite key (which writes ``""`` as ``__empty__``) may not be empty in every field."""
    empty = None
    for column in columns:
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
                or pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)):
            return  # a non-text field is never empty
        is_empty = pc.equal(pc.binary_length(column), 0)
        empty = is_empty if empty is None else pc.and_(empty, is_empty)
    if empty is None or not pc.any(empty).as_py():
        return
    first = int(np.flatnonzero(np.asarray(pc.fill_null(empty, False)))[0])
    which = f"column {names[0]!r}" if len(names) == 1 else f"columns {', '.join(map(repr, names))}"
    raise SchemaError(f"record key {which} is empty at row {first}: a record key cannot be null or empty")


def partition_paths(data: pa.Table, partition_fields: Sequence[str], hive_style: bool,
                    layout: Any = None) -> pa.ChunkedArray:
    """The relative partition folder of every row (``""`` for unpartitioned tables); a
    :class:`~pyhudi.keygen.PartitionLayout` with a TIMESTAMP key generator formats the paths."""
    if not partition_fields:
        return pa.chunked_array([empty_strings(data.num_rows)])
    if layout is not None and not layout.identity:
        layout.require_writable()
        paths = layout.timestamp.paths(data.column(partition_fields[0]))
        layout.check_paths(pc.unique(paths).to_pylist())
        return pa.chunked_array([paths])
    parts = []
    for field in partition_fields:
        text = as_strings(data.column(field), f"partition column {field!r}")
        if pc.any(pc.equal(text, DEFAULT_PARTITION_PATH)).as_py():  # (null and "" are written so)
            raise SchemaError(f"partition column {field!r} has the value {DEFAULT_PARTITION_PATH!r}, which is the "
                              "default partition of null and empty values: write null instead")
        text = pc.if_else(pc.equal(text, ""), DEFAULT_PARTITION_PATH, text)
        text = pc.fill_null(text, DEFAULT_PARTITION_PATH)
        parts.append(pc.binary_join_element_wise(f"{field}=", text, "") if hive_style else text)
    paths = pc.binary_join_element_wise(*parts, "/") if len(parts) > 1 else parts[0]
    check_partition_values(pc.unique(paths).to_pylist(), partition_fields)
    return paths


def empty_strings(n: int) -> pa.Array:
    """``n`` empty strings (an unpartitioned table's partition paths): zero offsets and no
    characters, built from buffers (filling ``n`` nulls with ``""`` takes a kernel pass)."""
    offsets = pa.allocate_buffer(4 * (n + 1))
    np.frombuffer(offsets, dtype=np.int32)[:] = 0
    return pa.Array.from_buffers(pa.string(), n, [None, offsets, pa.allocate_buffer(0)])


def check_partition_values(paths: Iterable[str], partition_fields: Sequence[str]) -> None:
    """Refuse partition values that could leave the base path (checked once per distinct path)."""
    depth = len(partition_fields)
    for path in paths:
        segments = path.split("/")
        if len(segments) != depth or any(s in ("", ".", "..") or "\\" in s or "\x00" in s for s in segments):
            raise PathEscapeError(
                f"partition path {path!r} built from columns {', '.join(partition_fields)} cannot be used: "
                "partition values may not contain '/', '\\\\' or NUL, nor be '.' or '..'"
            )
        if any(s.startswith(".hoodie") for s in segments):  # Hudi's metafolder and its files
            raise PathEscapeError(
                f"partition path {path!r} built from columns {', '.join(partition_fields)} cannot be used: "
                "a partition folder may not start with '.hoodie' (its rows would be written where no reader looks)"
            )


def _integer_key_codes(rows: pa.Table, integer_key: str | None) -> np.ndarray | None:
    """Key codes (int64 in the record keys' string order) when the keys spell the integer column
    ``integer_key`` and all fit the codes (non-null, ``0 <= k < 10**17``); else None."""
    if integer_key is None or integer_key not in rows.column_names or not len(rows):
        return None
    from pyhudi.read.keys import encode_keys  # read.keys builds on this module

    bounds = integer_key_bounds(rows.column(integer_key))
    return None if bounds is None else np.asarray(encode_keys(rows.column(integer_key), bounds))


def integer_key_bounds(column: pa.ChunkedArray | pa.Array) -> tuple[int, int] | None:
    """``(lowest, highest)`` of an integer key column whose values all have key codes
    (non-null, ``0 <= k < 10**17``); else None (the record key strings are sorted instead)."""
    from pyhudi.read.keys import MAX_INTEGER_KEY  # read.keys builds on this module

    if not len(column) or column.null_count or not pa.types.is_integer(column.type):
        return None
    bounds = pc.min_max(column)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    return (low, high) if low >= 0 and high < MAX_INTEGER_KEY else None


def _strictly_increasing(keys: pa.ChunkedArray | pa.Array) -> bool:
    """One vectorised comparison of neighbours (input that arrives sorted skips the sort)."""
    keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    n = len(keys)
    return keys.null_count == 0 and bool(pc.all(pc.less(keys.slice(0, n - 1), keys.slice(1))).as_py())


def latest_sorted(rows: pa.Table, ordering: str | None, integer_key: str | None = None) -> np.ndarray:
    """Positions of ``rows`` (one file group) that keep the latest row per record key, in key
    order: the merge rule's de-duplication (:func:`~pyhudi.record_merge.latest_per_key`) —
    highest ``ordering`` value, a null losing, ties to the later arrival; without an ordering
    the later arrival.

    ``integer_key``: the one key field, when it is an integer column (the record key is its
    decimal spelling); without an ordering, its key codes are sorted instead of the strings —
    the same order, at less than half the cost.
    """
    n = rows.num_rows
    codes = _integer_key_codes(rows, integer_key) if ordering is None else None
    if codes is not None:
        if n < 2 or bool(np.all(codes[1:] > codes[:-1])):
            return np.arange(n)  # already in key order, one row per key: nothing to sort
        order = np.argsort(codes, kind="stable")  # (stable: the later arrival of a key comes last)
        keep = last_of_runs([codes[order]])
        return order if keep.all() else order[keep]
    if n < 2 or _strictly_increasing(rows.column(META_FIELDS[2])):
        return np.arange(n)  # already in key order, one row per key: nothing to sort
    return latest_per_key(rows, [META_FIELDS[2]], ordering)


def key_rows(keys: Any, key_fields: Sequence[str], partition_fields: Sequence[str], table_name: str) -> Any:
    """A delete's input as rows: plain key values (a list or tuple of scalars, a one-dimensional
    Arrow or NumPy array, a pandas Series) become rows of the one key column of an unpartitioned
    table; anything else is taken as rows already — a list of dicts or of record batches too,
    as every write takes them."""
    if _is_series(keys):
        keys = pa.Array.from_pandas(keys)
    elif isinstance(keys, np.ndarray) and keys.ndim != 1:
        return keys
    if not isinstance(keys, (list, tuple, pa.Array, pa.ChunkedArray, np.ndarray)) or (
            isinstance(keys, (list, tuple)) and any(isinstance(k, (Mapping, pa.RecordBatch)) for k in keys)):
        return keys
    if len(key_fields) != 1 or partition_fields:
        raise SchemaError(f"delete of plain key values needs an unpartitioned table with one record key field; "
                          f"table {table_name!r} needs rows with columns {', '.join((*key_fields, *partition_fields))} "
                          f"(e.g. a list of dicts)")
    return {key_fields[0]: keys}


def _is_series(value: Any) -> bool:
    """A pandas Series (one column), told without importing pandas."""
    return type(value).__module__.startswith("pandas") and getattr(value, "ndim", None) == 1 and hasattr(
        value, "to_numpy")

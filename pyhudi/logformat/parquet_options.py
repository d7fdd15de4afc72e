"""Parquet write settings for data files (log data blocks and base files), chosen per column.

Parquet settings are part of the design (DESIGN §6): dictionaries and compression cost write
time, and pay only on some data. :func:`parquet_options_for` decides per column from a small
strided sample of the data; :func:`default_parquet_options` is the schema-only fallback.
:func:`write_parquet` writes every data file; it takes columns constant over a file as one-entry
dictionaries (:func:`constant_strings`), which Parquet encodes without hashing each value.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa

from pyhudi.lazy import pc
from pyhudi.schema import META_FIELDS


def default_parquet_options(schema: pa.Schema) -> dict[str, Any]:
    """Schema-only fallback (no data to sample): snappy, dictionary for string-like columns
    except the record key and sequence number, which are unique per row.

    Measured here (pyarrow 26, 200k rows x 100 random float64, in-memory, best of 3): pyarrow's
    defaults (dictionary everywhere + snappy) write in 0.94 s; without dictionaries, snappy 0.19 s
    (160 MB), none 0.13 s (160 MB), lz4 0.14 s, zstd 0.28 s (150 MB). ``_hoodie_record_key`` and
    ``_hoodie_commit_seqno`` never pay for a dictionary and read slower with one (50k keys: 1.2 ms
    plain vs 1.7 ms dictionary); the record key is read by every family reader.
    """
    unique = {META_FIELDS[1], META_FIELDS[2]}
    binary_like = [
        f.name
        for f in schema
        if f.name not in unique
        and (pa.types.is_string(f.type) or pa.types.is_large_string(f.type) or pa.types.is_binary(f.type)
             or pa.types.is_large_binary(f.type) or pa.types.is_dictionary(f.type))
    ]
    return {"compression": "snappy", "use_dictionary": binary_like}


NO_STATISTICS = (META_FIELDS[1], META_FIELDS[3], META_FIELDS[4])
"""Meta columns written without min/max statistics: sequence numbers, partition path and file
name are never used to skip data (the record key, commit time and data columns are), and string
statistics cost a comparison per value (~15% of a family file's write time)."""

_SAMPLE_ROWS = 512
OPTIONS_SAMPLE_ROWS = _SAMPLE_ROWS
"""Rows a writer that streams a file gathers before it chooses the file's settings from them
(the first batch of a merge may hold a handful of rows: they would decide a file of any size)."""
_FEW_ROWS = 32
"""Log blocks of at most this many rows take :func:`_few_rows_options` (no sample)."""
_DICTIONARY_MAX_DISTINCT = 0.25
"""A column gets a dictionary when a sample of it has at most this share of distinct values."""
_COMPRESS_MIN_SAVING = 0.10
"""A column is snappy-compressed when snappy saves at least this share of a sample's bytes."""


def _dictionary_candidate(t: pa.DataType) -> bool:
    try:
        known = _CANDIDATES.get(t)
    except TypeError:  # (a type that cannot be hashed is asked every time)
        return _is_dictionary_candidate(t)
    if known is None:
        if len(_CANDIDATES) >= 256:
            _CANDIDATES.clear()
        known = _CANDIDATES[t] = _is_dictionary_candidate(t)
    return known


_CANDIDATES: dict[pa.DataType, bool] = {}
"""Memo of :func:`_dictionary_candidate` by type (a wide table asks once per column)."""


def _is_dictionary_candidate(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_integer(t) or pa.types.is_floating(t)
            or pa.types.is_decimal(t) or pa.types.is_temporal(t) or pa.types.is_fixed_size_binary(t))


def _sample_bytes(sample: pa.Array) -> bytes | None:
    """The value bytes of a sample of a flat column (None for nested types)."""
    buffers = sample.buffers()
    if len(buffers) == 2 and buffers[1] is not None:  # fixed width
        width = sample.type.bit_width // 8
        return buffers[1].to_pybytes()[sample.offset * width:(sample.offset + len(sample)) * width]
    if len(buffers) == 3 and buffers[2] is not None:  # variable width: the character data
        return buffers[2].to_pybytes()
    return None


def _distinct_counts(samples: dict[str, Any]) -> dict[str, int]:
    """Distinct non-null values per sample (NumPy arrays or Arrow arrays); numeric columns of one
    dtype in one NumPy sort. Each NumPy sample is replaced by its row of the unsorted stack (the
    same values, contiguous: what the codec check compresses, without a copy per column)."""
    counts: dict[str, int] = {}
    by_dtype: dict[Any, list[tuple[str, np.ndarray]]] = {}
    for name, sample in samples.items():
        if isinstance(sample, np.ndarray):
            by_dtype.setdefault(sample.dtype, []).append((name, sample))
            continue
        t = sample.type
        numeric = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t)
        if numeric and sample.null_count == 0 and len(sample):
            values = sample.to_numpy(zero_copy_only=False)
            by_dtype.setdefault(values.dtype, []).append((name, values))
        else:
            counts[name] = len(pc.unique(sample.drop_null()))
    for columns in by_dtype.values():
        stacked = np.stack([values for _, values in columns])
        samples.update((name, row) for (name, _), row in zip(columns, stacked))
        matrix = np.sort(stacked, axis=1)
        distinct = 1 + np.count_nonzero(matrix[:, 1:] != matrix[:, :-1], axis=1)
        counts.update((name, int(d)) for (name, _), d in zip(columns, distinct))
    return counts


def _strided_sample(column: pa.ChunkedArray, step: int) -> np.ndarray | None:
    """Every ``step``-th value of a one-chunk, null-free integer or floating column, as a
    strided NumPy view of its buffer (no copy: what ``take`` of those positions gives, without
    an Arrow kernel call per column); None for any other column."""
    if column.num_chunks != 1:
        return None
    chunk = column.chunk(0)
    t = chunk.type
    if chunk.null_count or not len(chunk) or not (pa.types.is_integer(t) or pa.types.is_floating(t)):
        return None
    dtype = np.dtype(t.to_pandas_dtype())
    values = np.frombuffer(chunk.buffers()[1], dtype=dtype, count=chunk.offset + len(chunk))
    return values[chunk.offset::step]


def _samples(table: pa.Table, names: Sequence[str], step: int) -> dict[str, Any]:
    """A strided sample (every ``step``-th row) of each column of ``names``: NumPy views of
    plain numeric columns (:func:`_strided_sample`), one Arrow ``take`` of the others."""
    out: dict[str, Any] = {}
    rest = []
    for name in names:
        view = _strided_sample(table.column(name), step)
        if view is None:
            rest.append(name)
        else:
            out[name] = view
    if rest:
        positions = pa.array(np.arange(0, table.num_rows, step, dtype=np.int64))
        taken = table.select(rest).take(positions).combine_chunks()
        out.update((name, column.chunk(0)) for name, column in zip(rest, taken.columns))
    return out


def _sample_bytes_of(sample: Any) -> Any:
    """The bytes the codec check compresses: a contiguous NumPy sample as it is (any object with
    the buffer protocol), else :func:`_sample_bytes`."""
    if isinstance(sample, np.ndarray):
        return sample if sample.flags.c_contiguous else sample.tobytes()
    return _sample_bytes(sample)


def parquet_options_for(table: pa.Table, fixed: Mapping[str, tuple[bool, str]] | None = None,
                        delta_columns: Sequence[str] = ()) -> dict[str, Any]:
    """Parquet settings chosen per column from a strided sample of the data itself.

    ``fixed`` maps columns whose nature is known (constant or unique meta columns) to
    ``(use dictionary, codec)``; they are not sampled and are always part of the result, so
    options computed once for a family (on its input rows) apply to every file written for it.

    - dictionary encoding only where it pays: columns whose sample has few distinct values
      (constant meta columns, categories, repeated numbers) — never unique keys or random doubles,
      where building a dictionary that Parquet abandons costs up to 5x the write time;
    - snappy (Hudi's usual codec) only where it pays: on columns whose sample snappy shrinks by
      at least 10%; incompressible columns (random doubles) are stored uncompressed, which
      writes ~35% faster and reads faster at the same size.

    - ``delta_columns`` (the record key fields: every data file is sorted by key, so neighbouring
      values are close) that are 32/64-bit integers without a dictionary get DELTA_BINARY_PACKED,
      uncompressed: 50k integer keys in key order take 115 KB instead of 200 KB (plain + snappy)
      and decode in 0.4 ms instead of 1.0 ms; every family reader reads the key column.

    Only standard encodings (PLAIN, RLE_DICTIONARY, DELTA_BINARY_PACKED) and per-column codecs,
    which every Parquet reader (Java Hudi, hudi-rs) handles. Measured on 50k rows x (5 meta + id +
    20 random doubles): pyarrow defaults 20 ms, this 12.9 ms, same bytes.
    """
    n = table.num_rows
    fixed = dict(fixed or {})
    if n == 0 and not fixed:
        return default_parquet_options(table.schema)
    step = max(1, -(-n // _SAMPLE_ROWS))  # (at most _SAMPLE_ROWS rows: a 1,000-row write samples 500)
    # the sampled columns (name -> dictionary-typed): a dictionary-typed column is judged by its
    # values, like the same plain column — files are the same whichever form a column reaches the
    # writer in (constant meta columns come as one-entry dictionaries)
    candidates: dict[str, bool] = {}
    for field in table.schema:
        is_dictionary = pa.types.is_dictionary(field.type)
        if field.name not in fixed and _dictionary_candidate(field.type.value_type if is_dictionary else field.type):
            candidates[field.name] = is_dictionary
    samples = _samples(table, list(candidates), step)
    for name, is_dictionary in candidates.items():
        if is_dictionary:
            samples[name] = samples[name].dictionary_decode()
    dictionary = [name for name, (use, _) in fixed.items() if use]
    compression = {name: codec for name, (_, codec) in fixed.items()}
    encoding: dict[str, str] = {}
    distinct = _distinct_counts(samples)
    for field in table.schema:
        name = field.name
        if name in fixed:
            continue
        compression[name] = "snappy"
        if name not in candidates:
            continue
        sample = samples[name]
        valid = len(sample) - (0 if isinstance(sample, np.ndarray) else sample.null_count)
        if valid == 0 or distinct[name] <= valid * _DICTIONARY_MAX_DISTINCT:
            dictionary.append(name)
            continue
        if name in delta_columns and _delta_packable(field.type):  # (never a dictionary type)
            encoding[name] = "DELTA_BINARY_PACKED"
            compression[name] = "none"
            continue
        raw = _sample_bytes_of(sample)
        size = raw.nbytes if isinstance(raw, np.ndarray) else len(raw) if raw is not None else 0
        if size and len(pa.compress(raw, codec="snappy", asbytes=True)) > size * (1 - _COMPRESS_MIN_SAVING):
            compression[name] = "none"
    out = {"compression": compression, "use_dictionary": dictionary, **_statistics_option(table.schema, fixed)}
    if encoding:
        out["column_encoding"] = encoding
    return out


def block_parquet_options(table: pa.Table) -> dict[str, Any]:
    """The settings of the one file (a log block) ``table`` is written to: chosen from its data
    (:func:`parquet_options_for`), or, for a file of a few rows, without sampling
    (:func:`_few_rows_options`). Only for settings that serve this file alone: settings chosen
    once and applied to later, larger files (a family's, a clustering's) sample as usual."""
    if 0 < table.num_rows <= _FEW_ROWS:
        return _few_rows_options(table.schema, {})
    return parquet_options_for(table)


def _few_rows_options(schema: pa.Schema, fixed: Mapping[str, tuple[bool, str]]) -> dict[str, Any]:
    """The settings of a file of a few rows, chosen without sampling: snappy, and a dictionary
    only for the ``fixed`` columns that ask for one — whichever form (plain or dictionary-typed)
    a column comes in, as for sampled files. No choice pays for its sampling there (~0.3 ms a
    file: a write of 2,000 rows over 300 partitions writes 300 files of 7 rows)."""
    compression = {f.name: "snappy" for f in schema if f.name not in fixed}
    compression.update((name, codec) for name, (_, codec) in fixed.items())
    dictionary = [name for name, (use, _) in fixed.items() if use]
    return {"compression": compression, "use_dictionary": dictionary, **_statistics_option(schema, fixed)}


def _delta_packable(t: pa.DataType) -> bool:
    """Integer types stored as Parquet INT32 / INT64 (what DELTA_BINARY_PACKED encodes)."""
    return pa.types.is_integer(t) and t.bit_width in (8, 16, 32, 64)


def _statistics_option(schema: pa.Schema, fixed: Mapping[str, Any]) -> dict[str, Any]:
    """``write_statistics`` naming every column (of ``schema`` and ``fixed``) but
    :data:`NO_STATISTICS` (flat schemas only: the option names leaf columns, and nested leaves
    keep their statistics by default)."""
    names = list(dict.fromkeys([*fixed, *schema.names]))
    if not any(name in NO_STATISTICS for name in names) or any(pa.types.is_nested(f.type) for f in schema):
        return {}
    return {"write_statistics": [name for name in names if name not in NO_STATISTICS]}


def options_for_columns(options: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """``options`` (from :func:`parquet_options_for`) narrowed to the columns ``names`` — one
    sample of a wide input serves the files of each column family."""
    wanted = set(names)
    out = dict(options)
    if isinstance(options.get("compression"), Mapping):
        out["compression"] = {k: v for k, v in options["compression"].items() if k in wanted}
    for key in ("use_dictionary", "write_statistics"):
        if isinstance(options.get(key), (list, tuple)):
            out[key] = [name for name in options[key] if name in wanted]
    if isinstance(options.get("column_encoding"), Mapping):
        encoding = {k: v for k, v in options["column_encoding"].items() if k in wanted}
        if encoding:
            out["column_encoding"] = encoding
        else:
            del out["column_encoding"]
    return out


def parquet_options_cover(options: Mapping[str, Any], schema: pa.Schema) -> bool:
    """Whether ``options`` name the codec and dictionary use of every column of ``schema``."""
    compression = options.get("compression")
    return (isinstance(compression, Mapping) and "use_dictionary" in options
            and all(name in compression for name in schema.names))


_ENCODED_SLACK = 1.25
"""Room for Parquet's own bytes over the table's Arrow size (length prefixes, levels, headers)."""


def constant_strings(value: str, n: int) -> pa.DictionaryArray:
    """``n`` copies of ``value`` as a one-entry dictionary: how a column constant over a file
    (commit time, partition path, file name) is handed to :func:`write_parquet`.

    Parquet dictionary-encodes such a column either way, but from plain strings it hashes every
    value (~0.87 ms per 50k-row column, with statistics); from a dictionary it writes the one
    entry and the indices (~0.42 ms). :func:`write_parquet` stores the file's Arrow schema with
    ``string`` there, so the file is byte for byte the one plain strings give.
    """
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value], pa.string()))


def constant_value(column: pa.Array | pa.ChunkedArray) -> str | None:
    """The value of a :func:`constant_strings` column (None for any other column)."""
    if isinstance(column, pa.ChunkedArray):
        if column.num_chunks != 1:
            return None
        column = column.chunk(0)
    if not pa.types.is_dictionary(column.type) or len(column.dictionary) != 1 or column.null_count:
        return None
    return column.dictionary[0].as_py()


def _value_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every top-level dictionary type replaced by its value type."""
    for i, f in enumerate(schema):
        if pa.types.is_dictionary(f.type):
            schema = schema.set(i, f.with_type(f.type.value_type))
    return schema


def _stored_schema_metadata(schema: pa.Schema) -> dict[bytes, bytes]:
    """The key-value metadata ``pq.write_table`` stores for ``schema`` (its metadata and, under
    ``ARROW:schema``, the base64 of its serialized Arrow schema). Not memoised: hashing a
    ``pa.Schema`` costs more than serializing it (5000 columns: 4 ms vs 1.6 ms), and schema
    equality ignores field metadata, which the serialized schema keeps."""
    import base64  # (writes only)

    serialized = base64.b64encode(schema.serialize().to_pybytes())
    return {b"ARROW:schema": serialized, **(schema.metadata or {})}


def stored_schema_metadata(schema: pa.Schema) -> dict[bytes, bytes]:
    """What a writer opened with ``store_schema=False`` on ``schema`` adds before closing so that
    its file is the one plain strings give (see :func:`write_parquet`): the ``ARROW:schema`` of
    ``schema`` with dictionary columns as their value type."""
    return _stored_schema_metadata(_value_schema(schema))


MAX_ROW_GROUP_ROWS = 1 << 20
"""Arrow's cap on a row group's rows (``max_row_group_length``) and pyarrow's row group size
when none is given: the slices the writer would cut a whole table into."""


def row_group_rows(row_group_size: int | None, num_rows: int) -> int:
    """The rows of each row group pyarrow writes a ``num_rows``-row table in."""
    size = MAX_ROW_GROUP_ROWS if row_group_size is None or row_group_size < 0 else int(row_group_size)
    return max(1, min(size, MAX_ROW_GROUP_ROWS, max(num_rows, 1)))


def write_parquet(table: pa.Table, where: Any, options: Mapping[str, Any]) -> None:
    """``pq.write_table(table, where, **options)`` — except that top-level dictionary columns
    (:func:`constant_strings`) are stored, in the ``ARROW:schema`` readers honour (pyarrow,
    arrow-rs inside hudi-rs), as their value type.

    The file is byte-identical to ``pq.write_table`` of the decoded table (for schemas without
    metadata; with metadata, the key-value pairs may come in another order): the Parquet column
    of a dictionary-encoded string is the same either way, only the stored Arrow schema would
    differ, and pyarrow writes it from the schema it is given — so it is written here instead
    (``store_schema=False``, the same key-value metadata added before close). Dropping
    ``ARROW:schema`` altogether, as Java Hudi does, would change every file's footer and leave each
    reader to type columns from Parquet alone; keeping it leaves no reader anything to tell apart.

    ``table`` may also be a :class:`~pyhudi.write.streamed_rows.StreamedRows`: its rows are then
    produced and written one row group at a time (the same row groups, the same bytes).
    """
    import pyarrow.parquet as pq  # (writes only: a read imports less, issue 15)

    schema = table.schema
    stored = _value_schema(schema)
    streamed = not isinstance(table, (pa.Table, pa.RecordBatch))  # (rows gathered as they are written)
    if not streamed and (stored is schema or options.get("store_schema") is False):
        pq.write_table(table, where, **options)
        return
    options = dict(options)
    row_group_size = options.pop("row_group_size", None)
    own_schema = stored is not schema and options.get("store_schema") is not False
    with pq.ParquetWriter(where, schema, **{**options, "store_schema": False} if own_schema else options) as writer:
        if streamed and table.num_rows:
            # one call per row group: the slices ``write_table`` would cut the whole table into;
            # each dropped before the next is gathered (a ``for`` loop's variable would keep the
            # last one alive through the next gather: two row groups per thread, 240 MB at 2M rows)
            chunks = table.chunks(row_group_rows(row_group_size, table.num_rows))
            while (chunk := next(chunks, None)) is not None:
                writer.write_table(chunk, row_group_size=row_group_size)
                del chunk
        else:
            writer.write_table(table.materialize() if streamed else table, row_group_size=row_group_size)
        if own_schema:
            writer.add_key_value_metadata(_stored_schema_metadata(stored))


def encoded_capacity(table: pa.Table, options: Mapping[str, Any]) -> int:
    """The buffer :func:`encode_parquet` writes ``table`` into: its Arrow size with room for
    Parquet's own bytes."""
    columns = max(1, table.num_columns)
    groups = 1 + table.num_rows // max(1, int(options.get("row_group_size") or 1 << 20))
    return int(table.nbytes * _ENCODED_SLACK) + 65536 + 1024 * columns * groups


def encode_parquet(table: pa.Table, options: Mapping[str, Any], into: pa.Buffer | None = None) -> pa.Buffer:
    """``table`` as the bytes of a Parquet file, written into one buffer allocated up front.

    A growing ``BufferOutputStream`` re-allocates and copies its contents each time it doubles
    (a 9 MB family file: ~15 MB copied, fresh pages faulted in each time); a buffer sized from
    the table's Arrow size is written once. Output that would not fit (dictionaries decoded to
    plain pages, incompressible data) falls back to the growing stream. ``into``: a mutable
    buffer of at least :func:`encoded_capacity` bytes to write into instead (a caller encoding
    one piece after another reuses its pages; the result is a slice of it).
    """
    capacity = encoded_capacity(table, options)
    target = into if into is not None and into.size >= capacity else pa.allocate_buffer(capacity)
    sink = pa.FixedSizeBufferWriter(target)
    try:
        write_parquet(table, sink, options)
    except OSError as exc:
        if "out of bounds" not in str(exc):
            raise
    else:
        return target.slice(0, sink.tell())
    grown = pa.BufferOutputStream()
    write_parquet(table, grown, options)
    return grown.getvalue()

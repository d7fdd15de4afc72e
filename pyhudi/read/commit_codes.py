"""The commit time of a positional merge as dictionary codes, from the files' statistics.

A compaction's read of the updated family returns each row's stored ``_hoodie_commit_time``: the
base file's value, or the value of the last log block that rewrote the row. The column has a few
distinct values — one per file, as a rule: a base file written by one commit, a log block by one
deltacommit — and the compaction writes it dictionary-encoded. Decoded as strings, patched with
the blocks' strings and hashed again by the Parquet writer, it cost ~11% of the compacted row
groups' encoding (and its decoding and patching a share of the merge). When the files' footers
prove each one constant (every row group's min equals its max, no nulls, a value per row), the
column is built instead as a dictionary over those values: codes filled with the base's, the
blocks' codes assigned at their rows' positions in block order (the later block wins, as in the
merge). No string of it is decoded, patched or hashed; the Parquet writer takes the dictionary
as it is (its statistics cover the codes used). Otherwise the merge reads the strings as before.

Only a caller that asks for it gets it: :func:`~pyhudi.read.file_slice.read_file_slices` with
``commit_time_codes`` (the full compaction's chunk copy). Every other read returns strings.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from pyhudi.read.lockstep import LockstepInput
from pyhudi.read.sources import ParquetInput
from pyhudi.schema import META_FIELDS

COMMIT_TIME = META_FIELDS[0]
CODES_TYPE = pa.dictionary(pa.int32(), pa.string())
"""The type of the commit time a caller asking for codes gets (from either merge)."""


def constant_value(source: ParquetInput, name: str) -> str | None:
    """The one value of column ``name`` in every row of a Parquet input (all its row groups read),
    as its footer proves it; None when it does not (no statistics, nulls, several values)."""
    metadata = source.parquet.metadata
    leaf = next((j for j in range(metadata.num_columns) if metadata.schema.column(j).path == name), None)
    if leaf is None:
        return None
    value = None
    for i in source.row_groups:
        group = metadata.row_group(i)
        if not group.num_rows:
            continue
        stats = group.column(leaf).statistics
        if stats is None or not stats.has_min_max or not stats.has_null_count or stats.null_count:
            return None
        if stats.num_values != group.num_rows or stats.min != stats.max or not isinstance(stats.min, str):
            return None
        if value is not None and stats.min != value:
            return None
        value = stats.min
    return value


class CommitCodes:
    """The commit time of a positional merge's rows, batch by batch, as dictionary codes."""

    def __init__(self, field: pa.Field, base_value: str, writes: list[tuple[np.ndarray, str]]) -> None:
        self.field = pa.field(field.name, CODES_TYPE, field.nullable)
        values = list(dict.fromkeys([base_value, *(value for _, value in writes)]))  # (distinct, in order)
        self.dictionary = pa.array(values, pa.string())
        self.writes = [(positions, values.index(value)) for positions, value in writes]

    @classmethod
    def of(cls, base: ParquetInput | LockstepInput, blocks: list[tuple[object, np.ndarray]],
           fields: list[pa.Field]) -> "CommitCodes | None":
        """Codes for the merge of ``blocks`` (input, base positions) over ``base``, when
        ``fields`` ask for the commit time, some other column is read too and every file holding
        the column is proven constant; else None (the merge reads the strings)."""
        field = next((f for f in fields if f.name == COMMIT_TIME), None)
        if field is None or len(fields) < 2:
            return None
        members = [base.lead, *base.followers] if type(base) is LockstepInput else [base]
        if not any(f.name != COMMIT_TIME and f.name in m.arrow_schema.names for f in fields for m in members):
            return None  # (the base's row counts come from another column it holds)
        holder = next((m for m in members if COMMIT_TIME in m.arrow_schema.names), None)
        base_value = constant_value(holder, COMMIT_TIME) if holder is not None else None
        if base_value is None:
            return None
        writes = []
        for block, positions in blocks:
            if type(block) is not ParquetInput:
                return None  # (a decoded Avro block: no footer to prove it)
            if COMMIT_TIME not in block.arrow_schema.names:
                continue  # (a partial block without it keeps the base's)
            value = constant_value(block, COMMIT_TIME)
            if value is None:
                return None
            writes.append((positions, value))
        return cls(field, base_value, writes)

    def column(self, start: int, end: int) -> pa.DictionaryArray:
        """The codes of rows ``[start, end)`` of the base file."""
        codes = np.zeros(end - start, dtype=np.int32)  # (the base's value is code 0)
        for positions, code in self.writes:
            low, high = np.searchsorted(positions, [start, end], side="left")
            codes[positions[low:high] - start] = code
        return pa.DictionaryArray.from_arrays(pa.array(codes), self.dictionary)

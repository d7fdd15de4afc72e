"""A file's rows gathered one row group at a time, while the file is written.

A bucketed write gathers every column of its input into (file group, record key) order before
the files are encoded (:mod:`~pyhudi.write.shared_gather`): a second copy of the input, 1.6 GB
for Scenario W at 2M rows. Arrow's default pool (mimalloc) takes such memory from an arena it
marks for transparent huge pages and hands it back to the system between writes, so every large
write faults the copy in again; with the page cache full of the files just written, each 2 MB
fault waits for the kernel to compact memory (Scenario W, 2M rows: 0.05–4.6 s of kernel time
per insert, the same user time every run). Memory the writer reuses faults in once.

A file whose rows span several row groups is therefore written from :class:`StreamedRows`: the
small columns (meta columns, record key, key fields) are held for the whole file, the others
gathered row group by row group (``fetch``) and dropped once the writer has encoded them, so
the next row group's gather reuses the same memory. The Parquet writer cuts a table into row
groups of ``row_group_size`` rows; writing those same slices one ``write_table`` call each gives
the same row groups, hence the same bytes (:func:`~pyhudi.logformat.parquet_options.write_parquet`,
``tests/test_streamed_rows.py``).
"""

from __future__ import annotations

from typing import Callable, Iterator, Mapping, Sequence

import pyarrow as pa

from pyhudi.logformat.parquet_options import MAX_ROW_GROUP_ROWS, row_group_rows  # noqa: F401

class StreamedRows:
    """``num_rows`` rows of ``schema``: the ``held`` columns whole, the others produced for a
    range of rows by ``fetch(start, length)`` (a table holding at least those columns)."""

    def __init__(self, schema: pa.Schema, num_rows: int, held: Mapping[str, pa.Array | pa.ChunkedArray],
                 fetch: Callable[[int, int], pa.Table]) -> None:
        self.schema = schema
        self.num_rows = num_rows
        self.held = dict(held)
        self.fetch = fetch

    @property
    def column_names(self) -> list[str]:
        return self.schema.names

    def __len__(self) -> int:
        return self.num_rows

    def column(self, name: str) -> pa.Array | pa.ChunkedArray:
        """A held column (the fetched ones exist only one row group at a time)."""
        return self.held[name]

    def select_held(self, names: Sequence[str]) -> pa.Table:
        return pa.table({n: self.held[n] for n in names})

    def with_schema(self, schema: pa.Schema, held: Mapping[str, pa.Array | pa.ChunkedArray]) -> "StreamedRows":
        """The same rows under ``schema`` (same fetched columns), ``held`` columns added."""
        return StreamedRows(schema, self.num_rows, {**self.held, **held}, self.fetch)

    def slice_rows(self, start: int, length: int) -> pa.Table:
        """Rows ``start .. start + length`` of every column, in ``schema`` order."""
        fetched = None
        if any(name not in self.held for name in self.schema.names):
            fetched = self.fetch(start, length)
        columns = [self.held[f.name].slice(start, length) if f.name in self.held else fetched.column(f.name)
                   for f in self.schema]
        return pa.Table.from_arrays(columns, schema=self.schema)

    def chunks(self, rows: int) -> Iterator[pa.Table]:
        """The rows ``rows`` at a time (the last chunk shorter)."""
        for start in range(0, self.num_rows, rows):
            yield self.slice_rows(start, min(rows, self.num_rows - start))

    def materialize(self) -> pa.Table:
        """Every row at once (for the rare caller that needs the whole table)."""
        return self.slice_rows(0, self.num_rows)

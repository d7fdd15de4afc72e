"""Parquet files read without importing ``pyarrow.parquet`` (issue 15: a cold read).

``pyarrow.parquet`` imports ``pyarrow.fs`` (with ``pathlib``, ``ssl`` and the cloud file
systems' modules): ~14 ms of a fresh process's ~100 ms budget for a 2-column read, while the
reader the read path uses, ``pyarrow.parquet.ParquetFile``, is a thin Python class over the
Cython ``pyarrow._parquet.ParquetReader``, which loads in ~1 ms. :class:`ParquetFile` is that
same thin class for the calls pyhudi's readers make (open with a footer already read, the
footer, the Arrow schema, row groups by index, batches, a whole read; columns by name, a
name selecting every leaf under it as in ``pyarrow.parquet``). The writers still use
``pyarrow.parquet``.

``ParquetReader`` is private to pyarrow (checked on pyarrow 25 and 26): where it is missing, or
its ``open`` does not show the arguments passed here, :func:`parquet_file` builds
``pyarrow.parquet.ParquetFile`` instead (no upper pin on pyarrow: a newer pyarrow that changes
the private reader only costs the cold read its ~14 ms) (:data:`NATIVE` says which;
``tests/test_storage_parquet.py`` runs both).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

import pyarrow as pa

if TYPE_CHECKING:
    import pyarrow.parquet as pq

try:
    from pyarrow._parquet import FileMetaData, ParquetReader
except ImportError:  # pragma: no cover - a pyarrow without the private module
    FileMetaData = ParquetReader = None  # type: ignore[assignment,misc]


class ParquetFile:
    """One Parquet file opened for reading (the subset of ``pyarrow.parquet.ParquetFile`` the
    read path uses, with the same semantics)."""

    def __init__(self, source: Any, *, metadata: FileMetaData | None = None, buffer_size: int = 0,
                 pre_buffer: bool = True, memory_map: bool = False) -> None:
        self._close_source = getattr(source, "closed", True)  # (a caller's open file stays open)
        self.reader = ParquetReader()
        self.reader.open(source, use_memory_map=memory_map, buffer_size=buffer_size, pre_buffer=pre_buffer,
                         metadata=metadata, arrow_extensions_enabled=True)  # (as pyarrow.parquet's default)
        self._nested_paths_by_prefix = self._build_nested_paths()

    def __enter__(self) -> ParquetFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _build_nested_paths(self) -> dict[str, list[int]]:
        """Each column name and dotted prefix of a nested one -> its leaf column indices."""
        out: dict[str, list[int]] = {}
        for i, path in enumerate(self.reader.column_paths):
            key = path[0]
            out.setdefault(key, []).append(i)
            for part in path[1:]:
                key = f"{key}.{part}"
                out.setdefault(key, []).append(i)
        return out

    @property
    def metadata(self) -> FileMetaData:
        return self.reader.metadata

    @property
    def schema_arrow(self) -> pa.Schema:
        return self.reader.schema_arrow

    @property
    def num_row_groups(self) -> int:
        return self.reader.num_row_groups

    def close(self) -> None:
        """Close the file if this reader opened it (given a path), as ``pyarrow.parquet`` does."""
        if self._close_source:
            self.reader.close()

    @property
    def closed(self) -> bool:
        return self.reader.closed

    def _indices(self, columns: Iterable[str] | None) -> list[int] | None:
        if columns is None:
            return None
        by_prefix = self._nested_paths_by_prefix
        return [i for name in columns for i in by_prefix.get(name, ())]

    def read_row_group(self, i: int, columns: Sequence[str] | None = None, use_threads: bool = True) -> pa.Table:
        return self.reader.read_row_group(i, column_indices=self._indices(columns), use_threads=use_threads)

    def read_row_groups(self, row_groups: Sequence[int], columns: Sequence[str] | None = None,
                        use_threads: bool = True) -> pa.Table:
        return self.reader.read_row_groups(row_groups, column_indices=self._indices(columns), use_threads=use_threads)

    def iter_batches(self, batch_size: int = 65536, row_groups: Sequence[int] | None = None,
                     columns: Sequence[str] | None = None, use_threads: bool = True) -> Iterator[pa.RecordBatch]:
        if batch_size <= 0:
            raise ValueError("batch_size must be greater than zero")
        if row_groups is None:
            row_groups = range(self.reader.num_row_groups)
        return self.reader.iter_batches(batch_size, row_groups=row_groups, column_indices=self._indices(columns),
                                        use_threads=use_threads)

    def read(self, columns: Sequence[str] | None = None, use_threads: bool = True) -> pa.Table:
        return self.reader.read_all(column_indices=self._indices(columns), use_threads=use_threads)


def _native_works() -> bool:
    """Whether pyarrow's private reader is there and takes the arguments :class:`ParquetFile` passes."""
    if ParquetReader is None:
        return False
    import inspect

    try:
        params = inspect.signature(ParquetReader.open).parameters
    except (TypeError, ValueError):  # (a Cython method without a signature: not the reader checked)
        return False
    return all(name in params for name in ("use_memory_map", "buffer_size", "pre_buffer", "metadata",
                                           "arrow_extensions_enabled"))


NATIVE = _native_works()
"""Whether :func:`parquet_file` builds :class:`ParquetFile` (else ``pyarrow.parquet``'s)."""


def reader_class() -> type:
    """The class :func:`parquet_file` builds (for subclasses that change how it opens)."""
    if NATIVE:
        return ParquetFile
    import pyarrow.parquet as pq

    return pq.ParquetFile


def parquet_file(source: Any, *, metadata: FileMetaData | None = None, buffer_size: int = 0,
                 pre_buffer: bool = True) -> ParquetFile | pq.ParquetFile:
    """A Parquet reader over ``source`` (a path or a ``pyarrow.NativeFile``): :class:`ParquetFile`,
    or ``pyarrow.parquet.ParquetFile`` where pyarrow's private reader is not usable."""
    return reader_class()(source, metadata=metadata, buffer_size=buffer_size, pre_buffer=pre_buffer)

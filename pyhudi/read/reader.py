"""What ``Table.read`` / ``scan`` / ``read_incremental`` do around :func:`~pyhudi.read.plan.plan_scan`:
check their keyword arguments (a misspelled one is named, with the closest keyword, as the
method's own ``TypeError``: ``read(colums=...)``), and plan — and read — once more when a clean
or archival that ran meanwhile left the first listing's snapshot incomplete."""

from __future__ import annotations

from typing import Any, Callable, Mapping

import pyarrow as pa

from pyhudi.read.plan import plan_scan

_code = plan_scan.__code__
_TAKES = frozenset(_code.co_varnames[1:_code.co_argcount + _code.co_kwonlyargcount])
"""The keywords :func:`plan_scan` takes (``table`` aside), read off its code object: checking a
read's keywords against them costs a set comparison (no ``inspect``, no ``difflib`` import)."""
del _code


def check_read_keywords(method: Callable[..., Any], given: Mapping[str, Any]) -> None:
    """A keyword ``Table.read`` / ``scan`` / ``read_incremental`` pass on to :func:`plan_scan` that it
    does not take is a TypeError naming ``method`` and the closest keyword (``read(colums=...)``)."""
    if given.keys() <= _TAKES:
        return
    import difflib
    import inspect

    unknown = next(k for k in given if k not in _TAKES)
    names = [p for p in dict.fromkeys((*inspect.signature(method).parameters, *sorted(_TAKES))) if p != "self"]
    close = difflib.get_close_matches(unknown, names, n=1)
    raise TypeError(f"{method.__name__}() got an unexpected keyword argument {unknown!r}"
                    + (f"; did you mean {close[0]!r}?" if close else ""))


def planned(table: Any, method: Callable[..., Any], *args: Any, **options: Any) -> Any:
    """``table.plan_scan(*args, **options)`` for ``method`` (a keyword it does not take names it),
    planned once more on a fresh listing when a clean that completed after the read listed the
    timeline deleted files of its snapshot (a compaction or clustering it listed as pending
    completed meanwhile): nothing was read yet, and the fresh listing's snapshot is whole
    (:class:`~pyhudi.errors.StaleSnapshotError`)."""
    from pyhudi.errors import StaleSnapshotError

    check_read_keywords(method, options)
    try:
        return table.plan_scan(*args, **options)
    except StaleSnapshotError:
        return table.plan_scan(*args, **options)


def collected(table: Any, method: Callable[..., Any], *args: Any, **options: Any) -> pa.Table:
    """The rows of :func:`planned`'s plan, planned and read once more when a data file of its
    snapshot vanished while the tasks read (a clean that began after the plan deleted it): on
    the fresh listing a time travel the clean broke is refused
    (:class:`~pyhudi.errors.CleanedSnapshotError`), a missing file no clean explains is damage
    (:class:`~pyhudi.errors.CorruptFileError`), and a snapshot still whole reads."""
    from pyhudi.errors import StorageError

    try:
        return planned(table, method, *args, **options).to_table()
    except (StorageError, FileNotFoundError) as exc:  # (a memory-mapped file: Arrow's own error)
        gone = isinstance(exc, FileNotFoundError) or isinstance(exc.__cause__, FileNotFoundError) or \
            str(exc).startswith("file not found")
        if not gone:
            raise
    return planned(table, method, *args, **options).to_table()

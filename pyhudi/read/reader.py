"""The arguments of a table's reads: ``Table.read`` / ``scan`` / ``read_incremental`` pass their
keyword arguments on to :func:`~pyhudi.read.plan.plan_scan`; a misspelled one is named, with the
closest keyword, as the method's own ``TypeError`` (``read(colums=...)``), not ``plan_scan``'s."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from pyhudi.read.plan import plan_scan

_READ_KEYWORDS = frozenset(("batch_size", "strategy", "max_rows_per_task", "options"))
"""The keyword-only arguments of :func:`plan_scan`: given alone, nothing to check."""


def check_read_keywords(method: Callable[..., Any], given: Mapping[str, Any]) -> None:
    """A keyword ``Table.read`` / ``scan`` / ``read_incremental`` pass on to :func:`plan_scan` that it
    does not take is a TypeError naming ``method`` and the closest keyword (``read(colums=...)``)."""
    if given.keys() <= _READ_KEYWORDS:
        return
    import difflib
    import inspect

    takes = [p for p in inspect.signature(plan_scan).parameters if p != "table"]
    unknown = next((k for k in given if k not in takes), None)
    if unknown is not None:
        names = [p for p in dict.fromkeys((*inspect.signature(method).parameters, *takes)) if p != "self"]
        close = difflib.get_close_matches(unknown, names, n=1)
        raise TypeError(f"{method.__name__}() got an unexpected keyword argument {unknown!r}"
                        + (f"; did you mean {close[0]!r}?" if close else ""))

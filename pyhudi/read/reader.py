"""The arguments of a table's reads: ``Table.read`` / ``scan`` / ``read_incremental`` pass their
keyword arguments on to :func:`~pyhudi.read.plan.plan_scan`; a misspelled one is named, with the
closest keyword, as the method's own ``TypeError`` (``read(colums=...)``), not ``plan_scan``'s."""

from __future__ import annotations

from typing import Any, Callable, Mapping

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

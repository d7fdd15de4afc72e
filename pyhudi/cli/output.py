"""What every ``pyhudi`` command shares: printing for people (rich) or machines (``--json``),
progress bars on long work, ``KEY=VALUE`` options, opening a table.

Commands print results to stdout and nothing else there: with ``--json`` exactly one JSON
document, so ``pyhudi timeline t --json | jq`` works. Progress and errors go to stderr.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from pyhudi.cli.io import CliInputError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table as RichTable


PIPE_WIDTH = 160
"""Columns of tables printed to a pipe or file (``COLUMNS`` overrides): wide enough for file names."""


class LazyConsole:
    """A rich ``Console`` made at its first use: a command that prints JSON, writes a file or
    fails its input checks never imports rich (~15 ms of a fresh ``pyhudi`` process)."""

    def __init__(self, make: Callable[[], Console]) -> None:
        self._make = make
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            self._console = self._make()
        return getattr(self._console, name)


def _stdout() -> Console:
    from rich.console import Console

    width = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS") or PIPE_WIDTH)
    console = Console(file=sys.stdout, soft_wrap=False, width=width)
    console.on_broken_pipe = _pipe_closed  # type: ignore[method-assign]  # (rich would exit with 1 itself)
    return console


def _pipe_closed() -> None:
    """rich met a closed stdout (``pyhudi describe ... | head``): the command ends as any other
    command whose reader went away does (:func:`pyhudi.cli._run`)."""
    raise BrokenPipeError("stdout closed")


def _stderr() -> Console:
    from rich.console import Console

    return Console(file=sys.stderr, soft_wrap=True)


def stdout_console() -> Console:
    """The console results go to (its stream looked up at first use, so tests capturing stdout
    see it; rich loads then: :class:`LazyConsole`)."""
    return LazyConsole(_stdout)  # type: ignore[return-value]


def stderr_console() -> Console:
    return LazyConsole(_stderr)  # type: ignore[return-value]


def emit_json(value: Any) -> None:
    """One JSON document on stdout (bytes and other odd values as their ``str``)."""
    print(json.dumps(value, indent=2, default=str))


def table_view(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]],
               right: Sequence[str] = ()) -> RichTable:
    """A rich table of ``rows`` (values printed with ``str``; None as empty); ``right``: the
    columns that hold numbers (right-aligned)."""
    from rich.table import Table as RichTable

    view = RichTable(title=title)
    for name in columns:
        view.add_column(name, justify="right" if name in right else "left", overflow="fold")
    for row in rows:
        view.add_row(*("" if v is None else str(v) for v in row))
    return view


def print_rows(console: Console, title: str, rows: list[dict[str, Any]], columns: Sequence[str] | None = None) -> None:
    """Rows (dicts with the same keys) as a table titled ``title``; ``columns`` names them when
    there may be no row (an empty result still shows its title and header)."""
    columns = list(columns) if columns is not None else list(rows[0]) if rows else []
    console.print(table_view(title, columns, (r.values() for r in rows)))


def human_bytes(size: float | int | None) -> str:
    """``1536`` → ``1.5 KiB``: file sizes people can compare at a glance."""
    if size is None:
        return ""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"  # pragma: no cover (the loop returns)


def parse_options(items: Sequence[str] | None, flag: str = "--option") -> dict[str, str]:
    """``["hoodie.x=1", ...]`` → ``{"hoodie.x": "1"}``; an item without ``=`` is an input error."""
    options = {}
    for item in items or ():
        key, found, value = item.partition("=")
        if not found or not key.strip():
            raise CliInputError(f"{flag} {item!r}: expected KEY=VALUE")
        options[key.strip()] = value
    return options


def open_table(path: str) -> Any:
    """The table at ``path`` (a missing table is :class:`~pyhudi.errors.TableNotFoundError`)."""
    import pyhudi

    return pyhudi.open_table(path)


@contextmanager
def progress(description: str, total: int | None = None, enabled: bool = True) -> Iterator[Any]:
    """A progress bar on stderr for long work, yielding ``advance(n=1)``.

    Drawn only on a terminal (stderr is a TTY) so redirected output and ``--json`` pipelines stay
    clean; elsewhere ``advance`` does nothing.
    """
    if not enabled or not sys.stderr.isatty():
        yield lambda n=1: None
        return
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=_stderr(), transient=True) as bar:  # (rich needs a real console)
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)

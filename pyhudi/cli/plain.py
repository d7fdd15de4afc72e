"""Tables printed to a pipe or file without importing rich, character for character as rich prints them.

Importing rich's console and table costs ~15 ms, as much as the rest of a cold ``pyhudi read``
beyond pyarrow (issue 15, item 3). Printed to a pipe or a file, rich draws a table of plain
cells as box characters and spaces only, which :func:`render` reproduces; it returns None for
anything else, and the caller prints with rich as before:

- a terminal, or an environment variable that makes rich style a pipe (``FORCE_COLOR``,
  ``TTY_COMPATIBLE``, ``TTY_INTERACTIVE``);
- text rich would rewrite or measure differently: markup (``[``), emoji codes (``:name:``),
  anything but printable ASCII, spaces at either end (rich strips a title's);
- a table wider than the console, or a title wider than the table (rich wraps them).

``tests/test_cli_plain.py`` checks the output against rich's on generated tables.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable, Sequence, TextIO

_STYLING_ENV = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")
_PLAIN = re.compile(r"[ -Z\\\]-~]*")  # printable ASCII without "["
_EMOJI = re.compile(r":\S*?:")  # (rich's emoji code pattern, names unchecked: a superset)


def plain_width(file: TextIO, default: int) -> int | None:
    """The width rich would print a table to ``file`` at, when it would print it unstyled; None
    when rich would style it (a terminal, or the environment asks for it)."""
    if any(os.environ.get(name) for name in _STYLING_ENV):
        return None
    try:
        if file.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return int(os.environ.get("COLUMNS") or default)


def _is_plain(text: str) -> bool:
    return _PLAIN.fullmatch(text) is not None and _EMOJI.search(text) is None and text == text.strip()


def render(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], width: int) -> str | None:
    """``rows`` (values printed with ``str``, None as empty) as rich's default table titled
    ``title`` with left-aligned columns, or None when rich would print it otherwise (see the
    module docstring)."""
    cells = [["" if v is None else str(v) for v in row] for row in rows]
    if not columns or any(len(row) != len(columns) for row in cells):
        return None
    if not all(_is_plain(text) for text in (title, *columns, *(c for row in cells for c in row))):
        return None
    widths = [max(len(name), *(len(row[i]) for row in cells)) + 2 if cells else len(name) + 2
              for i, name in enumerate(columns)]
    total = sum(widths) + len(widths) + 1
    if total > width or len(title) > total:
        return None
    lines = []
    if title:
        left = (total - len(title)) // 2
        lines.append(" " * left + title + " " * (total - len(title) - left))
    lines.append("┏" + "┳".join("━" * w for w in widths) + "┓")
    lines.append(_row("┃", columns, widths))
    lines.append("┡" + "╇".join("━" * w for w in widths) + "┩")
    lines.extend(_row("│", row, widths) for row in cells)
    lines.append("└" + "┴".join("─" * w for w in widths) + "┘")
    return "\n".join(lines) + "\n"


def _row(edge: str, values: Sequence[str], widths: Sequence[int]) -> str:
    return edge + edge.join(" " + v.ljust(w - 2) + " " for v, w in zip(values, widths)) + edge

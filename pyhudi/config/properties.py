"""Java ``.properties`` text format, as ``java.util.Properties.load``/``store`` read and write it.

``hoodie.properties`` is read by Java Hudi (``Properties.load``) and by hudi-rs, so the format is
Java's, not an ad-hoc ``key=value``: comments start with ``#`` or ``!``, keys end at an unescaped
``=``, ``:`` or white space, backslash escapes (``\\t \\n \\r \\f \\uXXXX`` and escaped separators),
and logical lines continue over a trailing backslash. ``store`` escapes ``=``, ``:``, ``#``, ``!``
and ``\\`` in keys and values, white space in keys (and a leading space in values), and writes
characters outside printable ASCII as ``\\uXXXX``.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Iterable, Mapping

from pyhudi.errors import ConfigError

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_WHITESPACE = " \t\f"


def _logical_lines(text: str) -> Iterable[str]:
    """Join continuation lines (odd number of trailing backslashes) and drop comments/blanks."""
    pending: str | None = None
    for raw in text.splitlines():
        line = raw.lstrip(_WHITESPACE)
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        continued = trailing % 2 == 1
        if continued:
            line = line[:-1]
        pending = line if pending is None else pending + line
        if not continued:
            yield pending
            pending = None
    if pending is not None:
        yield pending


def _unescape(text: str) -> str:
    """``text`` with its backslash escapes resolved, jumping from one backslash to the next (a
    table's schema is one ~7 KB value: a loop over its characters cost a cold read ~1 ms)."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i, code_units = 0, False
    while True:
        j = text.find("\\", i)
        if j < 0 or j + 1 >= len(text):  # (a trailing lone backslash is kept)
            out.append(text[i:])
            break
        out.append(text[i:j])
        nxt = text[j + 1]
        if nxt == "u":
            digits = text[j + 2 : j + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError(f"malformed \\uXXXX escape in properties: {text!r}")
            out.append(chr(int(digits, 16)))
            code_units = True
            i = j + 6
        else:
            out.append(_ESCAPES.get(nxt, nxt))
            i = j + 2
    joined = "".join(out)
    if not code_units:
        return joined
    # \uXXXX escapes are UTF-16 code units: join surrogate pairs into one character.
    return joined.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _split_key_value(line: str) -> tuple[str, str]:
    """Split at the first unescaped ``=``, ``:`` or white space (one ``=``/``:`` may follow space)."""
    i = 0
    while i < len(line) and line[i] not in "=:" + _WHITESPACE:
        i += 2 if line[i] == "\\" else 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(_WHITESPACE)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WHITESPACE)
    return _unescape(key), _unescape(rest)


def loads(text: str) -> dict[str, str]:
    """Parse properties text into an ordered dict (later duplicates win, as in Java)."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_key_value(line)
        props[key] = value
    return props


def _escape(text: str, is_key: bool) -> str:
    out: list[str] = []
    for index, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\f":
            out.append("\\f")
        elif ch in "=:#!":
            out.append("\\" + ch)
        elif ch == " " and (is_key or index == 0):
            out.append("\\ ")
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            if ord(ch) > 0xFFFF:  # Java chars are UTF-16 code units: write a surrogate pair
                code = ord(ch) - 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}")
            else:
                out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return "".join(out)


def dumps(props: Mapping[str, str], comment: str | None = None, now: datetime | None = None) -> str:
    """Serialise like ``Properties.store``: a comment line, a date line, then ``key=value`` lines."""
    now = now or datetime.now(timezone.utc)
    lines = []
    if comment is not None:
        lines.append("#" + comment)
    lines.append("#" + now.strftime("%a %b %d %H:%M:%S UTC %Y"))
    for key, value in props.items():
        if not isinstance(value, str):
            raise ConfigError(f"property {key!r} must be a string, got {type(value).__name__}")
        lines.append(f"{_escape(key, True)}={_escape(value, False)}")
    return "\n".join(lines) + "\n"

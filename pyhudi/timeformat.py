"""Joda-Time date patterns, vectorised: Hudi's timestamp key generator formats and parses with them.

Hudi's ``TimestampBasedKeyGenerator`` turns one column into a partition path with a Joda-Time
pattern (``hoodie.keygen.timebased.output.dateformat``, e.g. ``yyyy/MM/dd/HH``) and parses date
strings with others (``...input.dateformat``). To write the same folders Hudi writes, pyhudi
reads those patterns as Joda does — runs of one letter are a field, ``'...'`` is quoted text
(``''`` a quote), anything else is literal — and formats whole Arrow arrays at once: the fields
are computed with Arrow's temporal kernels in the output time zone and joined with the literals.

Supported letters (English names, as Hudi's JVM default locale prints them): ``y Y x`` (years;
two letters print the year of the century), ``M`` (1–2 digits; ``MMM`` Jan, ``MMMM`` January),
``d D w e E`` (day of month / year, ISO week, day of week number / name), ``H k K h a m s S``
and ``Z`` (``+0800``), ``ZZ`` (``+08:00``), ``ZZZ`` (the zone id). Parsing supports the same
letters except ``Y x w e`` (which do not fix a date). Other letters are refused by name.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa

from pyhudi.errors import ConfigError
from pyhudi.lazy import pc
from pyhudi.value import Value

FORMAT_LETTERS = frozenset("yYxMdDweEHkKhamsSZ")
PARSE_LETTERS = frozenset("yMdDEHkKhamsSZ")
_NUMERIC = frozenset("yYxMdDweHkKhmsS")
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_MS_PER = {"d": 86_400_000, "H": 3_600_000, "m": 60_000, "s": 1000}
_OFFSET_RE = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?$")


class Token(Value):
    """A pattern field (``letter`` repeated ``count`` times) or literal ``text`` (letter None)."""

    letter: str | None
    count: int = 0
    text: str = ""

    def __init__(self, letter: str | None, count: int = 0, text: str = "") -> None:
        self._set(letter=letter, count=count, text=text)


def parse_pattern(pattern: str, what: str, letters: frozenset[str] = FORMAT_LETTERS) -> tuple[Token, ...]:
    """The tokens of a Joda pattern; ``what`` (the config key) names it in errors."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise ConfigError(f"{what} must be a date pattern such as yyyy/MM/dd, got {pattern!r}")
    tokens: list[Token] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "'":
            text, i = _quoted(pattern, i, what)
            tokens.append(Token(None, text=text))
        elif ch.isascii() and ch.isalpha():
            j = i
            while j < n and pattern[j] == ch:
                j += 1
            if ch not in letters:
                raise ConfigError(f"{what}={pattern!r}: pattern letter {ch!r} is not supported here "
                                  f"(supported: {' '.join(sorted(letters))})")
            tokens.append(Token(ch, j - i))
            i = j
        else:
            tokens.append(Token(None, text=ch))
            i += 1
    return _merge_literals(tokens)


def _quoted(pattern: str, start: int, what: str) -> tuple[str, int]:
    """Quoted text starting at ``start`` (a quote): its text and the index after it."""
    if pattern.startswith("''", start):
        return "'", start + 2
    out, j = [], start + 1
    while j < len(pattern):
        if pattern[j] == "'":
            if pattern.startswith("''", j):
                out.append("'")
                j += 2
                continue
            return "".join(out), j + 1
        out.append(pattern[j])
        j += 1
    raise ConfigError(f"{what}={pattern!r}: unterminated quote")


def _merge_literals(tokens: list[Token]) -> tuple[Token, ...]:
    merged: list[Token] = []
    for token in tokens:
        if token.letter is None and merged and merged[-1].letter is None:
            merged[-1] = Token(None, text=merged[-1].text + token.text)
        elif token.letter is not None or token.text:
            merged.append(token)
    return tuple(merged)


# ------------------------------------------------------------------------------------- zones
def zone_name(zone: str, what: str) -> str:
    """Arrow's name for a Java time zone id (``UTC``, ``GMT+8``, ``Asia/Kolkata``); unknown ids
    are refused (Java would silently use GMT)."""
    text = zone.strip()
    if text.upper() in ("UTC", "GMT", "Z", "UCT"):
        return "UTC"
    match = _OFFSET_RE.match(text)
    if match and (text[0] in "+-" or text[:3].upper() in ("UTC", "GMT")):
        sign, hours, minutes = match.groups()
        return f"{sign}{int(hours):02d}:{minutes or '00'}"
    try:
        pc.hour(pa.array([0], pa.timestamp("ms", tz=text)))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        raise ConfigError(f"{what}={zone!r} is not a known time zone") from None
    return text


def is_fixed_offset(zone: str) -> bool:
    """Whether local time in ``zone`` grows with the instant (no daylight saving jumps back)."""
    return zone == "UTC" or bool(re.fullmatch(r"[+-]\d{2}:\d{2}", zone))


# ------------------------------------------------------------------------------------- format
def format_millis(millis: pa.Array, tokens: tuple[Token, ...], zone: str) -> pa.Array:
    """Epoch milliseconds (int64, no nulls) as text in ``zone``, one string per value."""
    ts = millis.cast(pa.int64()).cast(pa.timestamp("ms", tz=zone))
    pieces = [_piece(token, ts, millis) if token.letter else token.text for token in tokens]
    arrays = [p for p in pieces if not isinstance(p, str)]
    if not arrays:
        return pa.array([pieces[0] if pieces else ""] * len(millis), pa.string())
    if len(pieces) == 1:
        return pieces[0]
    return pc.binary_join_element_wise(*pieces, "")


def _digits(values: pa.Array | np.ndarray, width: int) -> pa.Array:
    text = pa.array(np.asarray(values, dtype=np.int64)).cast(pa.string())
    return pc.utf8_lpad(text, width=width, padding="0") if width > 1 else text


def _piece(token: Token, ts: pa.Array, millis: pa.Array) -> pa.Array:
    letter, count = token.letter, token.count
    if letter in "yYx":
        year = np.asarray(pc.iso_year(ts) if letter == "x" else pc.year(ts))
        return _digits(year % 100, 2) if count == 2 else _digits(year, count)
    if letter == "M":
        month = np.asarray(pc.month(ts))
        if count >= 3:
            names = [m[:3] if count == 3 else m for m in _MONTHS]
            return pa.array(names).take(pa.array(month - 1))
        return _digits(month, count)
    if letter == "E":
        day = np.asarray(pc.day_of_week(ts))
        return pa.array([d[:3] if count <= 3 else d for d in _DAYS]).take(pa.array(day))
    simple = {"d": pc.day, "D": pc.day_of_year, "w": pc.iso_week, "m": pc.minute, "s": pc.second}
    if letter in simple:
        return _digits(np.asarray(simple[letter](ts)), count)
    if letter == "e":
        return _digits(np.asarray(pc.day_of_week(ts, count_from_zero=False)), count)
    if letter in "HkKha":
        return _hour_piece(letter, count, np.asarray(pc.hour(ts)))
    if letter == "S":
        ms = np.asarray(pc.millisecond(ts))
        if count <= 3:
            return _digits(ms // 10 ** (3 - count), count)
        return pc.binary_join_element_wise(_digits(ms, 3), "0" * (count - 3), "")
    return _offset_piece(count, ts, millis)


def _hour_piece(letter: str, count: int, hour: np.ndarray) -> pa.Array:
    if letter == "a":
        return pa.array(np.where(hour < 12, "AM", "PM"))
    value = {"H": hour, "k": np.where(hour == 0, 24, hour), "K": hour % 12,
             "h": np.where(hour % 12 == 0, 12, hour % 12)}[letter]
    return _digits(value, count)


def _offset_piece(count: int, ts: pa.Array, millis: pa.Array) -> pa.Array:
    zone = ts.type.tz
    if count >= 3:
        return pa.array([zone] * len(ts), pa.string())
    local = np.asarray(pc.local_timestamp(ts).cast(pa.int64()))
    minutes = (local - np.asarray(millis, dtype=np.int64)) // 60_000
    sign = pa.array(np.where(minutes < 0, "-", "+"))
    hours, mins = _digits(np.abs(minutes) // 60, 2), _digits(np.abs(minutes) % 60, 2)
    return pc.binary_join_element_wise(sign, hours, ":" if count == 2 else "", mins, "")


# ------------------------------------------------------------------------------------- parse
class Parsed(Value):
    """Parsed date strings: the instants (epoch ms) and the wall-clock times written in the
    strings (epoch ms as if UTC). Null where no pattern matched."""

    instant: pa.Array
    wall: pa.Array

    def __init__(self, instant: pa.Array, wall: pa.Array) -> None:
        self._set(instant=instant, wall=wall)


def pattern_regex(tokens: tuple[Token, ...]) -> str:
    """A regular expression matching the whole text ``tokens`` print, one named group per field
    (a numeric field followed by another takes exactly its width, as Joda parses it)."""
    parts = []
    for i, token in enumerate(tokens):
        if token.letter is None:
            parts.append(re.escape(token.text))
            continue
        group = f"f{i}"
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if token.letter in "ME" and (token.letter == "E" or token.count >= 3):
            parts.append(f"(?P<{group}>[A-Za-z]+)")
        elif token.letter == "a":
            parts.append(f"(?P<{group}>[AaPp][Mm])")
        elif token.letter == "Z":
            parts.append(f"(?P<{group}>Z|[+-]\\d{{2}}:?\\d{{2}})")
        elif nxt is not None and nxt.letter in _NUMERIC:
            parts.append(f"(?P<{group}>\\d{{{token.count}}})")
        else:
            parts.append(f"(?P<{group}>\\d+)")
    return "^" + "".join(parts) + "$"


def parse_text(text: pa.Array, patterns: list[tuple[Token, ...]], zone: str | None) -> Parsed:
    """Parse strings with the first pattern that matches each one; local times without an
    offset are in ``zone`` (UTC when None)."""
    instant = wall = None
    for tokens in patterns:
        inst, local = _parse_one(text, tokens, zone or "UTC")
        instant = inst if instant is None else pc.coalesce(instant, inst)
        wall = local if wall is None else pc.coalesce(wall, local)
    return Parsed(instant, wall)


def _parse_one(text: pa.Array, tokens: tuple[Token, ...], zone: str) -> tuple[pa.Array, pa.Array]:
    groups = pc.extract_regex(text, pattern_regex(tokens))
    valid = np.array(groups.is_valid(), dtype=bool)  # (a copy: month names may invalidate rows)
    fields = {"y": 1970, "M": 1, "d": 1, "H": 0, "m": 0, "s": 0, "S": 0}
    day_of_year, half, offset = None, None, None
    for i, token in enumerate(tokens):
        if token.letter is None or token.letter == "E":
            continue
        raw = groups.field(f"f{i}")
        if token.letter == "Z":
            offset = _parse_offsets(raw)
        elif token.letter == "a":
            half = np.asarray(pc.equal(pc.utf8_upper(raw), "PM"))
        elif token.letter == "M" and token.count >= 3:
            fields["M"] = _month_numbers(raw, token.count, valid)
        else:
            numbers = np.asarray(pc.if_else(groups.is_valid(), raw, "0").cast(pa.int64()))
            if token.letter == "S":
                numbers = numbers * 10 ** (3 - token.count) if token.count <= 3 else numbers // 10 ** (token.count - 3)
            key = {"k": "H", "K": "H", "h": "H"}.get(token.letter, token.letter)
            if token.letter == "D":
                day_of_year = numbers
            else:
                fields[key] = numbers % 24 if token.letter in "kh" else numbers
    hour = np.asarray(fields["H"], dtype=np.int64)
    if half is not None:
        hour = hour % 12 + np.where(half, 12, 0)
    days = _days_from_civil(fields["y"], fields["M"], fields["d"])
    if day_of_year is not None:
        days = _days_from_civil(fields["y"], 1, 1) + day_of_year - 1
    local = (days * _MS_PER["d"] + hour * _MS_PER["H"] + np.asarray(fields["m"]) * _MS_PER["m"]
             + np.asarray(fields["s"]) * _MS_PER["s"] + np.asarray(fields["S"]))
    local = np.broadcast_to(np.asarray(local, dtype=np.int64), (len(text),))
    mask = ~valid
    wall = pa.array(local, pa.int64(), mask=mask)
    if offset is not None:
        return pa.array(local - offset, pa.int64(), mask=mask), wall
    if zone == "UTC":
        return wall, wall
    naive = wall.cast(pa.timestamp("ms"))
    placed = pc.assume_timezone(naive, timezone=zone, ambiguous="earliest", nonexistent="earliest")
    return placed.cast(pa.int64()), wall


def _parse_offsets(raw: pa.Array) -> np.ndarray:
    """``Z``, ``+0800``, ``-08:00`` → offsets in milliseconds."""
    digits = pc.replace_substring(pc.replace_substring(raw, ":", ""), "Z", "+0000")
    digits = pc.if_else(pc.equal(digits, ""), "+0000", digits)
    sign = np.where(np.asarray(pc.starts_with(digits, "-")), -1, 1)
    hours = np.asarray(pc.utf8_slice_codeunits(digits, 1, 3).cast(pa.int64()))
    minutes = np.asarray(pc.utf8_slice_codeunits(digits, 3, 5).cast(pa.int64()))
    return sign * (hours * 3_600_000 + minutes * 60_000)


def _month_numbers(raw: pa.Array, count: int, valid: np.ndarray) -> np.ndarray:
    names = [m[:3].lower() for m in _MONTHS] if count == 3 else [m.lower() for m in _MONTHS]
    index = np.asarray(pc.index_in(pc.utf8_lower(raw), pa.array(names)).fill_null(-1))
    valid &= index >= 0
    return index + 1


def _days_from_civil(year, month, day) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (vectorised civil-calendar arithmetic)."""
    y = np.asarray(year, dtype=np.int64) - (np.asarray(month) <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    m = np.asarray(month, dtype=np.int64)
    doy = (153 * (m + np.where(m > 2, -3, 9)) + 2) // 5 + np.asarray(day, dtype=np.int64) - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468

"""Joda date patterns as Hudi's timestamp key generator prints and parses them."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pyhudi.errors import ConfigError
from pyhudi.timeformat import PARSE_LETTERS, format_millis, parse_pattern, parse_text, zone_name

T = 1705367700123  # 2024-01-16 01:15:00.123 UTC, a Tuesday


def _fmt(pattern: str, millis=(T,), zone: str = "UTC") -> list[str]:
    return format_millis(pa.array(list(millis), pa.int64()), parse_pattern(pattern, "k"), zone).to_pylist()


@pytest.mark.parametrize(("pattern", "expected"), [
    ("yyyy/MM/dd/HH", "2024/01/16/01"),
    ("yyyyMMdd", "20240116"),
    ("yyyy-MM-dd'T'HH:mm:ss.SSS", "2024-01-16T01:15:00.123"),
    ("yy/M/d/H", "24/1/16/1"),
    ("dd-MMM-yyyy", "16-Jan-2024"),
    ("MMMM yyyy", "January 2024"),
    ("EEE EEEE", "Tue Tuesday"),
    ("D e w x", "16 2 3 2024"),
    ("hh:mm a k K", "01:15 AM 1 1"),
    ("'hour='HH' o''clock'", "hour=01 o'clock"),
    ("S SS SSSS", "1 12 1230"),
    ("Z ZZ ZZZ", "+0000 +00:00 UTC"),
])
def test_format_patterns(pattern, expected):
    assert _fmt(pattern) == [expected]


def test_format_in_zones():
    assert _fmt("yyyy/MM/dd/HH Z", [T, 0], "Asia/Kolkata") == ["2024/01/16/06 +0530", "1970/01/01/05 +0530"]
    assert _fmt("yyyy-MM-dd HH ZZ", [T], zone_name("GMT-8", "k")) == ["2024-01-15 17 -08:00"]
    assert _fmt("HH k h a", [0, 12 * 3_600_000]) == ["00 24 12 AM", "12 12 12 PM"]


def test_pattern_errors_name_the_key():
    with pytest.raises(ConfigError, match=r"hoodie.x='yyyy/qq': pattern letter 'q' is not supported"):
        parse_pattern("yyyy/qq", "hoodie.x")
    with pytest.raises(ConfigError, match="unterminated quote"):
        parse_pattern("yyyy'T", "hoodie.x")
    with pytest.raises(ConfigError, match="must be a date pattern"):
        parse_pattern("", "hoodie.x")
    with pytest.raises(ConfigError, match="pattern letter 'w'"):
        parse_pattern("yyyy-ww", "hoodie.x", PARSE_LETTERS)
    with pytest.raises(ConfigError, match="'Mars/Olympus' is not a known time zone"):
        zone_name("Mars/Olympus", "hoodie.x")


def test_parse_with_several_patterns_zones_and_offsets():
    texts = ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "yyyyMMdd", "dd MMM yyyy hh a")
    patterns = [parse_pattern(p, "k", PARSE_LETTERS) for p in texts]
    text = pa.array(["2024-01-16T06:45:00.123+0530", "20240116", "16 jan 2024 03 PM", "2024-13-99x"])
    parsed = parse_text(text, patterns, "UTC")
    assert parsed.instant.to_pylist() == [T, 1705363200000, 1705363200000 + 15 * 3_600_000, None]
    assert parsed.wall.to_pylist()[0] == T + 19_800_000  # the wall clock the string shows
    local = parse_text(pa.array(["2024-01-16 06:45"]), [parse_pattern("yyyy-MM-dd HH:mm", "k", PARSE_LETTERS)],
                       "Asia/Kolkata")
    assert local.instant.to_pylist() == [T - 123]

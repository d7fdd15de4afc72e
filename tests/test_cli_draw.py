"""pyhudi draw: a PNG of the timeline and the file-group layout per family."""

from __future__ import annotations

import json
import struct
import zlib

import pyarrow as pa

import pyhudi
from pyhudi.cli import main
from pyhudi.cli.draw import draw_table

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.float64()), ("b", pa.string())])


def png_size(path) -> tuple[int, int]:
    """Width and height from a PNG's header, after checking the signature and the IHDR chunk's CRC."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert (length, kind) == (13, b"IHDR")
    body = data[16:29]
    assert struct.unpack(">I", data[29:33])[0] == zlib.crc32(kind + body)
    assert data.endswith(b"IEND\xaeB`\x82")
    return struct.unpack(">II", body[:8])


def table(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2, column_families={"fa": "a", "fb": "b"},
                            options={"hoodie.pyhudi.insert.full.row": "false"})  # (one log per family to draw)
    t.upsert(pa.table({"id": [0, 1, 2, 3], "a": [0.0, 1.0, 2.0, 3.0], "b": ["w", "x", "y", "z"]}))
    t.upsert(pa.table({"id": [1], "a": [1.5]}))
    t.compact(families=["fa"])
    t.schedule_compaction(families=["fb"])  # a pending instant too
    return t


def test_draw_writes_a_png_of_the_requested_size(tmp_path, capsys):
    t = table(tmp_path)
    out = tmp_path / "t.png"
    assert main(["draw", t.path, "-o", str(out), "--size", "1200x800", "--json"]) == 0
    drawn = json.loads(capsys.readouterr().out)
    assert drawn == {"output": str(out), "width": 1200, "height": 800, "instants": 4,
                     "families": {"fa": 2, "fb": 2}}
    assert png_size(out) == (1200, 800)


def test_draw_default_size_grows_with_the_families(tmp_path, capsys):
    t = table(tmp_path)
    out = tmp_path / "t.png"
    assert main(["draw", t.path, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    width, height = png_size(out)
    assert text == f"drew 4 instants and 4 file-group rows to {out} ({width}x{height} px)\n"
    assert width == 1400 and height > 400
    small = draw_table(pyhudi.open_table(t.path), str(tmp_path / "one.png"))
    assert (small["width"], small["height"]) == (width, height)  # deterministic


def test_draw_bad_input_is_one_error_line(tmp_path, capsys):
    t = table(tmp_path)
    cases = [
        (["draw", t.path, "--size", "10x10"], "error: --size '10x10': expected WIDTHxHEIGHT in pixels"),
        (["draw", t.path, "-o", str(tmp_path / "x.jpg")], "the picture is a PNG; name the file *.png"),
        (["draw", t.path, "-o", str(tmp_path / "no" / "x.png")], "error: cannot write"),
        (["draw", str(tmp_path / "none"), "-o", str(tmp_path / "x.png")], "error: no Hudi table at"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        captured = capsys.readouterr()
        assert captured.out == "" and message in captured.err and captured.err.count("\n") == 1, argv
    assert not (tmp_path / "x.png").exists()

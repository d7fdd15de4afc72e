"""``pyhudi read`` to a pipe prints its table without importing rich (cold start, issue 15):
:mod:`pyhudi.cli.plain` must print exactly what rich prints, or hand the table back to rich."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from pyhudi.cli import plain
from pyhudi.cli.output import table_view

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rich_text(title: str, columns: list[str], rows: list[list], width: int = 160) -> str:
    out = io.StringIO()
    Console(file=out, soft_wrap=False, width=width).print(table_view(title, columns, rows))
    return out.getvalue()


def test_plain_table_is_rich_table():
    rows = [[0, 1.5, "a", None], [123456, -2.25e-05, "bcd efg", True]]
    text = plain.render("t: 2 rows (showing 2)", ["id", "c0", "name", "flag"], rows, 160)
    assert text == rich_text("t: 2 rows (showing 2)", ["id", "c0", "name", "flag"], rows)
    assert text.splitlines() == [
        "         t: 2 rows (showing 2)         ",
        "┏━━━━━━━━┳━━━━━━━━━━━┳━━━━━━━━━┳━━━━━━┓",
        "┃ id     ┃ c0        ┃ name    ┃ flag ┃",
        "┡━━━━━━━━╇━━━━━━━━━━━╇━━━━━━━━━╇━━━━━━┩",
        "│ 0      │ 1.5       │ a       │      │",
        "│ 123456 │ -2.25e-05 │ bcd efg │ True │",
        "└────────┴───────────┴─────────┴──────┘",
    ]


@pytest.mark.parametrize("title, columns, rows, width", [
    ("x", ["a"], [["[bold]b[/bold]"]], 160),  # markup
    ("x", ["a"], [[":100:"]], 160),  # an emoji code
    ("x", ["a"], [["12:00:00"]], 160),  # (looks like one: left to rich)
    ("x", ["a"], [["é"]], 160),  # not ASCII
    ("x", ["a"], [["tab\there"]], 160),
    ("x", ["a"], [["a" * 200]], 160),  # wider than the console: rich folds it
    ("a title wider than its table", ["a"], [["b"]], 160),  # rich wraps it
    ("x", [], [], 160),
    ("title ", ["a"], [["b"]], 160),  # rich strips the title
    ("x", ["a"], [[" b"]], 160),
])
def test_tables_rich_would_print_otherwise_are_left_to_rich(title, columns, rows, width):
    assert plain.render(title, columns, rows, width) is None


_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12)
_value = st.one_of(st.none(), st.integers(), st.floats(allow_nan=True), st.booleans(), _text)


@settings(max_examples=300, deadline=None)
@given(st.lists(_text, min_size=1, max_size=5, unique=True).flatmap(
    lambda names: st.tuples(st.just(names), st.lists(st.lists(_value, min_size=len(names), max_size=len(names)),
                                                     max_size=4))),
       _text, st.integers(min_value=10, max_value=120))
def test_generated_tables_print_as_rich_prints_them(table, title, width):
    columns, rows = table
    text = plain.render(title, columns, rows, width)
    if text is not None:
        assert text == rich_text(title, columns, rows, width)


def test_plain_width_is_none_on_a_terminal_or_when_the_environment_styles_pipes(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)
    assert plain.plain_width(io.StringIO(), 160) == 160
    assert plain.plain_width(Tty(), 160) is None
    monkeypatch.setenv("COLUMNS", "90")
    assert plain.plain_width(io.StringIO(), 160) == 90
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert plain.plain_width(io.StringIO(), 160) is None


def test_cli_read_to_a_pipe_does_not_import_rich(tmp_path):
    """A fresh ``pyhudi read`` printing to a pipe: the table rich would print, without rich."""
    import pyarrow as pa

    import pyhudi

    path = str(tmp_path / "t")
    table = pyhudi.create_table(path, pa.schema([("id", pa.int64()), ("v", pa.float64()), ("s", pa.string())]), "id")
    table.insert(pa.table({"id": [2, 1, 3], "v": [0.5, None, 2.0], "s": ["second value", "first value", "c"]}))
    code = ("import sys, json\nfrom pyhudi.cli import main\n"
            "status = main(['read', sys.argv[1], '--sort', 'id', '--limit', '2'])\n"
            "print(json.dumps({'status': status, 'rich': sorted(m for m in sys.modules if m.startswith('rich'))}))")
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE",
                                                            "COLUMNS")}
    done = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                          env=dict(env, PYTHONPATH=ROOT), timeout=120, check=True)
    *printed, last = done.stdout.splitlines()
    assert json.loads(last) == {"status": 0, "rich": []}
    assert "\n".join(printed) + "\n" == rich_text("t: 3 rows (showing 2)", ["id", "v", "s"],
                                                  [[1, None, "first value"], [2, 0.5, "second value"]])
    forced = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                            env=dict(env, PYTHONPATH=ROOT, FORCE_COLOR="1"), timeout=120, check=True)
    assert "rich.console" in json.loads(forced.stdout.splitlines()[-1])["rich"]

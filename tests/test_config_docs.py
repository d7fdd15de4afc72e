"""docs/configuration.md is generated from the declared keys; it must not be stale."""

from __future__ import annotations

from pathlib import Path

from pyhudi.cli import main
from pyhudi.config.docs import render_markdown, sections
from pyhudi.config.keys import REGISTRY

DOC = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def test_committed_reference_is_up_to_date():
    assert DOC.read_text(encoding="utf-8") == render_markdown(), (
        "docs/configuration.md is stale: regenerate it with `python -m pyhudi.config.docs > docs/configuration.md`")


def test_every_registered_key_and_alias_is_documented_once_in_its_area():
    text = render_markdown()
    keys = {id(k): k for k in REGISTRY.values()}.values()
    for key in keys:
        assert text.count(f"| `{key.key}`") == 1, key.key
        for alias in key.aliases:
            assert f"alias: `{alias}`" in text, alias
    titles = [title for title, _, _ in sections()]
    assert titles[:3] == ["Table properties (hoodie.properties)", "Key generators", "Writing"]
    assert "Other" not in titles  # every key sits in an area module
    assert "| `hoodie.cleaner.commits.retained`<br>alias: `hoodie.clean.commits.retained` | int | `10` |" in text
    assert "| `hoodie.table.type` | string | `COPY_ON_WRITE` | `COPY_ON_WRITE`, `MERGE_ON_READ` |" in text


def test_cli_prints_and_writes_the_reference(tmp_path, capsys):
    assert main(["docs", "config"]) == 0
    assert capsys.readouterr().out == render_markdown()
    out = tmp_path / "c.md"
    assert main(["docs", "config", "--output", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == render_markdown()
    assert capsys.readouterr().out == f"configuration reference written to {out}\n"

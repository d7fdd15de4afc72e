"""The documentation stays true: links resolve, named keys and commands exist, listings match a real table.

- every relative link in README.md and docs/*.md names an existing file (and heading);
- every ``hoodie.*`` key named in README.md and docs/*.md (configuration.md is generated and
  checked by tests/test_config_docs.py) is a declared key, a family key, a prefix of declared keys
  (``hoodie.write.lock.*``), a file name (``hoodie.properties``), or listed as Hudi-only in its doc;
- every ``pyhudi <command>`` in their code is a command of the CLI's parser;
- format.md's example listings are what its scripts write (names compared after masking times,
  random file ids and reader-pin ids);
- compatibility.md's claim about hudi-rs and family tables holds.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.cli import build_parser
from pyhudi.config import REGISTRY
from pyhudi.config.families import FAMILY_ALIAS_PREFIX, FAMILY_PREFIX

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]
GENERATED = {"configuration.md"}  # checked against the registry by tests/test_config_docs.py
FILE_NAMES = {"hoodie.properties", "hoodie.properties.backup"}
UNDECLARED_READ_KEYS: set[str] = set()
"""Keys pyhudi reads without declaring them as ConfigKey (none now; a new one must be declared)."""

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_KEY = re.compile(r"(?<![A-Za-z0-9_])hoodie\.[A-Za-z0-9_.<>*-]*[A-Za-z0-9_>*]")
_FENCE = re.compile(r"^```([A-Za-z]*)\n(.*?)^```", re.S | re.M)
_INLINE = re.compile(r"`([^`\n]+)`")
_COMMAND = re.compile(r"(?:^|[\s(/])pyhudi ([a-z][a-z-]*)")
_SHELL = {"", "bash", "sh", "shell", "console"}


def _rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text())
    return {_slug(m) for m in re.findall(r"^#+ (.+)$", text, re.M)}


def _without_code(text: str) -> str:
    return _INLINE.sub("", _FENCE.sub("", text))


# ------------------------------------------------------------------------------ links
@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_every_relative_link_resolves(page):
    broken = []
    for target in _LINK.findall(_without_code(page.read_text())):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not checked offline
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target} (no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest})")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target} (no heading #{anchor} in {dest.name})")
    assert broken == [], f"{_rel(page)}: broken links {broken}"


def test_readme_documentation_list_links_every_doc():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Documentation", 1)[1].split("\n## ", 1)[0]
    linked = {Path(t).name for t in _LINK.findall(section)}
    assert {p.name for p in DOCS} <= linked
    assert {"format.md", "compatibility.md"} <= linked


# ------------------------------------------------------------------------------ hoodie.* keys
def _hudi_only(text: str) -> set[str]:
    """Keys of the doc's paragraphs that begin "Hudi-only keys" (keys pyhudi names but never reads)."""
    keys: set[str] = set()
    for paragraph in re.split(r"\n\s*\n", text):
        if re.match(r"\s*\**Hudi-only keys", paragraph):
            keys |= set(_KEY.findall(paragraph))
    return keys


def _known(key: str) -> bool:
    if key in REGISTRY or key in FILE_NAMES or key in UNDECLARED_READ_KEYS:
        return True
    for prefix in (FAMILY_PREFIX, FAMILY_ALIAS_PREFIX):
        if key.startswith(prefix) and len(key) > len(prefix):
            return True  # hoodie.colFamily.<name>, hoodie.colFamily.clicks, hoodie.colFamily.*
    if key.endswith(".*"):
        return any(k.startswith(key[:-1]) for k in REGISTRY)
    return False


@pytest.mark.parametrize("page", [p for p in PAGES if p.name not in GENERATED], ids=_rel)
def test_every_hoodie_key_named_is_declared_or_listed_as_hudi_only(page):
    text = page.read_text()
    allowed = _hudi_only(text)
    unknown = sorted(k for k in set(_KEY.findall(text)) if k not in allowed and not _known(k))
    assert unknown == [], f"{_rel(page)} names keys pyhudi does not declare: {unknown}"


def test_the_key_check_catches_an_undeclared_key():
    assert not _known("hoodie.no.such.key") and not _known("hoodie.nothing.*")
    assert _known("hoodie.write.lock.*") and _known("hoodie.colFamily.<name>") and _known("hoodie.table.version")
    assert _hudi_only("Hudi-only keys named here: `hoodie.x.y`.\n\nOther `hoodie.z`.") == {"hoodie.x.y"}
    assert UNDECLARED_READ_KEYS.isdisjoint(REGISTRY), "declared now: remove from UNDECLARED_READ_KEYS"


# ------------------------------------------------------------------------------ CLI commands
def _cli_commands() -> set[str]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(sub.choices)


def _commands_named(text: str) -> set[str]:
    """Commands in shell code blocks, and in inline code that is a command line (starts with
    ``pyhudi`` or a path to it; an error message quoted inline may say "pyhudi reads ...")."""
    code = [body for lang, body in _FENCE.findall(text) if lang in _SHELL]
    code += [span for span in _INLINE.findall(_FENCE.sub("", text)) if re.match(r"(\S*/)?pyhudi ", span)]
    return {m for chunk in code for m in _COMMAND.findall(chunk)}


def test_cli_command_parsing_finds_commands_in_code_only():
    text = ("pyhudi reads tables.\n`pyhudi timeline PATH` and `.venv/bin/pyhudi stats DIR`, not `Error: pyhudi reads x`"
            "\n```bash\npyhudi files t\nX=$(pyhudi draw t)\n```\n```python\nimport pyhudi  # pyhudi writes\n```\n")
    assert _commands_named(text) == {"timeline", "stats", "files", "draw"}
    assert {"create", "write", "timeline", "show-instant", "compact", "draw", "docs"} <= _cli_commands()


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_every_pyhudi_command_named_is_a_cli_command(page):
    named = _commands_named(page.read_text())
    assert named - _cli_commands() == set(), f"{_rel(page)} names commands the CLI lacks"


def test_the_docs_name_commands_at_all():
    named = set().union(*(_commands_named(p.read_text()) for p in PAGES))
    assert {"create", "write", "compact", "show-instant", "timeline"} <= named


# ------------------------------------------------------------------------------ format.md listings
FORMAT = ROOT / "docs" / "format.md"


def _blocks_after(marker: str, text: str) -> dict[str, str]:
    pattern = re.compile(rf"<!-- {marker}: (\w+) -->\n```[a-z]*\n(.*?)^```", re.S | re.M)
    return {name: body for name, body in pattern.findall(text)}


def _mask(name: str) -> str:
    """A file name's kind: instant times, random file ids and reader-pin ids masked."""
    name = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                  lambda m: m[0] if re.fullmatch(r"\d{8}-0000-0000-0000-000000000000", m[0]) else "<uuid>", name)
    name = re.sub(r"\.readers/[0-9a-f]{32}$", ".readers/<pin>", name)
    return re.sub(r"\d{17}", "<t>", name)


def _listing(path: Path) -> list[str]:
    return sorted(str(Path(r, f).relative_to(path)) for r, _, files in os.walk(path) for f in files)


def test_mask_keeps_bucket_ids_and_masks_random_ones():
    assert _mask(".00000001-0000-0000-0000-000000000000-0_20261124060558364_clicks.log.1_1-1-0") == \
        ".00000001-0000-0000-0000-000000000000-0_<t>_clicks.log.1_1-1-0"
    assert _mask("p/2f5045c2-aece-4afe-af7c-b927fc8c0a37-0_0-0-0_20261124060549739.parquet") == \
        "p/<uuid>-0_0-0-0_<t>.parquet"
    assert _mask(".hoodie/.readers/0ebccaece2534c98a65ecc1240e4e156") == ".hoodie/.readers/<pin>"


@pytest.mark.parametrize("name", ["users", "events"])
def test_format_listing_is_what_its_script_writes(tmp_path, name):
    text = FORMAT.read_text()
    script = _blocks_after("listing-script", text)[name]
    shown = _blocks_after("listing", text)[name].split()
    path = tmp_path / name
    namespace = {"path": str(path)}
    exec(compile(script, f"format.md:{name}", "exec"), namespace)  # the doc's own script
    try:
        written = _listing(path)
    finally:
        if "scan" in namespace:
            namespace["scan"].close()
    assert shown == sorted(shown), "the doc's listing is sorted like `find | sort`"
    assert sorted({_mask(n) for n in written}) == sorted({_mask(n) for n in shown})
    assert len(written) == len(shown)


def test_format_listing_shows_every_kind_of_file_the_page_describes():
    shown = "\n".join(_blocks_after("listing", FORMAT.read_text()).values())
    for kind in ("_clicks.log.1_", "_orders.log.1_", "_clicks.parquet", ".deltacommit.requested",
                 ".compaction.requested", ".commit\n", ".inflight\n", ".clustering.requested", ".replacecommit\n",
                 ".rollback\n", ".clean\n", "history/_version_", "history/manifest_1", ".hoodie_partition_metadata",
                 ".hoodie/.readers/", ".hoodie/.aux/.instant_time", ".hoodie/hoodie.properties"):
        assert kind in shown + "\n", kind


# ------------------------------------------------------------------------------ compatibility.md claim
def test_hudi_rs_misses_the_family_files_of_a_family_table_before_full_compaction(tmp_path):
    """compatibility.md: hudi-rs does not know family files; it must not be used on such tables.
    It reads the full-row log files of an insert into new file groups, but not the family logs
    written on top: stale rows, no error."""
    import hudi  # hudi-rs 0.5.0, the independent reader (a test dependency)

    schema = pa.schema([pa.field("id", pa.string(), nullable=False), ("a", pa.int64()), ("b", pa.string())])
    t = pyhudi.create_table(str(tmp_path / "f"), schema, "id", num_buckets=2, column_families={"fa": "a", "fb": "b"})
    t.upsert(pa.table({"id": ["x", "y"], "a": [1, 2], "b": ["p", "q"]}, schema=schema))
    t.upsert(pa.table({"id": ["x"], "a": [10]}, schema=pa.schema([schema.field("id"), schema.field("a")])))
    assert t.read().sort_by("id").to_pylist() == [{"id": "x", "a": 10, "b": "p"}, {"id": "y", "a": 2, "b": "q"}]
    batches = hudi.HudiTableBuilder.from_base_uri(t.path).build().read()
    assert pa.Table.from_batches(batches).select(["id", "a", "b"]).sort_by("id").to_pylist() == [
        {"id": "x", "a": 1, "b": "p"}, {"id": "y", "a": 2, "b": "q"}]  # fa's log of x is not read

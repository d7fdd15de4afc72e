"""A misspelled option key is warned of (it would silently have no effect); Hudi's other keys
pass quietly, as Hudi ignores keys it does not know. And the write/create ``--option`` flags."""

from __future__ import annotations

import warnings

import pyarrow as pa
import pytest

import pyhudi
from cli_helpers import run
from pyhudi.config.keys import misspelled_key
from pyhudi.errors import UnknownOptionWarning

SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False), ("v", pa.int64())])


def _message(given: str, meant: str) -> str:
    return f"option '{given}' is not a key pyhudi reads, so it has no effect; did you mean '{meant}'?"


@pytest.mark.parametrize("given, meant", [
    ("hoodie.compact.inlin", "hoodie.compact.inline"),
    ("hoodie.cleaner.commit.retained", "hoodie.cleaner.commits.retained"),
    ("hoodie.bucket.index.numbuckets", "hoodie.bucket.index.num.buckets"),
    ("hoodie.keep.max.commit", "hoodie.keep.max.commits"),
    ("cleaner.commits.retained", "hoodie.cleaner.commits.retained"),  # the prefix forgotten
    ("hoodie.cleaner.commits.retained", None),  # declared
    ("hoodie.COMPACT.INLINE", None),  # a case variant (Spark lower-cases keys; pyhudi maps them back)
    ("hoodie.colFamily.gep", None),  # a family key: any name
    ("hoodie.datasource.write.table.name", None),  # Hudi's keys pyhudi does not read: three edits or more away
    ("hoodie.metadata.enable", None),
    ("hoodie.write.record.merge.mode", None),
    ("path", None),
])
def test_a_typo_is_one_or_two_edits_from_a_declared_key(given, meant):
    assert misspelled_key(given) == meant


def test_every_api_entry_warns_once_of_a_typo_at_the_callers_line(tmp_path):
    with pytest.warns(UnknownOptionWarning) as caught:
        t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1,
                                options={"hoodie.keep.max.commit": "40"})
    assert [str(w.message) for w in caught] == [_message("hoodie.keep.max.commit", "hoodie.keep.max.commits")]
    assert caught[0].filename == __file__
    with pytest.warns(UnknownOptionWarning) as caught:
        t.upsert(pa.table({"id": ["a"], "v": [1]}), options={"hoodie.compact.inlin": "true"})
    assert [str(w.message) for w in caught] == [_message("hoodie.compact.inlin", "hoodie.compact.inline")]
    with pytest.warns(UnknownOptionWarning) as caught:
        t.compact(options={"hoodie.compaction.strategi": "x"})  # (scheduled and run: still one warning)
    assert [str(w.message) for w in caught] == [_message("hoodie.compaction.strategi", "hoodie.compaction.strategy")]
    with pytest.warns(UnknownOptionWarning) as caught:
        t.clean(options={"cleaner.commits.retained": "1"})
    assert [str(w.message) for w in caught] == [_message("cleaner.commits.retained", "hoodie.cleaner.commits.retained")]
    with pytest.warns(UnknownOptionWarning) as caught:
        t.alter(set_properties={"hoodie.clean.automatik": "false"})
    assert [str(w.message) for w in caught] == [_message("hoodie.clean.automatik", "hoodie.clean.automatic")]
    with warnings.catch_warnings():  # persisted typos are not warned of again by later writes and services
        warnings.simplefilter("error")
        t.upsert(pa.table({"id": ["b"], "v": [2]}), options={"hoodie.compact.inline": "true",
                                                             "hoodie.compact.inline.max.delta.commits": "1",
                                                             "hoodie.metadata.enable": "false"})
        t.clean()
    assert t.read().sort_by("id").to_pylist() == [{"id": "a", "v": 1}, {"id": "b", "v": 2}]


def test_the_command_line_prints_a_warning_as_one_line_and_takes_options_for_create_and_write(tmp_path, capsys):
    path = str(tmp_path / "t")
    captured = run(capsys, "create", path, "--schema", "id:string,v:long", "--buckets", "1",
                   "--option", "hoodie.cleaner.commits.retained=5")
    assert captured.err == "" and pyhudi.open_table(path).properties["hoodie.cleaner.commits.retained"] == "5"
    (tmp_path / "in.csv").write_text("id,v\na,1\n")
    captured = run(capsys, "write", path, str(tmp_path / "in.csv"), "--option", "hoodie.compact.inline=true",
                   "--option", "hoodie.compact.inline.max.delta.commits=1", "--option", "hoodie.compact.inlin=true")
    assert captured.err == f"warning: {_message('hoodie.compact.inlin', 'hoodie.compact.inline')}\n"
    assert [(str(i.action), i.state.value) for i in pyhudi.open_table(path).timeline] == [
        ("deltacommit", "COMPLETED"), ("commit", "COMPLETED")]  # the write's options took effect: compacted inline
    captured = run(capsys, "clean", path, "--option", "cleaner.policy=KEEP_LATEST_COMMITS")
    assert captured.err == f"warning: {_message('cleaner.policy', 'hoodie.cleaner.policy')}\n"
    captured = run(capsys, "write", path, str(tmp_path / "in.csv"), "--option", "hoodie.compact.inline=maybe", code=2)
    assert captured.err == "error: invalid value 'maybe' for hoodie.compact.inline: expected true or false, got 'maybe'\n"
    assert len(pyhudi.open_table(path).timeline) == 2

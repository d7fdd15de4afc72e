"""Review of session 17's changes (helper review14): bugs found, each with its failing test."""

from __future__ import annotations

import pathlib
import warnings

import pytest

import pyhudi

TRIPS = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip"  # lists Apache Hudi's metadata table


def _state(path: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("dry_run", ["plan_compaction", "plan_clustering", "plan_clean"])
def test_a_dry_run_leaves_the_metadata_table_alone(unzip_fixture, dry_run):
    """A service's dry run writes nothing (its docstring), so it must not turn the metadata
    table off either: it only draws a time for the plan it shows."""
    path = unzip_fixture(TRIPS)
    table = pyhudi.open_table(str(path))
    before = _state(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows = getattr(table, dry_run)()
    assert isinstance(rows, list)
    after = _state(path)
    after.pop(".hoodie/.aux/.instant_time")  # (the time generator's state: drawing a time keeps it)
    assert after == before  # before the fix: hoodie.properties emptied, .hoodie/metadata deleted

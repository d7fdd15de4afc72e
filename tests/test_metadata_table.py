"""Apache Hudi's metadata table on tables pyhudi writes (pyhudi.metadata_table).

A reader that lists files through the metadata table (Apache Hudi's readers by default, hudi-rs)
would never see a commit that did not update it: before its first instant on such a table,
pyhudi turns the metadata table off, as Apache Hudi's writer does with
``hoodie.metadata.enable=false``; reads change nothing; ``hoodie.metadata.enable=true`` refuses.
"""

from __future__ import annotations

import pathlib
import warnings

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.config import table as tc
from pyhudi.errors import ConfigError

hudi = pytest.importorskip("hudi")

TRIPS = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip"  # files, column stats, record index, ...
TRIPS_PARTITIONS = "column_stats,files,partition_stats,record_index,secondary_index_rider_idx"
COW_V9 = "sample_table/cow/v9_timebasedkeygen_epochmillis.zip"


def _hudi_rs(path: pathlib.Path) -> pa.Table:
    return pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())


def _properties(path: pathlib.Path) -> dict[str, str]:
    return dict(tc.load_table_config(pyhudi.open_table(str(path)).storage).props)


def _state(path: pathlib.Path) -> dict[str, bytes]:
    """Every file of the table with its bytes (what an unchanged table keeps)."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _new_trip(table: pyhudi.Table, uuid: str) -> pa.Table:
    row = table.read().slice(0, 1)
    row = row.select([c for c in row.column_names if not c.startswith("_hoodie_")])
    return row.set_column(row.column_names.index("uuid"), "uuid", pa.array([uuid]))


def test_an_upsert_with_default_options_turns_the_metadata_table_off_and_every_reader_sees_it(unzip_fixture):
    path = unzip_fixture(TRIPS)
    original = _properties(path)
    assert original[tc.METADATA_PARTITIONS.key] == TRIPS_PARTITIONS
    assert (path / ".hoodie" / "metadata").is_dir()
    assert _hudi_rs(path).num_rows == 6  # (hudi-rs lists files through the metadata table)
    table = pyhudi.open_table(str(path))
    with pytest.warns(UserWarning, match=r"turned off Apache Hudi's metadata table of .*v8_trips_8i3u1d "
                                         r"\(column_stats, files, partition_stats, record_index, "
                                         r"secondary_index_rider_idx\) before writing"):
        table.upsert(_new_trip(table, "new-trip"))
    props = _properties(path)
    assert props[tc.METADATA_PARTITIONS.key] == ""
    assert props[tc.METADATA_PARTITIONS_INFLIGHT.key] == ""
    assert not (path / ".hoodie" / "metadata").exists()
    assert not (path / ".hoodie" / "hoodie.properties.backup").exists()
    ours = pyhudi.open_table(str(path)).read()
    theirs = _hudi_rs(path)  # before the fix: 6 rows, the upsert's file unseen
    assert theirs.num_rows == ours.num_rows == 7
    assert sorted(theirs.column("uuid").to_pylist()) == sorted(ours.column("uuid").to_pylist())
    assert "new-trip" in theirs.column("uuid").to_pylist()
    # every other property as it was
    emptied = (tc.METADATA_PARTITIONS.key, tc.METADATA_PARTITIONS_INFLIGHT.key)
    assert {k: v for k, v in props.items() if k not in emptied} == \
        {k: v for k, v in original.items() if k not in emptied}


def test_the_next_write_finds_it_off_and_warns_no_more(unzip_fixture):
    path = unzip_fixture(TRIPS)
    table = pyhudi.open_table(str(path))
    with pytest.warns(UserWarning, match="turned off"):
        table.upsert(_new_trip(table, "first"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table.upsert(_new_trip(table, "second"))  # (same handle: its config still lists the partitions)
        pyhudi.open_table(str(path)).upsert(_new_trip(table, "third"))
    assert _hudi_rs(path).num_rows == 9


def test_reads_leave_the_metadata_table_alone(unzip_fixture):
    path = unzip_fixture(TRIPS)
    before = _state(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = pyhudi.open_table(str(path))
        assert table.read().num_rows == 6
        table.read(columns=["uuid"], filters=[("city", "=", "san_francisco")])
        table.file_groups()
        table.timeline
        table.schema
    assert _state(path) == before


def test_hoodie_metadata_enable_true_refuses_the_write_and_leaves_the_table_unchanged(unzip_fixture):
    path = unzip_fixture(TRIPS)
    table = pyhudi.open_table(str(path))
    row = _new_trip(table, "refused")
    before = _state(path)
    with pytest.raises(ConfigError) as info:
        table.upsert(row, options={"hoodie.metadata.enable": "true"})
    assert str(info.value) == (
        f"the table at {table.path} has Apache Hudi's metadata table ({TRIPS_PARTITIONS.replace(',', ', ')}), "
        "which pyhudi does not maintain, and hoodie.metadata.enable=true asks to keep it: the write is refused, "
        "the table is unchanged (without the option pyhudi turns the metadata table off first, as Apache Hudi "
        "does with hoodie.metadata.enable=false)")
    assert _state(path) == before
    assert _hudi_rs(path).num_rows == 6


@pytest.mark.parametrize("first", ["compact", "clean", "cluster", "delete"])
def test_any_first_instant_turns_it_off_first(unzip_fixture, first):
    """Services and deletes commit too: each would leave the metadata table behind (a
    compaction's or a clustering's new base files unseen, a clean's removed files still listed)."""
    path = unzip_fixture(TRIPS)
    table = pyhudi.open_table(str(path))
    rows_before = table.read().num_rows
    with pytest.warns(UserWarning, match="turned off Apache Hudi's metadata table"):
        if first == "compact":
            table.compact()
        elif first == "clean":
            table.clean(options={"hoodie.cleaner.commits.retained": "1"})
        elif first == "cluster":
            table.cluster()
        else:
            table.delete(table.read(columns=["uuid", "city"]).slice(0, 1))
    assert _properties(path)[tc.METADATA_PARTITIONS.key] == ""
    assert not (path / ".hoodie" / "metadata").exists()
    expected = rows_before - (first == "delete")
    assert pyhudi.open_table(str(path)).read().num_rows == expected
    assert _hudi_rs(path).num_rows == expected


def test_a_copy_on_write_version_9_table_too(unzip_fixture):
    path = unzip_fixture(COW_V9)
    table = pyhudi.open_table(str(path))
    assert _properties(path)[tc.METADATA_PARTITIONS.key] == "column_stats,files,partition_stats,record_index"
    rows = table.read().num_rows
    with pytest.warns(UserWarning, match="turned off"):
        table.cluster()
    assert not (path / ".hoodie" / "metadata").exists()
    assert pyhudi.open_table(str(path)).read().num_rows == rows


def test_pyhudi_tables_have_none_and_pay_nothing(tmp_path, monkeypatch):
    """A table pyhudi created lists no metadata table: its writes never read the properties
    again nor look for the folder."""
    from pyhudi import metadata_table

    table = pyhudi.create_table(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("v", pa.string())]), "id")
    calls = []
    monkeypatch.setattr(metadata_table, "turn_off", lambda storage: calls.append(storage))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table.upsert(pa.table({"id": [1, 2], "v": ["a", "b"]}))
        table.delete(pa.table({"id": [1]}))
    assert calls == []
    assert table.read(columns=["id", "v"]).to_pylist() == [{"id": 2, "v": "b"}]

"""Base/log/marker file names, file ids, write tokens, partition paths."""

from __future__ import annotations

import os

import pytest
from conftest import extract_table, fixture_zips

from pyhudi.errors import FileNameError, PathEscapeError
from pyhudi.storage.naming import (
    BaseFileName,
    LogFileName,
    MarkerName,
    WriteToken,
    bucket_file_id,
    bucket_id_from_file_id,
    new_file_id,
    parse_data_file_name,
    partition_path,
)


def test_base_file_names_with_and_without_family():
    plain = BaseFileName("00000003-0000-0000-0000-000000000000-0", "0-1-0", "20260101000000000")
    assert plain.name == "00000003-0000-0000-0000-000000000000-0_0-1-0_20260101000000000.parquet"
    fam = BaseFileName("00000003-0000-0000-0000-000000000000-0", "2-5-7", "20260101000000000", "clicks")
    assert fam.name == "00000003-0000-0000-0000-000000000000-0_2-5-7_20260101000000000_clicks.parquet"
    assert BaseFileName.parse(fam.name) == fam
    assert BaseFileName.parse(plain.name).family is None


def test_log_file_names_with_and_without_family():
    log = LogFileName("00000001-0000-0000-0000-000000000000-0", "20260101000000000", 1, "0-1-0", "orders")
    assert log.name == ".00000001-0000-0000-0000-000000000000-0_20260101000000000_orders.log.1_0-1-0"
    assert LogFileName.parse(log.name) == log
    plain = LogFileName.parse(".ee2ace10-7667-40f5-9848-0a144b5ea064-0_20250113230302428.log.1_0-188-387")
    assert (plain.file_id, plain.instant, plain.version, plain.write_token, plain.family) == (
        "ee2ace10-7667-40f5-9848-0a144b5ea064-0",
        "20250113230302428",
        1,
        "0-188-387",
        None,
    )
    cdc = LogFileName.parse(".f1-0_20250113230302428.log.2_1-2-3.cdc")
    assert cdc.cdc and cdc.name == ".f1-0_20250113230302428.log.2_1-2-3.cdc"
    assert LogFileName.parse(".f1-0_20250113230302428.log.3").write_token is None


@pytest.mark.parametrize(
    "name",
    [
        "",
        "foo.parquet",
        "abc_0-1-0.parquet",
        "abc_0-1_20260101000000000.parquet",
        "abc_0-1-0_2026x.parquet",
        "abc_0-1-0_20260101000000000_bad_family.parquet",
        "abc_0-1-0_20260101000000000_9fam.parquet",
        ".abc_20260101000000000.log",
        ".abc_2026.log.x_0-1-0",
        ".abc_20260101000000000_c_f.log.1_0-1-0",
        "manifest.json",
    ],
)
def test_bad_names_are_rejected_with_the_name(name):
    with pytest.raises(FileNameError) as info:
        parse_data_file_name(name)
    assert repr(name) in str(info.value)


def test_constructors_validate_parts():
    with pytest.raises(FileNameError, match="invalid file id 'a_b'"):
        BaseFileName("a_b", "0-1-0", "1")
    with pytest.raises(FileNameError, match="invalid write token '0-1'"):
        BaseFileName("a", "0-1", "1")
    with pytest.raises(FileNameError, match="invalid column family suffix 'x_y'"):
        LogFileName("a", "1", family="x_y")
    with pytest.raises(FileNameError, match="invalid instant time 'abc'"):
        LogFileName("a", "abc")


def test_write_token_and_file_ids():
    assert str(WriteToken(3, 12, 40)) == "3-12-40"
    assert WriteToken.parse("3-12-40") == WriteToken(3, 12, 40)
    assert bucket_file_id(0) == "00000000-0000-0000-0000-000000000000-0"
    assert bucket_file_id(1234) == "00001234-0000-0000-0000-000000000000-0"
    assert bucket_id_from_file_id("00000003-8c4f-4c5d-9a8b-0123456789ab-0") == 3
    with pytest.raises(FileNameError, match="not a bucket file id"):
        bucket_id_from_file_id("ee2ace10-7667-40f5-9848-0a144b5ea064-0")
    with pytest.raises(FileNameError, match="invalid bucket number -1"):
        bucket_file_id(-1)
    fid = new_file_id()
    assert fid.endswith("-0") and "_" not in fid and len(fid) == 38


def test_marker_names():
    marker = MarkerName("city=sf", ".f-0_20260101000000000.log.1_0-1-0", "APPEND")
    rel = marker.relpath("20260101000000000")
    assert rel == ".hoodie/.temp/20260101000000000/city=sf/.f-0_20260101000000000.log.1_0-1-0.marker.APPEND"
    assert MarkerName.parse("city=sf/.f-0_20260101000000000.log.1_0-1-0.marker.APPEND") == marker
    with pytest.raises(FileNameError, match="not a marker file name"):
        MarkerName.parse("city=sf/x.marker.DELETE")


def test_partition_paths_and_escapes():
    assert partition_path(["city"], ["sf"], hive_style=True) == "city=sf"
    assert partition_path(["y", "m"], [2026, 1]) == "2026/1"
    assert partition_path([], []) == ""
    assert partition_path(["c"], [None], hive_style=True) == "c=__HIVE_DEFAULT_PARTITION__"
    for bad in ("..", "a/b", "x\\y", "nul\x00"):
        with pytest.raises(PathEscapeError, match="cannot be used in a path"):
            partition_path(["city"], [bad])


def _data_files(table_dir):
    for root, dirs, files in os.walk(table_dir):
        dirs[:] = [d for d in dirs if d != ".hoodie" and not d.startswith("gold_")]  # gold_* = expected results
        for name in files:
            if name.endswith(".crc") or name == ".hoodie_partition_metadata":
                continue
            yield name


@pytest.mark.parametrize("zip_path", fixture_zips(), ids=lambda p: p.stem)
def test_every_fixture_file_name_parses_and_round_trips(zip_path, tmp_path):
    table_dir = extract_table(zip_path, tmp_path)
    names = list(_data_files(table_dir))
    for name in names:
        parsed = parse_data_file_name(name)
        assert parsed.name == name
        assert parsed.family is None  # Apache Hudi tables have no families

"""Java properties format and hoodie.properties (table config) handling."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from conftest import fixture_zips
from hypothesis import given
from hypothesis import strategies as st

from pyhudi.config import properties
from pyhudi.config.families import ColumnFamily
from pyhudi.config.table import (
    BACKUP_FILE,
    PROPERTIES_FILE,
    TableConfig,
    create_table_config,
    load_table_config,
    new_table_properties,
    table_checksum,
    update_table_config,
)
from pyhudi.errors import AlreadyExistsError, ConfigError, TableNotFoundError
from pyhudi.storage.fs import Storage

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def test_dumps_escapes_like_java_properties_store():
    text = properties.dumps({"a b": " x=y:#!\\é😀", "k": "v"}, "Properties saved", now=NOW)
    assert text == (
        "#Properties saved\n"
        "#Fri Jan 02 03:04:05 UTC 2026\n"
        "a\\ b=\\ x\\=y\\:\\#\\!\\\\\\u00E9\\uD83D\\uDE00\n"
        "k=v\n"
    )


def test_loads_java_syntax_variants():
    text = (
        "# comment\n"
        "! another comment\n"
        "   \n"
        "plain=value\n"
        "colon:value2\n"
        "spaced   =   value3\n"
        "space_sep value4\n"
        "multi=first \\\n"
        "      second\n"
        "escaped\\=key=a\\tb\\u0041\n"
        "empty=\n"
        "json={\"type\"\\:\"record\"}\n"
    )
    assert properties.loads(text) == {
        "plain": "value",
        "colon": "value2",
        "spaced": "value3",
        "space_sep": "value4",
        "multi": "first second",
        "escaped=key": "a\tbA",
        "empty": "",
        "json": '{"type":"record"}',
    }


def test_loads_rejects_bad_unicode_escape():
    with pytest.raises(ConfigError, match="malformed"):
        properties.loads("k=\\u12G4\n")


@given(st.dictionaries(st.text(min_size=1), st.text(), max_size=8))
def test_properties_round_trip(props):
    assert properties.loads(properties.dumps(props, "c")) == props


def test_checksum_matches_java_values():
    assert table_checksum("bihar_road_stats_ndap", "data_pays") == 1076423444
    assert table_checksum("trips", "default") == 2200697520


@pytest.mark.parametrize("zip_path", fixture_zips(), ids=lambda p: p.stem)
def test_reads_every_fixture_table_config(zip_path, tmp_path):
    from conftest import extract_table

    table_dir = extract_table(zip_path, tmp_path)
    config = load_table_config(Storage(str(table_dir)))
    config.verify_checksum()
    assert config.version in (6, 8, 9)
    assert config.table_type in ("COPY_ON_WRITE", "MERGE_ON_READ")
    assert config.record_key_fields
    assert config.layout_version == (1 if config.version == 6 else 2)


def test_fixture_values_v8_and_v9(unzip_fixture):
    v8 = load_table_config(Storage(str(unzip_fixture("sample_table/cow/v8_simplekeygen_nonhivestyle.zip"))))
    assert (v8.name, v8.version, v8.table_type) == ("v8_simplekeygen_nonhivestyle", 8, "COPY_ON_WRITE")
    assert v8.partition_fields == ("byteField",)
    assert v8.ordering_fields == ("longField",)
    assert v8.merge_mode == "EVENT_TIME_ORDERING"
    assert v8.hive_style_partitioning is False
    assert v8.timeline_dir == ".hoodie/timeline"
    v9 = load_table_config(Storage(str(unzip_fixture("quickstart_trips_table/mor/avro/table_event_time_stale.zip"))))
    assert v9.version == 9 and v9.ordering_fields == ("ts",)  # hoodie.table.ordering.fields
    assert v9.merge_mode == "EVENT_TIME_ORDERING"
    v6 = load_table_config(Storage(str(unzip_fixture("sample_table/mor/parquet/v6_nonpartitioned.zip"))))
    assert v6.version == 6 and v6.layout_version == 1 and v6.timeline_dir == ".hoodie"


def _new_config(**kw):
    args = dict(name="trips", table_type="MERGE_ON_READ", record_key_fields=["id"])
    args.update(kw)
    return new_table_properties(**args)


def test_new_table_properties_v8_keys():
    config = _new_config(
        partition_fields=["city"],
        ordering_field="ts",
        num_buckets=4,
        families={"a": ColumnFamily("a", ("x", "y"), "ts")},
        hive_style=True,
        database="default",
    )
    p = config.props
    assert p["hoodie.table.name"] == "trips"
    assert p["hoodie.table.type"] == "MERGE_ON_READ"
    assert p["hoodie.table.version"] == "8"
    assert p["hoodie.timeline.layout.version"] == "2"
    assert p["hoodie.timeline.path"] == "timeline"
    assert p["hoodie.table.recordkey.fields"] == "id"
    assert p["hoodie.table.partition.fields"] == "city"
    assert p["hoodie.table.precombine.field"] == "ts"
    assert p["hoodie.record.merge.mode"] == "EVENT_TIME_ORDERING"
    assert p["hoodie.record.merge.strategy.id"] == "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
    assert p["hoodie.compaction.payload.class"] == "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
    assert p["hoodie.table.keygenerator.type"] == "SIMPLE"
    assert p["hoodie.populate.meta.fields"] == "true"
    assert p["hoodie.table.base.file.format"] == "PARQUET"
    assert p["hoodie.table.log.file.format"] == "HOODIE_LOG"
    assert p["hoodie.table.timeline.timezone"] == "UTC"
    assert p["hoodie.table.metadata.partitions"] == ""
    assert p["hoodie.datasource.write.hive_style_partitioning"] == "true"
    assert p["hoodie.index.type"] == "BUCKET"
    assert p["hoodie.bucket.index.num.buckets"] == "4"
    assert p["hoodie.bucket.index.hash.field"] == "id"
    assert p["hoodie.colFamily.a"] == "x,y;ts"
    assert p["hoodie.table.checksum"] == str(table_checksum("trips", "default"))
    assert config.to_text().splitlines()[-1] == f"hoodie.table.checksum={table_checksum('trips', 'default')}"


def test_commit_time_default_without_ordering_field():
    p = _new_config().props
    assert p["hoodie.record.merge.mode"] == "COMMIT_TIME_ORDERING"
    assert p["hoodie.record.merge.strategy.id"] == "ce9acb64-bde0-424c-9b91-f6ebba25356d"
    assert "hoodie.table.precombine.field" not in p
    assert p["hoodie.table.keygenerator.type"] == "NON_PARTITION"


def test_event_time_without_ordering_field_is_an_error():
    with pytest.raises(ConfigError, match="EVENT_TIME_ORDERING needs an ordering field"):
        _new_config(merge_mode="EVENT_TIME_ORDERING")


def test_create_load_and_refuse_second_create(tmp_path):
    storage = Storage(str(tmp_path / "t"))
    config = _new_config(num_buckets=2)
    create_table_config(storage, config)
    loaded = load_table_config(storage)
    assert loaded.props == config.props
    assert loaded.num_buckets == 2 and loaded.is_bucketed
    with pytest.raises(AlreadyExistsError):
        create_table_config(storage, config)


def test_update_goes_through_backup_and_leaves_none_behind(tmp_path):
    storage = Storage(str(tmp_path / "t"))
    create_table_config(storage, _new_config())
    updated = update_table_config(storage, {"hoodie.colFamily.b": "c,d"}, unset=["hoodie.table.cdc.enabled"])
    assert updated.props["hoodie.colFamily.b"] == "c,d"
    assert "hoodie.table.cdc.enabled" not in load_table_config(storage).props
    assert not storage.exists(BACKUP_FILE)


def test_reader_falls_back_to_backup_after_crash_mid_update(tmp_path):
    storage = Storage(str(tmp_path / "t"))
    config = _new_config()
    create_table_config(storage, config)
    # crash after writing the backup and deleting the original
    storage.write(BACKUP_FILE, storage.read(PROPERTIES_FILE))
    storage.delete(PROPERTIES_FILE)
    assert load_table_config(storage).props == config.props
    # crash while the original was half written
    storage.write(PROPERTIES_FILE, b"#torn\nhoodie.tab")
    assert load_table_config(storage).props == config.props
    # the next update starts from the backup and cleans up
    update_table_config(storage, {"x.y": "1"})
    assert load_table_config(storage).props["x.y"] == "1"
    assert not storage.exists(BACKUP_FILE)


def test_missing_table_and_bad_versions(tmp_path):
    storage = Storage(str(tmp_path / "none"))
    with pytest.raises(TableNotFoundError, match="no Hudi table"):
        load_table_config(storage)
    checksum = f"hoodie.table.checksum={table_checksum('t')}\n".encode()
    version_5 = b"hoodie.table.name=t\nhoodie.table.type=COPY_ON_WRITE\nhoodie.table.version=5\n"
    storage.write(PROPERTIES_FILE, version_5 + checksum)
    with pytest.raises(ConfigError, match="unsupported hoodie.table.version=5"):
        load_table_config(storage)
    storage.write(PROPERTIES_FILE, b"hoodie.table.name=t\nhoodie.table.version=8\n" + checksum)
    with pytest.raises(ConfigError, match="missing the required key hoodie.table.type"):
        load_table_config(storage)


def test_corrupt_checksum_is_reported():
    config = TableConfig({"hoodie.table.name": "t", "hoodie.table.checksum": "1"})
    with pytest.raises(ConfigError, match="does not match CRC32"):
        config.verify_checksum()


def test_virtual_keys_are_refused_at_creation_and_nothing_is_written(tmp_path):
    import pyarrow as pa
    import pytest

    import pyhudi
    from pyhudi.errors import ConfigError

    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    with pytest.raises(ConfigError, match=r"hoodie.populate.meta.fields=false \(virtual keys\) is not supported"):
        pyhudi.create_table(str(tmp_path / "t"), schema, "id", options={"hoodie.populate.meta.fields": "false"})
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").rglob("hoodie.properties"))
    t = pyhudi.create_table(str(tmp_path / "u"), schema, "id", options={"hoodie.populate.meta.fields": "true"})
    assert t.config.populate_meta_fields


def test_a_timeline_timezone_other_than_utc_is_refused_at_creation(tmp_path):
    """pyhudi writes instant times in UTC: any other zone asked for at creation is an error (it
    was silently replaced by UTC), and nothing is written."""
    import pyarrow as pa
    import pytest

    import pyhudi
    from pyhudi.errors import ConfigError

    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    for zone in ("Mars/Olympus", "LOCAL", "Europe/Paris"):
        with pytest.raises(ConfigError, match=rf"hoodie.table.timeline.timezone='{zone}' is not supported when "
                                              r"pyhudi creates a table: pyhudi writes instant times in UTC"):
            pyhudi.create_table(str(tmp_path / "t"), schema, "id", options={"hoodie.table.timeline.timezone": zone})
        assert not any((tmp_path / "t").rglob("hoodie.properties"))
    t = pyhudi.create_table(str(tmp_path / "u"), schema, "id", options={"hoodie.table.timeline.timezone": "utc"})
    assert t.config.timezone == "UTC" and t.properties["hoodie.table.timeline.timezone"] == "UTC"

"""Tables partitioned by Hudi's timestamp-based key generator (one field, several folder levels),
by CUSTOM or unknown key generators: written as Hudi writes them, read in full, pruned soundly."""

from __future__ import annotations

import os
import pathlib

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import ConfigError, SchemaError

H = 3_600_000
T0 = 1705367700000  # 2024-01-16 01:15 UTC
EPOCH_MS = {"hoodie.table.keygenerator.type": "TIMESTAMP",
            "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
            "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd/HH"}
SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("v", pa.int64())])


def _rows(ids, ts, v) -> pa.Table:
    return pa.table({"id": ids, "ts": ts, "v": v}, schema=SCHEMA)


def _partitions(path) -> list[str]:
    root = pathlib.Path(path)
    return sorted(str(p.parent.relative_to(root)) for p in root.glob("**/.hoodie_partition_metadata"))


def _sorted(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


@pytest.fixture
def epoch_table(tmp_path):
    """A copy-on-write table with DEFAULT options besides the key generator's two required keys."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", partition_fields="ts", table_type="COPY_ON_WRITE",
                            options=EPOCH_MS)
    t.upsert(_rows(["a", "b", "c", "d"], [T0, T0 + 10 * 60_000, T0 + 2 * H, None], [1, 2, 3, 4]))
    return t


def test_write_epoch_millis_layout_and_properties(epoch_table):
    path = epoch_table.path
    assert _partitions(path) == ["1970/01/01/00", "2024/01/16/01", "2024/01/16/03"]
    meta = (pathlib.Path(path) / "2024/01/16/01/.hoodie_partition_metadata").read_text()
    assert "partitionDepth=4" in meta
    props = pyhudi.open_table(path).properties
    assert props["hoodie.table.keygenerator.type"] == "TIMESTAMP"
    assert props["hoodie.keygen.timebased.timestamp.type"] == "EPOCHMILLISECONDS"
    assert props["hoodie.keygen.timebased.output.dateformat"] == "yyyy/MM/dd/HH"
    assert props["hoodie.table.partition.fields"] == "ts"
    got = pyhudi.open_table(path).read(columns=["id", "ts", "v"], with_meta=True)
    assert sorted(zip(got["id"].to_pylist(), got["_hoodie_partition_path"].to_pylist())) == [
        ("a", "2024/01/16/01"), ("b", "2024/01/16/01"), ("c", "2024/01/16/03"), ("d", "1970/01/01/00")]
    assert _sorted(got.select(["id", "ts", "v"])) == [
        {"id": "a", "ts": T0, "v": 1}, {"id": "b", "ts": T0 + 600_000, "v": 2},
        {"id": "c", "ts": T0 + 2 * H, "v": 3}, {"id": "d", "ts": None, "v": 4}]


def test_key_generator_settings_cannot_be_altered(epoch_table):
    with pytest.raises(ConfigError, match="property 'hoodie.keygen.timebased.output.dateformat' is fixed"):
        epoch_table.alter(set_properties={"hoodie.keygen.timebased.output.dateformat": "yyyy"})
    with pytest.raises(ConfigError, match="property 'hoodie.keygen.timebased.timestamp.type' is fixed"):
        epoch_table.alter(unset_properties=["hoodie.keygen.timebased.timestamp.type"])
    props = pyhudi.open_table(epoch_table.path).properties
    assert props["hoodie.keygen.timebased.output.dateformat"] == "yyyy/MM/dd/HH"


def test_upsert_and_delete_find_existing_rows(epoch_table):
    epoch_table.upsert(_rows(["a", "c"], [T0, T0 + 2 * H], [10, 30]))
    epoch_table.delete(_rows(["b"], [T0 + 600_000], [0]).select(["id", "ts"]))
    got = pyhudi.open_table(epoch_table.path).read(columns=["id", "v"])
    assert _sorted(got) == [{"id": "a", "v": 10}, {"id": "c", "v": 30}, {"id": "d", "v": 4}]
    assert len(epoch_table.file_groups()) == 3  # updates merged into the existing file groups


@pytest.mark.parametrize(("filters", "ids", "partitions"), [
    ([("ts", "=", T0)], ["a"], {"2024/01/16/01"}),
    ([("ts", "in", [T0 + 2 * H, 5])], ["c"], {"1970/01/01/00", "2024/01/16/03"}),  # (5 ms: 1970)
    ([("ts", ">=", T0 + 30 * 60_000)], ["c"], {"2024/01/16/01", "2024/01/16/03"}),  # (01:45: hour 01 may hold it)
    ([("ts", ">=", T0 + H)], ["c"], {"2024/01/16/03"}),
    ([("ts", ">", T0)], ["b", "c"], {"2024/01/16/01", "2024/01/16/03"}),
    ([("ts", "<", T0 + H)], ["a", "b"], {"1970/01/01/00", "2024/01/16/01"}),
    ([("ts", "<=", 0)], [], {"1970/01/01/00"}),
    ([("ts", "is null")], ["d"], {"1970/01/01/00", "2024/01/16/01", "2024/01/16/03"}),
    ([("ts", "!=", T0)], ["b", "c"], {"1970/01/01/00", "2024/01/16/01", "2024/01/16/03"}),
    ([("v", "=", 3)], ["c"], {"2024/01/16/03"}),  # (not a partition column: skipped by file statistics)
])
def test_filters_on_the_source_field_prune_by_the_formatted_value(epoch_table, filters, ids, partitions):
    table = pyhudi.open_table(epoch_table.path)
    assert sorted(table.read(columns=["id"], filters=filters)["id"].to_pylist()) == ids
    assert {task.partition_path for task in table.plan_scan(columns=["id"], filters=filters).tasks} == partitions


def test_hive_style_unix_seconds(tmp_path):
    options = {"hoodie.datasource.write.keygenerator.type": "TIMESTAMP",
               "hoodie.keygen.timebased.timestamp.type": "UNIX_TIMESTAMP",
               "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd",
               "hoodie.keygen.timebased.output.timezone": "GMT+8",
               "hoodie.datasource.write.hive_style_partitioning": "true"}
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", partition_fields="ts", options=options)
    t.upsert(_rows(["a", "b"], [T0 // 1000, T0 // 1000 + 23 * 3600], [1, 2]))
    assert _partitions(t.path) == ["ts=2024/01/16", "ts=2024/01/17"]
    table = pyhudi.open_table(t.path)
    assert table.properties["hoodie.table.keygenerator.type"] == "TIMESTAMP"
    assert _sorted(table.read(columns=["id", "ts"])) == [{"id": "a", "ts": T0 // 1000},
                                                         {"id": "b", "ts": T0 // 1000 + 23 * 3600}]
    filters = [("ts", ">=", T0 // 1000 + 20 * 3600)]
    assert table.read(columns=["id"], filters=filters)["id"].to_pylist() == ["b"]
    assert {task.partition_path for task in table.plan_scan(filters=filters).tasks} == {"ts=2024/01/17"}


def test_date_strings_with_input_zone_and_scalar_days(tmp_path):
    schema = pa.schema([("id", pa.string()), ("day", pa.string()), ("v", pa.int64())])
    t = pyhudi.create_table(str(tmp_path / "s"), schema, "id", partition_fields="day", options={
        "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
        "hoodie.keygen.timebased.timestamp.type": "DATE_STRING",
        "hoodie.keygen.timebased.input.dateformat": "yyyy-MM-dd HH:mm;yyyyMMdd",
        "hoodie.keygen.timebased.input.dateformat.list.delimiter.regex": ";",
        "hoodie.keygen.timebased.input.timezone": "Asia/Kolkata",
        "hoodie.keygen.timebased.output.timezone": "UTC",
        "hoodie.keygen.timebased.output.dateformat": "'d='yyyyMMddHH"})
    t.upsert(pa.table({"id": ["a", "b", "c"], "day": ["2024-01-16 03:00", "20240116", None], "v": [1, 2, 3]},
                      schema=schema))
    assert _partitions(t.path) == ["d=1970010100", "d=2024011518", "d=2024011521"]  # IST → UTC
    assert t.properties["hoodie.table.keygenerator.class"] == "org.apache.hudi.keygen.TimestampBasedKeyGenerator"
    got = pyhudi.open_table(t.path).read(filters=[("day", "=", "20240116")])
    assert got.select(["id", "day", "v"]).to_pylist() == [{"id": "b", "day": "20240116", "v": 2}]
    with pytest.raises(SchemaError, match=r"partition column 'day': value '16/01/2024' does not match "
                                          r"hoodie.keygen.timebased.input.dateformat \(yyyy-MM-dd HH:mm, yyyyMMdd\)"):
        t.upsert(pa.table({"id": ["x"], "day": ["16/01/2024"], "v": [0]}, schema=schema))
    assert len(pyhudi.open_table(t.path).timeline) == len(t.timeline)  # nothing written

    days = pa.schema([("id", pa.string()), ("d", pa.int32()), ("v", pa.int64())])
    s = pyhudi.create_table(str(tmp_path / "d"), days, "id", partition_fields="d", options={
        "hoodie.table.keygenerator.type": "TIMESTAMP", "hoodie.keygen.timebased.timestamp.type": "SCALAR",
        "hoodie.keygen.timebased.timestamp.scalar.time.unit": "days",
        "hoodie.keygen.timebased.output.dateformat": "yyyy-MM"})
    s.insert(pa.table({"id": ["a", "b"], "d": [19738, 0], "v": [1, 2]}, schema=days))
    assert _partitions(s.path) == ["1970-01", "2024-01"]


def test_timestamp_column_with_epoch_microseconds_is_read_by_hudi_rs(tmp_path):
    hudi = pytest.importorskip("hudi")
    schema = pa.schema([("id", pa.string()), ("at", pa.timestamp("us", tz="UTC")), ("v", pa.float64())])
    t = pyhudi.create_table(str(tmp_path / "t"), schema, "id", partition_fields="at", table_type="COPY_ON_WRITE",
                            options={"hoodie.table.keygenerator.type": "TIMESTAMP",
                                     "hoodie.keygen.timebased.timestamp.type": "EPOCHMICROSECONDS",
                                     "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd/HH"})
    rows = pa.table({"id": ["a", "b", "c"], "at": pa.array([T0 * 1000, T0 * 1000 + 5 * H * 1000, None],
                                                            pa.timestamp("us", tz="UTC")), "v": [1.0, 2.0, 3.0]},
                    schema=schema)
    t.upsert(rows)
    t.upsert(rows.slice(0, 1).set_column(2, "v", pa.array([9.0])))
    assert _partitions(t.path) == ["1970/01/01/00", "2024/01/16/01", "2024/01/16/06"]
    expected = [{"id": "a", "v": 9.0}, {"id": "b", "v": 2.0}, {"id": "c", "v": 3.0}]
    assert _sorted(pyhudi.open_table(t.path).read(columns=["id", "v"])) == expected
    read = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(t.path).build().read())
    assert _sorted(read.select(["id", "v"])) == expected
    assert sorted(read["_hoodie_partition_path"].to_pylist()) == ["1970/01/01/00", "2024/01/16/01", "2024/01/16/06"]


@pytest.mark.parametrize(("options", "message"), [
    ({"hoodie.keygen.timebased.timestamp.type": "EPOCH"},
     "invalid value 'EPOCH' for hoodie.keygen.timebased.timestamp.type: expected one of UNIX_TIMESTAMP"),
    ({"hoodie.keygen.timebased.output.dateformat": "yyyy/MM/qq"}, "pattern letter 'q' is not supported"),
    ({"hoodie.keygen.timebased.output.dateformat": ""}, "hoodie.keygen.timebased.output.dateformat must be"),
    ({"hoodie.keygen.timebased.output.dateformat": "yyyy/'..'/MM"}, "partition path '1970/../01'"),
    ({"hoodie.keygen.timebased.timestamp.type": "DATE_STRING"},
     "DATE_STRING needs hoodie.keygen.timebased.input.dateformat"),
    ({"hoodie.keygen.timebased.output.timezone": "Moon/Base"}, "output.timezone='Moon/Base' is not a known time zone"),
    ({"hoodie.keygen.timebased.timestamp.type": "SCALAR",
      "hoodie.keygen.timebased.timestamp.scalar.time.unit": "WEEKS"},
     "invalid value 'WEEKS' for hoodie.keygen.timebased.timestamp.scalar.time.unit"),
    ({"hoodie.table.keygenerator.type": "FANCY"}, "unknown key generator type 'FANCY'"),
    ({"hoodie.table.keygenerator.type": "CUSTOM"}, "the CUSTOM key generator is not supported for writing"),
    ({"hoodie.table.keygenerator.type": "SIMPLE"}, "applies to the TIMESTAMP key generator only"),
])
def test_bad_options_are_refused_and_nothing_is_written(tmp_path, options, message):
    path = tmp_path / "t"
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(".", r"\.")):
        pyhudi.create_table(str(path), SCHEMA, "id", partition_fields="ts", options={**EPOCH_MS, **options})
    assert not path.exists() or not os.listdir(path)


def test_type_and_field_count_mismatches_are_refused(tmp_path):
    with pytest.raises(SchemaError, match="partition column 'id' has type string, but "
                                          "hoodie.keygen.timebased.timestamp.type=EPOCHMILLISECONDS takes numbers"):
        pyhudi.create_table(str(tmp_path / "a"), SCHEMA, "v", partition_fields="id", options=EPOCH_MS)
    with pytest.raises(ConfigError, match=r"partitions by exactly one field, got 2 \(ts, v\)"):
        pyhudi.create_table(str(tmp_path / "b"), SCHEMA, "id", partition_fields=["ts", "v"], options=EPOCH_MS)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def _retag(path: str, **props: str | None) -> None:
    """Rewrite hoodie.properties as another key generator's table (same layout on disk)."""
    file = pathlib.Path(path) / ".hoodie" / "hoodie.properties"
    lines = [ln for ln in file.read_text().splitlines() if ln.split("=", 1)[0] not in props]
    lines += [f"{k}={v}" for k, v in props.items() if v is not None]
    file.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("props", [
    {"hoodie.table.keygenerator.type": "CUSTOM", "hoodie.table.partition.fields": "ts:TIMESTAMP"},
    {"hoodie.table.keygenerator.type": None, "hoodie.table.keygenerator.class": "com.example.MyKeyGenerator"},
    {"hoodie.keygen.timebased.timestamp.type": None, "hoodie.keygen.timebased.output.dateformat": None},
])
def test_custom_and_unknown_key_generators_read_every_row_without_pruning(epoch_table, props):
    epoch_table.upsert(_rows(["e"], [T0 + 30 * 24 * H], [5]))
    _retag(epoch_table.path, **props)
    table = pyhudi.open_table(epoch_table.path)
    assert sorted(table.read(columns=["id"])["id"].to_pylist()) == ["a", "b", "c", "d", "e"]
    assert table.read(columns=["id"], filters=[("ts", "=", T0)])["id"].to_pylist() == ["a"]
    assert len(table.plan_scan(filters=[("ts", "=", T0)]).tasks) == 4  # every partition: paths are not values
    with pytest.raises(ConfigError, match="pyhudi cannot reproduce: pyhudi reads this table but does not write it"):
        table.upsert(_rows(["f"], [T0], [6]))
    unchanged = pyhudi.open_table(epoch_table.path).read(columns=["id"])
    assert sorted(unchanged["id"].to_pylist()) == ["a", "b", "c", "d", "e"]


def test_integer_keys_of_many_rows_are_cast_in_two_halves_with_the_same_strings(monkeypatch):
    import numpy as np
    import pyarrow.compute as pc

    from pyhudi import keygen

    monkeypatch.setattr(keygen, "SPLIT_ROWS", 4)
    values = [0, -1, 9, 10, 2**63 - 1, -(2**63), 99, 100, 123456789]
    for column in (pa.chunked_array([pa.array(values, pa.int64())]),
                   pa.chunked_array([pa.array(values[:2], pa.int64()), pa.array(values[2:], pa.int64())]),
                   pa.array(np.arange(5, dtype=np.int32))):
        got = keygen.as_strings(column)
        assert isinstance(got, pa.ChunkedArray) and got.type == pa.string()
        assert got.to_pylist() == pc.cast(column, pa.string()).to_pylist()
    table = pa.table({"id": pa.array(values, pa.int64())})
    assert keygen.record_keys(table, ["id"]).to_pylist() == [str(v) for v in values]
    assert keygen.as_strings(pa.chunked_array([pa.array([1, 2], pa.int8())])).to_pylist() == ["1", "2"]  # (below)


def test_apache_hudis_epoch_millis_table_takes_back_the_rows_it_reads(unzip_fixture):
    """Apache Hudi's Spark writer records an epoch-millis TIMESTAMP partition column as a string
    in the table's schema (what reads return) while its files hold the numbers: rows read from
    the table, changed and upserted back, land in their own partition and file group; a string
    that spells no epoch number is refused, naming it, and nothing is written."""
    import warnings

    import hudi
    import pyarrow.compute as pc

    path = unzip_fixture("sample_table/cow/v9_timebasedkeygen_epochmillis.zip")
    table = pyhudi.open_table(str(path))
    assert table.schema.field("ts_millis").type == pa.string()
    row = table.read(filters=[("txn_id", "=", "TXN-002")])
    row = row.select([c for c in row.column_names if not c.startswith("_hoodie_")])
    assert row.column("ts_millis").to_pylist() == ["1705315500000"]
    changed = row.set_column(row.column_names.index("txn_ts"), "txn_ts", pa.array([1700001000002]))
    bad = changed.set_column(changed.column_names.index("ts_millis"), "ts_millis", pa.array(["2024-01-15"]))
    files = sorted(p.name for p in path.rglob("*") if p.is_file())
    with pytest.raises(SchemaError, match=r"^partition column 'ts_millis': value '2024-01-15' is not an epoch "
                                          r"number, as hoodie.keygen.timebased.timestamp.type=EPOCHMILLISECONDS needs$"):
        table.upsert(bad)
    assert sorted(p.name for p in path.rglob("*") if p.is_file()) == files
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the metadata table is turned off: tests/test_metadata_table.py)
        table.upsert(changed)
    after = pyhudi.open_table(str(path)).read(columns=["txn_id", "txn_ts", "ts_millis", "_hoodie_partition_path"],
                                             filters=[("txn_id", "=", "TXN-002")])
    assert after.to_pylist() == [{"txn_id": "TXN-002", "txn_ts": 1700001000002, "ts_millis": "1705315500000",
                                  "_hoodie_partition_path": "2024/01/15/10"}]
    theirs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())
    mine = theirs.filter(pc.equal(theirs.column("txn_id"), "TXN-002"))
    assert mine.column("txn_ts").to_pylist() == [1700001000002]
    assert mine.column("_hoodie_partition_path").to_pylist() == ["2024/01/15/10"]


@pytest.mark.parametrize(("timestamp_type", "value", "unit"), [
    ("EPOCHMILLISECONDS", 9_223_372_036_854_775_807, "milliseconds"),  # (formatted as 2404/04/06/-2547115198423)
    ("EPOCHMILLISECONDS", 253_402_300_800_000, "milliseconds"),  # 10000-01-01
    ("EPOCHMILLISECONDS", -62_135_596_800_001, "milliseconds"),  # just before 0001-01-01
    ("UNIX_TIMESTAMP", 9_223_372_036_854_775, "seconds"),  # (wrapped around when multiplied)
    ("EPOCHMICROSECONDS", 9_223_372_036_854_775_807, "microseconds"),
])
def test_epoch_values_beyond_the_years_a_date_path_names_are_refused(tmp_path, timestamp_type, value, unit):
    options = {**EPOCH_MS, "hoodie.keygen.timebased.timestamp.type": timestamp_type}
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", partition_fields="ts", options=options)
    with pytest.raises(SchemaError) as info:
        t.upsert(_rows(["a", "b"], [T0 * 1000 if unit == "microseconds" else T0 // (1000 if unit == "seconds" else 1),
                                    value], [1, 2]))
    assert str(info.value) == (f"partition column 'ts' holds {value}, out of range for {unit} since 1970 "
                               "(a date path needs a year from 1 to 9999)")
    assert _partitions(t.path) == [] and t.read().num_rows == 0


def test_epoch_values_at_the_ends_of_the_years_a_date_path_names_are_written(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", partition_fields="ts", options=EPOCH_MS)
    t.upsert(_rows(["a", "b"], [-62_135_596_800_000, 253_402_300_799_999], [1, 2]))
    assert _partitions(t.path) == ["0001/01/01/00", "9999/12/31/23"]


def test_a_date_column_is_taken_as_its_epoch_day_in_the_configured_unit(tmp_path):
    """Hudi's key generator takes a date as ``LocalDate.toEpochDay()`` in the configured unit
    (SCALAR with DAYS: the day itself); a date column used to fail with an Arrow cast error."""
    import datetime as dt

    options = {**EPOCH_MS, "hoodie.keygen.timebased.timestamp.type": "SCALAR",
               "hoodie.keygen.timebased.timestamp.scalar.time.unit": "days",
               "hoodie.keygen.timebased.output.dateformat": "yyyy-MM-dd"}
    schema = pa.schema([("id", pa.string()), ("day", pa.date32()), ("v", pa.int64())])
    t = pyhudi.create_table(str(tmp_path / "t"), schema, "id", partition_fields="day", options=options)
    t.upsert(pa.table({"id": ["a", "b"], "day": [dt.date(2024, 1, 16), dt.date(1969, 12, 31)], "v": [1, 2]},
                      schema=schema))
    assert _partitions(t.path) == ["1969-12-31", "2024-01-16"]
    assert sorted(t.read(columns=["id", "day"]).to_pylist(), key=lambda r: r["id"]) == [
        {"id": "a", "day": dt.date(2024, 1, 16)}, {"id": "b", "day": dt.date(1969, 12, 31)}]

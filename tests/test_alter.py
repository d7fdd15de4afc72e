"""ALTER TABLE SET/UNSET TBLPROPERTIES in the kernel (RFC-80 "Adding and deleting column families")."""

from __future__ import annotations

import json
import pathlib

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.config.families import ColumnFamily
from pyhudi.errors import ColumnFamilyError, CommitConflictError, ConfigError, SchemaError
from pyhudi.evolution import FAMILIES_KEY, PREVIOUS_FAMILIES_KEY, PROPERTY_EDITS_KEY
from pyhudi.storage.fs import Storage
from pyhudi.storage.naming import parse_data_file_name
from pyhudi.timeline.metadata import CommitMetadata

SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False), ("a", pa.float64()), ("b", pa.string()),
                    ("ts", pa.int64()), ("c", pa.int64())])
FIRST = pa.table({"id": ["k1", "k2"], "a": [1.0, 2.0], "b": ["x", "y"], "ts": [1, 1], "c": [10, 20]})


@pytest.fixture
def table(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2, ordering_field="ts",
                            column_families={"f1": "a,b;ts", "f2": "c"})
    t.upsert(FIRST)
    return t


def rows(t, **kw):
    return sorted(t.read(**kw).to_pylist(), key=lambda r: r["id"])


def snapshot(path: str) -> dict[str, bytes]:
    """Every file of the table (path → bytes): an unchanged table has an identical snapshot."""
    root = pathlib.Path(path)
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def data_files(path: str, family: str) -> list[str]:
    out = []
    for p in pathlib.Path(path).rglob("*"):
        if p.is_file() and ".hoodie" not in p.parts:
            try:
                if parse_data_file_name(p.name).family == family:
                    out.append(p.name)
            except Exception:
                pass
    return sorted(out)


def last_commit(t) -> tuple:
    timeline = t.active_timeline()
    instant = timeline.completed()[-1]
    return instant, timeline.read_metadata(instant)


# ----------------------------------------------------------------------------------- add a family
def test_add_family_records_the_change_then_writes_and_reads_it(table):
    before = table.timeline
    instant = table.alter(set_properties={"hoodie.colFamily.f3": "d,e;e"},
                          new_columns={"d": pa.string(), "e": pa.int64()})
    assert [i.requested_time for i in table.timeline] == [*[i.requested_time for i in before], instant]
    done, metadata = last_commit(table)
    assert (done.requested_time, str(done.action), done.state.value) == (instant, "deltacommit", "COMPLETED")
    assert isinstance(metadata, CommitMetadata) and metadata.operation_type == "ALTER_SCHEMA"
    assert metadata.partition_to_write_stats == {}
    assert json.loads(metadata.extra_metadata[FAMILIES_KEY]) == {"f1": "a,b,ts;ts", "f2": "c", "f3": "d,e;e"}
    assert json.loads(metadata.extra_metadata[PREVIOUS_FAMILIES_KEY]) == {"f1": "a,b,ts;ts", "f2": "c"}
    assert json.loads(metadata.extra_metadata[PROPERTY_EDITS_KEY]) == {"set": {"hoodie.colFamily.f3": "d,e;e"},
                                                                       "unset": []}
    expected_schema = SCHEMA.append(pa.field("d", pa.string())).append(pa.field("e", pa.int64()))
    reopened = pyhudi.open_table(table.path)
    assert reopened.schema == expected_schema
    assert reopened.properties["hoodie.colFamily.f3"] == "d,e;e"
    assert reopened.column_families["f3"] == ColumnFamily("f3", ("d", "e"), "e")
    assert rows(reopened) == [
        {"id": "k1", "a": 1.0, "b": "x", "ts": 1, "c": 10, "d": None, "e": None},
        {"id": "k2", "a": 2.0, "b": "y", "ts": 1, "c": 20, "d": None, "e": None},
    ]
    w1 = reopened.upsert(pa.table({"id": ["k1", "k3"], "d": ["p", "q"], "e": [5, 6]}))
    w2 = reopened.upsert(pa.table({"id": ["k1"], "d": ["stale"], "e": [4]}))  # f3 orders by e: 4 < 5 loses
    assert rows(reopened) == [
        {"id": "k1", "a": 1.0, "b": "x", "ts": 1, "c": 10, "d": "p", "e": 5},
        {"id": "k2", "a": 2.0, "b": "y", "ts": 1, "c": 20, "d": None, "e": None},
        {"id": "k3", "a": None, "b": None, "ts": None, "c": None, "d": "q", "e": 6},
    ]
    group = ".00000001-0000-0000-0000-000000000000-0"  # k1 and k3 hash to bucket 1 of 2
    assert data_files(table.path, "f3") == [f"{group}_{w1}_f3.log.1_0-1-0", f"{group}_{w2}_f3.log.1_0-1-0"]
    _, write_meta = last_commit(reopened)
    assert json.loads(write_meta.extra_metadata[FAMILIES_KEY]) == {"f1": "a,b,ts;ts", "f2": "c", "f3": "d,e;e"}


def test_new_columns_as_schema_alias_key_and_key_columns_in_the_definition(table):
    table.alter(set_properties={"hoodie.columnFamily.f3": "id,d"}, new_columns=pa.schema([("d", pa.int8())]))
    assert table.properties["hoodie.colFamily.f3"] == "d"  # canonical key, key column implicit
    assert "hoodie.columnFamily.f3" not in table.properties
    assert table.schema.field("d").type == pa.int32()  # stored as the timeline's Avro schema says


def test_setting_an_existing_family_to_its_definition_changes_nothing(table):
    before = snapshot(table.path)
    assert table.alter(set_properties={"hoodie.colFamily.f1": "id,a,b;ts", "hoodie.colFamily.f2": "c"}) is None
    assert snapshot(table.path) == before


def test_partition_columns_are_implicit_in_new_families(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("city", pa.string()), ("a", pa.int64())])
    t = pyhudi.create_table(str(tmp_path / "p"), schema, "id", partition_fields="city", num_buckets=1,
                            column_families={"f1": "a"})
    t.upsert(pa.table({"id": [1, 2], "city": ["x", "y"], "a": [10, 20]}))
    t.alter({"hoodie.colFamily.f2": "city,z"}, new_columns={"z": pa.string()})
    assert t.column_families["f2"] == ColumnFamily("f2", ("z",), None)
    t.upsert(pa.table({"id": [2], "city": ["y"], "z": ["zz"]}))
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "city": "x", "a": 10, "z": None}, {"id": 2, "city": "y", "a": 20, "z": "zz"}]


# ----------------------------------------------------------------------------------- drop a family
def test_drop_family_removes_its_columns_and_stops_reading_its_files(table, monkeypatch):
    table.upsert(pa.table({"id": ["k3"], "c": [30]}))  # k3 exists through f2 only
    table.alter(set_properties={"hoodie.colFamily.f3": "d"}, new_columns={"d": pa.string()})
    table.upsert(pa.table({"id": ["k1"], "d": ["dd"]}))
    f2_files = data_files(table.path, "f2")
    assert f2_files
    instant = table.alter(unset_properties=["hoodie.colFamily.f2"])
    _, metadata = last_commit(table)
    assert metadata.operation_type == "ALTER_SCHEMA" and last_commit(table)[0].requested_time == instant
    reopened = pyhudi.open_table(table.path)
    assert reopened.schema.names == ["id", "a", "b", "ts", "d"]
    assert "hoodie.colFamily.f2" not in reopened.properties
    assert list(reopened.column_families) == ["f1", "f3"]
    opened: list[str] = []
    for method in ("open_input", "read", "size", "full_path"):
        original = getattr(Storage, method)

        def spy(self, relpath, *args, _original=original, **kwargs):
            opened.append(relpath)
            return _original(self, relpath, *args, **kwargs)

        monkeypatch.setattr(Storage, method, spy)
    assert rows(reopened) == [  # k3 lived in f2 only: gone with it
        {"id": "k1", "a": 1.0, "b": "x", "ts": 1, "d": "dd"},
        {"id": "k2", "a": 2.0, "b": "y", "ts": 1, "d": None},
    ]
    # f1's rows are in the first upsert's full-row log (no suffix), which serves every family
    full_row = [n for n in data_files(table.path, None) if ".log." in n]
    assert full_row and any(p.endswith(n) for p in opened for n in full_row) and any("_f3" in p for p in opened)
    assert not [p for p in opened if "_f2" in p]
    assert data_files(table.path, "f2") == f2_files  # still on storage until a clean removes them
    monkeypatch.undo()
    with pytest.raises(SchemaError, match="input column 'c' is not in the table schema"):
        reopened.upsert(pa.table({"id": ["k1"], "c": [1]}))


def test_time_travel_sees_the_schema_and_families_in_effect(table):
    t0 = table.timeline[-1].completion_time  # after the first write
    table.alter(set_properties={"hoodie.colFamily.f3": "d"}, new_columns={"d": pa.string()})
    t1 = table.timeline[-1].completion_time
    table.upsert(pa.table({"id": ["k1"], "d": ["dd"], "c": [11]}))
    t2 = table.timeline[-1].completion_time
    table.alter(unset_properties="hoodie.colFamily.f2")
    t3 = table.timeline[-1].completion_time
    created = table.timeline[0].requested_time[:-1] + "0"  # before the first commit completed

    assert table.schema_at(created).names == ["id", "a", "b", "ts", "c"]
    assert list(table.families_at(created)) == ["f1", "f2"]
    assert table.schema_at(t0) == SCHEMA
    assert table.schema_at(t1).names == table.schema_at(t2).names == ["id", "a", "b", "ts", "c", "d"]
    assert list(table.families_at(t1)) == ["f1", "f2", "f3"]
    assert table.schema_at(t3).names == table.schema.names == ["id", "a", "b", "ts", "d"]
    assert list(table.families_at(t3)) == ["f1", "f3"]

    assert rows(table, as_of=t0) == [{"id": "k1", "a": 1.0, "b": "x", "ts": 1, "c": 10},
                                     {"id": "k2", "a": 2.0, "b": "y", "ts": 1, "c": 20}]
    assert rows(table, as_of=t1, columns=["id", "c", "d"]) == [{"id": "k1", "c": 10, "d": None},
                                                               {"id": "k2", "c": 20, "d": None}]
    assert rows(table, as_of=t2, columns=["id", "c", "d"]) == [{"id": "k1", "c": 11, "d": "dd"},
                                                               {"id": "k2", "c": 20, "d": None}]
    assert rows(table, as_of=t3, columns=["id", "d"]) == [{"id": "k1", "d": "dd"}, {"id": "k2", "d": None}]
    with pytest.raises(SchemaError, match="column 'c' is not in the table schema"):
        table.read(columns=["c"], as_of=t3)
    with pytest.raises(SchemaError, match="column 'd' is not in the table schema"):
        table.read(columns=["d"], as_of=t0)


def test_readding_a_dropped_family_name_is_refused_while_its_files_exist(table):
    table.upsert(pa.table({"id": ["k1"], "c": [11]}))  # an f2 log file (the first upsert wrote full-row logs)
    table.alter(unset_properties=["hoodie.colFamily.f2"])
    before = snapshot(table.path)
    with pytest.raises(ColumnFamilyError, match=r"cannot add column family 'f2': files of a dropped family of "
                                                r"that name are still in the table \(e\.g\. \.0000000"):
        table.alter({"hoodie.colFamily.f2": "c"}, new_columns={"c": pa.int64()})
    assert snapshot(table.path) == before
    table.alter({"hoodie.colFamily.f9": "c"}, new_columns={"c": pa.string()})  # new name: new, empty column
    assert rows(table, columns=["id", "c"]) == [{"id": "k1", "c": None}, {"id": "k2", "c": None}]
    assert table.schema.field("c").type == pa.string()


# ----------------------------------------------------------------------------------- refusals
INVALID = [
    ({"set_properties": {"hoodie.colFamily.f1": "a,b"}}, ColumnFamilyError,
     "column family 'f1' already exists as 'a,b,ts;ts'; existing column families cannot be changed "
     "(asked for 'a,b')"),
    ({"set_properties": {"hoodie.colFamily.f9": "c,z"}, "new_columns": {"z": pa.int64()}}, ColumnFamilyError,
     "column family 'f9': column 'c' belongs to column family 'f2'; columns of other families cannot move "
     "into a new column family"),
    ({"set_properties": {"hoodie.colFamily.f9": "c"}, "unset_properties": ["hoodie.colFamily.f2"],
      "new_columns": {"c": pa.int64()}}, ColumnFamilyError,
     "column family 'f9': column 'c' belongs to column family 'f2'"),
    ({"set_properties": {"hoodie.colFamily.f_9": "z"}, "new_columns": {"z": pa.int64()}}, ColumnFamilyError,
     "invalid column family name 'f_9'"),
    ({"set_properties": {"hoodie.colFamily.f9": "z;y;x"}}, ColumnFamilyError, "more than one ';'"),
    ({"set_properties": {"hoodie.colFamily.f9": ""}}, ColumnFamilyError, "column family 'f9': definition '' lists no columns"),
    ({"set_properties": {"hoodie.colFamily.f9": "id"}}, ColumnFamilyError,
     "column family 'f9' has no columns besides the record key"),
    ({"set_properties": {"hoodie.colFamily.f9": "z;w"}, "new_columns": {"z": pa.int64()}}, SchemaError,
     "column family 'f9': new column 'w' has no type"),
    ({"set_properties": {"hoodie.colFamily.f9": "z"}}, SchemaError,
     "column family 'f9': new column 'z' has no type; give it with new_columns={'z': <pyarrow type>}"),
    ({"set_properties": {"hoodie.colFamily.f9": "z"}, "new_columns": {"z": pa.int64(), "w": pa.int64()}},
     SchemaError, "new column 'w' is not in any column family added by this ALTER"),
    ({"new_columns": {"w": pa.int64()}}, SchemaError, "new_columns (w) must belong to a column family added"),
    ({"set_properties": {"hoodie.colFamily.f9": "z"}, "new_columns": {"z": pa.field("z", pa.int64(), False)}},
     SchemaError, "new column 'z' must be nullable"),
    ({"set_properties": {"hoodie.colFamily.f9": "z"}, "new_columns": {"z": "bigint"}}, SchemaError,
     "new column 'z': type must be a pyarrow DataType or Field"),
    ({"set_properties": {"hoodie.colFamily.f9": "z", "hoodie.colFamily.f8": "z"}, "new_columns": {"z": pa.int64()}},
     ColumnFamilyError, "column 'z' is in two column families: 'f9' and 'f8'"),
    ({"unset_properties": ["hoodie.colFamily.nope"]}, ColumnFamilyError,
     "cannot drop column family 'nope': the table has no such family (its families: f1, f2)"),
    ({"unset_properties": ["hoodie.colFamily.f1"]}, ColumnFamilyError,
     "cannot drop column family 'f1': it holds the table ordering field 'ts' (hoodie.table.precombine.field)"),
    ({"set_properties": {"hoodie.colFamily.f2": "c"}, "unset_properties": ["hoodie.colFamily.f2"]}, ConfigError,
     "property 'hoodie.colFamily.f2' is both set and unset in one ALTER"),
    ({"set_properties": {"hoodie.columnFamily.f2": "c"}, "unset_properties": ["hoodie.colFamily.f2"]},
     ColumnFamilyError, "column family 'f2' is both set and unset in one ALTER"),
    ({"set_properties": {"hoodie.table.recordkey.fields": "a"}}, ConfigError,
     "property 'hoodie.table.recordkey.fields' is fixed when the table is created and cannot be altered"),
    ({"unset_properties": ["hoodie.bucket.index.num.buckets"]}, ConfigError,
     "property 'hoodie.bucket.index.num.buckets' is fixed when the table is created"),
    ({"set_properties": {"hoodie.datasource.write.precombine.field": "a"}}, ConfigError,
     "property 'hoodie.datasource.write.precombine.field' is fixed"),
    ({"set_properties": {"comment": "x"}}, ConfigError,
     "property 'comment' is not a hoodie.* key; only hoodie.* table properties can be altered"),
    ({"set_properties": {"hoodie.cleaner.commits.retained": None}}, ConfigError,
     "property 'hoodie.cleaner.commits.retained' has no value"),
    ({"set_properties": {"hoodie.colFamily.f9": "z"}, "new_columns": {"z": pa.month_day_nano_interval()}},
     SchemaError, "Arrow type month_day_nano_interval of column 'z' has no Avro equivalent"),
    ({"set_properties": {"hoodie.colFamily.f9": "z,l;l"}, "new_columns": {"z": pa.int64(), "l": pa.list_(pa.int64())}},
     ColumnFamilyError, "column family 'f9': ordering column 'l' has type list<element: int64>, whose values have "
                        "no order (lists, structs and maps cannot order records)"),
    ({"set_properties": {"hoodie.colFamily.f9": "z"}, "new_columns": {"z": pa.struct([])}},
     SchemaError, "column 'z' is a struct without fields, which Parquet cannot store"),
    ({"set_properties": {"hoodie.colFamily.f9": "z"}, "new_columns": {"z": pa.decimal128(4, 6)}},
     SchemaError, "column 'z' has type decimal128(4, 6): Avro (and Hudi) decimals need 0 <= scale <= precision"),
]


@pytest.mark.parametrize("kwargs, error, message", INVALID)
def test_invalid_alter_names_the_rule_and_changes_nothing(table, kwargs, error, message):
    before = snapshot(table.path)
    with pytest.raises(error) as info:
        table.alter(**kwargs)
    assert message in str(info.value)
    assert snapshot(table.path) == before
    assert pyhudi.open_table(table.path).schema == SCHEMA


def test_dropping_every_family_is_refused(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1,
                            column_families={"f1": "a,b,ts", "f2": "c"})
    before = snapshot(t.path)
    with pytest.raises(ColumnFamilyError, match="cannot drop column family 'f1', 'f2': a table with column "
                                                "families must keep at least one"):
        t.alter(unset_properties=["hoodie.colFamily.f1", "hoodie.colFamily.f2"])
    assert snapshot(t.path) == before


def test_plain_table_cannot_gain_families(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1)
    before = snapshot(t.path)
    with pytest.raises(ColumnFamilyError, match="table 't' has no column families: it keeps every column in its "
                                                "one default family"):
        t.alter({"hoodie.colFamily.f1": "z"}, new_columns={"z": pa.int64()})
    assert snapshot(t.path) == before
    assert t.alter({"hoodie.compact.inline.max.delta.commits": 3}) is None
    assert t.properties["hoodie.compact.inline.max.delta.commits"] == "3"


# ----------------------------------------------------------------------------------- other keys
def test_other_hoodie_keys_update_properties_without_an_instant(table):
    timeline = [i.requested_time for i in table.timeline]
    assert table.alter({"hoodie.cleaner.commits.retained": 5, "hoodie.cleaner.policy.failed.writes": "LAZY"}) is None
    props = pyhudi.open_table(table.path).properties
    assert (props["hoodie.cleaner.commits.retained"], props["hoodie.cleaner.policy.failed.writes"]) == ("5", "LAZY")
    assert table.alter(unset_properties=["hoodie.cleaner.commits.retained", "hoodie.not.there"]) is None
    assert "hoodie.cleaner.commits.retained" not in pyhudi.open_table(table.path).properties
    assert [i.requested_time for i in table.timeline] == timeline
    assert not (pathlib.Path(table.path) / ".hoodie" / "hoodie.properties.backup").exists()


# ----------------------------------------------------------------------------------- crash safety
def test_crash_between_instant_and_properties_is_repaired(table, monkeypatch):
    import pyhudi.config.table as tc

    def crash(*args, **kwargs):
        raise OSError("simulated crash before hoodie.properties is updated")

    monkeypatch.setattr(tc, "update_table_config", crash)
    with pytest.raises(OSError, match="simulated crash"):
        table.alter({"hoodie.colFamily.f3": "d", "hoodie.cleaner.commits.retained": "7"},
                    new_columns={"d": pa.string()})
    monkeypatch.undo()
    reopened = pyhudi.open_table(table.path)
    assert "hoodie.colFamily.f3" not in reopened.properties  # one ALTER behind ...
    assert list(reopened.column_families) == ["f1", "f2", "f3"]  # ... but readers and writers trust the timeline
    reopened.upsert(pa.table({"id": ["k1"], "d": ["dd"]}))
    assert rows(reopened, columns=["id", "d"]) == [{"id": "k1", "d": "dd"}, {"id": "k2", "d": None}]
    assert reopened.alter() is None  # the next ALTER replays the recorded edits first
    props = pyhudi.open_table(table.path).properties
    assert (props["hoodie.colFamily.f3"], props["hoodie.cleaner.commits.retained"]) == ("d", "7")


def test_crash_before_the_instant_completes_changes_nothing(table, monkeypatch):
    from pyhudi.timeline.timeline import Timeline

    original = Timeline.complete

    def crash(self, instant, content, **kwargs):
        raise OSError("simulated crash before completion")

    monkeypatch.setattr(Timeline, "complete", crash)
    props_before = (pathlib.Path(table.path) / ".hoodie/hoodie.properties").read_bytes()
    with pytest.raises(OSError, match="simulated crash before completion"):
        table.alter({"hoodie.colFamily.f3": "d"}, new_columns={"d": pa.string()})
    monkeypatch.setattr(Timeline, "complete", original)
    assert table.schema == SCHEMA and list(table.column_families) == ["f1", "f2"]
    assert [i.state.value for i in table.timeline] == ["COMPLETED", "INFLIGHT"]
    assert (pathlib.Path(table.path) / ".hoodie/hoodie.properties").read_bytes() == props_before
    table.upsert(pa.table({"id": ["k1"], "c": [99]}))  # the next writer rolls the pending ALTER back
    assert [(str(i.action), i.state.value) for i in table.timeline] == [
        ("deltacommit", "COMPLETED"), ("rollback", "COMPLETED"), ("deltacommit", "COMPLETED")]
    assert rows(table, columns=["id", "c"]) == [{"id": "k1", "c": 99}, {"id": "k2", "c": 20}]


def test_write_prepared_before_an_alter_is_refused_at_commit(table, monkeypatch):
    from pyhudi.write.client import WriteClient

    other = pyhudi.open_table(table.path)
    original = WriteClient._write_partition_metafiles

    def alter_meanwhile(self, statuses, instant):
        other.alter(unset_properties=["hoodie.colFamily.f2"])
        return original(self, statuses, instant)

    monkeypatch.setattr(WriteClient, "_write_partition_metafiles", alter_meanwhile)
    with pytest.raises(CommitConflictError, match=r"the table schema or column families changed by ALTER instant "
                                                  r"\d{17} while this write was running"):
        table.upsert(pa.table({"id": ["k1"], "b": ["new"], "c": [5]}))
    monkeypatch.undo()
    states = [(str(i.action), i.state.value) for i in table.timeline]
    assert states == [("deltacommit", "COMPLETED"), ("deltacommit", "COMPLETED"), ("rollback", "COMPLETED")]
    assert rows(table, columns=["id", "b"]) == [{"id": "k1", "b": "x"}, {"id": "k2", "b": "y"}]


def test_concurrent_alters_serialise_and_keep_both_changes(table):
    import threading

    handles = [pyhudi.open_table(table.path) for _ in range(2)]
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def add(handle, name):
        barrier.wait()
        try:
            handle.alter({f"hoodie.colFamily.{name}": f"{name}col"}, new_columns={f"{name}col": pa.int64()})
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(h, n)) for h, n in zip(handles, ["g1", "g2"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    reopened = pyhudi.open_table(table.path)
    assert sorted(reopened.column_families) == ["f1", "f2", "g1", "g2"]
    assert sorted(k for k in reopened.properties if k.startswith("hoodie.colFamily.")) == [
        "hoodie.colFamily.f1", "hoodie.colFamily.f2", "hoodie.colFamily.g1", "hoodie.colFamily.g2"]
    assert sorted(reopened.schema.names[-2:]) == ["g1col", "g2col"]
    alters = [i for i in reopened.timeline[1:]]
    assert [(str(i.action), i.state.value) for i in alters] == [("deltacommit", "COMPLETED")] * 2


def test_a_family_added_after_a_full_row_base_stays_empty_after_archival(tmp_path):
    """A full-row base file written before an ALTER added a family holds none of that family's
    records, also once archival has moved the ALTER off the active timeline (the view then
    learns when the family was added from the archive): with the older families dropped, the
    table has no rows, at the latest instant and time travelling to it."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1,
                            column_families={"f1": "a,b,ts", "f2": "c"})
    t.upsert(FIRST)
    t.compact(full=True)  # one full-row base file without a family suffix
    added = t.alter(set_properties={"hoodie.colFamily.f3": "d"}, new_columns={"d": pa.int64()})
    t.alter(unset_properties=["hoodie.colFamily.f1"])
    last = t.alter(unset_properties=["hoodie.colFamily.f2"])
    assert t.read().to_pylist() == []
    archived = t.archive(options={"hoodie.keep.min.commits": 1, "hoodie.keep.max.commits": 2})
    assert added in archived and all(i.requested_time != added for i in t.timeline)
    assert t.read().to_pylist() == []
    assert pyhudi.open_table(t.path).read(as_of=last).to_pylist() == []
    t.upsert(pa.table({"id": ["k3"], "d": pa.array([30], pa.int64())}))
    assert pyhudi.open_table(t.path).read().to_pylist() == [{"id": "k3", "d": 30}]

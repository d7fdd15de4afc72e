"""Small things a user types: plain key values to delete, a list of fields for ALTER's new
columns, time-travel values in ISO text — each works, or is refused naming what to give."""

from __future__ import annotations

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import ConfigError, ReadError, SchemaError


def _rows(table: pyhudi.Table) -> list[dict]:
    return sorted(table.read(columns=["id", "v"]).to_pylist(), key=lambda r: r["id"])


def test_delete_takes_plain_key_values_on_an_unpartitioned_table(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), pa.schema([("id", pa.string()), ("v", pa.int64())]), "id")
    t.upsert([{"id": k, "v": i} for i, k in enumerate("abcd")])
    t.delete(["a"])
    t.delete(("b",))
    t.delete(pa.array(["c"]))
    assert _rows(t) == [{"id": "d", "v": 3}]
    t.delete([{"id": "d"}])  # (rows as dicts, as before)
    assert _rows(t) == []


def test_delete_of_plain_key_values_on_a_partitioned_table_names_the_columns_it_needs(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), pa.schema([("id", pa.string()), ("d", pa.string()),
                                                            ("v", pa.int64())]), "id", partition_fields="d")
    t.upsert([{"id": "a", "d": "x", "v": 1}])
    before = t.timeline
    with pytest.raises(SchemaError) as info:
        t.delete(["a"])
    assert str(info.value) == ("delete of plain key values needs an unpartitioned table with one record key "
                               "field; table 't' needs rows with columns id, d (e.g. a list of dicts)")
    assert t.timeline == before
    t.delete([{"id": "a", "d": "x"}])
    assert _rows(t) == []




def _family_table(tmp_path) -> pyhudi.Table:
    schema = pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("x", pa.float64())])
    return pyhudi.create_table(str(tmp_path / "f"), schema, "id", num_buckets=2,
                               column_families={"a": "x;ts"})


def test_alter_takes_new_columns_as_a_list_of_fields(tmp_path):
    t = _family_table(tmp_path)
    t.alter({"hoodie.colFamily.b": "y"}, new_columns=[pa.field("y", pa.string())])
    assert t.schema.field("y").type == pa.string()


def test_alter_with_new_columns_of_another_kind_is_refused_naming_what_to_give(tmp_path):
    t = _family_table(tmp_path)
    with pytest.raises(ConfigError) as info:
        t.alter({"hoodie.colFamily.b": "y"}, new_columns=["y"])
    assert str(info.value) == ("new_columns must map each new column to its pyarrow type ({'name': pa.string()}), "
                               "or be a pa.Schema or a list of pa.field(...), got list")
    assert "y" not in t.schema.names


def test_a_time_that_is_no_instant_names_every_accepted_spelling(tmp_path):
    t = pyhudi.create_table(str(tmp_path / "t"), pa.schema([("id", pa.string()), ("v", pa.int64())]), "id")
    t.upsert([{"id": "a", "v": 1}])
    with pytest.raises(ReadError) as info:
        t.read(as_of="yesterday")
    assert str(info.value) == ("as_of 'yesterday' is not an instant time (yyyyMMddHHmmssSSS, yyyyMMddHHmmss or "
                               "yyyyMMdd, also as ISO text like 2024-01-31 or 2024-01-31T12:00:00.000, or a datetime)")
    assert t.read(as_of="2999-01-31T12:00:00.000").num_rows == 1

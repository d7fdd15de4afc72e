"""Column family definitions (RFC-80 "Specifying column families", DESIGN §4)."""

from __future__ import annotations

import pytest

from pyhudi.config.families import (
    ColumnFamily,
    default_family,
    families_from_mapping,
    families_from_properties,
    family_properties,
    parse_family_value,
    validate_families,
    validate_family_change,
)
from pyhudi.errors import ColumnFamilyError

SCHEMA = ["id", "a", "b", "c", "ts", "d"]


def test_parse_value_with_and_without_ordering():
    assert parse_family_value("cf1", "a, b ;ts") == ColumnFamily("cf1", ("a", "b", "ts"), "ts")
    assert parse_family_value("cf1", "a,ts,b;ts") == ColumnFamily("cf1", ("a", "ts", "b"), "ts")
    assert parse_family_value("cf2", "c") == ColumnFamily("cf2", ("c",), None)
    assert ColumnFamily("cf1", ("a", "b"), "ts").property_value == "a,b;ts"
    assert ColumnFamily("cf2", ("c",)).property_value == "c"


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("cf", "", "lists no columns"),
        ("cf", "a,,b", "empty column name"),
        ("cf", "a;b;c", "more than one ';'"),
        ("cf", "a;", "empty ordering column"),
        ("cf", "a,a", "column 'a' is listed twice"),
        ("1cf", "a", "invalid column family name '1cf'"),
        ("c_f", "a", "invalid column family name 'c_f'"),
        ("c.f", "a", "invalid column family name 'c.f'"),
        ("c/f", "a", "invalid column family name 'c/f'"),
        ("", "a", "invalid column family name ''"),
        ("a" * 65, "a", "invalid column family name"),
    ],
)
def test_parse_errors_name_the_family(name, value, message):
    with pytest.raises(ColumnFamilyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_family_value(name, value)


def test_properties_accept_alias_and_store_canonically():
    props = {"hoodie.colFamily.f1": "a,b;ts", "hoodie.columnFamily.f2": "c,d", "other": "x"}
    families = families_from_properties(props)
    assert list(families) == ["f1", "f2"]
    assert family_properties(families) == {"hoodie.colFamily.f1": "a,b,ts;ts", "hoodie.colFamily.f2": "c,d"}


def test_same_family_under_both_prefixes_must_agree():
    same = {"hoodie.colFamily.f1": "a", "hoodie.columnFamily.f1": "a"}
    assert families_from_properties(same)["f1"] == ColumnFamily("f1", ("a",))
    with pytest.raises(ColumnFamilyError, match="'f1' is defined twice with different values"):
        families_from_properties({"hoodie.colFamily.f1": "a", "hoodie.columnFamily.f1": "b"})


def test_validate_accepts_complete_partition_and_normalises_key():
    families = families_from_mapping({"f1": "id,a,b", "f2": "c,d", "f3": "ts"})
    out = validate_families(families, SCHEMA, ["id"])
    assert out == {
        "f1": ColumnFamily("f1", ("a", "b"), None),
        "f2": ColumnFamily("f2", ("c", "d"), None),
        "f3": ColumnFamily("f3", ("ts",), None),
    }


def test_validate_rules_with_messages():
    def check(spec, message, schema=SCHEMA, key=("id",)):
        with pytest.raises(ColumnFamilyError, match=message):
            validate_families(families_from_mapping(spec), schema, list(key))

    check({"f1": "a,b,zz", "f2": "c,d,ts"}, "column family 'f1': column 'zz' is not in the table schema")
    check({"f1": "a,b,c", "f2": "c,d,ts"}, "column 'c' is in two column families: 'f1' and 'f2'")
    check({"f1": "a,b", "f2": "c,ts"}, r"column 'd' is not in any column family .*unassigned: d")
    check({"f1": "a,b;c", "f2": "c,d,ts"}, "column 'c' is in two column families: 'f1' and 'f2'")
    with pytest.raises(ColumnFamilyError, match="ordering column 'c' does not belong to the family"):
        validate_families({"f1": ColumnFamily("f1", ("a", "b"), "c")}, ["id", "a", "b", "c"], ["id"])
    check({"f1": "a,b;nope", "f2": "c,d,ts"}, "column family 'f1': column 'nope' is not in the table schema")
    check({"f1": "id", "f2": "a,b,c,d,ts"}, "column family 'f1' has no columns besides the record key")


def test_validate_ordering_and_shared_key():
    out = validate_families(
        families_from_mapping({"f1": "id,a,b;ts", "f2": "id,c,d;id"}), SCHEMA, ["id"]
    )
    assert out["f1"] == ColumnFamily("f1", ("a", "b", "ts"), "ts")
    # the RFC's default ordering (the primary key) means: merge by commit time
    assert out["f2"] == ColumnFamily("f2", ("c", "d"), None)
    assert out["f1"].with_key(["id"]) == ("id", "a", "b", "ts")


def test_partition_columns_need_no_family():
    out = validate_families(families_from_mapping({"f1": "a,b,c,ts"}), SCHEMA, ["id"], partition_fields=["d"])
    assert out["f1"].columns == ("a", "b", "c", "ts")


def test_default_family_holds_every_non_key_column():
    fam = default_family(SCHEMA, ["id"], "ts")
    assert fam == ColumnFamily("", ("a", "b", "c", "ts", "d"), "ts")
    assert fam.is_default and fam.file_suffix == ""


def test_alter_rules():
    current = families_from_mapping({"f1": "a,b;ts", "f2": "c"})
    validate_family_change(current, families_from_mapping({"f1": "a,b;ts", "f3": "x,y"}))
    with pytest.raises(ColumnFamilyError, match="column family 'f1' already exists as 'a,b,ts;ts'"):
        validate_family_change(current, families_from_mapping({"f1": "a;ts"}))
    with pytest.raises(ColumnFamilyError, match="column 'c' already belongs to column family 'f2'"):
        validate_family_change(current, families_from_mapping({"f9": "c,z"}))

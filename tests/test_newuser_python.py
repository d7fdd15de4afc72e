"""Writes take what a Python user has at hand: rows as dicts and columns as lists, typed by the
table's schema; a value that does not fit names its column and leaves the table unchanged."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import SchemaError

SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False), ("n", pa.int32()),
                    ("at", pa.timestamp("us", tz="UTC")), ("score", pa.float64())])
AT = datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.timezone.utc)


def _table(tmp_path, **kwargs):
    return pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", **kwargs)


@pytest.mark.parametrize("layout", [{"num_buckets": 2}, {"table_type": "COPY_ON_WRITE"}])
def test_rows_and_columns_write_like_an_arrow_table(tmp_path, layout):
    t = _table(tmp_path, **layout)
    t.upsert([{"id": "a", "n": 1, "at": AT, "score": 0.5}, {"id": "b", "n": 2}])  # b's other columns: null
    t.upsert({"id": ["c"], "n": [3], "score": [1.5]})
    t.upsert([{"id": "a", "score": 9.0}])  # a partial update: only the columns given
    t.delete([{"id": "b"}])
    assert t.read().schema == SCHEMA  # (typed by the table: int32, not the int64 Python ints infer)
    assert t.read().sort_by("id").to_pylist() == [
        {"id": "a", "n": 1, "at": AT, "score": 9.0},
        {"id": "c", "n": 3, "at": None, "score": 1.5},
    ]


def test_a_key_the_first_row_lacks_is_still_written(tmp_path):
    t = _table(tmp_path, num_buckets=1)
    t.upsert([{"id": "a"}, {"id": "b", "score": 2.5}, {"n": 7, "id": "c"}])
    assert t.read(columns=["id", "n", "score"]).sort_by("id").to_pylist() == [
        {"id": "a", "n": None, "score": None}, {"id": "b", "n": None, "score": 2.5},
        {"id": "c", "n": 7, "score": None}]


@pytest.mark.parametrize("data, message", [
    ([{"id": "a", "n": "seven"}],
     "rows: column 'n' cannot be converted to the column's type int32: Could not convert 'seven' with type str: "
     "tried to convert to int32"),
    ([{"id": "a", "n": 2**40}],
     "rows: column 'n' cannot be converted to the column's type int32: Value 1099511627776 too large to fit in "
     "C integer type"),
    ({"id": ["a", "b"], "n": [1]}, "columns: the columns have different lengths (id: 2, n: 1)"),
    ([{"id": "a", "nn": 1}], "input column 'nn' is not in the table schema (id, n, at, score)"),
    ([{"id": "a", "n": 1}, {"n": 2}], "record key column 'id' has 1 null value(s) (first at row 1)"),
    ([{"id": "a"}, "b"], "data must be a pyarrow Table, RecordBatch(Reader), iterable of RecordBatches, "
                         "pandas DataFrame, list of row dicts or dict of column lists"),
])
def test_bad_rows_name_the_problem_and_change_nothing(tmp_path, data, message):
    t = _table(tmp_path, num_buckets=1)
    t.upsert([{"id": "z", "n": 0}])
    before = [str(i) for i in t.timeline]
    with pytest.raises(SchemaError) as caught:
        t.upsert(data)
    assert str(caught.value) == message
    assert [str(i) for i in t.timeline] == before
    assert t.read(columns=["id", "n"]).to_pylist() == [{"id": "z", "n": 0}]


def test_a_misspelled_read_keyword_names_the_method_and_the_closest_keyword(tmp_path):
    t = _table(tmp_path, num_buckets=1)
    t.upsert([{"id": "a", "n": 1}])
    cases = [(t.read, {"colums": ["n"]}, "read() got an unexpected keyword argument 'colums'; did you mean 'columns'?"),
             (t.read, {"asof": "20200101"}, "read() got an unexpected keyword argument 'asof'; did you mean 'as_of'?"),
             (t.scan, {"filter": [("n", "=", 1)]},
              "scan() got an unexpected keyword argument 'filter'; did you mean 'filters'?"),
             (t.read, {"zzz": 1}, "read() got an unexpected keyword argument 'zzz'")]
    for method, kwargs, message in cases:
        with pytest.raises(TypeError) as caught:
            method(**kwargs)
        assert str(caught.value) == message
    with pytest.raises(TypeError) as caught:
        t.read_incremental("20200101", colums=["n"])
    assert str(caught.value) == "read_incremental() got an unexpected keyword argument 'colums'; did you mean 'columns'?"
    assert t.read(batch_size=1, max_rows_per_task=10, strategy="hash").to_pylist() == [
        {"id": "a", "n": 1, "at": None, "score": None}]  # (what plan_scan takes still passes)


def test_a_write_to_a_version_6_table_says_what_pyhudi_does_with_it(unzip_fixture):
    path = str(unzip_fixture("sample_table/mor/parquet/v6_nonpartitioned.zip"))
    t = pyhudi.open_table(path)
    before, rows = [str(i) for i in t.timeline], t.read().num_rows
    with pytest.raises(pyhudi.TimelineError) as caught:
        t.upsert(t.read(columns=["id", "name"]).slice(0, 1))
    assert str(caught.value) == (
        f"writing layout 1 timelines is not supported: the table at {path} has timeline layout 1 (table version 6), "
        "which pyhudi reads but does not write; upgrade it to version 8 with Apache Hudi to write it")
    assert [str(i) for i in pyhudi.open_table(path).timeline] == before and t.read().num_rows == rows

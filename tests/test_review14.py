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


EPOCH_MILLIS = {"hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
                "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd/HH"}


def test_a_string_epoch_column_takes_the_signs_javas_long_parse_takes():
    """Digits with a sign, as ``Long.parseLong`` reads them; a null is Hudi's 1 ms."""
    import pyarrow as pa

    from pyhudi.keygen import TimestampKeyGen

    keygen = TimestampKeyGen.from_properties(EPOCH_MILLIS, "ts", False)
    assert keygen.paths(pa.array(["+1705315500000", "-1", "1705315500000", None])).to_pylist() == [
        "2024/01/15/10", "1969/12/31/23", "2024/01/15/10", "1970/01/01/00"]


@pytest.mark.parametrize("value", [" 1705315500000", "1705315500000 ", "99999999999999999999", "+-1", "0x10"])
def test_a_string_that_spells_no_epoch_number_is_refused_naming_it(value):
    """Before the fix, values the error's own pattern took for numbers (whitespace, too many
    digits) raised IndexError from building the message."""
    import pyarrow as pa

    from pyhudi.errors import SchemaError
    from pyhudi.keygen import TimestampKeyGen

    keygen = TimestampKeyGen.from_properties(EPOCH_MILLIS, "ts", False)
    with pytest.raises(SchemaError) as info:
        keygen.paths(pa.array(["1705315500000", value, None]))
    assert str(info.value) == (f"partition column 'ts': value {value!r} is not an epoch number, as "
                               "hoodie.keygen.timebased.timestamp.type=EPOCHMILLISECONDS needs")


def test_a_read_filter_on_such_a_column_with_a_value_that_spells_no_number_reads_nothing(unzip_fixture):
    """Partition pruning formats the filter's value: one it cannot format prunes nothing (before
    the fix: IndexError from the read)."""
    path = unzip_fixture("sample_table/cow/v9_timebasedkeygen_epochmillis.zip")
    table = pyhudi.open_table(str(path))
    assert table.read(columns=["txn_id"], filters=[("ts_millis", "=", " 1705315500000")]).num_rows == 0
    assert table.read(columns=["txn_id"], filters=[("ts_millis", "=", "1705315500000")]).column(
        "txn_id").to_pylist() == ["TXN-002"]


@pytest.mark.parametrize("current,older", [
    ("hoodie.clean.policy", "hoodie.cleaner.policy"),
    ("hoodie.clean.commits.retained", "hoodie.cleaner.commits.retained"),
    ("hoodie.clean.hours.retained", "hoodie.cleaner.hours.retained"),
    ("hoodie.clean.fileversions.retained", "hoodie.cleaner.fileversions.retained"),
    ("hoodie.clean.incremental.enabled", "hoodie.cleaner.incremental.mode"),
    ("hoodie.clean.async.enabled", "hoodie.clean.async"),
])
def test_apache_hudi_1_cleaner_key_names_are_read_and_not_taken_for_typos(current, older):
    """Apache Hudi 1.x renamed its cleaner keys ``hoodie.cleaner.*`` → ``hoodie.clean.*`` (the
    old names are its alternatives). Before the fix pyhudi read only the old names: the new
    ones had no effect and were warned of as typos of the old ones."""
    from pyhudi.config.keys import lookup, misspelled_key

    assert lookup(current) is lookup(older) is not None
    assert misspelled_key(current) is None


def test_a_clean_honours_hoodie_clean_commits_retained_without_a_warning(tmp_path):
    import pyarrow as pa

    table = pyhudi.create_table(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("v", pa.string())]), "id",
                                table_type="COPY_ON_WRITE")
    for value in "abc":
        table.upsert(pa.table({"id": [1], "v": [value]}), options={"hoodie.clean.automatic": "false"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = table.plan_clean(options={"hoodie.clean.commits.retained": "1"})
    assert new == table.plan_clean(options={"hoodie.cleaner.commits.retained": "1"})
    assert len(new) == 2  # (the two older versions; the default keeps 10 commits: nothing to clean)
    assert table.plan_clean() == []


def test_a_read_with_default_keywords_checks_them_without_difflib_or_inspect(tmp_path):
    """``read`` passes ``with_meta`` (and ``batch_size``) on as keywords: checking them must not
    load the misspelling machinery (before the fix every read imported ``difflib`` and called
    ``inspect.signature``: a cold read imported one more module)."""
    import os
    import subprocess
    import sys

    import pyarrow as pa

    path = str(tmp_path / "t")
    pyhudi.create_table(path, pa.schema([("id", pa.int64()), ("v", pa.string())]), "id").upsert(
        pa.table({"id": [1], "v": ["a"]}))
    code = (f"import sys, pyhudi\nt = pyhudi.open_table({path!r})\n"
            "assert t.read().num_rows == 1 and t.read_incremental('20000101').num_rows == 1\n"
            "assert sum(b.num_rows for b in t.scan()) == 1\n"
            "print('difflib' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "False"
    table = pyhudi.open_table(path)
    with pytest.raises(TypeError, match=r"^read\(\) got an unexpected keyword argument 'colums'; did you mean "
                                        r"'columns'\?$"):
        table.read(colums=["id"])
    with pytest.raises(TypeError, match=r"^scan\(\) got an unexpected keyword argument 'batchsize'; did you mean "
                                        r"'batch_size'\?$"):
        table.scan(batchsize=10)


def test_a_dict_of_numpy_or_arrow_columns_is_taken_whole_not_value_by_value():
    """A dict of columns may hold numpy or Arrow arrays: they convert in one call, sharing their
    buffers (before the fix each was first made a Python list: ~300 ms a million numpy values,
    ~1 s a million Arrow values, against ~0)."""
    import numpy as np
    import pyarrow as pa

    from pyhudi.write.prepare import to_arrow_table

    schema = pa.schema([("id", pa.int64()), ("v", pa.float64()), ("s", pa.string())])
    ids, values, texts = np.arange(4), np.array([0.5, 1.5, np.nan, 2.5]), pa.array(["a", None, "c", "d"])
    table = to_arrow_table({"id": ids, "v": values, "s": texts}, schema)
    assert table.schema == schema
    assert table.column("id").to_pylist() == [0, 1, 2, 3] and table.column("s").to_pylist() == ["a", None, "c", "d"]
    assert str(table.column("v").to_pylist()) == "[0.5, 1.5, nan, 2.5]"
    assert table.column("v").chunk(0).buffers()[1].address == values.ctypes.data  # (no copy)
    assert table.column("s").chunk(0).buffers()[2].address == texts.buffers()[2].address
    with pytest.raises(Exception, match=r"column 'id' cannot be converted to the column's type int8"):
        to_arrow_table({"id": np.array([1 << 40])}, pa.schema([("id", pa.int8())]))

"""The full compaction's commit time as dictionary codes (:mod:`pyhudi.read.commit_codes`): the
merge of the updated family builds ``_hoodie_commit_time`` from the files' statistics when each
file's value is constant, and the compacted file keeps every row's commit time and sequence
number exactly, dictionary-encoded; every other read still returns strings."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.context import TableContext
from pyhudi.read import commit_codes
from pyhudi.read.commit_codes import CODES_TYPE
from pyhudi.read.file_slice import read_file_slices
from pyhudi.write import chunk_copy

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.float64()), ("b", pa.string()),
                    ("c", pa.float64())])
FAMILIES = {"fa": "a,b", "fc": "c"}
N = 1000
OPTIONS = {"hoodie.parquet.block.size": "4096"}  # several row groups per file
PER_FAMILY_FILES = {"hoodie.pyhudi.insert.full.row": "false"}


def loaded(tmp_path) -> tuple[pyhudi.Table, str]:
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES,
                            options=OPTIONS)
    inserted = t.bulk_insert(pa.table({"id": list(range(N)), "a": [i / 3 for i in range(N)],
                                       "b": [f"b{i}" for i in range(N)], "c": [float(i) for i in range(N)]},
                                      schema=SCHEMA), options=PER_FAMILY_FILES)
    return t, inserted


def update_fa(t: pyhudi.Table, ids: list[int], tag: str) -> str:
    return t.upsert(pa.table({"id": ids, "a": [float(-i) for i in ids], "b": [f"{tag}{i}" for i in ids]}))


@pytest.fixture
def built(monkeypatch):
    """Batches whose commit time the merge built from codes (rows per batch)."""
    rows = []
    real = commit_codes.CommitCodes.column

    def spy(self, start, end):
        rows.append(end - start)
        return real(self, start, end)

    monkeypatch.setattr(commit_codes.CommitCodes, "column", spy)
    return rows


def compacted_file(t: pyhudi.Table, instant: str) -> str:
    [path] = glob.glob(os.path.join(t.path, "**", f"*_{instant}.parquet"), recursive=True)
    return path


def fa_slice(t: pyhudi.Table):
    """Family fa's latest slice, its visibility and the table's context (as a compaction reads it)."""
    task = t.plan_scan().tasks[0]
    [fa] = [p.file_slice for p in task.families if p.scan.family == "fa"]
    return [fa], task.settings.visibility, TableContext.of(t, t.active_timeline())


def meta_by_id(table: pa.Table) -> dict[int, tuple[str, str]]:
    return dict(zip(table.column("id").to_pylist(),
                    zip(table.column("_hoodie_commit_time").to_pylist(), table.column("_hoodie_commit_seqno").to_pylist())))


def test_full_compaction_keeps_each_rows_commit_time_and_seqno_dictionary_encoded(tmp_path, built):
    t, inserted = loaded(tmp_path)
    first = update_fa(t, list(range(0, N, 10)), "x")
    second = update_fa(t, list(range(0, N, 25)), "y")  # rewrites some rows of the first update
    before = t.read(with_meta=True)
    assert before.schema.field("_hoodie_commit_time").type == pa.string()  # (a user's read: strings)

    instant = t.compact(full=True)

    assert sum(built) == N  # every row's commit time came from the codes
    path = compacted_file(t, instant)
    written = pq.read_table(path)
    assert written.schema.field("_hoodie_commit_time").type == pa.string()
    times = dict(zip(written.column("id").to_pylist(), written.column("_hoodie_commit_time").to_pylist()))
    assert times == {i: second if i % 25 == 0 else first if i % 10 == 0 else inserted for i in range(N)}
    assert meta_by_id(written) == meta_by_id(before)
    metadata = pq.ParquetFile(path).metadata
    leaf = [metadata.schema.column(j).path for j in range(metadata.num_columns)].index("_hoodie_commit_time")
    assert metadata.num_row_groups > 2
    for i in range(metadata.num_row_groups):
        chunk = metadata.row_group(i).column(leaf)
        assert "RLE_DICTIONARY" in chunk.encodings and chunk.dictionary_page_offset is not None
        values = pq.ParquetFile(path).read_row_group(i, ["_hoodie_commit_time"]).column(0).to_pylist()
        assert (chunk.statistics.min, chunk.statistics.max) == (min(values), max(values))  # codes used only
    assert meta_by_id(t.read(with_meta=True)) == meta_by_id(before)


def test_a_base_file_of_several_commit_times_is_merged_from_its_strings_with_the_same_result(tmp_path, built):
    t, inserted = loaded(tmp_path)
    first = update_fa(t, [1, 2, 3], "x")
    t.compact(families=["fa"])  # fa's base file now holds two commit times
    second = update_fa(t, [2, 500], "y")
    before = t.read(with_meta=True)

    instant = t.compact(full=True)

    assert built == []  # the base file does not prove one value: the merge read the strings
    written = pq.read_table(compacted_file(t, instant))
    times = dict(zip(written.column("id").to_pylist(), written.column("_hoodie_commit_time").to_pylist()))
    assert (times[0], times[1], times[2], times[3], times[500]) == (inserted, first, second, first, second)
    assert meta_by_id(written) == meta_by_id(before)


def test_reading_file_slices_with_commit_time_codes_gives_the_same_values_by_position_and_by_key(tmp_path, built):
    t, _ = loaded(tmp_path)
    update_fa(t, [4, 8], "x")
    fa, visibility, context = fa_slice(t)
    columns = ["_hoodie_commit_time", "_hoodie_commit_seqno", "id", "a"]
    plain = read_file_slices(context, fa, visibility, columns=columns).read_all()
    codes = read_file_slices(context, fa, visibility, columns=columns, commit_time_codes=True).read_all()
    assert plain.schema.field("_hoodie_commit_time").type == pa.string()
    assert codes.schema.field("_hoodie_commit_time").type == CODES_TYPE and sum(built) == N
    assert codes.cast(plain.schema).equals(plain)
    # new keys in a block: merged by key, the strings cast to codes on output
    t.upsert(pa.table({"id": [N + 1], "a": [1.0], "b": ["new"]}))
    (fa, visibility, context), built[:] = fa_slice(t), []
    plain = read_file_slices(context, fa, visibility, columns=columns).read_all()
    codes = read_file_slices(context, fa, visibility, columns=columns, commit_time_codes=True).read_all()
    assert built == [] and codes.num_rows == N + 1
    assert codes.schema.field("_hoodie_commit_time").type == CODES_TYPE and codes.cast(plain.schema).equals(plain)


def test_a_row_groups_dictionary_is_one_for_all_its_chunks():
    one = pa.DictionaryArray.from_arrays(pa.array([0, 0], pa.int32()), pa.array(["t1"]))
    two = pa.DictionaryArray.from_arrays(pa.array([1, 0], pa.int32()), pa.array(["t1", "t2"]))
    column = chunk_copy._one_dictionary(pa.chunked_array([one, two]))
    assert column.chunk(0).dictionary.equals(column.chunk(1).dictionary)
    assert column.to_pylist() == ["t1", "t1", "t2", "t1"]
    plain = pa.chunked_array([pa.array(["x"])])
    assert chunk_copy._one_dictionary(plain) is plain

"""Full compaction by column-chunk copy (issue 12's speed target): the families whose slices are
a base file without log files are copied byte for byte into the full-row base file; the rest is
merged and encoded as the decode path does. Each test compares the copy path's file with the
decode path's on the same slices, and checks the fallback wherever the copy cannot be proven right.
"""

from __future__ import annotations

import decimal
import glob
import os
import shutil
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.errors import CorruptFileError
from pyhudi.logformat.parquet_copy import Part, Source, SplicedFileWriter, read_footer
from pyhudi.services import compaction
from pyhudi.write import chunk_copy

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("s", pa.string()),
    ("d", pa.decimal128(10, 2)),
    ("l", pa.list_(pa.int32())),
    ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ("f", pa.float64()),
    ("g", pa.string()),
])
FAMILIES = {"fa": "s,d", "fb": "l,st", "fc": "f,g"}
SMALL_ROW_GROUPS = {"hoodie.parquet.block.size": "4096"}  # many row groups per family file
ENCODE_EVERY_COLUMN = {"hoodie.compaction.full.copy.chunks": "false"}
# The copy path copies chunks of per-family base files: the bulk inserts here write one base file
# per family (not the default full-row base file) so that there are family files to copy from.
PER_FAMILY_FILES = {"hoodie.pyhudi.insert.full.row": "false"}
N = 1200


def make_rows(n: int = N) -> pa.Table:
    return pa.table({
        "id": list(range(n)),
        "s": [None if i % 7 == 0 else f"s{i % 13}" for i in range(n)],
        "d": [decimal.Decimal(i) / 100 for i in range(n)],
        "l": [None if i % 5 == 0 else list(range(i % 4)) for i in range(n)],
        "st": [{"x": i, "y": None if i % 3 else f"y{i}"} for i in range(n)],
        "f": [i / 7 for i in range(n)],
        "g": [f"g{i}" for i in range(n)],
    }, schema=SCHEMA)


def loaded(tmp_path, name: str = "t", **kw) -> pyhudi.Table:
    t = pyhudi.create_table(str(tmp_path / name), SCHEMA, "id", num_buckets=1, column_families=FAMILIES,
                            options=SMALL_ROW_GROUPS, **kw)
    t.bulk_insert(make_rows(), options=PER_FAMILY_FILES)
    return t


@pytest.fixture
def copy_results(monkeypatch):
    """What every copy attempt returned (None: it fell back to the decode path)."""
    results = []
    attempt = chunk_copy.copy_full_compaction

    def spy(*args, **kwargs):
        results.append(attempt(*args, **kwargs))
        return results[-1]

    monkeypatch.setattr(compaction, "copy_full_compaction", spy)
    return results


def full_files(t: pyhudi.Table, instant: str) -> list[str]:
    return sorted(glob.glob(os.path.join(t.path, "**", f"*_{instant}.parquet"), recursive=True))


def decode_path_twin(t: pyhudi.Table, tmp_path, monkeypatch) -> pa.Table:
    """The full-row file the decode path writes from the same slices (a copy of the table)."""
    twin_path = str(tmp_path / "twin")
    shutil.copytree(t.path, twin_path)
    twin = pyhudi.open_table(twin_path)
    instant = twin.compact(full=True, options=ENCODE_EVERY_COLUMN)
    [path] = full_files(twin, instant)
    return pq.read_table(path)


def without_file_name(table: pa.Table) -> pa.Table:
    return table.drop_columns(["_hoodie_file_name"])


def test_a_family_without_logs_is_copied_and_the_file_equals_the_decode_paths(tmp_path, monkeypatch, copy_results):
    t = loaded(tmp_path)
    t.upsert(pa.table({"id": [5, 17, N - 1], "f": [1.5, None, 2.5], "g": ["G5", "G17", None]}))  # fc only
    t.upsert(pa.table({"id": [17, 300], "f": [7.0, 3.0], "g": ["again", "G300"]}))
    before = t.read(with_meta=True).sort_by("id")
    expected = decode_path_twin(t, tmp_path, monkeypatch)

    instant = t.compact(full=True)

    assert copy_results and copy_results[0] is not None and copy_results[0][0] == N
    [path] = full_files(t, instant)
    assert os.path.basename(path) == f"00000000-0000-0000-0000-000000000000-0_0-0-0_{instant}.parquet"
    written = pq.read_table(path)
    assert written.schema == expected.schema  # id REQUIRED, nested and decimal types as the decode path
    assert without_file_name(written).equals(without_file_name(expected))
    assert set(written.column("_hoodie_file_name").to_pylist()) == {os.path.basename(path)}
    assert without_file_name(t.read(with_meta=True).sort_by("id")).equals(without_file_name(before))
    row = t.read(filters=[("id", "=", 17)]).to_pylist()[0]
    assert (row["f"], row["g"], row["s"], row["d"]) == (7.0, "again", "s4", decimal.Decimal("0.17"))


def test_copied_chunks_are_the_source_bytes_and_keep_row_groups_and_statistics(tmp_path, copy_results):
    t = loaded(tmp_path)
    t.upsert(pa.table({"id": [3], "f": [0.5], "g": ["three"]}))
    source = next(p for p in glob.glob(os.path.join(t.path, "*_fa.parquet")))
    instant = t.compact(full=True)
    assert copy_results[0] is not None
    [path] = full_files(t, instant)
    src, out = pq.ParquetFile(source).metadata, pq.ParquetFile(path).metadata
    assert src.num_row_groups > 3 and out.num_row_groups == src.num_row_groups
    names = [src.schema.column(i).path for i in range(src.num_columns)]
    out_names = [out.schema.column(i).path for i in range(out.num_columns)]
    with open(source, "rb") as a, open(path, "rb") as b:
        for rg in range(src.num_row_groups):
            assert out.row_group(rg).num_rows == src.row_group(rg).num_rows
            assert out.row_group(rg).sorting_columns == (pq.SortingColumn(2),)  # the record key
            for column in ("id", "s", "d", "_hoodie_record_key"):
                x, y = src.row_group(rg).column(names.index(column)), out.row_group(rg).column(out_names.index(column))
                assert (y.compression, y.encodings, y.statistics) == (x.compression, x.encodings, x.statistics)
                a.seek(x.dictionary_page_offset or x.data_page_offset)
                b.seek(y.dictionary_page_offset or y.data_page_offset)
                assert a.read(x.total_compressed_size) == b.read(y.total_compressed_size)


def test_new_keys_in_a_familys_logs_are_caught_while_writing_and_the_decode_path_writes_the_file(
        tmp_path, monkeypatch, copy_results):
    t = loaded(tmp_path)
    t.upsert(pa.table({"id": [N + 5], "f": [9.0], "g": ["new"]}))  # a row only family fc has
    expected = decode_path_twin(t, tmp_path, monkeypatch)
    checked, deleted = [], []
    real_row_group = chunk_copy._row_group
    monkeypatch.setattr(chunk_copy, "_row_group", lambda *a: checked.append(a[-2]) or real_row_group(*a))
    real_delete = t.storage.__class__.delete
    monkeypatch.setattr(t.storage.__class__, "delete",
                        lambda self, relpath, **kw: deleted.append(relpath) or real_delete(self, relpath, **kw))
    instant = t.compact(full=True)
    assert copy_results == [None]
    [path] = full_files(t, instant)
    name = os.path.basename(path)
    assert checked and [p for p in deleted if p.endswith(".parquet")] == [name]  # keys of a row group differed
    assert without_file_name(pq.read_table(path)).equals(without_file_name(expected))
    assert t.read(filters=[("id", "=", N + 5)]).to_pylist() == [
        {"id": N + 5, "s": None, "d": None, "l": None, "st": None, "f": 9.0, "g": "new"}]


def test_logs_in_every_family_or_deletes_fall_back(tmp_path, copy_results):
    t = loaded(tmp_path)
    t.delete(pa.table({"id": [4, 8]}))  # a delete block in every family: nothing is final
    instant = t.compact(full=True)
    assert copy_results == [None]
    assert t.read().num_rows == N - 2
    assert full_files(t, instant)


def test_families_whose_base_files_hold_different_keys_fall_back(tmp_path, copy_results):
    t = loaded(tmp_path)
    t.upsert(pa.table({"id": [N + 1], "s": ["only fa"]}))
    assert t.compact(families=["fa"]) is not None  # fa's base now has one key more than fb's and fc's
    copy_results.clear()
    instant = t.compact(full=True)
    assert copy_results == [None]
    got = t.read().sort_by("id")
    assert got.num_rows == N + 1
    assert got.slice(N).to_pylist() == [{"id": N + 1, "s": "only fa", "d": None, "l": None, "st": None,
                                         "f": None, "g": None}]
    assert len(full_files(t, instant)) == 1


def test_a_family_added_by_alter_without_files_in_the_group_falls_back(tmp_path, copy_results):
    t = loaded(tmp_path)
    t.upsert(pa.table({"id": [1], "f": [0.5]}))
    t.alter({"hoodie.colFamily.fd": "e"}, new_columns={"e": pa.int32()})
    t.upsert(pa.table({"id": [2], "f": [0.25]}))
    instant = t.compact(full=True)
    assert copy_results == [None]  # fd has no file in the group: its column is all null
    assert len(full_files(t, instant)) == 1
    got = t.read().sort_by("id")
    assert got.column("e").null_count == N
    assert got.slice(1, 2).select(["id", "f"]).to_pylist() == [{"id": 1, "f": 0.5}, {"id": 2, "f": 0.25}]


def test_hudi_rs_reads_a_copied_full_row_file(tmp_path, copy_results):
    import hudi

    t = loaded(tmp_path)
    t.upsert(pa.table({"id": [5, 6], "f": [1.5, 2.5], "g": ["G5", "G6"]}))
    instant = t.compact(full=True)
    assert copy_results[0] is not None
    assert t.clean(options={"hoodie.cleaner.commits.retained": "1"}) is not None
    assert [os.path.basename(p) for p in glob.glob(os.path.join(t.path, "*.parquet"))] == [
        os.path.basename(p) for p in full_files(t, instant)]
    expected = t.read(with_meta=True).sort_by("id")
    got = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(t.path).build().read()).sort_by("id")
    assert got.select(SCHEMA.names).equals(expected.select(SCHEMA.names))
    assert got.column("_hoodie_commit_time").to_pylist() == expected.column("_hoodie_commit_time").to_pylist()
    assert got.column("_hoodie_file_name").to_pylist() == expected.column("_hoodie_file_name").to_pylist()


def test_commit_metadata_of_the_copy_path_matches_the_decode_paths(tmp_path, monkeypatch, copy_results):
    t = loaded(tmp_path)
    t.upsert(pa.table({"id": [0, N - 1], "f": [0.5, 0.75]}))
    twin_path = str(tmp_path / "twin2")
    shutil.copytree(t.path, twin_path)
    stats = {}
    for name, table in (("copy", t), ("decode", pyhudi.open_table(twin_path))):
        instant = table.compact(full=True, options=ENCODE_EVERY_COLUMN if name == "decode" else None)
        metadata = table.active_timeline().read_metadata(table.active_timeline().get(instant))
        [stat] = [s for part in metadata.partition_to_write_stats.values() for s in part]
        stats[name] = (stat.num_writes, stat.num_update_writes, stat.partition_path, stat.prev_commit)
    assert len(copy_results) == 1 and copy_results[0] is not None  # (the option skips the attempt)
    assert stats["copy"] == stats["decode"] and stats["copy"][0] == N


# ------------------------------------------------------------------------------ Parquet level
def test_spliced_file_from_two_files_reads_back_exactly(tmp_path):
    """Columns of two files with the same row groups make one file: dictionary pages, nulls,
    nested columns and several row groups, their statistics and codecs kept."""
    left = pa.table({"k": pa.array(range(5000), pa.int64()), "name": [f"n{i % 9}" for i in range(5000)],
                     "tags": [None if i % 4 == 0 else [i, i + 1] for i in range(5000)]})
    right = pa.table({"k": pa.array(range(5000), pa.int64()),
                      "p": pa.array([{"a": i, "b": None} for i in range(5000)]),
                      "v": [None if i % 3 == 0 else i * 0.5 for i in range(5000)]})
    pq.write_table(left, tmp_path / "l.parquet", row_group_size=1500, compression="snappy")
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=1500, compression="zstd")
    files = {n: pa.OSFile(str(tmp_path / f"{n}.parquet")) for n in ("l", "r")}
    footers = {n: read_footer(f, n) for n, f in files.items()}
    with open(tmp_path / "out.parquet", "wb") as out:
        writer = SplicedFileWriter(pa.PythonFile(out, mode="w"))
        for rg, rows in enumerate(footers["l"].row_counts()):
            parts = [Part(c, footers["l"], Source(files["l"]), rg) for c in ("k", "name", "tags")]
            parts += [Part(c, footers["r"], Source(files["r"]), rg) for c in ("p", "v")]
            writer.add_row_group(parts, rows, None)
        writer.close(footers["l"], {b"origin": b"test"}, 5000)
    got = pq.read_table(tmp_path / "out.parquet")
    assert got.to_pylist() == left.append_column("p", right.column("p")).append_column("v", right.column("v")).to_pylist()
    meta = pq.ParquetFile(tmp_path / "out.parquet").metadata
    assert meta.metadata == {b"origin": b"test"}
    assert meta.num_row_groups == 4
    assert meta.row_group(1).column(4).compression == "ZSTD"
    assert meta.row_group(1).column(4).statistics == pq.ParquetFile(tmp_path / "r.parquet").metadata.row_group(1).column(2).statistics


def test_spliced_file_into_a_local_descriptor_copies_through_its_buffer(tmp_path):
    table = pa.table({"a": list(range(3000)), "b": [str(i) for i in range(3000)]})
    pq.write_table(table, tmp_path / "src.parquet", row_group_size=1000)
    path = str(tmp_path / "src.parquet")
    handle, fd = pa.OSFile(path), os.open(path, os.O_RDONLY)
    footer = read_footer(handle, path)
    out = os.open(tmp_path / "copy.parquet", os.O_WRONLY | os.O_CREAT)
    writer = SplicedFileWriter(out)
    for rg, rows in enumerate(footer.row_counts()):
        writer.add_row_group([Part("b", footer, Source(handle, fd), rg), Part("a", footer, Source(handle, fd), rg)],
                             rows, None)
    writer.close(footer, {}, 3000)
    os.close(out)
    os.close(fd)
    assert pq.read_table(tmp_path / "copy.parquet").to_pylist() == table.select(["b", "a"]).to_pylist()


def test_a_file_without_a_parquet_footer_is_reported(tmp_path):
    (tmp_path / "bad.parquet").write_bytes(b"PAR1" + b"\0" * 40 + b"nope")
    with pytest.raises(CorruptFileError, match="bad.parquet: not a Parquet file"):
        read_footer(pa.OSFile(str(tmp_path / "bad.parquet")), "bad.parquet")
    (tmp_path / "garbled.parquet").write_bytes(b"PAR1" + b"\xff" * 40 + (40).to_bytes(4, "little") + b"PAR1")
    with pytest.raises(CorruptFileError, match="garbled.parquet: unreadable Parquet footer"):
        read_footer(pa.OSFile(str(tmp_path / "garbled.parquet")), "garbled.parquet")


def test_families_with_other_meta_values_are_read_for_them_and_rows_keep_their_newest_meta(
        tmp_path, monkeypatch, copy_results):
    """fa compacted on its own after an update: its base file's commit times differ from fb's, so
    the merge reads fa's meta values too (each row's newest family version wins), as the decode path."""
    t = pyhudi.create_table(str(tmp_path / "m"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
    t.bulk_insert(make_rows(), options=PER_FAMILY_FILES)
    updated = t.upsert(pa.table({"id": [10, 11], "s": ["S10", "S11"]}))
    assert t.compact(families=["fa"]) is not None
    later = t.upsert(pa.table({"id": [11, 12], "f": [0.1, 0.2]}))
    expected = decode_path_twin(t, tmp_path, monkeypatch)
    reads = []
    real_read = chunk_copy.read_file_slices
    monkeypatch.setattr(chunk_copy, "read_file_slices",
                        lambda context, slices, *a, **k: reads.append(sorted(s.family for s in slices))
                        or real_read(context, slices, *a, **k))
    copy_results.clear()
    instant = t.compact(full=True)
    assert copy_results[0] is not None and reads == [["fa", "fb", "fc"]]  # fa and fb stand for themselves
    [path] = full_files(t, instant)
    written = pq.read_table(path)
    assert without_file_name(written).equals(without_file_name(expected))
    times = dict(zip(written.column("id").to_pylist(), written.column("_hoodie_commit_time").to_pylist()))
    assert (times[10], times[11], times[12]) == (updated, later, later)


def test_spark_parquet_reader_reads_a_copied_full_row_file(tmp_path, spark, copy_results):
    """parquet-mr's reader (what Java Hudi and Spark read base files with) takes the spliced
    footer: exact rows, nested and decimal columns included."""
    t = loaded(tmp_path)
    t.upsert(pa.table({"id": [7, 8], "f": [0.5, None], "g": ["G7", None]}))
    instant = t.compact(full=True)
    assert copy_results[0] is not None
    [path] = full_files(t, instant)
    expected = pq.read_table(path).sort_by("id").to_pylist()
    got = [r.asDict(recursive=True) for r in spark.read.parquet(path).orderBy("id").collect()]
    assert got == expected


def test_a_file_group_whose_records_were_all_deleted_falls_back_and_the_others_are_copied(tmp_path, copy_results):
    """Family compaction leaves an empty base file where every record was deleted; the full
    compaction after it copies the groups that hold rows and writes the empty one by decoding."""
    schema = pa.schema([pa.field("k", pa.string(), nullable=False), ("a", pa.int64()), ("b", pa.float64())])
    t = pyhudi.create_table(str(tmp_path / "e"), schema, "k", num_buckets=4, column_families={"fa": "a", "fb": "b"})
    keys = [f"k{i}" for i in range(12)]
    t.upsert(pa.table({"k": keys, "a": list(range(12)), "b": [i / 2 for i in range(12)]}, schema=schema),
             options={"hoodie.pyhudi.insert.full.row": "false"})  # (per-family files, compacted per family)
    by_group: dict[str, list[str]] = {}
    for row in t.read(columns=["k"], with_meta=True).to_pylist():
        by_group.setdefault(row["_hoodie_file_name"].split("_")[0], []).append(row["k"])
    doomed = sorted(by_group.values(), key=len)[0]
    t.delete(pa.table({"k": doomed}, schema=pa.schema([schema.field("k")])))
    t.compact(families=["fa", "fb"])
    t.compact(full=True)
    expected = [{"k": k, "a": i, "b": i / 2} for i, k in enumerate(keys) if k not in doomed]
    assert t.read().sort_by("k").to_pylist() == sorted(expected, key=lambda r: r["k"])
    assert copy_results.count(None) == 1 and len(copy_results) == len(by_group)


# ------------------------------------------------------------------------------ pipelined output
def test_the_pipelined_output_writes_the_same_bytes_as_the_sequential_one(tmp_path, monkeypatch):
    """By default each row group is encoded and copied on an output thread while the next one
    merges; the file is byte for byte the one written row group after row group in one thread
    (same instant, same file name), and reads back as the table's rows."""
    t = loaded(tmp_path)
    t.upsert(pa.table({"id": [5, 17, N - 1], "f": [1.5, None, 2.5], "g": ["G5", "G17", None]}))
    t.upsert(pa.table({"id": [17, 300], "f": [7.0, 3.0], "g": ["again", "G300"]}))
    before = t.read(with_meta=True).sort_by("id")
    sequential = {}
    attempt = chunk_copy.copy_full_compaction
    threads = []
    real_add = SplicedFileWriter.add_row_group
    monkeypatch.setattr(SplicedFileWriter, "add_row_group",
                        lambda *a: threads.append(threading.current_thread().name) or real_add(*a))

    def both(context, slices, visibility, relpath, file_name, columns):
        sequential["result"] = attempt(context, slices, visibility, relpath + ".sequential", file_name, columns,
                                       pipelined=False)
        return attempt(context, slices, visibility, relpath, file_name, columns)  # (the default: pipelined)

    monkeypatch.setattr(compaction, "copy_full_compaction", both)
    instant = t.compact(full=True)
    [path] = full_files(t, instant)
    with open(path, "rb") as a, open(path + ".sequential", "rb") as b:
        pipelined_bytes, sequential_bytes = a.read(), b.read()
    assert pipelined_bytes == sequential_bytes
    assert sequential["result"] == (N, "0", "999")  # (first and last record keys, as strings sort)
    groups = pq.ParquetFile(path).metadata.num_row_groups
    assert groups > 3  # (several row groups in flight one after another)
    assert threads[:groups] == ["MainThread"] * groups  # sequential: in the caller's thread
    assert len(threads) == 2 * groups and all(n.startswith("pyhudi-compaction-output") for n in threads[groups:])
    os.remove(path + ".sequential")
    assert os.path.basename(path) == f"00000000-0000-0000-0000-000000000000-0_0-0-0_{instant}.parquet"
    assert without_file_name(t.read(with_meta=True).sort_by("id")).equals(without_file_name(before))
    assert set(pq.read_table(path).column("_hoodie_file_name").to_pylist()) == {os.path.basename(path)}


def test_a_failure_on_the_output_thread_fails_the_compaction_and_leaves_the_table_as_it_was(
        tmp_path, monkeypatch):
    t = loaded(tmp_path)
    t.upsert(pa.table({"id": [3, 4], "f": [0.5, 0.25]}))
    before = t.read(with_meta=True).sort_by("id")
    files_before = sorted(os.listdir(t.path))
    real = SplicedFileWriter.add_row_group
    calls = []

    def failing(writer, parts, rows, sorting):  # (runs on the output thread)
        calls.append(threading.current_thread().name)
        if len(calls) == 3:
            raise OSError("disk full (test)")
        return real(writer, parts, rows, sorting)

    monkeypatch.setattr(SplicedFileWriter, "add_row_group", failing)
    instant = t.schedule_compaction(full=True)
    with pytest.raises(OSError, match="disk full"):
        t.run_compaction(instant)
    assert len(calls) == 3 and all(n.startswith("pyhudi-compaction-output") for n in calls)  # none after it
    assert sorted(os.listdir(t.path)) == files_before  # the partial full-row file is gone
    assert t.read(with_meta=True).sort_by("id").equals(before)
    assert t.active_timeline().reload().get(instant).is_requested
    monkeypatch.setattr(SplicedFileWriter, "add_row_group", real)
    assert t.run_compaction(instant) is not None  # executed again from its plan
    [path] = full_files(t, instant)
    assert without_file_name(t.read(with_meta=True).sort_by("id")).equals(without_file_name(before))
    assert pq.read_table(path).num_rows == N


def test_a_default_full_row_base_is_copied_from_and_read_alike(tmp_path, copy_results):
    """A bulk insert with default options writes one full-row base file per group; a full
    compaction after a one-family update copies the other families' chunks out of it (not the
    decode path), and the result reads as before — by pyhudi and by hudi-rs."""
    import hudi

    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES,
                            options=SMALL_ROW_GROUPS)
    t.bulk_insert(make_rows())
    [[base]] = [[b.name for b in g.base_files] for g in t.file_groups()]
    assert base.family is None
    t.upsert(pa.table({"id": [5, 6], "f": [1.5, 2.5], "g": ["G5", "G6"]}))
    expected = t.read().sort_by("id")
    instant = t.compact(full=True)
    assert len(copy_results) == 1 and copy_results[0] is not None and copy_results[0][0] == N
    assert t.read().sort_by("id").equals(expected)
    assert t.clean(options={"hoodie.cleaner.commits.retained": "1"}) is not None
    assert [os.path.basename(p) for p in glob.glob(os.path.join(t.path, "*.parquet"))] == [
        os.path.basename(p) for p in full_files(t, instant)]
    got = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(t.path).build().read()).sort_by("id")
    assert got.select(SCHEMA.names).equals(expected.select(SCHEMA.names))


def test_the_merge_takes_larger_batches_and_row_groups_are_encoded_into_one_buffer(
        tmp_path, monkeypatch, copy_results):
    """The merged family is read in batches of twice the scan's default rows when the output's
    row groups are that large (else the default), and every row group's fresh chunks are
    encoded into the one buffer of the file (each is written out before the next is encoded):
    the file still equals the decode path's."""
    assert chunk_copy._merge_batch_rows([155_729, 44_271]) == 2 * chunk_copy.DEFAULT_BATCH_SIZE
    assert chunk_copy._merge_batch_rows([20_000, 30_000]) == 30_000
    assert chunk_copy._merge_batch_rows([100, 300]) == chunk_copy.DEFAULT_BATCH_SIZE
    t = loaded(tmp_path)
    t.upsert(pa.table({"id": [5, 17, N - 1], "f": [1.5, None, 2.5], "g": ["G5", "G17", None]}))
    expected = decode_path_twin(t, tmp_path, monkeypatch)
    batch_sizes, targets, encoded = [], [], []
    real_read, real_encode = chunk_copy.read_file_slices, chunk_copy.encode_parquet

    def read(*args, **kwargs):
        batch_sizes.append(kwargs["batch_size"])
        return real_read(*args, **kwargs)

    def encode(table, options, into=None):
        targets.append(into)
        encoded.append(real_encode(table, options, into=into))
        return encoded[-1]

    monkeypatch.setattr(chunk_copy, "read_file_slices", read)
    monkeypatch.setattr(chunk_copy, "encode_parquet", encode)
    instant = t.compact(full=True)

    assert copy_results[0] is not None and copy_results[0][0] == N
    [path] = full_files(t, instant)
    groups = [g.num_rows for g in (pq.ParquetFile(path).metadata.row_group(i)
                                   for i in range(pq.ParquetFile(path).metadata.num_row_groups))]
    assert len(groups) > 3 and batch_sizes == [chunk_copy.DEFAULT_BATCH_SIZE]  # (row groups of ~60 rows)
    assert len(encoded) == len(groups) and all(target is targets[0] for target in targets)
    assert {buffer.address for buffer in encoded} == {targets[0].address}
    assert without_file_name(pq.read_table(path)).equals(without_file_name(expected))

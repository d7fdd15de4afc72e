"""Damage is never silent (issue 11 item 6): a damaged table gives a clear error naming the
damaged file (or the documented recovery), never rows other than a committed snapshot's."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pyhudi import create_table, open_table
from pyhudi.config.table import BACKUP_FILE, PROPERTIES_FILE
from pyhudi.errors import ConfigError, CorruptFileError, PathEscapeError, ReadError, SchemaError

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])


def _bucketed(path) -> object:
    table = create_table(str(path), SCHEMA, "id", num_buckets=2, ordering_field=None)
    table.upsert(pa.table({"id": [1, 2], "v": ["a", "b"], "p": ["x", "y"]}, schema=SCHEMA))
    return table


def _rows(table, **kwargs) -> list[tuple]:
    out = table.read(**kwargs).sort_by("id")
    return list(zip(*(out.column(n).to_pylist() for n in out.column_names)))


# ----------------------------------------------------------------------------- hoodie.properties
def test_truncated_properties_uses_the_valid_backup(tmp_path):
    table = _bucketed(tmp_path / "t")
    good = table.storage.read(PROPERTIES_FILE)
    table.storage.write(BACKUP_FILE, good)
    cut = good[: good.rindex(b"hoodie.table.checksum")]  # the checksum line (written last) is lost
    table.storage.write(PROPERTIES_FILE, cut)
    reopened = open_table(str(tmp_path / "t"))
    assert reopened.num_buckets == 2
    assert _rows(reopened) == [(1, "a", "x"), (2, "b", "y")]
    reopened.upsert(pa.table({"id": [1], "v": ["A"], "p": ["x"]}, schema=SCHEMA))  # in the bucketed layout
    table.storage.write(PROPERTIES_FILE, good)  # the original restored: still one row per key
    assert _rows(open_table(str(tmp_path / "t"))) == [(1, "A", "x"), (2, "b", "y")]


def test_truncated_properties_without_backup_is_an_error_naming_the_file(tmp_path):
    table = _bucketed(tmp_path / "t")
    good = table.storage.read(PROPERTIES_FILE)
    table.storage.write(PROPERTIES_FILE, good[: good.rindex(b"hoodie.table.checksum")])
    with pytest.raises(ConfigError, match=r"corrupt and no valid backup.*t/\.hoodie/hoodie\.properties: "
                                          r"hoodie\.table\.checksum is missing"):
        open_table(str(tmp_path / "t"))
    table.storage.write(PROPERTIES_FILE, good)  # restored: the table is as it was
    assert _rows(open_table(str(tmp_path / "t"))) == [(1, "a", "x"), (2, "b", "y")]


def test_flipped_byte_in_properties_is_a_clear_error(tmp_path):
    table = _bucketed(tmp_path / "t")
    good = bytearray(table.storage.read(PROPERTIES_FILE))
    at = good.index(b"hoodie.table.name=") + len("hoodie.table.name=")
    good[at] ^= 0x80  # not UTF-8 any more
    table.storage.write(PROPERTIES_FILE, bytes(good))
    with pytest.raises(ConfigError, match=rf"hoodie\.properties: byte {at} is not UTF-8 text"):
        open_table(str(tmp_path / "t"))
    good[at] ^= 0x80 ^ 0x01  # still text, but another table name: the checksum catches it
    table.storage.write(PROPERTIES_FILE, bytes(good))
    with pytest.raises(ConfigError, match=r"hoodie\.table\.checksum=\d+ does not match CRC32"):
        open_table(str(tmp_path / "t"))


def test_corrupt_backup_and_corrupt_original_names_both(tmp_path):
    table = _bucketed(tmp_path / "t")
    table.storage.write(PROPERTIES_FILE, b"hoodie.table.name=t\n")
    table.storage.write(BACKUP_FILE, b"\xff\xfe")
    with pytest.raises(ConfigError, match=r"hoodie\.properties: the required key hoodie\.table\.version is "
                                          r"missing.*hoodie\.properties\.backup: byte 0 is not UTF-8"):
        open_table(str(tmp_path / "t"))


def test_pre_checksum_table_versions_need_no_checksum(tmp_path):
    from pyhudi.config.table import _read_valid
    from pyhudi.storage.fs import Storage

    storage = Storage(str(tmp_path / "old"))
    storage.write(PROPERTIES_FILE, b"hoodie.table.name=t\nhoodie.table.type=COPY_ON_WRITE\nhoodie.table.version=2\n")
    assert _read_valid(storage, PROPERTIES_FILE).name == "t"


# ----------------------------------------------------------------------------- reserved values
def _partitioned(path, **options) -> object:
    table = create_table(str(path), SCHEMA, "id", partition_fields="p", options=options or None)
    table.upsert(pa.table({"id": [1, 2], "v": ["a", "b"], "p": ["x", None]}, schema=SCHEMA))
    return table


def _listing(table) -> list[str]:
    return sorted(i.path for i in table.storage.walk_files(""))


@pytest.mark.parametrize("value", [".hoodie", ".hoodie_partition_metadata", ".hoodie-x"])
def test_partition_value_under_the_metafolder_is_refused(tmp_path, value):
    table = _partitioned(tmp_path / "t")
    before, timeline = _listing(table), [i.file_name(2) for i in table.timeline]
    with pytest.raises(PathEscapeError, match=rf"partition path '\{value}' built from columns p cannot be used: "
                                              r"a partition folder may not start with '\.hoodie'"):
        table.upsert(pa.table({"id": [3], "v": ["c"], "p": [value]}, schema=SCHEMA))
    assert _listing(table) == before and [i.file_name(2) for i in table.timeline] == timeline
    assert _rows(table) == [(1, "a", "x"), (2, "b", None)]


def test_hive_style_partition_value_starting_with_a_dot_is_an_ordinary_folder(tmp_path):
    table = _partitioned(tmp_path / "t", **{"hoodie.datasource.write.hive_style_partitioning": "true"})
    # hive style: the folder is p=.hoodie, not .hoodie
    table.upsert(pa.table({"id": [3], "v": ["c"], "p": [".hoodie"]}, schema=SCHEMA))
    assert _rows(table) == [(1, "a", "x"), (2, "b", None), (3, "c", ".hoodie")]


def test_default_partition_literal_as_a_value_is_refused(tmp_path):
    table = _partitioned(tmp_path / "t")
    with pytest.raises(SchemaError, match=r"partition column 'p' has the value '__HIVE_DEFAULT_PARTITION__', "
                                          r"which is the default partition of null and empty values"):
        table.upsert(pa.table({"id": [3], "v": ["c"], "p": ["__HIVE_DEFAULT_PARTITION__"]}, schema=SCHEMA))
    # so overwriting the default partition (null / "") removes exactly the null-valued rows
    table.insert_overwrite(partitions=[{"p": ""}])
    assert _rows(table) == [(1, "a", "x")]


def test_empty_single_record_key_is_refused(tmp_path):
    schema = pa.schema([("k", pa.string()), ("v", pa.int64())])
    table = create_table(str(tmp_path / "t"), schema, "k")
    table.upsert(pa.table({"k": ["a"], "v": [1]}, schema=schema))
    before = _listing(table)
    with pytest.raises(SchemaError, match=r"record key column 'k' is empty at row 1: "
                                          r"a record key cannot be null or empty"):
        table.upsert(pa.table({"k": ["b", ""], "v": [2, 3]}, schema=schema))
    with pytest.raises(SchemaError, match=r"record key column 'k' is empty at row 0"):
        table.delete(pa.table({"k": [""]}, schema=pa.schema([("k", pa.string())])))
    assert _listing(table) == before
    assert table.read().to_pylist() == [{"k": "a", "v": 1}]


def test_composite_key_may_be_empty_in_some_fields_but_not_all(tmp_path):
    schema = pa.schema([("k1", pa.string()), ("k2", pa.string()), ("v", pa.int64())])
    table = create_table(str(tmp_path / "t"), schema, ["k1", "k2"])
    table.upsert(pa.table({"k1": ["", "a"], "k2": ["b", ""], "v": [1, 2]}, schema=schema))
    with pytest.raises(SchemaError, match=r"record key columns 'k1', 'k2' is empty at row 0"):
        table.upsert(pa.table({"k1": [""], "k2": [""], "v": [3]}, schema=schema))
    out = table.read(with_meta=True).sort_by("v")
    assert out.column("_hoodie_record_key").to_pylist() == ["k1:__empty__,k2:b", "k1:a,k2:__empty__"]


# ----------------------------------------------------------------------------- as_of and windows
def test_as_of_the_instant_a_write_returned_includes_that_write(tmp_path):
    table = _partitioned(tmp_path / "t")
    first = table.timeline[-1].requested_time
    second = table.upsert(pa.table({"id": [1], "v": ["A"], "p": ["x"]}, schema=SCHEMA))
    third = table.upsert(pa.table({"id": [3], "v": ["c"], "p": ["x"]}, schema=SCHEMA))
    assert _rows(table, as_of=first) == [(1, "a", "x"), (2, "b", None)]
    assert _rows(table, as_of=second) == [(1, "A", "x"), (2, "b", None)]
    assert _rows(table, as_of=third) == _rows(table)
    assert [len(table.file_groups(as_of=t)) for t in (first, second, third)] == [2, 2, 3]
    # the instant a write returned as begin: rows changed after that write
    changed = table.read_incremental(second)
    assert changed.to_pylist() == [{"id": 3, "v": "c", "p": "x"}]
    assert table.read_incremental(first, second).to_pylist() == [{"id": 1, "v": "A", "p": "x"}]


def test_incremental_begin_after_end_is_an_error(tmp_path):
    table = _partitioned(tmp_path / "t")
    second = table.upsert(pa.table({"id": [1], "v": ["A"], "p": ["x"]}, schema=SCHEMA))
    first = table.timeline[0].requested_time
    with pytest.raises(ReadError, match=r"incremental query: begin '\d{17}' is after end '\d{17}'"):
        table.read_incremental(second, first)
    assert table.read_incremental(second, second).num_rows == 0  # an empty window is not an error


# ----------------------------------------------------------------------------- data files
def _mor_with_update(path):
    """Two commits: a base file with rows 1, 2, then a log file updating row 1."""
    table = create_table(str(path), SCHEMA, "id")
    table.upsert(pa.table({"id": [1, 2], "v": ["a", "b"], "p": ["x", "y"]}, schema=SCHEMA))
    table.upsert(pa.table({"id": [1], "v": ["A"], "p": ["x"]}, schema=SCHEMA))
    (log,) = [i.path for i in table.storage.walk_files("") if ".log." in i.path]
    (base,) = [i.path for i in table.storage.walk_files("") if i.path.endswith(".parquet")]
    return table, log, base


def _rewrite(table, relpath, change) -> None:
    data = bytearray(table.storage.read(relpath))
    table.storage.write(relpath, bytes(change(data)))


def test_log_file_cut_short_is_an_error_naming_it(tmp_path):
    table, log, _ = _mor_with_update(tmp_path / "t")
    assert _rows(table) == [(1, "A", "x"), (2, "b", "y")]
    _rewrite(table, log, lambda d: d[:-10])
    with pytest.raises(CorruptFileError, match=rf"log file {log} of the table at .*/t is \d+ bytes, but completed "
                                               r"commits wrote \d+: it was cut short"):
        table.read()


def test_log_file_cut_short_with_the_skip_option_warns_and_reads_the_rest(tmp_path):
    table, log, _ = _mor_with_update(tmp_path / "t")
    _rewrite(table, log, lambda d: d[:-10])
    with pytest.warns(UserWarning) as caught:
        rows = _rows(table, options={"hoodie.pyhudi.read.corrupt.blocks.skip": "true"})
    assert rows == [(1, "a", "x"), (2, "b", "y")]  # the lost block's update is gone, as warned
    messages = [str(w.message) for w in caught]
    assert any(f"log file {log}" in m and "cut short" in m for m in messages)
    assert any(f"log file {log}" in m and "corrupt block at offset 0" in m for m in messages)


def test_flipped_byte_in_a_committed_log_block_is_an_error_naming_it(tmp_path):
    table, log, _ = _mor_with_update(tmp_path / "t")

    def flip_block_length(d):
        d[6 + 7] ^= 0x01  # the low byte of the first block's length: the framing no longer adds up
        return d

    _rewrite(table, log, flip_block_length)
    with pytest.raises(CorruptFileError, match=rf"log file {log} of the table at .*/t has a corrupt block at "
                                               r"offset 0 \(\d+ bytes\) inside what a completed commit wrote"):
        table.read()


def test_flipped_byte_in_log_block_content_is_a_corrupt_file_error(tmp_path):
    table, log, _ = _mor_with_update(tmp_path / "t")
    from pyhudi.logformat import LogReader

    (block,) = LogReader(table.storage, log).blocks()
    footer_end = block._content.offset + block._content.length - 8  # the block's Parquet footer ends here

    def flip_content(d):
        for i in range(footer_end - 32, footer_end):  # same size, framing intact, footer bytes bad
            d[i] ^= 0xFF
        return d

    _rewrite(table, log, flip_content)
    with pytest.raises(CorruptFileError, match=rf"data file {log} of the table at .*/t is corrupt: "):
        table.read()


def test_torn_tail_no_commit_wrote_is_skipped_silently(tmp_path, recwarn):
    table, log, _ = _mor_with_update(tmp_path / "t")
    _rewrite(table, log, lambda d: d + b"#HUDI#\x00\x00\x00\x00\x00\x00\x01\x00torn")  # a failed append
    assert _rows(table) == [(1, "A", "x"), (2, "b", "y")]
    assert not [w for w in recwarn if "corrupt" in str(w.message)]


def test_missing_base_file_is_an_error_naming_it(tmp_path):
    table = create_table(str(tmp_path / "t"), SCHEMA, "id", table_type="COPY_ON_WRITE")
    table.upsert(pa.table({"id": [1, 2], "v": ["a", "b"], "p": ["x", "y"]}, schema=SCHEMA))
    table.upsert(pa.table({"id": [1], "v": ["A"], "p": ["x"]}, schema=SCHEMA))
    newest = max((i.path for i in table.storage.walk_files("") if i.path.endswith(".parquet")),
                 key=lambda p: p.rsplit("_", 1)[1])
    table.storage.delete(newest)  # the older version of the file group is still there
    with pytest.raises(CorruptFileError, match=rf"data file {newest} of the table at .*/t is missing: commit "
                                               r"\d{17} wrote it and it was neither replaced nor cleaned"):
        table.read()


def test_missing_file_of_a_pruned_partition_does_not_fail_other_partitions(tmp_path):
    table = _partitioned(tmp_path / "t")
    (gone,) = [i.path for i in table.storage.walk_files("") if i.path.startswith("x/") and ".parquet" in i.path
               or i.path.startswith("x/.") and ".log." in i.path]
    table.storage.delete(gone)
    assert _rows(table, filters=[("p", "=", "y")]) == []  # (null partition: no row has p = "y")
    with pytest.raises(CorruptFileError, match=rf"data file {gone} .* is missing"):
        table.read(filters=[("p", "=", "x")])


@pytest.mark.parametrize("change", [lambda d: d + b"\x00", lambda d: d[:-10]], ids=["grown", "cut"])
def test_base_file_grown_or_cut_short_is_a_corrupt_file_error(tmp_path, change):
    table, _, base = _mor_with_update(tmp_path / "t")
    _rewrite(table, base, change)
    with pytest.raises(CorruptFileError, match=rf"data file {base} of the table at .*/t is corrupt: "):
        table.read()


def test_flipped_bytes_in_a_base_file_footer_are_a_corrupt_file_error(tmp_path):
    table, _, base = _mor_with_update(tmp_path / "t")

    def flip_footer(d):
        for i in range(len(d) - 40, len(d) - 8):  # inside the thrift footer: same size, bad bytes
            d[i] ^= 0xFF
        return d

    _rewrite(table, base, flip_footer)
    with pytest.raises(CorruptFileError, match=rf"data file {base} of the table at .*/t is corrupt: "):
        table.read()


# ----------------------------------------------------------------------------- Apache Hudi's tables
CORRUPT_TAIL = "quickstart_trips_table/mor/avro/table_corrupt_tail_block.zip"
TAIL_LOG = ".5ae929e7-c845-4c91-8877-d5d0c85cdef2-0_20260607061228578.log.1_0-44-80"  # 902 bytes, 884 committed
FIRST_LOG = ".5ae929e7-c845-4c91-8877-d5d0c85cdef2-0_20260607061226267.log.1_0-30-51"


def _hudi_rows(table, **kwargs) -> list[dict]:
    return table.read(**kwargs).sort_by("key").to_pylist()


def test_hudi_torn_tail_beyond_the_commit_is_skipped_silently(unzip_fixture, recwarn):
    table = open_table(str(unzip_fixture(CORRUPT_TAIL)))
    assert table.storage.size(TAIL_LOG) == 902
    assert len(_hudi_rows(table)) == 4
    assert not [w for w in recwarn if "corrupt" in str(w.message)]


def test_hudi_log_cut_into_its_committed_bytes_is_an_error(unzip_fixture):
    table = open_table(str(unzip_fixture(CORRUPT_TAIL)))
    healthy = _hudi_rows(table)
    _rewrite(table, TAIL_LOG, lambda d: d[:874])  # 10 bytes short of what the commit wrote
    with pytest.raises(CorruptFileError, match=rf"log file {TAIL_LOG} .* is 874 bytes, "
                                               r"but completed commits wrote 884"):
        table.read()
    with pytest.warns(UserWarning) as caught:
        skipped = _hudi_rows(table, options={"hoodie.pyhudi.read.corrupt.blocks.skip": True})
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2 and all(m.startswith(f"log file {TAIL_LOG} of the table at ") for m in messages)
    assert "is 874 bytes, but completed commits wrote 884: it was cut short; reading the blocks left" in messages[0]
    assert "has a corrupt block at offset 0 (874 bytes) inside what a completed commit wrote; skipped" in messages[1]
    before_last = table.timeline[-2].completion_time  # the state the lost block's commit started from
    assert skipped == _hudi_rows(table, as_of=before_last) != healthy


def test_hudi_avro_block_with_flipped_bytes_is_a_corrupt_file_error(unzip_fixture):
    from pyhudi.logformat import LogReader

    table = open_table(str(unzip_fixture(CORRUPT_TAIL)))
    (block,) = LogReader(table.storage, FIRST_LOG).blocks()
    middle = block._content.offset + block._content.length // 2

    def flip(d):
        for i in range(middle, middle + 16):
            d[i] ^= 0xFF
        return d

    _rewrite(table, FIRST_LOG, flip)
    with pytest.raises(CorruptFileError, match=rf"data file {FIRST_LOG} of the table at .* is corrupt: "):
        table.read()


# ----------------------------------------------------------------------------- writes over damage
def _flip_footer(d):
    for i in range(len(d) - 40, len(d) - 8):
        d[i] ^= 0xFF
    return d


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_upsert_over_a_damaged_base_file_names_it(tmp_path, table_type):
    table = create_table(str(tmp_path / "t"), SCHEMA, "id", table_type=table_type)  # simple index: reads keys
    table.upsert(pa.table({"id": [1, 2], "v": ["a", "b"], "p": ["x", "y"]}, schema=SCHEMA))
    (base,) = [i.path for i in table.storage.walk_files("") if i.path.endswith(".parquet")]
    _rewrite(table, base, _flip_footer)
    with pytest.raises(CorruptFileError, match=rf"data file {base} of the table at .*/t is corrupt: OSError: "):
        table.upsert(pa.table({"id": [1], "v": ["A"], "p": ["x"]}, schema=SCHEMA))
    assert [p for p in _listing(table) if not p.startswith(".hoodie/")] == [base]



def test_split_planning_over_a_damaged_base_file_names_it(tmp_path):
    table, _, base = _mor_with_update(tmp_path / "t")
    _rewrite(table, base, _flip_footer)
    with pytest.raises(CorruptFileError, match=rf"data file {base} of the table at .*/t is corrupt: OSError: "):
        table.plan_scan(max_rows_per_task=1)


def test_log_block_header_naming_another_instant_is_an_error(tmp_path):
    table, log, _ = _mor_with_update(tmp_path / "t")
    writer = table.timeline[-1].requested_time
    damaged = str(int(writer) + 10**13)  # one digit of the year changed: an instant that never ran

    def flip_instant(d):
        at = d.index(writer.encode())
        d[at:at + 17] = damaged.encode()
        return d

    _rewrite(table, log, flip_instant)
    with pytest.raises(CorruptFileError, match=rf"log file {log} of the table at .*/t has a block at offset 0 naming "
                                               rf"instant {damaged}, but commit {writer} wrote those bytes"):
        table.read()
    with pytest.warns(UserWarning, match=r"its header is damaged; read as it says"):
        rows = _rows(table, options={"hoodie.pyhudi.read.corrupt.blocks.skip": "true"})
    assert rows == [(1, "a", "x"), (2, "b", "y")]  # the block's own (never completed) instant: not visible

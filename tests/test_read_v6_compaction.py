"""Table version 6: log files written while a compaction is pending (Hudi 0.x file slicing).

Version 6 names a log file after the base instant of its file slice. Once a compaction is
scheduled at instant C, later deltacommits write logs named after C: they open a new slice
that has no base file until C completes. Readers merge that slice with the previous one (the
previous base, its logs, then the logs named after C), and ignore any base file the unfinished
compaction has written. The table is the Spark-written v6 merge-on-read fixture plus a pending
compaction and a deltacommit completed after it, both built here byte for byte as Hudi 0.x
lays them out.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES_DIR, extract_table

import pyhudi
from pyhudi.logformat import HeaderKey, LogReader, ParquetDataBlock, write_log_file

FILE_ID = "d206069c-22c8-4532-b9ea-3cf4282342c4-0"
BASE_INSTANT = "20250117083125837"  # bulk insert: base file of FILE_ID
FIRST_UPDATE = "20250117083136333"  # deltacommit: log named after BASE_INSTANT
OLD_LOG = f".{FILE_ID}_{BASE_INSTANT}.log.1_0-33-43"
COMPACTION = "20250117090000000"  # scheduled, not completed
LATE_UPDATE = "20250117090100000"  # deltacommit completed after the compaction was scheduled
NEW_LOG = f".{FILE_ID}_{COMPACTION}.log.1_0-60-70"


def _v6_table(tmp_path):
    """The fixture, its completed instants' files dated one second after their requested time
    (version 6 completion times are file modification times; unzipping dates them all "now")."""
    zip_path = FIXTURES_DIR / "sample_table" / "mor" / "parquet" / "v6_nonpartitioned.zip"
    table_dir = extract_table(zip_path, tmp_path)
    for requested in (BASE_INSTANT, FIRST_UPDATE):
        _date(table_dir / ".hoodie" / f"{requested}.deltacommit", requested)
    return table_dir


def _date(path, instant: str) -> None:
    moment = datetime.strptime(instant[:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC).timestamp() + 1
    os.utime(path, (moment, moment))


def _late_update_block(table_dir, ids: list[int], names: list[str]) -> ParquetDataBlock:
    """A Parquet data block written by LATE_UPDATE: the fixture's own block layout (meta columns
    and schema header), rows ``ids`` with new names."""
    old = next(iter(LogReader(data=(table_dir / OLD_LOG).read_bytes())))
    template = old.read()
    schema_json = old.header[HeaderKey.SCHEMA]
    base = pq.read_table(next(table_dir.glob(f"{FILE_ID}_*_{BASE_INSTANT}.parquet")))
    rows = base.filter(pc.is_in(base.column("id"), pa.array(ids, pa.int32()))).sort_by("id")
    rows = rows.select(template.column_names).cast(template.schema)
    rows = rows.set_column(rows.column_names.index("name"), "name", pa.array(names, pa.string()))
    rows = rows.set_column(0, "_hoodie_commit_time", pa.array([LATE_UPDATE] * len(ids), pa.string()))
    return ParquetDataBlock(rows, {HeaderKey.INSTANT_TIME: LATE_UPDATE, HeaderKey.SCHEMA: schema_json})


def _schedule_compaction_and_update(table_dir, *, ids=(1,), names=("late",), partial_base: bool = True) -> None:
    """Pending compaction C over FILE_ID, then a deltacommit writing a log named after C."""
    hoodie = table_dir / ".hoodie"
    (hoodie / f"{COMPACTION}.compaction.requested").write_bytes(b"")
    (hoodie / f"{COMPACTION}.compaction.inflight").write_bytes(b"")
    if partial_base:  # what the running compaction has written so far: never read
        source = next(table_dir.glob(f"{FILE_ID}_*_{BASE_INSTANT}.parquet"))
        broken = pq.read_table(source).slice(0, 1)
        pq.write_table(broken, table_dir / f"{FILE_ID}_0-1-1_{COMPACTION}.parquet")
    storage = pyhudi.open_table(str(table_dir)).storage
    write_log_file(storage, NEW_LOG, [_late_update_block(table_dir, list(ids), list(names))])
    commit = json.loads((hoodie / f"{FIRST_UPDATE}.deltacommit").read_text().replace(OLD_LOG, NEW_LOG))
    size = (table_dir / NEW_LOG).stat().st_size  # the late update wrote the new log only, this long
    stat = next(s for s in commit["partitionToWriteStats"][""] if s["path"] == NEW_LOG)
    commit["partitionToWriteStats"][""] = [{**stat, "totalWriteBytes": size, "fileSizeInBytes": size}]
    commit = json.dumps(commit).replace(FIRST_UPDATE, LATE_UPDATE)
    (hoodie / f"{LATE_UPDATE}.deltacommit.requested").write_bytes(b"")
    (hoodie / f"{LATE_UPDATE}.deltacommit.inflight").write_bytes(b"")
    (hoodie / f"{LATE_UPDATE}.deltacommit").write_text(commit)
    _date(hoodie / f"{LATE_UPDATE}.deltacommit", LATE_UPDATE)


def _completion_of(table, requested: str) -> str:
    return next(i.completion_time for i in table.timeline if i.requested_time == requested)


def _names(table) -> dict[int, tuple[str, str]]:
    got = table.read(columns=["id", "name"], with_meta=True)
    return {i: (n, c) for i, n, c in zip(got.column("id").to_pylist(), got.column("name").to_pylist(),
                                          got.column("_hoodie_commit_time").to_pylist())}


def test_fixture_before_the_compaction(tmp_path):
    table = pyhudi.open_table(str(_v6_table(tmp_path)))
    assert _names(table) == {
        1: ("Alice", FIRST_UPDATE), 2: ("Bob", BASE_INSTANT), 3: ("Carol", BASE_INSTANT), 4: ("Diana", FIRST_UPDATE),
    }


@pytest.mark.parametrize("strategy", ["auto", "hash"])
def test_log_written_during_pending_compaction_merges_with_previous_slice(tmp_path, strategy):
    """Row 1 (updated by the old log) and row 2 (base only) both get the late update; the
    unfinished compaction's base file (one stale row) is ignored."""
    table_dir = _v6_table(tmp_path)
    _schedule_compaction_and_update(table_dir, ids=[1, 2], names=["Alice late", "Bob late"])
    table = pyhudi.open_table(str(table_dir))
    got = table.read(strategy=strategy, with_meta=True).sort_by("id")
    assert got.column("id").to_pylist() == [1, 2, 3, 4]
    assert got.column("name").to_pylist() == ["Alice late", "Bob late", "Carol", "Diana"]
    assert got.column("_hoodie_commit_time").to_pylist() == [LATE_UPDATE, LATE_UPDATE, BASE_INSTANT, FIRST_UPDATE]
    before = table.read(as_of=_completion_of(table, FIRST_UPDATE)).sort_by("id")
    assert before.column("name").to_pylist() == ["Alice", "Bob", "Carol", "Diana"]
    assert got.column("longField").to_pylist() == before.column("longField").to_pylist()
    (group,) = [g for g in table.file_groups() if g.file_id == FILE_ID]
    slice_ = group.latest_slice(None, False, 1)
    assert slice_.base_file.name.instant == BASE_INSTANT
    assert [lf.name.name for lf in slice_.log_files] == [OLD_LOG, NEW_LOG]


def test_pending_compaction_logs_respect_time_travel_and_read_optimized(tmp_path):
    table_dir = _v6_table(tmp_path)
    _schedule_compaction_and_update(table_dir, ids=[3], names=["Carol late"])
    table = pyhudi.open_table(str(table_dir))
    assert _names(table)[3] == ("Carol late", LATE_UPDATE)
    before = table.read(columns=["id", "name"], as_of=_completion_of(table, FIRST_UPDATE)).sort_by("id")
    assert before.column("name").to_pylist() == ["Alice", "Bob", "Carol", "Diana"]
    optimized = table.read(columns=["id", "name"], query_type="read_optimized").sort_by("id")
    assert optimized.column("name").to_pylist() == ["Alice", "Bob", "Carol", "Diana"]  # base files only


def test_log_of_a_failed_deltacommit_during_pending_compaction_is_ignored(tmp_path):
    """The log named after the compaction is visible, but its blocks are checked one by one:
    a block whose deltacommit never completed contributes nothing."""
    table_dir = _v6_table(tmp_path)
    _schedule_compaction_and_update(table_dir, ids=[1], names=["never"])
    (table_dir / ".hoodie" / f"{LATE_UPDATE}.deltacommit").unlink()  # still inflight
    table = pyhudi.open_table(str(table_dir))
    assert _names(table)[1] == ("Alice", FIRST_UPDATE)


def test_completed_compaction_starts_a_new_slice(tmp_path):
    """Once the compaction completes (a ``commit`` in version 6), its base file opens the slice:
    older logs no longer apply, the logs named after it do."""
    table_dir = _v6_table(tmp_path)
    before = pyhudi.open_table(str(table_dir)).read(with_meta=True)
    compacted = before.filter(pc.starts_with(before.column("_hoodie_file_name"), FILE_ID)).sort_by("id")
    assert compacted.column("id").to_pylist() == [1, 2, 3]
    # the compaction's base holds row 1 with a value the old log does not have: re-applying
    # that log on top of the new base would show "Alice" again
    compacted = compacted.set_column(compacted.column_names.index("name"), "name",
                                     pa.array(["Alice compacted", "Bob", "Carol"], pa.string()))
    file_schema = pq.read_schema(next(table_dir.glob(f"{FILE_ID}_*_{BASE_INSTANT}.parquet")))
    pq.write_table(compacted.select(file_schema.names).cast(file_schema),
                   table_dir / f"{FILE_ID}_0-1-1_{COMPACTION}.parquet")
    _schedule_compaction_and_update(table_dir, ids=[2], names=["Bob late"], partial_base=False)
    hoodie = table_dir / ".hoodie"
    shutil.copy(hoodie / f"{FIRST_UPDATE}.deltacommit", hoodie / f"{COMPACTION}.commit")
    _date(hoodie / f"{COMPACTION}.commit", COMPACTION)
    table = pyhudi.open_table(str(table_dir))
    assert _names(table) == {
        1: ("Alice compacted", FIRST_UPDATE), 2: ("Bob late", LATE_UPDATE), 3: ("Carol", BASE_INSTANT),
        4: ("Diana", FIRST_UPDATE),
    }
    (group,) = [g for g in table.file_groups() if g.file_id == FILE_ID]
    slice_ = group.latest_slice(None, False, 1)
    assert slice_.base_file.name.instant == COMPACTION
    assert [lf.name.name for lf in slice_.log_files] == [NEW_LOG]

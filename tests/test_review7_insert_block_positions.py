"""Updates of file groups started by an insert (full-row log files, no base file) record their
positions in the insert's block, naming its instant (pyhudi/write/positions.py). These cases put
another block, or a base file, where the writer saw the insert's block — concurrent inserts into
the same new bucket, a compaction completing while an update is in flight, a failed update, an
ALTER adding a family — and check every read against the rows the writes define and the merge by
key (``strategy="hash"``), on a process's first read (nothing cached) and the next."""

from __future__ import annotations

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.engine import LocalEngine
from pyhudi.logformat import LogReader
from pyhudi.logformat.block import HeaderKey
from pyhudi.logformat.positions import decode_positions
from pyhudi.read.metadata_cache import METADATA_CACHE
from pyhudi.write.client import WriteClient
from read_helpers import run_plan_tasks
from write_helpers import fail_task_after

SCHEMA = pa.schema([("id", pa.int64()), ("a1", pa.float64()), ("a2", pa.string()), ("b", pa.float64())])
FAMILIES = {"fa": "a1,a2", "fb": "b"}
BASE_INSTANT = HeaderKey.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS
READS = [["id", "a1", "a2"], ["id", "b"], ["id", "a1", "a2", "b"], ["id", "a1"]]


@pytest.fixture(autouse=True)
def cache():
    METADATA_CACHE.clear()
    yield
    METADATA_CACHE.clear()


def _create(tmp_path, families=FAMILIES, schema=SCHEMA) -> pyhudi.Table:
    return pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=1, column_families=families)


def _rows(ids, v: float) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "a1": [v] * len(ids), "a2": [f"s{v}"] * len(ids),
                     "b": [v * 10] * len(ids)}, schema=SCHEMA)


def _fa(ids, v: float) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "a1": [v] * len(ids), "a2": [f"u{v}"] * len(ids)})


def _model(*writes: pa.Table) -> dict[int, dict]:
    """id -> row after ``writes`` in order (each sets the columns it carries)."""
    out: dict[int, dict] = {}
    for write in writes:
        for row in write.to_pylist():
            out.setdefault(row["id"], {"a1": None, "a2": None, "b": None}).update(row)
    return out


def _expected(model: dict[int, dict], columns: list[str]) -> list[dict]:
    return [{c: ({"id": i, **model[i]})[c] for c in columns} for i in sorted(model)]


def _read(table, columns, **options) -> tuple[list[dict], dict]:
    rows, metrics = run_plan_tasks(table, columns, **options)
    return rows.sort_by("id").to_pylist(), metrics


def _check(table, model: dict[int, dict], **options) -> dict:
    """Every read of READS equals the model and the merge by key, first read and next; the
    first reads' metrics summed."""
    totals: dict = {}
    for columns in READS:
        expected = _expected(model, columns)
        METADATA_CACHE.clear()
        for attempt in range(2):
            rows, metrics = _read(table, columns, **options)
            assert rows == expected, (columns, attempt, options)
            if attempt == 0:
                for name, value in metrics.items():
                    totals[name] = totals.get(name, 0) + value
        assert _read(table, columns, strategy="hash", **options)[0] == expected
    return totals


def _headers(table, family: str | None = "fa") -> list[tuple[str, dict, list]]:
    """(log file instant, header, record keys) of every block of the single file group's
    ``family`` slice, in slice order."""
    (group,) = pyhudi.open_table(table.path).file_groups()
    out = []
    for log in group.latest_slice(family, family is not None).log_files:
        with LogReader(table.storage, log.relpath) as reader:
            for block in reader:
                keys = block.parquet_file().read(columns=["_hoodie_record_key"]).column(0).to_pylist()
                out.append((log.instant, dict(block.header), keys))
    return out


def _positions(headers, i: int) -> list[str]:
    """The keys of the first block at block ``i``'s recorded positions (they must be its keys)."""
    return [headers[0][2][p] for p in decode_positions(headers[i][1][HeaderKey.RECORD_POSITIONS]).tolist()]


# ------------------------------------------------------------------------------ concurrent writers
def test_an_update_between_two_inserts_into_the_same_new_bucket(tmp_path):
    """Writer B begins an insert into the new bucket, A's insert completes, an update of fa
    completes (its positions in A's block), then B completes: B's block comes after the update
    in the slice (completion order) and wins the keys both write."""
    table = _create(tmp_path)
    writer_b = WriteClient(pyhudi.open_table(table.path))
    txn_b = writer_b.begin("insert")
    inserted_b = _rows(range(5, 10), 2.0)  # (all of them keys of A's insert too)
    statuses_b = txn_b.write_rows(inserted_b, task_id=0)
    inserted_a = _rows(range(0, 15), 1.0)
    instant_a = table.insert(inserted_a)
    update = _fa([5, 6, 12], 9.0)
    instant_u = table.upsert(update)
    writer_b.commit(txn_b, statuses_b)
    headers = _headers(table)
    assert [instant for instant, _, _ in headers] == [instant_a, instant_u, txn_b.instant]  # (by completion)
    assert [BASE_INSTANT in h for _, h, _ in headers] == [False, True, False]
    assert headers[1][1][BASE_INSTANT] == instant_a
    assert _positions(headers, 1) == headers[1][2] == ["12", "5", "6"]  # (blocks list records by record key)
    table = pyhudi.open_table(table.path)
    totals = _check(table, _model(inserted_a, update, inserted_b))
    assert totals["positions_written"] >= 1 and totals["strategy.positions"] >= 1
    _check(table, _model(inserted_a, update), as_of=instant_u)
    _check(table, _model(inserted_a), as_of=instant_a)


def test_an_update_after_two_inserts_into_the_same_new_bucket_names_the_first_completed(tmp_path):
    """B begun first but completes second: the slice's first block is A's, and so is the update's
    positions' block; B's keys that A lacks make the reads merge by key."""
    table = _create(tmp_path)
    writer_b = WriteClient(pyhudi.open_table(table.path))
    txn_b = writer_b.begin("insert")
    inserted_b = _rows(range(10, 20), 2.0)
    statuses_b = txn_b.write_rows(inserted_b, task_id=0)
    inserted_a = _rows(range(0, 15), 1.0)
    instant_a = table.insert(inserted_a)
    writer_b.commit(txn_b, statuses_b)
    update = _fa([3, 11, 12, 17], 9.0)
    instant_u = table.upsert(update)
    later = _fa([3, 11, 12], 7.0)
    instant_later = table.upsert(later)
    assert txn_b.instant < instant_a
    headers = _headers(table)
    assert [instant for instant, _, _ in headers] == [instant_a, txn_b.instant, instant_u, instant_later]
    assert BASE_INSTANT not in headers[-2][1]  # (17 is not a key of A's block: no positions)
    assert headers[-1][1][BASE_INSTANT] == instant_a and _positions(headers, -1) == ["11", "12", "3"]
    table = pyhudi.open_table(table.path)
    _check(table, _model(inserted_a, inserted_b, update, later))
    _check(table, _model(inserted_a, inserted_b, update), as_of=instant_u)
    _check(table, _model(inserted_a, inserted_b), as_of=txn_b.instant)


def test_an_update_in_flight_while_a_family_compaction_completes_is_not_read_against_its_base(tmp_path):
    """The update's writer saw the insert's block first; before it commits, a compaction of fa
    writes fa's base file: the update lands in the slice of that base, whose instant its header
    does not name: its header is not used, and every read stays exact."""
    table = _create(tmp_path)
    inserted = _rows(range(0, 20), 1.0)
    instant_a = table.insert(inserted)
    writer = WriteClient(pyhudi.open_table(table.path))
    txn = writer.begin("upsert")
    update = _fa([2, 7, 15], 9.0)
    statuses = txn.write_rows(update, task_id=0)
    compaction = table.compact("fa")
    writer.commit(txn, statuses)
    (group,) = pyhudi.open_table(table.path).file_groups()
    fa = group.latest_slice("fa", True)
    assert fa.base_file.instant == compaction and [lf.instant for lf in fa.log_files] == [txn.instant]
    with LogReader(table.storage, fa.log_files[0].relpath) as reader:
        (block,) = list(reader)
    assert block.header[BASE_INSTANT] == instant_a != compaction
    table = pyhudi.open_table(table.path)
    totals = _check(table, _model(inserted, update))
    assert "positions_written" not in totals  # (the header names the insert, not fa's base)
    _check(table, _model(inserted), as_of=compaction)


def test_an_update_planned_before_an_insert_into_its_group_completed(tmp_path):
    """The update's writer saw the insert's block alone; another writer's insert into the same
    (existing) group completes first, writing family blocks of the same keys: the update still
    comes last and wins."""
    table = _create(tmp_path)
    inserted = _rows(range(0, 20), 1.0)
    table.insert(inserted)
    writer = WriteClient(pyhudi.open_table(table.path))
    txn = writer.begin("upsert")
    update = _fa([2, 7, 15], 9.0)
    statuses = txn.write_rows(update, task_id=0)
    again = _rows([1, 2, 3, 15], 3.0)
    table.insert(again)
    writer.commit(txn, statuses)
    table = pyhudi.open_table(table.path)
    totals = _check(table, _model(inserted, again, update))
    assert totals["positions_written"] >= 1 and totals["strategy.positions"] >= 1


# ------------------------------------------------------------------------------ failures
def test_a_failed_update_is_rolled_back_and_reads_keep_the_insert(tmp_path, monkeypatch):
    """A two-group update fails after writing its first group's block (positions in the insert's
    block): the write is rolled back, reads never see it, and the next update is exact."""
    table = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2, column_families=FAMILIES)
    inserted = _rows(range(0, 30), 1.0)
    table.insert(inserted)
    fail_task_after(monkeypatch, 2, OSError("task lost"))
    with pytest.raises(OSError, match="task lost"):
        table.upsert(_fa(range(0, 30, 3), 9.0), engine=LocalEngine(parallelism=1))
    monkeypatch.undo()
    assert [str(i.action) for i in table.timeline] == ["deltacommit", "rollback"]
    _check(table, _model(inserted))
    update = _fa(range(0, 30, 4), 5.0)
    table.upsert(update)
    totals = _check(table, _model(inserted, update))
    assert totals["positions_written"] >= 2 and totals["strategy.positions"] >= 2


def test_a_pending_update_is_not_read_and_a_rolled_back_update_is_gone(tmp_path):
    """An update written but not committed (its writer still running) is invisible to reads; the
    latest completed update rolled back leaves the insert's rows; a later update is exact."""
    table = _create(tmp_path)
    inserted = _rows(range(0, 20), 1.0)
    table.insert(inserted)
    writer = WriteClient(pyhudi.open_table(table.path))
    txn = writer.begin("upsert")
    txn.write_rows(_fa([1, 2, 3], 9.0), task_id=0)
    _check(table, _model(inserted))
    writer.abort(txn)
    first = _fa([4, 5], 6.0)
    instant = table.upsert(first)
    _check(table, _model(inserted, first))
    table.rollback(instant)
    _check(pyhudi.open_table(table.path), _model(inserted))
    second = _fa([5, 6], 7.0)
    table.upsert(second)
    totals = _check(pyhudi.open_table(table.path), _model(inserted, second))
    assert totals["positions_written"] >= 1


# ------------------------------------------------------------------------------ families and orderings
def test_a_family_added_after_the_insert_updated_twice(tmp_path):
    """fc, added by ALTER after the insert, does not read the insert's log (it predates fc): its
    first update's block is the first block of its slice. The writer takes the slice as readers
    do: the first update records no positions (nothing before it in fc's slice), the second
    (keys of the first) records them in the first's block — not in the insert's block, which a
    read of fc never meets. Reads give null for the rows fc never wrote."""
    table = _create(tmp_path)
    inserted = _rows(range(0, 12), 1.0)
    table.insert(inserted)
    table.alter(set_properties={"hoodie.colFamily.fc": "c"}, new_columns={"c": pa.string()})
    first = pa.table({"id": pa.array([1, 4, 7, 9], pa.int64()), "c": ["c1", "c4", "c7", "c9"]})
    instant_first = table.upsert(first)
    second = pa.table({"id": pa.array([4, 9], pa.int64()), "c": ["d4", "d9"]})
    table.upsert(second)
    headers = _headers(table, "fc")
    assert [BASE_INSTANT in h for _, h, _ in headers] == [False, True]
    assert headers[1][1][BASE_INSTANT] == instant_first and _positions(headers, 1) == ["4", "9"]
    model = _model(inserted, first, second)
    for row in model.values():
        row.setdefault("c", None)
    for columns in (["id", "c"], ["id", "c", "a1"], ["id", "a1", "a2", "b", "c"], ["c"]):
        key = (lambda r: r["id"]) if "id" in columns else (lambda r: (r["c"] is None, r["c"]))
        expected = sorted(({k: ({"id": i, **model[i]})[k] for k in columns} for i in sorted(model)), key=key)
        METADATA_CACHE.clear()
        for _ in range(2):
            rows = run_plan_tasks(table, columns)[0].to_pylist()
            assert sorted(rows, key=key) == expected, columns
        assert sorted(run_plan_tasks(table, columns, strategy="hash")[0].to_pylist(), key=key) == expected


def test_per_family_insert_logs_lead_each_familys_slice(tmp_path):
    """With ``hoodie.pyhudi.insert.full.row=false`` the insert writes one log per family: each
    family's update records positions in that family's own insert block. (Reads merge these
    slices by key: the other family, read for its keys, has its own first block.)"""
    table = _create(tmp_path)
    inserted = _rows(range(0, 12), 1.0)
    instant = table.insert(inserted, options={"hoodie.pyhudi.insert.full.row": "false"})
    update_a = _fa([0, 5, 11], 4.0)
    table.upsert(update_a)
    update_b = pa.table({"id": pa.array([5, 6], pa.int64()), "b": [77.0, 66.0]})
    table.upsert(update_b)
    for family, keys in (("fa", ["0", "11", "5"]), ("fb", ["5", "6"])):
        headers = _headers(table, family)
        assert len(headers) == 2 and headers[1][1][BASE_INSTANT] == instant and _positions(headers, 1) == keys
    _check(table, _model(inserted, update_a, update_b))


def test_an_event_time_family_keeps_the_higher_ordering_value(tmp_path):
    """fa orders by ts (event time): an update with a lower ts than the insert's loses, though its
    block records positions in the insert's block."""
    schema = SCHEMA.append(pa.field("ts", pa.int64()))
    table = pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=1,
                                column_families={"fa": "a1,a2,ts;ts", "fb": "b"})
    ids = list(range(10))
    inserted = pa.table({"id": pa.array(ids, pa.int64()), "a1": [1.0] * 10, "a2": ["s"] * 10, "b": [2.0] * 10,
                         "ts": pa.array([5] * 10, pa.int64())}, schema=schema)
    instant = table.insert(inserted)
    low = pa.table({"id": pa.array([1, 2], pa.int64()), "a1": [8.0, 8.0], "a2": ["low", "low"],
                    "ts": pa.array([3, 3], pa.int64())})
    high = pa.table({"id": pa.array([2, 3], pa.int64()), "a1": [9.0, 9.0], "a2": ["high", "high"],
                     "ts": pa.array([7, 7], pa.int64())})
    table.upsert(low)
    table.upsert(high)
    assert {h[BASE_INSTANT] for _, h, _ in _headers(table)[1:]} == {instant}
    model = _model(inserted, high)  # (the lower ts loses to the insert's)
    for columns in (["id", "a1", "a2", "ts"], ["id", "b"], ["id", "a1", "a2", "b", "ts"]):
        expected = [{c: ({"id": i, **model[i]})[c] for c in columns} for i in sorted(model)]
        METADATA_CACHE.clear()
        assert _read(table, columns)[0] == _read(table, columns)[0] == expected
        assert _read(table, columns, strategy="hash")[0] == expected


# ------------------------------------------------------------------------------ services and other reads
def test_compaction_clean_and_clustering_after_updates_of_an_inserted_group(tmp_path):
    table = _create(tmp_path)
    inserted = _rows(range(0, 20), 1.0)
    table.insert(inserted)
    writes = [inserted]
    for step, ids in enumerate(([1, 5, 9], [5, 12], [0, 19])):
        writes.append(_fa(ids, 10.0 + step))
        table.upsert(writes[-1])
    partial = pa.table({"id": pa.array([9, 12], pa.int64()), "a1": [0.5, 0.25]})
    writes.append(partial)
    table.upsert(partial)
    _check(table, _model(*writes))
    table.compact("fb")
    _check(table, _model(*writes))
    table.compact("fa")
    _check(table, _model(*writes))
    after = _fa([5, 6], 30.0)
    writes.append(after)
    table.upsert(after)
    _check(table, _model(*writes))
    table.compact(full=True)
    table.clean({"hoodie.cleaner.commits.retained": "1"})
    _check(pyhudi.open_table(table.path), _model(*writes))


def test_incremental_reads_after_updates_of_an_inserted_group(tmp_path):
    table = _create(tmp_path)
    inserted = _rows(range(0, 20), 1.0)
    instant_a = table.insert(inserted)
    first = _fa([2, 4, 6], 5.0)
    instant_1 = table.upsert(first)
    second = _fa([4, 8], 6.0)
    table.upsert(second)
    model = _model(inserted, first, second)
    for start, changed in ((instant_a, [2, 4, 6, 8]), (instant_1, [4, 8])):
        for columns in (["id", "a1", "a2"], ["id", "a1", "a2", "b"]):
            expected = [{c: ({"id": i, **model[i]})[c] for c in columns} for i in changed]
            METADATA_CACHE.clear()
            for _ in range(2):
                assert table.read_incremental(start, columns=columns).sort_by("id").to_pylist() == expected


def test_hudi_rs_reads_a_table_without_families_after_updates_and_a_partial_update(tmp_path):
    import hudi  # hudi-rs, the independent reader

    table = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=2)
    inserted = _rows(range(0, 40), 1.0)
    table.insert(inserted)
    writes = [inserted, _fa(range(0, 40, 3), 2.0), _fa(range(0, 40, 5), 3.0),
              pa.table({"id": pa.array([3, 10, 33], pa.int64()), "b": [7.0, 8.0, 9.0]})]
    for write in writes[1:]:
        table.upsert(write)
    expected = _expected(_model(*writes), ["id", "a1", "a2", "b"])
    METADATA_CACHE.clear()
    rows, metrics = _read(table, ["id", "a1", "a2", "b"])
    assert rows == expected and metrics["positions_written"] >= 2
    got = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(table.path).build().read())
    assert got.select(["id", "a1", "a2", "b"]).sort_by("id").to_pylist() == expected


def test_a_family_added_after_a_full_compaction_does_not_name_the_full_row_base(tmp_path):
    """A full compaction's full-row base file predates fc: fc's slices never hold it, so fc's
    updates name fc's own first block, and reads are exact."""
    table = _create(tmp_path)
    inserted = _rows(range(0, 12), 1.0)
    table.insert(inserted)
    table.compact(full=True)
    table.alter(set_properties={"hoodie.colFamily.fc": "c"}, new_columns={"c": pa.string()})
    first = pa.table({"id": pa.array([2, 3, 8], pa.int64()), "c": ["c2", "c3", "c8"]})
    instant_first = table.upsert(first)
    second = pa.table({"id": pa.array([3, 8], pa.int64()), "c": ["d3", "d8"]})
    table.upsert(second)
    headers = _headers(table, "fc")
    assert [h.get(BASE_INSTANT) for _, h, _ in headers] == [None, instant_first] and _positions(headers, 1) == ["3", "8"]
    model = _model(inserted, first, second)
    for columns in (["id", "c"], ["id", "a1", "c"], ["id", "a1", "a2", "b", "c"]):
        expected = [{k: ({"id": i, "c": None, **model[i]})[k] for k in columns} for i in sorted(model)]
        METADATA_CACHE.clear()
        assert _read(table, columns)[0] == _read(table, columns)[0] == expected
        assert _read(table, columns, strategy="hash")[0] == expected

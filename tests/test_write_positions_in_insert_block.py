"""Record positions of an update of a file group that has no base file yet.

A table written with default options starts each file group with an insert: one full-row log
file whose first (only) Parquet block holds the group's rows (docs/format.md). An update of such
a group records its records' positions in that block, naming the block's instant (the insert's)
as ``BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS`` (pyhudi/write/positions.py). The first read of
a process then merges by position without decoding a key; headers that do not fit the slice's
first block are ignored. Apache Hudi's readers merge a slice without a base file by key, so the
same table still reads the same in hudi-rs.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.logformat import LogReader
from pyhudi.logformat.block import HeaderKey
from pyhudi.logformat.positions import decode_positions
from pyhudi.read.metadata_cache import METADATA_CACHE
from read_helpers import run_plan_tasks
from test_read_written_positions import (  # noqa: F401 (cache: its autouse fixture, an emptied metadata cache)
    BASE_INSTANT,
    DAMAGES,
    FAMILIES,
    POSITIONS,
    SCHEMA,
    _no_key_decoded,
    cache,
    forge_positions_headers,
)

N = 50


def _ids(ids, key_type=pa.int64()) -> pa.Array:
    return pa.array(list(ids) if key_type == pa.int64() else [f"k{i:03d}" for i in ids], key_type)


def _inserted(tmp_path, families=FAMILIES, key_type=pa.int64(), buckets=2, ids=range(N)):
    """A table written with default options: ``insert`` only (full-row log files, no base file)."""
    schema = SCHEMA.set(0, pa.field("id", key_type))
    table = pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=buckets, column_families=families)
    instant = table.insert(pa.table({"id": _ids(ids, key_type), "a1": [float(i) for i in ids],
                                     "a2": [f"s{i}" for i in ids], "b": [i * 2.0 for i in ids]}, schema=schema))
    return table, instant


def _update(table, ids, a1: float, **options) -> str:
    key_type = table.schema.field("id").type
    return table.upsert(pa.table({"id": _ids(ids, key_type), "a1": pa.array([a1] * len(ids), pa.float64()),
                                  "a2": pa.array([f"u{i}" for i in ids])}), options=options or None)


def _logs(table) -> dict[str, list]:
    """file id → [(log file name, first block), ...] in the order of their instants."""
    out: dict[str, list] = {}
    for group in table.file_groups():
        for log in sorted(group.log_files, key=lambda lf: (lf.instant, lf.name.name)):
            with LogReader(table.storage, log.relpath) as reader:
                (block,) = list(reader)
                keys = block.parquet_file().read(columns=["_hoodie_record_key"]).column(0).to_pylist()
                out.setdefault(group.file_id, []).append((log.name.name, dict(block.header), keys))
    return out


def _expected(changed: dict, ids=range(N), key_type=pa.int64()) -> list[dict]:
    keys = _ids(ids, key_type).to_pylist()
    return sorted(({"id": k, "a1": changed.get(i, (float(i), f"s{i}"))[0], "a2": changed.get(i, (float(i), f"s{i}"))[1]}
                   for i, k in zip(ids, keys)), key=lambda r: r["id"])


def _read(table, columns=("id", "a1", "a2"), **options):
    rows, metrics = run_plan_tasks(table, list(columns), **options)
    return rows.sort_by("id").to_pylist(), metrics


@pytest.mark.parametrize("key_type", [pa.int64(), pa.string()], ids=["integer key", "string key"])
def test_an_update_of_an_inserted_group_records_its_rows_in_the_insert_block(tmp_path, monkeypatch, key_type):
    """Default options: the update block names the insert's instant and the rows of its records
    in the insert's block; a process's first read merges by them, decoding no key."""
    table, inserted = _inserted(tmp_path, key_type=key_type)
    updated = [1, 2, 17, 30, 49]
    _update(table, updated, 0.5)
    groups = _logs(table)
    assert len(groups) == 2
    for logs in groups.values():
        (insert_name, insert_header, insert_keys), (update_name, header, update_keys) = logs
        assert insert_name.endswith(".log.1_" + insert_name.rsplit("_", 1)[1]) and "_fa." not in insert_name
        assert "_fa.log.1_" in update_name and POSITIONS not in insert_header
        assert header[BASE_INSTANT] == inserted == insert_header[HeaderKey.INSTANT_TIME]
        assert decode_positions(header[POSITIONS]).tolist() == [insert_keys.index(k) for k in update_keys]
    METADATA_CACHE.clear()
    _no_key_decoded(monkeypatch)
    rows, metrics = _read(table)
    assert rows == _expected({i: (0.5, f"u{i}") for i in updated}, key_type=key_type)
    assert metrics["positions_written"] == 2 and metrics["strategy.positions"] == 2
    assert "positions_learnt" not in metrics and metrics["families_skipped"] == 2
    monkeypatch.undo()
    assert _read(table, strategy="hash")[0] == rows


def test_a_table_without_families_reads_the_same_in_hudi_rs(tmp_path, monkeypatch):
    """One family: the update's log names the insert's log instant; pyhudi merges by position,
    hudi-rs (which sees no base file) by key — the same rows."""
    import hudi  # hudi-rs 0.5.0, the independent reader (a test dependency)

    table, inserted = _inserted(tmp_path, families=None)
    _update(table, [3, 4, 40], 0.25)
    headers = [logs[-1][1] for logs in _logs(table).values()]
    assert {h[BASE_INSTANT] for h in headers} == {inserted}
    METADATA_CACHE.clear()
    _no_key_decoded(monkeypatch)
    rows, metrics = _read(table, ["id", "a1", "a2", "b"])
    assert metrics["positions_written"] == 2 and "positions_learnt" not in metrics
    monkeypatch.undo()
    got = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(table.path).build().read())
    assert got.select(["id", "a1", "a2", "b"]).sort_by("id").to_pylist() == rows
    assert [(r["id"], r["a1"]) for r in rows if r["a1"] == 0.25] == [(3, 0.25), (4, 0.25), (40, 0.25)]


def test_an_update_adding_a_key_records_no_positions(tmp_path):
    table, _ = _inserted(tmp_path, buckets=1)
    _update(table, [5, N + 5], 1.0)
    (_, header, _), = _logs(table).values().__iter__().__next__()[1:]
    assert POSITIONS not in header and BASE_INSTANT not in header
    rows, metrics = _read(table)
    expected = _expected({5: (1.0, "u5")}) + [{"id": N + 5, "a1": 1.0, "a2": f"u{N + 5}"}]
    assert rows == expected == _read(table, strategy="hash")[0]


def test_positions_refer_to_the_first_insert_only(tmp_path):
    """A second insert into the group writes its own family blocks after the first insert's
    full-row block: an update of the first insert's keys records positions in that first block;
    an update touching a key of the second insert records none. Reads stay exact."""
    table, inserted = _inserted(tmp_path, buckets=1, ids=range(0, N, 2))
    table.insert(pa.table({"id": pa.array(range(1, N, 2), pa.int64()), "a1": [float(i) for i in range(1, N, 2)],
                           "a2": [f"s{i}" for i in range(1, N, 2)], "b": [i * 2.0 for i in range(1, N, 2)]}))
    _update(table, [0, 10, 48], 3.0)
    _update(table, [2, 3], 4.0)
    (logs,) = _logs(table).values()
    first_keys = logs[0][2]
    with_positions = [(h, keys) for _, h, keys in logs if POSITIONS in h]
    assert len(with_positions) == 1
    header, keys = with_positions[0]
    assert header[BASE_INSTANT] == inserted
    assert keys == ["0", "10", "48"]  # (blocks list records by record key)
    assert decode_positions(header[POSITIONS]).tolist() == [first_keys.index(k) for k in keys]
    METADATA_CACHE.clear()
    rows, _ = _read(table)
    assert rows == _expected({0: (3.0, "u0"), 10: (3.0, "u10"), 48: (3.0, "u48"), 2: (4.0, "u2"), 3: (4.0, "u3")})
    assert rows == _read(table, strategy="hash")[0]


@pytest.mark.parametrize("same_process", [True, False], ids=["inserted by this process", "by another"])
def test_the_insert_block_keys_are_read_at_most_once_per_writing_process(tmp_path, monkeypatch, same_process):
    """The process that inserted keeps the block's keys (no read); another process reads them
    once (an emptied metadata cache stands for it), then keeps them for its next updates."""
    import pyhudi.write.positions as write_positions

    table, _ = _inserted(tmp_path, buckets=1)
    if not same_process:
        METADATA_CACHE.clear()
    calls = []
    real = write_positions._base_keys
    monkeypatch.setattr(write_positions, "_base_keys", lambda *a: calls.append(a[1]) or real(*a))
    _update(table, [1, 2], 1.0)
    _update(table, [2, 9], 2.0)
    if same_process:
        assert calls == []
    else:
        assert len(calls) == 1 and calls[0].lead_block and ".log.1_" in calls[0].relpath
    (logs,) = _logs(table).values()
    insert_keys = logs[0][2]
    assert [decode_positions(h[POSITIONS]).tolist() for _, h, _ in logs[1:]] == \
        [[insert_keys.index(k) for k in keys] for _, _, keys in logs[1:]]
    assert [keys for _, _, keys in logs[1:]] == [["1", "2"], ["2", "9"]]


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_header_that_does_not_fit_the_insert_block_is_ignored(tmp_path, monkeypatch, damage):
    """Used only when it names the slice's first block's instant, holds one distinct position per
    record, each a row of that block, and decodes: otherwise positions are learnt from the keys."""
    table, _ = _inserted(tmp_path, buckets=1)
    forge_positions_headers(monkeypatch, damage, N)
    _update(table, [4, 6, 8], 9.0)
    monkeypatch.undo()
    METADATA_CACHE.clear()
    rows, metrics = _read(table)
    assert rows == _expected({4: (9.0, "u4"), 6: (9.0, "u6"), 8: (9.0, "u8")})
    assert "positions_written" not in metrics and metrics["positions_learnt"] == 1


def test_positions_can_be_turned_off(tmp_path):
    table, _ = _inserted(tmp_path, buckets=1)
    _update(table, [4], 9.0, **{"hoodie.write.record.positions": "false"})
    (logs,) = _logs(table).values()
    assert POSITIONS not in logs[-1][1]
    METADATA_CACHE.clear()
    rows, metrics = _read(table)
    assert rows == _expected({4: (9.0, "u4")}) and metrics["positions_learnt"] == 1


def test_keys_kept_for_a_log_file_are_not_used_once_the_file_changed(tmp_path, monkeypatch):
    """The keys a writer keeps for the log file it wrote are found by the file's path and size:
    bytes written again under the same name (a retried attempt that wrote other rows) are read
    back, never positioned by the keys of the first attempt."""
    import shutil

    import pyhudi.write.positions as write_positions

    table, _ = _inserted(tmp_path, buckets=1)
    other, _ = _inserted(tmp_path / "other", buckets=1, ids=range(0, 2 * N, 3))  # (other keys, other size)
    (lead,) = [f for f in (tmp_path / "t").iterdir() if ".log." in f.name]
    (replacement,) = [f for f in (tmp_path / "other" / "t").iterdir() if ".log." in f.name]
    assert lead.stat().st_size != replacement.stat().st_size
    shutil.copyfile(replacement, lead)  # (the same name, the other table's rows)
    calls = []
    real = write_positions._base_keys
    monkeypatch.setattr(write_positions, "_base_keys", lambda *a: calls.append(a[1]) or real(*a))
    _update(table, [3, 9], 5.0)
    assert len(calls) == 1  # (read back: the kept keys were of the first bytes)
    (logs,) = _logs(table).values()
    header = logs[-1][1]
    # (the bytes read back are of another insert, not the instant the name says: no positions;
    # the kept keys would have positioned the update in rows that are not there)
    assert POSITIONS not in header and BASE_INSTANT not in header


@pytest.mark.parametrize("case", ["positions off", "copy-on-write"])
def test_keys_are_kept_only_where_an_update_records_positions(tmp_path, case):
    """Bucketed merge-on-read tables with record positions on keep a new group's keys for the
    next update; elsewhere nothing would use them, and the cache keeps none."""
    kept = lambda: [k for k in METADATA_CACHE._entries if str(k[0]).startswith("write:keys")]  # noqa: E731
    if case == "positions off":
        table = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
        options = {"hoodie.write.record.positions": "false"}
    else:
        table = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", table_type="COPY_ON_WRITE")
        options = None
    table.insert(pa.table({"id": _ids(range(N)), "a1": [float(i) for i in range(N)], "a2": [f"s{i}" for i in range(N)],
                           "b": [i * 2.0 for i in range(N)]}, schema=SCHEMA), options=options)
    assert kept() == []
    _inserted(tmp_path / "default", buckets=1)
    assert len(kept()) == 1  # (the default table: its group's first log)

"""Record positions of tables whose one integer record key has values without key codes.

Key codes (pyhudi/read/keys.py) cover integer keys in ``[0, 10**17)``. Negative ids and 18-19
digit ids (snowflake ids, ~1.8e18) have none: readers hold such keys as strings where a key is
needed. An update of such a table still records its records' rows in the base (the base file,
or the insert's block of a group without one) — ``RECORD_POSITIONS`` with
``BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS`` — found by the keys' decimal spellings, which are
the record keys (pyhudi/write/positions.py). So the first read of a process merges by position
and decodes no key, as for small ids; the rows are those of the merge by key, of hudi-rs and of
a compaction.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
import pyhudi.write.positions as write_positions
from pyhudi.logformat.block import HeaderKey
from pyhudi.logformat.positions import decode_positions
from pyhudi.logformat.reader import read_log_blocks
from pyhudi.read.metadata_cache import METADATA_CACHE
from pyhudi.storage.fs import Storage
from pyhudi.write.positions import PositionsBase, positions_header
from read_helpers import fresh_metadata_cache, run_plan_tasks  # noqa: F401 (a fixture)
from test_read_written_positions import _no_key_decoded

pytestmark = pytest.mark.usefixtures("fresh_metadata_cache")

POSITIONS, BASE_INSTANT = HeaderKey.RECORD_POSITIONS, HeaderKey.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS
SCHEMA = pa.schema([("id", pa.int64()), ("a1", pa.float64()), ("a2", pa.string()), ("b", pa.float64())])
FAMILIES = {"fa": "a1,a2", "fb": "b"}
N = 40
SNOWFLAKE = [1_800_000_000_000_000_000 + i * 4096 for i in range(N)]  # 19 digits
NEGATIVE = [-(i * 7919 + 1) for i in range(N)]  # -1, -7920, ... (1 to 6 digits)
MIXED = [-2**63, -10**18, -10**17, -123, -1, 0, 1, 9, 10, 99, 10**17 - 1, 10**17, 10**18, 2**63 - 1,
         *(1_800_000_000_000_000_000 + i * 4096 for i in range(13)), *(i * 37 + 100 for i in range(13))]
KEYS = {"snowflake": SNOWFLAKE, "negative": NEGATIVE, "mixed": MIXED}
LAYOUTS = {"one family": None, "two families": FAMILIES}


def _inserted(tmp_path, ids, families, buckets: int = 2, name: str = "t") -> tuple[pyhudi.Table, str]:
    """Default options: an insert (a full-row log file per group, no base file)."""
    table = pyhudi.create_table(str(tmp_path / name), SCHEMA, "id", num_buckets=buckets, column_families=families)
    instant = table.insert(pa.table({"id": pa.array(ids, pa.int64()), "a1": [float(i) for i in range(len(ids))],
                                     "a2": [f"s{i}" for i in range(len(ids))],
                                     "b": [2.0 * i for i in range(len(ids))]}, schema=SCHEMA))
    return table, instant


def _update(table, ids, updated: list[int], a1: float) -> str:
    """Upsert the rows at indices ``updated`` of ``ids``: ``a1``, ``a2 = "u<index>"``."""
    return table.upsert(pa.table({"id": pa.array([ids[i] for i in updated], pa.int64()),
                                  "a1": pa.array([a1] * len(updated), pa.float64()),
                                  "a2": pa.array([f"u{i}" for i in updated])}))


def _expected(ids, changes: dict[int, tuple[float, str]]) -> list[dict]:
    rows = [{"id": k, "a1": changes.get(i, (float(i), f"s{i}"))[0], "a2": changes.get(i, (float(i), f"s{i}"))[1],
             "b": 2.0 * i} for i, k in enumerate(ids)]
    return sorted(rows, key=lambda r: r["id"])


def _blocks(table, instant: str) -> dict[str, list[tuple[dict, list[str]]]]:
    """file id → (header, record keys) of the data blocks ``instant`` wrote, per group."""
    out: dict[str, list] = {}
    for group in table.file_groups():
        for log in group.log_files:
            if log.instant != instant:
                continue
            for block in read_log_blocks(table.storage, log.relpath):
                keys = block.parquet_file().read(columns=["_hoodie_record_key"]).column(0).to_pylist()
                out.setdefault(group.file_id, []).append((dict(block.header), keys))
    return out


def _group_keys(table, instant: str) -> dict[str, set[str]]:
    """file id → the record keys ``instant`` (an insert) wrote to the group."""
    return {file_id: set(keys) for file_id, blocks in _blocks(table, instant).items() for _, keys in blocks}


def _assert_positions(table, update: str, base_instant: str, groups: dict[str, set[str]], updated_keys: set[str]):
    """Every block of ``update`` names ``base_instant`` and the rows of its records in the base,
    whose keys are the group's keys in string order; returns the number of groups updated."""
    blocks = _blocks(table, update)
    assert set(blocks) == {f for f, keys in groups.items() if keys & updated_keys}
    for file_id, written in blocks.items():
        base_order = sorted(groups[file_id])  # (a base holds its rows in record key order)
        for header, keys in written:
            assert keys == sorted(updated_keys & groups[file_id])
            assert header[BASE_INSTANT] == base_instant
            assert decode_positions(header[POSITIONS]).tolist() == [base_order.index(k) for k in keys]
    return len(blocks)


def _read(table, columns, **options):
    rows, metrics = run_plan_tasks(table, columns, **options)
    return rows, metrics


def _hudi_rs(path: str) -> list[dict]:
    import hudi  # hudi-rs, the independent reader (a test dependency)

    got = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(path).build().read())
    return got.select(["id", "a1", "a2", "b"]).sort_by("id").to_pylist()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kind", KEYS)
def test_an_update_records_positions_and_the_first_read_merges_by_them(tmp_path, monkeypatch, kind, layout):
    """The update blocks carry the rows of their records in the insert's block; a process's first
    read merges by them, decoding no key (pruned reads too); the rows are the merge by key's."""
    ids = KEYS[kind]
    table, inserted = _inserted(tmp_path, ids, LAYOUTS[layout])
    updated = [0, 3, 4, 13, 21, 26, 38, 39]
    update = _update(table, ids, updated, 0.5)
    groups = _group_keys(table, inserted)
    assert sorted(k for keys in groups.values() for k in keys) == sorted(str(k) for k in ids)
    touched = _assert_positions(table, update, inserted, groups, {str(ids[i]) for i in updated})
    assert touched == 2
    expected = _expected(ids, {i: (0.5, f"u{i}") for i in updated})

    METADATA_CACHE.clear()  # (another process)
    _no_key_decoded(monkeypatch)
    rows, metrics = _read(table, ["id", "a1", "a2"])
    assert rows.sort_by("id").to_pylist() == [{k: r[k] for k in ("id", "a1", "a2")} for r in expected]
    assert metrics["positions_written"] == 2 and metrics["strategy.positions"] == 2
    assert "positions_learnt" not in metrics and "integer_keys" not in metrics
    rows, metrics = _read(table, ["a2"])  # (a pruned read: one column of the updated family)
    assert sorted(rows.column("a2").to_pylist()) == sorted(r["a2"] for r in expected)
    assert metrics["strategy.positions"] == 2
    assert table.read(columns=["a1", "id"]).sort_by("id").to_pylist() == \
        [{"a1": r["a1"], "id": r["id"]} for r in expected]
    monkeypatch.undo()
    assert table.read().select(["id", "a1", "a2", "b"]).sort_by("id").to_pylist() == expected
    assert _read(table, ["id", "a1", "a2", "b"], strategy="hash")[0].sort_by("id").to_pylist() == expected
    if LAYOUTS[layout] is None:
        assert _hudi_rs(table.path) == expected


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kind", KEYS)
def test_a_compaction_reads_back_the_same_rows_and_later_updates_record_positions_in_its_base(
        tmp_path, monkeypatch, kind, layout):
    """Two updates, a compaction (rows unchanged), then an update in a fresh process: its blocks
    name the compacted base file's rows, and the next first read merges by them."""
    ids = KEYS[kind]
    table, _ = _inserted(tmp_path, ids, LAYOUTS[layout])
    _update(table, ids, [1, 2, 30], 0.5)
    _update(table, ids, [2, 5, 39], 0.75)
    expected = _expected(ids, {1: (0.5, "u1"), 30: (0.5, "u30"), 2: (0.75, "u2"), 5: (0.75, "u5"),
                               39: (0.75, "u39")})
    compaction = table.compact()
    assert compaction is not None
    assert table.read().select(["id", "a1", "a2", "b"]).sort_by("id").to_pylist() == expected
    if LAYOUTS[layout] is None:
        assert _hudi_rs(table.path) == expected

    METADATA_CACHE.clear()  # (a writer in another process: reads the compacted base's keys)
    later = [0, 7, 8, 33]
    update = _update(table, ids, later, 2.0)
    groups: dict[str, set[str]] = {}
    for group in table.file_groups():
        (base,) = [b for b in group.base_files if b.instant == compaction and b.name.family in (None, "fa")][-1:]
        keys = pq.read_table(table.storage.full_path(base.relpath), columns=["_hoodie_record_key"]).column(0)
        assert keys.to_pylist() == sorted(keys.to_pylist())
        groups[group.file_id] = set(keys.to_pylist())
    touched = _assert_positions(table, update, compaction, groups, {str(ids[i]) for i in later})
    expected = _expected(ids, {1: (0.5, "u1"), 30: (0.5, "u30"), 2: (0.75, "u2"), 5: (0.75, "u5"),
                               39: (0.75, "u39"), **{i: (2.0, f"u{i}") for i in later}})
    METADATA_CACHE.clear()
    _no_key_decoded(monkeypatch)
    rows, metrics = _read(table, ["id", "a1", "a2"])
    assert rows.sort_by("id").to_pylist() == [{k: r[k] for k in ("id", "a1", "a2")} for r in expected]
    assert metrics["positions_written"] == touched and "positions_learnt" not in metrics
    monkeypatch.undo()
    assert table.read().select(["id", "a1", "a2", "b"]).sort_by("id").to_pylist() == expected
    if LAYOUTS[layout] is None:
        assert _hudi_rs(table.path) == expected


@pytest.mark.parametrize("kind", KEYS)
def test_the_inserting_process_positions_its_next_update_without_reading_the_keys_back(tmp_path, monkeypatch,
                                                                                      kind):
    """The writer keeps the keys it wrote (as their spellings): its next updates find their
    positions without reading the insert's block."""
    ids = KEYS[kind]
    table, inserted = _inserted(tmp_path, ids, None)
    calls = []
    real = write_positions._base_keys
    monkeypatch.setattr(write_positions, "_base_keys", lambda *a: calls.append(a[1]) or real(*a))
    first = _update(table, ids, [6, 9, 10], 1.0)
    second = _update(table, ids, [9, 17], 3.0)
    assert calls == []
    groups = _group_keys(table, inserted)
    _assert_positions(table, first, inserted, groups, {str(ids[i]) for i in (6, 9, 10)})
    _assert_positions(table, second, inserted, groups, {str(ids[i]) for i in (9, 17)})


@pytest.mark.parametrize("kind", KEYS)
def test_an_update_adding_a_key_records_no_positions(tmp_path, kind):
    """A block with a key its base lacks (here a key of another range: a code where the base has
    spellings, or the other way round) is an insert: merged by key, without positions."""
    ids = KEYS[kind]
    table, _ = _inserted(tmp_path, ids, None, buckets=1)
    small = list(range(N))
    table2, _ = _inserted(tmp_path, small, None, buckets=1, name="small")
    cases = [(table, [ids[3], 5_000 if kind != "mixed" else 5_001]),  # (the base: spellings)
             (table2, [7, 2_000_000_000_000_000_000]),  # (the base: codes)
             (table2, [8, -8])]
    for target, upserted in cases:
        METADATA_CACHE.clear()
        update = target.upsert(pa.table({"id": pa.array(upserted, pa.int64()), "a1": [9.0, 9.0],
                                         "a2": ["new", "new"]}))
        ((header, keys),), = _blocks(target, update).values()
        assert keys == sorted(str(k) for k in upserted)
        assert POSITIONS not in header and BASE_INSTANT not in header
    got = table.read().select(["id", "a1", "a2"]).sort_by("id").to_pylist()
    changed = {3: (9.0, "new")}
    extra = {"id": 5_000 if kind != "mixed" else 5_001, "a1": 9.0, "a2": "new"}
    want = [{k: r[k] for k in ("id", "a1", "a2")} for r in _expected(ids, changed)] + [extra]
    assert got == sorted(want, key=lambda r: r["id"])
    got = table2.read().select(["id", "a1", "a2"]).sort_by("id").to_pylist()
    want = [{"id": i, "a1": 9.0 if i in (7, 8) else float(i), "a2": "new" if i in (7, 8) else f"s{i}"} for i in small]
    want += [{"id": -8, "a1": 9.0, "a2": "new"}, {"id": 2_000_000_000_000_000_000, "a1": 9.0, "a2": "new"}]
    assert got == sorted(want, key=lambda r: r["id"])


def _base_file(tmp_path, ids: list[int]) -> tuple[Storage, PositionsBase]:
    """A base file as Apache Hudi's insert may write it: ``ids`` as they come (a key twice)."""
    storage = Storage(str(tmp_path))
    name = "f1_0-1-0_20250101000000000.parquet"
    pq.write_table(pa.table({"_hoodie_record_key": pa.array([str(k) for k in ids]),
                             "id": pa.array(ids, pa.int64())}), os.path.join(str(tmp_path), name))
    return storage, PositionsBase(name, "20250101000000000", ("base", name, len(ids)))


def _keys(ids: list[int]) -> pa.Table:
    return pa.table({"_hoodie_record_key": pa.array([str(k) for k in ids]), "id": pa.array(ids, pa.int64())})


def test_a_key_the_base_stores_twice_gets_no_positions(tmp_path):
    """The block's readers must meet the copy the merge by key meets: positions are recorded
    only when every key is in the base once."""
    big = 1_800_000_000_000_000_000
    storage, base = _base_file(tmp_path, [-5, big, big + 1, big, big + 2])
    assert positions_header(storage, base, _keys([big, big + 2]), "id") == {}
    header = positions_header(storage, base, _keys([big + 1]), "id")  # (held once: the merge by key meets it)
    assert decode_positions(header[POSITIONS]).tolist() == [2]
    (tmp_path / "once").mkdir()
    storage, once = _base_file(tmp_path / "once", [-5, big, big + 1, big + 2])
    header = positions_header(storage, once, _keys([-5, big + 1, big + 2]), "id")
    assert decode_positions(header[POSITIONS]).tolist() == [0, 2, 3]
    assert header[BASE_INSTANT] == "20250101000000000"

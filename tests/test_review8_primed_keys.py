"""Review of the write-side key cache's priming (pyhudi/write/positions.py ``remember_written_keys``).

A writer keeps the keys of every base file and new group's first log file it writes, so its next
update finds the record positions without reading the file back. Readers trust those positions,
so a kept spine that differs from the file's keys would patch the wrong rows: every kept entry
must equal what :func:`~pyhudi.write.positions._base_keys` reads back from the file, and the rows
read by position must be the rows read by key and the rows of a model.
"""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pytest

import pyhudi
import pyhudi.write.positions as write_positions
from pyhudi.logformat.block import HeaderKey
from pyhudi.storage.naming import parse_data_file_name
from pyhudi.logformat.positions import decode_positions
from pyhudi.read.metadata_cache import METADATA_CACHE
from pyhudi.write.positions import PositionsBase
from test_write_positions_in_insert_block import _logs

POSITIONS = HeaderKey.RECORD_POSITIONS
READ_BACK = write_positions._base_keys  # (the reading, whatever a test counts)
PER_FAMILY_FILES = {"hoodie.pyhudi.insert.full.row": "false"}
STREAMED = {"hoodie.parquet.block.size": "256"}  # (a few rows per row group: files written row group by row group)


@pytest.fixture(autouse=True)
def cache():
    METADATA_CACHE.clear()
    yield METADATA_CACHE
    METADATA_CACHE.clear()


def _kept(table) -> list[tuple[str, object, object]]:
    """(kind, identity, spine) of every write-side key entry of ``table``'s files."""
    root = table.storage.root
    return [(kind, identity, value) for (kind, identity), (value, _) in list(METADATA_CACHE._entries.items())
            if isinstance(kind, str) and kind.startswith("write:keys:") and identity[0].startswith(root + "/")]


def _read_back(table, kind: str, identity) -> object:
    """What a writer that kept nothing reads from the file ``identity`` names."""
    relpath = os.path.relpath(identity[0], table.storage.root)
    lead = kind.endswith("@lead")
    column = kind[len("write:keys:"):].removesuffix("@lead")
    instant = parse_data_file_name(os.path.basename(relpath)).instant
    return READ_BACK(table.storage, PositionsBase(relpath, instant, identity, lead), column)


def _assert_kept_as_read_back(table) -> int:
    kept = _kept(table)
    for kind, identity, spine in kept:
        found = _read_back(table, kind, identity)
        assert (spine is False and found is False) or (spine is not False and spine.equals(found)), (kind, identity)
    return len(kept)


def _count_reads(monkeypatch) -> list[str]:
    reads: list[str] = []
    real = write_positions._base_keys

    def counting(storage, base, column):
        reads.append(base.relpath)
        return real(storage, base, column)

    monkeypatch.setattr(write_positions, "_base_keys", counting)
    return reads


def _rows(ids, key_type, step):
    keys = pa.array(ids if pa.types.is_integer(key_type) else [f"k{i}" for i in ids], key_type)
    return {"id": keys, "a1": [float(step * 1000 + i) for i in ids], "a2": [f"v{step}_{i}" for i in ids]}


SCENARIOS = {
    # name: (key type, families, first operation, its options, partitioned, rows)
    "integer key, default insert": (pa.int64(), {"fa": "a1,a2", "fb": "b"}, "insert", None, False, 40),
    "string key, default insert": (pa.string(), {"fa": "a1,a2", "fb": "b"}, "insert", None, False, 40),
    "no families": (pa.int64(), None, "insert", None, False, 40),
    "per-family insert files": (pa.string(), {"fa": "a1,a2", "fb": "b"}, "insert", PER_FAMILY_FILES, False, 40),
    "partitioned": (pa.int64(), {"fa": "a1,a2", "fb": "b"}, "insert", None, True, 60),
    "bulk insert base files": (pa.int64(), {"fa": "a1,a2", "fb": "b"}, "bulk_insert", None, False, 40),
    "bulk insert, string key, per family": (pa.string(), {"fa": "a1,a2", "fb": "b"}, "bulk_insert", PER_FAMILY_FILES,
                                            False, 40),
    "streamed insert": (pa.int64(), {"fa": "a1,a2", "fb": "b"}, "insert", STREAMED, False, 300),
    "streamed insert, string key, no families": (pa.string(), None, "insert", STREAMED, False, 300),
    "int32 key": (pa.int32(), {"fa": "a1,a2", "fb": "b"}, "insert", None, False, 40),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_kept_keys_equal_the_written_files_and_updates_read_as_by_key(tmp_path, monkeypatch, scenario):
    """Every kept spine equals the file's keys read back; the updates record positions without
    reading a file's keys; rows read by position = rows read by key = the model."""
    key_type, families, first, options, partitioned, n = SCENARIOS[scenario]
    fields = [("id", key_type), ("a1", pa.float64()), ("a2", pa.string()), ("b", pa.float64())]
    schema = pa.schema(fields + ([("p", pa.string())] if partitioned else []))
    table = pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=2, column_families=families,
                                partition_fields="p" if partitioned else ())
    ids = list(range(n))
    part = {"p": [f"p{i % 3}" for i in ids]} if partitioned else {}
    getattr(table, first)(pa.table({**_rows(ids, key_type, 0), "b": [i * 2.0 for i in ids], **part}, schema=schema),
                          options=options)
    model = {i: (float(i), f"v0_{i}", i * 2.0) for i in ids}
    assert _assert_kept_as_read_back(table) == (6 if partitioned else 2) * (2 if options == PER_FAMILY_FILES else 1)
    reads = _count_reads(monkeypatch)
    rng = random.Random(8)
    for step in (1, 2):
        changed = sorted(rng.sample(ids, n // 4))
        extra = {"p": [f"p{i % 3}" for i in changed]} if partitioned else {}
        table.upsert(pa.table({**_rows(changed, key_type, step), **extra}))
        model.update({i: (float(step * 1000 + i), f"v{step}_{i}", model[i][2]) for i in changed})
        _assert_kept_as_read_back(table)
    assert reads == []  # (every update found its file's keys kept by the insert)
    updates = [h for logs in _logs(table).values() for _, h, _ in logs if h[HeaderKey.INSTANT_TIME] != logs[0][1].get(
        HeaderKey.INSTANT_TIME) or first == "bulk_insert"]
    assert updates and all(POSITIONS in h for h in updates)
    monkeypatch.undo()
    columns = ["id", "a1", "a2", "b"]
    by_position = table.read(columns=columns).sort_by("id").to_pylist()
    METADATA_CACHE.clear()
    by_key = table.read(columns=columns, strategy="hash").sort_by("id").to_pylist()
    key = (lambda i: i) if pa.types.is_integer(key_type) else (lambda i: f"k{i}")
    expected = sorted(({"id": key(i), "a1": a1, "a2": a2, "b": b} for i, (a1, a2, b) in model.items()),
                      key=lambda r: r["id"])
    assert by_position == by_key == expected


@pytest.mark.parametrize("ids", [range(-20, 20), [2 ** 62 + i for i in range(20)]], ids=["negative", "huge"])
def test_integer_keys_without_codes_are_kept_as_their_spellings_and_positioned(tmp_path, ids):
    """Keys without key codes: kept as their decimal spellings (the record keys), as the file
    reads back; the update records its positions and reads right
    (tests/test_positions_wide_integer_keys.py covers such keys in full)."""
    schema = pa.schema([("id", pa.int64()), ("a1", pa.float64()), ("a2", pa.string()), ("b", pa.float64())])
    table = pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=1, column_families={"fa": "a1,a2",
                                                                                                   "fb": "b"})
    ids = list(ids)
    table.insert(pa.table({**_rows(ids, pa.int64(), 0), "b": [1.0] * len(ids)}, schema=schema))
    ((kind, _, spine),) = _kept(table)
    assert kind == "write:keys:id@lead" and spine.to_pylist() == sorted(str(i) for i in ids)
    assert _assert_kept_as_read_back(table) == 1
    table.upsert(pa.table(_rows(ids[::3], pa.int64(), 1)))
    (logs,) = _logs(table).values()
    assert [POSITIONS in h for _, h, _ in logs] == [False, True]  # (the insert, the update of fa)
    assert decode_positions(logs[1][1][POSITIONS]).tolist() == [logs[0][2].index(k) for k in logs[1][2]]
    rows = table.read(columns=["id", "a1"]).sort_by("id").to_pylist()
    assert rows == sorted(({"id": i, "a1": float(1000 + i) if i in ids[::3] else float(i)} for i in ids),
                          key=lambda r: r["id"])


def test_families_with_the_same_keys_against_different_bases_look_up_their_own(tmp_path):
    """One upsert writes the same keys to two families whose first blocks differ (per-family
    files: fa's started by an insert of ids 0..9, fb's by an update of ids 7..14): the shared
    lookup of the task must not hand fa's positions to fb."""
    schema = pa.schema([("id", pa.int64()), ("a1", pa.float64()), ("b", pa.float64())])
    table = pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=1, column_families={"fa": "a1",
                                                                                                   "fb": "b"})
    table.insert(pa.table({"id": list(range(10)), "a1": [float(i) for i in range(10)]}), options=PER_FAMILY_FILES)
    table.upsert(pa.table({"id": list(range(7, 15)), "b": [100.0 + i for i in range(7, 15)]}))
    table.upsert(pa.table({"id": [7, 8, 9], "a1": [-1.0] * 3, "b": [-2.0] * 3}))
    (logs,) = _logs(table).values()
    first = {name.rsplit(".log", 1)[0].rsplit("_", 1)[1]: keys for name, _, keys in logs[:2]}
    assert first == {"fa": [str(i) for i in range(10)], "fb": ["10", "11", "12", "13", "14", "7", "8", "9"]}
    last = {name.rsplit(".log", 1)[0].rsplit("_", 1)[1]: decode_positions(h[POSITIONS]).tolist()
            for name, h, _ in logs[2:]}
    assert last == {"fa": [7, 8, 9], "fb": [5, 6, 7]}
    rows = table.read().sort_by("id").to_pylist()
    METADATA_CACHE.clear()
    assert table.read(strategy="hash").sort_by("id").to_pylist() == rows
    assert rows == ([{"id": i, "a1": float(i), "b": None} for i in range(7)]
                    + [{"id": i, "a1": -1.0, "b": -2.0} for i in (7, 8, 9)]
                    + [{"id": i, "a1": None, "b": 100.0 + i} for i in range(10, 15)])

"""Record positions written with the log block (pyhudi/write/positions.py, the RECORD_POSITIONS
codec in pyhudi/logformat/positions.py) and read by the positional merge (pyhudi/read/positions.py):
an update block's header names the base rows of its records, so even the first read of a
process merges by position without decoding a key — and only when the header is usable."""

from __future__ import annotations

import base64
import glob
import os
import struct

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.errors import LogFormatError
from pyhudi.logformat import LogReader
from pyhudi.logformat.block import HeaderKey
from pyhudi.logformat.positions import decode_positions, encode_positions
from pyhudi.read import positions as positions_module
from pyhudi.read.metadata_cache import METADATA_CACHE
from pyhudi.storage.fs import Storage
from read_helpers import run_plan_tasks

SCHEMA = pa.schema([("id", pa.int64()), ("a1", pa.float64()), ("a2", pa.string()), ("b", pa.float64())])
FAMILIES = {"fa": "a1,a2", "fb": "b"}
N = 40
POSITIONS, BASE_INSTANT = HeaderKey.RECORD_POSITIONS, HeaderKey.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS


@pytest.fixture(autouse=True)
def cache():
    METADATA_CACHE.clear()
    yield METADATA_CACHE
    METADATA_CACHE.clear()


# Most tests here check positions against a family's own base file (fa's): their bulk insert writes
# one base file per family instead of the default full-row base file.
PER_FAMILY_FILES = {"hoodie.pyhudi.insert.full.row": "false"}


def _table(tmp_path, key_type=pa.int64(), insert_options=PER_FAMILY_FILES) -> pyhudi.Table:
    schema = SCHEMA.set(0, pa.field("id", key_type))
    table = pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=1, column_families=FAMILIES)
    ids = list(range(N))
    table.bulk_insert(pa.table({"id": pa.array(ids if key_type == pa.int64() else [str(i) for i in ids], key_type),
                                "a1": [float(i) for i in ids], "a2": [f"s{i}" for i in ids],
                                "b": [i * 2.0 for i in ids]}, schema=schema), options=insert_options)
    return table


def _update(table, ids, a1, a2) -> None:
    key_type = table.schema.field("id").type
    table.upsert(pa.table({"id": pa.array(ids if key_type == pa.int64() else [str(i) for i in ids], key_type),
                           "a1": pa.array(a1, pa.float64()), "a2": pa.array(a2, pa.string())}))


def _blocks(table) -> list:
    """The headers of the table's log blocks, oldest log file first."""
    headers = []
    for path in sorted(glob.glob(os.path.join(table.storage.root, ".*.log.*")), key=os.path.getmtime):
        with LogReader(Storage(os.path.dirname(path)), os.path.basename(path)) as reader:
            headers.extend(block.header for block in reader)
    return headers


def _read(table, columns):
    return run_plan_tasks(table, columns)


def _base_keys(table, family="fa") -> list[str]:
    base = next(b for b in next(iter(table.file_groups())).base_files if b.name.family == family)
    return pq.read_table(table.storage.full_path(base.relpath), columns=["_hoodie_record_key"]).column(0).to_pylist()


def _no_key_decoded(monkeypatch) -> None:
    monkeypatch.setattr(positions_module, "_keys_of", lambda source: pytest.fail("keys read to learn positions"))
    monkeypatch.setattr("pyhudi.read.sources.KeySpec.keys", lambda *a, **k: pytest.fail("a key was decoded"))


# --------------------------------------------------------------------------- codec
def test_positions_round_trip_through_every_container_kind():
    cases = [np.array([2, 7]), np.arange(0, 200_000, 3),  # arrays, then 4 containers of > 4096: bitmaps
             np.r_[np.arange(5000), 70_000 + np.arange(10), (1 << 33) + np.arange(3)],  # 3 containers, 2 buckets
             np.array([], dtype=np.int64), np.array([9, 1, 5])]
    for positions in cases:
        assert decode_positions(encode_positions(positions)).tolist() == sorted(positions.tolist())


def test_positions_of_two_rows_are_the_portable_roaring_bytes():
    """Java's ``Roaring64NavigableMap.serializePortable`` of {2, 7}: one bucket (high half 0), a
    32-bit bitmap without runs holding one array container — then Base64."""
    raw = struct.pack("<QI", 1, 0) + struct.pack("<II", 12346, 1) + struct.pack("<HH", 0, 1) + \
        struct.pack("<I", 16) + struct.pack("<HH", 2, 7)
    assert encode_positions(np.array([7, 2])) == base64.b64encode(raw).decode()
    assert decode_positions(base64.b64encode(raw).decode()).tolist() == [2, 7]


def test_run_containers_written_by_java_decode():
    """A bitmap Java's ``runOptimize`` turned into run containers: cookie 12347 with the
    container count, a run bitset, no offsets (fewer than 4 containers), then runs of
    (start, length - 1): {10..14, 100} in container 0 and {65536 + 3..4} in container 1."""
    bitmap = struct.pack("<I", 12347 | (1 << 16)) + bytes([0b11]) + struct.pack("<HHHH", 0, 5, 1, 1) + \
        struct.pack("<HHHHH", 2, 10, 4, 100, 0) + struct.pack("<HHH", 1, 3, 1)
    text = base64.b64encode(struct.pack("<QI", 1, 0) + bitmap).decode()
    assert decode_positions(text).tolist() == [10, 11, 12, 13, 14, 100, 65539, 65540]


@pytest.mark.parametrize("text, problem", [("not base64!", "not Base64"),
                                           (base64.b64encode(b"\x01\x00").decode(), "not a portable Roaring"),
                                           (base64.b64encode(struct.pack("<QI", 1, 0) + struct.pack("<II", 99, 0))
                                            .decode(), "not a portable Roaring")])
def test_a_damaged_positions_header_is_a_log_format_error(text, problem):
    with pytest.raises(LogFormatError, match=problem):
        decode_positions(text)


# --------------------------------------------------------------------------- written and read
@pytest.mark.parametrize("key_type", [pa.int64(), pa.string()])
def test_an_update_block_records_the_base_rows_of_its_records(tmp_path, key_type):
    table = _table(tmp_path, key_type)
    _update(table, [3, 17, 39], [30.0, 170.0, 390.0], ["x3", "x17", "x39"])
    (header,) = _blocks(table)
    keys = _base_keys(table)
    base = next(b for b in next(iter(table.file_groups())).base_files if b.name.family == "fa")
    assert header[BASE_INSTANT] == base.instant
    assert decode_positions(header[POSITIONS]).tolist() == sorted(keys.index(k) for k in ("3", "17", "39"))


def test_the_first_read_merges_by_written_positions_without_a_key(tmp_path, monkeypatch):
    table = _table(tmp_path)
    _update(table, [3, 17, 39], [30.0, 170.0, 390.0], ["x3", "x17", "x39"])
    _update(table, [17, 20], [-17.0, -20.0], ["y17", "y20"])
    by_key = table.read(columns=["id", "a1", "a2"], strategy="hash")
    expected = by_key.sort_by("id").select(["a1", "a2"]).to_pylist()
    assert expected[17] == {"a1": -17.0, "a2": "y17"} and expected[3] == {"a1": 30.0, "a2": "x3"}
    METADATA_CACHE.clear()
    _no_key_decoded(monkeypatch)
    got, metrics = _read(table, ["a1", "a2"])
    assert metrics["strategy.positions"] == 1 and metrics["positions_written"] == 2
    assert "positions_learnt" not in metrics
    assert sorted(got.to_pylist(), key=lambda r: r["a2"]) == sorted(expected, key=lambda r: r["a2"])


def test_positions_of_a_family_update_refer_to_the_default_full_row_base_file(tmp_path, monkeypatch):
    """A default bulk insert writes one full-row base file; a family's update block names its rows
    and instant, and the first read merges by them without decoding a key."""
    table = _table(tmp_path, insert_options=None)
    _update(table, [3, 17, 39], [30.0, 170.0, 390.0], ["x3", "x17", "x39"])
    (header,) = _blocks(table)
    (base,) = next(iter(table.file_groups())).base_files
    assert base.name.family is None and base.relpath.endswith(f"_0-1-0_{base.instant}.parquet")
    keys = _base_keys(table, family=None)
    assert header[BASE_INSTANT] == base.instant
    assert decode_positions(header[POSITIONS]).tolist() == sorted(keys.index(k) for k in ("3", "17", "39"))
    METADATA_CACHE.clear()
    _no_key_decoded(monkeypatch)
    got, metrics = _read(table, ["id", "a1", "a2", "b"])
    assert metrics["strategy.positions"] == 1 and metrics["positions_written"] == 1
    updated = {3: (30.0, "x3"), 17: (170.0, "x17"), 39: (390.0, "x39")}
    assert got.sort_by("id").to_pylist() == [
        {"id": i, "a1": updated.get(i, (float(i),))[0], "a2": updated.get(i, (0, f"s{i}"))[1], "b": i * 2.0}
        for i in range(N)]


def test_written_positions_give_exactly_the_key_merge_result(tmp_path):
    table = _table(tmp_path, pa.string())
    rng = np.random.default_rng(3)
    for round_ in range(3):
        ids = sorted(rng.choice(N, 12, replace=False).tolist())
        _update(table, ids, [float(-i - 100 * round_) for i in ids], [f"r{round_}-{i}" for i in ids])
    METADATA_CACHE.clear()
    positional, metrics = _read(table, ["a1", "a2"])
    assert metrics["positions_written"] == 3 and metrics["strategy.positions"] == 1
    merged = table.read(columns=["a1", "a2"], strategy="hash")
    assert positional.sort_by("a2").equals(merged.sort_by("a2"))


def test_a_block_inserting_a_key_records_no_positions_and_merges_by_key(tmp_path):
    table = _table(tmp_path)
    _update(table, [1, 100], [10.0, 1000.0], ["x1", "x100"])
    (header,) = _blocks(table)
    assert POSITIONS not in header and BASE_INSTANT not in header
    got, metrics = _read(table, ["id", "a1"])
    assert got.sort_by("id").column("a1").to_pylist() == [0.0, 10.0, *(float(i) for i in range(2, N)), 1000.0]
    assert "strategy.positions" not in metrics


def test_the_write_option_turns_positions_off(tmp_path):
    table = _table(tmp_path)
    table.upsert(pa.table({"id": pa.array([5], pa.int64()), "a1": [50.0], "a2": ["x5"]}),
                 options={"hoodie.write.record.positions": "false"})
    (header,) = _blocks(table)
    assert POSITIONS not in header
    _, metrics = _read(table, ["a1", "a2"])
    assert metrics["positions_learnt"] == 1 and "positions_written" not in metrics


DAMAGES = ["other base instant", "one position short", "past the base", "not a bitmap"]


def forge_positions_headers(monkeypatch, damage: str, base_rows: int) -> None:
    """Make every position header a writer computes unusable in the way ``damage`` names
    (``base_rows``: the rows of the base the positions refer to)."""
    import pyhudi.write.handle as handle

    real = handle.positions_header

    def forged(storage, base, keys, integer_key):
        header = real(storage, base, keys, integer_key)
        positions = decode_positions(header[POSITIONS])
        if damage == "other base instant":
            header[BASE_INSTANT] = "20000101000000000"
        elif damage == "one position short":
            header[POSITIONS] = encode_positions(positions[:-1])
        elif damage == "past the base":
            header[POSITIONS] = encode_positions(np.r_[positions[:-1], base_rows])
        else:
            header[POSITIONS] = base64.b64encode(b"\x00" * 5).decode()
        return header

    monkeypatch.setattr(handle, "positions_header", forged)


@pytest.mark.parametrize("damage", DAMAGES)
def test_an_unusable_positions_header_is_ignored_and_positions_are_learnt(tmp_path, monkeypatch, damage):
    """The header is used only when it names this base file's instant, holds one distinct
    position per record, each a row of the base file, and decodes: otherwise the reader learns
    positions from the keys (or merges by key) and the rows stay exact."""
    forge_positions_headers(monkeypatch, damage, N)
    table = _table(tmp_path)
    _update(table, [4, 6, 8], [40.0, 60.0, 80.0], ["x4", "x6", "x8"])
    got, metrics = _read(table, ["id", "a1", "a2"])
    rows = {r["id"]: (r["a1"], r["a2"]) for r in got.to_pylist()}
    assert rows[4] == (40.0, "x4") and rows[6] == (60.0, "x6") and rows[8] == (80.0, "x8") and rows[5] == (5.0, "s5")
    assert len(rows) == N and "positions_written" not in metrics


def test_positions_refer_to_the_base_they_were_written_against(tmp_path):
    """After a compaction the family has a new base file: older blocks' positions (naming the
    old base's instant) are not applied to it; a newer block names the new base."""
    table = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
    table.bulk_insert(pa.table({"id": pa.array(range(N), pa.int64()), "a1": [float(i) for i in range(N)],
                                "a2": [f"s{i}" for i in range(N)], "b": [0.0] * N}, schema=SCHEMA))
    _update(table, [2], [20.0], ["x2"])
    table.compact()
    _update(table, [2, 3], [200.0, 30.0], ["y2", "x3"])
    headers = [h for h in _blocks(table) if POSITIONS in h]
    group = next(iter(table.file_groups()))
    compacted = group.latest_slice("fa", True).base_file
    assert len(headers) == 2 and headers[0][BASE_INSTANT] < compacted.instant == headers[-1][BASE_INSTANT]
    METADATA_CACHE.clear()
    got, metrics = _read(table, ["id", "a1", "a2"])
    rows = {r["id"]: (r["a1"], r["a2"]) for r in got.to_pylist()}
    assert rows[2] == (200.0, "y2") and rows[3] == (30.0, "x3") and len(rows) == N
    assert metrics["strategy.positions"] == 1 and metrics["positions_written"] == 1


@pytest.mark.parametrize("same_process", [True, False], ids=["written by this process", "by another"])
def test_a_writing_process_reads_a_base_file_keys_at_most_once(tmp_path, monkeypatch, same_process):
    """Positions cost at most one read of the base file's key column per process, not one per
    update: none in the process that wrote the base file (it kept the keys it wrote)."""
    import pyhudi.write.positions as write_positions

    table = _table(tmp_path)
    if not same_process:
        METADATA_CACHE.clear()  # (another process)
    calls = []
    real = write_positions._base_keys
    monkeypatch.setattr(write_positions, "_base_keys", lambda *a: calls.append(a[1]) or real(*a))
    _update(table, [1, 2], [10.0, 20.0], ["x1", "x2"])
    _update(table, [2, 30], [200.0, 300.0], ["y2", "x30"])
    headers = _blocks(table)
    if same_process:
        assert calls == []
    else:
        assert len(calls) == 1 and calls[0].relpath.endswith("_fa.parquet") and not calls[0].lead_block
    keys = _base_keys(table)
    assert [decode_positions(h[POSITIONS]).tolist() for h in headers] == \
        [sorted([keys.index("1"), keys.index("2")]), sorted([keys.index("2"), keys.index("30")])]


# --------------------------------------------------------------------------- Apache Hudi's layout
def _hudi_table(tmp_path, positions: list[int] | None, base_instant: str | None = None):
    """Apache Hudi's layout (tests/test_read_hudi_merge_order.py): a base file with keys in
    arrival order (not sorted), then an Avro data block updating k3 and k1 — listed in base-row
    order, as Hudi's writers list them — with the position headers when given."""
    import test_read_hudi_merge_order as hudi

    t = hudi._table(tmp_path, None)
    base = hudi._base(t, {"id": ["k5", "k3", "k9", "k1"], "a": [5, 3, 9, 1], "b": ["e", "c", "i", "a"],
                          "ts": [0, 0, 0, 0]})
    block = hudi._avro(hudi.T2, {"id": ["k3", "k1"], "a": [30, 10], "b": ["C", "A"], "ts": [1, 1]})
    if positions is not None:
        block.header[POSITIONS] = encode_positions(np.array(positions))
        block.header[BASE_INSTANT] = base_instant or hudi.T1
    hudi._log(t, hudi.T2, base, block)
    return pyhudi.open_table(t.path)


EXPECTED_HUDI = [("k1", 10, "A"), ("k3", 30, "C"), ("k5", 5, "e"), ("k9", 9, "i")]


def test_an_apache_hudi_avro_block_merges_by_its_written_positions(tmp_path, monkeypatch):
    """The block's records (decoded whole, as Avro blocks are) land on base rows 1 and 3: the
    base file's keys are never read, and nothing merges by key."""
    table = _hudi_table(tmp_path, [1, 3])
    monkeypatch.setattr(positions_module, "_keys_of", lambda source: pytest.fail("keys read to learn positions"))
    monkeypatch.setattr("pyhudi.read.sources.ParquetInput.chunks", lambda *a, **k: pytest.fail("base keys read"))
    monkeypatch.setattr("pyhudi.read.family_reader._hash_merge", lambda *a: pytest.fail("merged by key"))
    got, metrics = _read(table, ["a", "b"])
    assert metrics["strategy.positions"] == 1 and metrics["positions_written"] == 1
    assert sorted(got.to_pylist(), key=lambda r: r["a"]) == \
        [{"a": a, "b": b} for _, a, b in sorted(EXPECTED_HUDI, key=lambda r: r[1])]
    monkeypatch.undo()
    rows = table.read(columns=["id", "a", "b"])
    assert sorted((r["id"], r["a"], r["b"]) for r in rows.to_pylist()) == EXPECTED_HUDI


@pytest.mark.parametrize("positions, base_instant", [(None, None), ([1, 3], "20250301095900000"), ([1], None),
                                                     ([1, 4], None)])
def test_an_apache_hudi_avro_block_without_usable_positions_merges_by_key(tmp_path, positions, base_instant):
    """No header, a header naming another base file, too few positions, a position past the
    base file: the block merges by key, with the same rows."""
    table = _hudi_table(tmp_path, positions, base_instant)
    got, metrics = _read(table, ["id", "a", "b"])
    assert "strategy.positions" not in metrics
    assert sorted((r["id"], r["a"], r["b"]) for r in got.to_pylist()) == EXPECTED_HUDI


def test_a_collected_read_maps_files_only_when_it_takes_most_of_a_family(tmp_path, monkeypatch):
    """Memory-mapping a base file pays off for reads of most of a family's columns; a read of
    few columns reads its byte ranges natively. Log files are mapped for any collected read (an
    unmapped block is a Python file object to Arrow). The files are read the same either way."""
    schema = pa.schema([("id", pa.int64()), *[(f"c{i}", pa.float64()) for i in range(4)]])
    table = pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=1,
                                column_families={"f": "c0,c1,c2,c3"})
    table.bulk_insert(pa.table({"id": pa.array(range(N), pa.int64()),
                                **{f"c{i}": [float(r) for r in range(N)] for i in range(4)}}, schema=schema))
    table.upsert(pa.table({"id": pa.array([3, 4], pa.int64()), "c0": [30.0, 40.0]}))
    mapped = []
    real = pa.memory_map
    monkeypatch.setattr(pa, "memory_map", lambda path, *a: mapped.append(os.path.basename(path)) or real(path, *a))
    expected = [30.0 if i == 3 else 40.0 if i == 4 else float(i) for i in range(N)]
    few = table.read(columns=["id", "c0"]).sort_by("id")
    assert mapped and all(".log." in name for name in mapped) and few.column("c0").to_pylist() == expected
    most = table.read(columns=["id", "c0", "c1"]).sort_by("id")
    assert any(name.endswith("_f.parquet") for name in mapped) and any(".log." in name for name in mapped)
    assert most.column("c0").to_pylist() == expected and most.column("c1").to_pylist() == [float(i) for i in range(N)]

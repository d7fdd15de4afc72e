"""Record positions in updates of merge-on-read tables without a bucket index (the default table).

``pyhudi.create_table(path, schema, "id")`` makes a merge-on-read table with a simple index: an
update of stored keys appends a log block to each file group holding them. Like a bucketed
table's, the block records its records' rows in the group's base file (``RECORD_POSITIONS`` and
``BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS``, as Apache Hudi 1.x writes them), so a process's
first read merges it by position without decoding a key. Before, these blocks carried no
positions: every new process learnt them by reading the base file's keys.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.logformat.block import HeaderKey
from pyhudi.logformat.positions import decode_positions
from pyhudi.logformat.reader import read_log_blocks
from pyhudi.read.metadata_cache import METADATA_CACHE
from pyhudi.storage.fs import Storage
from read_helpers import fresh_metadata_cache, run_plan_tasks  # noqa: F401 (a fixture)
from test_read_written_positions import _no_key_decoded

pytestmark = pytest.mark.usefixtures("fresh_metadata_cache")

POSITIONS, BASE_INSTANT = HeaderKey.RECORD_POSITIONS, HeaderKey.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])


def _rows(ids, value, partitions=None):
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{value}{i}" for i in ids],
                     "p": partitions or ["x"] * len(ids)}, schema=SCHEMA)


def _headers(path, instant):
    """(file id, base instant, positions) of the data blocks ``instant`` appended."""
    storage, out = Storage(path), []
    for root, _, names in os.walk(path):
        for name in names:
            if ".log." in name and f"_{instant}.log." in name:
                relpath = os.path.relpath(os.path.join(root, name), path)
                for block in read_log_blocks(storage, relpath):
                    text = block.header.get(POSITIONS)
                    out.append((name[1:].split("_")[0], block.header.get(BASE_INSTANT),
                                decode_positions(text).tolist() if text else None))
    return sorted(out)


def _base_of(path, partition=""):
    """(file id, instant) of the one base file in ``partition``."""
    [name] = [n for n in os.listdir(os.path.join(path, partition)) if n.endswith(".parquet")]
    return name.split("_")[0], name.rsplit("_", 1)[1].split(".")[0]


def test_an_update_of_the_default_table_records_positions_in_the_base_file(tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, SCHEMA, "id")
    t.insert(_rows(range(20), "a"))
    _, base_instant = _base_of(path)
    instant = t.upsert(_rows([3, 7, 15], "u"))
    # the base file is sorted by record key as a string: "0", "1", "10".."19", "2", "3", ...
    [(file_id, named, positions)] = _headers(path, instant)
    assert (named, positions) == (base_instant, [7, 13, 17])  # "15", "3", "7"
    METADATA_CACHE.clear()  # (a fresh process)
    _no_key_decoded(monkeypatch)
    rows, metrics = run_plan_tasks(pyhudi.open_table(path), ["id", "v"])
    assert metrics["positions_written"] == 1 and metrics["strategy.positions"] == 1
    assert "positions_learnt" not in metrics
    assert sorted(rows.to_pylist(), key=lambda r: r["id"]) == [
        {"id": i, "v": f"u{i}" if i in (3, 7, 15) else f"a{i}"} for i in range(20)]


def test_a_block_that_also_inserts_records_no_positions(tmp_path):
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, SCHEMA, "id", partition_fields="p")
    t.insert(_rows(range(10), "a", ["x"] * 5 + ["y"] * 5))
    instant = t.upsert(_rows([1, 8, 30], "u", ["x", "y", "y"]))
    # x: an update of key 1 alone; y: key 8 and the new key 30, given to the small file's log
    (x_group, x_instant), (y_group, _) = _base_of(path, "x"), _base_of(path, "y")
    assert _headers(path, instant) == sorted([(x_group, x_instant, [1]), (y_group, None, None)])
    assert sorted(r["id"] for r in pyhudi.open_table(path).read(columns=["id"]).to_pylist()) == [*range(10), 30]


def test_hudi_rs_reads_the_positioned_update(tmp_path):
    hudi = pytest.importorskip("hudi")
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, SCHEMA, "id")
    t.insert(_rows(range(20), "a"))
    t.upsert(_rows([0, 19], "u"))
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read()
    got = sorted(pa.Table.from_batches(batches).select(["id", "v"]).to_pylist(), key=lambda r: r["id"])
    assert got == [{"id": i, "v": f"u{i}" if i in (0, 19) else f"a{i}"} for i in range(20)]


def test_positions_can_be_turned_off(tmp_path):
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, SCHEMA, "id")
    t.insert(_rows(range(5), "a"))
    instant = t.upsert(_rows([2], "u"), options={"hoodie.write.record.positions": "false"})
    assert [(named, positions) for _, named, positions in _headers(path, instant)] == [(None, None)]

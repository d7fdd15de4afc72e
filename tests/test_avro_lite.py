"""The small Avro container decoder (:mod:`pyhudi.timeline.avro_lite`) gives what fastavro gives.

A cold read decodes the timeline's small instant files without importing fastavro (issue 15);
these tests hold the two decoders to the same values on every Avro file of the Apache Hudi
fixture tables and of pyhudi-written instants of every kind, and check which files are handed
to fastavro (other codecs, logical types, damaged bytes, large files).
"""

from __future__ import annotations

import io
import zipfile
from types import SimpleNamespace

import fastavro
import numpy as np
import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import MetadataError
from pyhudi.timeline import metadata_base
from pyhudi.timeline.avro_lite import LITE_MAX_BYTES, NotLite, read_container_lite
from pyhudi.timeline.metadata_base import read_container, read_container_fastavro
from tests.conftest import fixture_zips


def _avro_members(zip_path) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(zip_path) as zf:
        return [(name, data) for name in zf.namelist() if (data := zf.read(name))[:4] == b"Obj\x01"]


def test_every_fixture_instant_decodes_as_fastavro_does():
    files = [item for zip_path in fixture_zips() for item in _avro_members(zip_path)]
    assert len(files) >= 150  # (commits, replace commits, plans, rollbacks of Hudi 0.x to 1.x)
    for name, data in files:
        assert read_container_lite(data) == read_container_fastavro(data), name


def test_pyhudi_instants_of_every_kind_decode_as_fastavro_does(tmp_path):
    """Delta commits, a compaction plan and its commit, a clean plan and its metadata."""
    path = tmp_path / "t"
    ids = np.arange(40, dtype=np.int64)
    data = pa.table({"id": ids, "a": ids * 1.5, "b": ids.astype(str)})
    table = pyhudi.create_table(str(path), data.schema, "id", num_buckets=2, column_families={"f": "a", "g": "b"})
    table.insert(data)
    for round_ in range(3):
        table.upsert(data.select(["id", "a"]).slice(0, 10 + round_))
    table.compact()
    table.clean(options={"hoodie.cleaner.commits.retained": "1"})
    actions = set()
    files = sorted(f for f in (path / ".hoodie" / "timeline").iterdir() if f.is_file())
    for file in files:
        data_bytes = file.read_bytes()
        if data_bytes[:4] != b"Obj\x01":
            continue
        actions.add(file.name.split(".")[1])
        assert read_container_lite(data_bytes) == read_container_fastavro(data_bytes), file.name
    assert {"deltacommit", "compaction", "commit", "clean"} <= actions


def _container(records: list, schema: dict, codec: str = "null") -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec)
    return out.getvalue()


_SCHEMA = {
    "type": "record", "name": "Outer", "namespace": "x.y",
    "fields": [
        {"name": "s", "type": "string"},
        {"name": "n", "type": ["null", "long"]},
        {"name": "d", "type": "double"},
        {"name": "f", "type": "float"},
        {"name": "ok", "type": "boolean"},
        {"name": "raw", "type": "bytes"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
        {"name": "inner", "type": {"type": "array", "items": {
            "type": "record", "name": "Inner", "fields": [{"name": "m", "type": {"type": "map", "values": "int"}}]}}},
        {"name": "again", "type": ["null", "Inner"]},
    ],
}
_RECORD = {"s": "héllo", "n": -(2**40), "d": 2.5, "f": 0.25, "ok": True, "raw": b"\x00\x01", "kind": "B",
           "fx": b"abcd", "inner": [{"m": {"k": -3, "j": 7}}, {"m": {}}], "again": {"m": {"z": 1}}}


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_every_avro_type_and_named_reference_decodes(codec):
    data = _container([_RECORD], _SCHEMA, codec)
    assert read_container_lite(data) == ("x.y.Outer", _RECORD) == read_container_fastavro(data)


def test_a_container_without_records_reads_as_none():
    data = _container([], _SCHEMA)
    assert read_container_lite(data) == ("x.y.Outer", None)


@pytest.mark.parametrize("case", ["snappy codec", "logical type", "truncated", "not avro"])
def test_files_it_does_not_take_go_to_fastavro(case):
    if case == "snappy codec":
        data = _container([_RECORD], _SCHEMA, "snappy")
    elif case == "logical type":
        schema = {"type": "record", "name": "T", "fields": [{"name": "t", "type": {"type": "long",
                                                                                    "logicalType": "timestamp-millis"}}]}
        data = _container([{"t": 5}], schema)
    elif case == "truncated":
        data = _container([_RECORD], _SCHEMA)[:-30]
    else:
        data = b"Obj\x02" + b"\x00" * 40
    with pytest.raises(NotLite):
        read_container_lite(data)


def test_damaged_bytes_are_a_metadata_error_as_before():
    data = _container([_RECORD], _SCHEMA)[:-30]
    with pytest.raises(MetadataError, match="undecodable Avro container"):
        read_container(data)


def test_large_containers_and_a_loaded_fastavro_use_fastavro(monkeypatch):
    calls = []
    monkeypatch.setattr(metadata_base, "read_container_lite", lambda data: calls.append(len(data)) or ("", None))
    big = _container([{**_RECORD, "raw": b"x" * LITE_MAX_BYTES}], _SCHEMA)
    assert read_container(big)[1]["raw"] == b"x" * LITE_MAX_BYTES  # (fastavro's answer: the stub was not asked)
    assert calls == []
    small = _container([_RECORD], _SCHEMA)
    assert read_container(small)[1] == _RECORD  # (fastavro is loaded in this process: it decodes)
    assert calls == []
    monkeypatch.setattr(metadata_base, "sys", SimpleNamespace(modules={}))  # (as if fastavro were not loaded)
    assert read_container(small) == ("", None)  # (the stub answered)
    assert calls == [len(small)]


def test_a_block_count_beyond_the_bytes_left_goes_to_fastavro(monkeypatch):
    """A count larger than the bytes left (garbage, or items of no bytes such as nulls) is left
    to fastavro: the decoder never loops on a garbled count."""
    schema = {"type": "record", "name": "T", "fields": [{"name": "a", "type": {"type": "array", "items": "null"}}]}
    data = _container([{"a": [None] * 3}], schema)
    with pytest.raises(NotLite, match="block of 3 items"):
        read_container_lite(data)
    monkeypatch.setattr(metadata_base, "sys", SimpleNamespace(modules={}))  # (as if fastavro were not loaded)
    assert read_container(data) == ("T", {"a": [None, None, None]})

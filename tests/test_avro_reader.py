"""The timeline's own Avro container reader (:mod:`pyhudi.timeline.avro_reader`) decodes what
fastavro decodes: Apache Hudi's commit file, every instant file pyhudi writes, and a schema
with every Avro type; it hands logical types and other codecs to fastavro and reports damage
as :class:`MetadataError`."""

from __future__ import annotations

import io
import pathlib

import fastavro
import numpy as np
import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import MetadataError
from pyhudi.timeline import avro_reader
from pyhudi.timeline.metadata_base import read_container

FIXTURE = pathlib.Path("/work/shared/fixtures/hudi/commit_metadata/v8_deltacommit.avro")

EVERY_TYPE = {
    "type": "record", "name": "Outer", "namespace": "org.example",
    "fields": [
        {"name": "n", "type": "null"},
        {"name": "flag", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "raw", "type": "bytes"},
        {"name": "s", "type": "string"},
        {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
        {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 4}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "counts", "type": {"type": "map", "values": "long"}},
        {"name": "maybe", "type": ["null", "string"], "default": None},
        {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [
            {"name": "x", "type": "long"}, {"name": "c", "type": "Color"}]}},
        {"name": "inners", "type": {"type": "array", "items": "Inner"}},
        {"name": "byName", "type": {"type": "map", "values": ["null", "org.example.Inner"]}},
        {"name": "next", "type": ["null", "Outer"], "default": None},
    ],
}


def _record(depth: int = 0) -> dict:
    return {
        "n": None, "flag": depth % 2 == 0, "i": -(2**31), "l": 2**62 + depth, "f": 1.5, "d": -2.25e300,
        "raw": b"\x00\xff" * 3, "s": "héllo ✓" * (depth + 1), "color": "BLUE", "hash": b"abcd",
        "tags": ["a", "", "ü"] * 50, "counts": {"k": -1, "é": 2**40}, "maybe": None if depth else "x",
        "inner": {"x": 7, "c": "GREEN"}, "inners": [{"x": i, "c": "RED"} for i in range(3)],
        "byName": {"a": None, "b": {"x": -3, "c": "BLUE"}},
        "next": _record(depth + 1) if depth < 2 else None,
    }


def _container(schema: dict, records: list[dict], codec: str = "null") -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec)
    return out.getvalue()


def _fastavro(data: bytes):
    reader = fastavro.reader(io.BytesIO(data))
    return reader.writer_schema.get("name"), next(iter(reader), None)


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_every_avro_type_decodes_as_fastavro_decodes_it(codec):
    data = _container(EVERY_TYPE, [_record()], codec)
    name, record = avro_reader.read_one(data)
    assert (name, record) == _fastavro(data)
    assert name == "org.example.Outer"
    assert record["next"]["next"]["s"] == "héllo ✓" * 3 and record["next"]["next"]["next"] is None


def test_apache_hudi_commit_file_decodes_as_fastavro_decodes_it():
    data = FIXTURE.read_bytes()
    name, record = avro_reader.read_one(data)
    assert (name, record) == _fastavro(data)
    assert name == "org.apache.hudi.avro.model.HoodieCommitMetadata"
    assert record["operationType"] == _fastavro(data)[1]["operationType"] and record["partitionToWriteStats"]


def test_every_instant_file_pyhudi_writes_decodes_as_fastavro_decodes_it(tmp_path):
    """Delta commits, a compaction plan and its commit."""
    ids = np.arange(400, dtype=np.int64)
    data = pa.table({"id": ids, "a": ids * 2.0, "b": ids * 3.0})
    table = pyhudi.create_table(str(tmp_path / "t"), data.schema, "id", num_buckets=2,
                                column_families={"f0": "a", "f1": "b"})
    table.insert(data)
    for round_ in range(3):
        table.upsert(data.select(["id", "a"]).slice(round_ * 100, 50))
    table.compact()
    files = [p for p in (tmp_path / "t" / ".hoodie" / "timeline").iterdir()
             if p.is_file() and p.read_bytes()[:4] == b"Obj\x01"]
    assert sorted(p.name.split(".", 1)[1] for p in files) == ["commit", "compaction.requested", *["deltacommit"] * 4]
    for path in files:
        blob = path.read_bytes()
        assert avro_reader.read_one(blob) == _fastavro(blob), path.name


def test_logical_types_and_other_codecs_go_to_fastavro():
    schema = {"type": "record", "name": "T", "fields": [
        {"name": "day", "type": {"type": "int", "logicalType": "date"}}]}
    import datetime

    data = _container(schema, [{"day": datetime.date(2024, 1, 2)}])
    with pytest.raises(avro_reader.Unsupported, match="logical types"):
        avro_reader.read_one(data)
    assert read_container(data) == ("T", {"day": datetime.date(2024, 1, 2)})  # (fastavro's conversion)
    bz = _container(EVERY_TYPE, [_record()], "bzip2")
    with pytest.raises(avro_reader.Unsupported, match="codec b'bzip2'"):
        avro_reader.read_one(bz)
    assert read_container(bz) == _fastavro(bz)


def test_a_container_without_records_reads_as_none():
    data = _container(EVERY_TYPE, [])
    assert avro_reader.read_one(data) == ("org.example.Outer", None)
    assert read_container(data) == ("org.example.Outer", None)


def test_damaged_containers_raise_metadata_error(monkeypatch):
    import sys

    monkeypatch.delitem(sys.modules, "fastavro")  # (the process's first decodes: this reader's)
    data = FIXTURE.read_bytes()
    for damaged in (data[:len(data) // 2], data[:-3], data[:-16] + b"x" * 16):
        with pytest.raises(MetadataError, match="undecodable Avro container"):
            read_container(damaged)


def test_only_small_containers_while_fastavro_is_unloaded_are_decoded_here(monkeypatch):
    import sys

    monkeypatch.delitem(sys.modules, "fastavro")
    assert avro_reader.usable(b"x" * avro_reader.SMALL_BYTES)
    assert not avro_reader.usable(b"x" * (avro_reader.SMALL_BYTES + 1))
    monkeypatch.setitem(sys.modules, "fastavro", fastavro)
    assert not avro_reader.usable(b"x")

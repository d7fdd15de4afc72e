"""The JSON copy of a commit's record in its Avro container's metadata (issue 15, cold start).

pyhudi's commits carry their record twice: as the Avro datum every Hudi reader decodes, and as
JSON under the file-metadata key ``pyhudi.record.json`` with a CRC-32 over both, so a read in a
fresh process needs no Avro decoder. These tests pin the format, the equality of the two, that a
copy not matching its datum is ignored, and that a cold read of a pyhudi table loads no fastavro.
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import subprocess
import sys
import zlib

import fastavro
import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import MetadataError
from pyhudi.timeline.metadata import CleanerPlan, CommitMetadata, ReplaceCommitMetadata, WriteStat
from pyhudi.timeline.metadata_base import JSON_COPY_KEY, _read_long, decode_record, encode_container, read_container

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _metadata(data: bytes) -> dict[str, bytes]:
    return fastavro.reader(io.BytesIO(data)).metadata


def _datum_record(data: bytes) -> dict:
    return next(iter(fastavro.reader(io.BytesIO(data))))


def _commit() -> CommitMetadata:
    stat = WriteStat(file_id="00000000-0000-0000-0000-000000000000-0", path="p/a.parquet", prev_commit="null",
                     num_writes=10, num_deletes=1, num_update_writes=2, total_write_bytes=1234,
                     partition_path="p", file_size_in_bytes=1234)
    return CommitMetadata(partition_to_write_stats={"p": [stat]}, compacted=False,
                          extra_metadata={"schema": '{"type":"record","name":"r","fields":[]}', "k": "é \"q\""},
                          version=1, operation_type="UPSERT")


def test_a_commit_carries_its_record_as_json_beside_the_avro_datum():
    data = _commit().to_avro_bytes()
    copy = _metadata(data)["pyhudi.record.json"].encode("ascii")  # (fastavro hands metadata back as text)
    crc, text = copy[:8], copy[8:]
    assert json.loads(text) == _datum_record(data)
    block = io.BytesIO(data[data.index(data[-16:]) + 16:-16])  # (after the header's sync marker)
    assert _read_long(block) == 1
    size = _read_long(block)
    datum = block.read()
    assert len(datum) == size
    schema = _metadata(data)["avro.schema"].encode("utf-8")
    assert int(crc, 16) == zlib.crc32(datum, zlib.crc32(text, zlib.crc32(schema)))
    assert read_container(data) == ("org.apache.hudi.avro.model.HoodieCommitMetadata", _datum_record(data))


def test_replace_commits_carry_the_copy_and_plans_do_not():
    replace = ReplaceCommitMetadata(partition_to_write_stats={}, compacted=False, extra_metadata={}, version=1,
                                    operation_type="CLUSTER", partition_to_replace_file_ids={"p": ["f-0"]})
    data = replace.to_avro_bytes()
    assert json.loads(_metadata(data)["pyhudi.record.json"][8:])["partitionToReplaceFileIds"] == {"p": ["f-0"]}
    assert read_container(data)[1] == _datum_record(data)
    assert "pyhudi.record.json" not in _metadata(CleanerPlan().to_avro_bytes())


def _replace_in_datum(data: bytes, old: bytes, new: bytes) -> bytes:
    """``data`` with ``old`` replaced by ``new`` (same length) inside the Avro datum only."""
    assert len(old) == len(new)
    start = data.rindex(old)  # (the datum comes after the header and its JSON copy)
    assert start > data.index(JSON_COPY_KEY)
    return data[:start] + new + data[start + len(old):]


def test_a_copy_that_does_not_match_its_datum_is_ignored_and_the_datum_decoded():
    data = _commit().to_avro_bytes()
    changed = _replace_in_datum(data, b"UPSERT", b"INSERT")  # (a tool rewrote the datum, kept the copy)
    assert json.loads(_metadata(changed)["pyhudi.record.json"][8:])["operationType"] == "UPSERT"
    assert read_container(changed)[1]["operationType"] == "INSERT"
    assert decode_record("deltacommit", changed)["operationType"] == "INSERT"


def test_a_copy_under_a_rewritten_writer_schema_is_ignored():
    """The datum decodes to what the schema beside it says: a schema rewritten after the copy
    was made (here a field renamed) is believed over the copy."""
    data = _commit().to_avro_bytes()
    at = data.index(b'"operationType"')  # (the first: inside the embedded writer schema)
    assert at < data.index(JSON_COPY_KEY)
    changed = data[:at] + b'"operationTypx"' + data[at + 15:]
    assert read_container(changed)[1]["operationTypx"] == "UPSERT"
    assert "operationType" not in read_container(changed)[1]


def test_a_damaged_copy_is_ignored():
    data = _commit().to_avro_bytes()
    at = data.index(b'"operationType":"UPSERT"')
    damaged = data[:at] + b'"operationType":"UPSERX"' + data[at + 24:]
    assert read_container(damaged)[1]["operationType"] == "UPSERT"
    unparsable = data[:at] + b"}" * 24 + data[at + 24:]
    assert read_container(unparsable)[1]["operationType"] == "UPSERT"


def test_a_damaged_datum_under_a_good_copy_still_fails_as_a_damaged_file():
    data = _commit().to_avro_bytes()
    truncated = data[:-20]
    with pytest.raises(MetadataError, match="deltacommit instant"):
        decode_record("deltacommit", truncated)


_PROBE = """
import json, sys
import pyhudi
rows = pyhudi.open_table(sys.argv[1]).read(columns=["v"])
print(json.dumps({"fastavro": sorted(m for m in sys.modules if m.split(".")[0] in ("fastavro", "hashlib")),
                  "v": rows.column("v").to_pylist()}))
"""


def _cold_read(path: pathlib.Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", _PROBE, str(path)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_cold_read_of_a_pyhudi_table_loads_no_avro_decoder(tmp_path):
    table = pyhudi.create_table(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("v", pa.string())]), "id")
    table.insert(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    table.upsert(pa.table({"id": [2], "v": ["B"]}))
    out = _cold_read(tmp_path / "t")
    assert out == {"fastavro": [], "v": ["a", "B"]}


def test_a_commit_without_the_copy_is_decoded_from_its_datum(tmp_path):
    """A commit Apache Hudi wrote (no copy) reads the same: the table's latest commit is
    rewritten as Java writes it (schema only in the file metadata)."""
    table = pyhudi.create_table(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("v", pa.string())]), "id")
    table.insert(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    timeline = tmp_path / "t" / ".hoodie" / "timeline"
    (completed,) = [p for p in timeline.iterdir() if p.name.endswith(".deltacommit") and "_" in p.name]
    model = CommitMetadata.from_avro_bytes(completed.read_bytes())
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(json.loads(CommitMetadata.__avro_schema_json__)),
                               model.to_dict())
    completed.write_bytes(encode_container(CommitMetadata.__avro_schema_json__, buf.getvalue()))
    assert "pyhudi.record.json" not in _metadata(completed.read_bytes())
    out = _cold_read(tmp_path / "t")
    assert out["v"] == ["a", "b"]
    assert "fastavro" in out["fastavro"]

"""Streaming reads (scans, compaction) read log blocks by byte ranges, not by mapping the log file.

The pages of a mapped file that a read touches stay in the process's resident memory until the
file is closed: a streaming merge that mapped its log file held the whole block resident by its
end, so a family compaction's peak grew with the block (issue 12's memory target). Collected
reads, which keep every row anyway, still map the log files of the families they mostly read.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import pyhudi

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.float64()), ("b", pa.float64()),
                    ("c", pa.float64())])
FAMILIES = {"fa": "a,b", "fc": "c"}
ROWS = 5000


@pytest.fixture()
def updated(tmp_path):
    """A file group with per-family base files and one Parquet log block of family fa."""
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
    ids = pa.array(range(ROWS), pa.int64())
    t.bulk_insert(pa.table({"id": ids, "a": pa.array([float(i) for i in range(ROWS)]),
                            "b": pa.array([2.0 * i for i in range(ROWS)]), "c": pa.array([3.0 * i for i in range(ROWS)])}),
                  options={"hoodie.pyhudi.insert.full.row": "false"})
    updated_ids = list(range(0, ROWS, 10))
    t.upsert(pa.table({"id": pa.array(updated_ids, pa.int64()), "a": [-float(i) for i in updated_ids],
                       "b": [-2.0 * i for i in updated_ids]}))
    return t


def expected(t_rows):
    return [{"id": i, "a": -float(i) if i % 10 == 0 else float(i), "b": (-2.0 if i % 10 == 0 else 2.0) * i,
             "c": 3.0 * i} for i in range(t_rows)]


@pytest.fixture()
def mapped(monkeypatch):
    """The log files (``.log.`` in their name) memory-mapped while the test runs."""
    paths: list[str] = []
    real = pa.memory_map

    def spy(path, *args, **kwargs):
        if ".log." in str(path):
            paths.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(pa, "memory_map", spy)
    return paths


def test_scan_reads_log_blocks_without_mapping_them(updated, mapped):
    got = pa.Table.from_batches(list(updated.scan(batch_size=512))).sort_by("id").to_pylist()
    assert got == expected(ROWS)
    assert mapped == []


def test_family_compaction_reads_log_blocks_without_mapping_them(updated, mapped):
    updated.compact(families=["fa"])
    assert mapped == []
    assert updated.read().sort_by("id").to_pylist() == expected(ROWS)


def test_collected_read_of_most_columns_maps_the_log_file(updated, mapped):
    assert updated.read().sort_by("id").to_pylist() == expected(ROWS)
    assert len(mapped) == 1 and mapped[0].endswith(".log.1_0-1-0")

"""The read path's metadata cache: footers, log layouts and key verdicts reused across scans,
never for a file whose bytes changed (path, size and modification time identify them)."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.logformat import LogReader
from pyhudi.read.metadata_cache import FOOTER, LOG_LAYOUT, METADATA_CACHE, MetadataCache
from pyhudi.storage.parquet import reader_class

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.float64()), ("b", pa.float64()), ("c", pa.float64())])
FAMILIES = {"fa": "a", "fb": "b", "fc": "c"}


def _rows(ids, offset: float = 0.0) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "a": [i + offset for i in ids],
                     "b": [i * 2.0 for i in ids], "c": [i * 3.0 for i in ids]}, schema=SCHEMA)


@pytest.fixture
def cache():
    METADATA_CACHE.clear()
    yield METADATA_CACHE
    METADATA_CACHE.clear()


def _family_table(tmp_path) -> pyhudi.Table:
    """One base file per family (not the default full-row base file: the verdicts cached here are
    about families skipped beside fa's), then an update of fa."""
    table = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1, column_families=FAMILIES)
    table.bulk_insert(_rows(range(20)), options={"hoodie.pyhudi.insert.full.row": "false"})
    table.upsert(pa.table({"id": pa.array([3, 5], pa.int64()), "a": [30.0, 50.0]}))
    return table


def test_second_scan_reads_no_footer_and_opens_no_redundant_family(tmp_path, cache):
    table = _family_table(tmp_path)
    (task,) = table.plan_scan(columns=["id", "a"]).tasks
    got = task.run().sort_by("id")
    assert got.column("a").to_pylist() == [30.0 if i == 3 else 50.0 if i == 5 else float(i) for i in range(20)]
    assert task.metrics["families_skipped"] == 2  # fb and fc: same keys as fa's base
    misses = cache.misses
    opened = []
    reader = reader_class()  # (the Parquet reader class of the read path)
    original = reader.__init__

    def spy(self, source, *args, metadata=None, **kwargs):
        opened.append(metadata is not None)
        original(self, source, *args, metadata=metadata, **kwargs)

    reader.__init__ = spy
    try:
        (task,) = table.plan_scan(columns=["id", "a"]).tasks
        again = task.run().sort_by("id")
    finally:
        reader.__init__ = original
    assert again.equals(got) and task.metrics["families_skipped"] == 2
    assert cache.misses == misses  # every footer, layout and verdict came from the cache
    assert opened == [True, True]  # fa's base and fa's Parquet log block, with cached footers


def test_rewritten_file_is_not_served_from_the_cache(tmp_path, cache):
    """A file at the same path with other bytes (size or modification time differ) is re-read."""
    table = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1)
    table.bulk_insert(_rows(range(10)))
    assert table.read().sort_by("id").column("a").to_pylist() == [float(i) for i in range(10)]
    (base,) = glob.glob(str(tmp_path / "t" / "*.parquet"))
    stat = os.stat(base)
    original = pq.read_table(base)
    changed = original.set_column(original.column_names.index("a"), "a",
                                  pa.array([float(i) + 0.5 for i in range(10)]))
    pq.write_table(changed, base)  # (an outside edit: Hudi never rewrites a data file in place)
    os.utime(base, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert table.read().sort_by("id").column("a").to_pylist() == [float(i) + 0.5 for i in range(10)]


def test_growing_log_file_gets_a_new_layout(tmp_path, cache):
    """Version 6 appends blocks to a log file: the larger file is a new cache key."""
    table = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1)
    table.upsert(_rows(range(4)))
    (log,) = glob.glob(str(tmp_path / "t" / ".*.log.*"))
    assert table.read().num_rows == 4
    layouts = [k for k in cache._entries if k[0] == LOG_LAYOUT]
    assert len(layouts) == 1 and layouts[0][1][1] == os.path.getsize(log)
    with open(log, "rb") as f:
        blocks = LogReader(data=f.read()).blocks()
    with open(log, "ab") as out:
        out.write(b"#HUDI#\x00\x00")  # a torn append: read as a corrupt tail, the earlier block kept
    assert table.read().num_rows == 4
    layouts = sorted(k[1][1] for k in cache._entries if k[0] == LOG_LAYOUT)
    assert layouts == [os.path.getsize(log) - 8, os.path.getsize(log)]
    assert len(blocks) == 1


def test_layout_rebuilds_the_same_blocks(tmp_path):
    table = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=1)
    table.upsert(_rows(range(4)))
    table.delete(pa.table({"id": pa.array([1], pa.int64())}))
    for log in glob.glob(str(tmp_path / "t" / ".*.log.*")):
        with open(log, "rb") as f:
            data = f.read() + b"#HUDI#garbage"
        first = LogReader(data=data, include_corrupt=True)
        blocks = first.blocks()
        again = LogReader(data=data, include_corrupt=True, layout=first.layout).blocks()
        assert [type(b) for b in again] == [type(b) for b in blocks]
        assert [(b.offset, b.size, b.header, b.footer) for b in again] == \
               [(b.offset, b.size, b.header, b.footer) for b in blocks]
        assert [b.content_bytes() for b in again] == [b.content_bytes() for b in blocks]


def test_cache_is_bounded_and_forgets_verdicts_with_their_footers():
    cache = MetadataCache(max_bytes=10_000)
    footer = pq.ParquetFile(pa.BufferReader(_parquet_bytes())).metadata
    size = footer.serialized_size
    keys = [(f"/t/f{i}.parquet", 100 + i, 1) for i in range(10_000 // size + 2)]
    cache.put_footer(keys[0], footer)
    cache.put_footer(keys[1], footer)
    cache.put_same_keys(keys[0], keys[1], True)
    assert cache.same_keys(keys[1], keys[0]) is True
    for key in keys[2:]:
        cache.put_footer(key, footer)
    assert cache.size_bytes <= 10_000
    assert cache.footer(keys[0]) is None and cache.footer(keys[-1]) is footer
    assert cache.same_keys(keys[0], keys[1]) is None  # evicted with the footer
    cache.put_same_keys(keys[0], keys[-1], True)  # only verdicts between cached footers are kept
    assert cache.same_keys(keys[0], keys[-1]) is None
    off = MetadataCache(max_bytes=0)
    off.put_footer(keys[0], footer)
    assert off.footer(keys[0]) is None and off.get(FOOTER, keys[0]) is None


def _parquet_bytes() -> pa.Buffer:
    sink = pa.BufferOutputStream()
    pq.write_table(_rows(range(3)), sink)
    return sink.getvalue()

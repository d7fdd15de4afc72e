"""Shortcuts of column-pruned reads of family tables: a family read only for its keys is skipped
once earlier reads proved its log blocks add no key (a key verdict of the metadata cache), a lone
base file is read without its key column, and a small file group merges in one window. Each must
still return every row: after inserts through one family only, deletes, partial blocks, splits,
key filters and time travel."""

from __future__ import annotations


import pyarrow as pa
import pytest

import pyhudi
from pyhudi.read.family_reader import FamilyScan, read_family
from pyhudi.read.merge import Versions
from pyhudi.read.metadata_cache import METADATA_CACHE, MetadataCache
from pyhudi.read.sources import MemoryInput
from pyhudi.read.window import merge_window

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.float64()), ("b", pa.float64()), ("c", pa.float64())])
FAMILIES = {"fa": "a", "fb": "b", "fc": "c"}
# The shortcuts skip or zip other families' base files: bulk inserts here write one base file per
# family instead of the default full-row base file.
PER_FAMILY_FILES = {"hoodie.pyhudi.insert.full.row": "false"}


@pytest.fixture(autouse=True)
def cache():
    METADATA_CACHE.clear()
    yield METADATA_CACHE
    METADATA_CACHE.clear()


def _rows(ids) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "a": [float(i) for i in ids],
                     "b": [i * 2.0 for i in ids], "c": [i * 3.0 for i in ids]}, schema=SCHEMA)


def _table(tmp_path, buckets: int = 1) -> pyhudi.Table:
    """Families fa, fb, fc; then a partial update of fa only (keys 3 and 5)."""
    table = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", num_buckets=buckets, column_families=FAMILIES)
    table.bulk_insert(_rows(range(20)), options=PER_FAMILY_FILES)
    table.upsert(pa.table({"id": pa.array([3, 5], pa.int64()), "a": [30.0, 50.0]}))
    return table


def _read(table, columns, **options):
    plan = table.plan_scan(columns, **options)
    parts = [task.run() for task in plan.tasks]
    metrics = [task.metrics for task in plan.tasks]
    return (pa.concat_tables(parts) if parts else plan.schema.empty_table()), metrics


def _b_rows(ids) -> list[dict]:
    return [{"id": i, "b": i * 2.0} for i in ids]


def test_merge_of_a_family_teaches_that_its_blocks_add_no_key(tmp_path, cache):
    table = _table(tmp_path)
    got, (metrics,) = _read(table, ["id", "a"])
    assert sorted(got.column("a").to_pylist()) == sorted(30.0 if i == 3 else 50.0 if i == 5 else float(i)
                                                         for i in range(20))
    assert len(cache._within) == 1  # fa's one log block: every key in fa's base
    got, (metrics,) = _read(table, ["id", "b"])
    assert got.sort_by("id").to_pylist() == _b_rows(range(20))
    assert metrics["families_skipped"] == 2 and metrics["strategy.keyless"] == 1  # fa, fc; fb's base alone


def test_join_teaches_it_when_the_family_is_read_only_for_its_blocks(tmp_path, cache):
    table = _table(tmp_path)
    got, (metrics,) = _read(table, ["b"])
    assert sorted(got.column("b").to_pylist()) == [i * 2.0 for i in range(20)]
    assert metrics["bases_skipped"] == 1 and "strategy.keyless" not in metrics  # fa's block was joined
    got, (metrics,) = _read(table, ["b"])
    assert sorted(got.column("b").to_pylist()) == [i * 2.0 for i in range(20)]
    assert metrics["families_skipped"] == 2 and metrics["strategy.keyless"] == 1


def test_insert_through_one_family_is_never_skipped(tmp_path, cache):
    table = _table(tmp_path)
    table.upsert(pa.table({"id": pa.array([4, 100], pa.int64()), "a": [40.0, 100.0]}))  # 100: fa only
    for _ in range(3):  # (the first reads learn what they can; none may drop key 100)
        for columns in (["id", "a"], ["b"], ["id", "b"], ["id", "c"]):
            got, (metrics,) = _read(table, columns)
            assert got.num_rows == 21, columns
            assert "strategy.keyless" not in metrics
    got, _ = _read(table, ["id", "b"])
    assert got.sort_by("id").to_pylist() == [*_b_rows(range(20)), {"id": 100, "b": None}]


def test_deletes_and_later_updates_keep_rows_exact(tmp_path):
    table = _table(tmp_path)
    for _ in range(2):
        _read(table, ["id", "a"])
        _read(table, ["id", "b"])
    table.delete(pa.table({"id": pa.array([7, 8], pa.int64())}))
    expected = [i for i in range(20) if i not in (7, 8)]
    for _ in range(2):
        got, _ = _read(table, ["id", "b"])
        assert got.sort_by("id").to_pylist() == _b_rows(expected)
        got, _ = _read(table, ["id", "a"])
        assert got.sort_by("id").column("id").to_pylist() == expected
    table.upsert(pa.table({"id": pa.array([8], pa.int64()), "a": [80.0]}))  # back, through fa only
    for _ in range(2):
        got, _ = _read(table, ["id", "b"])
        assert got.sort_by("id").to_pylist() == sorted([*_b_rows(expected), {"id": 8, "b": None}],
                                                       key=lambda r: r["id"])


def test_time_travel_splits_and_key_filters_after_verdicts(tmp_path):
    table = _table(tmp_path)
    before_insert = table.active_timeline().completed()[-1].completion_time
    table.upsert(pa.table({"id": pa.array([100], pa.int64()), "a": [100.0]}))
    for _ in range(2):
        _read(table, ["id", "a"])
        got, _ = _read(table, ["id", "b"], as_of=before_insert)
        assert got.sort_by("id").to_pylist() == _b_rows(range(20))
        (task,) = table.plan_scan(["id", "b"]).tasks
        low, high = task.replace(key_range=(None, "15")), task.replace(key_range=("15", None))  # a split in two
        got = pa.concat_tables([low.run(), high.run()])
        assert "strategy.keyless" not in low.metrics and "strategy.keyless" not in high.metrics
        assert got.sort_by("id").to_pylist() == [*_b_rows(range(20)), {"id": 100, "b": None}]
        got, (metrics,) = _read(table, ["id", "b"], filters=[("id", ">=", 15)])
        assert "strategy.keyless" not in metrics
        assert got.sort_by("id").to_pylist() == [*_b_rows(range(15, 20)), {"id": 100, "b": None}]


def test_keyless_read_with_meta_columns_and_types(tmp_path):
    table = _table(tmp_path, buckets=2)
    _read(table, ["id", "a"])
    got, metrics = _read(table, ["b", "id"])
    assert all(m["strategy.keyless"] == 1 for m in metrics)
    assert got.schema.names == ["b", "id"] and got.sort_by("id").column("b").to_pylist() == [i * 2.0 for i in range(20)]
    got, metrics = _read(table, ["b"], with_meta=True)  # meta columns need the keys: no shortcut
    assert not any("strategy.keyless" in m for m in metrics)
    assert sorted(got.column("_hoodie_record_key").to_pylist()) == sorted(str(i) for i in range(20))


def test_small_file_group_merges_and_joins_in_one_window():
    def chunk(keys, values, last):
        v = Versions(pa.array(keys), pa.table({"a": pa.array(values, pa.int64())}), False)
        v.last = last
        return v

    class _Input:
        streamable = True
        block_key = None

        def __init__(self, chunks):
            self._chunks = chunks

        def sorted_by_key(self, batch_size):
            return True

        def chunks(self, batch_size, verify=True):
            yield from self._chunks

    scan = FamilyScan(None, (pa.field("a", pa.int64()),), False, None)
    base = _Input([chunk(["k1", "k3", "k5"], [1, 3, 5], True)])
    update = _Input([chunk(["k2"], [20], True)])
    stream = read_family([base, update], scan, 3, need_sorted=True)
    (only,) = list(stream)  # both inputs on their final batch: one window takes all
    assert only.to_pylist() == [{"_key": k, "a": a} for k, a in [("k1", 1), ("k2", 20), ("k3", 3), ("k5", 5)]]
    assert stream.done
    base = _Input([chunk(["k1", "k3"], [1, 3], False), chunk(["k5"], [5], True)])
    update = _Input([chunk(["k2", "k4"], [20, 40], True)])
    tables = list(read_family([base, update], scan, 2, need_sorted=True))
    assert [t.column("_key").to_pylist() for t in tables] == [["k1", "k2", "k3"], ["k4", "k5"]]


def test_merge_window_tells_whether_later_pieces_stay_within_the_first():
    base = Versions(pa.array(["k1", "k2", "k3"]), pa.table({"a": pa.array([1, 2, 3], pa.int64())}), False)
    inside = Versions(pa.array(["k2"]), pa.table({"a": pa.array([20], pa.int64())}), False)
    outside = Versions(pa.array(["k4"]), pa.table({"a": pa.array([40], pa.int64())}), False)
    fields = [pa.field("a", pa.int64())]
    for pieces, verdict, values in [([base, inside], True, [1, 20, 3]), ([base, outside], False, [1, 2, 3, 40]),
                                    ([None, inside], False, [20]), ([base, None], True, [1, 2, 3])]:
        within = [True]
        out = merge_window(pieces, fields, False, None, within)
        assert within == [verdict] and out.column("a").to_pylist() == values
    deletes = MemoryInput(Versions(pa.array(["k9"]), None, True), "d")
    within = [True]
    out = merge_window([base, next(deletes.chunks(10))], fields, False, None, within)
    assert within == [False] and out.num_rows == 3  # a delete of a key the base lacks: not within


def test_block_verdicts_live_as_long_as_the_layout_and_the_footer():
    import pyarrow.parquet as pq

    buffer = pa.BufferReader(_parquet_bytes())
    footer = pq.ParquetFile(buffer).metadata
    cache = MetadataCache(max_bytes=10 * footer.serialized_size)
    base, log = ("/t/base.parquet", 10, 1), ("/t/.f.log.1", 20, 1)
    cache.put_block_within((log, 0), base)
    assert not cache.block_within((log, 0), base)  # neither layout nor footer cached: not kept
    cache.put_footer(base, footer)
    cache.put("log", log, [], 10)
    cache.put_block_within((log, 0), base)
    assert cache.block_within((log, 0), base) and not cache.block_within((log, 96), base)
    for i in range(20):  # evict the base footer
        cache.put_footer((f"/t/other{i}.parquet", 1, 1), footer)
    assert not cache.block_within((log, 0), base)
    cache.clear()
    assert not cache._within and not cache._within_of


def _parquet_bytes() -> pa.Buffer:
    sink = pa.BufferOutputStream()
    pq_module = __import__("pyarrow.parquet", fromlist=["write_table"])
    pq_module.write_table(pa.table({"x": [1, 2, 3]}), sink)
    return sink.getvalue()


def test_declared_key_order_is_checked_once_per_file(tmp_path, monkeypatch):
    """A file declaring its rows sorted is checked while read whole, and not again while its
    bytes stay the same; a file rewritten with a false order is refused again."""
    import os

    import pyarrow.parquet as pq

    from pyhudi.errors import ReadError
    from pyhudi.read.sources import ParquetInput
    from pyhudi.schema import META_FIELDS

    table = _table(tmp_path)
    monkeypatch.setattr("pyhudi.read.task.positional_stream", lambda *args, **kwargs: None)  # (merge by key)
    checked = []
    original = ParquetInput._check_declared_order

    def spy(self, keys, last):
        checked.append(self.label)
        return original(self, keys, last)

    monkeypatch.setattr(ParquetInput, "_check_declared_order", spy)
    first, _ = _read(table, ["id", "a"])
    assert len(checked) == 2  # fa's base and its Parquet log block
    checked.clear()
    again, _ = _read(table, ["id", "a"])
    assert checked == [] and again.sort_by("id").equals(first.sort_by("id"))
    _read(table, ["id", "a"], filters=[("id", ">", 3)])
    assert checked == []
    base = next(b for b in next(iter(table.file_groups())).base_files if b.name.family == "fa")
    path = table.storage.full_path(base.relpath)
    rows = pq.read_table(path)
    stat = os.stat(path)
    liar = rows.take(list(reversed(range(rows.num_rows))))
    pq.write_table(liar, path, sorting_columns=[pq.SortingColumn(liar.schema.names.index(META_FIELDS[2]))])
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    with pytest.raises(ReadError, match="declares its rows sorted"):
        _read(table, ["id", "a"])


def test_key_code_statistics_are_read_once_per_file(tmp_path, monkeypatch):
    from pyhudi.read.sources import ParquetInput

    table = _table(tmp_path)
    calls = []
    original = ParquetInput._statistics_fit
    monkeypatch.setattr(ParquetInput, "_statistics_fit", lambda self, column: calls.append(self.label) or
                        original(self, column))
    first, (metrics,) = _read(table, ["id", "a"])
    assert len(calls) == 2 and metrics["integer_keys"] == 1  # fa's base and block
    calls.clear()
    again, (metrics,) = _read(table, ["id", "a"])
    assert calls == [] and metrics["integer_keys"] == 1
    assert again.sort_by("id").equals(first.sort_by("id"))
    table.upsert(pa.table({"id": pa.array([10**17], pa.int64()), "a": [1.0]}))  # a key without a code
    got, (metrics,) = _read(table, ["id", "a"])
    assert "integer_keys" not in metrics and got.num_rows == 21
    assert got.sort_by("id").column("id").to_pylist()[-1] == 10**17


def test_key_only_read_of_families_sharing_their_keys_over_several_row_groups(tmp_path):
    """Base files of families read only for their keys, with equal keys (read in lockstep) and
    several row groups: a follower that contributes no column is not read (pyarrow yields no
    batches for no columns, and the read failed with "unequal batches")."""
    import numpy as np

    from pyhudi.read.metadata_cache import METADATA_CACHE

    n = 3000
    rng = np.random.default_rng(1)
    schema = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.float64()), ("b", pa.float64()),
                        ("c", pa.float64())])
    t = pyhudi.create_table(str(tmp_path / "rg"), schema, "id", num_buckets=1,
                            column_families={"fa": "a", "fb": "b", "fc": "c"},
                            options={"hoodie.parquet.block.size": "20000"})  # several row groups per file
    data = pa.table({"id": pa.array(np.arange(n)), **{c: pa.array(rng.random(n)) for c in "abc"}}, schema=schema)
    t.bulk_insert(data, options=PER_FAMILY_FILES)
    t.upsert(pa.table({"id": pa.array([3], pa.int64()), "a": [30.0]}))
    METADATA_CACHE.clear()  # a fresh process: nothing learnt about the files yet
    fresh = pyhudi.open_table(t.path)
    assert sorted(fresh.read(columns=["id"]).column("id").to_pylist()) == list(range(n))
    got = fresh.read(columns=["id", "b"]).sort_by("id")
    assert got.column("b").to_pylist() == data.column("b").to_pylist()

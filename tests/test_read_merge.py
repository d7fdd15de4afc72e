"""The family merge kernels: the streaming sort-merge equals the hash merge on every input.

Hypothesis generates file slices as sequences of sorted blocks (full records, partial records,
deletes with and without ordering values, soft deletes), and both strategies must return the
same rows, also when the sort-merge sees the inputs in small batches.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyhudi
from pyhudi.read.family_reader import FamilyScan, read_family
from pyhudi.read.merge import Versions, merge_versions
from pyhudi.read.sources import MemoryInput, slice_versions
from pyhudi.read.window import merge_window, scatter

FIELDS = [pa.field("a", pa.int64()), pa.field("b", pa.string()), pa.field("ts", pa.int64())]
KEYS = [f"k{i:02d}" for i in range(12)]


@st.composite
def blocks(draw, full_base: bool = False):
    """Blocks of versions; ``full_base``: the first holds every key (a base file and its
    updates: the windows merge into the base, see pyhudi.read.window)."""
    out = []
    for b in range(draw(st.integers(1, 5))):
        if full_base and b == 0:
            keys = KEYS
            kind = draw(st.sampled_from(["full", "soft"]))
        else:
            keys = sorted(draw(st.sets(st.sampled_from(KEYS), min_size=1, max_size=8)))
            kind = draw(st.sampled_from(["full", "full", "partial", "delete", "soft"]))
        n = len(keys)
        if kind == "delete":
            with_ordering = draw(st.booleans())
            ordering = pa.array(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))) if with_ordering else None
            default = pa.array([v == 0 for v in ordering.to_pylist()]) if with_ordering else pa.array([True] * n)
            out.append(Versions(pa.array(keys), None, True, ordering, default))
            continue
        ts = draw(st.lists(st.one_of(st.none(), st.integers(0, 5)), min_size=n, max_size=n))
        columns = {"a": pa.array(draw(st.lists(st.integers(0, 99), min_size=n, max_size=n)), pa.int64()),
                   "b": pa.array([f"v{x}" for x in draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))]),
                   "ts": pa.array(ts, pa.int64())}
        if kind == "partial":
            names = draw(st.sets(st.sampled_from(["a", "b", "ts"]), min_size=1, max_size=2))
            columns = {k: v for k, v in columns.items() if k in names}
        deleted = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))) if kind == "soft" else False
        data = pa.table(columns)
        ordering = data.column("ts").combine_chunks() if "ts" in data.column_names else None
        out.append(Versions(pa.array(keys), data, deleted, ordering))
    return out


def _rows(table: pa.Table) -> list[dict]:
    return table.to_pylist()


@settings(max_examples=150, deadline=None)
@given(blocks(), st.booleans())
def test_merge_window_equals_hash_merge(pieces, event_time):
    expected = merge_versions(pieces, FIELDS, event_time, pa.int64())
    assert _rows(merge_window(pieces, FIELDS, event_time, pa.int64())) == _rows(expected)


@settings(max_examples=150, deadline=None)
@given(blocks(full_base=True), st.booleans())
def test_updates_merged_into_a_base_equal_hash_merge(pieces, event_time):
    expected = merge_versions(pieces, FIELDS, event_time, pa.int64())
    assert _rows(merge_window(pieces, FIELDS, event_time, pa.int64())) == _rows(expected)
    # the first piece as a base file's batch: log versions merge with each other first
    with_base = merge_versions(pieces, FIELDS, event_time, pa.int64(), base_rows=len(pieces[0].keys))
    assert _rows(merge_window(pieces, FIELDS, event_time, pa.int64(), base_first=True)) == _rows(with_base)


def _chunked(v: Versions, size: int) -> list[Versions]:
    return [slice_versions(v, s, min(s + size, len(v.keys))) for s in range(0, len(v.keys), size)]


class _ChunkedInput(MemoryInput):
    """A sorted in-memory input delivered in small batches, like a streamed Parquet file."""

    def __init__(self, versions: Versions, size: int) -> None:
        super().__init__(versions, "test")
        self.size = size

    def chunks(self, batch_size, verify=True):
        yield from _chunked(self.versions, self.size)


@settings(max_examples=100, deadline=None)
@given(blocks(), st.booleans(), st.integers(1, 4))
def test_streaming_sort_merge_equals_hash_merge(pieces, event_time, size):
    scan = FamilyScan("f", tuple(FIELDS), event_time, "ts", pa.int64())
    expected = merge_versions(pieces, FIELDS, event_time, pa.int64())
    streamed = list(read_family([_ChunkedInput(p, size) for p in pieces], scan, size, need_sorted=True))
    got = pa.concat_tables(streamed) if streamed else expected.schema.empty_table()
    assert _rows(got) == _rows(expected)
    hashed = list(read_family([MemoryInput(p, "t") for p in pieces], scan, 1000, True, strategy="hash"))
    assert _rows(pa.concat_tables(hashed) if hashed else expected.schema.empty_table()) == _rows(expected)


def test_window_passes_a_single_input_through_without_copying():
    data = pa.table({"a": pa.array([1, 2], pa.int64()), "b": ["x", "y"], "ts": pa.array([1, 1], pa.int64())})
    piece = Versions(pa.array(["k1", "k2"]), data, False, data.column("ts").combine_chunks())
    out = merge_window([piece, None], FIELDS, True, pa.int64())
    assert out.to_pylist() == [{"_key": "k1", "a": 1, "b": "x", "ts": 1}, {"_key": "k2", "a": 2, "b": "y", "ts": 1}]
    assert out.column("a").chunk(0).buffers()[1].address == data.column("a").chunk(0).buffers()[1].address


def test_window_update_takes_new_values_and_keeps_untouched_rows():
    base = Versions(pa.array(["k1", "k2", "k3"]),
                    pa.table({"a": pa.array([1, 2, 3], pa.int64()), "b": ["x", "y", "z"], "ts": pa.array([5, 5, 5], pa.int64())}),
                    False, pa.array([5, 5, 5], pa.int64()))
    update = Versions(pa.array(["k2", "k3"]), pa.table({"b": ["Y", "Z"], "ts": pa.array([6, 4], pa.int64())}),
                      False, pa.array([6, 4], pa.int64()))
    delete = Versions(pa.array(["k1"]), None, True, None, pa.array([True]))
    out = merge_window([base, update, delete], FIELDS, True, pa.int64())
    # k2: partial update wins (6 >= 5); k3: stale (4 < 5) loses; k1: deleted
    assert out.to_pylist() == [{"_key": "k2", "a": 2, "b": "Y", "ts": 6}, {"_key": "k3", "a": 3, "b": "z", "ts": 5}]


def test_update_window_copies_only_the_columns_logs_change():
    n = 6
    base_data = pa.table({"a": pa.array(range(n), pa.int64()), "b": [f"v{i}" for i in range(n)],
                          "ts": pa.array([1] * n, pa.int64())})
    base = Versions(pa.array(KEYS[:n]), base_data, False, base_data.column("ts").combine_chunks())
    first = Versions(pa.array(["k01", "k04"]), pa.table({"a": pa.array([10, 40], pa.int64())}), False)
    second = Versions(pa.array(["k04", "k05"]), pa.table({"a": pa.array([41, None], pa.int64())}), False)
    out = merge_window([base, first, second], FIELDS, False, pa.int64())
    assert out.column("a").to_pylist() == [0, 10, 2, 3, 41, None]  # k04 updated twice: the later wins
    assert out.column("b").chunk(0).buffers()[2].address == base_data.column("b").chunk(0).buffers()[2].address


def test_owned_base_is_patched_in_place_and_only_in_its_window():
    """A batch decoded for this read is patched in place; the rows of the batch past the window
    (a slice of the same buffer) and inputs not owned are never written."""
    data = pa.table({"a": pa.array(range(6), pa.int64())})
    batch = Versions(pa.array(KEYS[:6]), data, False, owned=True)
    window, rest = slice_versions(batch, 0, 3), slice_versions(batch, 3, 6)
    update = Versions(pa.array(["k01"]), pa.table({"a": pa.array([100], pa.int64())}), False)
    out = merge_window([window, update], [FIELDS[0]], False)
    assert out.column("a").to_pylist() == [0, 100, 2]
    assert out.column("a").chunk(0).buffers()[1].address == data.column("a").chunk(0).buffers()[1].address
    assert rest.data.column("a").to_pylist() == [3, 4, 5]
    shared = Versions(pa.array(KEYS[:3]), pa.table({"a": pa.array([0, 1, 2], pa.int64())}), False)
    merge_window([shared, update], [FIELDS[0]], False)
    assert shared.data.column("a").to_pylist() == [0, 1, 2]


@pytest.mark.parametrize("values, type_", [([1, 2, 3, 4], pa.int32()), ([1.5, 2.5, None, 4.5], pa.float64()),
                                           ([1, 2, 3, 4], pa.timestamp("us")), (["a", "b", "c", "d"], pa.string()),
                                           ([True, False, True, False], pa.bool_())])
def test_scatter_replaces_rows_of_every_type(values, type_):
    base = pa.array(values, type_)
    typed = base.to_pylist()
    got = scatter(base.slice(1), np.array([0, 2]), pa.array([values[0], None], type_))
    assert got.to_pylist() == [typed[0], typed[2], None]
    got = scatter(base.slice(1), np.array([1]), pa.array([values[0]], type_))
    assert got.to_pylist() == [typed[1], typed[0], typed[3]]
    assert base.to_pylist() == typed  # the input is not modified


def test_unsorted_block_with_repeated_keys_falls_back_to_hash_merge():
    dup = Versions(pa.array(["k2", "k1", "k2"]),
                   pa.table({"a": pa.array([1, 2, 3], pa.int64())}), False, None)
    assert MemoryInput(dup, "t").sorted_by_key(10) is False
    scan = FamilyScan(None, (FIELDS[0],), False, None, None)
    out = pa.concat_tables(list(read_family([MemoryInput(dup, "t")], scan, 10, True)))
    assert out.to_pylist() == [{"_key": "k1", "a": 2}, {"_key": "k2", "a": 3}]


def test_unsorted_block_with_distinct_keys_is_sorted_in_memory():
    block = MemoryInput(Versions(pa.array(["k3", "k1", "k2"]), pa.table({"a": pa.array([3, 1, 2], pa.int64())}),
                                 np.array([False, True, False]), None), "t")
    assert block.sorted_by_key(10) is True
    assert block.versions.keys.to_pylist() == ["k1", "k2", "k3"]
    assert block.versions.data.column("a").to_pylist() == [1, 2, 3]
    assert block.versions.is_delete.tolist() == [True, False, False]


@pytest.mark.parametrize("values, type_", [([3.5, None, -1.0], pa.float64()), (["b", "a", None], pa.string()),
                                           ([2, 1, None], pa.timestamp("us"))])
def test_event_time_on_other_ordering_types(values, type_):
    ordering = pa.array(values, type_)
    keys = pa.array(["k"] * 0)
    pieces = [Versions(pa.array(["k1"]), pa.table({"a": pa.array([i], pa.int64())}), False, ordering.slice(i, 1))
              for i in range(3)]
    del keys
    expected = merge_versions(pieces, [FIELDS[0]], True, type_)
    assert merge_window(pieces, [FIELDS[0]], True, type_).to_pylist() == expected.to_pylist()


def test_a_file_that_declares_a_false_key_order_is_refused(tmp_path):
    """Sorted inputs are trusted from their Parquet sorting_columns; a lie is caught while
    streaming (never a silently wrong merge), and the hash strategy still reads the file."""
    import pyarrow.parquet as pq

    import pyhudi
    from pyhudi.errors import ReadError
    from pyhudi.schema import META_FIELDS

    schema = pa.schema([pa.field("id", pa.string(), nullable=False), ("c", pa.int64())])
    t = pyhudi.create_table(str(tmp_path / "t"), schema, "id", num_buckets=1)
    t.bulk_insert(pa.table({"id": ["k1", "k2"], "c": [1, 2]}))
    # (a block with written record positions merges by position, without relying on key order)
    t.upsert(pa.table({"id": ["k2"], "c": [20]}), options={"hoodie.write.record.positions": "false"})
    base = next(g for g in t.file_groups()).base_files[0]
    path = t.storage.full_path(base.relpath)
    rows = pq.read_table(path)
    liar = rows.take([1, 0])  # keys k2, k1 ...
    pq.write_table(liar, path, sorting_columns=[pq.SortingColumn(liar.schema.names.index(META_FIELDS[2]))])
    with pytest.raises(ReadError, match="declares its rows sorted by _hoodie_record_key but they are not"):
        t.read()
    assert t.read(strategy="hash").sort_by("id").to_pylist() == [{"id": "k1", "c": 1}, {"id": "k2", "c": 20}]


@pytest.mark.parametrize("event_time", [True, False])
def test_a_key_the_base_stores_twice_merges_its_log_versions_into_the_first_copy(event_time):
    """Merge-on-read, as Hudi's file group reader: a key's log versions merge into the first
    stored copy of the key (in file order) only; its other copies come back as stored, and a
    key stored twice without log versions keeps every copy."""
    base = Versions(pa.array(["k1", "k2", "k1", "k2"]),
                    pa.table({"a": pa.array([1, 3, 2, 4], pa.int64()), "b": ["x", "z", "y", "w"],
                              "ts": pa.array([5, 1, 1, 1], pa.int64())}), False, pa.array([5, 1, 1, 1], pa.int64()))
    update = Versions(pa.array(["k1", "k3"]), pa.table({"a": pa.array([9, 7], pa.int64()), "ts": pa.array([3, 3], pa.int64())}),
                      False, pa.array([3, 3], pa.int64()))
    got = merge_versions([base, update], FIELDS, event_time, pa.int64(), base_rows=4).to_pylist()
    # event time: the update (ts 3) loses to the first copy (ts 5); commit time: it wins, b kept
    copy_one = {"_key": "k1", "a": 1, "b": "x", "ts": 5} if event_time else {"_key": "k1", "a": 9, "b": "x", "ts": 3}
    assert got == [copy_one, {"_key": "k1", "a": 2, "b": "y", "ts": 1},
                   {"_key": "k2", "a": 3, "b": "z", "ts": 1}, {"_key": "k2", "a": 4, "b": "w", "ts": 1},
                   {"_key": "k3", "a": 7, "b": None, "ts": 3}]
    deleted = merge_versions([base, Versions(pa.array(["k1"]), None, True, None, pa.array([True]))], FIELDS,
                             event_time, pa.int64(), base_rows=4).to_pylist()
    assert deleted == [{"_key": "k1", "a": 2, "b": "y", "ts": 1}, {"_key": "k2", "a": 3, "b": "z", "ts": 1},
                       {"_key": "k2", "a": 4, "b": "w", "ts": 1}]  # the delete takes the first copy only
    assert merge_versions([base, update], FIELDS, event_time, pa.int64()).num_rows == 3  # without base_rows: one per key


@pytest.mark.parametrize("event_time", [True, False])
def test_partial_log_versions_merge_with_each_other_before_the_base(event_time):
    """Hudi's order: log versions first merge with each other (under event time the higher
    ordering value wins the columns it carries; the other record fills the columns it lacks),
    then the result merges with the base row. Applying each log version to the base in turn
    gave ``a`` the base's value under event time: the older partial record (ts 3) loses to the
    base (ts 4) but fills ``a``, which the newer one (ts 6) lacks."""
    base = Versions(pa.array(["k1"]), pa.table({"a": pa.array([1], pa.int64()), "b": ["x"], "ts": pa.array([4], pa.int64())}),
                    False, pa.array([4], pa.int64()))
    newer = Versions(pa.array(["k1"]), pa.table({"b": ["new"], "ts": pa.array([6], pa.int64())}), False, pa.array([6], pa.int64()))
    older = Versions(pa.array(["k1"]), pa.table({"a": pa.array([30], pa.int64()), "ts": pa.array([3], pa.int64())}),
                     False, pa.array([3], pa.int64()))
    expected = [{"_key": "k1", "a": 30, "b": "new", "ts": 6 if event_time else 3}]
    assert merge_versions([base, newer, older], FIELDS, event_time, pa.int64(), base_rows=1).to_pylist() == expected
    window = merge_window([base, newer, older], FIELDS, event_time, pa.int64(), base_first=True)
    assert window.to_pylist() == expected
    # both log versions lower than the base: the base row wins whole
    low = Versions(pa.array(["k1"]), pa.table({"b": ["low"], "ts": pa.array([2], pa.int64())}), False, pa.array([2], pa.int64()))
    got = merge_window([base, low, older], FIELDS, event_time, pa.int64(), base_first=True).to_pylist()
    assert got == ([{"_key": "k1", "a": 1, "b": "x", "ts": 4}] if event_time else
                   [{"_key": "k1", "a": 30, "b": "low", "ts": 3}])


NESTED_SCHEMA = pa.schema([
    ("id", pa.int64()),
    ("tags", pa.list_(pa.int64())),
    ("point", pa.struct([("x", pa.float64()), ("label", pa.string())])),
    ("attrs", pa.map_(pa.string(), pa.int64())),
    ("note", pa.string()),
])


def _nested_rows(ids, scale: int) -> pa.Table:
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "tags": [[i * scale, i * scale + 1] for i in ids],
        "point": [{"x": float(i * scale), "label": f"p{i * scale}"} for i in ids],
        "attrs": pa.array([[(f"k{i}", i * scale)] for i in ids], NESTED_SCHEMA.field("attrs").type),
        "note": [f"n{i * scale}" for i in ids],
    }, schema=NESTED_SCHEMA)


@pytest.mark.parametrize("families", [None, {"nested": "tags,point,attrs", "plain": "note"}])
def test_updates_of_list_struct_and_map_columns_merge_through_logs(tmp_path, families):
    """An update of nested columns (lists, structs, maps) in a log block overwrites the base
    rows: merged by key, and by position once learnt (pyarrow has no replace_with_mask kernel
    for these types: reads used to fail)."""
    from pyhudi.read.metadata_cache import METADATA_CACHE

    METADATA_CACHE.clear()
    table = pyhudi.create_table(str(tmp_path / "t"), NESTED_SCHEMA, "id", num_buckets=1, column_families=families)
    table.bulk_insert(_nested_rows(range(6), 1))
    table.upsert(_nested_rows([1, 4], 10))
    expected = _nested_rows([0, 1, 2, 3, 4, 5], 1).to_pylist()
    expected[1], expected[4] = _nested_rows([1], 10).to_pylist()[0], _nested_rows([4], 10).to_pylist()[0]
    columns = ["id", "tags", "point", "attrs"]
    for _ in range(2):  # (the second read of the families table merges by position)
        assert table.read().sort_by("id").to_pylist() == expected
        assert table.read(columns=columns).sort_by("id").to_pylist() == [{c: r[c] for c in columns} for r in expected]
    METADATA_CACHE.clear()

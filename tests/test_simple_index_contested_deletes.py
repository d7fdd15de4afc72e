"""A delete with an ordering value releases its key from a file group when it wins (pyhudi.index.simple).

Under event-time ordering a delete that carries an ordering value — a row marked deleted
(``_hoodie_is_deleted`` true) with a value in the ordering column, or a delete-block entry with
one, as Apache Hudi writes them — wins over the stored version when its value is >= the stored
one, and loses otherwise. Before the fix the simple index kept every such key located in the
group, winner or loser. After a winning delete, an ``insert`` (which never looks keys up) wrote
the key into another file group; a later upsert found both groups as holders, the update reached
both, and the deleted row came back next to the new one: two rows for one key.
"""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.index import simple
from pyhudi.logformat import DeleteBlock
from pyhudi.write import handle as handle_module
from read_helpers import fresh_metadata_cache  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("fresh_metadata_cache")

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("b", pa.float64()), ("c", pa.string()),
                    ("ts", pa.int64()), ("_hoodie_is_deleted", pa.bool_())])


def _rows(**columns) -> pa.Table:
    return pa.table({k: pa.array(v, SCHEMA.field(k).type) for k, v in columns.items()})


def _read(path: str) -> list[tuple]:
    return sorted(((r["id"], r["b"], r["c"], r["ts"]) for r in pyhudi.open_table(path).read().to_pylist()), key=repr)


def _hudi_rs(path: str) -> list[tuple]:
    hudi = pytest.importorskip("hudi")
    got = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(path).build().read())
    return sorted(((r["id"], r["b"], r["c"], r["ts"]) for r in got.to_pylist()), key=repr)


def _file_groups(path: str) -> set[str]:
    return {os.path.basename(f).split("_")[0] for f in glob.glob(os.path.join(path, "*.parquet"))}


def _ordered_deletes(monkeypatch, value: int) -> None:
    """pyhudi's ``delete`` writes delete blocks whose entries carry ordering value ``value``
    (a LongWrapper), as Apache Hudi's deletes do."""

    class OrderedDeleteBlock(DeleteBlock):
        @classmethod
        def from_keys(cls, record_keys, instant_time, **kwargs):
            kwargs["ordering_values"] = pa.array([value] * len(record_keys), pa.int64())
            return DeleteBlock.from_keys(record_keys, instant_time, **kwargs)

    monkeypatch.setattr(handle_module, "DeleteBlock", OrderedDeleteBlock)


def _delete(t: pyhudi.Table, kind: str, key: int, ts: int, monkeypatch) -> None:
    if kind == "soft delete":
        t.upsert(_rows(id=[key], b=[9.0], c=["gone"], ts=[ts], _hoodie_is_deleted=[True]))
    else:
        with monkeypatch.context() as m:
            _ordered_deletes(m, ts)
            t.delete(pa.table({"id": pa.array([key], pa.int64())}))


@pytest.mark.parametrize("kind", ["soft delete", "delete block"])
@pytest.mark.parametrize("partial", [True, False], ids=["partial upsert", "full upsert"])
@pytest.mark.parametrize("deleted_at", [5, 1], ids=["greater", "tie"])
def test_a_winning_delete_with_an_ordering_value_releases_its_key(tmp_path, kind, partial, deleted_at, monkeypatch):
    """The stored row has ts 1; the delete (ts 5, or 1: ties go to the newer version) wins."""
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, SCHEMA, "id", ordering_field="ts")
    t.upsert(_rows(id=[1, 3], b=[1.0, 1.0], c=["a", "a"], ts=[1, 1], _hoodie_is_deleted=[False, False]))
    (first,) = _file_groups(path)
    _delete(t, kind, 1, deleted_at, monkeypatch)
    assert _read(path) == [(3, 1.0, "a", 1)]
    t.insert(_rows(id=[1], b=[2.0], c=["x"], ts=[6], _hoodie_is_deleted=[False]))
    # (the first group has a log file now: no small file for merge-on-read inserts, a new group)
    assert len(_file_groups(path) - {first}) == 1
    update = _rows(id=[1], b=[7.0], ts=[7]) if partial else _rows(id=[1], b=[7.0], c=["y"], ts=[7],
                                                                   _hoodie_is_deleted=[False])
    t.upsert(update)
    expected = [(1, 7.0, "x" if partial else "y", 7), (3, 1.0, "a", 1)]
    assert _read(path) == expected
    assert _hudi_rs(path) == expected


@pytest.mark.parametrize("kind", ["soft delete", "delete block"])
def test_a_losing_delete_with_an_ordering_value_keeps_its_key_located(tmp_path, kind, monkeypatch):
    """The delete (ts 3) loses to the stored row (ts 5), which stays live: an upsert of the key
    updates it in its group instead of inserting a second row elsewhere."""
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, SCHEMA, "id", ordering_field="ts")
    t.upsert(_rows(id=[1, 3], b=[1.0, 1.0], c=["a", "a"], ts=[5, 5], _hoodie_is_deleted=[False, False]))
    groups = _file_groups(path)
    _delete(t, kind, 1, 3, monkeypatch)
    assert _read(path) == [(1, 1.0, "a", 5), (3, 1.0, "a", 5)]
    t.upsert(_rows(id=[1], b=[7.0], ts=[7]))
    assert _read(path) == _hudi_rs(path) == [(1, 7.0, "a", 7), (3, 1.0, "a", 5)]
    assert _file_groups(path) == groups


@pytest.mark.parametrize("late", [4, 6])
def test_a_later_version_in_the_group_is_merged_with_the_delete(tmp_path, monkeypatch, late):
    """Soft delete at ts 5 wins over ts 1; the key's next version in the same group (written by a
    writer that still located the key there: an engine with a bucket index, or pyhudi before
    this fix) loses to the delete at ts 4 — the group then holds no live row of the key, and an
    insert of it elsewhere is the only copy an upsert may reach — and wins at ts 6: the group
    holds the key again, and an upsert updates it there."""
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, SCHEMA, "id", ordering_field="ts")
    t.upsert(_rows(id=[1, 3], b=[1.0, 1.0], c=["a", "a"], ts=[1, 1], _hoodie_is_deleted=[False, False]))
    (first,) = _file_groups(path)
    t.upsert(_rows(id=[1], b=[9.0], c=["gone"], ts=[5], _hoodie_is_deleted=[True]))
    with monkeypatch.context() as m:
        m.setattr(simple, "_released_keys", lambda *args: pa.array([], pa.string()))
        t.upsert(_rows(id=[1], b=[4.0], c=["late"], ts=[late], _hoodie_is_deleted=[False]))
    assert _file_groups(path) == {first}
    simple.METADATA_CACHE.clear()
    if late < 5:
        assert _read(path) == [(3, 1.0, "a", 1)]
        t.insert(_rows(id=[1], b=[2.0], c=["x"], ts=[6], _hoodie_is_deleted=[False]))
        t.upsert(_rows(id=[1], b=[7.0], ts=[7]))
        assert _read(path) == [(1, 7.0, "x", 7), (3, 1.0, "a", 1)]
    else:
        assert _read(path) == [(1, 4.0, "late", 6), (3, 1.0, "a", 1)]
        t.upsert(_rows(id=[1], b=[7.0], ts=[7]))
        assert _read(path) == [(1, 7.0, "late", 7), (3, 1.0, "a", 1)]
        assert _file_groups(path) == {first}


def _count_slice_reads(monkeypatch) -> list[str]:
    """The file groups whose slices the index merges to decide contested deletes."""
    reads: list[str] = []
    real = simple._merge_contested

    def counted(storage, current, contested, ordering_field):
        reads.append(current.file_id)
        return real(storage, current, contested, ordering_field)

    monkeypatch.setattr(simple, "_merge_contested", counted)
    return reads


def test_groups_without_deletes_with_ordering_values_read_no_ordering_column(tmp_path, monkeypatch):
    """The common case costs nothing more: plain deletes and soft deletes without an ordering
    value always win (no merge needed), and updates hold no delete at all."""
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, SCHEMA, "id", ordering_field="ts")
    reads = _count_slice_reads(monkeypatch)
    t.upsert(_rows(id=[1, 2, 3], b=[1.0] * 3, c=["a"] * 3, ts=[1] * 3, _hoodie_is_deleted=[False] * 3))
    t.upsert(_rows(id=[1], b=[2.0], c=["b"], ts=[2], _hoodie_is_deleted=[False]))
    t.upsert(_rows(id=[2], b=[9.0], c=["gone"], ts=[None], _hoodie_is_deleted=[True]))
    t.delete(pa.table({"id": pa.array([3], pa.int64())}))
    simple.METADATA_CACHE.clear()  # (as a new process: every file is read)
    t.upsert(_rows(id=[1, 2, 3], b=[5.0] * 3, ts=[5] * 3))
    assert reads == []
    assert _read(path) == [(1, 5.0, "b", 5), (2, 5.0, None, 5), (3, 5.0, None, 5)]


def test_a_slice_with_a_contested_delete_is_merged_once_per_version(tmp_path, monkeypatch):
    """The decision depends on every file of the slice: it is kept by the identities of all of
    them, so upserts that leave the slice as it was merge it once; a new log file in the group
    (another version of the slice) is merged again."""
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, SCHEMA, "id", ordering_field="ts")
    t.upsert(_rows(id=[1, 3], b=[1.0, 1.0], c=["a", "a"], ts=[1, 1], _hoodie_is_deleted=[False, False]))
    (first,) = _file_groups(path)
    t.upsert(_rows(id=[1], b=[9.0], c=["gone"], ts=[5], _hoodie_is_deleted=[True]))
    reads = _count_slice_reads(monkeypatch)
    t.insert(_rows(id=[1, 4], b=[2.0, 2.0], c=["x", "x"], ts=[6, 6], _hoodie_is_deleted=[False, False]))
    t.upsert(_rows(id=[4], b=[3.0], ts=[7]))  # (the new group: the first group's slice is merged)
    t.upsert(_rows(id=[4], b=[4.0], ts=[8]))  # (the first group's slice as it was: kept)
    assert reads == [first]
    t.upsert(_rows(id=[3], b=[5.0], ts=[9]))  # (writes a log file into the first group: a new slice)
    assert reads == [first]
    t.upsert(_rows(id=[4], b=[6.0], ts=[10]))
    assert reads == [first, first]
    assert _read(path) == [(1, 2.0, "x", 6), (3, 5.0, "a", 9), (4, 6.0, "x", 10)]

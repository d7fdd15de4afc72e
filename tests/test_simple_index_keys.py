"""The simple index reads each data file's keys once per process (pyhudi.index.simple).

A table without a bucket index — the default ``pyhudi.create_table(path, schema, "id")`` — looks
up every stored key of the partitions an upsert touches. Before, every upsert read the key column
of every base file and every log file of those partitions again, and started a thread pool per
partition: an upsert of 2,000 rows into a table of 300 date partitions took ~1 s, most of it
re-reading keys. Now the keys of a file are kept in the process's metadata cache by the file's
identity (path, size, modification time), the files a writer writes are kept as it writes them,
and one pool reads the keys of all touched file groups.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
import pytest

import pyhudi
from pyhudi.index import simple
from read_helpers import fresh_metadata_cache  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("fresh_metadata_cache")

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string()), ("v", pa.float64())])
DAYS = ["2024-01-01", "2024-01-02", "2024-01-03"]


def _rows(ids, value):
    return pa.table({"id": pa.array(ids, pa.int64()), "day": [DAYS[i % 3] for i in ids],
                     "v": pa.array([float(value)] * len(ids))}, schema=SCHEMA)


def _count_reads(monkeypatch) -> list[str]:
    """The files whose keys the simple index reads from now on."""
    reads: list[str] = []
    base_keys, log_keys = simple._base_keys, simple._log_keys
    monkeypatch.setattr(simple, "_base_keys", lambda storage, relpath: reads.append(relpath) or base_keys(storage, relpath))
    monkeypatch.setattr(simple, "_log_keys", lambda storage, relpath, *rule: (
        reads.append(relpath) or log_keys(storage, relpath, *rule)))
    return reads


def _values(path):
    return sorted((r["id"], r["v"]) for r in pyhudi.open_table(path).read(columns=["id", "v"]).to_pylist())


def test_a_writer_reads_no_key_of_a_file_it_wrote_or_read_before(tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, SCHEMA, "id", partition_fields="day")
    t.insert(_rows(range(30), 0))
    reads = _count_reads(monkeypatch)
    t.upsert(_rows([1, 2, 3], 1))  # (the insert's base files: kept as this process wrote them)
    t.upsert(_rows([4, 5, 6, 1], 2))  # (and the first upsert's log files)
    assert reads == []
    assert _values(path) == sorted([(i, 2.0 if i in (1, 4, 5, 6) else 1.0 if i in (2, 3) else 0.0)
                                    for i in range(30)])


def test_files_another_process_wrote_are_read_once(tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, SCHEMA, "id", partition_fields="day")
    t.insert(_rows(range(30), 0))
    code = ("import sys, pyarrow as pa, pyhudi; t = pyhudi.open_table(sys.argv[1]); "
            "t.upsert(pa.table({'id': pa.array([7, 8], pa.int64()), 'day': ['2024-01-02', '2024-01-03'], "
            "'v': [5.0, 5.0]}, schema=t.schema))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(pyhudi.__file__)),
                                                        os.environ.get("PYTHONPATH", "")]))
    subprocess.run([sys.executable, "-c", code, path], check=True, env=env)
    theirs = sorted(os.path.join(d, n) for d in DAYS[1:] for n in os.listdir(os.path.join(path, d)) if ".log." in n)
    reads = _count_reads(monkeypatch)
    t.upsert(_rows([7, 8, 9], 6))  # (one key in each partition)
    assert sorted(reads) == theirs  # the other writer's two log files, nothing this process knows
    reads.clear()
    t.upsert(_rows([8], 7))
    assert reads == []
    expected = {i: 0.0 for i in range(30)} | {7: 6.0, 8: 7.0, 9: 6.0}
    assert _values(path) == sorted(expected.items())
    # no key went to a second file group: one base file per partition, as the insert wrote
    assert [sum(n.endswith(".parquet") for n in os.listdir(os.path.join(path, d))) for d in DAYS] == [1, 1, 1]


def test_one_pool_reads_the_keys_of_every_touched_partition(tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, SCHEMA, "id", partition_fields="day")
    t.insert(_rows(range(30), 0))
    simple.METADATA_CACHE.clear()  # (as a new process: every key is read)
    pools = []
    real = simple.ThreadPoolExecutor

    def counted(*args, **kwargs):
        pools.append(kwargs.get("max_workers"))
        return real(*args, **kwargs)

    monkeypatch.setattr(simple, "ThreadPoolExecutor", counted)
    t.upsert(_rows([0, 1, 2], 3))
    assert pools == [3]
    assert _values(path)[:4] == [(0, 3.0), (1, 3.0), (2, 3.0), (3, 0.0)]


def test_a_deleted_key_written_again_after_the_lookup_was_kept(tmp_path):
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, SCHEMA, "id", partition_fields="day")
    t.insert(_rows(range(6), 0))
    t.upsert(_rows([1], 1))  # (keys of the partition kept)
    t.delete(pa.table({"id": pa.array([1], pa.int64()), "day": [DAYS[1]]}))
    t.upsert(_rows([1, 2], 2))
    assert _values(path) == [(0, 0.0), (1, 2.0), (2, 2.0), (3, 0.0), (4, 0.0), (5, 0.0)]


def test_a_soft_delete_without_an_ordering_value_releases_its_key_under_event_time(tmp_path):
    """A marked row without an ordering value is a commit-time-ordering delete (rule 3): it always
    wins, so its file group no longer holds the key. An insert then writes the key elsewhere, and a
    later upsert must reach only that copy — before, it also reached the deleted group, where the
    key came back as a second row of its own."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("b", pa.float64()), ("c", pa.string()),
                        ("ts", pa.int64()), ("_hoodie_is_deleted", pa.bool_())])
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, schema, "id", ordering_field="ts")

    def rows(**columns):
        return pa.table({k: pa.array(v, schema.field(k).type) for k, v in columns.items()})

    t.upsert(rows(id=[2, 3], b=[1.0, 1.0], c=["a", "a"], ts=[5, 5], _hoodie_is_deleted=[False, False]))
    t.upsert(rows(id=[2], b=[9.0], c=["gone"], ts=[None], _hoodie_is_deleted=[True]))
    t.insert(rows(id=[2], c=["x"]))
    t.upsert(rows(id=[2], b=[7.0]))
    expected = [(2, 7.0, "x"), (3, 1.0, "a")]
    assert sorted((r["id"], r["b"], r["c"]) for r in pyhudi.open_table(path).read().to_pylist()) == expected
    hudi = pytest.importorskip("hudi")
    got = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(path).build().read())
    assert sorted((r["id"], r["b"], r["c"]) for r in got.to_pylist()) == expected


def test_keys_of_a_file_larger_than_an_eighth_of_the_cache_are_not_kept(tmp_path, monkeypatch):
    """A few large files' keys would push out the footers and layouts reads rely on, to no use:
    a file whose keys take more than an eighth of the metadata cache is read each time."""
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, SCHEMA, "id", partition_fields="day")
    t.insert(_rows(range(3000), 0))  # (1,000 keys per partition: ~5 KB each)
    simple.METADATA_CACHE.clear()
    monkeypatch.setattr(simple.METADATA_CACHE, "max_bytes", 8 * 4096)
    reads = _count_reads(monkeypatch)
    t.upsert(_rows([1, 2, 3], 1))
    t.upsert(_rows([4, 5, 6], 2))
    assert len([r for r in reads if r.endswith(".parquet")]) == 6  # (each upsert read the 3 base files)
    monkeypatch.setattr(simple.METADATA_CACHE, "max_bytes", 64 << 20)
    reads.clear()
    t.upsert(_rows([7, 8, 9], 3))
    t.upsert(_rows([10, 11, 12], 4))
    assert len([r for r in reads if r.endswith(".parquet")]) == 3  # (read once, then kept)
    assert _values(path)[:13] == sorted([(i, 0.0) for i in (0,)] + [(i, 1.0) for i in (1, 2, 3)] + [
        (i, 2.0) for i in (4, 5, 6)] + [(i, 3.0) for i in (7, 8, 9)] + [(i, 4.0) for i in (10, 11, 12)])


def _reference_holders(wanted: list[str], stored: list[str], ids: list[str]):
    """Per wanted row the file id of the key's first stored copy, and the (first wanted row of
    the key, other file id) pairs of its other holders: the index's contract, by hand."""
    first_row = {}
    for row, key in enumerate(wanted):
        first_row.setdefault(key, row)
    located, extra = [], set()
    for key in wanted:
        at = [i for i, s in enumerate(stored) if s == key]
        located.append(ids[at[0]] if at else None)
        for i in at[1:]:
            if ids[i] != ids[at[0]]:
                extra.add((first_row[key], ids[i]))
    return located, extra


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from("abcdefgh"), max_size=12),
       st.lists(st.tuples(st.sampled_from("abcdefghij"), st.sampled_from(["g1", "g2", "g3"])), max_size=20))
def test_the_holders_of_wanted_keys_are_found_by_probing_the_stored_keys(wanted, stored):
    """``_stored_copies`` + ``_other_holders`` (a probe of the stored keys against the wanted
    ones) give what looking each wanted key up among the stored ones gives, with keys wanted
    twice and keys stored in several file groups."""
    from pyhudi.index.simple import _other_holders, _stored_copies

    keys = [k for k, _ in stored]
    ids = [g for _, g in stored]
    first, copies = _stored_copies(pa.chunked_array([pa.array(wanted, pa.string())]), pa.array(keys, pa.string()))
    stored_ids = pa.array(ids, pa.string())
    located = stored_ids.take(pa.array(first, mask=first < 0)).to_pylist()
    rows, other_ids = _other_holders(first, copies, stored_ids)
    expected_located, expected_extra = _reference_holders(wanted, keys, ids)
    assert located == expected_located
    assert set(zip(rows.tolist(), other_ids.to_pylist())) == expected_extra
    assert len(rows) == len(expected_extra)  # (each pair once)

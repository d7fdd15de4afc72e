"""Full-row LOG files (``hoodie.pyhudi.insert.full.row``, on by default): an insert or upsert into
a file group that is new for the writer, on a column-family table, writes ONE log file per file
group without a family suffix (all columns, meta columns once) instead of one log per family.
Every family reads its columns from it, as from a full-row base file: reads, later family
writes, deletes, compactions, clean, incremental reads, time travel, concurrent writers,
rollback and ALTER keep their exact results."""

from __future__ import annotations

import os
import threading

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.engine import LocalEngine
from pyhudi.index.bucket import bucket_ids
from pyhudi.logformat import HeaderKey, LogReader
from pyhudi.schema import META_FIELDS
from pyhudi.storage.naming import parse_data_file_name
from write_helpers import data_files, fail_task_after

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("ts", pa.int64()), ("a1", pa.float64()), ("a2", pa.string()),
                    ("b1", pa.int64()), ("b2", pa.float64()), ("c1", pa.string()), ("d1", pa.int64()),
                    ("e1", pa.float64())])
FAMILIES = {"f1": "a1,a2,ts;ts", "f2": "b1,b2", "f3": "c1", "f4": "d1", "f5": "e1"}  # f1 orders by ts
COLUMNS = ["id", "ts", "a1", "a2", "b1", "b2", "c1", "d1", "e1"]
BUCKETS = 4
PER_FAMILY = {"hoodie.pyhudi.insert.full.row": "false"}


def rows(ids, tag: int = 0, ts: int = 1) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "ts": [ts] * len(ids), "a1": [i + tag / 10 for i in ids],
                     "a2": [f"a{i}-{tag}" for i in ids], "b1": [i * 10 + tag for i in ids],
                     "b2": [i / 2 + tag for i in ids], "c1": [f"c{i}-{tag}" for i in ids],
                     "d1": [i * 100 + tag for i in ids], "e1": [i * 1.5 + tag for i in ids]}, schema=SCHEMA)


def expected(*parts: pa.Table) -> list[dict]:
    """Rows by id, later tables' rows replacing earlier ones."""
    out: dict[int, dict] = {}
    for part in parts:
        for r in part.to_pylist():
            out[r["id"]] = r
    return [out[k] for k in sorted(out)]


def create(tmp_path, name: str = "t", **kw):
    kw.setdefault("num_buckets", BUCKETS)
    return pyhudi.create_table(str(tmp_path / name), SCHEMA, "id", name=name, column_families=FAMILIES, **kw)


def read(t, **kw) -> list[dict]:
    return sorted(t.read(**kw).to_pylist(), key=lambda r: r["id"])


def fid(bucket: int) -> str:
    return f"{bucket:08d}-0000-0000-0000-000000000000-0"


def buckets_of(ids) -> list[int]:
    return sorted({int(b) for b in bucket_ids([pa.array(list(ids), pa.int64())], BUCKETS).tolist()})



def full_row_logs(t) -> set[str]:
    return {n for n in data_files(t) if ".log." in n and parse_data_file_name(os.path.basename(n)).family is None}


def only_block(t, relpath: str):
    with LogReader(t.storage, relpath) as reader:
        (block,) = reader.blocks()
    return block


# ------------------------------------------------------------------------------ layout
def test_insert_writes_one_full_row_log_per_new_file_group(tmp_path):
    t = create(tmp_path)
    data = rows(range(20))
    instant = t.insert(data)
    buckets = buckets_of(range(20))
    assert buckets == [0, 1, 2, 3]
    assert data_files(t) == {f".{fid(b)}_{instant}.log.1_{task}-1-0" for task, b in enumerate(buckets)}
    block = only_block(t, f".{fid(0)}_{instant}.log.1_0-1-0")
    stored = block.read()
    file_columns = ["id", "a1", "a2", "ts", "b1", "b2", "c1", "d1", "e1"]  # key, then each family's columns
    assert stored.column_names == [*META_FIELDS, *file_columns]
    ids = stored.column("id").to_pylist()
    assert ids == sorted(ids, key=str) and set(ids) == {i for i in range(20) if buckets_of([i]) == [0]}  # key order
    assert stored.select(COLUMNS).to_pylist() == sorted((r for r in data.to_pylist() if r["id"] in ids), key=lambda r: str(r["id"]))
    assert set(stored.column("_hoodie_commit_time").to_pylist()) == {instant}
    assert set(stored.column("_hoodie_file_name").to_pylist()) == {fid(0)}
    assert HeaderKey.IS_PARTIAL not in block.header and HeaderKey.RECORD_POSITIONS not in block.header
    assert [f["name"] for f in __import__("json").loads(block.header[HeaderKey.SCHEMA])["fields"]] == \
        [*META_FIELDS, *file_columns]
    group = block.parquet_file().metadata.row_group(0)
    chunks = {group.column(i).path_in_schema: group.column(i) for i in range(group.num_columns)}
    assert [c.column_index for c in group.sorting_columns] == [2]  # sorted by record key
    # statistics on the commit time and the keys only (a log block's data values are never used to skip)
    assert sorted(name for name, chunk in chunks.items() if chunk.is_stats_set) == [
        "_hoodie_commit_time", "_hoodie_record_key", "id"]
    assert chunks["_hoodie_commit_time"].has_dictionary_page and not chunks["_hoodie_commit_seqno"].has_dictionary_page
    assert stored.column("_hoodie_commit_seqno").to_pylist() == [f"{instant}_0_{i}" for i in range(len(ids))]
    metadata = t.active_timeline().read_metadata(t.timeline[-1])
    assert sorted(s.path for s in metadata.write_stats()) == sorted(data_files(t))
    assert t.last_write.rows_per_family == {"": 20}
    assert read(t) == expected(data)


def test_reads_of_some_columns_and_filters_take_each_familys_columns(tmp_path):
    t = create(tmp_path)
    data = rows(range(12))
    t.upsert(data)  # (an upsert into new file groups writes full-row logs too)
    assert len(full_row_logs(t)) == len(data_files(t)) == 4
    assert read(t, columns=["id", "c1"]) == [{"id": i, "c1": f"c{i}-0"} for i in range(12)]
    assert read(t, columns=["id", "b2", "ts"]) == [{"id": i, "b2": i / 2, "ts": 1} for i in range(12)]
    assert read(t, columns=["id", "d1"], filters=[("d1", ">=", 1000)]) == [{"id": i, "d1": i * 100} for i in (10, 11)]
    from pyhudi.read.plan import plan_scan

    # families that merge alike (f2-f5: by commit time) read the shared full-row log once, as one
    task = plan_scan(t).tasks[0]
    assert [p.scan.family for p in task.families] == ["f1", "f2+f3+f4+f5"]
    with_meta = t.read(with_meta=True)
    assert set(with_meta.column("_hoodie_commit_time").to_pylist()) == {t.timeline[-1].requested_time}


def test_duplicate_keys_keep_each_familys_own_choice(tmp_path):
    """f1 orders by ts (the higher ts wins), the others by arrival (the later row wins): the
    full-row log holds each family's choice, as its own log would."""
    t = create(tmp_path)
    per_family = create(tmp_path, "per_family")
    data = pa.concat_tables([rows(range(6)), rows([3], tag=7, ts=0), rows([4], tag=8, ts=5)])
    t.insert(data)
    per_family.insert(data, options=PER_FAMILY)
    assert len(full_row_logs(t)) == len(data_files(t))
    assert len(data_files(per_family)) == 5 * len(buckets_of(range(6))) and not full_row_logs(per_family)
    got = read(t)
    assert got == read(per_family)
    three = rows([3], tag=7, ts=0).to_pylist()[0]
    assert got[3] == {**rows([3]).to_pylist()[0], **{k: three[k] for k in ("b1", "b2", "c1", "d1", "e1")}}
    assert got[4] == rows([4], tag=8, ts=5).to_pylist()[0]


def test_option_off_writes_one_log_per_family(tmp_path):
    t = create(tmp_path)
    instant = t.insert(rows(range(8)), options=PER_FAMILY)
    buckets = buckets_of(range(8))
    assert data_files(t) == {f".{fid(b)}_{instant}_{f}.log.1_{task}-1-0"
                             for task, b in enumerate(buckets) for f in FAMILIES}
    assert read(t) == expected(rows(range(8)))


def test_partial_input_or_existing_groups_write_family_logs(tmp_path):
    """A write missing a family (or part of one) and writes into file groups that hold data
    write one log per family present."""
    t = create(tmp_path)
    first = t.upsert(pa.table({"id": pa.array([0, 1, 2, 3], pa.int64()), "c1": ["x", "y", "z", "w"]}))
    assert not full_row_logs(t) and all(f.split(".log.")[0].endswith(f"{first}_f3") for f in data_files(t))
    second = t.insert(rows(range(4), tag=1))  # the groups exist now
    assert not full_row_logs(t)
    assert {f for f in data_files(t) if second in f} == {
        f".{fid(b)}_{second}_{f}.log.1_{task}-1-0" for task, b in enumerate(buckets_of(range(4))) for f in FAMILIES}
    assert read(t) == expected(rows(range(4), tag=1))


def test_tables_without_families_or_with_one_are_unchanged(tmp_path):
    import hudi

    t = pyhudi.create_table(str(tmp_path / "plain"), SCHEMA, "id", name="plain", num_buckets=2)
    instant = t.insert(rows(range(6)))
    buckets = sorted({int(b) for b in bucket_ids([pa.array(range(6), pa.int64())], 2).tolist()})
    assert data_files(t) == {f".{fid(b)}_{instant}.log.1_{task}-1-0" for task, b in enumerate(buckets)}
    one = pyhudi.create_table(str(tmp_path / "one"), pa.schema([SCHEMA.field("id"), SCHEMA.field("a1")]), "id", name="one", num_buckets=2,
                              column_families={"f1": "a1"})
    one.insert(rows(range(6)).select(["id", "a1"]))
    assert not full_row_logs(one) and all("_f1.log." in n for n in data_files(one))  # one family: its own logs
    assert read(one) == rows(range(6)).select(["id", "a1"]).to_pylist()
    batches = hudi.HudiTableBuilder.from_base_uri(t.path).build().read()
    assert pa.Table.from_batches(batches).select(COLUMNS).sort_by("id").to_pylist() == rows(range(6)).to_pylist()


# ------------------------------------------------------------------------------ later writes
def test_family_upsert_and_delete_on_top_of_full_row_logs(tmp_path):
    t = create(tmp_path)
    first = t.insert(rows(range(10)))
    full = full_row_logs(t)
    update = pa.table({"id": pa.array([2, 5, 30], pa.int64()), "b1": [-2, -5, -30], "b2": [0.5, 0.25, 3.0]})
    second = t.upsert(update)
    assert full_row_logs(t) == full
    assert all(n.split(".log.")[0].endswith(f"{second}_f2") for n in data_files(t) if second in n)
    want = expected(rows(range(10)))
    for r in want:
        if r["id"] in (2, 5):
            r.update(b1=-r["id"], b2={2: 0.5, 5: 0.25}[r["id"]])
    thirty = {k: None for k in COLUMNS} | {"id": 30, "b1": -30, "b2": 3.0}
    assert read(t) == sorted([*want, thirty], key=lambda r: r["id"])
    assert read(t, columns=["id", "b1"]) == [{"id": r["id"], "b1": r["b1"]} for r in sorted(
        [*want, thirty], key=lambda r: r["id"])]
    t.delete(pa.table({"id": pa.array([2, 3, 30], pa.int64())}))
    after_delete = [r for r in want if r["id"] not in (2, 3)]
    assert read(t) == after_delete
    assert read(t, columns=["id", "c1"]) == [{"id": r["id"], "c1": r["c1"]} for r in after_delete]
    assert read(t, as_of=first) == expected(rows(range(10)))


def test_family_compaction_then_clean_keeps_the_full_row_log_while_any_family_reads_it(tmp_path):
    t = create(tmp_path, options={"hoodie.cleaner.commits.retained": "1"})
    t.insert(rows(range(10)))
    full = full_row_logs(t)
    t.upsert(pa.table({"id": pa.array([1, 4], pa.int64()), "c1": ["new1", "new4"]}))
    want = expected(rows(range(10)))
    for r in want:
        if r["id"] in (1, 4):
            r["c1"] = f"new{r['id']}"
    t.compact(families=["f3"])
    assert {n for n in data_files(t) if n.endswith("_f3.parquet")} and read(t) == want
    for group in t.file_groups():  # f3 reads its base; the other families still read the full-row log
        assert group.latest_slice("f3", True).log_files == []
        assert [lf.relpath for lf in group.latest_slice("f1", True).log_files] == [
            n for n in full if fid(int(group.file_id[:8])) in n]
    t.clean()
    assert full_row_logs(t) == full  # f1, f2, f4, f5 read them
    assert not [n for n in data_files(t) if n.endswith("_f3.log.1_0-1-0") or "_f3.log." in n]  # f3's old logs
    assert read(t) == want
    t.compact(families=["f1", "f2", "f4", "f5"])
    assert read(t) == want
    t.clean()
    assert full_row_logs(t) == set()  # no family reads them any more
    assert read(t) == want and read(t, columns=["id", "a2"]) == [{"id": r["id"], "a2": r["a2"]} for r in want]



def test_clean_removes_full_row_logs_a_family_added_later_never_reads(tmp_path):
    """A family added by an ALTER does not read the full-row logs written before it (its slices
    are empty there), so once the families that do read them are compacted, a clean removes
    them: before, the cleaner counted them as the new family's files and kept them forever."""
    t = create(tmp_path, options={"hoodie.cleaner.commits.retained": "1"})
    t.insert(rows(range(10)))
    full = full_row_logs(t)
    t.alter(set_properties={"hoodie.colFamily.f6": "g"}, new_columns={"g": pa.string()})
    t.compact()
    assert {group.latest_slice("f6", True).is_empty for group in t.file_groups()} == {True}
    t.upsert(pa.table({"id": pa.array([2], pa.int64()), "g": ["g2"]}))
    t.upsert(pa.table({"id": pa.array([3], pa.int64()), "c1": ["new3"]}))
    t.clean()
    assert full and full_row_logs(t) == set()
    want = [{**r, "g": "g2" if r["id"] == 2 else None} for r in expected(rows(range(10)))]
    want[3]["c1"] = "new3"
    assert read(t) == want

def test_clean_by_file_versions_keeps_a_full_row_log_in_any_familys_latest_slice(tmp_path):
    t = create(tmp_path, options={"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
                                  "hoodie.cleaner.fileversions.retained": "1"})
    t.insert(rows(range(10)))
    full = full_row_logs(t)
    t.compact(families=["f3"])
    assert t.clean() is None and full_row_logs(t) == full  # f1, f2, f4, f5's latest slices hold them
    t.compact(families=["f1", "f2", "f4", "f5"])
    assert t.clean() is not None and full_row_logs(t) == set()
    assert read(t) == expected(rows(range(10)))
    assert sorted(parse_data_file_name(os.path.basename(n)).family for n in data_files(t)) == sorted(list(FAMILIES) * 4)


def test_compacting_every_family_of_full_row_only_groups_writes_one_full_row_base(tmp_path):
    """Every family's slice is the same full-row log in groups 1-3 (one full-row base file each);
    group 0 also has f2 logs: one base file per family there."""
    t = create(tmp_path, options={"hoodie.cleaner.commits.retained": "1"})
    t.insert(rows(range(12)))
    t.upsert(pa.table({"id": pa.array([1], pa.int64()), "b1": [-1], "b2": [-0.5]}))  # id 1: bucket 0
    want = expected(rows(range(12)))
    want[1].update(b1=-1, b2=-0.5)
    done = t.compact()
    bases = sorted((n.file_id, n.family) for n in (parse_data_file_name(os.path.basename(f)) for f in data_files(t))
                   if n.instant == done)
    assert bases == sorted([*((fid(0), f) for f in FAMILIES), *((fid(b), None) for b in (1, 2, 3))], key=str)
    assert read(t) == want
    t.clean()
    assert full_row_logs(t) == set() and read(t) == want
    assert read(t, columns=["id", "e1"], filters=[("e1", ">", 15.0)]) == [{"id": i, "e1": i * 1.5} for i in (11,)]


def test_full_compaction_writes_full_row_bases_and_clean_removes_the_logs(tmp_path):
    t = create(tmp_path, options={"hoodie.cleaner.commits.retained": "1"})
    first = t.insert(rows(range(10)))
    t.upsert(pa.table({"id": pa.array([7], pa.int64()), "e1": [-7.0]}))
    want = expected(rows(range(10)))
    want[7]["e1"] = -7.0
    done = t.compact(full=True)
    assert read(t) == want
    t.clean()
    names = data_files(t)
    parsed = sorted((n.name, n.file_id, n.instant, n.family) for n in map(parse_data_file_name, names))
    assert [p[1:] for p in parsed] == [(fid(b), done, None) for b in range(4)]  # one full-row base file each
    assert all(p[0].endswith(f"_{done}.parquet") for p in parsed)
    assert read(t) == want
    assert not any(first in n for n in names)


def test_incremental_reads_and_time_travel(tmp_path):
    t = create(tmp_path)
    zero_bucket = [i for i in range(40) if buckets_of([i]) == [0]][:2]
    i0 = t.insert(rows(zero_bucket))  # file group 0 only
    others = [i for i in range(12) if i not in zero_bucket]
    i1 = t.insert(rows(others, tag=1))  # new groups 1-3 (full-row logs) and group 0 (one log per family)
    logs = {os.path.basename(n) for n in data_files(t) if i1 in n}
    assert {n for n in logs if parse_data_file_name(n).family is None} == {
        f".{fid(b)}_{i1}.log.1_{task}-1-0" for task, b in enumerate(buckets_of(others)) if b != 0}
    assert {n for n in logs if fid(0) in n} == {f".{fid(0)}_{i1}_{f}.log.1_0-1-0" for f in FAMILIES}
    i2 = t.upsert(pa.table({"id": pa.array([others[0]], pa.int64()), "d1": [-1]}))
    assert read(t, as_of=i0) == expected(rows(zero_bucket))
    assert read(t, as_of=i1) == expected(rows(zero_bucket), rows(others, tag=1))
    meta = {r["id"]: r["_hoodie_commit_time"] for r in t.read(with_meta=True).to_pylist()}
    assert meta == {**{i: i0 for i in zero_bucket}, **{i: i1 for i in others}, others[0]: i2}
    changed = read(t, query_type="incremental", begin=i0, with_meta=True)
    assert [(r["id"], r["_hoodie_commit_time"]) for r in changed] == sorted(
        [(i, i1) for i in others[1:]] + [(others[0], i2)])
    assert [r["id"] for r in read(t, query_type="incremental", begin=i1)] == [others[0]]


# ------------------------------------------------------------------------------ writers
def test_two_concurrent_writers_into_the_same_new_buckets_both_commit(tmp_path, monkeypatch):
    from pyhudi.write.txn import WriteTxn

    t = create(tmp_path)
    handles = [pyhudi.open_table(t.path) for _ in range(2)]
    barrier = threading.Barrier(2, timeout=60)
    original = WriteTxn.plan_tasks

    def both_planned(self, *args, **kwargs):  # each writer plans before the other writes a file
        tasks = original(self, *args, **kwargs)
        barrier.wait()
        return tasks

    monkeypatch.setattr(WriteTxn, "plan_tasks", both_planned)
    inputs = [rows(range(0, 10), tag=1), rows(range(5, 15), tag=2)]
    instants: list = [None, None]
    errors: list = []

    def write(i):
        try:
            instants[i] = handles[i].insert(inputs[i])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    monkeypatch.undo()
    assert errors == []
    full = full_row_logs(t)
    assert data_files(t) == full and len(full) == 8  # 4 buckets x 2 writers, no family suffix
    assert {os.path.basename(n).split("_")[1].split(".")[0] for n in full} == set(instants)
    done = {i.requested_time: i.completion_time for i in pyhudi.open_table(t.path).timeline}
    first, last = sorted(range(2), key=lambda i: done[instants[i]])
    assert read(pyhudi.open_table(t.path)) == expected(inputs[first], inputs[last])  # same ts: the later commit wins


def test_a_full_row_log_completing_after_a_family_compaction_applies_on_top_of_its_base(tmp_path):
    """Writer B writes its full-row logs into groups it finds new, then writer A inserts into the
    same groups and a compaction of f3 runs before B commits: B's logs complete after f3's base,
    so f3 reads them on top of that base, and the other families after A's log."""
    from pyhudi.write.client import WriteClient

    t = create(tmp_path)
    writer = WriteClient(pyhudi.open_table(t.path))
    txn = writer.begin("insert")
    statuses = txn.write_rows(rows(range(8), tag=2), task_id=0)
    assert all(parse_data_file_name(s.file_name).family is None for s in statuses)
    first = t.insert(rows(range(8), tag=1))
    compaction = t.compact(families=["f3"])
    assert read(t) == expected(rows(range(8), tag=1))
    later = writer.commit(txn, statuses).instant
    for group in pyhudi.open_table(t.path).file_groups():
        f3 = group.latest_slice("f3", True)
        assert f3.base_file.instant == compaction and [lf.instant for lf in f3.log_files] == [later]
        assert [lf.instant for lf in group.latest_slice("f1", True).log_files] == [first, later]
    for _ in range(2):  # (the second read merges f3 by the record positions the first one learnt)
        assert read(pyhudi.open_table(t.path)) == expected(rows(range(8), tag=2))  # the later commit wins
    assert read(t, columns=["id", "c1"]) == [{"id": i, "c1": f"c{i}-2"} for i in range(8)]
    assert read(pyhudi.open_table(t.path), as_of=compaction) == expected(rows(range(8), tag=1))


def test_a_failed_full_row_insert_is_rolled_back_and_the_table_is_unchanged(tmp_path, monkeypatch):
    t = create(tmp_path)
    zero_bucket = [i for i in range(40) if buckets_of([i]) == [0]][:2]
    t.insert(rows(zero_bucket))
    before, files = read(t), data_files(t)
    calls = fail_task_after(monkeypatch, 3, OSError("task lost"))
    with pytest.raises(OSError, match="task lost"):
        t.insert(rows(range(20), tag=1), engine=LocalEngine(parallelism=1))
    monkeypatch.undo()
    assert data_files(t) == files
    assert [str(i.action) for i in t.timeline] == ["deltacommit", "rollback"]
    assert read(t) == before
    again = t.insert(rows(range(20), tag=1))
    assert len({n for n in full_row_logs(t) if again in n}) == 3  # groups 1-3 are new, group 0 is not
    assert read(t) == expected(rows(range(20), tag=1))


# ------------------------------------------------------------------------------ schema changes
def test_a_family_added_after_full_row_logs_reads_nulls_for_old_rows(tmp_path):
    t = create(tmp_path)
    t.insert(rows(range(6)))
    added = t.alter(set_properties={"hoodie.colFamily.f6": "g"}, new_columns={"g": pa.string()})
    assert read(t) == [{**r, "g": None} for r in expected(rows(range(6)))]
    assert read(t, columns=["id", "g"]) == [{"id": i, "g": None} for i in range(6)]
    for group in t.file_groups():  # the full-row logs predate f6: they are not its logs
        assert group.latest_slice("f6", True).is_empty
        assert len(group.latest_slice("f1", True).log_files) == 1
    t.upsert(pa.table({"id": pa.array([1, 9], pa.int64()), "g": ["g1", "g9"]}))
    got = read(t, columns=["id", "g", "a2"])
    assert got == [*({"id": i, "g": "g1" if i == 1 else None, "a2": f"a{i}-0"} for i in range(6)),
                   {"id": 9, "g": "g9", "a2": None}]
    assert read(t, as_of=added) == [{**r, "g": None} for r in expected(rows(range(6)))]


def test_a_dropped_family_whose_columns_only_full_row_logs_hold_can_be_added_again(tmp_path):
    t = create(tmp_path)
    t.insert(rows(range(4)))
    t.alter(unset_properties=["hoodie.colFamily.f5"])
    assert read(t, columns=["id", "d1"]) == [{"id": i, "d1": i * 100} for i in range(4)]
    t.alter({"hoodie.colFamily.f5": "e1"}, new_columns={"e1": pa.string()})  # no f5 file: allowed, a new column
    assert read(t, columns=["id", "e1"]) == [{"id": i, "e1": None} for i in range(4)]


# ------------------------------------------------------------------------------ Spark planning
def test_spark_planning_sends_file_groups_with_full_row_logs_to_the_python_source(tmp_path):
    from pyhudi.spark.native import split_scan

    t = create(tmp_path)
    t.insert(rows(range(8)))
    split = split_scan(t, COLUMNS, None, as_of=None, query_type="snapshot")
    assert split.native == [] and sorted(split.python) == [("", fid(b)) for b in range(4)]
    assert set(split.reasons.values()) == {"several families to join"}
    split = split_scan(t, ["id", "c1"], None, as_of=None, query_type="snapshot")  # f3 alone: a log to merge
    assert split.native == [] and set(split.reasons.values()) == {"a family has no base file"}
    t.compact(full=True)
    split = split_scan(t, COLUMNS, None, as_of=None, query_type="snapshot")
    assert split.python == [] and len(split.native) == 4


def test_a_pending_older_instant_missing_from_a_young_listing_is_not_committed(tmp_path):
    """A writer lists the timeline after beginning its instant; a concurrent writer that took an
    older time but wrote its requested file after that listing is missing from it. A listing
    without any completed commit had nothing archived (archival leaves completed commits
    active), so that older instant is pending: its files are not committed data (before, being
    older than the listing's first instant made them count as archived, hence completed)."""
    from pyhudi.fsview.view import FileSystemView
    from pyhudi.timeline.timeline import Timeline

    t = create(tmp_path)
    older = "20260101000000000"
    pending_file = tmp_path / "t" / f".{fid(1)}_{older}.log.1_0-1-0"
    pending_file.write_bytes(b"#HUDI#")  # (the concurrent writer's file, not yet committed)
    os.makedirs(tmp_path / "t" / ".hoodie" / "timeline", exist_ok=True)
    (tmp_path / "t" / ".hoodie" / "timeline" / "20260101000000500.deltacommit.requested").write_bytes(b"")
    timeline = Timeline(t.storage, timeline_dir=".hoodie/timeline", layout_version=2)
    assert [i.requested_time for i in timeline.instants] == ["20260101000000500"]
    view = FileSystemView(t.storage, timeline, 0)
    assert view.completion_of(older) is None
    assert all(not group.log_files for group in view.file_groups())
    assert read(pyhudi.open_table(t.path)) == []

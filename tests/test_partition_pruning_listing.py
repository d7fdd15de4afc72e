"""Partition pruning lists only the partitions that may match (pyhudi.read.pruning.partition_pruned_groups).

A read with a filter on a partition column used to list the files of every partition, then test
each partition's values with one Arrow call per partition: a filtered read of 2 of 300 date
partitions took ~48 ms warm, almost all of it listing and pruning. Now the partition folders are
listed without their files, every filter is evaluated once over all their values, and only the
matching partitions' files are listed (~4–8 ms). A partition a commit wrote to is still
considered when its folder is gone, so damage in a matching partition is still reported.
"""

from __future__ import annotations

import shutil

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import CorruptFileError
from pyhudi.read.filters import Filter
from pyhudi.read.pruning import partition_may_match, partition_values, partitions_may_match
from pyhudi.storage.fs import Storage

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string()), ("n", pa.int32()), ("v", pa.float64())])
DAYS = [f"2024-01-{d:02d}" for d in range(1, 11)]


def _table(tmp_path, **options):
    t = pyhudi.create_table(str(tmp_path / "t"), SCHEMA, "id", partition_fields="day", options=options or None)
    ids = list(range(40))
    t.insert(pa.table({"id": pa.array(ids, pa.int64()), "day": [DAYS[i % 10] for i in ids],
                       "n": pa.array([i % 10 for i in ids], pa.int32()), "v": [float(i) for i in ids]}, schema=SCHEMA))
    return t


def _listed(monkeypatch) -> list[str]:
    """The folders listed from now on."""
    seen: list[str] = []
    real = Storage.list

    def listing(self, relpath="", recursive=False, stat=None):
        seen.append(relpath)
        return real(self, relpath, recursive, stat)

    monkeypatch.setattr(Storage, "list", listing)
    return seen


def test_a_filtered_read_lists_only_the_matching_partitions(tmp_path, monkeypatch):
    t = _table(tmp_path)
    t = pyhudi.open_table(t.path)
    seen = _listed(monkeypatch)
    rows = t.read(columns=["id"], filters=[("day", "in", ["2024-01-03", "2024-01-07"])])
    assert sorted(r["id"] for r in rows.to_pylist()) == [2, 6, 12, 16, 22, 26, 32, 36]
    data_listings = [p for p in seen if not p.startswith(".hoodie")]
    assert sorted(data_listings) == ["", "2024-01-03", "2024-01-07"]


def test_a_read_without_a_partition_filter_lists_every_partition(tmp_path, monkeypatch):
    t = pyhudi.open_table(_table(tmp_path).path)
    seen = _listed(monkeypatch)
    assert t.read(columns=["id"], filters=[("v", "<", 3.0)]).column("id").to_pylist() == [0, 1, 2]
    assert sorted(p for p in seen if not p.startswith(".hoodie")) == ["", *DAYS]


def test_hive_style_partitions_are_pruned_the_same_way(tmp_path, monkeypatch):
    t = pyhudi.open_table(_table(tmp_path, **{"hoodie.datasource.write.hive_style_partitioning": "true"}).path)
    seen = _listed(monkeypatch)
    rows = t.read(columns=["id", "day"], filters=[("day", ">", "2024-01-08")])
    assert sorted((r["id"], r["day"]) for r in rows.to_pylist()) == [
        (8, "2024-01-09"), (9, "2024-01-10"), (18, "2024-01-09"), (19, "2024-01-10"), (28, "2024-01-09"),
        (29, "2024-01-10"), (38, "2024-01-09"), (39, "2024-01-10")]
    assert sorted(p for p in seen if not p.startswith(".hoodie")) == ["", "day=2024-01-09", "day=2024-01-10"]


def test_a_lost_partition_folder_that_matches_is_reported(tmp_path):
    t = _table(tmp_path)
    shutil.rmtree(f"{t.path}/2024-01-04")
    reopened = pyhudi.open_table(t.path)
    assert sorted(r["id"] for r in reopened.read(columns=["id"], filters=[("day", "=", "2024-01-05")]).to_pylist()) == [
        4, 14, 24, 34]  # (a lost folder a filter prunes does not fail the read)
    with pytest.raises(CorruptFileError, match=r"data file 2024-01-04/\S+\.parquet of the table at .* is missing"):
        reopened.read(filters=[("day", "=", "2024-01-04")])


SCHEMA2 = pa.schema([("year", pa.int32()), ("city", pa.string())])
PATHS = ["2023/paris", "2024/paris", "2024/rome", "x/rome", "__HIVE_DEFAULT_PARTITION__/oslo", "2025/a%2Fb", "2025"]
CASES = [
    [Filter("year", ">", 2023)],
    [Filter("year", ">=", 2024), Filter("city", "=", "rome")],
    [Filter("city", "in", ["paris", "a/b"])],
    [Filter("year", "=", 2024), Filter("v", ">", 1)],  # (a filter on another column prunes nothing)
]


def _one_path(path, fields, filters, schema, url_encoded):
    """The verdict of one path, evaluated on its own (the rule: prune only when its typed values
    certainly fail a filter on a partition column)."""
    values = partition_values(path, fields, False, url_encoded)
    relevant = [f for f in filters if f.column in fields]
    if values is None or not relevant:
        return True
    try:
        row = pa.table({f: pa.array([values[f]]).cast(schema.field(f).type) for f in {f.column for f in relevant}})
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return True
    return all(row.filter(f.expression(schema.field(f.column))).num_rows for f in relevant)


@pytest.mark.parametrize("url_encoded", [False, True])
@pytest.mark.parametrize("filters", CASES, ids=["gt", "and", "in", "other-column"])
def test_partitions_evaluated_together_match_one_by_one(filters, url_encoded):
    fields = ["year", "city"]
    together = partitions_may_match(PATHS, fields, False, filters, SCHEMA2, url_encoded)
    assert together == [_one_path(p, fields, filters, SCHEMA2, url_encoded) for p in PATHS]
    assert [partition_may_match(p, fields, False, filters, SCHEMA2, url_encoded) for p in PATHS] == together
    # paths that do not decode (the default partition, the wrong depth) are never pruned
    assert together[4] and together[6]


def test_partitions_evaluated_together_exact_verdicts():
    fields = ["year", "city"]
    assert partitions_may_match(PATHS, fields, False, [Filter("year", ">", 2023)], SCHEMA2) == [
        False, True, True, True, True, True, True]
    assert partitions_may_match(PATHS, fields, False, [Filter("city", "in", ["a/b"])], SCHEMA2, True) == [
        False, False, False, False, True, True, True]
    assert partitions_may_match([], fields, False, [Filter("year", ">", 2023)], SCHEMA2) == []

"""The engine interface (issue 5 item 3): the Spark engine runs the same kernel tasks as the
local engine, so ``t.upsert(data, engine="spark")`` and the local default give identical tables.
"""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.engine import get_engine
from pyhudi.engine.spark import SparkEngine, _run_indexed, _TaskFailure
from pyhudi.errors import ConfigError, SchemaError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spark_helpers import SCHEMA, commit_stats, data_files

FAMILIES = {"fa": "a,b;ts", "fc": "c"}


def make_table(path: Path) -> pyhudi.Table:
    return pyhudi.create_table(str(path), SCHEMA, "id", name="eng", num_buckets=4, partition_fields=["p"],
                               column_families=FAMILIES)


def full_rows(ids, tag: int) -> pa.Table:
    ids = list(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()), "a": [i + tag / 10 for i in ids], "b": [f"b{i}-{tag}" for i in ids],
        "ts": [tag] * len(ids), "c": [i * 100 + tag for i in ids], "p": ["x" if i % 3 else "y" for i in ids],
    }, schema=SCHEMA)


def test_spark_engine_writes_the_same_table_as_the_local_engine(tmp_path, spark):
    tables = {name: make_table(tmp_path / name) for name in ("local", "spark")}
    instants: dict[str, list[str]] = {"local": [], "spark": []}
    partial = pa.table({"id": pa.array([1, 2, 7, 40], pa.int64()), "c": [-1, -2, -7, -40],
                        "p": ["x", "x", "x", "x"]})
    deletes = pa.table({"id": pa.array([3, 4], pa.int64()), "p": ["y", "x"]})
    for name, table in tables.items():
        engine = None if name == "local" else "spark"
        instants[name].append(table.upsert(full_rows(range(30), 1), engine=engine))
        instants[name].append(table.upsert(partial, engine=engine))
        instants[name].append(table.delete(deletes, engine=engine))

    local, remote = tables["local"], tables["spark"]
    expected = local.read().sort_by("id")
    assert expected.num_rows == 29  # 30 rows - 2 deletes + new key 40 (family fc only)
    assert remote.read().sort_by("id").equals(expected)
    assert expected.filter(pa.compute.equal(expected["id"], 40)).to_pylist() == [
        {"id": 40, "a": None, "b": None, "ts": None, "c": -40, "p": "x"}]
    files = data_files(Path(local.path), instants["local"])
    assert files == data_files(Path(remote.path), instants["spark"])
    assert len(files) == 16  # 8 new file groups: one full-row log each; then 4 fc logs, 4 delete blocks
    assert len([f for f in files if "<I0>.log." in f]) == 8
    # the partial write touched family fc only, in every bucket of partition x (one task each)
    assert [f for f in files if "<I1>" in f] == [
        f"x/.0000000{b}-0000-0000-0000-000000000000-0_<I1>_fc.log.1_{b}-1-0" for b in range(4)]
    # the delete wrote a delete block to both families of the two file groups holding ids 3 and 4
    assert [f for f in files if "<I2>" in f] == [
        "x/.00000003-0000-0000-0000-000000000000-0_<I2>_fa.log.1_0-1-0",
        "x/.00000003-0000-0000-0000-000000000000-0_<I2>_fc.log.1_0-1-0",
        "y/.00000002-0000-0000-0000-000000000000-0_<I2>_fa.log.1_1-1-0",
        "y/.00000002-0000-0000-0000-000000000000-0_<I2>_fc.log.1_1-1-0",
    ]
    # (byte sizes may differ by one: the instants' digits are in the sequence numbers, compressed)
    assert commit_stats(local, instants["local"], sizes=False) == commit_stats(remote, instants["spark"], sizes=False)
    for table in (local, remote):  # each file's recorded size is its size on storage
        timeline = table.active_timeline()
        for instant in timeline.commits_timeline():
            for items in timeline.read_metadata(instant).partition_to_write_stats.values():
                for stat in items:
                    assert stat.to_dict()["fileSizeInBytes"] == os.path.getsize(os.path.join(table.path, stat.path))
    assert [s["operation"] for s in commit_stats(remote, instants["spark"])] == ["UPSERT", "UPSERT", "DELETE"]


def test_get_engine_spark_uses_the_active_session(spark):
    engine = get_engine("spark")
    assert isinstance(engine, SparkEngine)
    assert engine.context is spark.sparkContext
    assert SparkEngine(spark).context is spark.sparkContext
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(engine)
    with pytest.raises(ConfigError, match="needs a SparkSession or SparkContext, got str"):
        SparkEngine("local[2]")


class _Boom:
    def run(self):
        raise SchemaError("column 'x' is bad")


class _Fine:
    def __init__(self, value: int) -> None:
        self.value = value

    def run(self) -> int:
        return self.value * 2


def test_deterministic_task_errors_come_back_as_the_original_exception(spark):
    # executor side (no Spark needed): a HudiError becomes a failure record, not a Spark task failure
    failure = _run_indexed((3, _Boom()))
    assert isinstance(failure, _TaskFailure) and failure.index == 3
    assert str(pickle.loads(pickle.dumps(failure)).error) == "column 'x' is bad"
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # this test module is not on the workers' path
    try:
        with pytest.raises(SchemaError, match="column 'x' is bad"):
            SparkEngine(spark).run_tasks([_Fine(1), _Boom(), _Fine(3)])
        assert SparkEngine(spark).run_tasks([_Fine(i) for i in range(5)]) == [0, 2, 4, 6, 8]
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert SparkEngine(spark).run_tasks([]) == []


def test_no_kernel_module_imports_pyspark():
    root = Path(pyhudi.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("spark/") or rel == "engine/spark.py":
            continue
        text = path.read_text()
        if "import pyspark" in text or "from pyspark" in text:
            offenders.append(rel)
    assert offenders == []
    assert os.path.exists(root / "engine" / "spark.py")

"""A real cluster (issue 5 item 6): a Spark standalone master and two workers on 127.0.0.1,
started from the installed pyspark; write → partial-family write → read through them, in a
separate driver process (the test session's local Spark session is not disturbed). Proves that
nothing depends on driver-local state: executors are other JVMs with their own Python workers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spark_cluster import REPO, StandaloneCluster


@pytest.mark.cluster
def test_write_partial_write_and_read_on_a_standalone_cluster(tmp_path):
    with StandaloneCluster(tmp_path / "cluster", workers=2) as cluster:
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable,
                   PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
        driver = subprocess.run(
            [sys.executable, str(Path(__file__).resolve().parent / "spark_cluster.py"), "job", cluster.url,
             str(tmp_path / "data")],
            env=env, capture_output=True, text=True, timeout=300, check=False,
        )
        assert driver.returncode == 0, f"driver failed:\n{driver.stderr[-4000:]}\n{cluster.tail_logs()}"
    result = json.loads(driver.stdout.strip().splitlines()[-1])
    assert result["executors"] == 2
    assert all(len(i) == 17 for i in result["instants"]) and len(set(result["instants"])) == 3
    expected = []
    for i in range(40):
        c = -i if i % 5 == 0 else i * 10  # the partial write replaced family fC for every 5th id
        expected.append({"id": i, "a": i * 1.5, "b": f"b{i}", "ts": 1, "c": c, "p": "x" if i % 2 else "y"})
    expected.append({"id": 100, "a": None, "b": None, "ts": None, "c": 7, "p": "y"})  # new key, fC only
    assert result["rows"] == expected
    assert result["filtered"] == [5, 10, 15, 20, 25, 30, 35]  # c < 0, applied after the merge (c=0 for id 0)
    assert result["partitions"] == 8  # one Spark partition per file group: 2 partitions x 4 buckets
    assert result["after_engine"] == [{"id": 0, "b": "b0"}, {"id": 1, "b": "E1"}, {"id": 2, "b": "E2"}]

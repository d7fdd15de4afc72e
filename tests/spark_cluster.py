"""A throw-away Spark standalone cluster on 127.0.0.1, started from the installed pyspark.

``StandaloneCluster`` starts ``org.apache.spark.deploy.master.Master`` and N ``Worker``\\ s through
``spark-class`` (SPARK_HOME = the pyspark package directory), each in its own process group on
free ports with small memory, waits until every worker registered, and always tears them down
(killing only the process groups it started). Workers get PYTHONPATH and PYSPARK_PYTHON so their
executors import this checkout's pyhudi with this virtualenv's Python.

Run as a script, it is the *driver* of the cluster test: ``python tests/spark_cluster.py job
<master-url> <workdir>`` runs write → partial-family write → read on the cluster and prints one
JSON line with what it read (see :func:`run_job`).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class StandaloneCluster:
    """Master + ``workers`` workers (1 core, ``worker_memory`` each); a context manager."""

    def __init__(self, workdir: Path, workers: int = 2, worker_memory: str = "1g") -> None:
        self.workdir = Path(workdir)
        self.workers = workers
        self.worker_memory = worker_memory
        self.port = free_port()
        self.ui_port = free_port()
        self.processes: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": "256m",
            "SPARK_NO_DAEMONIZE": "1",
            "PYSPARK_PYTHON": sys.executable,
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p),
            "SPARK_WORKER_DIR": str(self.workdir / "work"),
            "SPARK_LOG_DIR": str(self.workdir / "logs"),
        })
        return env

    def _start(self, name: str, *args: str) -> None:
        log = self.workdir / f"{name}.log"
        self.logs.append(log)
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), *args], env=self._env(), stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,  # its own process group, killed as one
            )
        self.processes.append(process)

    def _alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as response:
                state = json.loads(response.read())
        except (OSError, ValueError):
            return -1
        return int(state.get("aliveworkers", 0))

    def start(self, timeout: float = 90) -> StandaloneCluster:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(self.ui_port))
        for i in range(self.workers):
            self._start(f"worker{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                        "--webui-port", str(free_port()), "--cores", "1", "--memory", self.worker_memory,
                        "--work-dir", str(self.workdir / f"work{i}"), self.url)
        deadline = time.time() + timeout
        while self._alive_workers() < self.workers:
            dead = [p for p in self.processes if p.poll() is not None]
            if dead or time.time() > deadline:
                self.stop()
                raise RuntimeError(f"standalone cluster did not start ({len(dead)} process(es) exited); "
                                   f"logs:\n{self.tail_logs()}")
            time.sleep(0.2)
        return self

    def tail_logs(self, lines: int = 30) -> str:
        out = []
        for log in self.logs:
            if log.exists():
                out.append(f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(out)

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for process in reversed(self.processes):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        self.processes.clear()

    def __enter__(self) -> StandaloneCluster:  # noqa: PYI034
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# --------------------------------------------------------------------------- the driver side
def run_job(master: str, workdir: str) -> dict:
    """Write, partially write and read a family table through the cluster; return what was read."""
    import pyarrow as pa
    from pyspark.sql import SparkSession

    started = time.time()

    def mark(what: str) -> None:  # phase timings on stderr (shown when the test fails)
        print(f"[{time.time() - started:6.2f}s] {what}", file=sys.stderr, flush=True)

    import pyhudi
    import pyhudi.spark

    spark = (
        SparkSession.builder.master(master).appName("pyhudi-cluster-test")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.executor.memory", "512m")
        .config("spark.executor.cores", "1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.executorEnv.PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
        .getOrCreate()
    )
    try:
        deadline = time.time() + 60
        while spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() < 3:  # driver + 2 executors
            if time.time() > deadline:
                raise RuntimeError("the two executors never registered")
            time.sleep(0.2)
        mark("session and executors ready")
        path = str(Path(workdir) / "table")
        options = {"hoodie.table.name": "cluster", "hoodie.datasource.write.recordkey.field": "id",
                   "hoodie.datasource.write.partitionpath.field": "p", "hoodie.index.type": "BUCKET",
                   "hoodie.bucket.index.num.buckets": "4", "hoodie.colFamily.fA": "a,b;ts",
                   "hoodie.colFamily.fC": "c"}
        # JVM-side sources: only the pyhudi tasks need Python workers on the executors
        df = spark.range(40).selectExpr(
            "id", "CAST(id AS DOUBLE) * 1.5 AS a", "concat('b', id) AS b", "CAST(1 AS BIGINT) AS ts", "id * 10 AS c",
            "CASE WHEN id % 2 = 1 THEN 'x' ELSE 'y' END AS p")
        first = pyhudi.spark.write(df, path, operation="upsert", **options)
        mark("first write")
        partial = spark.range(0, 40, 5).selectExpr("id", "-id AS c", "CASE WHEN id % 2 = 1 THEN 'x' ELSE 'y' END AS p") \
            .unionByName(spark.range(100, 101).selectExpr("id", "CAST(7 AS BIGINT) AS c", "'y' AS p"))
        second = pyhudi.spark.write(partial, path, operation="upsert")
        mark("partial write")
        read = spark.read.format("pyhudi").load(path)
        got = sorted([r.asDict() for r in read.collect()], key=lambda r: r["id"])
        filtered = sorted(r["id"] for r in spark.read.format("pyhudi").load(path).filter("c < 0").collect())
        mark("reads")
        engine = pyhudi.open_table(path)
        third = engine.upsert(pa.table({"id": pa.array([1, 2], pa.int64()), "b": ["E1", "E2"],
                                        "p": ["x", "y"]}), engine="spark")
        mark("engine write")
        executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1  # minus the driver
        return {"instants": [first, second, third], "rows": got, "filtered": filtered,
                "after_engine": sorted(engine.read(columns=["id", "b"]).to_pylist(), key=lambda r: r["id"])[:3],
                "partitions": read.rdd.getNumPartitions(), "executors": executors}
    finally:
        spark.stop()


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "job":
        raise SystemExit("usage: spark_cluster.py job <master-url> <workdir>")
    print(json.dumps(run_job(sys.argv[2], sys.argv[3])), flush=True)

"""Spark vs local engine (issue 5): rows x (id + 100 float64) in 5 families of 20, 8 buckets, local[2].

The input is a Parquet file (what a pipeline reads); both sides read it, so Spark's fixed costs
(JVM planning, Python workers, the shuffle) are included. Prints, as ratios:

- Spark write (``pyhudi.spark.write``: read Parquet → bucket routing shuffle → Python tasks write
  the file groups → commit) / local write (pyarrow read → ``Table.upsert``)      target <= 2
- Spark read (``spark.read.format("pyhudi")`` → every row materialised with the ``noop`` sink) /
  local read (``Table.read()``)                                                   target <= 2
- the same write through ``df.write.format("pyhudi")`` without the routing shuffle (each input
  split writes its rows to every file group it touches: more, smaller log files), for scale;
- shares of the Spark write: the routing shuffle, the JVM→Python Arrow transfer (a Python sink
  that only consumes the batches), the rest (kernel write + Spark overheads); of the Spark read:
  the Python→JVM transfer (a Python source yielding memory-mapped Arrow batches of the same data);
- floors that no pyhudi code is part of: Spark's own Parquet scan of the input into the ``noop``
  sink, the null Python source into ``noop`` (a read can never beat it), the scan routed into the
  null Python sink (a write can never beat it) — each against the local engine.

Spark sessions are built with ``pyhudi.spark.conf.configure`` (pyhudi's recommended settings).

Every figure is the best of ``repeat`` runs (default 3: the first runs also warm the JVM's JIT), as
wall time and CPU time (this process + the Spark JVM + its Python workers; the machine is shared).
Run: ``.venv/bin/python bench/bench_spark.py [rows] [repeat]`` (default 1,000,000 rows).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (also imported by the harness)
from scenario_w import COLS, FAMILIES, families, make_data  # noqa: E402

ROWS, REPEAT = 1_000_000, 3  # (set from argv by main())
BUCKETS = 8






TICK = os.sysconf("SC_CLK_TCK")


def _process_tree_cpu(root: int | None) -> float:
    """CPU seconds of this process plus ``root`` (the Spark JVM) and all its descendants (the
    Python daemon and workers; reaped children included): what a run cost the machine."""
    own = os.times()
    total = own.user + own.system
    if root is None:
        return total
    children: dict[int, list[tuple[int, list[str]]]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                text = f.read()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        stats[int(entry)] = fields
        children.setdefault(int(fields[1]), []).append((int(entry), fields))
    stack = [(root, stats[root])] if root in stats else []
    while stack:
        pid, fields = stack.pop()
        total += sum(int(x) for x in fields[11:15]) / TICK  # utime stime cutime cstime
        stack.extend(children.get(pid, []))
    return total


JVM: list[int] = []  # the Spark JVM's pid, once started


def timed(fn, repeat: int = 1) -> tuple[float, float]:
    """(wall, cpu) of the best of ``repeat`` runs (the machine is shared: the minimum is the least
    disturbed run); cpu counts this process, the Spark JVM and its Python workers."""
    best = (float("inf"), 0.0)
    for _ in range(repeat):
        cpu = _process_tree_cpu(JVM[0] if JVM else None)
        start = time.perf_counter()
        fn()
        wall = time.perf_counter() - start
        if wall < best[0]:
            best = (wall, _process_tree_cpu(JVM[0] if JVM else None) - cpu)
    return best


def session():
    from pyspark.sql import SparkSession

    from pyhudi.spark.conf import configure

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        configure(SparkSession.builder).master("local[2]").appName("pyhudi-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.pyspark.python", sys.executable)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    JVM.append(spark.sparkContext._gateway.proc.pid)  # for the CPU accounting of timed()
    return spark


def register_null_sources(spark, ipc_dir: str) -> None:
    """``pyhudi_null_sink``: consumes batches, writes nothing; ``pyhudi_null_source``: yields the
    memory-mapped Arrow files of ``ipc_dir`` (one partition each). They isolate Spark's Arrow
    transfer to and from Python workers."""
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceArrowWriter,
        DataSourceReader,
        InputPartition,
        WriterCommitMessage,
    )

    class NullWriter(DataSourceArrowWriter):
        def write(self, iterator):
            for _ in iterator:
                pass
            return WriterCommitMessage()

    class IpcReader(DataSourceReader):
        def __init__(self, files):
            self.files = files

        def partitions(self):
            return [InputPartition(f) for f in self.files]

        def read(self, partition):
            with pa.memory_map(partition.value) as source:
                reader = pa.ipc.open_file(source)
                for i in range(reader.num_record_batches):
                    yield reader.get_batch(i)

    class NullSource(DataSource):
        @classmethod
        def name(cls):
            return "pyhudi_null"

        def schema(self):
            return "id bigint NOT NULL, " + ", ".join(f"c{c} double" for c in range(COLS))

        def writer(self, schema, overwrite):
            return NullWriter()

        def reader(self, schema):
            return IpcReader(sorted(os.path.join(ipc_dir, f) for f in os.listdir(ipc_dir)))

    spark.dataSource.register(NullSource)


def main() -> int:
    global ROWS, REPEAT
    ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else ROWS
    REPEAT = int(sys.argv[2]) if len(sys.argv) > 2 else REPEAT
    import pyhudi.spark
    from pyhudi.spark.bucketing import route_by_bucket

    root = tempfile.mkdtemp(prefix="pyhudi-bench-spark-")
    try:
        data = make_data(ROWS)
        source = f"{root}/input.parquet"
        pq.write_table(data, source, use_dictionary=False, row_group_size=128 * 1024)
        ipc_dir = f"{root}/ipc"
        os.makedirs(ipc_dir)
        for i, start in enumerate(range(0, ROWS, -(-ROWS // BUCKETS))):
            with pa.ipc.new_file(f"{ipc_dir}/{i:02d}.arrow", data.schema) as sink:
                for batch in data.slice(start, -(-ROWS // BUCKETS)).to_batches(max_chunksize=10_000):
                    sink.write_batch(batch)
        del data
        spec = families()
        options = {"hoodie.table.name": "bench", "hoodie.datasource.write.recordkey.field": "id",
                   "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": str(BUCKETS),
                   **{f"hoodie.colFamily.{k}": v for k, v in spec.items()}}

        # ---------------------------------------------------------------- local engine
        runs = iter(range(1000))

        def local_write():
            table = pyhudi.create_table(f"{root}/local{next(runs)}", make_data(0).schema, "id", name="bench",
                                        num_buckets=BUCKETS, column_families=spec)
            table.upsert(pq.read_table(source))

        t_local_write = timed(local_write, REPEAT)
        local = pyhudi.open_table(f"{root}/local0")
        t_local_read = timed(lambda: local.read(), REPEAT)

        # ---------------------------------------------------------------- Spark
        spark = session()
        register_null_sources(spark, ipc_dir)
        pyhudi.spark.register(spark)
        warm = make_data(1000)
        pq.write_table(warm, f"{root}/warm.parquet")  # JVM + Python workers warm-up, not timed
        pyhudi.spark.write(spark.read.parquet(f"{root}/warm.parquet"), f"{root}/warm", **options)
        spark.read.format("pyhudi").load(f"{root}/warm").write.format("noop").mode("overwrite").save()

        targets: list[str] = []

        def spark_write():
            targets.append(f"{root}/spark{len(targets)}")
            pyhudi.spark.write(spark.read.parquet(source), targets[-1], **options)

        t_spark_write = timed(spark_write, REPEAT)
        written = targets[-1]

        def direct_write():  # no routing shuffle: each input split writes log files to every file group
            targets.append(f"{root}/spark{len(targets)}")
            spark.read.parquet(source).write.format("pyhudi").options(**options).mode("append").save(targets[-1])

        t_direct_write = timed(direct_write, REPEAT)
        t_spark_read = timed(lambda: spark.read.format("pyhudi").load(written)
                             .write.format("noop").mode("overwrite").save(), REPEAT)
        assert spark.read.format("pyhudi").load(written).count() == ROWS

        def routed():
            df, _ = route_by_bucket(spark.read.parquet(source), ("id",), BUCKETS, ())
            return df

        t_scan = timed(lambda: spark.read.parquet(source).write.format("noop").mode("overwrite").save(), REPEAT)
        t_routed = timed(lambda: routed().write.format("noop").mode("overwrite").save(), REPEAT)
        t_to_python = timed(lambda: routed().write.format("pyhudi_null").mode("append").save(), REPEAT)
        t_from_python = timed(lambda: spark.read.format("pyhudi_null").load().write.format("noop")
                              .mode("overwrite").save(), REPEAT)
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)

    def fmt(t: tuple[float, float]) -> str:
        return f"{t[0]:6.2f}s (cpu {t[1]:6.2f}s)"

    def ratio(a: tuple[float, float], b: tuple[float, float]) -> str:
        return f"ratio {a[0] / b[0]:5.2f} (cpu {a[1] / max(b[1], 1e-9):5.2f})"

    w = t_spark_write[0]
    shuffle = max(0.0, t_routed[0] - t_scan[0])
    to_python = max(0.0, t_to_python[0] - t_routed[0])
    print(f"rows={ROWS:,} columns={COLS + 1} families={FAMILIES} buckets={BUCKETS} local[2]  load {os.getloadavg()[0]:.1f}")
    print(f"local write {fmt(t_local_write)}   spark write {fmt(t_spark_write)}   "
          f"{ratio(t_spark_write, t_local_write)}  (target <= 2)")
    print(f"      df.write direct (no shuffle; several log files per file group) {fmt(t_direct_write)}   "
          f"{ratio(t_direct_write, t_local_write)}")
    print(f"local read  {fmt(t_local_read)}   spark read  {fmt(t_spark_read)}   "
          f"{ratio(t_spark_read, t_local_read)}  (target <= 2)")
    print(f"spark write shares: parquet scan {t_scan[0] / w:4.0%}, routing shuffle {shuffle / w:4.0%}, "
          f"JVM->Python transfer {to_python / w:4.0%}, kernel write + rest {max(0.0, w - t_to_python[0]) / w:4.0%}")
    print(f"spark read shares: Python->JVM transfer {t_from_python[0] / t_spark_read[0]:4.0%}, "
          f"kernel read + rest {max(0.0, t_spark_read[0] - t_from_python[0]) / t_spark_read[0]:4.0%}")
    print("floors (no pyhudi code): "
          f"Spark's own Parquet scan -> noop {fmt(t_scan)} = {t_scan[0] / t_local_read[0]:4.1f}x the local read; "
          f"null Python source -> noop {fmt(t_from_python)} = {t_from_python[0] / t_local_read[0]:4.1f}x the local read; "
          f"scan -> routing -> null Python sink {fmt(t_to_python)} = {t_to_python[0] / t_local_write[0]:4.1f}x the local write")
    return 0


if __name__ == "__main__":
    sys.exit(main())

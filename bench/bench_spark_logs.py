"""Floors of native designs for file groups with log files (issue 15 item 5), local[2].

The table: Scenario W (``rows`` x ``id`` + 100 float64, 5 families of 20, 8 buckets) bulk-inserted
with full-row base files, then family ``f0`` upserted on 10% of the rows: every file group has a
Parquet log block with ``RECORD_POSITIONS``. ``pyhudi.spark.read`` sends such file groups through
the Python source. Each design below is timed into the ``noop`` sink against Spark's own Parquet
scan of the same rows (the input file), interleaved in rounds; medians and ranges of wall and
CPU (this process + the Spark JVM + its Python workers) are printed as ratios to the scan.

The designs are floors, not implementations: the "updated rows" source below reads each base
file whole with pyarrow, takes the rows at the block's positions and writes the block's columns
over them — the least a Python part must do (the kernel's merge does more); keys and positions
are collected on the driver before timing (a real read would pay that too).

- ``python source``: ``pyhudi.spark.read`` as it is (every merged row through the Python source);
- ``null python source``: memory-mapped Arrow batches of the same rows through a Python source
  that does nothing else (what any design routing every row through Python pays at least);
- ``native bases``: ``spark.read.parquet`` of the base files (what no native design beats: it
  removes and replaces nothing);
- ``anti-join key``: base files minus the updated keys, a broadcast left-anti join on the
  ``LONG`` record key (Spark's long-keyed hash relation);
- ``anti-join position``: the same on one ``LONG`` per row, (file index << 32) | ``_metadata.row_index``;
- ``... + python rows``: the above unioned with the updated rows from the Python part;
- ``patch join key``: base files left-joined (broadcast) to the updated family's columns of the
  updated rows (sent from the driver), ``CASE WHEN`` matched per updated column: no row through
  Python at all;
- ``python updated rows``: the Python part alone.

Run: ``.venv/bin/python bench/bench_spark_logs.py [rows] [rounds]`` (default 1,000,000 rows, 5
rounds). ``spark.sql.codegen.maxFields`` may be given as a third argument (Spark's default 100 is
below the table's 106 columns: no whole-stage codegen, no columnar scan).
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_spark  # noqa: E402
from scenario_w import families, make_data  # noqa: E402


def build(root: str, rows: int, spark) -> tuple[str, str]:
    """The input Parquet file and the updated full-row table (see the module docstring)."""
    import pyhudi
    import pyhudi.spark

    source = f"{root}/input.parquet"
    pq.write_table(make_data(rows), source, use_dictionary=False, row_group_size=128 * 1024)
    options = {"hoodie.table.name": "bench", "hoodie.datasource.write.recordkey.field": "id",
               "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": str(bench_spark.BUCKETS),
               **{f"hoodie.colFamily.{k}": v for k, v in families().items()}}
    table = f"{root}/updated"
    pyhudi.spark.write(spark.read.parquet(source), table, operation="bulk_insert", **options)
    ids = np.sort(np.random.default_rng(3).choice(rows, max(1, rows // 10), replace=False))
    pyhudi.open_table(table).upsert(make_data(rows, seed=9).take(ids).select(["id", *families()["f0"].split(",")]))
    return source, table


def log_groups(table: str) -> list[tuple[str, list[str]]]:
    """(base file path, relative paths of its log files) of each file group of ``table``."""
    out = []
    for base in sorted(glob.glob(f"{table}/*.parquet")):
        file_id = os.path.basename(base).split("_")[0]
        out.append((base, sorted(os.path.relpath(p, table) for p in glob.glob(f"{table}/.{file_id}_*.log.*"))))
    return out


def blocks(table: str, groups) -> list[tuple[int, np.ndarray, pa.Table]]:
    """(file index, written positions, block rows) of every data block of ``groups``."""
    import pyhudi
    from pyhudi.logformat.block import HeaderKey
    from pyhudi.logformat.positions import decode_positions
    from pyhudi.logformat.reader import read_log_blocks

    storage = pyhudi.open_table(table).storage
    out = []
    for i, (_, logs) in enumerate(groups):
        for log in logs:
            for block in read_log_blocks(storage, log):
                positions = decode_positions(block.header[HeaderKey.RECORD_POSITIONS]).astype(np.int64)
                out.append((i, positions, block.read()))
    return out


def register_sources(spark, groups, schema, ipc_files: list[str]) -> None:
    columns = schema.names
    """``bench_updated_rows`` (the Python part of the anti-join designs) and ``bench_null`` (the
    memory-mapped rows of ``ipc_files``)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class UpdatedRows(DataSourceReader):
        def partitions(self):
            return [InputPartition(g) for g in groups]

        def read(self, partition):
            import os

            import pyarrow as pa
            import pyarrow.parquet as pq

            import pyhudi
            from pyhudi.logformat.block import HeaderKey
            from pyhudi.logformat.positions import decode_positions
            from pyhudi.logformat.reader import read_log_blocks

            base, logs = partition.value
            storage = pyhudi.open_table(os.path.dirname(base)).storage
            stored = pq.read_table(base, columns=columns)
            for log in logs:
                for block in read_log_blocks(storage, log):
                    rows = stored.take(pa.array(decode_positions(block.header[HeaderKey.RECORD_POSITIONS])))
                    data = block.read()
                    for name in data.column_names:
                        if name in rows.column_names:
                            rows = rows.set_column(rows.column_names.index(name), name, data.column(name))
                    yield from rows.to_batches(max_chunksize=10_000)

    class Mapped(DataSourceReader):
        def partitions(self):
            return [InputPartition(f) for f in ipc_files]

        def read(self, partition):
            import pyarrow as pa

            with pa.memory_map(partition.value) as source:
                reader = pa.ipc.open_file(source)
                for i in range(reader.num_record_batches):
                    yield reader.get_batch(i)

    for name, reader_class in (("bench_updated_rows", UpdatedRows), ("bench_null", Mapped)):
        spark.dataSource.register(type(f"Source_{name}", (DataSource,), {
            "name": classmethod(lambda cls, n=name: n), "schema": lambda self: schema,
            "reader": lambda self, schema, r=reader_class: r()}))


def designs(spark, source: str, table: str, groups, found) -> dict:
    """The DataFrames timed (see the module docstring)."""
    import pyhudi.spark
    from pyspark.sql import functions as F

    bases = [b for b, _ in groups]
    keys = pa.table({"__k": pa.concat_arrays([b.column("id").combine_chunks() for _, _, b in found])})
    positions = pa.table({"__k": np.concatenate([(np.int64(i) << 32) | p for i, p, _ in found])})
    names = pyhudi.spark.read(spark, table).columns  # (the table's columns: no meta fields)
    scan = lambda: spark.read.parquet(*bases).select(*names)  # noqa: E731
    patch = pa.concat_tables([b.select([c for c in b.column_names if c in names]) for _, _, b in found])
    patch = patch.rename_columns([f"__p_{c}" for c in patch.column_names])
    updated = {c[len("__p_"):] for c in patch.column_names} - {"id"}
    files = F.create_map(*[x for i, b in enumerate(bases) for x in (F.lit(os.path.basename(b)), F.lit(i << 32).cast("long"))])

    def anti_key():
        right = spark.createDataFrame(keys)
        left = scan()
        return left.join(F.broadcast(right), left["id"] == right["__k"], "left_anti")

    def anti_position():
        right = spark.createDataFrame(positions)
        left = spark.read.parquet(*bases)
        left = left.select(*names, (F.element_at(files, F.col("_metadata.file_name")) + F.col("_metadata.row_index")).alias("__row"))
        return left.join(F.broadcast(right), left["__row"] == right["__k"], "left_anti").drop("__row")

    def patch_key():
        right = spark.createDataFrame(patch)
        joined = scan().join(F.broadcast(right), F.col("id") == right["__p_id"], "left")
        return joined.select(*[F.when(F.col("__p_id").isNotNull(), F.col(f"__p_{c}")).otherwise(F.col(c)).alias(c)
                               if c in updated else F.col(c) for c in names])

    python_rows = lambda: spark.read.format("bench_updated_rows").load()  # noqa: E731
    return {
        "scan (reference)": lambda: spark.read.parquet(source),
        "python source (now)": lambda: pyhudi.spark.read(spark, table),
        "null python source": lambda: spark.read.format("bench_null").load(),
        "native bases": scan,
        "anti-join key": anti_key,
        "anti-join position": anti_position,
        "anti-join key + python rows": lambda: anti_key().unionByName(python_rows()),
        "anti-join position + python rows": lambda: anti_position().unionByName(python_rows()),
        "patch join key": patch_key,
        "python updated rows": python_rows,
    }


def main() -> int:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    import pyhudi.spark

    root = tempfile.mkdtemp(prefix="pyhudi-bench-spark-logs-")
    try:
        spark = bench_spark.session()
        if len(sys.argv) > 3:
            spark.conf.set("spark.sql.codegen.maxFields", sys.argv[3])
        pyhudi.spark.register(spark)
        source, table = build(root, rows, spark)
        groups = log_groups(table)
        found = blocks(table, groups)
        assert all(logs for _, logs in groups) and sum(len(p) for _, p, _ in found) == max(1, rows // 10)
        merged = pyhudi.open_table(table).read()
        os.makedirs(f"{root}/ipc")
        ipc = []
        for i, batch_start in enumerate(range(0, rows, -(-rows // bench_spark.BUCKETS))):
            ipc.append(f"{root}/ipc/{i:02d}.arrow")
            with pa.ipc.new_file(ipc[-1], merged.schema) as sink:
                for batch in merged.slice(batch_start, -(-rows // bench_spark.BUCKETS)).to_batches(max_chunksize=10_000):
                    sink.write_batch(batch)
        del merged
        register_sources(spark, groups, pyhudi.spark.read(spark, table).schema, ipc)
        frames = designs(spark, source, table, groups, found)
        for name in ("anti-join key + python rows", "anti-join position + python rows", "patch join key"):
            design, truth = frames[name](), pyhudi.spark.read(spark, table)
            assert design.count() == rows and truth.exceptAll(design).count() == 0, f"{name}: not the merged rows"

        def noop(df) -> None:
            df.write.format("noop").mode("overwrite").save()

        for make in frames.values():  # warm-up, not timed
            noop(make())
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in frames}
        for _ in range(rounds):
            for name, make in frames.items():
                times[name].append(bench_spark.timed(lambda m=make: noop(m())))
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)

    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]

    scan = times["scan (reference)"]
    print(f"rows={rows:,} rounds={rounds} local[2] load {os.getloadavg()[0]:.1f} "
          f"maxFields={sys.argv[3] if len(sys.argv) > 3 else 'default'}")
    for name, runs in times.items():
        wall = [w / s[0] for (w, _), s in zip(runs, scan)]
        cpu = [c / max(s[1], 1e-9) for (_, c), s in zip(runs, scan)]
        print(f"{name:34s} {median([w for w, _ in runs]):6.2f}s cpu {median([c for _, c in runs]):6.2f}s   "
              f"ratio {median(wall):4.2f} [{min(wall):4.2f}-{max(wall):4.2f}]  "
              f"cpu {median(cpu):4.2f} [{min(cpu):4.2f}-{max(cpu):4.2f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())

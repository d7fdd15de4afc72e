"""Spark against Spark's own Parquet (issue 15 item 5), local[2], Scenario W with 8 buckets.

- write: ``pyhudi.spark.write`` of a Parquet input / ``df.write.parquet`` of the same input;
- read: ``spark.read.format("pyhudi")`` (the Python source alone) into the ``noop`` sink /
  ``spark.read.parquet`` of the same rows into ``noop``; and ``pyhudi.spark.read`` of the same
  table (written by an upsert: full-row log files only), merged by the JVM merge reader
  (:mod:`pyhudi.spark.merge_scan`);
- native-path reads (``pyhudi.spark.read``: final file groups through Spark's Parquet reader,
  :mod:`pyhudi.spark.native`) against ``spark.read.parquet`` of the same rows and columns: the
  table without families (every file group native), and the 5-family table pruned to one family's
  columns (native: the other families' aligned base files prove row existence);
- full reads of the 5-family table (``pyhudi.spark.read``) against ``spark.read.parquet`` of the
  same rows: bulk-inserted with one base file per family (``hoodie.pyhudi.insert.full.row=false``:
  families are joined by the Python source), bulk-inserted with default options (one full-row base
  file per file group: native), and that table after a one-family update of 10% of the rows (log files
  in every file group: the JVM merge reader writes them over the base rows at their positions;
  ``hoodie.pyhudi.read.spark.jvm.merge=false``, the Python source, beside it).

The session, the warm-up and the CPU clock (this process + the Spark JVM + its Python workers)
are ``bench_spark``'s; run ``bench/bench_spark.py`` for the shares and floors of each cost.
"""

from __future__ import annotations

import shutil

import pyarrow.parquet as pq

import pyhudi

from bench import bench_spark
from bench.common import Context, fresh_path, remove
from bench.harness import Comparison, Variant, compare
from bench.scenario_w import families, make_data


def available() -> str | None:
    """None, or why Spark cannot run here."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed"
    if shutil.which("java") is None and not __import__("os").environ.get("JAVA_HOME"):
        return "no Java runtime (java not on PATH, JAVA_HOME unset)"
    return None


def run(ctx: Context) -> list[Comparison]:
    import pyhudi.spark

    source = ctx.path("spark-input.parquet")
    pq.write_table(make_data(ctx.rows), source, use_dictionary=False, row_group_size=128 * 1024)
    options = {"hoodie.table.name": "bench", "hoodie.datasource.write.recordkey.field": "id",
               "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": str(bench_spark.BUCKETS),
               **{f"hoodie.colFamily.{k}": v for k, v in families().items()}}
    spark = bench_spark.session()
    try:
        pyhudi.spark.register(spark)
        warm = ctx.path("spark-table")  # (also warms the JVM and the Python workers; not timed)
        pyhudi.spark.write(spark.read.parquet(source), warm, **options)
        if not ctx.tiny:
            spark.read.format("pyhudi").load(warm).write.format("noop").mode("overwrite").save()
            spark.read.parquet(source).write.format("noop").mode("overwrite").save()
        clock = lambda: bench_spark._process_tree_cpu(bench_spark.JVM[-1])  # noqa: E731
        write = compare("Spark write: pyhudi / Spark's df.write.parquet", [
            Variant("pyhudi.spark.write", setup=lambda _: fresh_path(ctx, "spark-hudi"),
                    run=lambda p: pyhudi.spark.write(spark.read.parquet(source), p, **options), cleanup=remove),
            Variant("spark.read.parquet -> df.write.parquet", setup=lambda _: fresh_path(ctx, "spark-pq"),
                    run=lambda p: spark.read.parquet(source).write.parquet(p), cleanup=remove),
        ], ctx.repeat, target="<= 1.0", cpu_clock=clock)
        read = compare("Spark read: pyhudi / Spark's own Parquet scan (noop sink)", [
            Variant("spark.read.format('pyhudi') -> noop",
                    lambda _: spark.read.format("pyhudi").load(warm).write.format("noop").mode("overwrite").save()),
            Variant("spark.read.parquet -> noop",
                    lambda _: spark.read.parquet(source).write.format("noop").mode("overwrite").save()),
        ], ctx.read_repeat, target="<= 1.0", cpu_clock=clock)
        assert spark.read.format("pyhudi").load(warm).count() == ctx.rows
        merged = compare("Spark read of the same table: pyhudi.spark.read (log files merged in the JVM) / "
                         "Spark's own Parquet scan (noop sink)", [
            Variant("pyhudi.spark.read -> noop",
                    lambda _: pyhudi.spark.read(spark, warm).write.format("noop").mode("overwrite").save()),
            Variant("spark.read.parquet -> noop",
                    lambda _: spark.read.parquet(source).write.format("noop").mode("overwrite").save()),
        ], ctx.read_repeat, target="<= 1.0", cpu_clock=clock)
        native = _native_reads(ctx, spark, source, options, clock)
    finally:
        spark.stop()
        bench_spark.JVM.clear()
    return [write, read, merged, *native]


def _native_reads(ctx: Context, spark, source: str, options: dict, clock) -> list[Comparison]:
    """``pyhudi.spark.read`` (native path) vs ``spark.read.parquet`` of the same rows into ``noop``."""
    import pyhudi.spark

    def noop(df) -> None:
        df.write.format("noop").mode("overwrite").save()

    # bulk_insert writes base files (an upsert into an empty bucketed MOR table writes log files,
    # which are merged: the Python source)
    plain = ctx.path("spark-plain")  # the same rows without column families
    pyhudi.spark.write(spark.read.parquet(source), plain, operation="bulk_insert",
                       **{k: v for k, v in options.items() if not k.startswith("hoodie.colFamily.")})
    family = ctx.path("spark-bulk")
    pyhudi.spark.write(spark.read.parquet(source), family, operation="bulk_insert", **options)
    one = ["id", *families()["f0"].split(",")]
    split = pyhudi.spark.native.split_scan(pyhudi.open_table(family), one, None, as_of=None, query_type="snapshot")
    assert split.python == [], split.explain()
    assert pyhudi.spark.native.split_scan(pyhudi.open_table(plain), ["id"], None, as_of=None,
                                          query_type="snapshot").python == []
    assert pyhudi.spark.read(spark, plain).count() == ctx.rows
    if not ctx.tiny:  # (warm-up of the native path)
        noop(pyhudi.spark.read(spark, plain))
    full = compare("Spark read, native path: pyhudi.spark.read / spark.read.parquet (no families, noop sink)", [
        Variant("pyhudi.spark.read -> noop", lambda _: noop(pyhudi.spark.read(spark, plain))),
        Variant("spark.read.parquet -> noop", lambda _: noop(spark.read.parquet(source))),
    ], ctx.read_repeat, target="<= 1.0", cpu_clock=clock)
    pruned = compare("Spark read, native path: one family of 5 (21 columns) / spark.read.parquet of them", [
        Variant("pyhudi.spark.read(columns) -> noop", lambda _: noop(pyhudi.spark.read(spark, family, columns=one))),
        Variant("spark.read.parquet.select -> noop", lambda _: noop(spark.read.parquet(source).select(*one))),
    ], ctx.read_repeat, target="<= 1.0", cpu_clock=clock)
    return [full, pruned, *_family_full_reads(ctx, spark, source, options, clock, family)]


def _family_full_reads(ctx: Context, spark, source: str, options: dict, clock, full_row: str) -> list[Comparison]:
    """Full reads of the 5-family table: per-family base files, full-row base files, after an update."""
    import numpy as np

    import pyhudi.spark
    from pyhudi.spark.native import split_scan

    def noop(df) -> None:
        df.write.format("noop").mode("overwrite").save()

    def scan() -> Variant:
        return Variant("spark.read.parquet -> noop", lambda _: noop(spark.read.parquet(source)))

    per_family = ctx.path("spark-per-family")
    pyhudi.spark.write(spark.read.parquet(source), per_family, operation="bulk_insert",
                       **{**options, "hoodie.pyhudi.insert.full.row": "false"})
    assert split_scan(pyhudi.open_table(full_row), [], None, as_of=None, query_type="snapshot").python == []
    updated = ctx.path("spark-full-row-updated")
    shutil.copytree(full_row, updated)
    ids = np.sort(np.random.default_rng(3).choice(ctx.rows, max(1, ctx.rows // 10), replace=False))
    f0 = ["id", *families()["f0"].split(",")]
    pyhudi.open_table(updated).upsert(make_data(ctx.rows, seed=9).take(ids).select(f0))
    for path in (per_family, full_row, updated):
        assert pyhudi.spark.read(spark, path).count() == ctx.rows
    out = []
    for title, path in [("per-family base files (hoodie.pyhudi.insert.full.row=false)", per_family),
                        ("full-row base files (the default bulk insert)", full_row)]:
        out.append(compare(f"Spark read, 5 families, {title}: pyhudi.spark.read / spark.read.parquet (noop sink)", [
            Variant("pyhudi.spark.read -> noop", lambda _, p=path: noop(pyhudi.spark.read(spark, p))),
            scan(),
        ], ctx.read_repeat, target="<= 1.0", cpu_clock=clock))
    off = {"hoodie.pyhudi.read.spark.jvm.merge": "false"}
    assert split_scan(pyhudi.open_table(updated), [], None, as_of=None, query_type="snapshot").native == []
    out.append(compare("Spark read, 5 families, full-row base files + one family updated (10% of rows): "
                       "pyhudi.spark.read (JVM merge) / spark.read.parquet (noop sink)", [
        Variant("pyhudi.spark.read -> noop", lambda _: noop(pyhudi.spark.read(spark, updated))),
        Variant("pyhudi.spark.read, JVM merge off (Python source) -> noop",
                lambda _: noop(pyhudi.spark.read(spark, updated, **off))),
        scan(),  # (last: the ratio is the first variant's to it)
    ], ctx.read_repeat, target="<= 1.0", cpu_clock=clock))
    return out

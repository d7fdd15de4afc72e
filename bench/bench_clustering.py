"""Clustering benchmark (issue 14, Performance): the rewrite, then what it buys readers.

A copy-on-write table without buckets, 4 partitions, fed by many small inserts
(``hoodie.parquet.small.file.limit=0``: every insert writes a new file in each partition it
touches) — by default 125 inserts of 16,000 rows × 20 columns, i.e. 500 small files and the
2 million rows of the issue's "200 inserts of 10k rows" — is clustered by two sort columns
``a`` (int64) and ``b`` (float64) with ``target.file.max.bytes`` set so each partition's one
group comes out as about :data:`OUTPUT_FILES_PER_PARTITION` files; the curves give ``a`` (the first
sort column) :data:`LEAD_BITS` lead bits. Measured:

1. **rewrite**: ``Table.cluster`` (linear and z-order layouts) against pyarrow reading the same
   500 files, sorting each partition's rows by ``(a, b)`` and writing as many files
   (target: pyhudi's time <= 2 × pyarrow's, i.e. throughput >= 0.5×; wall and CPU);
2. **data skipping after clustering**, per layout (z-order, hilbert, linear): the share of the
   files a point filter ``a = x`` (target <= 10%) and ``b = y`` (target <= 25% with z-order or
   hilbert) reads, the footers planning opened (0: the replacecommit's recorded ranges decide),
   and the time of those filtered reads;
3. **full scan**: after clustering (few files) against before (500 files): target < 1.

Standalone: ``python bench/bench_clustering.py [--inserts 125] [--rows-per-insert 16000]
[--repeat 3]``; in the harness: ``python -m bench clustering`` (``--rows`` = total rows).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pyhudi  # noqa: E402
from bench.harness import Comparison, Variant, compare, print_comparison  # noqa: E402
from pyhudi.read.metadata_cache import METADATA_CACHE  # noqa: E402

PARTITIONS = 4
OUTPUT_FILES_PER_PARTITION = 64
LEAD_BITS = 2
"""``hoodie.pyhudi.layout.optimize.lead.bits`` of the curves: 64 files = 16 ranges of ``a`` x 4 of
``b`` (a point filter reads 1/16 and 1/4 of the files) instead of the plain curves' 8 x 8."""
PAYLOAD_COLUMNS = 16  # + id, part, a, b = 20 columns
SORT_COLUMNS = ["a", "b"]
LAYOUTS = {"z-order": ("z-order", LEAD_BITS), "hilbert": ("hilbert", LEAD_BITS),
           "z-order lead 0": ("z-order", 0), "hilbert lead 1": ("hilbert", 1), "linear": ("linear", 0)}
"""Layouts measured after clustering: name -> (strategy, lead bits). The first three are the
figures of the targets; the other two show what the lead bits change (the plain curve, and the
Hilbert curve's 2.5 levels)."""
PROBES = 20
WRITE_OPTIONS = {"hoodie.parquet.small.file.limit": "0"}


def make_batch(rows: int, seed: int) -> pa.Table:
    """``rows`` fresh rows (keys unique across seeds), spread evenly over the partitions."""
    rng = np.random.default_rng(seed)
    ids = np.arange(seed * rows, (seed + 1) * rows, dtype=np.int64)
    columns: dict[str, Any] = {
        "id": ids,
        "part": pa.array([f"p{i % PARTITIONS}" for i in range(PARTITIONS)]).take(pa.array(ids % PARTITIONS)),
        "a": rng.integers(0, 1_000_000_000, rows),
        "b": rng.random(rows),
    }
    for i in range(PAYLOAD_COLUMNS):
        columns[f"c{i}"] = rng.random(rows) if i % 2 else rng.integers(0, 1 << 40, rows)
    return pa.table(columns)


def build_small_files(path: str, inserts: int, rows_per_insert: int) -> tuple[pyhudi.Table, pa.Table]:
    """The table of ``inserts × PARTITIONS`` small files; returns it and every row inserted."""
    batches = [make_batch(rows_per_insert, seed) for seed in range(inserts)]
    table = pyhudi.create_table(path, batches[0].schema, "id", partition_fields="part",
                                table_type="COPY_ON_WRITE", options=WRITE_OPTIONS)
    for batch in batches:
        table.insert(batch)
    return table, pa.concat_tables(batches)


def base_files(path: str) -> dict[str, list[str]]:
    """Partition → its Parquet files (a fresh table: every file is live)."""
    out = {}
    for part in sorted(os.listdir(path)):
        folder = os.path.join(path, part)
        if part.startswith(".") or not os.path.isdir(folder):
            continue
        out[part] = sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".parquet"))
    return out


def cluster_options(path: str, layout: str, outputs: int, lead_bits: int = LEAD_BITS) -> dict[str, str]:
    """``target.file.max.bytes`` = a partition's bytes / ``outputs`` (files per partition)."""
    files = base_files(path)
    per_partition = max(sum(os.path.getsize(f) for f in fs) for fs in files.values())
    target = max(1, math.ceil(per_partition / outputs))
    return {"hoodie.clustering.plan.strategy.target.file.max.bytes": str(target),
            "hoodie.layout.optimize.strategy": layout, "hoodie.pyhudi.layout.optimize.lead.bits": str(lead_bits)}


def cluster(path: str, layout: str, outputs: int, lead_bits: int = LEAD_BITS) -> dict[str, Any]:
    table = pyhudi.open_table(path)
    instant = table.cluster(sort_columns=SORT_COLUMNS, options=cluster_options(path, layout, outputs, lead_bits))
    assert instant is not None, "nothing was clustered"
    return {"files_after": table.plan_scan(["id"]).metrics["files_considered"]}


def pyarrow_rewrite(source: str, out: str, outputs: int) -> dict[str, Any]:
    """pyarrow alone: read each partition's files, sort by the sort columns, write as many
    files as clustering writes (the baseline of the rewrite)."""
    written = 0
    for part, files in base_files(source).items():
        rows = pa.concat_tables([pq.read_table(f) for f in files])
        rows = rows.take(pc.sort_indices(rows, [(c, "ascending") for c in SORT_COLUMNS]))
        os.makedirs(os.path.join(out, part), exist_ok=True)
        bounds = np.linspace(0, rows.num_rows, outputs + 1).astype(int)
        for i in range(outputs):
            pq.write_table(rows.slice(bounds[i], bounds[i + 1] - bounds[i]), os.path.join(out, part, f"{i}.parquet"))
            written += 1
    return {"files_written": written}


def probe_values(data: pa.Table, column: str, probes: int, seed: int) -> list[Any]:
    return [v.item() for v in np.random.default_rng(seed).choice(data.column(column).to_numpy(), probes)]


def point_filters(path: str, data: pa.Table, probes: int) -> dict[str, Any]:
    """Plan and read ``probes`` point filters on each sort column, from a cold metadata cache;
    the average share of the files read per column and the footers planning opened."""
    METADATA_CACHE.clear()
    table = pyhudi.open_table(path)
    out: dict[str, Any] = {}
    footers = 0
    for column, seed in (("a", 1), ("b", 2)):
        shares = []
        for value in probe_values(data, column, probes, seed):
            plan = table.plan_scan(None, [(column, "=", value)])
            m = plan.metrics
            shares.append(1 - m["files_skipped"] / max(1, m["files_considered"]))
            footers += m["footers_read"]
            got = plan.to_table()
            assert got.num_rows >= 1, (column, value)
        out[f"files_read_{column}"] = float(np.mean(shares))
    out["files"] = m["files_considered"]
    out["footers_read"] = footers
    return out


def copy_of(source: str, work: str, tag: str, round_: int) -> str:
    dest = os.path.join(work, f"{tag}-{round_}")
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(source, dest)
    return dest


def run(work: str, inserts: int, rows_per_insert: int, repeat: int, probes: int = PROBES,
        outputs: int = OUTPUT_FILES_PER_PARTITION) -> list[Comparison]:
    """The three comparisons; ``outputs`` is the number of files clustering writes per partition."""
    source = os.path.join(work, "small-files")
    _, data = build_small_files(source, inserts, rows_per_insert)
    files_before = sum(len(f) for f in base_files(source).values())
    note = f"{files_before} files of {rows_per_insert // PARTITIONS} rows -> ~{outputs} per partition"

    def clustering_variant(layout: str) -> Variant:
        return Variant(f"pyhudi cluster ({layout})", setup=lambda r: copy_of(source, work, f"c-{layout}", r),
                       run=lambda path: cluster(path, layout, outputs), cleanup=lambda path: shutil.rmtree(path, True))

    rewrite = compare("clustering rewrite: pyhudi (linear) / pyarrow read + sort + write", [
        clustering_variant("linear"), clustering_variant("z-order"),
        Variant("pyarrow read + sort + write", setup=lambda r: os.path.join(work, f"pa-{r}"),
                run=lambda out: pyarrow_rewrite(source, out, outputs), cleanup=lambda out: shutil.rmtree(out, True)),
    ], repeat, target="<= 2 (throughput >= 0.5x)", note=note)
    base = rewrite.variants["pyarrow read + sort + write"]
    zorder = rewrite.variants["pyhudi cluster (z-order)"]
    rewrite.ratio.update(zorder_wall=zorder["median_wall"] / base["median_wall"],
                         zorder_cpu=zorder["median_cpu"] / max(base["median_cpu"], 1e-9))

    clustered = {}
    for i, (layout, (strategy, lead_bits)) in enumerate(LAYOUTS.items()):
        clustered[layout] = copy_of(source, work, f"done-{i}", 0)
        cluster(clustered[layout], strategy, outputs, lead_bits)
    skipping = compare("point filters on a, b after clustering: z-order / hilbert / linear", [
        Variant(f"{layout}: plan + read", run=lambda _, p=clustered[layout]: point_filters(p, data, probes))
        for layout in LAYOUTS], max(1, min(repeat, 2)),
        target="files_read_a <= 10%, files_read_b <= 25% (z-order, hilbert), footers_read 0",
        note=f"{probes} filters per column; shares of the files a point filter reads")
    for layout in LAYOUTS:
        m = skipping.variants[f"{layout}: plan + read"]["metrics"]
        skipping.ratio[f"{layout}_files_read_a"] = m["files_read_a"]
        skipping.ratio[f"{layout}_files_read_b"] = m["files_read_b"]

    before, after = pyhudi.open_table(source), pyhudi.open_table(clustered["z-order"])
    scan = compare("full scan: after clustering (z-order) / before", [
        Variant("after clustering", run=lambda _: {"rows": after.read().num_rows}),
        Variant("before clustering", run=lambda _: {"rows": before.read().num_rows}),
    ], max(repeat, 3), target="< 1", note=f"{files_before} files before")
    return [rewrite, skipping, scan]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--inserts", type=int, default=125)
    parser.add_argument("--rows-per-insert", type=int, default=16_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--probes", type=int, default=PROBES)
    parser.add_argument("--outputs", type=int, default=OUTPUT_FILES_PER_PARTITION,
                        help="files clustering writes per partition")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench_clustering_")
    try:
        for result in run(work, args.inserts, args.rows_per_insert, args.repeat, args.probes, args.outputs):
            print_comparison(result)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

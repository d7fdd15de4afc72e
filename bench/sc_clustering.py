"""Clustering (issue 14, Performance): 500 small files clustered by two sort columns.

``rows`` is the total row count, inserted by :data:`INSERTS` small inserts into 4 partitions
(one new file per partition each: 500 files by default; 20 inserts at the CI size). See
:mod:`bench.bench_clustering` for what is compared and the targets.
"""

from __future__ import annotations

from bench import bench_clustering
from bench.common import Context
from bench.harness import Comparison

INSERTS = 125
TINY_INSERTS = 20
TINY_OUTPUTS = 4


def run(ctx: Context) -> list[Comparison]:
    inserts = TINY_INSERTS if ctx.tiny else INSERTS
    outputs = TINY_OUTPUTS if ctx.tiny else bench_clustering.OUTPUT_FILES_PER_PARTITION
    probes = 4 if ctx.tiny else bench_clustering.PROBES
    return bench_clustering.run(ctx.work, inserts, max(bench_clustering.PARTITIONS, ctx.rows // inserts),
                                ctx.repeat, probes, outputs)

"""The demo's events table: many small appends, then clustering by the column queries filter on.

An append-only copy-on-write table without buckets, fed by small ``insert`` commits with Hudi's
small-file handling off (``hoodie.parquet.small.file.limit=0``, as a low-latency stream runs it):
every commit adds a new small file whose rows span every device. A point query on one device
must open every file. Clustering (RFC-19, :meth:`pyhudi.Table.cluster`) rewrites them into a few
files sorted by ``device_id``; data skipping (:mod:`pyhudi.read.skipping`) then opens only the
file whose ``device_id`` range holds the device.
"""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa

import pyhudi
from pyhudi.demo.data import EVENTS_SCHEMA, DemoSize, event_batches

SORT_COLUMN = "device_id"
TARGET_FILES = 4
"""About how many files clustering writes (its target file size is a quarter of the table)."""


def files_read(table: Any, filters: list[tuple]) -> dict[str, int]:
    """Data files a read with ``filters`` opens: the files of the slices its plan keeps (file
    groups whose statistics exclude the filter are not planned), and what planning skipped."""
    plan = table.plan_scan(filters=filters)
    opened = set()
    for task in plan.tasks:
        for part in task.families:
            fs = part.file_slice
            opened.update(f.relpath for f in ([fs.base_file] if fs.base_file is not None else []))
            opened.update(lf.relpath for lf in fs.log_files)
    metrics = getattr(plan, "metrics", {}) or {}
    return {"files_read": len(opened), "file_groups_considered": metrics.get("file_groups_considered", len(plan.tasks)),
            "file_groups_skipped": metrics.get("file_groups_skipped", 0)}


def data_bytes(table: Any) -> tuple[int, int]:
    """``(files, bytes)`` of the latest file slices."""
    files = size = 0
    for group in table.file_groups():
        for f in [*group.base_files, *group.log_files]:
            files += 1
            size += f.size
    return files, size


def build_events(path: str, size: DemoSize) -> tuple[Any, dict[str, Any]]:
    """Create the events table and append every small batch; returns the table and what it took."""
    table = pyhudi.create_table(path, EVENTS_SCHEMA, "event_id", name="events", table_type="COPY_ON_WRITE",
                                options={"hoodie.parquet.small.file.limit": "0"})
    started = time.perf_counter()
    batches = event_batches(size)
    for batch in batches:
        table.insert(batch)
    return table, {"commits": len(batches), "rows": sum(b.num_rows for b in batches),
                   "seconds": time.perf_counter() - started, "expected": pa.concat_tables(batches)}


def cluster_events(table: Any) -> tuple[str | None, float]:
    """Cluster every small file into ~:data:`TARGET_FILES` files sorted by :data:`SORT_COLUMN`."""
    _, total = data_bytes(table)
    target = max(total // TARGET_FILES, 1)
    started = time.perf_counter()
    instant = table.cluster(sort_columns=[SORT_COLUMN], options={
        "hoodie.clustering.plan.strategy.target.file.max.bytes": str(target),
        "hoodie.clustering.plan.strategy.max.bytes.per.group": str(total * 2)})
    return instant, time.perf_counter() - started

"""What every scenario of ``python -m bench`` shares: its context, scratch tables, Scenario W.

The table builders come from the standalone benchmarks (``bench_read``, ``bench_write``,
``bench_compaction``) so the harness measures exactly what they measure.
"""

from __future__ import annotations

import itertools
import os
import shutil
from dataclasses import dataclass
from typing import Any, Callable

import pyarrow as pa

import pyhudi
from bench.harness import Variant
from bench.scenario_w import families

BUCKETS = 4


@dataclass
class Context:
    """A run's settings: ``rows`` of Scenario W, ``repeat`` rounds, ``tiny`` (the CI size),
    ``work``, a scratch directory the scenario may fill (removed after the run), and ``instants``
    (``--instants``: the history of the ``commit`` scenario's long-lived table)."""

    rows: int
    repeat: int
    tiny: bool
    work: str
    instants: int | None = None  # (``commit``: the long-lived table's history; None = its default)

    def path(self, name: str) -> str:
        return os.path.join(self.work, name)

    @property
    def read_repeat(self) -> int:
        """Rounds of a read comparison: reads are short, so at least 3 (but 1 at the CI size)."""
        return self.repeat if self.tiny else max(self.repeat, 3)


_SEQ = itertools.count()


def fresh_path(ctx: Context, tag: str) -> str:
    return ctx.path(f"{tag}-{next(_SEQ)}")


def remove(path: str) -> None:
    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.exists(path):
        os.remove(path)


def new_table(ctx: Context, tag: str, schema: pa.Schema, with_families: bool) -> tuple[str, pyhudi.Table]:
    """An empty Scenario W table (5 families or none, 4 buckets) under a fresh path."""
    path = fresh_path(ctx, tag)
    spec = families() if with_families else None
    return path, pyhudi.create_table(path, schema, "id", num_buckets=BUCKETS, column_families=spec)


def insert_variant(ctx: Context, name: str, data: pa.Table, with_families: bool) -> Variant:
    """Time ``Table.insert`` of ``data`` into a fresh empty table each run."""
    return Variant(name, setup=lambda _: new_table(ctx, "insert", data.schema, with_families),
                   run=lambda pt: pt[1].insert(data), cleanup=lambda pt: remove(pt[0]))


def upsert_variant(ctx: Context, name: str, data: pa.Table, update: pa.Table, with_families: bool) -> Variant:
    """Time ``Table.upsert`` of ``update`` into a freshly inserted copy of ``data`` each run;
    reports the bytes the upsert wrote."""

    def setup(_: int) -> tuple[str, pyhudi.Table]:
        path, table = new_table(ctx, "upsert", data.schema, with_families)
        table.insert(data)
        return path, table

    def run(pt: tuple[str, pyhudi.Table]) -> dict[str, Any]:
        pt[1].upsert(update)
        return {"bytes_written": pt[1].last_write.bytes_written}

    return Variant(name, setup=setup, run=run, cleanup=lambda pt: remove(pt[0]))


def file_variant(name: str, write: Callable[[str], None], path: str) -> Variant:
    """Time ``write(path)`` of a plain file, removed after each run."""
    return Variant(name, run=lambda _: write(path), cleanup=lambda _: remove(path))

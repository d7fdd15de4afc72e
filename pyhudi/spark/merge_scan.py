"""File groups with log blocks, merged in the JVM by record position (issue 15 item 5).

A file group whose slice is a base file (or an insert's first Parquet log block) plus Parquet log
blocks that rewrite some of its rows — the usual slice after an update — cannot go to Spark's
Parquet reader as it is (the reader cannot skip the rewritten rows), and through the Python
source every row crosses from a Python worker into the JVM: measured, that transfer alone costs
more than Spark's whole scan of the same rows. Joins of Spark's scans on positions or keys cost
1.1-2x the scan too (:mod:`pyhudi.spark.native`).

So the merge runs in the JVM, planned by the kernel:

- on the driver, each such read task works out its positional merge without reading a data column
  (:meth:`~pyhudi.read.task.ReadTask.merge_recipe`: the visible blocks, their positions in the
  base — written by the block's writer or learnt from the keys, with the kernel's checks — and
  which file supplies each column). :func:`merge_groups` keeps the file groups whose merge the
  JVM reader can execute exactly and writes them into a plan file;
- the merge reader (``pyhudi/spark/java``, built by :mod:`pyhudi.spark.jvm`) reads each base
  with Spark's own vectorized Parquet reader — a log block's content is a Parquet file at a byte
  range of its log file — and writes each block's rows over the rows at their positions in the
  columnar batches, blocks in commit order. A partial (one-family) block writes only its columns.

What stays on the Python source: merges by key (blocks adding rows, deletes, event-time ordering
with an ordering column, several families not aligned), key filters and splits, incremental
queries, remote storage, nested or converted types, and reads asking for the record key or
partition path meta columns where the files may lack them. Filters are applied by Spark over
the merged rows (as on the native branch); partition columns the files do not store are added
from the path.

The plan file lives in a temporary directory of this process, removed when it exits: the
DataFrame is read by this process's Spark session only.
"""

from __future__ import annotations

import atexit
import shutil
import struct
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from pyhudi.errors import ConfigError
from pyhudi.read.replay import BaseRead, BlockRead
from pyhudi.read.task import ReadTask
from pyhudi.schema import META_FIELDS
from pyhudi.spark.jvm import MERGE_SOURCE, merge_source_ready
from pyhudi.spark.native import ScanSplit, project, spark_reads, union_all

MAGIC = b"pyhudi-merge-plan-1"
_UNSTORED_META = frozenset({META_FIELDS[2], META_FIELDS[3]})
"""``_hoodie_record_key`` and ``_hoodie_partition_path``: the Python source fills them where a
file lacks them (tables without meta fields); the merge reader returns columns as stored."""


@dataclass(frozen=True)
class Source:
    """A Parquet file, or a log block's Parquet content (a byte range of its log file)."""

    path: str
    offset: int
    length: int
    columns: tuple[str, ...]


@dataclass(frozen=True)
class MergeGroup:
    """One file group's merge, as the JVM reader executes it."""

    partition_path: str
    file_id: str
    partition_values: tuple[tuple[str, Any], ...]
    bases: tuple[Source, ...]
    rows: int
    patches: tuple[tuple[Source, np.ndarray], ...]


_PATCHED_TYPES = (T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.DateType, T.LongType, T.TimestampType,
                  T.TimestampNTZType, T.FloatType, T.DoubleType, T.DecimalType, T.StringType, T.BinaryType)
"""Spark types the merge reader copies from a block into a batch (``Copier.java``)."""


def merge_split(spark: SparkSession, split: ScanSplit, schema: T.StructType) -> list[MergeGroup]:
    """The file groups of ``split.python`` the JVM merge reader reads (taken out of it, into
    ``split.merged``); the others keep their reason, with why the JVM cannot merge them."""
    if split.plan is None:
        return []
    output = split.plan.schema
    readable = {f.name for f in output if spark_reads(f.type)}
    flat = {f.name for f in schema.fields if isinstance(f.dataType, _PATCHED_TYPES)}
    tasks: dict[tuple[str, str], list[ReadTask]] = {}
    for task in split.plan.tasks:
        tasks.setdefault((task.partition_path, task.file_id), []).append(task)
    found: list[MergeGroup] = []
    for group in split.python:
        mine = tasks.get(group, [])
        if len(mine) != 1:
            result: MergeGroup | str = "split into key ranges"
        else:
            task = mine[0]
            stored = [f.name for f in schema.fields if f.name not in (task.partition_values or {})]
            unreadable = [n for n in stored if n not in readable]
            result = (f"column {unreadable[0]!r} needs conversion" if unreadable
                      else merge_group(task, stored, flat))
        if isinstance(result, str):
            split.reasons[group] += f" (JVM merge: {result})"
        else:
            found.append(result)
    if not found:
        return []
    ready = merge_source_ready(spark)
    if ready is not True:
        for g in found:
            split.reasons[(g.partition_path, g.file_id)] += f" (JVM merge: {ready})"
        return []
    taken = {(g.partition_path, g.file_id) for g in found}
    split.merged = [g for g in split.python if g in taken]
    split.python = [g for g in split.python if g not in taken]
    return found


def merge_group(task: ReadTask, stored: Sequence[str], flat: set[str]) -> MergeGroup | str:
    """The task's merge for the JVM reader, or why it stays on the Python source. ``stored``:
    the output columns the files must supply (the others come from the partition path);
    ``flat``: the output columns of types the reader copies between vectors."""
    if not task.storage.is_local:
        return "remote storage"
    if _UNSTORED_META & set(stored):
        return "asks for the record key or partition path meta column"
    found = task.merge_recipe()
    if isinstance(found, str):
        return found
    recipe, positions, rows = found
    if rows >= 2**31:
        return "more rows than a 32-bit position"
    bases = []
    supplied: list[str] = []
    for read in recipe.bases:
        source = _source(task, read, [n for n in _names(read) if n in stored])
        bases.append(source)
        supplied += source.columns
    if sorted(supplied) != sorted(stored):
        return "a column is not stored in the base files"
    patches = []
    keys = set(task.settings.keys.fields)  # (a block's record keys are the base's at its positions)
    for block, at in zip(recipe.blocks, positions):
        names = [n for n in _names(block) if n in stored and n not in keys]
        if not names:
            continue
        if any(n not in flat for n in names):
            return "a block rewrites a column of a type the merge reader does not patch"
        patches.append((_source(task, block, names), at))
    values = tuple((k, v.as_py()) for k, v in (task.partition_values or {}).items() if k not in stored)
    return MergeGroup(task.partition_path, task.file_id, values, tuple(bases), rows, tuple(patches))


def _names(read: BaseRead | BlockRead) -> list[str]:
    return list(read.names) if type(read) is BaseRead else [f.name for f in read.fields]


def _source(task: ReadTask, read: BaseRead | BlockRead, names: list[str]) -> Source:
    path = task.storage.full_path(read.relpath)
    if type(read) is BaseRead:
        return Source(path, 0, Path(path).stat().st_size, tuple(names))
    return Source(path, read.content_offset, read.content_length, tuple(names))


# --------------------------------------------------------------------------- the plan file
_plans: list[Path] = []


def _plan_dir() -> Path:
    if not _plans:
        directory = Path(tempfile.mkdtemp(prefix="pyhudi-merge-"))
        atexit.register(shutil.rmtree, directory, True)
        _plans.append(directory)
    return _plans[0]


def write_plan(groups: Sequence[MergeGroup]) -> Path:
    """The plan file of ``groups`` (the format ``MergePlan.java`` reads)."""
    out = bytearray()

    def text(value: str) -> None:
        raw = value.encode()
        out.extend(struct.pack(">i", len(raw)))
        out.extend(raw)

    def source(s: Source) -> None:
        text(s.path)
        out.extend(struct.pack(">qqi", s.offset, s.length, len(s.columns)))
        for name in s.columns:
            text(name)

    text(MAGIC.decode())
    out.extend(struct.pack(">i", len(groups)))
    for g in groups:
        text(f"{g.partition_path or '.'}/{g.file_id}")
        out.extend(struct.pack(">i", len(g.bases)))
        for base in g.bases:
            source(base)
        out.extend(struct.pack(">qi", g.rows, len(g.patches)))
        for block, positions in g.patches:
            source(block)
            out.extend(struct.pack(">i", len(positions)))
            out.extend(np.asarray(positions, dtype=">i4").tobytes())
    path = _plan_dir() / f"{uuid.uuid4().hex}.plan"
    path.write_bytes(bytes(out))
    return path


# --------------------------------------------------------------------------- the DataFrame
def merge_frame(spark: SparkSession, groups: Sequence[MergeGroup], schema: T.StructType) -> DataFrame:
    """The merged rows of ``groups`` with exactly ``schema`` (the Python source's schema of the read).
    Loads the merge reader into the session if :func:`merge_split` has not (ConfigError: it cannot)."""
    ready = merge_source_ready(spark)
    if ready is not True:
        raise ConfigError(f"the JVM merge reader is not available: {ready}")
    by_values: dict[tuple, list[MergeGroup]] = {}
    for g in groups:
        by_values.setdefault(g.partition_values, []).append(g)
    frames = []
    for values, members in by_values.items():
        constant = dict(values)
        stored = T.StructType([f for f in schema.fields if f.name not in constant])
        df = (spark.read.format(MERGE_SOURCE).schema(stored).option("schema", stored.json())
              .option("plan", str(write_plan(members))).load())
        frames.append(project(df, stored, constant, schema))
    return union_all(frames)

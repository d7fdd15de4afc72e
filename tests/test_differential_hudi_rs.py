"""Differential, model-based test: pyhudi-written tables WITHOUT column families read by other
readers must return the rows of the reference model (tests/table_model.py) and of pyhudi's read.

A table without families is a plain Apache Hudi table (DESIGN §2). After every step of a random
sequence of writes and services the machine compares:

- the model's rows (extended with the soft-delete marker ``_hoodie_is_deleted``:
  tests/differential_support.py) with pyhudi's snapshot read, meta columns included
  (``_hoodie_commit_time``, ``_hoodie_record_key``, ``_hoodie_partition_path``);
- hudi-rs's snapshot read (the ``hudi`` package), data and those meta columns;
- for copy-on-write, a plain Parquet scan of each file group's newest base file (Apache Hudi's
  copy-on-write snapshot read is exactly that).

Shapes: copy-on-write or merge-on-read, with a bucket index (merge-on-read) or without, partitioned
(hive-style or not) or not, integer or string keys, ordered by an integer, timestamp, decimal or
date column or not, log blocks as Parquet or Avro. Operations: upsert (some rows carrying the
marker), insert, bulk_insert, delete, insert_overwrite(_table), compaction, clustering, clean,
archival. At the end of every sequence, hudi-rs's time travel to each instant must return the
model's rows of that instant.

``HYPOTHESIS_PROFILE=long`` runs many more sequences (the default keeps the file well under a minute).
Divergences found are kept as scenario tests in tests/test_differential_hudi_rs_scenarios.py.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from table_model import INT_KEYS, NESTED, STR_KEYS, VALUES, avro_log_blocks, partition_of, project, shapes

from differential_support import (
    MARKER,
    MARKS,
    META,
    MarkerModel,
    archived_log_files,
    create_with_marker,
    hudi_rs_known_limitation,
    hudi_rs_table,
    not_negative,
    latest_base_files_table,
    rows_with,
)

COLUMN_VALUES = {**VALUES, MARKER: MARKS}


class DifferentialMachine(RuleBasedStateMachine):
    """Random writes and services on one table; every reader must agree with the model."""

    LAYOUT = "cow"

    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.mkdtemp(prefix="pyhudi-diffrs-")
        self.table = None
        self.history: list[tuple[str, str, list[dict]]] = []  # (instant, completion, model rows)

    def teardown(self) -> None:
        try:
            if self.table is not None and self.history:
                self.time_travel_everywhere()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    @initialize(data=st.data())
    def create_table(self, data: st.DataObject) -> None:
        self.shape = data.draw(shapes(self.LAYOUT), label="shape")
        self.path = os.path.join(self.directory, "t")
        self.table = create_with_marker(self.path, self.shape)
        self.model = MarkerModel(self.shape)
        self.keys = INT_KEYS if self.shape.int_keys else STR_KEYS
        self.cleaned_from = ""  # requested time of the earliest commit the last clean retained

    @property
    def columns(self) -> list[str]:
        return self.model.columns()

    # ------------------------------------------------------------------ helpers
    def _frame(self, present: list[str], rows: list[dict]) -> pa.Table:
        names = ["id", *(["part"] if self.shape.partitioned else []), *present]
        schema = self.table.schema
        return pa.table({n: [r[n] for r in rows] for n in names}, schema=pa.schema([schema.field(n) for n in names]))

    def _batch(self, data: st.DataObject, keys: list, marks: bool) -> tuple[list[str], list[dict]]:
        names = [c for c in self.columns[2 if self.shape.partitioned else 1:] if c != MARKER]
        if marks and data.draw(st.integers(0, 3), label="soft deletes") == 0:
            present = [*names, MARKER]  # (soft deletes as Hudi writers send them: whole rows)
        else:
            present = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True),
                                label="columns")
        ids = data.draw(st.lists(st.sampled_from(keys), min_size=1, max_size=4), label="ids")
        rows = []
        for key in ids:
            row = {"id": key, "part": partition_of(self.shape, key)}
            row.update({c: data.draw(self._values(c), label=c) for c in present})
            rows.append(row)
        return present, rows

    def _values(self, column: str) -> st.SearchStrategy:
        if column == self.shape.ordering:  # (hudi-rs reads a stored null ordering value as 0: not_negative)
            return COLUMN_VALUES[column].filter(not_negative)
        return COLUMN_VALUES[column]

    def _base_keys(self) -> set[tuple[str, str]]:
        """(family, key) of the records the last write put in base files (merge-on-read: the
        others went to log files)."""
        out = set()
        for status in self.table.last_write.statuses:
            if status.writes_base_file:
                import pyarrow.parquet as pq

                keys = pq.read_table(self.table.storage.full_path(status.relpath), columns=["_hoodie_record_key"])
                out.update(("", k) for k in keys.column(0).to_pylist())
        return out

    def _record(self, instant: str) -> None:
        completion = next(i.completion_time for i in self.table.timeline if i.requested_time == instant)
        self.history.append((instant, completion, copy.deepcopy(self.model.expected_with_meta())))

    # ------------------------------------------------------------------ writes
    @rule(data=st.data(), operation=st.sampled_from(["upsert", "upsert", "insert", "bulk_insert"]))
    def write(self, data: st.DataObject, operation: str) -> None:
        keys = self.keys
        if self.shape.layout == "mor" and operation == "insert":  # (as tests/test_table_model.py: new keys only)
            keys = [k for k in self.keys if k not in self.model.rows]
            if not keys:
                operation, keys = "upsert", self.keys
        present, rows = self._batch(data, keys, marks=operation == "upsert")
        with avro_log_blocks(self.shape.avro_logs):
            instant = getattr(self.table, operation)(self._frame(present, rows))
        self.model.write(operation, set(present), rows, instant, self._base_keys())
        self._record(instant)

    @rule(data=st.data())
    def upsert(self, data: st.DataObject) -> None:
        self.write(data, "upsert")

    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        ids = data.draw(st.lists(st.sampled_from(self.keys), min_size=1, max_size=3), label="ids")
        rows = [{"id": k, "part": partition_of(self.shape, k)} for k in ids]
        with avro_log_blocks(self.shape.avro_logs):
            instant = self.table.delete(self._frame([], rows))
        self.model.delete(ids)
        self._record(instant)

    @rule(data=st.data(), whole_table=st.booleans())
    def overwrite(self, data: st.DataObject, whole_table: bool) -> None:
        present, rows = self._batch(data, self.keys, marks=False)
        if whole_table:
            instant = self.table.insert_overwrite_table(self._frame(present, rows))
            replaced = None
        else:
            instant = self.table.insert_overwrite(self._frame(present, rows))
            replaced = {r["part"] for r in rows}
        for key in list(self.model.rows):
            if replaced is None or partition_of(self.shape, key) in replaced:
                del self.model.rows[key]
        self.model.write("bulk_insert", set(present), rows, instant, self._base_keys())
        self._record(instant)

    # ------------------------------------------------------------------ services
    @precondition(lambda self: self.shape.layout != "cow")
    @rule()
    def compact(self) -> None:
        instant = self.table.compact()
        if instant is not None:
            self.model.compact(None, False)
            self._record(instant)

    @precondition(lambda self: self.shape.layout == "cow" or (
        self.shape.layout == "mor" and all(len(c) <= 1 for c in self.model.rows.values())))
    @rule(data=st.data())
    def cluster(self, data: st.DataObject) -> None:
        orderable = [c for c in self.columns if c not in NESTED and c != "part"]
        instant = self.table.cluster(sort_columns=data.draw(st.sampled_from([None, *orderable]), label="sort"))
        if instant is not None:
            self._record(instant)

    @rule(data=st.data())
    def clean(self, data: st.DataObject) -> None:
        policy = data.draw(st.sampled_from(["KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS"]), label="policy")
        key = "commits" if policy == "KEEP_LATEST_COMMITS" else "fileversions"
        instant = self.table.clean(options={"hoodie.cleaner.policy": policy, f"hoodie.cleaner.{key}.retained": 1})
        if instant is not None:
            self.cleaned_from = "9" * 17  # older snapshots may be gone: time travel checks stop here

    @rule()
    def archive(self) -> None:
        self.table.archive(options={"hoodie.keep.min.commits": 1, "hoodie.keep.max.commits": 2})

    # ------------------------------------------------------------------ every reader agrees
    def _hudi_rs(self, as_of: str | None = None) -> pa.Table | None:
        """hudi-rs's read; None where a known hudi-rs limitation stops it (see
        :func:`hudi_rs_known_limitation`: pyhudi's table is right there)."""
        if archived_log_files(self.table):
            event("hudi-rs limitation: log files of archived instants")
            return None
        if self.model.filled_from_loser:
            event("hudi-rs limitation: a winning partial version is not filled from the losing one")
            return None
        try:
            return hudi_rs_table(self.path, as_of)
        except Exception as exc:  # (HudiCoreError is not importable from the package)
            if hudi_rs_known_limitation(exc, self.shape):
                event("hudi-rs limitation: partial Avro blocks with lists or maps")
                return None
            raise

    @invariant()
    def readers_agree(self) -> None:
        if self.table is None:
            return
        expected = self.model.expected_with_meta()
        data_columns = self.columns
        with_meta = [*META, *data_columns]
        assert rows_with(self.table.read(with_meta=True), with_meta) == project(expected, with_meta)
        if not self.shape.drop_partition_columns:  # hudi-rs 0.5 refuses such tables ("Only support when
            # `hoodie.datasource.write.drop.partition.columns` is disabled"): a hudi-rs limitation
            got = self._hudi_rs()
            if got is not None:
                assert rows_with(got, with_meta) == project(expected, with_meta)
        if self.shape.layout == "cow":
            scanned = latest_base_files_table(self.table)
            if scanned is None:
                assert expected == []
            else:  # (partition columns dropped: only in the folder names, so not in the files)
                stored = [c for c in with_meta if c in scanned.column_names]
                assert rows_with(scanned, stored) == project(expected, stored)

    def time_travel_everywhere(self) -> None:
        """hudi-rs's time travel to each completed write's completion time returns the model of
        that instant (while no clean ran: older slices may be gone after one)."""
        if self.shape.drop_partition_columns:  # (see readers_agree)
            return
        cleans = [i for i in self.table.timeline if i.action.value == "clean"]
        if self.cleaned_from or cleans or self.table.archived_timeline():  # (automatic cleans after 10 commits)
            return
        columns = [*META, *self.columns]
        for _instant, completion, rows in self.history:
            got = self._hudi_rs(as_of=completion)
            if got is not None:
                assert rows_with(got, columns) == project(rows, columns), completion


PROFILES = {
    "default": {"max_examples": 12, "stateful_step_count": 12, "derandomize": True,  # (the same sequences each run)
                "phases": [Phase.explicit, Phase.generate]},  # (no shrinking: a failing sequence takes minutes)
    "long": {"max_examples": 200, "stateful_step_count": 25},
    "explore": {"max_examples": 100, "stateful_step_count": 15,  # (finding divergences fast: no shrinking)
                "phases": [Phase.explicit, Phase.reuse, Phase.generate]},
}
_profile = PROFILES[os.environ.get("HYPOTHESIS_PROFILE", "default")]


def _machine_test(layout: str) -> Any:
    machine = type(f"DifferentialMachine_{layout}", (DifferentialMachine,), {"LAYOUT": layout})
    case = machine.TestCase
    case.settings = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
                             **_profile)
    return case


TestCopyOnWrite = _machine_test("cow")
TestMergeOnReadSimpleIndex = _machine_test("mor")
TestMergeOnReadBucketed = _machine_test("bucketed")

"""Helpers of tests/test_differential_hudi_rs.py: other readers of a pyhudi-written table.

A table without column families is a plain Apache Hudi table, so readers that know nothing of
pyhudi must return the rows pyhudi's own read returns: hudi-rs (the ``hudi`` package, Rust), and
for copy-on-write a plain Parquet scan of each file group's latest base file (Apache Hudi's
copy-on-write snapshot is exactly that; a merge-on-read table's read-optimized view likewise).

The reference model of tests/table_model.py is extended here with Hudi's soft-delete marker
column ``_hoodie_is_deleted``: a row whose winning version carries ``true`` is gone.
"""

from __future__ import annotations

import datetime
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

import hudi
import pyhudi
from table_model import DATA_COLUMNS, Family, Model, Record, Shape, partition_of, sort_rows

MARKER = "_hoodie_is_deleted"
META = ["_hoodie_commit_time", "_hoodie_record_key", "_hoodie_partition_path"]


# ------------------------------------------------------------------------------ the table and its model
def create_with_marker(path: str, shape: Shape) -> pyhudi.Table:
    """tests/table_model.py's ``create`` with the soft-delete marker column last (default options
    otherwise, except the small-file sizes that make inserts spread over file groups)."""
    key_type = pa.int64() if shape.int_keys else pa.string()
    fields = [pa.field("id", key_type, nullable=False)]
    if shape.partitioned:
        fields.append(pa.field("part", pa.string()))
    fields += [pa.field(n, t) for n, t in DATA_COLUMNS.items()]
    fields.append(pa.field(MARKER, pa.bool_()))
    options: dict[str, Any] = {"hoodie.datasource.write.hive_style_partitioning": shape.hive_style,
                               "hoodie.datasource.write.drop.partition.columns": shape.drop_partition_columns}
    if not shape.bucketed:
        options |= {"hoodie.parquet.small.file.limit": 100_000, "hoodie.parquet.max.file.size": shape.max_file_size,
                    "hoodie.copyonwrite.record.size.estimate": 1000}
    return pyhudi.create_table(
        path, pa.schema(fields), "id", partition_fields=["part"] if shape.partitioned else (),
        table_type="COPY_ON_WRITE" if shape.layout == "cow" else "MERGE_ON_READ",
        num_buckets=shape.num_buckets, ordering_field=shape.ordering, options=options,
    )


class MarkerModel(Model):
    """:class:`Model` of a one-family table whose last column is ``_hoodie_is_deleted``: after
    each write, a row copy whose record carries ``true`` is deleted (a marked version that loses
    the event-time comparison leaves the stored row as it was, so the mark never shows)."""

    def __init__(self, shape: Shape) -> None:
        super().__init__(shape, [Family("", (*DATA_COLUMNS, MARKER), shape.ordering)])
        self.filled_from_loser = False
        """Whether a log version that lost the event-time comparison filled columns the winning
        (partial) version lacks — Hudi's partial merge (reference §5, partial updates: each field
        from the newer record if its schema has it, else from the older), which hudi-rs 0.5 does
        not do: it leaves those columns null (tests/test_differential_hudi_rs_scenarios.py)."""

    @staticmethod
    def _commit_time_delete(family: Family, row: dict, present: set[str]) -> bool:
        """A row marked deleted without a value of the ordering column the write carries: a
        commit-time-ordering delete (reference §5, rule 3), which wins whatever the stored value."""
        return (family.ordering is not None and family.ordering in present and MARKER in present
                and row.get(MARKER) is True and row.get(family.ordering) is None)

    def winners(self, family: Family, present: set[str], batch: list[dict]) -> dict[Any, dict]:
        """The batch folded in arrival order: a commit-time-ordering delete wins over the rows of
        its key before it; the rows after it compete with it as usual (it has no ordering value)."""
        last = {row["id"]: i for i, row in enumerate(batch) if self._commit_time_delete(family, row, present)}
        return super().winners(family, present, [row for i, row in enumerate(batch) if i >= last.get(row["id"], -1)])

    def merged(self, family: Family, record: Any, row: dict, present: set[str], instant: str,
               to_base: bool = True) -> Any:
        if self._commit_time_delete(family, row, present):  # (it wins; write() then removes the row)
            return Record({c: row.get(c) for c in family.columns if c in present}, instant)
        return super().merged(family, record, row, present, instant, to_base)

    def merged_on_read(self, family: Family, record: Any, given: dict, instant: str) -> Any:
        log = record.log if record is not None else None
        out = super().merged_on_read(family, record, given, instant)
        if log is not None and out.log[3] == log[3] and set(given) - set(log[0]):  # (lost, and filled)
            self.filled_from_loser = True
        return out

    def write(self, operation: str, present: set[str], batch: list[dict], instant: str,
              base_keys: set | None = None) -> None:
        super().write(operation, present, batch, instant, base_keys)
        for key in list(self.rows):
            copies = [c for c in self.rows[key] if not (c[""] is not None and c[""].values.get(MARKER))]
            if copies:
                self.rows[key] = copies
            else:
                del self.rows[key]

    def expected_with_meta(self) -> list[dict]:
        """:meth:`expected` plus the meta columns the model knows: record key and partition path."""
        out = []
        for row in self.expected():
            part = partition_of(self.shape, row["id"])
            out.append({**row, "_hoodie_record_key": str(row["id"]),
                        "_hoodie_partition_path": self.shape.partition_path(part) if part else ""})
        return sort_rows(out)


MARKS = st.none() | st.just(False) | st.just(True)


def not_negative(value: Any) -> bool:
    """Whether an ordering value is at or after its type's zero (0, 1970-01-01, the epoch).

    hudi-rs 0.5 merges a stored record whose ordering value is null as if it were 0: an update
    with a negative value (``-1``, ``1969-12-31``) then loses to it, and the stored row stays.
    Apache Hudi's event-time payload (``DefaultHoodieRecordPayload``: a persisted null ordering
    value never wins) and pyhudi let the update win
    (tests/test_table_model.py::test_update_with_null_ordering_value_loses_to_stored_value_on_every_table_type).
    The machine orders by non-negative values only; the case itself is pinned by
    tests/test_differential_hudi_rs_scenarios.py::test_hudi_rs_reads_a_stored_null_ordering_value_as_zero."""
    if value is None:
        return True
    if isinstance(value, datetime.datetime):
        return value >= datetime.datetime(1970, 1, 1, tzinfo=value.tzinfo)
    if isinstance(value, datetime.date):
        return value >= datetime.date(1970, 1, 1)
    return value >= 0


# ------------------------------------------------------------------------------ the other readers
def hudi_rs_table(path: str, as_of: str | None = None) -> pa.Table:
    """hudi-rs's snapshot read (as of a completion time ``as_of``), meta columns included."""
    table = hudi.HudiTableBuilder.from_base_uri(path).build()
    options = hudi.HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    batches = table.read(options)
    schema = table.get_schema_with_meta_fields()
    return pa.Table.from_batches(batches, schema=schema) if batches else schema.empty_table()


def hudi_rs_known_limitation(error: Exception, shape: Shape) -> bool:
    """hudi-rs 0.5 failing where pyhudi's table is right (so that comparison is skipped):

    - two partial Avro log blocks of one key merged with each other, the columns they carry
      including a list or map: hudi-rs decodes the blocks' lists and maps with other child
      field names ("item"-less list, "entries") than its table schema ("element", "key_value")
      and refuses the merge ("partial-update column 'ls' has type List(...) but the table schema
      expects List(...)"). Apache Hudi's partial Avro blocks are the same Avro (an Avro array or
      map has no child names): hudi-rs's Avro decoding and schema conversion disagree."""
    message = str(error)
    return (shape.avro_logs and message.startswith("partial-update column '")
            and message.split("'")[1] in NESTED_COLUMNS)


NESTED_COLUMNS = {"ls", "mp"}


def archived_log_files(table: pyhudi.Table) -> bool:
    """Whether a latest file slice holds a log file written by an instant no longer in the active
    timeline (archived). hudi-rs 0.5 reads only the active timeline and skips such log files (their
    rows vanish from its reads); Apache Hudi's file-system view counts files of instants before
    the active timeline's start as committed and takes their completion times from the archive
    (so does pyhudi): a hudi-rs limitation."""
    active = {i.requested_time for i in table.timeline}
    first = min(active, default="")
    return any(log.instant not in active and log.instant < first
               for group in table.file_groups() for log in group.latest_slice(None, False).log_files)


def latest_base_files_table(table: pyhudi.Table) -> pa.Table | None:
    """Every row of each visible file group's newest base file, read as plain Parquet (None: no
    base file at all). What Apache Hudi's copy-on-write snapshot (and read-optimized view) is."""
    parts = []
    for group in table.file_groups():
        if group.base_files:
            newest = max(group.base_files, key=lambda b: b.instant)
            parts.append(pq.read_table(table.storage.full_path(newest.relpath)))
    return pa.concat_tables(parts, promote_options="permissive") if parts else None


def rows_with(table: pa.Table, columns: list[str]) -> list[dict]:
    """The rows of ``table`` restricted to ``columns`` (sorted like the model's)."""
    return sort_rows(table.select(columns).to_pylist())

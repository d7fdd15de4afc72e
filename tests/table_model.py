"""The reference model of tests/test_table_model.py: table shapes, expected rows, failure injection.

The model (:class:`Model`) is a dict key -> copies of the row; a copy is a dict family -> the
family's live record (its own columns, and the instant that wrote the winning version) or None.
Bucketed tables hold at most one copy of a key; tables without a bucket index keep a second copy
when ``insert`` / ``bulk_insert`` write a key that exists (Hudi's insert never looks keys up), and an
upsert or delete reaches every copy. The rules modelled (DESIGN §4):

- a write carries any subset of the columns; each family with some of its columns present gets
  one record per key; a family with only some columns present is a partial write: the absent
  columns keep their values (null for a new record);
- duplicates of a key in one batch: per family, the highest ordering value wins (ties: the later
  row), or the later row when the family's ordering column is not in the batch;
- merging into a live record: a family with an ordering column merges by event time when the
  write carries it (the write loses if its value is lower than the stored one, or null while the
  stored one is not; ties and a stored null: the write wins); a write without the ordering
  column wins (commit time);
- merge-on-read keeps Hudi's order: the versions a family's log files hold merge with each other
  first (a losing partial version still fills the columns the winner lacks), then the result
  merges with the base file's record (it wins whole if it loses the event-time comparison);
  copy-on-write merges every write into the stored record (the merge handle);
- a delete removes every family's record; a later write starts a fresh record;
- a row exists while any family has a live record; its ``_hoodie_commit_time`` is the newest of
  its families' winning writes;
- incremental ``(start, end]``: the rows live at ``end`` whose version in some family was written
  by an instant completed in the window, in their state at ``end``.
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import threading
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

import pyhudi
from pyhudi.logformat import AvroDataBlock
from pyhudi.write import handle
from pyhudi.write.client import WriteClient

# ------------------------------------------------------------------------------ table shapes
POINT = pa.struct([("x", pa.float64()), ("s", pa.string())])
DATA_COLUMNS = {
    "a": pa.int64(), "b": pa.float64(), "ts": pa.int64(), "ls": pa.list_(pa.int64()), "dec": pa.decimal128(10, 2),
    "c": pa.string(), "d": pa.int64(), "e": pa.string(), "st": POINT, "ok": pa.bool_(), "bin": pa.binary(),
    "f": pa.float64(), "g": pa.string(), "mp": pa.map_(pa.string(), pa.int64()), "tm": pa.timestamp("us", tz="UTC"),
    "day": pa.date32(),
}
FAMILIES = {"fone": "a,b,ts,ls,dec;ts", "ftwo": "c,d,e,st,ok,bin", "fthree": "f,g,mp,tm,day;g"}  # int, no, string ordering
ADDED_FAMILY = ("ffour", "h,i,hs;h", {"h": pa.int64(), "i": pa.float64(), "hs": pa.list_(POINT)})  # ALTER TABLE adds it
TYPES = {**DATA_COLUMNS, **ADDED_FAMILY[2]}
NESTED = {"ls", "st", "mp", "hs"}  # no order or equality filters on these
INT_KEYS = [0, 1, 2, 7, 10, 123]
STR_KEYS = ["k0", "k1", "k10", "k2", "A", "zz"]

UTC = datetime.timezone.utc
_POINTS = st.fixed_dictionaries({"x": st.none() | st.sampled_from([0.5, -1.0]), "s": st.none() | st.sampled_from(["", "u"])})
NON_NULL = {
    "a": st.integers(-3, 3),
    "b": st.sampled_from([0.5, -2.25, 1e300, 3.0]),
    "ts": st.integers(0, 3),
    "ls": st.lists(st.none() | st.integers(-2, 2), max_size=3),  # empty lists, null elements
    "dec": st.sampled_from(["0.00", "-1.50", "0.01", "12345678.99", "-99999999.99"]).map(decimal.Decimal),
    "c": st.sampled_from(["x", "y", "", "xyz"]),
    "d": st.integers(-2, 2),
    "e": st.sampled_from(["p", "q"]),
    "st": _POINTS,  # null children
    "ok": st.booleans(),
    "bin": st.sampled_from([b"", b"\x00", b"ab", b"\xff\x00"]),
    "f": st.sampled_from([1.5, -0.25, 2.0]),
    "g": st.sampled_from(["g0", "g1", "g2", "g3"]),
    "mp": st.dictionaries(st.sampled_from(["k", "", "z"]), st.none() | st.integers(-1, 1), max_size=3)
          .map(lambda d: list(d.items())),  # empty maps, null values
    "tm": st.sampled_from([datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
                           datetime.datetime(1970, 1, 1, tzinfo=UTC),
                           datetime.datetime(2024, 2, 29, 12, 34, 56, 789012, tzinfo=UTC)]),
    "day": st.sampled_from([datetime.date(1, 1, 1), datetime.date(1969, 12, 31), datetime.date(2024, 2, 29)]),
    "h": st.integers(0, 2),
    "i": st.sampled_from([0.0, 7.5]),
    "hs": st.lists(st.none() | _POINTS, max_size=2),
}
NON_NULL = {c: s.map(lambda v, t=TYPES[c]: pa.scalar(v, t).as_py()) for c, s in NON_NULL.items()}  # Arrow's spelling
OTHER_TYPED = {  # filter values of another type that compare with the column (never truncated to its type)
    "a": st.sampled_from([-0.5, 1.5]),
    "d": st.sampled_from([0.5, -1.5]),
    "dec": st.sampled_from([1.5, -1.5, 0]),
    "day": st.sampled_from([datetime.datetime(2024, 2, 29), datetime.datetime(2024, 2, 29, 12),
                            datetime.datetime(1969, 12, 31, 23, 59)]),
    "tm": st.sampled_from([datetime.date(1970, 1, 1), datetime.date(2024, 2, 29)]),
}
NULLABLE = set(NON_NULL) - {"a", "c"}  # a, c are null only when unwritten
VALUES = {c: (st.none() | s) if c in NULLABLE else s for c, s in NON_NULL.items()}


@dataclass(frozen=True)
class Shape:
    """One table configuration."""

    layout: str  # "families" | "bucketed" | "cow" | "mor" (the last two: no bucket index)
    num_buckets: int | None
    partitioned: bool
    int_keys: bool
    ordering: str | None  # table ordering field (tables without families)
    max_file_size: int | None = None  # tables without a bucket index: small-file handling
    hive_style: bool = False  # partition folders part=p0
    drop_partition_columns: bool = False  # partition values only in the folder names
    avro_logs: bool = False  # log data blocks as Avro records (Apache Hudi's default), not Parquet

    def partition_path(self, value: str) -> str:
        return f"part={value}" if self.hive_style else value

    @property
    def bucketed(self) -> bool:
        return self.num_buckets is not None


ORDERINGS = [None, "ts", "tm", "dec", "day"]  # tables without families: none, int64, timestamp, decimal, date


def shapes(layout: str) -> st.SearchStrategy[Shape]:
    common = {"partitioned": st.booleans(), "int_keys": st.booleans(), "hive_style": st.booleans(),
              "drop_partition_columns": st.booleans(), "avro_logs": st.booleans() if layout != "cow" else st.just(False)}
    if layout == "families":
        return st.builds(Shape, layout=st.just(layout), num_buckets=st.integers(1, 4), ordering=st.none(), **common)
    if layout == "bucketed":
        return st.builds(Shape, layout=st.just(layout), num_buckets=st.integers(1, 4),
                         ordering=st.sampled_from(ORDERINGS), **common)
    return st.builds(Shape, layout=st.just(layout), num_buckets=st.none(), ordering=st.sampled_from(ORDERINGS),
                     max_file_size=st.sampled_from([150, 8000]), **common)  # (copy-on-write: no logs)


def create(path: str, shape: Shape) -> pyhudi.Table:
    key_type = pa.int64() if shape.int_keys else pa.string()
    fields = [pa.field("id", key_type, nullable=False)]
    if shape.partitioned:
        fields.append(pa.field("part", pa.string()))
    fields += [pa.field(n, t) for n, t in DATA_COLUMNS.items()]
    options: dict[str, Any] = {"hoodie.datasource.write.hive_style_partitioning": shape.hive_style,
                               "hoodie.datasource.write.drop.partition.columns": shape.drop_partition_columns}
    if not shape.bucketed:  # tiny files: inserts fill small files, or spread over new file groups
        options |= {"hoodie.parquet.small.file.limit": 100_000, "hoodie.parquet.max.file.size": shape.max_file_size,
                   "hoodie.copyonwrite.record.size.estimate": 1000}
    return pyhudi.create_table(
        path, pa.schema(fields), "id", partition_fields=["part"] if shape.partitioned else (),
        table_type="COPY_ON_WRITE" if shape.layout == "cow" else "MERGE_ON_READ",
        num_buckets=shape.num_buckets, ordering_field=shape.ordering,
        column_families=FAMILIES if shape.layout == "families" else None, options=options,
    )


# ------------------------------------------------------------------------------ the model
@dataclass(frozen=True)
class Family:
    name: str
    columns: tuple[str, ...]  # own columns (not key, not partition)
    ordering: str | None  # merges by event time on it (None: commit time)


def model_families(shape: Shape) -> list[Family]:
    if shape.layout == "families":
        out = []
        for name, spec in FAMILIES.items():
            cols, _, ordering = spec.partition(";")
            out.append(Family(name, tuple(cols.split(",")), ordering or None))
        return out
    return [Family("", tuple(DATA_COLUMNS), shape.ordering)]


@dataclass
class Record:
    """A family's live record of one row copy: its columns and the instant of the winning write.

    Merge-on-read also keeps the record of the base file (``base``: values, ordering value) and
    the merged log versions (``log``: the columns they carry, the highest ordering value, whether
    one lacked the ordering column, the instant of the winner); ``values`` is their merge."""

    values: dict[str, Any]
    instant: str
    base: tuple | None = None
    log: tuple | None = None
    after: "Record | None" = None  # what it becomes once a pending compaction completes


Copy = dict  # family name -> Record | None


def partition_of(shape: Shape, key: Any) -> str | None:
    if not shape.partitioned:
        return None
    pool = INT_KEYS if shape.int_keys else STR_KEYS
    return f"p{pool.index(key) % 2}"


@dataclass
class Model:
    shape: Shape
    families: list[Family]
    rows: dict[Any, list[Copy]] = field(default_factory=dict)

    def columns(self) -> list[str]:
        """The table's columns (schema order): key, partition, then every family's own columns."""
        return ["id", *(["part"] if self.shape.partitioned else []), *(c for f in self.families for c in f.columns)]

    def add_family(self, family: Family) -> None:
        self.families.append(family)
        for copies in self.rows.values():
            for copy_ in copies:
                copy_[family.name] = None

    def drop_family(self, name: str) -> None:
        """The family's columns leave the table; rows that only it kept alive are gone."""
        self.families = [f for f in self.families if f.name != name]
        for key in list(self.rows):
            for copy_ in self.rows[key]:
                del copy_[name]
            self.rows[key] = [c for c in self.rows[key] if any(r is not None for r in c.values())]
            if not self.rows[key]:
                del self.rows[key]

    # ------------------------------------------------------------------ writes
    def winners(self, family: Family, present: set[str], batch: list[dict]) -> dict[Any, dict]:
        """The batch row each key keeps for ``family``: highest ordering value, ties and no
        ordering column -> the later row."""
        best: dict[Any, tuple] = {}
        for position, row in enumerate(batch):
            # a null ordering value loses (to any value; among nulls the later row wins)
            rank = (*_order(row[family.ordering]), position) if family.ordering in present else (position,)
            if row["id"] not in best or rank >= best[row["id"]][0]:
                best[row["id"]] = (rank, row)
        return {key: row for key, (_, row) in best.items()}

    def merged(self, family: Family, record: Record | None, row: dict, present: set[str], instant: str,
               to_base: bool = True) -> Record:
        """``record`` after a write of ``row``: into a base file (``to_base``), or a log file of
        a merge-on-read table (Hudi's order, see the module docstring)."""
        given = {c: row[c] for c in family.columns if c in present}
        if self.shape.layout != "cow" and not to_base:
            return self.merged_on_read(family, record, given, instant)
        out = self.merged_into_base(family, record, given, present, row, instant)
        if self.shape.layout != "cow":  # (a merge-on-read base file: the record its log versions meet)
            out = Record(out.values, out.instant, base=(out.values, out.values.get(family.ordering or ""), out.instant))
        return out

    def merged_into_base(self, family: Family, record: Record | None, given: dict, present: set[str], row: dict,
                         instant: str) -> Record:
        if record is None:
            return Record({c: given.get(c) for c in family.columns}, instant)
        if family.ordering is not None and family.ordering in present:
            stored, incoming = record.values[family.ordering], row[family.ordering]
            if stored is not None and (incoming is None or incoming < stored):
                return record  # an older event (or one without a time): the stored version stays
        return Record({**record.values, **given}, instant)

    def merged_on_read(self, family: Family, record: Record | None, given: dict, instant: str) -> Record:
        ordered = family.ordering is not None and family.ordering in given
        value = given.get(family.ordering) if ordered else None
        base = record.base if record is not None else None
        log = record.log if record is not None else None
        if log is None:
            log = (dict(given), value if ordered else None, not ordered or family.ordering is None, instant)
        else:
            values, top, unordered, winner = log
            wins = family.ordering is None or not ordered or top is None or (value is not None and value >= top)
            if wins:
                top = top if not ordered or value is None else (value if top is None else max(top, value))
                log = ({**values, **given}, top, unordered or not ordered, instant)
            else:
                log = ({**given, **values}, top, unordered, winner)
        values, top, unordered, winner = log
        if base is None:
            return Record({c: values.get(c) for c in family.columns}, winner, base, log)
        stored = base[1]
        if family.ordering is None or unordered or stored is None or (top is not None and top >= stored):
            return Record({**base[0], **values}, winner, base, log)
        return Record(dict(base[0]), base[2], base, log)

    def write(self, operation: str, present: set[str], batch: list[dict], instant: str,
              base_keys: set | None = None) -> None:
        """``base_keys``: the (family, key) whose record this write put in a base file (all of
        them when None)."""
        touched = [f for f in self.families if any(c in present for c in f.columns)]
        winners = {f.name: self.winners(f, present, batch) for f in touched}
        keys = list(dict.fromkeys(r["id"] for r in batch))
        for key in keys:
            copies = self.rows.get(key, [])
            adds_copy = not self.shape.bucketed and operation in ("insert", "bulk_insert")
            if adds_copy or not copies:
                copies = [*copies, {f.name: None for f in self.families}]
                targets = copies[-1:]
            else:
                targets = copies
            for target in targets:
                for f in touched:
                    to_base = base_keys is None or (f.name, str(key)) in base_keys
                    record = target[f.name]
                    merged = self.merged(f, record, winners[f.name][key], present, instant, to_base)
                    if record is not None and record.after is not None:  # a pending compaction covers it:
                        # its log files land in the slice after the compaction's base
                        merged.after = self.merged(f, record.after, winners[f.name][key], present, instant, to_base)
                    target[f.name] = merged
            self.rows[key] = copies

    def delete(self, keys: list) -> None:
        for key in keys:
            self.rows.pop(key, None)

    def compact(self, families: set[str] | None, full: bool) -> None:
        """Schedule and run a compaction at once (see :meth:`schedule_compaction`)."""
        self.schedule_compaction(families, full)
        self.run_compaction()

    def run_compaction(self) -> None:
        """The pending compaction completes: covered records become what they were going to be."""
        for copies in self.rows.values():
            for copy_ in copies:
                for name, record in copy_.items():
                    if record is not None and record.after is not None:
                        copy_[name] = record.after

    def schedule_compaction(self, families: set[str] | None, full: bool) -> None:
        """A compaction plan covers each compacted family's record as reads see it now: once it
        completes, that is a base record (commit times kept), and writes made meanwhile are log
        versions on top of it (``after``). A full compaction writes every family of a row, so a
        family without a record gets one of nulls (the full-row base file holds the row)."""
        for copies in self.rows.values():
            for copy_ in copies:
                live = [r for r in copy_.values() if r is not None]
                if not live:
                    continue
                newest = max(r.instant for r in live)
                for f in self.families:
                    if not full and families is not None and f.name not in families:
                        continue
                    record = copy_[f.name]
                    if record is None and not full:
                        continue
                    values = dict(record.values) if record is not None else {c: None for c in f.columns}
                    instant = record.instant if record is not None else newest
                    after = Record(values, instant, base=(dict(values), values.get(f.ordering or ""), instant))
                    if record is None:
                        copy_[f.name] = Record(dict(values), instant, after=after)
                    else:
                        record.after = after

    # ------------------------------------------------------------------ reads
    def expected(self, window: set[str] | None = None) -> list[dict]:
        """Every row copy as a dict (schema columns + ``_hoodie_commit_time``), sorted; with
        ``window``, only copies with a family version written by one of those instants."""
        out = []
        for key, copies in self.rows.items():
            for copy_ in copies:
                live = [r for r in copy_.values() if r is not None]
                if window is not None and not any(r.instant in window for r in live):
                    continue
                row: dict[str, Any] = {"id": key}
                if self.shape.partitioned:
                    row["part"] = partition_of(self.shape, key)
                for f in self.families:
                    record = copy_[f.name]
                    row.update({c: (record.values[c] if record else None) for c in f.columns})
                row["_hoodie_commit_time"] = max(r.instant for r in live)
                out.append(row)
        return sort_rows(out)


def _order(value: Any) -> tuple:
    return (value is not None, value if value is not None else 0)


def _sortable(value: Any) -> tuple:
    """Nested values (lists, dicts, maps as lists of pairs) may hold nulls: sort them by spelling."""
    return _order(repr(value) if isinstance(value, (list, dict, tuple)) else value)


def sort_rows(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: [(k, *_sortable(v)) for k, v in sorted(r.items())])


def project(rows: list[dict], columns: list[str]) -> list[dict]:
    return sort_rows([{c: r[c] for c in columns} for r in rows])


def matches(value: Any, op: str, operand: Any) -> bool:
    """SQL semantics: a null satisfies only ``is null``; a date compares with a timestamp as its
    midnight, an integer or decimal with a float as numbers (never truncated)."""
    if op == "is null":
        return value is None
    if value is None:
        return False
    if op == "is not null":
        return True
    if op in ("in", "not in"):
        return any(a == b for a, b in (_comparable(value, o) for o in operand)) == (op == "in")
    value, operand = _comparable(value, operand)
    return {"=": value == operand, "!=": value != operand, "<": value < operand, ">=": value >= operand}[op]


def _comparable(value: Any, operand: Any) -> tuple[Any, Any]:
    def midnight(day: datetime.date, like: datetime.datetime) -> datetime.datetime:
        return datetime.datetime.combine(day, datetime.time(), tzinfo=like.tzinfo)

    if isinstance(value, datetime.datetime) and type(operand) is datetime.date:
        return value, midnight(operand, value)
    if type(value) is datetime.date and isinstance(operand, datetime.datetime):
        return midnight(value, operand), operand
    return value, operand


def rows_of(table: pa.Table) -> list[dict]:
    return sort_rows(table.to_pylist())


# ------------------------------------------------------------------------------ Avro log blocks
@contextlib.contextmanager
def avro_log_blocks(enabled: bool):
    """Writes append their log data blocks as Avro records, as Apache Hudi's writers do by
    default: reads then decode them through fastavro and the Avro -> Arrow conversion."""
    if not enabled:
        yield
        return
    original = handle.ParquetDataBlock
    handle.ParquetDataBlock = lambda table, header, *, table_name, **_: AvroDataBlock(table, header, table_name=table_name)
    try:
        yield
    finally:
        handle.ParquetDataBlock = original


# ------------------------------------------------------------------------------ failure injection
class InjectedFailure(OSError):
    """The storage failing under a write (after the file was written)."""


@contextlib.contextmanager
def failing_file_write(at: int, crash: bool):
    """The ``at``-th data file a write creates (base or log) fails once written. With ``crash``,
    the writer does not roll back either (as if its process died): the instant stays inflight
    with its files, for the next writer to roll back."""
    lock, calls = threading.Lock(), [0]

    def failing(original):
        def wrapper(*args, **kwargs):
            result = original(*args, **kwargs)
            with lock:
                calls[0] += 1
                fail = calls[0] == at
            if fail:
                raise InjectedFailure(f"injected failure after data file {at}")
            return result
        return wrapper

    patches = [(handle, "write_log_file"), (handle.FileGroupWriteTask, "_write_base")]
    if crash:
        patches.append((WriteClient, "_rollback_quietly"))
    saved = [(owner, name, getattr(owner, name)) for owner, name in patches]
    handle.write_log_file = failing(handle.write_log_file)
    handle.FileGroupWriteTask._write_base = failing(handle.FileGroupWriteTask._write_base)
    if crash:
        WriteClient._rollback_quietly = lambda self, instant: None
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)

"""The in-memory model the demo checks the table against.

It replays every committed batch — the backfill and each writer's commits — in completion-time
order (the order non-blocking concurrency control applies them in) with the rule pyhudi and
Hudi 1.x apply per family (:mod:`pyhudi.record_merge`):

- per family and key, the version with the greatest ordering value wins, ties to the later
  write (later commit, then later row of one batch) — late and out-of-order events lose;
- a plain delete wins whatever the ordering values and restarts the key: only versions written
  after the key's latest delete count;
- a row exists while any family has a live version; a family without one reads null.

Computed with Arrow group-bys over all versions at once (no per-record loop).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.demo.data import FAMILY_COLUMNS, FAMILY_ORDERING, KEY, SCHEMA, STREAMS


@dataclass(frozen=True)
class Commit:
    """One committed batch: which stream, its file (or the in-memory backfill), its kind."""

    completion_time: str
    stream: str
    kind: str  # "upsert" or "delete"
    data: pa.Table
    instant: str = ""


def load_commit(completion_time: str, stream: str, path: Path, instant: str = "") -> Commit:
    """The commit of one inbox batch, read back from the batch's file."""
    kind = "delete" if path.name.endswith(".zdelete.parquet") else "upsert"
    return Commit(completion_time, stream, kind, pq.read_table(path), instant)


def _families_of(commit: Commit) -> tuple[str, ...]:
    return tuple(FAMILY_COLUMNS) if commit.stream == "backfill" else STREAMS[commit.stream]


def expected_rows(commits: list[Commit]) -> pa.Table:
    """The rows a snapshot read must return after ``commits``, sorted by key, in table schema."""
    ordered = sorted(commits, key=lambda c: c.completion_time)
    deletes = [pa.table({KEY: c.data[KEY], "_seq": pa.array(np.full(c.data.num_rows, i, np.int64))})
               for i, c in enumerate(ordered) if c.kind == "delete"]
    last_delete = (pa.concat_tables(deletes).group_by(KEY).aggregate([("_seq", "max")])
                   .rename_columns([KEY, "_deleted_at"]) if deletes else None)
    winners = []
    for family, columns in FAMILY_COLUMNS.items():
        parts = []
        for i, commit in enumerate(ordered):
            if commit.kind != "upsert" or family not in _families_of(commit):
                continue
            part = commit.data.select([KEY, *columns])
            n = part.num_rows
            parts.append(part.append_column("_seq", pa.array(np.full(n, i, np.int64)))
                         .append_column("_row", pa.array(np.arange(n, dtype=np.int64))))
        if not parts:  # a family nobody wrote: no key has its values
            empty = pa.schema([SCHEMA.field(KEY), *(SCHEMA.field(c) for c in columns)]).empty_table()
            none = pa.array([], pa.int64())
            parts = [empty.append_column("_seq", none).append_column("_row", none)]
        winners.append(_family_winners(pa.concat_tables(parts), FAMILY_ORDERING[family], last_delete))
    keys = pc.unique(pa.concat_arrays([w[KEY].combine_chunks() for w in winners]))
    out = pa.table({KEY: keys})
    for w in winners:
        out = out.join(w, KEY, join_type="left outer")
    return out.select(SCHEMA.names).cast(SCHEMA).sort_by(KEY)


def _family_winners(versions: pa.Table, ordering: str, last_delete: pa.Table | None) -> pa.Table:
    """The winning version per key among those written after the key's latest delete."""
    if last_delete is not None:
        versions = versions.join(last_delete, KEY, join_type="left outer")
        after = pc.fill_null(pc.greater(versions["_seq"], versions["_deleted_at"]), True)
        versions = versions.filter(after).drop_columns(["_deleted_at"])
    ranked = versions.sort_by([(KEY, "ascending"), (ordering, "ascending"), ("_seq", "ascending"),
                               ("_row", "ascending")])
    keys = ranked[KEY].combine_chunks()
    n = len(keys)
    if n == 0:
        return ranked.drop_columns(["_seq", "_row"])
    last = np.ones(n, dtype=bool)
    last[:-1] = np.asarray(pc.not_equal(keys[:-1], keys[1:]))
    return ranked.filter(pa.array(last)).drop_columns(["_seq", "_row"])


def late_losers(commits: list[Commit]) -> dict[str, int]:
    """Per stream, how many of its upserted versions lost to another version (late, out of
    order, or overwritten by a newer event): the events its ordering column resolved."""
    final = expected_rows(commits)
    out: dict[str, int] = {}
    for commit in commits:
        if commit.kind != "upsert" or commit.stream == "backfill":
            continue
        family = _families_of(commit)[0]
        ordering = FAMILY_ORDERING[family]
        joined = commit.data.select([KEY, ordering]).join(final.select([KEY, ordering]), KEY,
                                                          right_suffix="_final")
        lost = pc.sum(pc.fill_null(pc.not_equal(joined[ordering], joined[ordering + "_final"]), True)).as_py() or 0
        out[commit.stream] = out.get(commit.stream, 0) + int(lost)
    return out


def differences(actual: pa.Table, expected: pa.Table) -> list[str]:
    """What differs between two row sets (sorted by key): empty when they are equal."""
    actual = actual.select(SCHEMA.names).cast(SCHEMA).sort_by(KEY)
    if actual.num_rows != expected.num_rows:
        missing = pc.is_in(expected[KEY], value_set=actual[KEY].combine_chunks())
        extra = pc.is_in(actual[KEY], value_set=expected[KEY].combine_chunks())
        return [f"{actual.num_rows} rows read, {expected.num_rows} expected "
                f"({pc.sum(pc.invert(missing)).as_py() or 0} missing, {pc.sum(pc.invert(extra)).as_py() or 0} extra)"]
    out = []
    for name in SCHEMA.names:
        if not actual[name].equals(expected[name]):
            same = pc.fill_null(pc.equal(actual[name], expected[name]), False)
            both_null = pc.and_(pc.is_null(actual[name]), pc.is_null(expected[name]))
            bad = pc.sum(pc.invert(pc.or_(same, both_null))).as_py() or 0
            out.append(f"column {name}: {bad} rows differ")
    return out

"""The demo's data: a ~200-column user table in four families and the streams that feed it.

The wide table (``users``) is keyed by ``user_id`` and split into the four families a feature
store has, each with its own ordering column (an event time or a version), so each stream's late
and out-of-order events are resolved by its own clock:

- ``profile``    (30 columns, ordered by ``profile_updated_at``): account attributes;
- ``clicks``     (40 columns, ordered by ``clicks_event_time``): web activity, the busiest stream;
- ``orders``     (30 columns, ordered by ``orders_event_time``): purchases;
- ``embeddings`` (99 columns, ordered by ``emb_version``): a model's 98-dimensional vector.

Every stream's micro-batches are written up front as Parquet files into an *inbox* folder per
stream (``inbox/<stream>/<seq>.<kind>.parquet``, kind ``upsert`` or ``delete``): the writer
processes ingest them as a stream would, and the model (:mod:`pyhudi.demo.model`) replays the very
same files. Batches are generated with NumPy, deterministically from a seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

KEY = "user_id"
TS = pa.timestamp("us", tz="UTC")
T0 = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z in microseconds
MINUTE = 60_000_000

FAMILY_ORDERING = {"profile": "profile_updated_at", "clicks": "clicks_event_time",
                   "orders": "orders_event_time", "embeddings": "emb_version"}
STREAMS = {"profile": ("profile", "embeddings"), "clicks": ("clicks",), "orders": ("orders",)}
"""Writer stream → the families it owns (the profile stream recomputes a user's embedding too,
and erases accounts: its delete batches remove the whole row)."""


def _fields() -> dict[str, list[pa.Field]]:
    profile = [pa.field("profile_updated_at", TS), pa.field("country", pa.string()),
               pa.field("language", pa.string()), pa.field("plan", pa.string()), pa.field("age", pa.int32()),
               pa.field("is_active", pa.bool_())]
    profile += [pa.field(f"attr_{i:02d}", pa.int64() if i % 2 else pa.float64()) for i in range(24)]
    clicks = [pa.field("clicks_event_time", TS), pa.field("clicks_total", pa.int64()),
              pa.field("last_page", pa.string()), pa.field("session_count", pa.int64())]
    clicks += [pa.field(f"clicks_cat_{i:02d}", pa.int32()) for i in range(36)]
    orders = [pa.field("orders_event_time", TS), pa.field("orders_total", pa.int64()),
              pa.field("spend", pa.float64()), pa.field("last_order_id", pa.string())]
    orders += [pa.field(f"orders_metric_{i:02d}", pa.float64()) for i in range(26)]
    embeddings = [pa.field("emb_version", pa.int64())] + [pa.field(f"emb_{i:02d}", pa.float64()) for i in range(98)]
    return {"profile": profile, "clicks": clicks, "orders": orders, "embeddings": embeddings}


FAMILY_FIELDS = _fields()
SCHEMA = pa.schema([pa.field(KEY, pa.string(), nullable=False)]
                   + [f for fields in FAMILY_FIELDS.values() for f in fields])
FAMILY_COLUMNS = {name: [f.name for f in fields] for name, fields in FAMILY_FIELDS.items()}
FAMILIES = {name: ",".join(cols) + ";" + FAMILY_ORDERING[name] for name, cols in FAMILY_COLUMNS.items()}
"""``column_families=`` of :func:`pyhudi.create_table`: ``"c1,c2,...;orderingColumn"``."""

EVENTS_SCHEMA = pa.schema([pa.field("event_id", pa.string(), nullable=False), pa.field("device_id", pa.int64()),
                           pa.field("event_time", TS), pa.field("kind", pa.string()),
                           pa.field("value", pa.float64())])


@dataclass(frozen=True)
class DemoSize:
    """How much the demo writes: the default run and the reduced run the test suite uses."""

    users: int
    clicks_batches: int
    clicks_rows: int
    orders_batches: int
    orders_rows: int
    profile_batches: int
    profile_rows: int
    deletes_per_batch: int
    event_batches: int
    event_rows: int
    devices: int

    @property
    def label(self) -> str:
        return "small" if self == SMALL else "full"


FULL = DemoSize(users=20_000, clicks_batches=24, clicks_rows=3_000, orders_batches=12, orders_rows=1_500,
                profile_batches=8, profile_rows=1_000, deletes_per_batch=60, event_batches=40, event_rows=500,
                devices=2_000)
SMALL = DemoSize(users=1_000, clicks_batches=6, clicks_rows=300, orders_batches=4, orders_rows=150,
                 profile_batches=3, profile_rows=100, deletes_per_batch=15, event_batches=12, event_rows=100,
                 devices=200)


def user_ids(indexes: np.ndarray) -> pa.Array:
    """``u0000042``-style keys for user numbers."""
    return pa.array(np.char.add("u", np.char.zfill(indexes.astype(str), 7)), pa.string())


def _column(field: pa.Field, n: int, rng: np.random.Generator) -> pa.Array:
    """Random values of a non-ordering column, typed as the schema says."""
    t = field.type
    if pa.types.is_float64(t):
        return pa.array(rng.normal(0, 1, n).round(6))
    if pa.types.is_integer(t):
        return pa.array(rng.integers(0, 1_000, n), t)
    if pa.types.is_boolean(t):
        return pa.array(rng.random(n) < 0.8)
    choices = {"country": ["FR", "US", "DE", "BR", "JP", "IN", "NG", "CA"], "language": ["fr", "en", "de", "pt", "ja"],
               "plan": ["free", "plus", "pro"], "last_page": ["/", "/search", "/cart", "/item", "/help"]}
    if field.name in choices:
        values = np.asarray(choices[field.name])
        return pa.array(values[rng.integers(0, len(values), n)])
    return pa.array(np.char.add("o-", rng.integers(0, 10**9, n).astype(str)))


def family_batch(families: tuple[str, ...], users: np.ndarray, clock: np.ndarray, rng: np.random.Generator) -> pa.Table:
    """Rows of ``families`` for user numbers ``users``, ``clock`` (microseconds) as the ordering
    value of every family (versions for ``emb_version``)."""
    columns: dict[str, pa.Array] = {KEY: user_ids(users)}
    for family in families:
        for field in FAMILY_FIELDS[family]:
            if field.name == FAMILY_ORDERING[family]:
                columns[field.name] = pa.array(clock, pa.int64()).cast(field.type)
            else:
                columns[field.name] = _column(field, len(users), rng)
    return pa.table(columns)


def backfill(size: DemoSize, seed: int = 7) -> pa.Table:
    """Every user's complete row, one day before the streams start (the initial load)."""
    rng = np.random.default_rng(seed)
    users = np.arange(size.users)
    clock = np.full(size.users, T0 - 24 * 60 * MINUTE, dtype=np.int64)
    table = family_batch(tuple(FAMILY_FIELDS), users, clock, rng)
    return table.set_column(table.schema.get_field_index("emb_version"), "emb_version",
                            pa.array(np.ones(size.users, dtype=np.int64)))


def _stream_clock(batch: int, n: int, rng: np.random.Generator, late_share: float) -> tuple[np.ndarray, int]:
    """Event times of one micro-batch: most within its own minute, ``late_share`` of them from
    up to five minutes earlier (late events). Returns the times and how many are late."""
    clock = T0 + batch * MINUTE + rng.integers(0, MINUTE, n)
    late = rng.random(n) < late_share
    clock[late] -= rng.integers(1, 6, int(late.sum())) * MINUTE
    return clock, int(late.sum())


def write_inbox(root: Path, size: DemoSize, seed: int = 11) -> dict[str, dict[str, int]]:
    """Write every stream's micro-batches under ``root/<stream>/``; returns per stream what was
    generated (batches, rows, late events, duplicate keys within a batch, deletes)."""
    rng = np.random.default_rng(seed)
    plan = {"clicks": (size.clicks_batches, size.clicks_rows), "orders": (size.orders_batches, size.orders_rows),
            "profile": (size.profile_batches, size.profile_rows)}
    summary: dict[str, dict[str, int]] = {}
    for stream, (batches, rows) in plan.items():
        folder = root / stream
        folder.mkdir(parents=True, exist_ok=True)
        stats = {"batches": 0, "rows": 0, "late": 0, "duplicates": 0, "deletes": 0}
        for b in range(batches):
            users = rng.integers(0, size.users, rows)  # with replacement: out-of-order duplicates
            clock, late = _stream_clock(b, rows, rng, late_share=0.1)
            if stream == "profile":  # embeddings are versioned: a new version per recomputation
                batch = family_batch(STREAMS[stream], users, clock, rng)
                version = pa.array(2 + b * rows + np.arange(rows), pa.int64())
                batch = batch.set_column(batch.schema.get_field_index("emb_version"), "emb_version", version)
            else:
                batch = family_batch(STREAMS[stream], users, clock, rng)
            pq.write_table(batch, folder / f"{b:04d}.upsert.parquet")
            stats["batches"] += 1
            stats["rows"] += rows
            stats["late"] += late
            stats["duplicates"] += rows - len(np.unique(users))
            if stream == "profile" and b % 2 == 1:  # account erasures
                gone = rng.choice(size.users, size.deletes_per_batch, replace=False)
                pq.write_table(pa.table({KEY: user_ids(np.sort(gone))}), folder / f"{b:04d}.zdelete.parquet")
                stats["batches"] += 1
                stats["deletes"] += size.deletes_per_batch
        summary[stream] = stats
    return summary


def inbox_batches(folder: Path) -> list[Path]:
    """A stream's batch files in the order the stream delivers them."""
    return sorted(folder.glob("*.parquet"))


def event_batches(size: DemoSize, seed: int = 23) -> list[pa.Table]:
    """The events table's small appends: random devices, so every file holds most device ids."""
    rng = np.random.default_rng(seed)
    out = []
    for b in range(size.event_batches):
        n = size.event_rows
        ids = np.char.add(f"e{b:04d}-", np.arange(n).astype(str))
        out.append(pa.table({
            "event_id": pa.array(ids), "device_id": pa.array(rng.integers(0, size.devices, n)),
            "event_time": pa.array(T0 + b * MINUTE + rng.integers(0, MINUTE, n), pa.int64()).cast(TS),
            "kind": pa.array(np.asarray(["view", "tap", "buy"])[rng.integers(0, 3, n)]),
            "value": pa.array(rng.random(n).round(4))}, schema=EVENTS_SCHEMA))
    return out

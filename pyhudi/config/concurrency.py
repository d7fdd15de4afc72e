"""How concurrent writers share a table: the concurrency mode, the failed-writes policy, heartbeats.

Hudi 1.x has three write concurrency modes (``hoodie.write.concurrency.mode``):

* ``SINGLE_WRITER`` — one writer at a time; the next writer rolls back any pending write (the
  EAGER failed-writes policy). Hudi's default.
* ``OPTIMISTIC_CONCURRENCY_CONTROL`` (OCC) — several writers; at commit, under the lock, a write
  that touched a file group (bucket, on bucketed tables) that another commit changed while it ran
  fails and is rolled back.
* ``NON_BLOCKING_CONCURRENCY_CONTROL`` (NBCC, merge-on-read + bucket index only) — several
  writers append log files to the same file groups and never conflict; readers and compaction
  reconcile versions by completion time / ordering value. Only a write that creates base files
  (bulk insert into an empty bucket) is checked like OCC.

Both multi-writer modes need the LAZY failed-writes policy (RFC-66 "lazy cleaning"): a pending
instant may belong to a live writer, so only instants whose heartbeat expired are rolled back.

pyhudi's defaults (DESIGN §4, "Concurrency defaults"): merge-on-read bucketed tables — with or
without column families — default to NBCC + LAZY, because RFC-80 exists so that several
pipelines write one table at once; every other layout keeps Hudi's SINGLE_WRITER + EAGER. Under
every policy each writer keeps a heartbeat and **no writer rolls back an instant whose heartbeat
is fresh**: on a single-writer table a second concurrent writer gets a clear error instead of
deleting a live write.
"""

from __future__ import annotations

from typing import Mapping

from pyhudi.config.keys import ConfigKey
from pyhudi.errors import ConfigError
from pyhudi.value import Value

SINGLE_WRITER = "SINGLE_WRITER"
OCC = "OPTIMISTIC_CONCURRENCY_CONTROL"
NBCC = "NON_BLOCKING_CONCURRENCY_CONTROL"
MULTI_WRITER_MODES = (OCC, NBCC)

WRITE_CONCURRENCY_MODE = ConfigKey(
    "hoodie.write.concurrency.mode", str, None,
    "SINGLE_WRITER, OPTIMISTIC_CONCURRENCY_CONTROL or NON_BLOCKING_CONCURRENCY_CONTROL. Unset: "
    "NON_BLOCKING_CONCURRENCY_CONTROL on merge-on-read bucketed tables, SINGLE_WRITER otherwise.",
    choices=(SINGLE_WRITER, OCC, NBCC),
)
FAILED_WRITES_POLICY = ConfigKey(
    "hoodie.clean.failed.writes.policy", str, None,
    "EAGER: the next writer rolls back pending writes (whose heartbeat is not fresh); LAZY: only writes "
    "whose heartbeat expired; NEVER: none. Unset: LAZY under a multi-writer concurrency mode, else EAGER.",
    aliases=("hoodie.cleaner.policy.failed.writes",),
    choices=("EAGER", "LAZY", "NEVER"),
)
HEARTBEAT_INTERVAL_MS = ConfigKey(
    "hoodie.client.heartbeat.interval_in_ms", int, 60_000, "How often a live writer touches its heartbeat."
)
HEARTBEAT_TOLERABLE_MISSES = ConfigKey(
    "hoodie.client.heartbeat.tolerable.misses", int, 2, "Missed heartbeats before a writer counts as failed."
)


class ConcurrencyPolicy(Value):
    """The effective concurrency settings of one writer on one table."""

    mode: str
    failed_writes: str
    heartbeat_interval_ms: int
    heartbeat_misses: int

    def __init__(self, mode: str, failed_writes: str, heartbeat_interval_ms: int, heartbeat_misses: int) -> None:
        self._set(mode=mode, failed_writes=failed_writes, heartbeat_interval_ms=heartbeat_interval_ms,
                  heartbeat_misses=heartbeat_misses)

    @property
    def multi_writer(self) -> bool:
        return self.mode in MULTI_WRITER_MODES

    @property
    def heartbeat_timeout_ms(self) -> int:
        """How long a heartbeat may go untouched before its writer counts as failed."""
        return self.heartbeat_interval_ms * self.heartbeat_misses


def default_concurrency_mode(table_type: str, bucketed: bool) -> str:
    """NBCC where Hudi allows it (merge-on-read + simple bucket index), else SINGLE_WRITER."""
    return NBCC if table_type == "MERGE_ON_READ" and bucketed else SINGLE_WRITER


def resolve_concurrency(options: Mapping[str, str], table_type: str, bucketed: bool) -> ConcurrencyPolicy:
    """The policy ``options`` (table properties + write options) give a table of this layout.

    Raises :class:`ConfigError` for combinations Hudi refuses: NBCC off merge-on-read bucketed
    tables, and a multi-writer mode with the EAGER policy (it would roll back live writers).
    """
    mode = WRITE_CONCURRENCY_MODE.get(options) or default_concurrency_mode(table_type, bucketed)
    if mode == NBCC and not (table_type == "MERGE_ON_READ" and bucketed):
        raise ConfigError(
            f"{WRITE_CONCURRENCY_MODE.key}={NBCC} needs a MERGE_ON_READ table with a bucket index (Hudi's rule); "
            f"use {OCC} for this {table_type} table{'' if bucketed else ' without buckets'}"
        )
    policy = FAILED_WRITES_POLICY.get(options) or ("LAZY" if mode in MULTI_WRITER_MODES else "EAGER")
    if mode in MULTI_WRITER_MODES and policy == "EAGER":
        raise ConfigError(
            f"{FAILED_WRITES_POLICY.key}=EAGER cannot go with {WRITE_CONCURRENCY_MODE.key}={mode}: eager "
            "rollback would delete other writers' live instants; use LAZY (the default for several writers)"
        )
    interval = HEARTBEAT_INTERVAL_MS.get(options)
    misses = HEARTBEAT_TOLERABLE_MISSES.get(options)
    if interval <= 0 or misses <= 0:
        raise ConfigError(f"{HEARTBEAT_INTERVAL_MS.key} and {HEARTBEAT_TOLERABLE_MISSES.key} must be positive, "
                          f"got {interval} and {misses}")
    return ConcurrencyPolicy(mode, policy, interval, misses)


def default_concurrency_properties(table_type: str, bucketed: bool) -> dict[str, str]:
    """What a new table records in ``hoodie.properties`` when the user chose nothing: the
    multi-writer defaults of merge-on-read bucketed tables, so every writer (and a reader of the
    file) sees the policy the table is written under."""
    mode = default_concurrency_mode(table_type, bucketed)
    if mode == SINGLE_WRITER:
        return {}
    return {WRITE_CONCURRENCY_MODE.key: mode, FAILED_WRITES_POLICY.key: "LAZY"}

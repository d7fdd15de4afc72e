"""Where a commit's time goes: exclusive wall and CPU time per part of an upsert (issue 15).

:class:`Split` wraps the functions each part of a write runs (the data work — preparing rows and
writing the data files — the timeline listings, instant files, instant times, the lock, the
heartbeat, markers, the commit metadata, the file-system view, the conflict checks and the
services run or checked after the commit) and charges each call's time, minus the time of
wrapped calls inside it, to its part. What no wrapped function covers is ``other`` (the rest of
the write client and the table handle). A commit's *fixed cost* is everything but the data work
and the services that actually ran (an archival that archived, a clean that deleted): what a
write pays whatever its size.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

DATA = "data: prepare rows, write files"
SERVICES_RUN = "services that ran"
OTHER = "other"


def _targets() -> list[tuple[str, Any, str]]:
    """(part, owner, attribute) of every function a part of the write runs."""
    from pyhudi import table_services
    from pyhudi.engine.local import LocalEngine
    from pyhudi.evolution import SchemaHistory
    from pyhudi.fsview.view import FileSystemView
    from pyhudi.timeline import heartbeat, lock, metadata_base, timegen, timeline, transitions
    from pyhudi.write import client, commit, handle, txn

    return [
        (DATA, txn.WriteTxn, "prepare"),
        (DATA, LocalEngine, "run_tasks"),
        ("timeline listing", timeline.Timeline, "load"),
        ("instant files", transitions.InstantTransitions, "_create"),
        ("instant times", timegen.InstantTimeGenerator, "_next_locked"),
        ("lock", lock.FileLock, "acquire"),
        ("lock", lock.FileLock, "release"),
        ("heartbeat", heartbeat.Heartbeat, "start"),
        ("heartbeat", heartbeat.Heartbeat, "stop"),
        ("markers", handle, "create_marker"),
        ("markers", client, "list_markers"),
        ("markers", commit, "delete_markers"),
        ("failed-write check", client, "rollback_failed_writes"),
        ("schema and families", SchemaHistory, "schema_at"),
        ("schema and families", SchemaHistory, "declared_families_at"),
        ("commit metadata", client.WriteClient, "_commit_metadata"),
        ("commit metadata", metadata_base.AvroModel, "to_avro_bytes"),
        ("file-system view, index", FileSystemView, "file_groups"),
        ("index (bucket routing)", txn, "plan_bucketed"),
        ("conflict checks", client, "check_write_conflicts"),
        ("conflict checks", client, "check_no_concurrent_base_version"),
        ("conflict checks", client, "check_clustering_conflicts"),
        ("conflict checks", client, "check_schema_unchanged"),
        ("compaction check", table_services.TableServices, "_compact_inline"),
        ("clean check", table_services.TableServices, "_clean_after_commit"),
        ("archival check", table_services.TableServices, "_archive_inline"),
    ]


class Split:
    """Exclusive (wall, CPU) seconds per part while :meth:`installed`; ``ran`` marks services
    that did work (their check's time then goes to :data:`SERVICES_RUN`)."""

    def __init__(self) -> None:
        self.parts: dict[str, list[float]] = {}
        self.calls: dict[str, int] = {}  # "owner.attribute" -> calls (on the calling thread)
        self._stack: list[list[float]] = []  # per open call: [inner wall, inner cpu]
        self._thread = threading.get_ident()

    def reset(self) -> None:
        self.parts = {}
        self.calls: dict[str, int] = {}

    def charge(self, part: str, wall: float, cpu: float) -> None:
        into = self.parts.setdefault(part, [0.0, 0.0])
        into[0] += wall
        into[1] += cpu

    def _wrap(self, part: str, original: Callable[..., Any], label: str) -> Callable[..., Any]:
        split = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != split._thread:  # (the engine's workers: inside the data part)
                return original(*args, **kwargs)
            split.calls[label] = split.calls.get(label, 0) + 1
            split._stack.append([0.0, 0.0])
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                inner = split._stack.pop()
                split.charge(part, wall - inner[0], cpu - inner[1])
                if split._stack:
                    split._stack[-1][0] += wall
                    split._stack[-1][1] += cpu

        return timed

    @contextmanager
    def installed(self) -> Iterator[Split]:
        """Wrap every target for the block (and restore them after it)."""
        saved, self._thread = [], threading.get_ident()
        for part, owner, name in _targets():
            original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
            saved.append((owner, name, original))
            label = f"{getattr(owner, '__name__', owner)}.{name}".rpartition(".")
            setattr(owner, name, self._wrap(part, original, f"{label[0].rpartition('.')[2]}.{label[2]}"))
        try:
            yield self
        finally:
            for owner, name, original in reversed(saved):
                setattr(owner, name, original)


def timed_upsert(split: Split, table: Any, data: Any, options: dict[str, str]) -> dict[str, tuple[float, float]]:
    """One upsert under ``split``: (wall, CPU) seconds of ``total``, ``fixed`` and each part.

    A service check that found work (the archive or the timeline gained a clean / compaction
    instant) is charged to :data:`SERVICES_RUN`, not to the fixed cost."""
    split.reset()
    before = _service_state(table)
    wall, cpu = time.perf_counter(), time.process_time()
    table.upsert(data, options=options)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    after = _service_state(table)
    parts = {k: (v[0], v[1]) for k, v in split.parts.items()}
    for check, changed in (("archival check", after[0] != before[0]), ("clean check", after[1] != before[1]),
                           ("compaction check", after[2] != before[2])):
        if changed and check in parts:
            run = parts.pop(check)
            prior = parts.get(SERVICES_RUN, (0.0, 0.0))
            parts[SERVICES_RUN] = (prior[0] + run[0], prior[1] + run[1])
    covered = [sum(v[i] for v in parts.values()) for i in (0, 1)]
    parts[OTHER] = (wall - covered[0], cpu - covered[1])
    run = parts.get(SERVICES_RUN, (0.0, 0.0))
    data = parts.get(DATA, (0.0, 0.0))
    parts["total"] = (wall, cpu)
    parts["fixed"] = (wall - data[0] - run[0], cpu - data[1] - run[1])
    return parts


def _service_state(table: Any) -> tuple[int, int, int]:
    """How many history files, completed cleans and compactions the table has (a change = a run)."""
    import os

    from pyhudi.timeline.instant import Action

    timeline = table.active_timeline()
    history = os.path.join(table.path, table.config.timeline_dir, "history")
    archived = len(os.listdir(history)) if os.path.isdir(history) else 0
    cleans = sum(1 for i in timeline.completed() if i.action is Action.CLEAN)
    compactions = sum(1 for i in timeline.completed() if i.is_compaction)
    return archived, cleans, compactions

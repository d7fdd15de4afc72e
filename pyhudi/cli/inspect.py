"""``pyhudi timeline | show-instant | files (fsview)``: what is on a table's timeline and storage.

Read-only, like hudi-cli's ``timeline show``, ``commit showfiles`` and ``fsview all``: each
command lists what the table's own readers and services see (the file-system view of the
completed timeline), so an operator looks at the same file slices a compaction would plan.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pyhudi.cli.io import CliInputError
from pyhudi.cli.output import emit_json, human_bytes, open_table, table_view
from pyhudi.errors import StaleTimelineError, StorageError, TimelineError
from pyhudi.timeline.instant import Instant, State, is_valid_instant_time
from pyhudi.timeline.metadata_base import AvroModel

if TYPE_CHECKING:
    from rich.console import Console  # (rich loads when a command prints: pyhudi.cli.output)

_COMMIT_ACTIONS = frozenset({"commit", "deltacommit", "replacecommit"})


# ------------------------------------------------------------------------------ timeline
def _operation(timeline: Any, instant: Instant, archived: bool) -> str | None:
    """The write operation a completed commit recorded (``UPSERT``, ``COMPACT``, ...)."""
    if not instant.is_completed or str(instant.action) not in _COMMIT_ACTIONS:
        return None
    source = timeline.archived() if archived else timeline
    return source.read_commit_summary(instant)[0]


def timeline_rows(table: Any, archived: bool = False) -> list[dict[str, Any]]:
    """Every instant of the active timeline (and of the archive with ``archived``), by requested
    time: action, state, requested and completion times, operation, and where it lives."""
    timeline = table.snapshot_timeline()  # (read-only: survives archival meanwhile)
    entries = [(i, False) for i in timeline.instants]
    if archived:
        active = {i.requested_time for i in timeline.instants}
        entries += [(i, True) for i in timeline.archived().instants if i.requested_time not in active]
    entries.sort(key=lambda e: e[0])
    return [{"requested_time": i.requested_time, "action": str(i.action), "origin_action": str(i.origin_action),
             "state": str(i.state), "completion_time": i.completion_time,
             "operation": _operation(timeline, i, is_archived), "archived": is_archived}
            for i, is_archived in entries]


def print_timeline(console: Console, table: Any, archived: bool = False, rows: list[dict] | None = None) -> None:
    rows = timeline_rows(table, archived) if rows is None else rows
    which = "active and archived timeline" if archived else "timeline"
    columns = ["requested", "action", "state", "completed", "operation"] + (["archived"] if archived else [])
    view = table_view(f"{table.name}: {which} ({len(rows)} instants)", columns,
                      ([r["requested_time"], r["action"] if r["action"] == r["origin_action"]
                        else f"{r['action']} ({r['origin_action']})", r["state"], r["completion_time"],
                        r["operation"], *(["yes" if r["archived"] else ""] if archived else [])] for r in rows))
    console.print(view)


def cmd_timeline(args: argparse.Namespace, console: Console) -> int:
    table = open_table(args.path)
    rows = timeline_rows(table, args.archived)
    if args.json:
        emit_json(rows)
    else:
        print_timeline(console, table, args.archived, rows)
    return 0


# ------------------------------------------------------------------------------ show-instant
def _plain(decoded: Any) -> Any:
    """A decoded instant file as JSON-ready data (models as their Avro/JSON records)."""
    return decoded.to_dict() if isinstance(decoded, AvroModel) else decoded


def _state_contents(timeline: Any, instant: Instant) -> list[dict[str, Any]]:
    """Each listed state file of an active instant with its decoded content (plan, metadata)."""
    from pyhudi.timeline.metadata import decode_instant_metadata

    out = []
    for state, name in timeline.state_files(instant):
        action = instant.completed_action if state == State.COMPLETED else instant.origin_action
        data = timeline.storage.read(f"{timeline.timeline_dir}/{name}")
        out.append({"state": str(state), "file": name, "bytes": len(data),
                    "content": _plain(decode_instant_metadata(str(action), str(state), data))})
    return out


def _listed_contents(timeline: Any, instant: Instant) -> list[dict[str, Any]] | None:
    """:func:`_state_contents`, or None when a state file listed a moment ago is gone (another
    process archived, or rolled back, the instant meanwhile)."""
    try:
        return _state_contents(timeline, instant)
    except StorageError:
        if all(timeline.storage.exists(f"{timeline.timeline_dir}/{name}") for _, name in timeline.state_files(instant)):
            raise
        return None


def _archived_meanwhile(timeline: Any, instant: Instant) -> tuple[Any, Instant]:
    """The archived timeline, loaded now, and its record of an instant whose listed files another
    process removed meanwhile (:meth:`~pyhudi.timeline.timeline.Timeline.archive_now`)."""
    history = timeline.archive_now()
    moved = history.get(instant.requested_time)
    if moved is None:
        raise StaleTimelineError(f"instant {instant.requested_time} ({instant.action.value}) left the active timeline "
                                 "while it was read and is not in the archived timeline either (rolled back by "
                                 "another process); list the timeline again")
    return history, moved


def _archived_contents(history: Any, instant: Instant) -> list[dict[str, Any]]:
    """An archived instant's plan (if it had one) and completed metadata, from the LSM history."""
    out = []
    plan = history.read_plan(instant)
    if plan is not None:
        out.append({"state": "REQUESTED", "file": None, "bytes": len(history.plan_bytes(instant)),
                    "content": _plain(plan)})
    out.append({"state": "COMPLETED", "file": None, "bytes": len(history.metadata_bytes(instant)),
                "content": _plain(history.read_metadata(instant))})
    return out


def instant_details(table: Any, requested_time: str) -> dict[str, Any]:
    """One instant (active or archived) with every state file's decoded content."""
    if not is_valid_instant_time(requested_time):
        raise CliInputError(f"{requested_time!r} is not an instant time (yyyyMMddHHmmssSSS, as `pyhudi timeline` lists)")
    timeline = table.snapshot_timeline()  # (read-only: survives archival meanwhile)
    instant = timeline.get(requested_time)
    archived = instant is None
    if archived:
        instant = timeline.archived().get(requested_time)
    if instant is None:
        raise TimelineError(f"no instant {requested_time} on the timeline of table {table.name!r} "
                            "(neither active nor archived)")
    files = None if archived else _listed_contents(timeline, instant)
    if archived:
        files = _archived_contents(timeline.archived(), instant)
    elif files is None:  # another process archived it meanwhile
        history, instant = _archived_meanwhile(timeline, instant)
        archived, files = True, _archived_contents(history, instant)
    return {"requested_time": instant.requested_time, "action": str(instant.action),
            "origin_action": str(instant.origin_action), "state": str(instant.state),
            "completion_time": instant.completion_time, "archived": archived, "files": files}


def cmd_show_instant(args: argparse.Namespace, console: Console) -> int:
    details = instant_details(open_table(args.path), args.instant)
    if args.json:
        emit_json(details)
        return 0
    where = " (archived)" if details["archived"] else ""
    console.print(f"[bold]{details['origin_action']} {details['requested_time']}[/bold] {details['state']}{where}"
                  + (f", completed {details['completion_time']}" if details["completion_time"] else ""))
    for entry in details["files"]:
        name = entry["file"] or f"{entry['state'].lower()} content in the archive"
        console.rule(f"{entry['state']}: {name} ({entry['bytes']} bytes)")
        if entry["content"] is None:
            console.print("(empty)")
        else:
            from rich.json import JSON

            console.print(JSON.from_data(entry["content"], default=str))
    return 0


# ------------------------------------------------------------------------------ files / fsview
def file_view(table: Any, as_of: str | None = None) -> tuple[list[Any], list[str | None], bool]:
    """``(file groups, families to slice by, family table?)`` as the table's services see them."""
    from pyhudi.fsview.view import FileSystemView
    from pyhudi.keygen import partition_layout
    from pyhudi.read.plan import normalize_time

    timeline = table.snapshot_timeline()  # (read-only: survives archival meanwhile)
    context = table.table_context(timeline)
    declared = [name for name, fam in context.families.items() if not fam.is_default]
    as_of = normalize_time(as_of, "as_of", table.config.timezone)
    view = FileSystemView(table.storage, timeline, partition_layout(table.config).depth, as_of,
                          family_since=context.family_since)
    return view.file_groups(), (list(declared) if declared else [None]), bool(declared)


def _slice_row(file_slice: Any) -> dict[str, Any]:
    base = file_slice.base_file
    return {"base_file": base.name.name if base else None, "base_instant": file_slice.base_instant,
            "base_bytes": base.size if base else 0, "log_files": [lf.name.name for lf in file_slice.log_files],
            "log_bytes": sum(lf.size for lf in file_slice.log_files)}


def file_group_rows(table: Any, as_of: str | None = None) -> list[dict[str, Any]]:
    """Every visible file group: its files, bytes, and per family its slices (oldest first)."""
    groups, families, family_table = file_view(table, as_of)
    rows = []
    for group in groups:
        per_family = []
        for family in families:
            slices = group.all_slices(family, family_table)
            if slices:
                per_family.append({"family": family or "", "slices": [_slice_row(s) for s in slices]})
        rows.append({"partition": group.partition_path, "file_id": group.file_id,
                     "base_files": [b.name.name for b in group.base_files],
                     "log_files": [lf.name.name for lf in group.log_files],
                     "bytes": sum(b.size for b in group.base_files) + sum(lf.size for lf in group.log_files),
                     "families": per_family})
    return rows


def cmd_files(args: argparse.Namespace, console: Console) -> int:
    """The file-system view: file groups, their families' slices, sizes and log-file counts."""
    table = open_table(args.path)
    rows = file_group_rows(table, args.as_of)
    if args.json:
        emit_json(rows)
        return 0
    lines = []
    for g in rows:
        for fam in g["families"] or [{"family": "", "slices": []}]:
            latest = fam["slices"][-1] if fam["slices"] else None
            lines.append([g["partition"] or "(none)", g["file_id"], fam["family"] or "-", len(fam["slices"]),
                          (latest or {}).get("base_instant") or "(log only)", len(latest["log_files"]) if latest else 0,
                          human_bytes(latest["base_bytes"] + latest["log_bytes"]) if latest else ""])
    total = sum(g["bytes"] for g in rows)
    title = f"{table.name}: {len(rows)} file groups, {human_bytes(total)}"
    console.print(table_view(title, ("partition", "file id", "family", "slices", "latest base",
                                     "log files", "latest slice size"), lines, right=("slices", "log files")))
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    timeline = sub.add_parser("timeline", parents=[common],
                              help="the instants: action, state, requested/completion times, operation")
    timeline.add_argument("path")
    timeline.add_argument("--archived", action="store_true", help="include the archived (LSM history) instants")
    timeline.add_argument("--json", action="store_true")
    timeline.set_defaults(func=cmd_timeline, read_only=True)
    show = sub.add_parser("show-instant", parents=[common],
                          help="one instant's plan and metadata, decoded (active or archived)")
    show.add_argument("path")
    show.add_argument("instant", help="its requested time (yyyyMMddHHmmssSSS)")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_show_instant, read_only=True)
    files = sub.add_parser("files", aliases=["fsview"], parents=[common],
                           help="file groups, families, slices, sizes and log-file counts")
    files.add_argument("path")
    files.add_argument("--as-of", metavar="TIME", help="the view as of an instant or timestamp (time travel)")
    files.add_argument("--json", action="store_true")
    files.set_defaults(func=cmd_files, read_only=True)


__all__ = ["file_group_rows", "file_view", "instant_details", "print_timeline", "register",
           "timeline_rows"]

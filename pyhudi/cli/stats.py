"""``pyhudi stats PATH [filesizes|wa|logs]``: hudi-cli's ``stats filesizes`` and ``stats wa``,
plus log files per slice (what tells an operator that a family needs compacting).

- **filesizes** — per family and kind (base / log): count, total, min, 10th/50th/95th
  percentiles, average, max and standard deviation of the visible files' sizes.
- **wa** — per completed commit: records written, updated, inserted, deleted, bytes written,
  bytes per record written, and hudi-cli's write amplification factor (records written /
  records updated: how many records a commit rewrote per record it changed).
- **logs** — per family: how many log files the latest slices carry (min, average, max, and
  how many slices have each count).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

import numpy as np

from pyhudi.cli.inspect import file_view
from pyhudi.cli.output import emit_json, human_bytes, open_table, progress, table_view

if TYPE_CHECKING:
    from rich.console import Console  # (rich loads when a command prints: pyhudi.cli.output)

KINDS = ("filesizes", "wa", "logs")
_PERCENTILES = (10, 50, 95)


def _family_label(family: str | None) -> str:
    return family or ""


def _size_summary(sizes: list[int]) -> dict[str, Any]:
    values = np.asarray(sizes, dtype=np.int64)
    p10, p50, p95 = (float(v) for v in np.percentile(values, _PERCENTILES))
    return {"files": int(values.size), "total_bytes": int(values.sum()), "min": int(values.min()),
            "p10": p10, "p50": p50, "avg": float(values.mean()), "p95": p95, "max": int(values.max()),
            "stddev": float(values.std())}


def file_size_stats(table: Any) -> list[dict[str, Any]]:
    """Size statistics of the visible base and log files, per family (``""``: full-row files)."""
    groups, _, _ = file_view(table)
    sizes: dict[tuple[str, str], list[int]] = {}
    for group in groups:
        for base in group.base_files:
            sizes.setdefault((_family_label(base.name.family), "base"), []).append(base.size)
        for log in group.log_files:
            sizes.setdefault((_family_label(log.name.family), "log"), []).append(log.size)
    return [{"family": family, "kind": kind, **_size_summary(values)}
            for (family, kind), values in sorted(sizes.items())]


def _commit_row(instant: Any, metadata: Any) -> dict[str, Any]:
    stats = list(metadata.write_stats()) if metadata is not None else []

    def total(attr: str) -> int:
        return sum(getattr(s, attr) or 0 for s in stats)

    written, updated, written_bytes = total("num_writes"), total("num_update_writes"), total("total_write_bytes")
    return {"instant": instant.requested_time, "action": str(instant.action),
            "operation": getattr(metadata, "operation_type", None), "records_written": written,
            "records_updated": updated, "records_inserted": total("num_inserts"),
            "records_deleted": total("num_deletes"), "bytes_written": written_bytes,
            "bytes_per_record": round(written_bytes / written, 1) if written else None,
            "write_amplification": round(written / updated, 2) if updated else None}


def write_amplification(table: Any) -> dict[str, Any]:
    """Per completed commit of the active timeline, and the total (``commits``, ``total``)."""
    timeline = table.snapshot_timeline()  # (read-only: survives archival meanwhile)
    commits = timeline.commits_timeline()
    rows = []
    with progress("reading commit metadata", total=len(commits)) as advance:
        for instant in commits:
            rows.append(_commit_row(instant, timeline.read_metadata(instant)))
            advance()
    keys = ("records_written", "records_updated", "records_inserted", "records_deleted", "bytes_written")
    total = {k: sum(r[k] for r in rows) for k in keys}
    total["bytes_per_record"] = round(total["bytes_written"] / total["records_written"], 1) \
        if total["records_written"] else None
    total["write_amplification"] = round(total["records_written"] / total["records_updated"], 2) \
        if total["records_updated"] else None
    return {"commits": rows, "total": total}


def log_file_stats(table: Any) -> list[dict[str, Any]]:
    """Log files per latest slice, per family (the compaction backlog)."""
    groups, families, family_table = file_view(table)
    out = []
    for family in families:
        counts = [len(s.log_files) for s in (g.latest_slice(family, family_table) for g in groups) if not s.is_empty]
        if not counts:
            continue
        values = np.asarray(counts)
        histogram = {str(int(k)): int(v) for k, v in zip(*np.unique(values, return_counts=True))}
        out.append({"family": _family_label(family), "slices": int(values.size), "log_files": int(values.sum()),
                    "min": int(values.min()), "avg": round(float(values.mean()), 2), "max": int(values.max()),
                    "slices_by_log_files": histogram})
    return out


def _print_filesizes(console: Console, name: str, rows: list[dict[str, Any]]) -> None:
    columns = ("family", "kind", "files", "total", "min", "p10", "p50", "avg", "p95", "max", "stddev")
    lines = ([r["family"] or "(full row)", r["kind"], r["files"], *(human_bytes(r[k]) for k in (
        "total_bytes", "min", "p10", "p50", "avg", "p95", "max", "stddev"))] for r in rows)
    console.print(table_view(f"{name}: file sizes", columns, lines, right=columns[2:]))


def _print_wa(console: Console, name: str, report: dict[str, Any]) -> None:
    columns = ("instant", "action", "operation", "written", "updated", "inserted", "deleted", "bytes written",
               "bytes/record", "write amp.")
    keys = ("records_written", "records_updated", "records_inserted", "records_deleted")
    lines = [[r["instant"], r["action"], r["operation"], *(r[k] for k in keys), human_bytes(r["bytes_written"]),
              r["bytes_per_record"], r["write_amplification"]] for r in report["commits"]]
    t = report["total"]
    lines.append(["total", "", "", *(t[k] for k in keys), human_bytes(t["bytes_written"]), t["bytes_per_record"],
                  t["write_amplification"]])
    console.print(table_view(f"{name}: write amplification per commit", columns, lines, right=columns[3:]))


def _print_logs(console: Console, name: str, rows: list[dict[str, Any]]) -> None:
    columns = ("family", "slices", "log files", "min", "avg", "max", "slices by log-file count")
    lines = ([r["family"] or "-", r["slices"], r["log_files"], r["min"], r["avg"], r["max"],
              ", ".join(f"{k}: {v}" for k, v in r["slices_by_log_files"].items())] for r in rows)
    console.print(table_view(f"{name}: log files per latest slice", columns, lines, right=columns[1:6]))


def cmd_stats(args: argparse.Namespace, console: Console) -> int:
    table = open_table(args.path)
    kinds = KINDS if args.kind == "all" else (args.kind,)
    report: dict[str, Any] = {}
    if "filesizes" in kinds:
        report["filesizes"] = file_size_stats(table)
    if "wa" in kinds:
        report["wa"] = write_amplification(table)
    if "logs" in kinds:
        report["logs"] = log_file_stats(table)
    if args.json:
        emit_json(report)
        return 0
    printers = {"filesizes": _print_filesizes, "wa": _print_wa, "logs": _print_logs}
    for kind in kinds:
        printers[kind](console, table.name, report[kind])
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    stats = sub.add_parser("stats", parents=[common],
                           help="file sizes per family, write amplification per commit, log files per slice")
    stats.add_argument("path")
    stats.add_argument("kind", nargs="?", default="all", choices=("all", *KINDS),
                       help="which statistics (default: all)")
    stats.add_argument("--json", action="store_true")
    stats.set_defaults(func=cmd_stats, read_only=True)

"""``pyhudi draw PATH -o table.png``: a picture of a table's timeline and file-group layout.

Two parts, drawn with matplotlib (imported only here, on use):

- **timeline** — one lane per action (as planned: compaction, clustering, clean, ...); each
  instant a line from its requested time to its completion time with a dot at each end, coloured
  by state; archived instants are paler.
- **layout** — one panel per family: one row per file group, its visible files as blocks whose
  width is their size in bytes, base files dark and log files light, in instant order — so
  a family that needs compacting shows as long runs of light blocks.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pyhudi.cli.inspect import file_view, timeline_rows
from pyhudi.cli.io import CliInputError
from pyhudi.cli.output import emit_json, human_bytes, open_table, progress
from pyhudi.errors import HudiError
from pyhudi.timeline.instant import parse_instant_time

if TYPE_CHECKING:
    from rich.console import Console  # (rich loads when a command prints: pyhudi.cli.output)

STATE_COLOURS = {"COMPLETED": "#2b8a3e", "INFLIGHT": "#e8590c", "REQUESTED": "#868e96"}
BASE_COLOUR, LOG_COLOUR = "#1c7ed6", "#a5d8ff"
MAX_ROWS = 64
"""File groups drawn per family (the rest are counted in the panel's title)."""
DPI = 100


class DrawError(HudiError):
    """The picture cannot be drawn (matplotlib is missing, or the output cannot be written)."""


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise DrawError("pyhudi draw needs matplotlib: pip install matplotlib (a pyhudi dependency)") from exc
    matplotlib.use("Agg")  # files only: never a window
    import matplotlib.pyplot as plt

    return plt


def parse_size(text: str) -> tuple[int, int]:
    """``"1600x900"`` → ``(1600, 900)`` pixels."""
    width, found, height = text.lower().partition("x")
    if not found or not width.isdigit() or not height.isdigit() or not (100 <= int(width) <= 10000) \
            or not (100 <= int(height) <= 10000):
        raise CliInputError(f"--size {text!r}: expected WIDTHxHEIGHT in pixels, each 100..10000 (e.g. 1600x900)")
    return int(width), int(height)


def family_rows(table: Any) -> list[tuple[str, list[tuple[str, list[tuple[int, bool]]]]]]:
    """Per family: ``(file id, [(bytes, is_base), ...] in instant order)`` of every file group."""
    groups, families, family_table = file_view(table)
    labels = list(families) + ([None] if family_table else [])  # full-row base files of a full compaction
    out = []
    for family in labels:
        rows = []
        for group in groups:
            files = [(b.name.instant, b.size, True) for b in group.base_files if b.name.family == family]
            files += [(lf.completion_time, lf.size, False) for lf in group.log_files if lf.name.family == family]
            if files:
                rows.append((group.file_id, [(size, is_base) for _, size, is_base in sorted(files)]))
        if rows:
            out.append(((family or "full row") if family_table else "file groups", rows))
    return out


def _moment(value: str | None, timezone: str) -> datetime | None:
    return parse_instant_time(value[:17], timezone) if value else None


def draw_timeline(ax: Any, rows: list[dict[str, Any]], timezone: str) -> None:
    lanes = sorted({r["origin_action"] for r in rows})
    for row in rows:
        y = lanes.index(row["origin_action"])
        start = _moment(row["requested_time"], timezone)
        end = _moment(row["completion_time"], timezone) or start
        colour, alpha = STATE_COLOURS.get(row["state"], "#000000"), 0.35 if row["archived"] else 1.0
        ax.plot([start, end], [y, y], color=colour, alpha=alpha, linewidth=3, solid_capstyle="round")
        ax.plot([start], [y], marker="o", color=colour, alpha=alpha, markersize=5)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.set_ylim(-0.7, max(len(lanes), 1) - 0.3)
    ax.set_title(f"timeline: {len(rows)} instants (green completed, orange inflight, grey requested; pale: archived)",
                 fontsize=10, loc="left")
    ax.grid(axis="x", alpha=0.3)
    for label in ax.get_xticklabels():
        label.set_fontsize(8)


def draw_file_bars(ax: Any, rows: list[tuple[str, list[tuple[int, bool]]]], linewidth: float = 0.5) -> None:
    """One bar per file group: its files left to right, sized by bytes, base files and log files
    in their colours."""
    for y, (_, files) in enumerate(rows):
        left = 0
        for size, is_base in files:
            ax.barh(y, size, left=left, height=0.7, color=BASE_COLOUR if is_base else LOG_COLOUR,
                    edgecolor="white", linewidth=linewidth)
            left += size


def draw_family(ax: Any, family: str, rows: list[tuple[str, list[tuple[int, bool]]]]) -> None:
    shown = rows[:MAX_ROWS]
    draw_file_bars(ax, shown)
    ax.set_yticks(range(len(shown)), [file_id[:8] for file_id, _ in shown], fontsize=7)
    ax.invert_yaxis()
    more = f", {len(rows) - len(shown)} more not drawn" if len(rows) > len(shown) else ""
    total = sum(size for _, files in rows for size, _ in files)
    ax.set_title(f"{family}: {len(rows)} file groups, {human_bytes(total)} (dark: base files, light: log files{more})",
                 fontsize=10, loc="left")
    ax.xaxis.set_major_formatter(lambda value, _: human_bytes(value))
    ax.tick_params(axis="x", labelsize=8)


def draw_table(table: Any, output: str, size: tuple[int, int] | None = None, archived: bool = True) -> dict[str, Any]:
    """Draw ``table`` into the PNG ``output``; returns what was drawn (and the picture's size)."""
    if not output.lower().endswith(".png"):
        raise CliInputError(f"--output {output!r}: the picture is a PNG; name the file *.png")
    rows = timeline_rows(table, archived=archived)
    families = family_rows(table)
    plt = _pyplot()
    lanes = max(len({r["origin_action"] for r in rows}), 1)
    heights = [1.2 + 0.35 * lanes] + [0.9 + 0.22 * min(len(r), MAX_ROWS) for _, r in families]
    width, height = size or (1400, int(sum(heights) * DPI) + 60)
    figure, axes = plt.subplots(len(heights), 1, figsize=(width / DPI, height / DPI), dpi=DPI,
                                gridspec_kw={"height_ratios": heights}, squeeze=False)
    try:
        figure.suptitle(f"{table.name} ({table.config.table_type})", fontsize=12, x=0.01, ha="left")
        draw_timeline(axes[0][0], rows, table.config.timezone)
        for ax, (family, groups) in zip(axes[1:, 0], families):
            draw_family(ax, family, groups)
        figure.tight_layout(rect=(0, 0, 1, 0.97))
        try:
            figure.savefig(output, format="png", dpi=DPI)
        except OSError as exc:
            raise DrawError(f"cannot write {output!r}: {exc.strerror or exc}") from exc
    finally:
        plt.close(figure)
    return {"output": output, "width": width, "height": height, "instants": len(rows),
            "families": {family: len(r) for family, r in families}}


def cmd_draw(args: argparse.Namespace, console: Console) -> int:
    size = parse_size(args.size) if args.size else None
    table = open_table(args.path)
    with progress("drawing"):
        drawn = draw_table(table, args.output, size, archived=not args.active_only)
    if args.json:
        emit_json(drawn)
    else:
        console.print(f"drew {drawn['instants']} instants and "
                      f"{sum(drawn['families'].values())} file-group rows to {drawn['output']} "
                      f"({drawn['width']}x{drawn['height']} px)")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    draw = sub.add_parser("draw", parents=[common], help="a PNG of the timeline and the file-group layout per family")
    draw.add_argument("path")
    draw.add_argument("-o", "--output", default="table.png", help="the PNG to write (default: table.png)")
    draw.add_argument("--size", metavar="WxH", help="picture size in pixels (default: 1400 wide, tall enough)")
    draw.add_argument("--active-only", action="store_true", help="leave archived instants out of the timeline")
    draw.add_argument("--json", action="store_true")
    draw.set_defaults(func=cmd_draw)

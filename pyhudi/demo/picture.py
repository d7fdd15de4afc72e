"""The demo's picture (PNG): the run's timeline and the file-group layouts it went through.

Built from the pieces of ``pyhudi draw`` (:mod:`pyhudi.cli.draw`): its timeline panel, with the
wide table's deltacommits put in one lane per writer stream, and its layout data — per family,
one row per file group, its files as blocks as wide as their bytes, base files dark and log files
light. The users table is shown after the streams, after the family compaction of the busiest
family and after full compaction and cleaning; the events table before and after clustering.
The picture has a fixed size (:data:`SIZE`), which the demo test checks.
"""

from __future__ import annotations

from typing import Any

from pyhudi.cli.draw import DPI, draw_file_bars, draw_timeline, family_rows
from pyhudi.cli.inspect import timeline_rows
from pyhudi.cli.output import human_bytes

SIZE = (1600, 1400)
"""The picture's width and height in pixels."""

Layout = list[tuple[str, list[tuple[str, list[tuple[int, bool]]]]]]
"""What :func:`pyhudi.cli.draw.family_rows` returns: per family, each file group's files."""


def snapshot(table: Any) -> Layout:
    """The table's file-group layout now (drawn later, when the run is over)."""
    return family_rows(table)


def run_timeline(users: Any, events: Any, writer_of: dict[str, str]) -> list[dict[str, Any]]:
    """Both tables' instants as timeline rows, one lane per table and writer (``writer_of``:
    instant → who wrote it) or per table and action (services)."""
    rows = []
    for table, name in ((users, "users"), (events, "events")):
        for row in timeline_rows(table, archived=True):
            lane = f"{name} · {writer_of.get(row['requested_time']) or row['origin_action']}"
            rows.append({**row, "origin_action": lane})
    return rows


def _draw_layout(ax: Any, title: str, groups: list[tuple[str, list[tuple[int, bool]]]], scale: int) -> None:
    """One family (or the events table) at one moment, on a shared byte scale."""
    draw_file_bars(ax, groups, linewidth=0.4)
    total = sum(size for _, files in groups for size, _ in files)
    files = sum(len(f) for _, f in groups)
    ax.set_title(f"{title}: {len(groups)} groups, {files} files, {human_bytes(total)}", fontsize=8, loc="left")
    ax.set_xlim(0, scale)
    ax.set_ylim(max(len(groups), 1) - 0.4, -0.6)
    ax.set_yticks([])
    ax.xaxis.set_major_formatter(lambda value, _: human_bytes(value))
    ax.tick_params(axis="x", labelsize=6)


def _panel_scale(layouts: list[Layout]) -> int:
    widest = [sum(size for size, _ in files) for layout in layouts for _, groups in layout for _, files in groups]
    return max(widest + [1])


def draw_run(output: str, timeline: list[dict[str, Any]], timezone: str, users: list[tuple[str, Layout]],
             events: list[tuple[str, Layout]]) -> tuple[int, int]:
    """Draw the picture into ``output``; returns its size in pixels."""
    from pyhudi.cli.draw import _pyplot

    plt = _pyplot()
    families = []
    for _, layout in users:
        families += [name for name, _ in layout if name not in families]
    width, height = SIZE
    figure = plt.figure(figsize=(width / DPI, height / DPI), dpi=DPI)
    try:
        grid = figure.add_gridspec(3, 1, height_ratios=[1.3, 3.6, 1.6], hspace=0.35)
        figure.suptitle("pyhudi demo: the run's timeline and the file-group layouts "
                        "(dark: base files, light: log files; widths in bytes)", fontsize=11, x=0.01, ha="left")
        draw_timeline(figure.add_subplot(grid[0]), timeline, timezone)
        user_grid = grid[1].subgridspec(len(families), len(users), hspace=0.9, wspace=0.08)
        scale = _panel_scale([layout for _, layout in users])
        for col, (moment, layout) in enumerate(users):
            by_family = dict(layout)
            for row, family in enumerate(families):
                ax = figure.add_subplot(user_grid[row, col])
                _draw_layout(ax, f"users · {family} · {moment}", by_family.get(family, []), scale)
        event_grid = grid[2].subgridspec(1, len(events), wspace=0.08)
        scale = _panel_scale([layout for _, layout in events])
        for col, (moment, layout) in enumerate(events):
            groups = [g for _, family_groups in layout for g in family_groups]
            _draw_layout(figure.add_subplot(event_grid[0, col]), f"events · {moment}", groups, scale)
        figure.subplots_adjust(left=0.11, right=0.99, top=0.95, bottom=0.03)
        figure.savefig(output, format="png", dpi=DPI)
    finally:
        plt.close(figure)
    return width, height

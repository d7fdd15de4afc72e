"""The demo's report: what each phase did and took, and whether every check passed.

The pipeline records facts into a :class:`Report` as it goes (timings, checks, per-phase
figures); :meth:`Report.render` prints them as a few short rich tables. The last lines are
always ``checks: N passed, M failed`` and the picture's path, which the demo test looks for.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from rich.console import Console
from rich.table import Table as RichTable

from pyhudi.cli.output import human_bytes


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""


@dataclass
class Report:
    """Everything the demo prints, collected while it runs."""

    title: str
    timings: list[tuple[str, float]] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    sections: list[RichTable] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @contextmanager
    def phase(self, name: str, console: Console | None = None) -> Iterator[None]:
        """Time a phase (and say it started, so a long phase is not a silent one)."""
        if console is not None:
            console.print(f"[dim]… {name}[/dim]", highlight=False)
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings.append((name, time.perf_counter() - started))

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        self.checks.append(Check(name, bool(ok), detail))
        return bool(ok)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def table(self, title: str, columns: list[str], rows: list[list[Any]]) -> None:
        """Add a section: a titled table (numbers right-aligned)."""
        view = RichTable(title=title, title_justify="left", title_style="bold")
        for i, column in enumerate(columns):
            view.add_column(column, justify="left" if i == 0 else "right")
        for row in rows:
            view.add_row(*(_cell(v) for v in row))
        self.sections.append(view)

    def render(self, console: Console) -> None:
        console.rule(f"[bold]{self.title}")
        for section in self.sections:
            console.print(section)
        timings = RichTable(title="timings", title_justify="left", title_style="bold")
        timings.add_column("phase")
        timings.add_column("seconds", justify="right")
        for name, seconds in self.timings:
            timings.add_row(name, f"{seconds:.1f}")
        timings.add_row("[bold]total[/bold]", f"[bold]{sum(s for _, s in self.timings):.1f}[/bold]")
        console.print(timings)
        checks = RichTable(title="checks", title_justify="left", title_style="bold")
        checks.add_column("")
        checks.add_column("check")
        checks.add_column("detail", overflow="fold")
        for c in self.checks:
            checks.add_row("[green]ok[/green]" if c.ok else "[red]FAILED[/red]", c.name, c.detail)
        console.print(checks)
        for note in self.notes:
            console.print(note, highlight=False)
        passed = len(self.checks) - len(self.failed)
        colour = "green" if not self.failed else "red"
        console.print(f"[{colour}]checks: {passed} passed, {len(self.failed)} failed[/{colour}]", highlight=False)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return "" if value is None else str(value)


def family_files(table: Any) -> dict[str, dict[str, int]]:
    """Per family (``full row`` for complete-row base files): files, bytes, base and log files
    of the visible file slices."""
    out: dict[str, dict[str, int]] = {}
    for group in table.file_groups():
        for kind, files in (("base", group.base_files), ("log", group.log_files)):
            for f in files:
                entry = out.setdefault(f.name.family or "full row", {"files": 0, "bytes": 0, "base": 0, "log": 0})
                entry["files"] += 1
                entry["bytes"] += f.size
                entry[kind] += 1
    return out


def layout_rows(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]],
                live_rows: dict[str, int]) -> list[list[Any]]:
    """Rows of the per-family table: live rows, then files / bytes / log files before and after."""
    rows = []
    for family in [*live_rows, "full row"]:
        b, a = before.get(family, {}), after.get(family, {})
        if not b and not a:
            continue
        rows.append([family, live_rows.get(family), b.get("files", 0), human_bytes(b.get("bytes", 0)), b.get("log", 0),
                     a.get("files", 0), human_bytes(a.get("bytes", 0)), a.get("log", 0)])
    return rows

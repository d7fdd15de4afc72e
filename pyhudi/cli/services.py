"""``pyhudi compact | clean | archive | rollback``: the table services, each the same way.

Every service command has three modes, as hudi-cli's ``compaction schedule`` / ``compaction
run``: ``--schedule`` writes the plan (a ``.requested`` instant) and stops, ``--run INSTANT``
executes a plan written earlier, and neither does both. ``--dry-run`` prints the plan a schedule
would write and writes nothing. A service is one :class:`Service` row (:data:`SERVICES`; ``cluster``
joins them when the table has clustering), so a new one is a handful of functions and one row.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from pyhudi.cli.io import CliInputError
from pyhudi.cli.output import emit_json, open_table, parse_options, progress, table_view
from pyhudi.cli.tables import engine_for
from pyhudi.errors import TimelineError

if TYPE_CHECKING:
    from rich.console import Console  # (rich loads when a command prints: pyhudi.cli.output)

Report = dict[str, Any]


@dataclass(frozen=True)
class Service:
    """How one table service is scheduled, run and dry-run from the command line.

    ``schedule``/``run``/``both`` return a JSON-ready report whose ``key`` entry is the
    service's instant (None: nothing to do); ``plan`` returns the dry run's rows. ``schedule``
    and ``run`` are None for a service without a separate plan (``no_plan`` says why).
    """

    command: str
    key: str
    help: str
    nothing: str
    both: Callable[[Any, argparse.Namespace, dict[str, str]], Report]
    plan: Callable[[Any, argparse.Namespace, dict[str, str]], list[dict[str, Any]]]
    plan_title: str
    plan_columns: tuple[str, ...]
    schedule: Callable[[Any, argparse.Namespace, dict[str, str]], Report] | None = None
    run: Callable[[Any, str, argparse.Namespace, dict[str, str]], Report] | None = None
    arguments: Callable[[argparse.ArgumentParser], None] | None = None
    no_plan: str = ""


# ------------------------------------------------------------------------------ compaction
def _comma_list(value: str | None) -> list[str] | None:
    """A comma-separated option as names (None: not given, the service's default)."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _families(args: argparse.Namespace) -> list[str] | None:
    return _comma_list(args.families)


def _compaction_schedule(table: Any, args: argparse.Namespace, opts: dict[str, str]) -> Report:
    instant = table.schedule_compaction(_families(args), args.full, opts)
    return {"compaction": instant, "state": None if instant is None else "REQUESTED"}


def _compaction_run(table: Any, instant: str, args: argparse.Namespace, opts: dict[str, str]) -> Report:
    with engine_for(args.engine) as engine:
        return {"compaction": table.run_compaction(instant, engine=engine, options=opts), "state": "COMPLETED"}


def _compaction_both(table: Any, args: argparse.Namespace, opts: dict[str, str]) -> Report:
    scheduled = _compaction_schedule(table, args, opts)
    return scheduled if scheduled["compaction"] is None else _compaction_run(table, scheduled["compaction"], args, opts)


def _compaction_plan(table: Any, args: argparse.Namespace, opts: dict[str, str]) -> list[dict[str, Any]]:
    return table.plan_compaction(_families(args), args.full, opts)


def _compaction_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--families", help="comma-separated families to compact (default: every family)")
    parser.add_argument("--full", action="store_true", help="merge every family into one full-row base file")
    parser.add_argument("--engine", default="local", choices=["local", "spark"],
                        help="run the rewrite in process (default) or on Spark (local mode if no session)")


# ------------------------------------------------------------------------------ clean
def _clean_schedule(table: Any, args: argparse.Namespace, opts: dict[str, str]) -> Report:
    instant = table.schedule_clean(opts)
    return {"clean": instant, "state": None if instant is None else "REQUESTED"}


def _clean_run(table: Any, instant: str, args: argparse.Namespace, opts: dict[str, str]) -> Report:
    return {"clean": table.run_clean(instant, opts), "state": "COMPLETED"}


def _clean_both(table: Any, args: argparse.Namespace, opts: dict[str, str]) -> Report:
    instant = table.clean(opts)  # (finishes pending cleans first)
    return {"clean": instant, "state": None if instant is None else "COMPLETED"}


# ------------------------------------------------------------------------------ archive
def _archive_both(table: Any, args: argparse.Namespace, opts: dict[str, str]) -> Report:
    archived = table.archive(options=opts)
    return {"archived": archived, "state": "COMPLETED" if archived else None}


def _archive_plan(table: Any, args: argparse.Namespace, opts: dict[str, str]) -> list[dict[str, Any]]:
    from pyhudi.config.archive import keep_bounds
    from pyhudi.services.archive import instants_to_archive

    merged = {**table.properties, **opts}
    low, high = keep_bounds(merged)
    chosen = instants_to_archive(table.active_timeline(merged), merged, low, high, table.config.table_type)
    return [{"requested_time": i.requested_time, "action": str(i.action), "completion_time": i.completion_time}
            for i in chosen]


# ------------------------------------------------------------------------------ rollback
def _rollback_both(table: Any, args: argparse.Namespace, opts: dict[str, str]) -> Report:
    return {"rolled_back": args.instant, "rollback": table.rollback(args.instant, opts)}


def _rollback_plan(table: Any, args: argparse.Namespace, opts: dict[str, str]) -> list[dict[str, Any]]:
    """The files a rollback of ``args.instant`` would delete: a pending write's markers, or the
    files a completed commit's write stats name (refused unless it is the latest commit)."""
    from pyhudi.write.markers import list_markers

    timeline = table.active_timeline()
    target = timeline.get(args.instant)
    if target is None:
        raise TimelineError(f"no instant {args.instant} on the active timeline")
    if target.is_pending:
        return [{"partition": m.partition_path, "file": m.file_name, "source": f"marker ({m.io_type})"}
                for m in sorted(list_markers(table.storage, args.instant), key=lambda m: m.data_relpath)]
    commits = [i for i in timeline.completed() if str(i.completed_action) in ("commit", "deltacommit", "replacecommit")]
    latest = max(commits, key=lambda i: i.sort_time, default=None)
    if latest is None or latest.requested_time != target.requested_time:
        raise TimelineError(f"{target.action} {args.instant} is not the latest completed commit "
                            f"({latest.requested_time if latest else 'none'}): only the latest can be rolled back")
    stats = timeline.read_metadata(target).write_stats()
    return [{"partition": s.partition_path or "", "file": s.path.rpartition("/")[2], "source": "write stat"}
            for s in sorted(stats, key=lambda s: s.path or "") if s.path]


SERVICES: tuple[Service, ...] = (
    Service("compact", "compaction", "compact file slices (per family, or --full): schedule and/or run",
            "nothing to compact", _compaction_both, _compaction_plan, "file slices would be compacted",
            ("partition", "file_id", "family", "base_file", "log_files"),
            _compaction_schedule, _compaction_run, _compaction_arguments),
    Service("clean", "clean", "delete file versions no retained snapshot reads: schedule and/or run",
            "nothing to clean", _clean_both, lambda t, a, o: t.plan_clean(o), "files would be deleted",
            ("partition", "file"), _clean_schedule, _clean_run),
    Service("archive", "archived", "move old completed instants into the timeline history (LSM)",
            "nothing to archive", _archive_both, _archive_plan, "instants would be archived",
            ("requested_time", "action", "completion_time"),
            no_plan="archival writes no plan: run it, or see what it would take with --dry-run"),
    Service("rollback", "rollback", "roll back a pending instant of a gone process, or the latest completed commit",
            "nothing to roll back", _rollback_both, _rollback_plan, "files would be deleted",
            ("partition", "file", "source"), arguments=lambda p: p.add_argument("instant", help="the instant to roll back (its requested time, as `pyhudi timeline` lists)"),
            no_plan="a rollback's plan is written and executed at once: run it, or see it with --dry-run"),
)


# ------------------------------------------------------------------------------ clustering
def _sort_columns(args: argparse.Namespace) -> list[str] | None:
    return _comma_list(args.sort_columns)


def _clustering_schedule(table: Any, args: argparse.Namespace, opts: dict[str, str]) -> Report:
    instant = table.schedule_clustering(_sort_columns(args), opts)
    return {"clustering": instant, "state": None if instant is None else "REQUESTED"}


def _clustering_run(table: Any, instant: str, args: argparse.Namespace, opts: dict[str, str]) -> Report:
    with engine_for(args.engine) as engine:
        return {"clustering": table.run_clustering(instant, engine=engine, options=opts), "state": "COMPLETED"}


def _clustering_both(table: Any, args: argparse.Namespace, opts: dict[str, str]) -> Report:
    scheduled = _clustering_schedule(table, args, opts)
    return scheduled if scheduled["clustering"] is None else _clustering_run(table, scheduled["clustering"], args, opts)


def _clustering_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sort-columns", help="comma-separated columns to sort by (default: "
                        "hoodie.clustering.plan.strategy.sort.columns)")
    parser.add_argument("--engine", default="local", choices=["local", "spark"],
                        help="run the rewrite in process (default) or on Spark (local mode if no session)")


def _available_services() -> tuple[Service, ...]:
    """Every table service the CLI operates: compaction, clustering, cleaning, archival, rollback."""
    cluster = Service("cluster", "clustering", "rewrite small file slices into sorted ones: schedule and/or run",
                      "nothing to cluster", _clustering_both,
                      lambda t, a, o: t.plan_clustering(_sort_columns(a), o), "file slices would be clustered",
                      ("group", "partition", "file_id", "base_file", "log_files", "output_file_groups"),
                      _clustering_schedule, _clustering_run, _clustering_arguments)
    return (*SERVICES[:1], cluster, *SERVICES[1:])


# ------------------------------------------------------------------------------ the command
def _mode(service: Service, args: argparse.Namespace) -> str:
    chosen = [m for m, on in (("schedule", args.schedule), ("run", args.run), ("dry-run", args.dry_run)) if on]
    if len(chosen) > 1:
        raise CliInputError(f"{service.command}: --{chosen[0]} and --{chosen[1]} exclude each other")
    mode = chosen[0] if chosen else "both"
    if mode in ("schedule", "run") and service.schedule is None:
        raise CliInputError(f"{service.command} --{mode}: {service.no_plan}")
    return mode


def _cell(value: Any) -> Any:
    return "\n".join(value) if isinstance(value, list) else ("(none)" if value in ("", None) else value)


def _print_report(console: Console, service: Service, report: Report) -> None:
    if "plan" in report:
        plan = report["plan"]
        console.print(f"{len(plan)} {service.plan_title}" + ("" if plan else f" ({service.nothing})"))
        if plan:
            console.print(table_view(f"{service.command} plan (dry run)", service.plan_columns,
                                     ([_cell(row[c]) for c in service.plan_columns] for row in plan)))
    elif service.command == "rollback":
        console.print(f"{report['rolled_back']} rolled back (rollback instant [bold]{report['rollback']}[/bold])")
    elif service.command == "archive":
        archived = report["archived"]
        console.print(f"archived {len(archived)} instants ({archived[0]} .. {archived[-1]})" if archived
                      else service.nothing)
    elif report[service.key] is None:
        console.print(service.nothing)
    else:
        console.print(f"{service.key} [bold]{report[service.key]}[/bold] {report['state'].lower()}")


def run_service(service: Service, args: argparse.Namespace, console: Console) -> int:
    mode = _mode(service, args)
    table = open_table(args.path)
    opts = parse_options(args.option)
    if mode == "dry-run":
        report: Report = {"plan": service.plan(table, args, opts)}
    else:
        with progress(f"{service.command} ({mode})"):
            if mode == "schedule":
                report = service.schedule(table, args, opts)  # type: ignore[misc]
            elif mode == "run":
                report = service.run(table, args.run, args, opts)  # type: ignore[misc]
            else:
                report = service.both(table, args, opts)
    if args.json:
        emit_json(report)
    else:
        _print_report(console, service, report)
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    for service in _available_services():
        parser = sub.add_parser(service.command, parents=[common], help=service.help)
        parser.add_argument("path")
        if service.arguments is not None:
            service.arguments(parser)
        planned = service.schedule is not None  # (archive and rollback refuse both, saying why: not listed)
        parser.add_argument("--schedule", action="store_true",
                            help="only write the plan (a .requested instant)" if planned else argparse.SUPPRESS)
        parser.add_argument("--run", metavar="INSTANT",
                            help="execute the plan scheduled at INSTANT" if planned else argparse.SUPPRESS)
        parser.add_argument("--dry-run", action="store_true",
                            help=("print the plan a schedule would write" if planned else "print what it would do")
                            + "; write nothing")
        parser.add_argument("--option", action="append", metavar="KEY=VALUE",
                            help="a hoodie.* option for this run, e.g. hoodie.cleaner.commits.retained=1 (repeatable)")
        parser.add_argument("--json", action="store_true")
        parser.set_defaults(func=lambda args, console, s=service: run_service(s, args, console))

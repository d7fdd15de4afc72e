"""The ``pyhudi`` command line: create, write, read, alter and inspect tables; run the demo.

Commands print with ``rich`` for people; ``--json`` gives machine-readable output instead.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa
from rich.console import Console
from rich.table import Table as RichTable

import pyhudi
from pyhudi import cli_io
from pyhudi.errors import HudiError
from pyhudi.index.bucket import bucket_ids
from pyhudi.storage.naming import LogFileName, bucket_file_id

_TYPES = {
    "string": pa.string(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "binary": pa.binary(),
}


def parse_schema_spec(spec: str) -> pa.Schema:
    """``"id:string,price:double"`` → Arrow schema (a CLI convenience; the API takes Arrow)."""
    fields = []
    for part in spec.split(","):
        name, _, type_name = part.strip().partition(":")
        if not name or type_name not in _TYPES:
            known = ", ".join(_TYPES)
            raise HudiError(f"bad column spec {part.strip()!r}: expected name:type with type one of {known}")
        fields.append(pa.field(name, _TYPES[type_name]))
    return pa.schema(fields)


def _print_properties(console: Console, table: pyhudi.Table) -> None:
    view = RichTable(title=f"{table.name}: .hoodie/hoodie.properties", show_lines=False)
    view.add_column("key", style="cyan")
    view.add_column("value", overflow="fold")
    for key, value in table.properties.items():
        view.add_row(key, value)
    console.print(view)


def _print_timeline(console: Console, table: pyhudi.Table, archived: bool = False) -> None:
    instants = table.archived_timeline() if archived else table.timeline
    which = "archived timeline" if archived else "timeline"
    view = RichTable(title=f"{table.name}: {which} ({len(instants)} instants)")
    for column in ("requested", "action", "state", "completed"):
        view.add_column(column)
    for instant in instants:
        view.add_row(instant.requested_time, str(instant.action), str(instant.state), instant.completion_time or "")
    console.print(view)


def cmd_create(args: argparse.Namespace, console: Console) -> int:
    families = dict(f.split("=", 1) for f in args.family or [])
    table = pyhudi.create_table(
        args.path,
        parse_schema_spec(args.schema),
        args.record_key,
        partition_fields=args.partition or (),
        table_type=args.type,
        num_buckets=args.buckets,
        ordering_field=args.ordering,
        column_families=families or None,
    )
    console.print(f"created table [bold]{table.name}[/bold] at {table.path}")
    return 0


def cmd_describe(args: argparse.Namespace, console: Console) -> int:
    table = pyhudi.open_table(args.path)
    if args.json:
        print(json.dumps({"table": table.describe(), "properties": table.properties}, indent=2))
    else:
        _print_properties(console, table)
    return 0


def cmd_timeline(args: argparse.Namespace, console: Console) -> int:
    table = pyhudi.open_table(args.path)
    if args.json:
        rows = [
            {"requested_time": i.requested_time, "action": str(i.action), "state": str(i.state),
             "completion_time": i.completion_time}
            for i in (table.archived_timeline() if args.archived else table.timeline)
        ]
        print(json.dumps(rows, indent=2))
    else:
        _print_timeline(console, table, args.archived)
    return 0


def cmd_archive(args: argparse.Namespace, console: Console) -> int:
    table = pyhudi.open_table(args.path)
    options = dict(o.split("=", 1) for o in args.option or [])
    archived = table.archive(options=options)
    if args.json:
        print(json.dumps({"archived": archived}, indent=2))
    else:
        console.print(f"archived {len(archived)} instants" + (f" ({archived[0]} .. {archived[-1]})" if archived else ""))
    return 0


WRITE_OPERATIONS = ("upsert", "insert", "bulk_insert", "delete", "insert_overwrite", "insert_overwrite_table")


def cmd_write(args: argparse.Namespace, console: Console) -> int:
    """Write a Parquet/CSV/JSON file to a table with one operation; print the commit's stats."""
    table = pyhudi.open_table(args.path)
    data = cli_io.load_input(args.input, args.format, table.schema)
    instant = getattr(table, args.operation)(data)
    result = table.last_write
    summary = {"instant": instant, "operation": args.operation, "rows": len(data),
               "rows_per_family": result.rows_per_family, "files": result.files,
               "bytes_written": result.bytes_written, "elapsed_ms": result.elapsed_ms}
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    console.print(f"{args.operation} of {len(data)} rows committed at instant [bold]{instant}[/bold] "
                  f"({len(result.files)} files, {result.bytes_written:,} bytes, {result.elapsed_ms} ms)")
    for family, rows in sorted(result.rows_per_family.items()):
        console.print(f"  family {family}: {rows} rows")
    return 0


def cmd_read(args: argparse.Namespace, console: Console) -> int:
    """Snapshot, time-travel, read-optimized or incremental read, printed or saved to a file."""
    table = pyhudi.open_table(args.path)
    schema = table.schema_at(args.as_of)
    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    filters = [cli_io.parse_filter(f, schema) for f in args.filter or ()]
    if args.incremental:
        start, end = cli_io.parse_instant_range(args.incremental)
        rows = table.read_incremental(start, end, columns=columns, filters=filters or None, with_meta=args.meta)
    else:
        rows = table.read(columns, filters or None, as_of=args.as_of, with_meta=args.meta,
                          query_type="read_optimized" if args.read_optimized else "snapshot")
    if args.sort:
        rows = rows.sort_by([(c.strip(), "ascending") for c in args.sort.split(",")])
    if args.output:
        cli_io.write_output(rows, args.output)
        console.print(f"{len(rows)} rows written to {args.output}")
    elif args.json:
        print(json.dumps(rows.slice(0, args.limit).to_pylist(), indent=2, default=str))
    else:
        print_rows(console, f"{table.name}: {len(rows)} rows (showing {min(len(rows), args.limit)})",
                   rows.slice(0, args.limit).to_pylist())
    return 0


def cmd_files(args: argparse.Namespace, console: Console) -> int:
    """The file-system view: every visible file group with its base and log files."""
    table = pyhudi.open_table(args.path)
    groups = table.file_groups(as_of=args.as_of)
    listing = [{"partition": g.partition_path, "file_id": g.file_id,
                "base_files": [b.name.name for b in g.base_files],
                "log_files": [lf.name.name for lf in g.log_files]} for g in groups]
    if args.json:
        print(json.dumps(listing, indent=2))
        return 0
    view = RichTable(title=f"{table.name}: {len(groups)} file groups")
    for column in ("partition", "file id", "base files", "log files"):
        view.add_column(column, overflow="fold")
    for g in listing:
        view.add_row(g["partition"] or "(none)", g["file_id"], "\n".join(g["base_files"]), "\n".join(g["log_files"]))
    console.print(view)
    return 0


def cmd_compact(args: argparse.Namespace, console: Console) -> int:
    """Schedule (--schedule), execute (--run INSTANT) or both (default) a compaction; --dry-run
    prints the plan a schedule would write without writing it."""
    table = pyhudi.open_table(args.path)
    families = [f.strip() for f in args.families.split(",") if f.strip()] if args.families else None
    options = dict(o.split("=", 1) for o in args.option or ())
    if args.run:
        instant = table.run_compaction(args.run, engine=args.engine, options=options)
        report = {"compaction": instant, "state": "COMPLETED"}
    elif args.dry_run:
        report = {"plan": table.plan_compaction(families, args.full, options)}
    else:
        instant = table.schedule_compaction(families, args.full, options)
        if instant is not None and not args.schedule:
            table.run_compaction(instant, engine=args.engine, options=options)
        state = None if instant is None else ("REQUESTED" if args.schedule else "COMPLETED")
        report = {"compaction": instant, "state": state}
    if args.json:
        print(json.dumps(report, indent=2))
    elif "plan" in report:
        plan = report["plan"]
        console.print(f"{len(plan)} file slices would be compacted" + ("" if plan else " (nothing to do)"))
        for op in plan:
            console.print(f"  {op['partition'] or '(none)'} {op['file_id']} family {op['family'] or 'default'}: "
                          f"{op['base_file'] or '(no base file)'} + {len(op['log_files'])} log files")
    elif report["compaction"] is None:
        console.print("nothing to compact")
    else:
        console.print(f"compaction [bold]{report['compaction']}[/bold] {report['state'].lower()}")
    return 0


def cmd_rollback(args: argparse.Namespace, console: Console) -> int:
    """Roll back a pending instant of a gone process, or the latest completed commit."""
    table = pyhudi.open_table(args.path)
    instant = table.rollback(args.instant)
    if args.json:
        print(json.dumps({"rolled_back": args.instant, "rollback": instant}, indent=2))
    else:
        console.print(f"{args.instant} rolled back (rollback instant [bold]{instant}[/bold])")
    return 0


def cmd_clean(args: argparse.Namespace, console: Console) -> int:
    """Schedule (--schedule), execute (--run INSTANT) or both (default) a clean; --dry-run
    prints the files a schedule would plan to delete without writing anything."""
    table = pyhudi.open_table(args.path)
    options = dict(o.split("=", 1) for o in args.option or ())
    if args.run:
        report = {"clean": table.run_clean(args.run, options), "state": "COMPLETED"}
    elif args.dry_run:
        report = {"plan": table.plan_clean(options)}
    elif args.schedule:
        instant = table.schedule_clean(options)
        report = {"clean": instant, "state": None if instant is None else "REQUESTED"}
    else:
        instant = table.clean(options)
        report = {"clean": instant, "state": None if instant is None else "COMPLETED"}
    if args.json:
        print(json.dumps(report, indent=2))
    elif "plan" in report:
        plan = report["plan"]
        console.print(f"{len(plan)} files would be deleted" + ("" if plan else " (nothing to clean)"))
        for row in plan:
            console.print(f"  {row['partition'] or '(none)'} {row['file']}")
    elif report["clean"] is None:
        console.print("nothing to clean")
    else:
        console.print(f"clean [bold]{report['clean']}[/bold] {report['state'].lower()}")
    return 0


def cmd_alter(args: argparse.Namespace, console: Console) -> int:
    """``ALTER TABLE ... SET/UNSET TBLPROPERTIES`` from the shell (families: RFC-80's DDL)."""
    table = pyhudi.open_table(args.path)
    settings = {}
    for item in args.set or ():
        key, found, value = item.partition("=")
        if not found or not key:
            raise cli_io.CliInputError(f"--set {item!r}: expected KEY=VALUE")
        settings[key] = value
    if not settings and not args.unset:
        raise cli_io.CliInputError("alter needs at least one --set KEY=VALUE or --unset KEY")
    new_columns = parse_schema_spec(",".join(args.column)) if args.column else None
    instant = table.alter(set_properties=settings or None, unset_properties=args.unset or None,
                          new_columns=new_columns)
    if instant:
        console.print(f"altered {table.name}: schema change committed at instant [bold]{instant}[/bold]")
    else:
        console.print(f"altered {table.name}: properties updated (no schema change)")
    for name, fam in pyhudi.open_table(args.path).column_families.items():
        console.print(f"  family {name}: {fam.property_value}")
    return 0


def cmd_demo(args: argparse.Namespace, console: Console) -> int:
    """Create a column-family table, write, partially update, delete, and read it back."""
    owned_dir = args.path is None
    base = Path(args.path or tempfile.mkdtemp(prefix="pyhudi-demo-")) / "profiles"
    if base.exists():
        shutil.rmtree(base)
    schema = pa.schema(
        [pa.field("user_id", pa.string(), nullable=False), pa.field("clicks", pa.int64()),
         pa.field("last_click", pa.timestamp("us", tz="UTC")), pa.field("orders", pa.int64()),
         pa.field("spend", pa.float64()), pa.field("country", pa.string()), pa.field("age", pa.int32())]
    )
    table = pyhudi.create_table(
        str(base), schema, "user_id", name="profiles", num_buckets=4,
        column_families={"clicks": "clicks;last_click", "orders": "orders,spend", "profile": "country,age"},
    )
    console.rule("[bold]pyhudi demo: a wide table with column families (RFC-80)")
    console.print(f"table [bold]{table.name}[/bold] created at {table.path}")
    _print_properties(console, table)
    _print_timeline(console, table)
    families = RichTable(title="column families")
    for column in ("family", "columns", "ordering", "log file of bucket 0 at instant 20260101000000000"):
        families.add_column(column)
    for fam in table.column_families.values():
        log = LogFileName(bucket_file_id(0), "20260101000000000", 1, "0-1-0", fam.name)
        families.add_row(fam.name, ", ".join(fam.columns), fam.ordering_field or "(commit time)", log.name)
    console.print(families)
    keys = pa.array(["alice", "bob", "carol", "dave", "erin", "frank"])
    buckets = bucket_ids(keys, table.num_buckets)
    routing = RichTable(title="bucket index (Java-compatible hash)")
    routing.add_column("user_id")
    routing.add_column("bucket")
    routing.add_column("file group")
    for key, bucket in zip(keys.to_pylist(), buckets.tolist()):
        routing.add_row(key, str(bucket), bucket_file_id(bucket))
    console.print(routing)

    ts = pa.array([1_700_000_000_000_000 + i for i in range(6)], pa.timestamp("us", tz="UTC"))
    table.upsert(pa.table({"user_id": keys, "clicks": [3, 1, 4, 1, 5, 9], "last_click": ts,
                           "orders": [0, 2, 1, 0, 3, 1], "spend": [0.0, 25.5, 9.99, 0.0, 120.0, 15.0],
                           "country": ["FR", "US", "DE", "US", "BR", "JP"], "age": [31, 45, 27, 38, 22, 50]}))
    console.print("[bold]1.[/bold] upsert of 6 full rows → one log file per bucket and family")
    table.upsert(pa.table({"user_id": ["alice", "bob"], "clicks": [30, 11]}))
    console.print("[bold]2.[/bold] partial upsert of the clicks family only (IS_PARTIAL block; last_click kept)")
    table.delete(pa.table({"user_id": ["dave"]}))
    console.print("[bold]3.[/bold] delete of dave → a delete block in every family of his file group")
    _print_timeline(console, table)
    print_rows(console, "snapshot read: families joined on the record key",
                table.read().sort_by("user_id").to_pylist())
    if args.spark:
        from pyhudi.spark.demo import demo_spark  # only the Spark face imports pyspark

        demo_spark(console, table.path)
    files = RichTable(title="file groups (per family log files)")
    files.add_column("bucket")
    files.add_column("log files (one per commit and family)", overflow="fold")
    for group in table.file_groups():
        files.add_row(group.file_id[:8], "\n".join(lf.name.name for lf in group.log_files))
    console.print(files)
    if owned_dir and not args.keep:
        shutil.rmtree(base.parent)
        console.print("(demo table removed; pass --path DIR to keep it)")
    return 0


def print_rows(console: Console, title: str, rows: list[dict[str, Any]]) -> None:
    view = RichTable(title=title)
    for name in rows[0] if rows else ():
        view.add_column(name)
    for row in rows:
        view.add_row(*("" if v is None else str(v) for v in row.values()))
    console.print(view)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pyhudi", description="Apache Hudi tables with column families.")
    sub = parser.add_subparsers(dest="command", required=True)
    create = sub.add_parser("create", help="create an empty table")
    create.add_argument("path")
    create.add_argument("--schema", required=True, help='columns, e.g. "id:string,price:double"')
    create.add_argument("--record-key", default="id")
    create.add_argument("--partition", action="append")
    create.add_argument("--type", default="MERGE_ON_READ", choices=["MERGE_ON_READ", "COPY_ON_WRITE"])
    create.add_argument("--buckets", type=int)
    create.add_argument("--ordering")
    create.add_argument("--family", action="append", help='NAME="c1,c2;ts" (repeatable)')
    create.set_defaults(func=cmd_create)
    for name, func, text in (("describe", cmd_describe, "show hoodie.properties"),
                             ("timeline", cmd_timeline, "show the timeline")):
        p = sub.add_parser(name, help=text)
        p.add_argument("path")
        p.add_argument("--json", action="store_true")
        if name == "timeline":
            p.add_argument("--archived", action="store_true", help="list the archived (LSM history) instants")
        p.set_defaults(func=func)
    archive = sub.add_parser("archive", help="archive old instants into the timeline history")
    archive.add_argument("path")
    archive.add_argument("--option", action="append", help="hoodie.keep.min.commits=N etc. (repeatable)")
    archive.add_argument("--json", action="store_true")
    archive.set_defaults(func=cmd_archive)
    write = sub.add_parser("write", help="write a Parquet/CSV/JSON file with one operation")
    write.add_argument("path")
    write.add_argument("input", help="file of rows (for delete: the record key and partition columns)")
    write.add_argument("--operation", default="upsert", choices=WRITE_OPERATIONS)
    write.add_argument("--format", choices=cli_io.INPUT_FORMATS, help="default: from the input's suffix")
    write.add_argument("--json", action="store_true")
    write.set_defaults(func=cmd_write)
    read = sub.add_parser("read", help="read rows (snapshot, --as-of, --incremental, --read-optimized)")
    read.add_argument("path")
    read.add_argument("--columns", help="comma-separated columns (families not needed are not read)")
    read.add_argument("--filter", action="append", help='"col OP value", e.g. "price>=9.5", "c in a,b" (repeatable, ANDed)')
    read.add_argument("--as-of", help="time travel: instant or timestamp")
    read.add_argument("--incremental", metavar="START[:END]", help="rows changed by instants completed in (START, END]")
    read.add_argument("--read-optimized", action="store_true", help="base files only")
    read.add_argument("--meta", action="store_true", help="include the _hoodie_* columns")
    read.add_argument("--sort", help="comma-separated columns to sort by")
    read.add_argument("--limit", type=int, default=20, help="rows to print (default 20)")
    read.add_argument("--output", help="write all rows to a .parquet, .csv or .json file instead")
    read.add_argument("--json", action="store_true")
    read.set_defaults(func=cmd_read)
    files = sub.add_parser("files", help="show the file groups and their files")
    files.add_argument("path")
    files.add_argument("--as-of")
    files.add_argument("--json", action="store_true")
    files.set_defaults(func=cmd_files)
    alter = sub.add_parser("alter", help="set/unset table properties (column families)")
    alter.add_argument("path")
    alter.add_argument("--set", action="append", help='KEY=VALUE, e.g. "hoodie.colFamily.geo=lat,lon" (repeatable)')
    alter.add_argument("--unset", action="append", help="KEY (repeatable)")
    alter.add_argument("--column", action="append", help="NAME:TYPE of a new family's column (repeatable)")
    alter.set_defaults(func=cmd_alter)
    compact = sub.add_parser("compact", help="compact file slices (per family, or --full): schedule and/or run")
    compact.add_argument("path")
    compact.add_argument("--schedule", action="store_true", help="only write the plan (compaction.requested)")
    compact.add_argument("--run", metavar="INSTANT", help="execute the compaction planned at INSTANT")
    compact.add_argument("--dry-run", action="store_true", help="show what a schedule would plan; write nothing")
    compact.add_argument("--families", help="comma-separated families to compact (default: every family)")
    compact.add_argument("--full", action="store_true", help="merge every family into one full-row base file")
    compact.add_argument("--engine", default="local", choices=["local", "spark"])
    compact.add_argument("--option", action="append", help="hoodie.* KEY=VALUE (repeatable)")
    compact.add_argument("--json", action="store_true")
    compact.set_defaults(func=cmd_compact)
    rollback = sub.add_parser("rollback", help="roll back a pending instant or the latest completed commit")
    rollback.add_argument("path")
    rollback.add_argument("instant")
    rollback.add_argument("--json", action="store_true")
    rollback.set_defaults(func=cmd_rollback)
    clean = sub.add_parser("clean", help="delete file versions no retained snapshot reads: schedule and/or run")
    clean.add_argument("path")
    clean.add_argument("--schedule", action="store_true", help="only write the plan (clean.requested)")
    clean.add_argument("--run", metavar="INSTANT", help="execute the clean planned at INSTANT")
    clean.add_argument("--dry-run", action="store_true", help="show the files a schedule would plan; write nothing")
    clean.add_argument("--option", action="append", help="hoodie.* KEY=VALUE (repeatable), e.g. "
                       "hoodie.cleaner.commits.retained=5")
    clean.add_argument("--json", action="store_true")
    clean.set_defaults(func=cmd_clean)
    demo = sub.add_parser("demo", help="run the end-to-end demo")
    demo.add_argument("--path", help="directory to create the demo table in (kept)")
    demo.add_argument("--keep", action="store_true", help="keep the temporary demo table")
    demo.add_argument("--no-spark", dest="spark", action="store_false",
                      help="skip the Spark part (reads and a partial write through Spark local mode)")
    demo.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console()
    try:
        return args.func(args, console)
    except HudiError as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2


if __name__ == "__main__":
    sys.exit(main())

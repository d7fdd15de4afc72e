"""The ``pyhudi`` command line: create a table, show its properties and timeline, run the demo.

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


def _print_timeline(console: Console, table: pyhudi.Table) -> None:
    instants = table.timeline
    view = RichTable(title=f"{table.name}: timeline ({len(instants)} instants)")
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
            for i in table.timeline
        ]
        print(json.dumps(rows, indent=2))
    else:
        _print_timeline(console, table)
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
        p.set_defaults(func=func)
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

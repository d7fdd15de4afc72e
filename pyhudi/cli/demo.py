"""``pyhudi demo``: a short tour of a column-family table (create, write, partial update, delete,
read back; optionally through Spark local mode)."""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
from rich.console import Console
from rich.table import Table as RichTable

import pyhudi
from pyhudi.cli.inspect import print_timeline
from pyhudi.cli.output import print_rows, table_view
from pyhudi.index.bucket import bucket_ids
from pyhudi.storage.naming import LogFileName, bucket_file_id


def _print_properties(console: Console, table: Any) -> None:
    console.print(table_view(f"{table.name}: .hoodie/hoodie.properties", ("key", "value"), table.properties.items()))


def _print_timeline(console: Console, table: Any) -> None:
    print_timeline(console, table, archived=False)


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


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    demo = sub.add_parser("demo", parents=[common], help="run the end-to-end demo")
    demo.add_argument("--path", help="directory to create the demo table in (kept)")
    demo.add_argument("--keep", action="store_true", help="keep the temporary demo table")
    demo.add_argument("--no-spark", dest="spark", action="store_false",
                      help="skip the Spark part (reads and a partial write through Spark local mode)")
    demo.set_defaults(func=cmd_demo)

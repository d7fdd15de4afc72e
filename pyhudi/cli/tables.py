"""``pyhudi create | describe | write | read | alter``: a table's shape, its rows in and out.

The API takes Arrow objects; these commands take file names and ``name:type`` strings and turn
them into Arrow (:mod:`pyhudi.cli.io`), so a table can be made and fed from a shell.
"""

from __future__ import annotations

import argparse
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

import pyarrow as pa

from pyhudi.cli import io as cli_io
from pyhudi.cli.output import emit_json, open_table, parse_options, print_rows, progress, table_view
from pyhudi.errors import HudiError

if TYPE_CHECKING:
    from rich.console import Console  # (rich loads when a command prints: pyhudi.cli.output)

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
WRITE_OPERATIONS = ("upsert", "insert", "bulk_insert", "delete", "insert_overwrite", "insert_overwrite_table")


def parse_schema_spec(spec: str) -> pa.Schema:
    """``"id:string,price:double"`` → Arrow schema (a CLI convenience; the API takes Arrow)."""
    fields = []
    for part in spec.split(","):
        name, _, type_name = part.strip().partition(":")
        if not name or type_name not in _TYPES:
            known = ", ".join(_TYPES)
            raise cli_io.CliInputError(f"bad column spec {part.strip()!r}: expected name:type with type one of {known}")
        fields.append(pa.field(name, _TYPES[type_name]))
    return pa.schema(fields)


@contextmanager
def engine_for(name: str) -> Iterator[Any]:
    """The engine ``--engine`` names: ``local`` (in process) or ``spark`` (the active Spark
    session, else a local-mode one started here and stopped afterwards)."""
    if name != "spark":
        yield None
        return
    import os
    import sys
    import tempfile

    from pyhudi.engine.spark import SparkEngine
    from pyhudi.spark.session import active_or_local_session  # only --engine spark pays for pyspark

    # Spark's own log goes there (appended run after run), not to the terminal
    log_dir = os.path.join(tempfile.gettempdir(), f"pyhudi-spark-{os.getuid()}" if hasattr(os, "getuid") else "pyhudi-spark")
    spark, owned = active_or_local_session("pyhudi-cli", log_dir=log_dir)
    try:
        yield SparkEngine(spark)
    except BaseException:
        print(f"(Spark's own log: {log_dir}/spark.log)", file=sys.stderr)
        raise
    finally:
        if owned:
            spark.stop()


def cmd_create(args: argparse.Namespace, console: Console) -> int:
    families = {}
    for item in args.family or ():
        name, found, columns = item.partition("=")
        if not found or not name:
            raise cli_io.CliInputError(f"--family {item!r}: expected NAME=COLUMNS, e.g. \"geo=lat,lon\"")
        families[name] = columns
    if families and args.buckets is None:
        raise cli_io.CliInputError("--family needs --buckets N: column families need a MERGE_ON_READ table with "
                                   "a bucket index (RFC-80)")
    schema = parse_schema_spec(args.schema)
    if args.record_key == "id" and "id" not in schema.names:
        raise cli_io.CliInputError(f"--schema has no column 'id', the default record key: name the key column "
                                   f"with --record-key COLUMN (columns: {', '.join(schema.names)})")
    import pyhudi

    table = pyhudi.create_table(
        args.path,
        schema,
        args.record_key,
        partition_fields=args.partition or (),
        table_type=args.type,
        num_buckets=args.buckets,
        ordering_field=args.ordering,
        column_families=families or None,
        options=parse_options(args.option) or None,
    )
    if args.json:
        emit_json(table.describe())
    else:
        console.print(f"created table [bold]{table.name}[/bold] at {table.path}")
    return 0


def cmd_describe(args: argparse.Namespace, console: Console) -> int:
    table = open_table(args.path)
    if args.json:
        emit_json({"table": table.describe(), "properties": table.properties})
        return 0
    summary = table.describe()
    summary["column_families"] = "; ".join(f"{k}={v}" for k, v in summary["column_families"].items()) or None
    console.print(table_view(f"table {table.name}", ("property", "value"),
                             ((k, "" if v is None else v) for k, v in summary.items())))
    console.print(table_view(f"{table.name}: .hoodie/hoodie.properties", ("key", "value"),
                             sorted(table.properties.items())))
    return 0


def cmd_write(args: argparse.Namespace, console: Console) -> int:
    """Write a Parquet/CSV/JSON file to a table with one operation; print the commit's stats."""
    table = open_table(args.path)
    data = cli_io.load_input(args.input, args.format, table.schema)
    with engine_for(args.engine) as engine, progress(f"{args.operation} of {len(data)} rows"):
        instant = getattr(table, args.operation)(data, engine=engine, options=parse_options(args.option) or None)
    result = table.last_write
    summary = {"instant": instant, "operation": args.operation, "rows": len(data),
               "rows_per_family": result.rows_per_family, "files": result.files,
               "bytes_written": result.bytes_written, "elapsed_ms": result.elapsed_ms}
    if args.json:
        emit_json(summary)
        return 0
    console.print(f"{args.operation} of {_count(len(data), 'row')} committed at instant [bold]{instant}[/bold] "
                  f"({_count(len(result.files), 'file')}, {result.bytes_written:,} bytes, {result.elapsed_ms} ms)")
    if len(result.rows_per_family) > 1 or table.column_families:  # (a plain table has one, unnamed)
        deletes: dict[str, int] = {}
        for status in result.statuses:
            deletes[status.family] = deletes.get(status.family, 0) + status.num_deletes
        for family, rows in sorted(result.rows_per_family.items()):
            counts = [_count(rows, "row")] if rows or not deletes.get(family) else []
            counts += [_count(deletes[family], "delete")] if deletes.get(family) else []
            console.print(f"  {f'family {family}' if family else 'full rows (every family)'}: {', '.join(counts)}")
    return 0


def _count(n: int, noun: str) -> str:
    """``1 row``, ``2 rows``."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def cmd_read(args: argparse.Namespace, console: Console) -> int:
    """Snapshot, time-travel, read-optimized or incremental read, printed or saved to a file."""
    if args.limit < 0:
        raise cli_io.CliInputError(f"--limit {args.limit}: expected a number of rows >= 0")
    table = open_table(args.path)
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
        sort_keys = [c.strip() for c in args.sort.split(",")]
        unknown = [c for c in sort_keys if c not in rows.column_names]
        if unknown:
            raise cli_io.CliInputError(f"--sort {args.sort!r}: unknown column {unknown[0]!r}")
        rows = rows.sort_by([(c, "ascending") for c in sort_keys])
    if args.output:
        cli_io.write_output(rows, args.output)
        console.print(f"{len(rows)} rows written to {args.output}")
    elif args.json:
        emit_json(rows.slice(0, args.limit).to_pylist())
    else:
        print_rows(console, f"{table.name}: {_count(len(rows), 'row')}", rows.slice(0, args.limit).to_pylist(),
                   rows.column_names)
        if len(rows) > args.limit:
            console.print(f"(the first {_count(args.limit, 'row')} shown; --limit N shows more)")
    return 0


def cmd_alter(args: argparse.Namespace, console: Console) -> int:
    """``ALTER TABLE ... SET/UNSET TBLPROPERTIES`` from the shell (families: RFC-80's DDL)."""
    table = open_table(args.path)
    settings = parse_options(args.set, "--set")
    if not settings and not args.unset:
        raise cli_io.CliInputError("alter needs at least one --set KEY=VALUE or --unset KEY")
    new_columns = parse_schema_spec(",".join(args.column)) if args.column else None
    _check_new_columns(table, settings, new_columns)
    instant = table.alter(set_properties=settings or None, unset_properties=args.unset or None,
                          new_columns=new_columns)
    families = {name: fam.property_value for name, fam in open_table(args.path).column_families.items()}
    if args.json:
        emit_json({"instant": instant, "column_families": families})
        return 0
    if instant:
        console.print(f"altered {table.name}: schema change committed at instant [bold]{instant}[/bold]")
    else:
        console.print(f"altered {table.name}: properties updated (no schema change)")
    for name, value in families.items():
        console.print(f"  family {name}: {value}")
    return 0


def _check_new_columns(table: Any, settings: dict[str, str], new_columns: pa.Schema | None) -> None:
    """A family that ``--set`` adds names columns the table lacks: each needs ``--column NAME:TYPE``
    (said in the command line's terms; the API's own error speaks of ``new_columns=``)."""
    from pyhudi.config.families import families_from_properties, is_family_key

    known = set(table.schema.names) | set(new_columns.names if new_columns is not None else ())
    for key, value in settings.items():
        if not is_family_key(key) or any(" " in part.strip() for part in value.split(",")):
            continue  # (SQL's typed spelling "x DOUBLE, y BIGINT; y": the API reads the types from it)
        try:
            families = families_from_properties({key: value})
        except HudiError:
            continue  # (a malformed definition: the API names what is wrong with it)
        missing = [c for family in families.values() for c in family.columns if c not in known]
        if missing:
            flags = " ".join(f"--column {c}:TYPE" for c in missing)
            raise cli_io.CliInputError(f"--set {key}={value}: new column{'s' if len(missing) > 1 else ''} "
                                       f"{', '.join(map(repr, missing))} need{'' if len(missing) > 1 else 's'} "
                                       f"a type: add {flags} (TYPE one of {', '.join(_TYPES)})")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the table commands to the ``pyhudi`` subparsers."""
    create = sub.add_parser("create", parents=[common], help="create an empty table")
    create.add_argument("path", help="the folder to create the table in (must not hold a table yet)")
    create.add_argument("--schema", required=True,
                        help=f'columns as NAME:TYPE, comma-separated, e.g. "id:string,price:double"; types: {", ".join(_TYPES)}')
    create.add_argument("--record-key", default="id", help="the record key column(s), comma-separated (default: id)")
    create.add_argument("--partition", action="append", help="a partition column (repeatable: one folder level each)")
    create.add_argument("--type", default="MERGE_ON_READ", type=str.upper, choices=["MERGE_ON_READ", "COPY_ON_WRITE"],
                        help="table type (default: MERGE_ON_READ; column families and buckets need it)")
    create.add_argument("--buckets", type=int, metavar="N",
                        help="hash the record key to N file groups (bucket index; needed by --family)")
    create.add_argument("--ordering", metavar="COLUMN",
                        help="the ordering column: of two versions of a key the greater value wins "
                             "(default: the later commit wins)")
    create.add_argument("--family", action="append", metavar="NAME=COLUMNS",
                        help='a column family: NAME="c1,c2" or NAME="c1,c2;ts" with its own ordering column ts '
                             "(repeatable; every non-key column in exactly one family)")
    create.add_argument("--option", action="append", metavar="KEY=VALUE",
                        help="a hoodie.* table property to persist, e.g. hoodie.cleaner.commits.retained=5 (repeatable)")
    create.add_argument("--json", action="store_true")
    create.set_defaults(func=cmd_create)
    describe = sub.add_parser("describe", parents=[common], help="the table's shape and hoodie.properties")
    describe.add_argument("path")
    describe.add_argument("--json", action="store_true")
    describe.set_defaults(func=cmd_describe, read_only=True)
    write = sub.add_parser("write", parents=[common], help="write a Parquet/CSV/JSON file with one operation")
    write.add_argument("path")
    write.add_argument("input", help="file of rows (for delete: the record key and partition columns)")
    write.add_argument("--operation", default="upsert", choices=WRITE_OPERATIONS, help="the write operation (default: upsert)")
    write.add_argument("--format", choices=cli_io.INPUT_FORMATS, help="default: from the input's suffix")
    write.add_argument("--engine", default="local", choices=["local", "spark"],
                       help="run the write tasks in process (default) or on Spark (local mode if no session)")
    write.add_argument("--option", action="append", metavar="KEY=VALUE",
                       help="a hoodie.* write option, e.g. hoodie.compact.inline=true (repeatable)")
    write.add_argument("--json", action="store_true")
    write.set_defaults(func=cmd_write)
    read = sub.add_parser("read", aliases=["show"], parents=[common],
                          help="read rows (snapshot, --as-of, --incremental, --read-optimized)")
    read.add_argument("path")
    read.add_argument("--columns", metavar="C1,C2", help="comma-separated columns (families not needed are not read)")
    read.add_argument("--filter", action="append", metavar="'COL OP VALUE'",
                      help='"col OP value", e.g. "price>=9.5", "c in a,b" (repeatable, ANDed)')
    read.add_argument("--as-of", metavar="TIME", help="time travel: an instant (yyyyMMddHHmmss[SSS]), a date or an ISO timestamp")
    read.add_argument("--incremental", metavar="START[:END]", help="rows changed by instants completed in (START, END]")
    read.add_argument("--read-optimized", action="store_true", help="base files only")
    read.add_argument("--meta", action="store_true", help="include the _hoodie_* columns")
    read.add_argument("--sort", metavar="C1,C2", help="comma-separated columns to sort by")
    read.add_argument("--limit", type=int, default=20, metavar="N", help="rows to print (default 20)")
    read.add_argument("--output", metavar="FILE", help="write all rows to a .parquet, .csv or .json file instead")
    read.add_argument("--json", action="store_true")
    read.set_defaults(func=cmd_read, read_only=True)
    alter = sub.add_parser("alter", parents=[common], help="set/unset table properties (column families)")
    alter.add_argument("path")
    alter.add_argument("--set", action="append", metavar="KEY=VALUE", help='KEY=VALUE, e.g. "hoodie.colFamily.geo=lat,lon" (repeatable)')
    alter.add_argument("--unset", action="append", metavar="KEY", help="a property to remove, e.g. hoodie.colFamily.geo to drop that family (repeatable)")
    alter.add_argument("--column", action="append", metavar="NAME:TYPE", help="NAME:TYPE of a new family's column (repeatable)")
    alter.add_argument("--json", action="store_true")
    alter.set_defaults(func=cmd_alter)


__all__ = ["HudiError", "WRITE_OPERATIONS", "engine_for", "parse_schema_spec", "register"]

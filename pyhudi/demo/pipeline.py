"""``pyhudi demo``: a wide-table pipeline, end to end, checked against a model.

1. **Streams into a wide table.** ``users`` has 200 columns in four families and 8 buckets
   (merge-on-read, so non-blocking concurrency control by default). After a backfill, three
   writer processes (:mod:`pyhudi.demo.writers`) ingest their own families at once; late and
   out-of-order events are resolved by each family's ordering column; the profile stream also
   deletes accounts. The snapshot read must equal the model (:mod:`pyhudi.demo.model`).
2. **Spark** (:mod:`pyhudi.demo.spark_job`): complete rows, Spark SQL, and the orders family
   alone, checked against the model's counts and sums.
3. **Services**: family compaction of the busiest family (clicks), full compaction, clean —
   the read equals the model after each.
4. **Events** (:mod:`pyhudi.demo.events`): many small appends, a point query, clustering by
   ``device_id``, the point query again: same rows, fewer files.
5. **Report and picture** (:mod:`pyhudi.demo.report`, :mod:`pyhudi.demo.picture`).

:func:`run` returns 0 when every check passed, else 1.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
from rich.console import Console

import pyhudi
from pyhudi.cli.output import human_bytes
from pyhudi.demo import data, events, picture
from pyhudi.demo.model import Commit, differences, expected_rows, late_losers, load_commit
from pyhudi.demo.report import Report, family_files, layout_rows
from pyhudi.demo.writers import run_writers

NUM_BUCKETS = 8
BUSIEST = "clicks"
POINT_DEVICE = 7


def run(workdir: Path, size: data.DemoSize, console: Console, *, spark: bool = True,
        output: Path | None = None, kept: bool = True) -> int:
    """Run the whole demo in ``workdir`` (tables ``users`` and ``events``, the streams' inbox,
    Spark's log); print the report; write the picture to ``output`` (default
    ``workdir/demo.png``). ``kept``: whether ``workdir`` outlives the run (else the report says
    how to keep it). Returns the exit status."""
    report = Report(f"pyhudi demo ({size.label} run): a wide table fed by three streams, and an events table")
    output = output or workdir / "demo.png"
    users, commits, runs = _streams(workdir, size, console, report)
    writer_of = {c.instant: f"{c.stream} writer" if c.stream != "backfill" else "backfill" for c in commits}
    expected = expected_rows(commits)
    with report.phase("snapshot read checked against the model", console):
        _check_read(report, users, expected, "after the three streams")
    layouts = [("after streams", picture.snapshot(users))]
    before = family_files(users)
    if spark:
        _spark(workdir, users, expected, console, report)
    _services(users, expected, console, report, layouts)
    live = {f: int(pc.sum(pc.is_valid(expected[o])).as_py() or 0) for f, o in data.FAMILY_ORDERING.items()}
    report.table(f"users: {len(data.SCHEMA)} columns in {len(data.FAMILIES)} families, {NUM_BUCKETS} buckets, "
                 f"{expected.num_rows:,} rows — visible files before and after compaction + clean",
                 ["family", "rows with values", "files", "bytes", "log files", "files after", "bytes after",
                  "logs after"], layout_rows(before, family_files(users), live))
    events_table, event_layouts = _events(workdir, size, console, report)
    with report.phase("picture", console):
        width, height = picture.draw_run(str(output), picture.run_timeline(users, events_table, writer_of),
                                         users.config.timezone, layouts, event_layouts)
    report.check("picture is a PNG of the expected size", png_size(output) == (width, height),
                 f"{output} ({width}x{height} px)")
    if kept:
        report.notes.append(f"tables: {workdir / 'users'}, {workdir / 'events'} "
                            f"(try: pyhudi timeline {workdir / 'users'}; pyhudi stats {workdir / 'users'})")
        if spark:
            report.notes.append(f"Spark's own log: {workdir / 'spark.log'}")
    else:
        report.notes.append("tables and Spark's log: removed after the run (pass --path DIR to keep them)")
    report.notes.append(f"picture: {output} ({width}x{height} px)")
    report.render(console)
    return 1 if report.failed else 0


def _streams(workdir: Path, size: data.DemoSize, console: Console,
             report: Report) -> tuple[Any, list[Commit], list[Any]]:
    """Backfill, then the three writer processes at once; checks that every commit succeeded."""
    inbox = workdir / "inbox"
    with report.phase("generate the streams' micro-batches", console):
        generated = data.write_inbox(inbox, size)
    with report.phase("create users + backfill (bulk_insert)", console):
        users = pyhudi.create_table(str(workdir / "users"), data.SCHEMA, data.KEY, name="users",
                                    num_buckets=NUM_BUCKETS, column_families=data.FAMILIES)
        initial = data.backfill(size)
        users.bulk_insert(initial)
        commits = [Commit(users.last_write.completion_time, "backfill", "upsert", initial, users.last_write.instant)]
    with report.phase("three writer processes, concurrently", console):
        runs = run_writers(users.path, inbox, list(data.STREAMS), workdir)
    for r in runs:
        commits += [load_commit(c["completion_time"], r.stream, Path(c["batch"]), c["instant"])
                    for c in r.commits if "error" not in c]
    errors = [f"{r.stream}: {e['type']}: {e['error']}" for r in runs for e in r.errors]
    report.check("every writer commit succeeded (non-blocking concurrency control)",
                 not errors and all(len(r.commits) == generated[r.stream]["batches"] for r in runs),
                 "; ".join(errors[:3]) or f"{sum(len(r.commits) for r in runs)} commits by 3 processes")
    overlap = _overlap(runs)
    report.check("the writers' commits interleave on the timeline", overlap >= 2,
                 f"{overlap} of {len(runs)} writers committed while another one was committing")
    lost = late_losers(commits)
    report.table("writers (one process per stream; each family resolved by its ordering column)",
                 ["stream", "families", "commits", "rows", "deletes", "late events", "superseded", "seconds"],
                 [[r.stream, ", ".join(data.STREAMS[r.stream]), len(r.commits), generated[r.stream]["rows"],
                   generated[r.stream]["deletes"], generated[r.stream]["late"], lost.get(r.stream, 0), r.seconds]
                  for r in runs])
    return users, commits, runs


def _overlap(runs: list[Any]) -> int:
    """How many writers committed while another writer was between its first and last commit."""
    spans = [(min(c["completion_time"] for c in r.commits), max(c["completion_time"] for c in r.commits))
             for r in runs if r.commits]
    return sum(1 for i, (a, b) in enumerate(spans)
               if any(j != i and a < d and c < b for j, (c, d) in enumerate(spans)))


def _check_read(report: Report, table: Any, expected: Any, moment: str) -> bool:
    diffs = differences(table.read(), expected)
    return report.check(f"read {moment} equals the model", not diffs,
                        "; ".join(diffs[:3]) or f"{expected.num_rows:,} rows x {len(data.SCHEMA)} columns")


def _spark(workdir: Path, users: Any, expected: Any, console: Console, report: Report) -> None:
    from pyhudi.demo.spark_job import quiet_session, spark_reads

    with report.phase("Spark local[2]: start", console):
        session = quiet_session(workdir)
    try:
        with report.phase("Spark: complete rows, SQL, one family", console):
            out = spark_reads(session, users.path)
    finally:
        session.stop()
    full, pruned = out["full"], out["pruned"]
    model_sum = {c: pc.sum(expected[c]).as_py() for c in ("clicks_total", "spend", "emb_00", "orders_total")}
    report.check("Spark complete rows: count and sums equal the model",
                 full["rows"] == expected.num_rows and full["clicks_total"] == model_sum["clicks_total"]
                 and _close(full["spend"], model_sum["spend"]) and _close(full["emb_00"], model_sum["emb_00"]),
                 f"{full['rows']:,} rows x {full['columns']} columns")
    with_orders = int(pc.sum(pc.is_valid(expected["orders_total"])).as_py() or 0)
    report.check("Spark pruned read of the orders family equals the model",
                 pruned["rows"] == expected.num_rows and pruned["with_orders"] == with_orders
                 and pruned["orders_total"] == model_sum["orders_total"]
                 and _close(pruned["spend"], model_sum["spend"]),
                 f"{pruned['rows']:,} rows x {pruned['columns']} columns")
    top = ", ".join(f"{r['country']} {r['users']:,}" for r in out["sql"]["top_countries"])
    report.table("Spark (local[2]) on the users table",
                 ["query", "rows", "columns", "seconds", "result"],
                 [["complete rows: count, sums", full["rows"], full["columns"], full["seconds"], ""],
                  ["SQL: users per country (top 3)", len(out["sql"]["top_countries"]), 3, out["sql"]["seconds"], top],
                  ["orders family only (pruned)", pruned["rows"], pruned["columns"], pruned["seconds"],
                   f"{with_orders:,} rows with orders"]])


def _close(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


def _services(users: Any, expected: Any, console: Console, report: Report, layouts: list) -> None:
    """Compaction of the busiest family, full compaction, clean; the read is checked after each."""
    rows = []
    with report.phase(f"compaction of the {BUSIEST} family", console):
        instant = users.compact(families=[BUSIEST])
    logs = family_files(users).get(BUSIEST, {}).get("log", 0)
    latest_logs = sum(len(s.log_files) for g in users.file_groups() for s in _latest_slices(g, BUSIEST))
    report.check(f"{BUSIEST} compaction left no log file in the {BUSIEST} family's latest slices",
                 instant is not None and latest_logs == 0, f"instant {instant}")
    _check_read(report, users, expected, f"after the {BUSIEST} compaction")
    rows.append([f"compaction ({BUSIEST})", instant, logs])
    layouts.append((f"after {BUSIEST} compaction", picture.snapshot(users)))
    with report.phase("full compaction", console):
        instant = users.compact(full=True)
    full_bases = sum(1 for g in users.file_groups() for b in g.base_files  # (the backfill wrote full rows too)
                     if b.name.family is None and b.name.instant == instant)
    report.check("full compaction wrote a complete-row base file per file group",
                 instant is not None and full_bases == NUM_BUCKETS, f"{full_bases} full-row base files")
    _check_read(report, users, expected, "after full compaction")
    rows.append(["full compaction", instant, full_bases])
    files_before = sum(v["files"] for v in family_files(users).values())
    with report.phase("clean (retain 1 commit)", console):
        instant = users.clean(options={"hoodie.cleaner.commits.retained": "1"})
    files_after = sum(v["files"] for v in family_files(users).values())
    report.check("clean deleted the replaced file versions", instant is not None and files_after < files_before,
                 f"{files_before} → {files_after} files")
    _check_read(report, users, expected, "after clean")
    rows.append(["clean", instant, files_before - files_after])
    layouts.append(("after full compaction + clean", picture.snapshot(users)))
    report.table("table services on users", ["service", "instant", "files (logs compacted / bases / deleted)"], rows)


def _latest_slices(group: Any, family: str) -> list[Any]:
    """The latest file slice of ``family`` in ``group`` (a family table's view)."""
    return [group.latest_slice(family, True)]


def _events(workdir: Path, size: data.DemoSize, console: Console, report: Report) -> tuple[Any, list]:
    with report.phase(f"events: {size.event_batches} small inserts", console):
        table, info = events.build_events(str(workdir / "events"), size)
    point = [(events.SORT_COLUMN, "=", POINT_DEVICE)]
    files_before, bytes_before = events.data_bytes(table)
    read_before = events.files_read(table, point)
    rows_before = table.read(filters=point).sort_by("event_id")
    layouts = [("before clustering", picture.snapshot(table))]
    with report.phase(f"events: clustering by {events.SORT_COLUMN}", console):
        instant, _ = events.cluster_events(table)
    files_after, bytes_after = events.data_bytes(table)
    read_after = events.files_read(table, point)
    layouts.append(("after clustering", picture.snapshot(table)))
    everything = table.read().select(data.EVENTS_SCHEMA.names).sort_by("event_id")
    report.check("events: every appended row reads back after clustering",
                 everything.equals(info["expected"].sort_by("event_id")), f"{everything.num_rows:,} rows")
    report.check("events: the point query returns the same rows before and after clustering",
                 table.read(filters=point).sort_by("event_id").equals(rows_before),
                 f"device_id = {POINT_DEVICE}: {rows_before.num_rows} rows")
    report.check("events: the point query opens fewer files after clustering",
                 instant is not None and read_after["files_read"] < read_before["files_read"],
                 f"{read_before['files_read']} → {read_after['files_read']} files")
    report.table(f"events: {info['commits']} small inserts, then clustering by {events.SORT_COLUMN} "
                 f"(instant {instant})", ["", "files", "bytes", f"files read by device_id = {POINT_DEVICE}",
                                          "file groups skipped at planning"],
                 [["before clustering", files_before, human_bytes(bytes_before), read_before["files_read"],
                   read_before["file_groups_skipped"]],
                  ["after clustering", files_after, human_bytes(bytes_after), read_after["files_read"],
                   read_after["file_groups_skipped"]]])
    return table, layouts


def png_size(path: Path) -> tuple[int, int] | None:
    """Width and height from a PNG's header, or None when the file is not a PNG."""
    try:
        head = Path(path).read_bytes()[:24]
    except OSError:
        return None
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])

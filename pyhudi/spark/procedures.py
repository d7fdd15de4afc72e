"""``CALL <procedure>(args)``: table procedures, looked up by name in a registry.

Hudi exposes table services to SQL as procedures (``CALL run_compaction(table => 't')``). pyhudi
keeps a registry, :data:`PROCEDURES`, mapping a procedure name to a function; later table services
(compaction, clustering, clean) register theirs with :func:`register_procedure`. A procedure
receives the :class:`~pyhudi.spark.sql.SqlSession` and its arguments — positional ones in order,
named ones (``name => value``) by name, as Python values — and returns a pyarrow Table, which the
front end turns into the statement's DataFrame (None: no rows).

Built in: ``show_timeline(table [, limit])`` — the instants of a pyhudi table, newest first.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import pyarrow as pa
from sqlglot import exp

from pyhudi.spark.sql import DIALECT, SqlError, SqlSession, literal_value, parse_statement

Procedure = Callable[..., "pa.Table | None"]
PROCEDURES: dict[str, Procedure] = {}
_NAME = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\(")


def register_procedure(name: str, function: Procedure) -> None:
    """Make ``CALL <name>(...)`` run ``function(session, *args, **kwargs)`` (names are case-insensitive)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise SqlError(f"invalid procedure name {name!r}")
    PROCEDURES[name.lower()] = function


def call(session: SqlSession, text: str) -> Any:
    """Run ``CALL`` text (what follows the keyword): ``name(arg, ..., key => value, ...)``."""
    match = _NAME.match(text)
    if match is None or not text.rstrip().endswith(")"):
        raise SqlError(f"CALL {text.strip()!r}: expected CALL <procedure>(<arguments>)")
    name = match.group(1).lower().rsplit(".", 1)[-1]  # system.show_timeline / pyhudi.show_timeline
    function = PROCEDURES.get(name)
    if function is None:
        known = ", ".join(sorted(PROCEDURES)) or "none"
        raise SqlError(f"unknown procedure {match.group(1)!r} (registered procedures: {known})")
    args, kwargs = _arguments(text[match.end() - 1:].strip(), name)
    try:
        result = function(session, *args, **kwargs)
    except TypeError as exc:
        raise SqlError(f"CALL {name}: {exc}") from None
    table = result if result is not None else pa.table({})
    return session.backend.result(table)


def _arguments(parenthesised: str, name: str) -> tuple[list[Any], dict[str, Any]]:
    tree = parse_statement(f"SELECT __pyhudi_call{parenthesised}")
    node = tree.expressions[0] if isinstance(tree, exp.Select) and tree.expressions else None
    if not isinstance(node, exp.Anonymous):
        raise SqlError(f"CALL {name}: cannot parse the arguments {parenthesised!r}")
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for arg in node.expressions:
        if isinstance(arg, (exp.Kwarg, exp.PropertyEQ)):
            key = arg.this.name.lower()
            if key in kwargs:
                raise SqlError(f"CALL {name}: argument {key!r} is given twice")
            kwargs[key] = literal_value(arg.expression, f"argument {key!r} of {name}")
        else:
            if kwargs:
                raise SqlError(f"CALL {name}: positional arguments must come before named ones")
            args.append(literal_value(arg, f"argument {len(args) + 1} of {name}"))
    return args, kwargs


def table_argument(session: SqlSession, table: str) -> Any:
    """The pyhudi Table a procedure's ``table`` argument names (a catalog name or a path)."""
    import pyhudi

    if not isinstance(table, str) or not table:
        raise SqlError("procedure argument 'table' must be a table name or path")
    if "/" in table or ":" in table:
        return pyhudi.open_table(table)
    ref = session.catalog.resolve(exp.to_table(table, dialect=DIALECT))
    if ref.path is None:
        raise SqlError(f"{table!r} is not a pyhudi table (create it with CREATE TABLE ... USING pyhudi)")
    return pyhudi.open_table(ref.path)


def show_timeline(session: SqlSession, table: str, limit: int | None = None) -> pa.Table:
    """The table's instants, newest requested first: time, action, state, completion time."""
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise SqlError(f"show_timeline: limit must be a non-negative integer, got {limit!r}")
    instants = list(reversed(table_argument(session, table).timeline))
    if limit is not None:
        instants = instants[:limit]
    return pa.table({
        "instant_time": pa.array([i.requested_time for i in instants], pa.string()),
        "action": pa.array([str(i.action) for i in instants], pa.string()),
        "state": pa.array([i.state.value for i in instants], pa.string()),
        "completion_time": pa.array([i.completion_time for i in instants], pa.string()),
    })


def run_compaction(session: SqlSession, table: str, op: str = "scheduleandexecute", timestamp: str | None = None,
                   families: str | None = None, full: bool = False) -> pa.Table:
    """Hudi's ``run_compaction``: ``op`` = 'schedule' (plan only), 'run' / 'execute' (the pending
    compaction at ``timestamp``, or every pending one), or 'scheduleAndExecute' (default).
    Operations run as Spark tasks (the same task functions as the local engine)."""
    from pyhudi.services.compaction import pending_compactions

    target = table_argument(session, table)
    engine = _engine()
    mode = str(op).lower()
    names = [f.strip() for f in families.split(",")] if families else None
    done: list[tuple[str, str]] = []
    if mode == "schedule":
        instant = target.schedule_compaction(names, bool(full))
        done = [] if instant is None else [(instant, "REQUESTED")]
    elif mode in ("run", "execute"):
        pending = [str(timestamp)] if timestamp else sorted(pending_compactions(target.active_timeline()))
        done = [(target.run_compaction(i, engine=engine), "COMPLETED") for i in pending]
    elif mode == "scheduleandexecute":
        instant = target.schedule_compaction(names, bool(full))
        done = [] if instant is None else [(target.run_compaction(instant, engine=engine), "COMPLETED")]
    else:
        raise SqlError(f"run_compaction: op must be 'schedule', 'run' or 'scheduleAndExecute', got {op!r}")
    return pa.table({"instant": pa.array([i for i, _ in done], pa.string()),
                     "state": pa.array([s for _, s in done], pa.string())})


def run_clean(session: SqlSession, table: str, op: str = "scheduleandexecute", timestamp: str | None = None,
              options: str | None = None) -> pa.Table:
    """Hudi's ``run_clean``: ``op`` = 'schedule' (plan only), 'run' / 'execute' (the pending clean
    at ``timestamp``), or 'scheduleAndExecute' (default: pending cleans first, then a new one).
    ``options``: ``'hoodie.cleaner.commits.retained=5,...'``. One row per clean: its instant, the
    files it deletes, its state (no row: nothing to clean)."""
    target = table_argument(session, table)
    settings = dict(kv.split("=", 1) for kv in str(options).split(",") if "=" in kv) if options else {}
    mode = str(op).lower()
    if mode == "schedule":
        instant, state = target.schedule_clean(settings), "REQUESTED"
    elif mode in ("run", "execute"):
        if not timestamp:
            raise SqlError("run_clean: op 'run' needs the timestamp of a pending clean")
        instant, state = target.run_clean(str(timestamp), settings), "COMPLETED"
    elif mode == "scheduleandexecute":
        instant, state = target.clean(settings), "COMPLETED"
    else:
        raise SqlError(f"run_clean: op must be 'schedule', 'run' or 'scheduleAndExecute', got {op!r}")
    done = [] if instant is None else [instant]
    timeline = target.active_timeline()
    counts = [sum(len(v) for v in timeline.read_metadata(timeline.get(i).as_requested()).files_to_delete().values())
              for i in done]
    return pa.table({"instant": pa.array(done, pa.string()), "total_files_deleted": pa.array(counts, pa.int64()),
                     "state": pa.array([state] * len(done), pa.string())})


def run_clustering(session: SqlSession, table: str, op: str = "scheduleandexecute", timestamp: str | None = None,
                   order: str | None = None, options: str | None = None) -> pa.Table:
    """Hudi's ``run_clustering``: ``op`` = 'schedule' (plan only), 'run' / 'execute' (the pending
    clustering at ``timestamp``, or every pending one), or 'scheduleAndExecute' (default).
    ``order``: the sort columns (``'a,b'``); ``options``: ``'hoodie.layout.optimize.strategy=z-order,...'``.
    Groups run as Spark tasks when a session is active."""
    from pyhudi.services.clustering import pending_clusterings

    target = table_argument(session, table)
    engine = _engine()
    settings = dict(kv.split("=", 1) for kv in str(options).split(",") if "=" in kv) if options else {}
    mode = str(op).lower()
    done: list[tuple[str, str]] = []
    if mode == "schedule":
        instant = target.schedule_clustering(order, settings)
        done = [] if instant is None else [(instant, "REQUESTED")]
    elif mode in ("run", "execute"):
        pending = [str(timestamp)] if timestamp else sorted(pending_clusterings(target.active_timeline()))
        done = [(target.run_clustering(i, engine=engine, options=settings), "COMPLETED") for i in pending]
    elif mode == "scheduleandexecute":
        instant = target.schedule_clustering(order, settings)
        done = [] if instant is None else [(target.run_clustering(instant, engine=engine, options=settings),
                                            "COMPLETED")]
    else:
        raise SqlError(f"run_clustering: op must be 'schedule', 'run' or 'scheduleAndExecute', got {op!r}")
    return pa.table({"instant": pa.array([i for i, _ in done], pa.string()),
                     "state": pa.array([s for _, s in done], pa.string())})


def _engine() -> str:
    """Spark when a Spark session runs in this process (the SQL front's usual case), else local."""
    from pyspark.sql import SparkSession

    return "spark" if SparkSession.getActiveSession() is not None else "local"


register_procedure("show_timeline", show_timeline)
register_procedure("run_compaction", run_compaction)
register_procedure("run_clean", run_clean)
register_procedure("run_clustering", run_clustering)

__all__ = ["PROCEDURES", "call", "register_procedure", "run_clean", "run_clustering", "run_compaction", "show_timeline", "table_argument"]

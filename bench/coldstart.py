"""Cold start (issue 15 item 3): a fresh process imports pyhudi, opens a table, reads 2 columns.

Each variant is a fresh interpreter, timed from the parent (wall: ``subprocess.run``; CPU: the
children's user + system time from ``getrusage``). First the read as a script writes it
(``import pyhudi``, open, read), then an instrumented pyhudi child that times its own split, in
turns with:

- the CLI, ``pyhudi read PATH --columns c0,c1`` (rich's tables included);
- the floor no pyhudi code is part of: ``import pyarrow`` (a local pyhudi read loads of pyarrow
  only its core and the Cython ``pyarrow._parquet``, :mod:`pyhudi.storage.parquet`;
  ``pyarrow.compute`` loads only when a read calls a kernel, :mod:`pyhudi.lazy`), beside
  ``import pyarrow._parquet``, ``import pyarrow, pyarrow.parquet`` (the floor of earlier runs,
  when reads went through ``pyarrow.parquet`` and ``pyarrow.fs``) and the bare interpreter.

The children run with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` removed) after one
untimed warm-up, as an installed package runs; the pyhudi child also reports its own split
and which heavy modules it loaded. It imports the floor first (``import pyhudi`` would import
it at once anyway) and times it, then ``import pyhudi``, the open and the read: what pyhudi adds
over the floor in the same process, wall and CPU (``added_s``, ``added_cpu_s``), which
:func:`added_cost` reports as a comparison of its own.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

from bench.harness import Comparison, Variant, compare, single

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAVY = ("pandas", "pyspark", "rich", "hypothesis", "pyarrow.dataset", "pyarrow.compute", "pyarrow.fs",
         "pyarrow.parquet")

_PYHUDI = f"""
import sys, time, json
wall, cpu = time.perf_counter, time.process_time
t0, c0 = wall(), cpu()
import pyarrow
t1, c1 = wall(), cpu()
import pyhudi
t2 = wall()
table = pyhudi.open_table(sys.argv[1])
t3 = wall()
rows = table.read(columns=["c0", "c1"])
t4, c4 = wall(), cpu()
print(json.dumps({{"floor_s": t1 - t0, "floor_cpu_s": c1 - c0, "import_s": t2 - t1, "open_s": t3 - t2,
                  "read_s": t4 - t3, "added_s": t4 - t1, "added_cpu_s": c4 - c1, "rows": rows.num_rows,
                  "loaded": ",".join(m for m in {HEAVY!r} if m in sys.modules) or "-"}}))
"""
_SCRIPT = "import sys, pyhudi; pyhudi.open_table(sys.argv[1]).read(columns=['c0', 'c1'])"
"""The cold read as a script writes it: ``import pyhudi`` first, which loads pyarrow with the
cyclic garbage collector paused (:mod:`pyhudi.gc_freeze`); the instrumented child (``_PYHUDI``)
imports pyarrow itself first, to time the floor, and so pays pyarrow's collections."""
_FLOOR = "import pyarrow"
_FLOORS = {"import pyarrow._parquet": "import pyarrow._parquet",
           "import pyarrow, pyarrow.parquet (the floor of earlier runs)": "import pyarrow, pyarrow.parquet"}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _child(args: list[str]) -> str:
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=_env())
    if done.returncode != 0:
        raise RuntimeError(f"cold-start child {args[:2]} failed: {done.stderr.strip()[-500:]}")
    return done.stdout


_READ_TABLE = "import sys, pyarrow.parquet as pq; pq.read_table(sys.argv[1], columns=['c0', 'c1'])"
_PARQUET_FILE = "import sys, pyarrow.parquet as pq; pq.ParquetFile(sys.argv[1]).read(columns=['c0', 'c1'])"
READ_TABLE = "pyarrow: pq.read_table(2 columns) of a compacted copy"
PARQUET_FILE = "pyarrow: pq.ParquetFile(compacted copy).read(2 columns)"
PYHUDI = "pyhudi: import + open + read 2 columns"
SCRIPT = "pyhudi as a script: import pyhudi; open; read 2 columns"
PYHUDI_OTHER = "pyhudi, per-family base files (bulk insert, full.row=false; + update)"


def measure(table_path: str, repeat: int, splits: list[dict] | None = None,
            compacted: str | None = None, other_path: str | None = None) -> Comparison:
    """The cold-start comparison on ``table_path`` (a Scenario W table: written with default
    options by ``python -m bench cold``, an insert, whose full-row log files a read takes the
    family's columns from, then a one-family update); each pyhudi child's own split is appended
    to ``splits`` (for :func:`added_cost`). With ``compacted`` (one Parquet file of the same
    rows), pyarrow's own cold reads of its 2 columns run in turns too: ``pq.read_table`` (which
    loads pyarrow's datasets, compute and pandas) and the leanest public path,
    ``pq.ParquetFile(...).read``. With ``other_path`` (the same rows in one base file per family,
    the layout of the earlier passes, then the same update), the same cold read of that table
    runs in turns too."""
    pyhudi_args = ["-c", _PYHUDI, table_path]
    cli_args = ["-m", "pyhudi.cli", "read", table_path, "--columns", "c0,c1", "--limit", "2"]

    def pyhudi_run(_: object) -> dict[str, object]:
        out = json.loads(_child(pyhudi_args).strip().splitlines()[-1])
        if splits is not None:
            splits.append(out)
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}

    baselines = {} if compacted is None else {READ_TABLE: ["-c", _READ_TABLE, compacted],
                                               PARQUET_FILE: ["-c", _PARQUET_FILE, compacted]}
    defaults = {} if other_path is None else {PYHUDI_OTHER: ["-c", _PYHUDI, other_path]}
    script_args = ["-c", _SCRIPT, table_path]
    for args in (script_args, pyhudi_args, cli_args, ["-c", _FLOOR], *(["-c", code] for code in _FLOORS.values()),
                 *baselines.values(), *defaults.values()):  # warm-up
        _child(args)

    def floor(code: str):
        return lambda _: _child(["-c", code]) and None

    def child(args: list[str]):
        return lambda _: _child(args) and None

    variants = [
        Variant(SCRIPT, child(script_args)),
        Variant(PYHUDI, pyhudi_run),
        *(Variant(name, child(args)) for name, args in defaults.items()),
        Variant("CLI: pyhudi read --columns c0,c1", lambda _: _child(cli_args) and None),
        *(Variant(name, child(args)) for name, args in baselines.items()),
        Variant("python: -c pass", floor("pass")),
        *(Variant(name, floor(code)) for name, code in _FLOORS.items()),
        Variant("floor: import pyarrow", floor(_FLOOR)),
    ]
    return compare("cold start: fresh process, read 2 columns", variants, repeat, target="pyhudi <= 0.1 s wall",
                   note="subprocesses; ratio = pyhudi / pyarrow import floor", cpu_clock=_children_cpu)


def against_pyarrow(measured: Comparison) -> Comparison:
    """pyhudi's cold read against pyarrow's cold reads of a compacted copy, from the same run
    (:func:`measure` with ``compacted``): ratio to ``pq.read_table``."""
    table = measured.variants
    values = {name: {"wall": table[name]["wall"], "cpu": table[name]["cpu"]}
              for name in (SCRIPT, PYHUDI, PYHUDI_OTHER, PARQUET_FILE, READ_TABLE) if name in table}
    return single("cold start: pyhudi against pyarrow's own cold reads", values,
                  note="fresh processes, same run; ratio = pyhudi / pq.read_table of a compacted copy")


def added_cost(splits: list[dict]) -> Comparison:
    """What pyhudi adds over the floor, timed inside each pyhudi child: ``import pyhudi`` after
    ``import pyarrow``, the open and the read (wall and CPU of that process;
    the read's CPU counts its threads), beside the floor as timed in the same children."""
    values = {
        "pyhudi over the floor: import + open + read": {
            "wall": [s["added_s"] for s in splits], "cpu": [s["added_cpu_s"] for s in splits],
            "metrics": {k: round(min(s[k] for s in splits), 4) for k in ("import_s", "open_s", "read_s")}},
        "floor inside the child: import pyarrow": {
            "wall": [s["floor_s"] for s in splits], "cpu": [s["floor_cpu_s"] for s in splits]},
    }
    return single("cold start: pyhudi's own cost, inside the child", values,
                  note="ratio = pyhudi's addition / the floor; metrics: fastest of the runs")

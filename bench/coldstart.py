"""Cold start (issue 15 item 3): a fresh process imports pyhudi, opens a table, reads 2 columns.

Each variant is a fresh interpreter, timed from the parent (wall: ``subprocess.run``; CPU: the
children's user + system time from ``getrusage``), in turns with:

- the CLI, ``pyhudi read PATH --columns c0,c1`` (rich's tables included);
- the floor no pyhudi code is part of: ``import pyarrow, pyarrow.parquet`` (what a pyhudi read
  of base files and log blocks loads of pyarrow: ``pyarrow.compute`` loads only when a read
  calls a kernel, :mod:`pyhudi.lazy`), the same with ``pyarrow.compute`` (the floor of earlier
  runs), and the bare interpreter.

The children run with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` removed) after one
untimed warm-up, as an installed package runs; the pyhudi child also reports its own split
(import / open / read) and which heavy modules it loaded.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

from bench.harness import Comparison, Variant, compare

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAVY = ("pandas", "pyspark", "rich", "hypothesis", "pyarrow.dataset", "pyarrow.compute")

_PYHUDI = f"""
import sys, time, json
t0 = time.perf_counter()
import pyhudi
t1 = time.perf_counter()
table = pyhudi.open_table(sys.argv[1])
t2 = time.perf_counter()
rows = table.read(columns=["c0", "c1"])
t3 = time.perf_counter()
print(json.dumps({{"import_s": t1 - t0, "open_s": t2 - t1, "read_s": t3 - t2, "rows": rows.num_rows,
                  "loaded": ",".join(m for m in {HEAVY!r} if m in sys.modules) or "-"}}))
"""
_FLOOR = "import pyarrow, pyarrow.parquet"
_FLOOR_COMPUTE = "import pyarrow, pyarrow.compute, pyarrow.fs, pyarrow.parquet"


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


def measure(table_path: str, repeat: int) -> Comparison:
    """The cold-start comparison on ``table_path`` (a Scenario W table)."""
    pyhudi_args = ["-c", _PYHUDI, table_path]
    cli_args = ["-m", "pyhudi.cli", "read", table_path, "--columns", "c0,c1", "--limit", "2"]

    def pyhudi_run(_: object) -> dict[str, object]:
        out = json.loads(_child(pyhudi_args).strip().splitlines()[-1])
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}

    for args in (pyhudi_args, cli_args, ["-c", _FLOOR], ["-c", _FLOOR_COMPUTE]):  # warm-up: bytecode caches
        _child(args)
    variants = [
        Variant("pyhudi: import + open + read 2 columns", pyhudi_run),
        Variant("CLI: pyhudi read --columns c0,c1", lambda _: _child(cli_args) and None),
        Variant("python: -c pass", lambda _: _child(["-c", "pass"]) and None),
        Variant("import pyarrow (+compute, fs, parquet)", lambda _: _child(["-c", _FLOOR_COMPUTE]) and None),
        Variant("floor: import pyarrow (+parquet)", lambda _: _child(["-c", _FLOOR]) and None),
    ]
    return compare("cold start: fresh process, read 2 columns", variants, repeat, target="pyhudi <= 0.1 s wall",
                   note="subprocesses; ratio = pyhudi / pyarrow import floor", cpu_clock=_children_cpu)

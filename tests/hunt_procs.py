"""Helper processes for tests/test_hunt_*.py: a table-service loop and a reader loop that run beside
writer processes (tests/concurrency_writer.py) until a stop file appears.

Run as ``python tests/hunt_procs.py '<json args>'``. Args: ``mode`` ("services" or "reader"),
``path``, ``go_file`` (wait for it, after touching ``<go_file>.ready.<pid>``), ``stop_file``,
``seed``, ``actions`` (services: names among compact_family, compact_full, compact, clean,
archive), ``options`` (passed to every call; none by default).

Prints one JSON line per step: services ``{"action", "result"}`` or ``{"action", "error", "type"}``;
reader ``{"kind": "snapshot", "rows": [...]}``, ``{"kind": "as_of", "as_of", "rows"}``,
``{"kind": "incremental", "start", "end", "rows"}`` or
``{"kind": ..., "error", "type"}``.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_helpers import wait_for_go  # noqa: E402


def _rows(table) -> list:
    return [list(r.values()) for r in table.sort_by("id").to_pylist()]


def services(args: dict) -> None:
    import pyhudi
    from pyhudi.errors import HudiError

    table = pyhudi.open_table(args["path"])
    table.active_timeline()
    rng = random.Random(args["seed"])
    families = sorted(table.column_families)
    options = args.get("options")
    wait_for_go(args["go_file"])
    step = 0
    while not os.path.exists(args["stop_file"]) or step < args.get("min_steps", 0):
        action = rng.choice(args["actions"])
        try:
            if action == "compact_family":
                result = table.compact(families=[rng.choice(families)], options=options)
            elif action == "compact_full":
                result = table.compact(full=True, options=options)
            elif action == "compact":
                result = table.compact(options=options)
            elif action == "cluster":
                result = table.cluster(options=options)
            elif action == "clean":
                result = table.clean(options=options)
            elif action == "archive":
                result = table.archive(options=options)
            else:
                raise SystemExit(f"unknown action {action}")
        except HudiError as exc:
            traceback.print_exc()
            print(json.dumps({"action": action, "error": str(exc), "type": type(exc).__name__}), flush=True)
        else:
            print(json.dumps({"action": action, "result": result}), flush=True)
        step += 1
        time.sleep(args.get("pause_ms", 0) / 1000)


def reader(args: dict) -> None:
    import pyhudi
    from pyhudi.errors import HudiError
    from pyhudi.timeline.timeline import COMMIT_ACTIONS

    table = pyhudi.open_table(args["path"])
    table.active_timeline()
    rng = random.Random(args["seed"])
    wait_for_go(args["go_file"])
    while not os.path.exists(args["stop_file"]):
        kind = rng.choice(["snapshot", "as_of", "incremental"])
        time.sleep(args.get("pause_ms", 0) / 1000)
        out: dict = {"kind": kind}
        try:
            if kind == "snapshot":
                out["rows"] = _rows(table.read())
            else:
                done = [i for i in table.active_timeline().completed()
                        if i.action in COMMIT_ACTIONS and not i.is_compaction and i.completion_time]
                if len(done) < 2:
                    continue
                if kind == "as_of":
                    as_of = rng.choice(done).completion_time
                    out["as_of"] = as_of
                    out["rows"] = _rows(table.read(as_of=as_of))
                else:
                    start, end = sorted(rng.sample([i.completion_time for i in done], 2))
                    out.update(start=start, end=end)
                    out["rows"] = _rows(table.read_incremental(start, end))
        except HudiError as exc:
            traceback.print_exc()
            out.update(error=str(exc), type=type(exc).__name__)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    arguments = json.loads(sys.argv[1])
    {"services": services, "reader": reader}[arguments["mode"]](arguments)

"""A writer process for tests/test_concurrency.py.

Run as ``python tests/concurrency_writer.py '<json args>'``. Args: ``path``, ``go_file`` (wait for
it, after touching ``<go_file>.ready.<pid>``), ``commits`` (each ``{"ids": [...], "columns": [...],
"tag": n, "delay_ms": d}`` — sleep ``d`` ms, then upsert those columns for those ids, values from
:func:`write_helpers.value_of`; with ``"delete": true`` delete those ids instead), ``options`` (write options; none by default).

Prints one JSON line per commit: ``{"tag", "instant", "completion_time"}`` on success, or
``{"tag", "error", "type"}`` when the write raised a pyhudi error (the writer goes on).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from write_helpers import make_rows, wait_for_go  # noqa: E402


def main(args: dict) -> int:
    import pyhudi
    from pyhudi.errors import HudiError

    table = pyhudi.open_table(args["path"])
    table.active_timeline()  # warm up imports and the first listing before signalling readiness
    wait_for_go(args["go_file"])
    for commit in args["commits"]:
        time.sleep(commit.get("delay_ms", 0) / 1000)
        rows = make_rows(table.schema, commit["columns"], commit["ids"], commit["tag"])
        try:
            if commit.get("delete"):
                table.delete(rows.select(["id"]), options=args.get("options"))
            else:
                table.upsert(rows, options=args.get("options"))
        except HudiError as exc:
            import traceback

            traceback.print_exc()  # (stderr: shown when a test fails)
            print(json.dumps({"tag": commit["tag"], "error": str(exc), "type": type(exc).__name__}), flush=True)
            continue
        result = table.last_write
        print(json.dumps({"tag": commit["tag"], "instant": result.instant,
                          "completion_time": result.completion_time}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))

"""A process that dies (``os._exit``, as SIGKILL: no cleanup, no finally) at a chosen point of an
operation on a table, for tests/test_hunt_kills.py.

Run as ``python tests/hunt_kill.py '<json args>'``. Args: ``path``; ``op`` ("upsert", "compact",
"compact_full", "clean", "archive", "rollback_failed"); ``ids``/``columns``/``tag`` (upsert);
``point``: ``[module, "Attr" or "Class.attr", "before" | "after", n]`` — die before (or right
after) the n-th call (1-based) of that function. Exits 9 when it died there, 0 when the operation
ended without reaching the point.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def install(module_name: str, attr: str, when: str, nth: int) -> None:
    module = importlib.import_module(module_name)
    owner = module
    *path, name = attr.split(".")
    for part in path:
        owner = getattr(owner, part)
    original = getattr(owner, name)
    calls = [0]
    lock = threading.Lock()  # (tasks run on threads)
    is_static = isinstance(owner, type) and isinstance(owner.__dict__.get(name), staticmethod)

    def dying(*args, **kwargs):
        with lock:
            calls[0] += 1
            mine = calls[0]
        if mine == nth and when == "before":
            os._exit(9)
        out = original(*args, **kwargs)
        if mine == nth:
            os._exit(9)
        return out

    setattr(owner, name, staticmethod(dying) if is_static else dying)


def main(args: dict) -> int:
    import pyhudi
    from write_helpers import make_rows

    table = pyhudi.open_table(args["path"])
    module_name, attr, when, nth = args["point"]
    install(module_name, attr, when, nth)
    op = args["op"]
    if op == "upsert":
        table.upsert(make_rows(table.schema, args["columns"], args["ids"], args["tag"]), options=args.get("options"))
    elif op == "compact":
        table.compact(families=args.get("families"))
    elif op == "compact_full":
        table.compact(full=True)
    elif op == "clean":
        table.clean()
    elif op == "archive":
        table.archive()
    elif op == "rollback_failed":
        from pyhudi.write.client import WriteClient

        client = WriteClient(table)
        txn = client.begin("upsert")  # (rolls back the failed writes first)
        client.abort(txn)
    else:
        raise SystemExit(f"unknown op {op}")
    return 0


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))

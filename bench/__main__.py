"""``python -m bench <scenario> [--rows N] [--repeat K] [--tiny]``: run, print, save JSON and PNG.

Scenarios: ``w`` (Scenario W: write, partial update, full and pruned reads, cold start),
``rfc80`` (column-family claims), ``scaling`` (10x rows), ``spark`` (Spark vs Spark's Parquet),
``peers`` (hudi-rs; others when installed), ``clustering`` (500 small files clustered: the
rewrite against pyarrow, data skipping and full scans after it), ``pruned`` (2-column reads, warm and in
fresh processes, against ``pq.read_table``), ``cold`` (the cold start alone, more rounds),
``commit`` (a 1,000-row upsert's fixed cost, young and after ``--instants`` of history),
``partitions`` (a default table of 300 date partitions: an upsert over all of them, a read of
2 of them, against pyarrow) and
``all`` (all but ``cold``). Variants of a comparison run in turns;
each prints median wall and CPU seconds and the ratio first / last (the baseline). The run is
saved as ``results/<scenario>-<timestamp>.json`` and ``.png`` (the plot needs matplotlib:
``pip install '.[bench]'``). ``--tiny`` runs at a CI size (every scenario in well under a minute).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from typing import Any

if __package__ in (None, ""):  # `python bench/__main__.py`: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import plot  # noqa: E402
from bench.common import Context  # noqa: E402
from bench.harness import Comparison, load_average, print_comparison  # noqa: E402

# scenario -> (default rows, tiny rows, module name); modules load on use (spark is heavy)
SCENARIOS: dict[str, tuple[int, int, str]] = {
    "w": (200_000, 2_000, "bench.sc_w"),
    "rfc80": (200_000, 2_000, "bench.sc_rfc80"),
    "scaling": (100_000, 1_000, "bench.sc_scaling"),
    "spark": (1_000_000, 2_000, "bench.sc_spark"),
    "peers": (200_000, 2_000, "bench.sc_peers"),
    "clustering": (2_000_000, 20_000, "bench.sc_clustering"),
    "pruned": (200_000, 2_000, "bench.sc_pruned"),
    "cold": (200_000, 2_000, "bench.sc_cold"),  # (cold start alone; `w` includes it, `all` does not repeat it)
    "commit": (1_000, 1_000, "bench.sc_commit"),  # (rows of each upsert)
    "partitions": (200_000, 2_000, "bench.sc_partitions"),
}
ALL = ["w", "rfc80", "scaling", "spark", "peers", "clustering", "pruned", "commit", "partitions"]


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("scenario", choices=[*SCENARIOS, "all"])
    parser.add_argument("--rows", type=int, help="rows of Scenario W (default per scenario; scaling uses rows and 10x)")
    parser.add_argument("--repeat", type=int, help="rounds of each comparison (default 3, 1 with --tiny)")
    parser.add_argument("--tiny", action="store_true", help="CI size: few rows, one round")
    parser.add_argument("--instants", type=int,
                        help="commit: instants of history of the long-lived table (default 2000, 30 with --tiny)")
    parser.add_argument("--out", default="results", help="directory of the JSON and PNG (default results/)")
    return parser.parse_args(argv)


def run_scenario(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """One scenario in a scratch directory: its comparisons printed and returned as JSON."""
    import importlib

    default_rows, tiny_rows, module_name = SCENARIOS[name]
    rows = args.rows or (tiny_rows if args.tiny else default_rows)
    repeat = args.repeat or (1 if args.tiny else 3)
    module = importlib.import_module(module_name)
    print(f"== {name}: {rows} rows, {repeat} round(s), load {load_average()}")
    skipped = module.available() if hasattr(module, "available") and callable(module.available) else None
    if isinstance(skipped, str):
        print(f"  skipped: {skipped}")
        return {"rows": rows, "repeat": repeat, "seconds": 0.0, "skipped": skipped, "comparisons": []}
    work = tempfile.mkdtemp(prefix=f"pyhudi-bench-{name}-")
    start = time.perf_counter()
    try:
        results: list[Comparison] = module.run(Context(rows, repeat, args.tiny, work, args.instants))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for result in results:
        print_comparison(result)
    return {"rows": rows, "repeat": repeat, "seconds": round(time.perf_counter() - start, 2), "skipped": None,
            "comparisons": [r.to_json() for r in results]}


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    names = ALL if args.scenario == "all" else [args.scenario]
    command = " ".join(sys.argv[1:] if argv is None else argv)
    report: dict[str, Any] = {
        "command": command, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S"), "tiny": args.tiny,
        "load_before": load_average(), "machine": _machine(), "scenarios": {}}
    for name in names:
        report["scenarios"][name] = run_scenario(name, args)
    report["load_after"] = load_average()
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"{args.scenario}-{time.strftime('%Y%m%d-%H%M%S')}")
    with open(f"{stem}.json", "w") as f:
        json.dump(report, f, indent=1)
    print(f"wrote {stem}.json")
    if plot.write_png(report, f"{stem}.png"):
        print(f"wrote {stem}.png")
    return 0


def _machine() -> dict[str, Any]:
    import pyarrow

    return {"cpus": os.cpu_count(), "python": platform.python_version(), "pyarrow": pyarrow.__version__,
            "platform": platform.platform()}

if __name__ == "__main__":
    raise SystemExit(main())

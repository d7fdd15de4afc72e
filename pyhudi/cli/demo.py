"""``pyhudi demo``: the wide-table pipeline of :mod:`pyhudi.demo` (README's main command).

``pyhudi demo [--path DIR] [--small] [--no-spark] [--output demo.png]``: runs in a temporary
folder (removed afterwards unless ``--keep``) or in ``DIR`` (kept); exit status 0 when every
check passed, 1 when one failed. ``PYHUDI_DEMO_SIZE=small`` is the same as ``--small``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyhudi.cli.io import CliInputError

if TYPE_CHECKING:
    from rich.console import Console  # (rich loads when a command prints: pyhudi.cli.output)

SIZE_ENV = "PYHUDI_DEMO_SIZE"


def cmd_demo(args: argparse.Namespace, console: Console) -> int:
    """Run the demo pipeline; its report goes to stdout."""
    from pyhudi.demo import data, pipeline

    size_name = "small" if args.small else os.environ.get(SIZE_ENV, "full").lower()
    if size_name not in ("small", "full"):
        raise CliInputError(f"{SIZE_ENV}={size_name!r}: expected 'small' or 'full'")
    size = data.SMALL if size_name == "small" else data.FULL
    if args.output and not args.output.lower().endswith(".png"):
        raise CliInputError(f"--output {args.output!r}: the picture is a PNG; name the file *.png")
    owned = args.path is None
    if owned:
        workdir = Path(tempfile.mkdtemp(prefix="pyhudi-demo-"))
    else:
        workdir = Path(args.path)
        if workdir.exists() and any(workdir.iterdir()):
            raise CliInputError(f"--path {args.path!r} is not empty: the demo needs an empty or new folder")
        workdir.mkdir(parents=True, exist_ok=True)
    output = Path(args.output) if args.output else (Path("demo.png") if owned else workdir / "demo.png")
    try:
        return pipeline.run(workdir, size, console, spark=args.spark, output=output.resolve(),
                            kept=not owned or args.keep)
    finally:
        if owned and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    demo = sub.add_parser("demo", parents=[common], help="run the demo: a wide-table pipeline, checked end to end")
    demo.add_argument("--path", help="an empty folder to run in (kept: the tables, the streams' inbox, Spark's log)")
    demo.add_argument("--keep", action="store_true", help="keep the temporary folder")
    demo.add_argument("--small", action="store_true", help=f"a reduced run (as {SIZE_ENV}=small)")
    demo.add_argument("--no-spark", dest="spark", action="store_false", help="skip the Spark job")
    demo.add_argument("-o", "--output", help="the picture (default: demo.png here, or in --path)")
    demo.set_defaults(func=cmd_demo)

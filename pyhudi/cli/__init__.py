"""The ``pyhudi`` command line: operate Hudi tables the way hudi-cli does.

``pyhudi COMMAND PATH ...``; ``pyhudi --help`` lists the commands:

- tables (:mod:`~pyhudi.cli.tables`): ``create``, ``describe``, ``write``, ``read``/``show``, ``alter``;
- inspection (:mod:`~pyhudi.cli.inspect`, :mod:`~pyhudi.cli.stats`): ``timeline``,
  ``show-instant``, ``files``/``fsview``, ``stats``;
- services (:mod:`~pyhudi.cli.services`): ``compact``, ``clean``, ``archive``, ``rollback``;
- ``draw`` (:mod:`~pyhudi.cli.draw`): a PNG of the timeline and the file-group layout;
- ``docs config``: the configuration reference; ``demo``: the demo pipeline (:mod:`pyhudi.demo`).

Results go to stdout (``--json``: one JSON document); an error is one line on stderr and exit
status 2 (1 for an unexpected failure), ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
import threading
import traceback
import warnings
from typing import Any, NoReturn, Sequence

from pyhudi import gc_freeze

with gc_freeze.frozen_after(freeze=False):  # (the CLI's modules: frozen by entry(), see pyhudi.gc_freeze)
    from pyhudi.cli.output import print_rows, stderr_console, stdout_console

EXIT_ERROR = 2
"""Exit status of a reported error: bad input, a missing table or instant, a refused operation."""
EXIT_INTERNAL = 1
"""Exit status of an unexpected failure (a bug or an environment problem): see ``--debug``."""


_COMMON_HELP = {
    "path": "the table's base path (the folder that holds .hoodie/; a local path or s3://bucket/path)",
    "--json": "print one JSON document to stdout instead of tables",
}
"""Help of the arguments most commands share, given where a command does not say more."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line as one line (not the usage block) and exit 2,
    with the closest command, choice or option when a name is misspelled."""

    def add_argument(self, *names: Any, **kwargs: Any) -> argparse.Action:
        if "help" not in kwargs and names and names[-1] in _COMMON_HELP:
            kwargs["help"] = _COMMON_HELP[names[-1]]
        return super().add_argument(*names, **kwargs)

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {message}{_suggestion(message)} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_ERROR)

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> argparse.Namespace:
        """As argparse's, but unknown arguments are reported by the command they were given to
        (``pyhudi read: unrecognized arguments: --colums``, with its closest option)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = self._command_parser(getattr(parsed, "command", None))
            options = list(command._option_string_actions) if command is not None else []
            flag = next((e.partition("=")[0] for e in extras if e.startswith("-")), None)
            close = difflib.get_close_matches(flag, options, n=1, cutoff=0.6) if flag else []
            hint = f"; did you mean {close[0]}?" if close else ""
            (command or self).error(f"unrecognized arguments: {' '.join(extras)}{hint}")
        return parsed

    def _command_parser(self, name: str | None) -> argparse.ArgumentParser | None:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and name in action.choices:
                return action.choices[name]
        return None


def _suggestion(message: str) -> str:
    """``; did you mean 'read'?`` for argparse's ``invalid choice: 'reed' (choose from ...)``."""
    match = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
    if match is None:
        return ""
    choices = re.findall(r"'([^']*)'", match.group(2))
    by_lower = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(match.group(1).lower(), list(by_lower), n=1, cutoff=0.6)
    return f"; did you mean {by_lower[close[0]]!r}?" if close else ""


def _version() -> str:
    from pyhudi import __version__

    return f"pyhudi {__version__}"


def cmd_docs(args: argparse.Namespace, console: Any) -> int:
    """``pyhudi docs config``: the configuration reference (what docs/configuration.md holds)."""
    from pyhudi.config.docs import render_markdown

    text = render_markdown()
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
        console.print(f"configuration reference written to {args.output}")
    else:
        sys.stdout.write(text)
    return 0


_COMMAND_MODULES = {
    **dict.fromkeys(("create", "describe", "write", "read", "show", "alter"), "tables"),
    **dict.fromkeys(("timeline", "show-instant", "files", "fsview"), "inspect"),
    "stats": "stats", "draw": "draw", "demo": "demo",
}
"""Commands whose module alone registers them: a command line naming one builds only its parser
(``pyhudi read`` need not import the services, drawing and demo commands: cold start, issue 15)."""


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command-line parser: every command's, or only the named command's when ``argv``
    names one of :data:`_COMMAND_MODULES` (its help and errors are the same)."""
    import importlib

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the traceback of an error")
    parser = _Parser(prog="pyhudi", description="Operate Apache Hudi tables (with column families).")
    parser.add_argument("--version", action="version", version=_version())
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    command = next((a for a in argv or () if not a.startswith("-")), None)
    only = _COMMAND_MODULES.get(command)
    names = [only] if only else ["tables", "inspect", "stats", "services", "draw", "demo"]
    for name in names:
        importlib.import_module(f"pyhudi.cli.{name}").register(sub, common)
    if not only:
        docs = sub.add_parser("docs", parents=[common], help="generated documentation (the configuration reference)")
        docs.add_argument("topic", choices=["config"], help="config: every hoodie.* key pyhudi reads (Markdown)")
        docs.add_argument("--output", help="write to this file instead of stdout")
        docs.set_defaults(func=cmd_docs)
    for choice in sub._choices_actions:  # `pyhudi COMMAND --help` opens with what `pyhudi --help` says of it
        command = sub.choices[choice.dest]
        if command.description is None:
            command.description = choice.help[:1].upper() + choice.help[1:] + "."
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (0 ok, 2 reported error, 1 unexpected failure)."""
    return _run(argv)[0]


def entry() -> NoReturn:
    """The ``pyhudi`` command: :func:`main`, then the process ends.

    After a command that only reads (``read_only`` in its parser's defaults: ``read``,
    ``describe``, ``timeline``, ``show-instant``, ``files``, ``stats``) and left no other thread
    running, the process ends with ``os._exit`` once stdout and stderr are flushed: it holds no
    lock, heartbeat or file being written, and the interpreter's teardown of NumPy's, pyarrow's
    and rich's modules would take ~10 ms, a tenth of a cold ``pyhudi read`` (issue 15). Not
    under a profiler or tracer (``python -m cProfile -m pyhudi``, coverage): they report after
    the command returns.
    """
    gc_freeze.freeze()  # (the CLI's modules, as import pyhudi does for pyhudi's; rich loads at first print)
    status, read_only = _run(None)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # (the rest of the output met a closed pipe: as in _run)
        status = _stdout_closed()
    except OSError:  # (another failure: the interpreter's own exit reports it)
        sys.exit(status)
    if read_only and threading.active_count() == 1 and not _observed():
        os._exit(status)
    sys.exit(status)


def _observed() -> bool:
    """Whether a profile or trace function watches the process (its report or data is written
    after the command: ``os._exit`` would lose it)."""
    if sys.gettrace() is not None or sys.getprofile() is not None:
        return True
    monitoring = getattr(sys, "monitoring", None)  # (Python ≥ 3.12: cProfile and coverage may use it)
    return monitoring is not None and any(monitoring.get_tool(tool) is not None for tool in range(6))


def _run(argv: Sequence[str] | None) -> tuple[int, bool]:
    """The exit status of one command, and whether that command only read."""
    from pyhudi.errors import HudiError

    try:
        args = build_parser(sys.argv[1:] if argv is None else argv).parse_args(argv)
    except SystemExit as exc:  # --help / --version (0) or a bad command line (2, already reported)
        return int(exc.code or 0), False
    read_only = bool(getattr(args, "read_only", False))
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return args.func(args, stdout_console()), read_only
    except HudiError as exc:
        return _report(exc, args.debug, EXIT_ERROR), read_only
    except BrokenPipeError:  # (`pyhudi read ... | head`: the reader has all it wanted)
        return _stdout_closed(), read_only
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130, False
    except Exception as exc:  # an unexpected failure: still one line, the traceback on --debug
        return _report(exc, args.debug, EXIT_INTERNAL, f"{type(exc).__name__}: "), False


EXIT_PIPE_CLOSED = 141
"""The status of a command whose output pipe closed, as a shell reports a process SIGPIPE ended."""


def _stdout_closed() -> int:
    """End quietly after the reader of stdout went away, as Unix tools do: no error line, and the
    interpreter's final flush of stdout goes to /dev/null rather than failing again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_PIPE_CLOSED


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """A warning as one line on stderr, as errors are (``warning: ...``): not Python's
    ``file:line: Category: message`` and source line, which point into pyhudi, not at the command."""
    from pyhudi.errors import UnknownOptionWarning

    kind = "" if category in (UserWarning, UnknownOptionWarning) else f"{category.__name__}: "
    print(f"warning: {kind}{' '.join(str(message).split())}", file=sys.stderr)


def _report(exc: BaseException, debug: bool, status: int, prefix: str = "") -> int:
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    message = " ".join(str(exc).split()) or type(exc).__name__
    hint = "" if debug else " (run with --debug for the traceback)" if status == EXIT_INTERNAL else ""
    from rich.markup import escape

    stderr_console().print(f"[red]error:[/red] {escape(prefix + message + hint)}", highlight=False)
    return status


__all__ = ["EXIT_ERROR", "EXIT_INTERNAL", "build_parser", "entry", "main", "print_rows"]

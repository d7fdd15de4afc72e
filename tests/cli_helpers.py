"""Running the ``pyhudi`` command in process for the CLI tests."""

from __future__ import annotations

import json

from pyhudi.cli import main


def run(capsys, *argv, code=0):
    """``pyhudi <argv>``: asserts its exit code; returns what it printed (stdout, stderr)."""
    assert main(list(argv)) == code, argv
    return capsys.readouterr()


def run_json(capsys, *argv):
    """``pyhudi <argv> --json``: one JSON document on stdout and nothing on stderr."""
    captured = run(capsys, *argv, "--json")
    assert captured.err == ""
    return json.loads(captured.out)

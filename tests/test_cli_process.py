"""The pyhudi command as a process: entry points, --version, exit codes, stderr, --debug."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyhudi

ROOT = Path(__file__).resolve().parent.parent


def pyhudi_cmd(*argv, module="pyhudi"):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)


def test_version_through_both_module_entry_points():
    for module in ("pyhudi", "pyhudi.cli"):
        done = pyhudi_cmd("--version", module=module)
        assert (done.returncode, done.stdout, done.stderr) == (0, f"pyhudi {pyhudi.__version__}\n", "")


def test_errors_exit_2_with_one_line_on_stderr_and_debug_adds_the_traceback(tmp_path):
    missing = str(tmp_path / "none")
    done = pyhudi_cmd("timeline", missing, "--json")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"error: no Hudi table at {missing}: .hoodie/hoodie.properties not found\n"
    debug = pyhudi_cmd("timeline", missing, "--debug")
    assert debug.returncode == 2 and "Traceback (most recent call last)" in debug.stderr
    assert debug.stderr.rstrip().endswith(f"error: no Hudi table at {missing}: .hoodie/hoodie.properties not found")
    bad = pyhudi_cmd("timeline", missing, "--bogus")
    assert (bad.returncode, bad.stdout) == (2, "")
    assert bad.stderr == "error: pyhudi: unrecognized arguments: --bogus (see pyhudi --help)\n"
    unknown = pyhudi_cmd("frobnicate")
    assert unknown.returncode == 2 and unknown.stderr.startswith(
        "error: pyhudi: argument COMMAND: invalid choice: 'frobnicate'")


def test_a_table_made_and_listed_through_processes(tmp_path):
    path = str(tmp_path / "t")
    assert pyhudi_cmd("create", path, "--schema", "id:string,v:long", "--buckets", "1").returncode == 0
    (tmp_path / "in.json").write_text('{"id": "a", "v": 1}\n')
    wrote = pyhudi_cmd("write", path, str(tmp_path / "in.json"), "--json")
    assert wrote.returncode == 0, wrote.stderr
    instant = json.loads(wrote.stdout)["instant"]
    listed = json.loads(pyhudi_cmd("timeline", path, "--json").stdout)
    assert [(r["requested_time"], r["action"], r["state"], r["operation"]) for r in listed] == [
        (instant, "deltacommit", "COMPLETED", "UPSERT")]
    assert json.loads(pyhudi_cmd("show", path, "--json").stdout) == [{"id": "a", "v": 1}]

"""Running writer, service and reader processes on one table at once (tests/test_hunt_*.py), and
checking what they saw against a model of every committed write."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = sys.executable
WRITER = str(HERE / "concurrency_writer.py")
PROCS = str(HERE / "hunt_procs.py")


def _spawn(script: str, args: dict) -> subprocess.Popen:
    return subprocess.Popen([PY, script, json.dumps(args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def run_all(tmp_path: Path, path: str, writer_plans: list, others: list[dict], writer_options=None,
            timeout: float = 300) -> tuple[list[list[dict]], list[list[dict]], list[str]]:
    """Start a writer per plan and a helper process per ``others`` entry (hunt_procs args without
    path/go/stop), release them at once, stop the helpers when the writers are done. Returns the
    writers' result lines, the helpers' lines, and every process's stderr."""
    go, stop = tmp_path / "go", tmp_path / "stop"
    writers = [_spawn(WRITER, {"path": path, "go_file": str(go), "commits": plan, "options": writer_options})
               for plan in writer_plans]
    helpers = [_spawn(PROCS, {**o, "path": path, "go_file": str(go), "stop_file": str(stop)}) for o in others]
    procs = writers + helpers
    deadline = time.time() + 90
    while len(list(tmp_path.glob("go.ready.*"))) < len(procs):
        assert time.time() < deadline, "processes never got ready"
        for proc in procs:
            assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.01)
    go.write_text("go")
    outs, errs = [], []
    for proc in writers:
        out, err = proc.communicate(timeout=timeout)
        errs.append(err.decode())
        assert proc.returncode == 0, err.decode()
        outs.append([json.loads(line) for line in out.decode().splitlines()])
    stop.write_text("stop")
    helper_outs = []
    for proc in helpers:
        out, err = proc.communicate(timeout=timeout)
        errs.append(err.decode())
        assert proc.returncode == 0, err.decode()
        helper_outs.append([json.loads(line) for line in out.decode().splitlines()])
    return outs, helper_outs, errs

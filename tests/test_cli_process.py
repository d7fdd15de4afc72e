"""The pyhudi command as a process: entry points, --version, exit codes, stderr, --debug."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

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
    assert bad.stderr == "error: pyhudi timeline: unrecognized arguments: --bogus (see pyhudi timeline --help)\n"
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


_ENTRY = """
import atexit, sys
atexit.register(lambda: print("interpreter teardown", file=sys.stderr))
sys.argv = ["pyhudi", *sys.argv[1:]]
from pyhudi.cli import entry
entry()
"""


def _entry(*argv):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", _ENTRY, *argv], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)


def test_a_read_only_command_skips_the_teardown_with_its_output_complete(tmp_path):
    """``read`` and the other read-only commands end with ``os._exit`` after flushing (no
    atexit handler runs), a reported error too; a write exits normally."""
    path = str(tmp_path / "t")
    assert pyhudi_cmd("create", path, "--schema", "id:string,v:long", "--buckets", "1").returncode == 0
    rows = [{"id": f"k{i:04d}", "v": i} for i in range(1500)]
    (tmp_path / "in.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    wrote = _entry("write", path, str(tmp_path / "in.json"), "--json")
    assert wrote.returncode == 0 and wrote.stderr.endswith("interpreter teardown\n")
    read = _entry("read", path, "--json", "--sort", "id", "--limit", "2000")
    assert (read.returncode, read.stderr) == (0, "")
    assert json.loads(read.stdout) == rows  # (all 1,500 rows: stdout was flushed before the exit)
    listed = _entry("timeline", path, "--json")
    assert listed.returncode == 0 and listed.stderr == "" and len(json.loads(listed.stdout)) == 1
    failed = _entry("read", str(tmp_path / "none"))
    assert (failed.returncode, failed.stderr) == (2, f"error: no Hudi table at {tmp_path / 'none'}: "
                                                      ".hoodie/hoodie.properties not found\n")


def test_a_read_only_command_under_a_profiler_or_tracer_exits_normally(tmp_path):
    """``python -m cProfile -m pyhudi ...`` prints its profile and a tracer (coverage) saves its
    data after the command: both run after ``main`` returns, so ``os._exit`` is not taken when
    a profile or trace function is installed."""
    path = str(tmp_path / "t")
    assert pyhudi_cmd("create", path, "--schema", "id:string,v:long", "--buckets", "1").returncode == 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    profiled = subprocess.run([sys.executable, "-m", "cProfile", "-m", "pyhudi", "describe", path, "--json"],
                              capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    described, _ = json.JSONDecoder().raw_decode(profiled.stdout)  # (the profile follows the document)
    assert profiled.returncode == 0 and described["table"]["name"] == "t"
    assert " function calls " in profiled.stdout  # (cProfile's report, printed after the command)
    traced = subprocess.run([sys.executable, "-c", "import sys\nsys.settrace(lambda *a: None)\n" + _ENTRY,
                             "describe", path, "--json"], capture_output=True, text=True, env=env, cwd=ROOT,
                            timeout=120)
    assert (traced.returncode, traced.stderr) == (0, "interpreter teardown\n")
    assert json.loads(traced.stdout)["table"]["name"] == "t"


_LIBRARY_IMPORT = """
import gc, json, sys, weakref
import pyhudi
class Node: pass
a, b = Node(), Node()
a.other, b.other = b, a  # a cycle made by the caller after import pyhudi
watch = weakref.ref(a)
frozen = gc.get_freeze_count()
import pyhudi.cli
del a, b
gc.collect()
print(json.dumps({"cli_froze": gc.get_freeze_count() > frozen, "cycle_reclaimed": watch() is None}))
"""


def test_importing_the_cli_module_freezes_nothing_only_the_command_does(tmp_path):
    """``import pyhudi.cli`` in a library process (``pyhudi.demo``, a notebook calling
    ``main``) must not freeze the caller's objects made since ``import pyhudi``: a cycle
    dropped later is still reclaimed. The ``pyhudi`` command freezes rich's modules itself."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", _LIBRARY_IMPORT], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"cli_froze": False, "cycle_reclaimed": True}
    probe = ("import atexit, gc, sys\nsys.argv = ['pyhudi', '--version']\nimport pyhudi.cli\n"
             "before = gc.get_freeze_count()\n"
             "atexit.register(lambda: print(gc.get_freeze_count() > before, file=sys.stderr))\n"
             "pyhudi.cli.entry()\n")
    command = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT,
                             timeout=120)
    assert (command.returncode, command.stdout, command.stderr) == (0, f"pyhudi {pyhudi.__version__}\n", "True\n")


def test_commands_that_print_no_table_never_import_rich(tmp_path):
    """rich loads at a command's first printed line (``pyhudi.cli.output.LazyConsole``): ``read
    --json``, ``--version`` and a bad command line never import it (~15 ms of a fresh process);
    a table printed for people does."""
    import pyarrow as pa

    import pyhudi

    t = pyhudi.create_table(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("a", pa.float64())]), "id",
                            num_buckets=1)
    t.upsert(pa.table({"id": [1, 2], "a": [0.5, 1.5]}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    probe = ("import atexit, json, sys\n"
             "atexit.register(lambda: sys.stderr.write('RICH=%s\\n' % ('rich' in sys.modules)))\n"
             "from pyhudi.cli import main\nsys.exit(main(sys.argv[1:]))\n")

    def run(*argv: str) -> tuple[str, str]:
        done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=env,
                              cwd=ROOT, timeout=120)
        return done.stdout, done.stderr.strip().splitlines()[-1]

    out, rich = run("read", t.path, "--json")
    assert json.loads(out) == [{"id": 1, "a": 0.5}, {"id": 2, "a": 1.5}] and rich == "RICH=False"
    assert run("read", t.path, "--bogus")[1] == "RICH=False"
    out, rich = run("read", t.path)
    assert "0.5" in out and "┃" in out and rich == "RICH=True"


def _closed_after_a_few_bytes(argv: list[str], tmp_path: Path) -> tuple[int, str]:
    """``python -m pyhudi argv | head -c 64`` in bash: the command's status and stderr."""
    import shlex

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    err = tmp_path / "stderr.txt"
    command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "pyhudi", *argv])
    done = subprocess.run(f"{command} 2>{shlex.quote(str(err))} | head -c 64 >/dev/null; exit ${{PIPESTATUS[0]}}",
                          shell=True, executable="/bin/bash", env=env, timeout=120)
    return done.returncode, err.read_text()


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path):
    """``pyhudi read ... | head``: no error line, and the status a shell gives a process its
    closed pipe ended (141)."""
    t = pyhudi.create_table(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("v", pa.string())]), "id")
    t.upsert(pa.table({"id": list(range(20_000)), "v": ["some text " * 20] * 20_000}))  # (beyond a pipe's 64 KB)
    status, err = _closed_after_a_few_bytes(["read", t.path, "--limit", "20000", "--json"], tmp_path)
    assert (status, err) == (141, "")  # (was: "error: BrokenPipeError: ..." and status 1)
    # rich's table: quiet too (141 when a write met the closed pipe; rich itself exited with 1)
    status, err = _closed_after_a_few_bytes(["read", t.path, "--limit", "20000"], tmp_path)
    assert status in (0, 141) and err == ""

"""The README's tour: every example script runs, prints what the README says, and the README
shows each script exactly as it is (so every command the README shows is run here, in CI)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
README = (REPO / "README.md").read_text(encoding="utf-8")


def _env(tmp_path: Path) -> dict[str, str]:
    """This checkout first on the path, and a ``pyhudi`` command that runs it (as .venv/bin/pyhudi does)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "pyhudi"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m pyhudi "$@"\n')
    launcher.chmod(0o755)
    python = bin_dir / "python"
    python.symlink_to(sys.executable)
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "COLUMNS": "160"}


def _run(tmp_path: Path, *command: str) -> subprocess.CompletedProcess:
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run([*command, str(work)], capture_output=True, text=True, timeout=600,
                          env=_env(tmp_path), cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.mark.parametrize("name", ["tour_python.py", "tour_spark.py", "tour_cli.sh"])
def test_readme_shows_each_example_exactly(name):
    body = (EXAMPLES / name).read_text(encoding="utf-8")
    fence = "bash" if name.endswith(".sh") else "python"
    assert f"```{fence}\n{body}```" in README, f"README's copy of examples/{name} differs from the file"


def test_readme_commands_are_the_scripts_ci_runs():
    first = README.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in first.splitlines() if line.strip()]
    assert commands == ["bash scripts/demo.sh", "bash scripts/test.sh"]
    assert (REPO / "scripts" / "demo.sh").read_text().rstrip().endswith('exec "$ROOT/.venv/bin/pyhudi" demo "$@"')
    assert "bash scripts/test.sh" in (REPO / ".ci" / "run").read_text()


def test_readme_links_point_to_files():
    for target in re.findall(r"\]\(((?:docs|examples)/[^)#]+)\)", README):
        assert (REPO / target).exists(), target
    assert "docs/operating.md" in README and "docs/configuration.md" in README


def test_tour_python(tmp_path):
    out = _run(tmp_path, sys.executable, str(EXAMPLES / "tour_python.py")).stdout.splitlines()
    assert [ast.literal_eval(line) for line in out] == [
        [{"user_id": "a", "clicks": 5, "click_ts": 11, "orders": 0, "spend": 0.0},
         {"user_id": "b", "clicks": 2, "click_ts": 10, "orders": 1, "spend": 9.5}],  # b's late click lost
        [{"user_id": "b", "spend": 9.5}],
        3,
        [("commit", "COMPLETED"), ("commit", "COMPLETED"), ("clean", "COMPLETED")],
    ]


def test_tour_spark(tmp_path):
    proc = _run(tmp_path, sys.executable, str(EXAMPLES / "tour_spark.py"))
    tables = [block for block in proc.stdout.split("\n\n") if block.strip()]
    assert [line for line in tables[0].splitlines() if line.startswith("|")] == [
        "|user_id|orders|spend|", "|      b|     2| 20.0|"]
    assert [line for line in tables[1].splitlines() if line.startswith("|")] == [
        "|user_id|clicks|country|", "|      a|     4|     FR|", "|      b|     1|     US|"]
    assert re.search(r"\|\d{17}\|COMPLETED\|", tables[2])
    assert "WARN" not in proc.stdout + proc.stderr
    assert (tmp_path / "work" / "spark.log").exists()


def test_tour_cli(tmp_path):
    proc = _run(tmp_path, "bash", str(EXAMPLES / "tour_cli.sh"))
    out = proc.stdout
    assert re.search(r"│ a\s+│ 5\s+│ FR\s+│", out) and re.search(r"│ b\s+│ 2\s+│ US\s+│", out)
    assert "compact plan (dry run)" in out and "2 file slices would be compacted" in out
    assert re.search(r"compaction \d{17} completed", out) and re.search(r"clean \d{17} completed", out)
    assert re.search(r"drew \d+ instants and \d+ file-group rows to .*t\.png \(1400x\d+ px\)", out)
    assert (tmp_path / "work" / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert proc.stderr == ""

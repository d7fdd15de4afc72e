#!/usr/bin/env bash
# Create or update the project's virtual environment (.venv) and install pyhudi with its test
# dependencies. Sourced by scripts/demo.sh and scripts/test.sh; safe to run again (it updates).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"

if ! command -v java >/dev/null 2>&1; then  # (javac, in a JDK, also builds the JVM merge reader)
  echo "error: 'java' was not found on PATH. pyhudi runs Spark through PySpark, which needs Java 17." >&2
  echo "       Install a Java 17 runtime (e.g. 'apt-get install openjdk-17-jre-headless') and retry." >&2
  exit 1
fi
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "error: Python >= 3.11 is required ($PYTHON is $("$PYTHON" --version 2>&1))." >&2
  exit 1
fi

if [ ! -x "$ROOT/.venv/bin/python" ]; then
  "$PYTHON" -m venv "$ROOT/.venv"
fi
VENV_PY="$ROOT/.venv/bin/python"
stamp="$ROOT/.venv/.pyhudi-installed"
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
  "$VENV_PY" -m pip install --quiet --upgrade pip
  "$VENV_PY" -m pip install --quiet -e "$ROOT[test]"
  touch "$stamp"
fi
# Build pyhudi's JVM merge reader for Spark now (javac, a few seconds, cached per user) rather than
# at the first Spark read that merges log files; without a JDK those reads use the Python source.
"$VENV_PY" -c "from pyhudi.spark.jvm import main; raise SystemExit(main())" || echo "note: the JVM merge reader is not built; Spark reads of log files use the Python source" >&2
export PATH="$ROOT/.venv/bin:$PATH"

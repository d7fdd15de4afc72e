#!/usr/bin/env bash
# Set up (or update) the environment on a fresh machine and run the whole test suite.
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"
cd "$ROOT"
exec "$ROOT/.venv/bin/python" -m pytest -q "$@"

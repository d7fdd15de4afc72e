#!/usr/bin/env bash
# Set up everything on a fresh machine and run the main job (the pyhudi demo).
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"
exec "$ROOT/.venv/bin/pyhudi" demo "$@"

#!/usr/bin/env bash
# Runs one Python test module of tests/server with the server-test venv's python; fails (never
# skips) when the venv is missing.
set -euo pipefail
python=$1
module=$2
if [ ! -x "$python" ]; then
  echo "FAIL: $python is missing; run scripts/server_test_env.sh (scripts/test.sh does)" >&2
  exit 1
fi
cd "$(dirname "$0")"
exec "$python" -m unittest -v "$module"

#!/usr/bin/env bash
# Creates build/server-venv with the server tests' pinned Python packages (the official openai
# client; tests/server/requirements.txt), once: it is rebuilt only when that file changes.
# The ctest entries of label `server` run with this venv's python and fail without it.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/server-venv
requirements=tests/server/requirements.txt
stamp="$venv/.requirements"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && cmp -s "$requirements" "$stamp"; then
  echo "server_test_env: $venv is up to date"
  exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
cp "$requirements" "$stamp"
echo "server_test_env: installed $(grep -c '==' "$requirements") pinned packages into $venv"

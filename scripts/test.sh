#!/usr/bin/env bash
# Builds ctxpar and runs the whole test suite (the README's test command).
# Extra arguments go to ctest, e.g. `scripts/test.sh -L kv` for one layer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
scripts/server_test_env.sh  # the openai client for the server tests (label server)
# mpirun refuses root unless told; CI runs as root. These only widen what mpirun accepts.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd build
ctest --output-on-failure -j"$(nproc)" "$@"

#!/usr/bin/env bash
# Configures and builds ctxpar into ./build (Release). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTXPAR_TEST_ONLY= "$@" >/dev/null
cmake --build build -j"$(nproc)"

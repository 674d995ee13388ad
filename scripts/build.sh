#!/usr/bin/env bash
# Configures and builds ctxpar into ./build (Release, warnings as errors: Debian 12's g++ is
# the supported compiler). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTXPAR_WERROR=ON -DCTXPAR_TEST_ONLY= "$@" >/dev/null
cmake --build build -j"$(nproc)"

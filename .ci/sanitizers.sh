#!/usr/bin/env bash
# Sanitizer runs of the fast tests (DESIGN.md §7): ASan + UBSan over the unit-test labels,
# and TSan over the in-process communicator's tests (ranks are threads sharing memory).
# Tests that start mpirun are left out: Open MPI's own allocations and threads are not ours
# to sanitize. Exits non-zero on the first report (-fno-sanitize-recover).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

# -O1 and line tables only (-g1), as the sanitizers' documentation suggests: reports keep their
# file:line stacks, and the instrumented build, most of this script's time on two cores, takes
# about half as long as at RelWithDebInfo's -O2 -g (online_engine.cc: 10 s against 21 s).
configure() {  # configure DIR SANITIZERS TEST_FOLDERS
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCTXPAR_WERROR=ON \
    -DCTXPAR_SANITIZE="$2" -DCTXPAR_TEST_ONLY="$3" -DCTXPAR_BUILD_BENCH=OFF >/dev/null
}

# ASan + UBSan: every unit-test folder that needs no model-sized run.
asan_folders="core;comm;kv;kernels;model;models;engine;structured;tokenizer;chat_template"
configure build-asan "address,undefined" "$asan_folders"
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure -j"$jobs" -LE mpi)

# TSan: the in-process communicator (its stress tests interleave thousands of collectives).
configure build-tsan "thread" "comm"
cmake --build build-tsan -j"$jobs" --target comm_test
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --output-on-failure -j"$jobs" -L comm -LE mpi)

#!/usr/bin/env bash
# ctxpar against llama.cpp on the same random Llama-3.2-1B-shaped bf16 weights and the same
# threads, with the read-bandwidth ceiling measured beside every run (compare.py says what
# is measured). llama.cpp comes from PyPI (llama-cpp-python, compiled for this CPU at install
# time) into a virtual environment under build/; ctxpar is built first if needed.
#
#   bench/compare/run.sh                 # the whole table (long: prefills up to 16K tokens)
#   bench/compare/run.sh --quick         # short decode, no 16K row
#   bench/compare/run.sh --help          # every option
set -euo pipefail
cd "$(dirname "$0")/../.."
venv="${CTXPAR_COMPARE_VENV:-build/compare-venv}"
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import llama_cpp, gguf, numpy" 2>/dev/null; then
  # llama-cpp-python builds llama.cpp from its sdist for the local CPU (GGML_NATIVE).
  "$venv/bin/pip" install --quiet llama-cpp-python gguf numpy
fi
if [[ ! -x build/apps/ctxpar || ! -x build/bench/support/read_ceiling ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" --target ctxpar read_ceiling
fi
exec "$venv/bin/python" bench/compare/compare.py --ctxpar build/apps/ctxpar \
  --read-ceiling build/bench/support/read_ceiling --model-dir build/compare-model "$@"

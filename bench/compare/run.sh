#!/usr/bin/env bash
# ctxpar against llama.cpp on the same random Llama-3.2-1B-shaped bf16 weights and the same
# threads, with the read-bandwidth ceiling measured beside every run (compare.py says what
# is measured). llama.cpp comes from PyPI (llama-cpp-python, compiled for this CPU at install
# time) into a virtual environment under build/; ctxpar is built first if needed.
#
#   bench/compare/run.sh                 # the whole table (long: prefills up to 16K tokens)
#   bench/compare/run.sh --quick         # short decode, no 16K row
#   bench/compare/run.sh --help          # every option
#   bench/compare/run.sh --isa avx2 ...  # both engines held to AVX2 (what an AVX2-only CPU
#                                        # runs): ctxpar through CTXPAR_ISA and oneDNN's
#                                        # ONEDNN_MAX_CPU_ISA, llama.cpp compiled without
#                                        # AVX-512 into its own environment
set -euo pipefail
cd "$(dirname "$0")/../.."
args=()
isa=native
while [[ $# -gt 0 ]]; do
  if [[ "$1" == --isa ]]; then
    isa="${2:?--isa needs a value: native or avx2}"
    shift 2
  else
    args+=("$1")
    shift
  fi
done
case "$isa" in
  native)
    venv="${CTXPAR_COMPARE_VENV:-build/compare-venv}"
    # llama-cpp-python builds llama.cpp from its sdist for the local CPU (GGML_NATIVE).
    llama_cmake_args="${CMAKE_ARGS:-}"
    ;;
  avx2)
    venv="${CTXPAR_COMPARE_VENV:-build/compare-venv-avx2}"
    llama_cmake_args="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
    llama_cmake_args+=" -DGGML_BMI2=ON -DGGML_AVX512=OFF"
    export CTXPAR_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2
    ;;
  *)
    echo "--isa $isa is not valid; use native or avx2" >&2
    exit 2
    ;;
esac
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import llama_cpp, gguf, numpy" 2>/dev/null; then
  CMAKE_ARGS="$llama_cmake_args" "$venv/bin/pip" install --quiet --no-cache-dir llama-cpp-python \
    gguf numpy
fi
if [[ ! -x build/apps/ctxpar || ! -x build/bench/support/read_ceiling ||
  ! -x build/bench/support/compute_ceiling ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" --target ctxpar read_ceiling compute_ceiling
fi
isa_args=()
[[ "$isa" == avx2 ]] && isa_args=(--avx2-only)
exec "$venv/bin/python" bench/compare/compare.py --ctxpar build/apps/ctxpar \
  --read-ceiling build/bench/support/read_ceiling \
  --compute-ceiling build/bench/support/compute_ceiling --model-dir build/compare-model \
  ${isa_args[@]+"${isa_args[@]}"} ${args[@]+"${args[@]}"}

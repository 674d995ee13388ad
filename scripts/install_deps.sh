#!/usr/bin/env bash
# Installs the Debian packages ctxpar builds against (DESIGN.md §8). Idempotent: packages
# already present are left alone, and apt is skipped entirely when nothing is missing.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config clang-format
  libdnnl-dev ocl-icd-opencl-dev  # oneDNN's CMake package finds OpenCL at configure time
  libopenmpi-dev openmpi-bin
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libpcre2-dev     # tokenizer: pre-tokenizer regexes need \p{L} and lookahead (UTF + UCP)
  libutf8proc-dev  # tokenizer: NFC / NFKC normalizers
  libcpp-httplib-dev  # server: the OpenAI-compatible HTTP front end
  libssl-dev          # kv: SHA-256 block hashes of the prefix cache (libcrypto)
  python3 python3-venv  # server tests drive the server with the openai client in a venv
  ca-certificates       # ... installed from PyPI over HTTPS
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install_deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"

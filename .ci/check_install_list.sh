#!/usr/bin/env bash
# Fails unless every header and library path that CMake resolved in BUILD_DIR (default build)
# belongs to a package scripts/install_deps.sh installs, or to one they depend on: the
# fallback proof of a complete install list where no clean root can be made.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
mapfile -t listed < <(sed -n '/^packages=(/,/^)/p' scripts/install_deps.sh | sed 's/#.*//' |
  tr ' ' '\n' | grep -E '^[a-z0-9][a-z0-9.+-]+$' | grep -v '^packages')
closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
  --no-replaces --no-enhances "${listed[@]}" 2>/dev/null | grep -E '^[a-z0-9]' | sed 's/:.*//' |
  sort -u)
essential=$(dpkg-query -W -f='${Package} ${Essential} ${Priority}\n' |
  awk '$2 == "yes" || $3 == "required" {print $1}')
missing=0
while read -r path; do
  [ -e "$path" ] || continue
  # The path as CMake found it first: a -dev package owns libX.so, the runtime one its target.
  pkg=$( (dpkg -S "$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null) |
    head -n 1 | sed 's/:.*//; s/,.*//') || true
  if [ -z "$pkg" ]; then
    echo "check_install_list: $path belongs to no Debian package (installed by hand?)" >&2
    missing=1
  elif ! grep -qx "$pkg" <<<"$closure"$'\n'"$essential"; then
    echo "check_install_list: $path comes from $pkg, which install_deps.sh does not install" >&2
    missing=1
  fi
done < <(grep -E '^[A-Za-z0-9_]+(_INCLUDE_DIRS?|_LIBRARY|_LIBRARIES|_DIR|_EXECUTABLE):[A-Z]+=/' \
  "$build/CMakeCache.txt" | sed 's/^[^=]*=//' | tr ';' '\n' | grep '^/' | grep -v "^$PWD" | sort -u)
[ "$missing" -eq 0 ] && echo "check_install_list: every path CMake found comes from the install list"
exit "$missing"

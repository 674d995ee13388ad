#!/usr/bin/env bash
# Proves README.md's two set-up commands on a clean Debian 12 root, not only on the machine
# that runs CI (which keeps whatever was ever installed on it by hand).
#
# A minimal bookworm root (debootstrap --variant=minbase) is cached as a tarball under
# $CTXPAR_CI_CACHE (default /var/cache/ctxpar-ci, outside the clone) and rebuilt when the
# cache is missing. Each run unpacks a fresh copy, bind-mounts /proc, /sys, /dev and
# /dev/shm, copies the clone in (tracked and untracked files, no build trees) and runs
# exactly the two commands the README lists under "Set up on a fresh machine", as root, in
# a chroot. Exits non-zero if either fails. Needs root, debootstrap and network access to
# the Debian mirror.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${CTXPAR_CI_CACHE:-/var/cache/ctxpar-ci}
tarball=$cache/bookworm-minbase.tar
# The mirror this machine's apt uses, so the root sees the same archive.
mirror=$(grep -hoE '^URIs: *https?://[^ ]+/debian/?$' /etc/apt/sources.list.d/*.sources 2>/dev/null |
  head -n 1 | sed -E 's/^URIs: *//')
mirror=${mirror:-http://deb.debian.org/debian}

# The README's two commands: the indented lines of its "Set up on a fresh machine" section.
mapfile -t commands < <(awk '/^## /{inside = ($0 ~ /^## Set up on a fresh machine/)}
  inside && /^    [^ ]/{sub(/^    /, ""); print}' "$repo/README.md")
if [ ${#commands[@]} -ne 2 ]; then
  echo "fresh_root: README.md's set-up section must hold exactly two commands, found ${#commands[@]}" >&2
  exit 1
fi

if [ ! -f "$tarball" ]; then
  echo "fresh_root: bootstrapping a minimal Debian 12 root from $mirror (cached in $tarball)"
  mkdir -p "$cache"
  staging=$(mktemp -d "$cache/bootstrap.XXXXXX")
  debootstrap --variant=minbase bookworm "$staging" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
    { tail -n 20 "$cache/debootstrap.log" >&2; rm -rf --one-file-system "$staging"; exit 1; }
  tar -C "$staging" -cf "$tarball.partial" .
  mv "$tarball.partial" "$tarball"
  rm -rf --one-file-system "$staging"
fi

root=$(mktemp -d /var/tmp/ctxpar-fresh-root.XXXXXX)
mounted=()
cleanup() {
  # Unmount before deleting: removing a root with /dev bound inside would delete the host's.
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -l "${mounted[i]}" 2>/dev/null || true
  done
  if ! grep -q " $root/" /proc/mounts; then rm -rf --one-file-system "$root"; fi
}
trap cleanup EXIT
tar -C "$root" -xf "$tarball"
for fs in proc sys dev dev/shm; do
  mkdir -p "$root/$fs"
  mount --bind "/$fs" "$root/$fs"
  mounted+=("$root/$fs")
done
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp /etc/hosts "$root/etc/hosts"
# The network's trust, as the host has it: certificate authorities added locally (say, of an
# egress proxy; the root's ca-certificates package adds them to its bundle when it installs)
# and pip's configuration. This is where the machine sits, not software the README installs.
if [ -d /usr/local/share/ca-certificates ]; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi
if [ -f /etc/pip.conf ]; then cp /etc/pip.conf "$root/etc/pip.conf"; fi

mkdir -p "$root/work/ctxpar"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
  tar --null -T - -cf - 2>/dev/null) | tar -C "$root/work/ctxpar" -xf -

for i in 0 1; do
  echo "fresh_root: README command $((i + 1)): ${commands[i]}"
  start=$SECONDS
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c "cd /work/ctxpar && ${commands[i]}"
  echo "fresh_root: README command $((i + 1)) passed in $((SECONDS - start)) s"
done

#!/usr/bin/env bash
# dist-tests/debian-root.sh SUITE — prints the path of a minimal Debian root of SUITE (bookworm,
# trixie, ...): `debootstrap --variant=minbase`, no python3 and no libpython in it. Built once and
# cached outside the checkout ($AIMUX_ROOTS, default ~/.cache/aimux-roots/<suite>), so reruns of
# `make test-dist` take none of its time; the first build is bounded ($AIMUX_ROOT_TIMEOUT seconds,
# default 600; about a minute and 200 MB per suite here). Built under a lock (concurrent runs wait)
# into <suite>.partial, renamed when complete.
#
# Exit status 77 (with the reason on stderr) when no root can be made here: not root, no
# debootstrap, or the Debian mirror ($AIMUX_DEBIAN_MIRROR, default: the machine's apt source for
# Debian, else http://deb.debian.org/debian) does not answer.
set -euo pipefail
suite="${1:?usage: debian-root.sh SUITE}"
roots="${AIMUX_ROOTS:-$HOME/.cache/aimux-roots}"
root="$roots/$suite"
ready() { [ -f "$root/.aimux-root" ] && [ -x "$root/bin/sh" ]; }
if ready; then echo "$root"; exit 0; fi

why=""
if [ "$(id -u)" != 0 ]; then why="debootstrap needs root (uid $(id -u))"
elif ! command -v debootstrap >/dev/null; then
  echo "installing debootstrap (Debian)" >&2
  { apt-get install -y debootstrap || { apt-get update && apt-get install -y debootstrap; }; } >&2 \
    || why="debootstrap is missing and apt-get could not install it"
fi
[ -z "$why" ] || { echo "$why" >&2; exit 77; }

mirror="${AIMUX_DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
  mirror="$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
    | grep -oE 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -1 | tr -d ' ' || true)"
  mirror="${mirror:-http://deb.debian.org/debian}"
fi

mkdir -p "$roots"
exec 9> "$roots/.$suite.lock"
flock 9
if ready; then echo "$root"; exit 0; fi   # built by another run while this one waited
rm -rf "$root" "$root.partial"
echo "building a minimal Debian $suite root in $root from $mirror (once; cached)" >&2
if ! timeout "${AIMUX_ROOT_TIMEOUT:-600}" debootstrap --variant=minbase "$suite" "$root.partial" "$mirror" \
    > "$roots/$suite.log" 2>&1; then
  tail -5 "$roots/$suite.log" >&2
  rm -rf "$root.partial"
  echo "debootstrap $suite from $mirror failed or took over ${AIMUX_ROOT_TIMEOUT:-600} s (log: $roots/$suite.log)" >&2
  exit 77
fi
touch "$root.partial/.aimux-root"
mv "$root.partial" "$root"
echo "$root"

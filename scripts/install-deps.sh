#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages that the lists given name (paths from the top, e.g.
# exporter/deps-build.txt: what make and make deb need), or, without one, every list of the
# tree (deps*.txt at any depth: what make test needs). As root it runs apt-get; otherwise it
# prints the one command that would.
# Without recommends: they doubled a fresh install (883 packages against 507 in a bare bookworm chroot,
# 267 s against 154 s) and none was used but those the deps.txt files name.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

lists=()
for f in "$@"; do
	[ -f "$top/$f" ] || { echo "install-deps: no list $f" >&2; exit 1; }
	lists+=("$top/$f")
done
[ $# -gt 0 ] || mapfile -d '' lists < <(find "$top" -name .git -prune -o -name 'deps*.txt' -print0)
mapfile -t wanted < <(cat "${lists[@]}" |
	sed -e 's/#.*//' -e 's/[[:space:]]\+/\n/g' | sed '/^$/d' | sort -u)

missing=()
for pkg in "${wanted[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
	[ "$status" = installed ] || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "missing packages; as root run:" >&2
	echo "  $cmd" >&2
	exit 1
fi
echo "installing: ${missing[*]}" >&2
apt-get update -q >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2

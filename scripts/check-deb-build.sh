#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make deb-build-test: `make deb` in a bare Debian bookworm chroot (debootstrap --variant=minbase
# from the mirror of the host's /etc/apt/sources.list.d/, made once under $BUILD_ROOT/chroot,
# shared with make deb-install-test, and copied for each run) that gets make and nothing else
# first: what make deb installs must be all the build needs (the package builds and lintian is
# clean), and no more (none of the other targets' packages; the count is printed). The tree is a
# clone of HEAD: commit first. Not part of `make test`: minutes (the first debootstrap, then
# about 150 packages from the mirror each run). Needs root.
# One line per check; the last line is "N passed, N failed, N skipped".
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"
# shellcheck source=scripts/lib-chroot.sh
. "$top/scripts/lib-chroot.sh"
chroot_check
command -v git >/dev/null || skip_suite "git missing"
root=$base/build.$$
chroot_fresh "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
log=$base/build.log

# the chroot's own packages, then make: the entry point a user types
for p in build-essential gcc libmicrohttpd-dev debhelper git make; do
	if in_root dpkg -s "$p" >/dev/null 2>&1; then
		fail "the chroot is bare: $p is installed (remove $base/bookworm)"
		finish
	fi
done
pass "the chroot is bare: no compiler, no headers, no debhelper, no git, no make"
in_root apt-get update -q >"$log" 2>&1
check "apt installs make alone" in_root apt-get install -y -q --no-install-recommends make >>"$log" 2>&1
in_root dpkg-query -W -f '${Package}\n' | sort >"$root/tmp/before"

# the tree as committed: git clone (tags and all: the version comes from git describe)
git clone -q "$top" "$root/src" && git -C "$top" tag | while read -r t; do
	git -C "$root/src" tag -f "$t" "$(git -C "$top" rev-list -n 1 "$t")" >/dev/null
done
if in_root sh -c 'cd /src && make deb' >>"$log" 2>&1; then
	pass "make deb builds the package, lintian clean, in the bare chroot"
else
	fail "make deb in the bare chroot (log: $log)"
	tail -n 20 "$log" | sed 's/^/  | /'
fi
deb=$(find "$root/var/tmp/cachestat_exporter/deb" -maxdepth 1 -name 'cachestat-exporter_*.deb' 2>/dev/null | head -n 1)
check "a .deb came out ($(basename "${deb:-none}"))" test -n "$deb"
[ -n "$deb" ] && check "it holds the binary" sh -c "dpkg-deb -c '$deb' 2>/dev/null | grep -c '/usr/bin/cachestat_exporter\$' >/dev/null"

# no more than make deb's lists: none of the other targets' packages
in_root dpkg-query -W -f '${Package}\n' | sort >"$root/tmp/after"
added=$(comm -13 "$root/tmp/before" "$root/tmp/after" | wc -l)
extra=()
for p in qemu-system-x86 linux-source-6.1 buildah nodejs victoria-metrics cloud-init prometheus \
	gcc-aarch64-linux-gnu shellcheck libcmocka-dev vmtouch bindfs curl; do
	in_root dpkg -s "$p" >/dev/null 2>&1 && extra+=("$p")
done
eq "make deb installed none of the other targets' packages" "${extra[*]:-none}" none
# what apt was asked for: the lists of make deb, each package named once
asked=$(sed -n 's/^installing: //p' "$log" | tr ' ' '\n' | sed '/^$/d' | sort -u | xargs)
want=$(cat "$top/exporter/deps-build.txt" "$top/scripts/deps-deb.txt" | sed -e 's/#.*//' |
	tr -s ' \t' '\n' | sed '/^$/d' | sort -u | grep -vxF make | xargs)
eq "make deb asked apt for its lists and no more" "$asked" "$want"
echo "# make deb installed $added packages with their dependencies (make itself before)"
finish

# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The bare Debian bookworm chroot of make deb-build-test and make deb-install-test
# (scripts/check-deb-build.sh, check-deb-install.sh), sourced, not run, after tests/lib/tap.sh:
# debootstrap --variant=minbase from the mirror of the host's /etc/apt/sources.list.d/, made once
# under $base/bookworm and copied for each run.
#
# Sets: base ($BUILD_ROOT/chroot).

base=${BUILD_ROOT:-/var/tmp/cachestat_exporter}/chroot

# chroot_check: skips the suite without root or debootstrap.
chroot_check() {
	[ "$(id -u)" -eq 0 ] || skip_suite "needs root (debootstrap, chroot)"
	command -v debootstrap >/dev/null || skip_suite "debootstrap missing"
}

# chroot_fresh ROOT: ROOT a fresh copy of the base (made first if there is none; the suite skips
# when it cannot be), with /proc mounted; unmounted and removed on exit.
chroot_fresh() {
	local mirror
	chroot_root=$1
	trap 'umount "$chroot_root/proc" 2>/dev/null; rm -rf "$chroot_root"' EXIT
	if [ ! -x "$base/bookworm/usr/bin/apt-get" ]; then
		mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
		[ -n "$mirror" ] || skip_suite "no Debian mirror in /etc/apt/sources.list.d/*.sources"
		rm -rf "$base/bookworm"
		mkdir -p "$base"
		debootstrap --variant=minbase bookworm "$base/bookworm" "$mirror" >"$base/debootstrap.log" 2>&1 ||
			skip_suite "debootstrap failed (log: $base/debootstrap.log)"
	fi
	rm -rf "$chroot_root"
	cp -a "$base/bookworm" "$chroot_root"
	mount -t proc proc "$chroot_root/proc"
}

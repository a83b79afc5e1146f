#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make deb-install-test: the package of `make deb` installed with apt into a bare Debian
# bookworm chroot (debootstrap --variant=minbase from the mirror of the host's
# /etc/apt/sources.list.d/, made once under $BUILD_ROOT/chroot and copied for each run):
# the system user and group, the enabled unit, the binary runs; a reinstall keeps the user;
# a purge removes the conffile and the unit's link; a second install works. Not part of
# `make test`: the first debootstrap takes minutes. Needs root.
# One line per check; the last line is "N passed, N failed, N skipped".
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"
# shellcheck source=scripts/lib-chroot.sh
. "$top/scripts/lib-chroot.sh"
chroot_check
if ! deb=$("$top/scripts/build-deb.sh" | tail -n 1); then
	fail "make deb"
	finish
fi
root=$base/run
chroot_fresh "$root"
cp "$deb" "$root/tmp/pkg.deb"
in_root() { chroot "$root" "$@"; }
# quiet COMMAND...: COMMAND with its output in the chroot's /tmp/log.
quiet() { "$@" >"$root/tmp/log" 2>&1; }

# The base must be bare, or the checks below would see what an earlier install left.
if in_root getent passwd cachestat-exporter >/dev/null || in_root dpkg -s cachestat-exporter >/dev/null 2>&1; then
	fail "the chroot is bare (no cachestat-exporter user, no package): remove $base/bookworm"
	finish
fi
pass "the chroot is bare: no cachestat-exporter user, no package"
check "apt installs $(basename "$deb")" quiet in_root apt-get install -y -q /tmp/pkg.deb
user=$(in_root getent passwd cachestat-exporter)
check "a system user cachestat-exporter, no home, no shell ($user)" \
	test "$(echo "$user" | cut -d: -f6,7)" = /nonexistent:/usr/sbin/nologin
check "its group" quiet in_root getent group cachestat-exporter
check "the unit is enabled" test -L "$root/etc/systemd/system/multi-user.target.wants/cachestat-exporter.service"
version=$(dpkg-deb -f "$deb" Version)
check "the binary runs (--version: $version)" \
	sh -c "chroot '$root' cachestat_exporter --version | grep -qF 'version $version '"
in_root apt-get install -y -q --reinstall /tmp/pkg.deb >/dev/null 2>&1
eq "a reinstall keeps the user" "$(in_root getent passwd cachestat-exporter)" "$user"
in_root apt-get purge -y -q cachestat-exporter >/dev/null 2>&1
check "a purge removes /etc/default/cachestat-exporter" test ! -e "$root/etc/default/cachestat-exporter"
check "a purge removes the unit's link" \
	test ! -L "$root/etc/systemd/system/multi-user.target.wants/cachestat-exporter.service"
check "a second install works" quiet in_root apt-get install -y -q /tmp/pkg.deb
finish

# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# apt for another architecture's packages, without touching the host's: the host's sources
# (/etc/apt/sources.list.d/, the same Debian archive) with a package index and cache of its own
# under DIR, and that architecture as apt's native one. Nothing is installed: the packages are
# downloaded (apt-get download) and unpacked by the caller (dpkg-deb -x).
# Usage: apt_arch_init DIR ARCH (once; runs apt-get update into DIR), then
# apt_arch apt-get|apt-cache ARGS...

apt_arch_init() {
	APT_ARCH_DIR=$1
	APT_ARCH=$2
	mkdir -p "$APT_ARCH_DIR/lists/partial" "$APT_ARCH_DIR/cache/archives/partial"
	: >"$APT_ARCH_DIR/status"
	# _apt downloads when it may write there (as build-image.sh's cache)
	if getent passwd _apt >/dev/null; then chown -R _apt "$APT_ARCH_DIR/lists" "$APT_ARCH_DIR/cache"; fi
	apt_arch apt-get update -q >"$APT_ARCH_DIR/update.log" 2>&1 || {
		cat "$APT_ARCH_DIR/update.log" >&2
		return 1
	}
}

apt_arch() {
	local tool=$1
	shift
	"$tool" -o APT::Architecture="$APT_ARCH" -o APT::Architectures::="$APT_ARCH" \
		-o Dir::State::Lists="$APT_ARCH_DIR/lists" -o Dir::State::status="$APT_ARCH_DIR/status" \
		-o Dir::Cache="$APT_ARCH_DIR/cache" "$@"
}

# apt_arch_closure PKG...: the packages and everything they depend on, one name a line.
apt_arch_closure() {
	apt_arch apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
		--no-replaces --no-enhances "$@" | grep -v -e '^ ' -e '^<' | sort -u
}

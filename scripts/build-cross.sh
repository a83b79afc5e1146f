#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The exporter cross-compiled for another architecture (default arm64) from Debian packages
# only: the cross compiler of the host (gcc-aarch64-linux-gnu), and the architecture's own -dev
# packages (the Build-Depends of debian/control) downloaded with apt for that architecture
# (scripts/lib-apt-arch.sh) and unpacked into a sysroot under $BUILD_ROOT/cross-ARCH; the
# host's package set is not changed. The version and revision are the tree's
# (scripts/lib-version.sh), as the .deb's. $BUILD_ROOT/cross-ARCH/runtime holds those packages
# with the C library, for qemu-user's -L. Prints the binary's path last.
# Usage: scripts/build-cross.sh [ARCH]
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
arch=${1:-arm64}
root=${BUILD_ROOT:-/var/tmp/cachestat_exporter}
out=$root/cross-$arch
# shellcheck source=scripts/lib-version.sh
. "$top/scripts/lib-version.sh"
# shellcheck source=scripts/lib-apt-arch.sh
. "$top/scripts/lib-apt-arch.sh"

case $arch in
arm64) triplet=aarch64-linux-gnu ;;
*) echo "build-cross: no cross compiler known for $arch" >&2; exit 1 ;;
esac
for tool in "$triplet-gcc" "$triplet-ar" apt-get apt-cache dpkg-deb pkg-config; do
	command -v "$tool" >/dev/null || { echo "build-cross: $tool missing (scripts/deps.txt)" >&2; exit 1; }
done

# The -dev packages of debian/control's Build-Depends, and what they depend on, for $arch.
mapfile -t dev < <(sed -n '/^Build-Depends:/,/^[A-Z]/p' "$top/debian/control" | grep -oE '[a-z0-9][a-z0-9.+-]*-dev\b')
apt_arch_init "$out/apt" "$arch"
# The C library and kernel headers are the cross toolchain's own (libc6-dev-arm64-cross): the
# architecture's libc6-dev would give the linker scripts with the host's absolute paths.
mapfile -t pkgs < <(apt_arch_closure "${dev[@]}" | grep -vx -e libc6 -e libc6-dev -e linux-libc-dev -e libgcc-s1)
mkdir -p "$out/debs"
rm -f "$out"/debs/*.deb
if getent passwd _apt >/dev/null; then chown _apt "$out/debs"; fi
(cd "$out/debs" && apt_arch apt-get download -q "${pkgs[@]}" >"$out/download.log" 2>&1) || {
	cat "$out/download.log" >&2
	echo "build-cross: apt-get download for $arch failed" >&2
	exit 1
}
sys=$out/sysroot
rm -rf "$sys"
mkdir -p "$sys"
for f in "$out"/debs/*.deb; do
	dpkg-deb -x "$f" "$sys"
done
# Absolute symlinks (libfoo.so -> /lib/...) point into the host: make them point into the sysroot.
find "$sys" -type l -lname '/*' -print0 | while IFS= read -r -d '' l; do
	ln -sfn "$sys$(readlink "$l")" "$l"
done

# What the binary runs with (qemu-aarch64-static -L DIR): those packages and the C library.
mkdir -p "$out/debs-libc"
rm -f "$out"/debs-libc/*.deb
if getent passwd _apt >/dev/null; then chown _apt "$out/debs-libc"; fi
(cd "$out/debs-libc" && apt_arch apt-get download -q libc6 libgcc-s1 >>"$out/download.log" 2>&1) || {
	cat "$out/download.log" >&2
	exit 1
}
rm -rf "$out/runtime"
mkdir -p "$out/runtime"
for f in "$out"/debs/*.deb "$out"/debs-libc/*.deb; do
	dpkg-deb -x "$f" "$out/runtime"
done

# A copy of exporter/, built there (the tree's own build stays the host's).
version_of "$top"
rm -rf "$out/src"
mkdir -p "$out/src"
cp -a "$top/exporter" "$out/src/"
rm -rf "$out/src/exporter/build" "$out/src/exporter/cachestat_exporter"
lib=$sys/usr/lib/$triplet
PKG_CONFIG_LIBDIR=$lib/pkgconfig:$sys/usr/share/pkgconfig PKG_CONFIG_SYSROOT_DIR=$sys \
	make -s -C "$out/src/exporter" cachestat_exporter CC="$triplet-gcc" AR="$triplet-ar" VERSION="$VERSION" REVISION="$REVISION" \
	CFLAGS="-O2 -g -isystem $sys/usr/include -isystem $sys/usr/include/$triplet" WERROR=  \
	LDFLAGS="-L$lib -L$sys/lib/$triplet -Wl,-rpath-link,$lib -Wl,-rpath-link,$sys/lib/$triplet" \
	>"$out/build.log" 2>&1 || {
	tail -n 30 "$out/build.log" >&2
	echo "build-cross: the $arch build failed; the log is $out/build.log" >&2
	exit 1
}
echo "build-cross: cachestat_exporter $VERSION for $arch, from ${#pkgs[@]} packages of $arch" >&2
echo "$out/src/exporter/cachestat_exporter"

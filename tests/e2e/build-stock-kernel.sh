#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes a root disk, kernel and initramfs for booting the e2e guest on a stock Debian kernel:
#   bookworm   bookworm's own linux-image-amd64 (6.1, no cachestat: the exporter's mincore path)
#   mainline   bookworm-backports' linux-image-amd64 (6.5 or later: cachestat's mainline form)
# The kernel is installed as an operator would: apt-get install in (a copy of) the guest image's root file system,
# where its package's initramfs-tools hook makes the initrd; the modules stay in that copy, which the guest boots
# as its root disk. The mirror is the one this host's apt sources name for bookworm (the backports suite of the
# same archive when the host names none for it); the project names none.
#
# Cached under $BUILD_ROOT/e2e/stock/FLAVOUR-KEY-VERSION (KEY: the guest image's hash and this script's,
# VERSION: the package's), with the downloaded .debs in $BUILD_ROOT/e2e/stock/debs-FLAVOUR. A cached build is used
# without asking the archive; E2E_STOCK_REFRESH=1 asks it for the current version and builds that one when it is
# newer. Needs root (loop mount, chroot) and the archive only when it builds.
# Usage: build-stock-kernel.sh bookworm|mainline
# Prints the build's directory (root.img, vmlinuz, initrd.img, config, version, release) as the last line of
# stdout; logs go to stderr.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

flavour=${1:?usage: build-stock-kernel.sh bookworm|mainline}
case $flavour in
bookworm) suite=bookworm ;;
mainline) suite=bookworm-backports ;;
*) die "unknown stock kernel '$flavour' (bookworm or mainline)" ;;
esac

base=${E2E_IMAGE:-$("$E2E_DIR/build-image.sh" | tail -n 1)}
[ -f "$base" ] || die "no guest image at '$base'"
# The guest image's directory names its inputs' hash (image-HASH); this script's own hash follows it, so that a
# changed recipe builds again.
key=$(basename "$(dirname "$base")")
key=${key#image-}-$(sha256sum "$0" | cut -c1-8)
stock=$E2E_ROOT/stock
mkdir -p "$stock/debs-$flavour"
exec 9>"$stock/$flavour.lock"
flock 9

cached() {
	local d
	for d in "$stock/$flavour-$key"-*; do
		if [ -f "$d/root.img" ] && [ -f "$d/vmlinuz" ] && [ -f "$d/initrd.img" ]; then echo "$d"; fi
	done | sort -V | tail -n 1
}
dir=$(cached)
if [ -n "$dir" ] && [ "${E2E_STOCK_REFRESH:-0}" != 1 ]; then
	log "stock kernel $flavour: cached $dir ($(cat "$dir/release"))"
	echo "$dir"
	exit 0
fi

[ "$(id -u)" -eq 0 ] || die "installing a stock kernel into the guest image needs root (loop mount, chroot)"
mirror=$(debian_mirror "$suite")
[ -n "$mirror" ] || mirror=$(debian_mirror bookworm)
[ -n "$mirror" ] || die "no apt source for bookworm in /etc/apt/sources.list.d/"

start=$SECONDS
tmp=$stock/$flavour-$key.tmp
rm -rf "$tmp"
mkdir -p "$tmp"
# A copy of the guest image, grown for a kernel's modules and initramfs-tools.
cp --sparse=always "$base" "$tmp/root.img"
truncate -s "${E2E_STOCK_IMAGE_SIZE:-3G}" "$tmp/root.img"
e2fsck -fy "$tmp/root.img" >/dev/null 2>&1 || true
resize2fs -f "$tmp/root.img" >"$tmp/resize.log" 2>&1 || { cat "$tmp/resize.log" >&2; die "resize2fs failed"; }

log "stock kernel $flavour: apt-get install linux-image-amd64 from $suite (log: $tmp/apt.log)"
# A private mount namespace: the loop mount and the chroot's /proc, /sys and /dev vanish with it.
unshare --mount --propagation private -- bash -euo pipefail -c '
	img=$1 out=$2 debs=$3 mirror=$4 suite=$5
	root=$out/mnt
	mkdir -p "$root"
	mount -o loop "$img" "$root"
	trap "umount -R \"$root\" 2>/dev/null || true" EXIT
	mount -t proc proc "$root/proc"
	mount -t sysfs sys "$root/sys"
	mount --rbind /dev "$root/dev"
	mount --bind "$debs" "$root/var/cache/apt/archives"
	if [ "$suite" != bookworm ]; then
		printf "\nTypes: deb\nURIs: %s\nSuites: %s\nComponents: main\n" "$mirror" "$suite" \
			>"$root/etc/apt/sources.list.d/stock-kernel.sources"
	fi
	# No service may start inside the chroot.
	printf "#!/bin/sh\nexit 101\n" >"$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
	# The initramfs holds the driver and file system of the root disk alone (MODULES=list), whatever initramfs-tools
	# guesses from the chroot: "most" packs every storage driver, and its compression was most of the build.
	# The guest loads the rest from its root disk.
	mkdir -p "$root/etc/initramfs-tools/conf.d"
	printf "virtio_pci\nvirtio_blk\next4\n" >>"$root/etc/initramfs-tools/modules"
	printf "MODULES=list\n" >"$root/etc/initramfs-tools/conf.d/cachestat-e2e.conf"
	chroot "$root" apt-get update -q
	# linux-image-amd64/SUITE: that package from that suite, and of its dependencies only what it needs from there.
	# --force-unsafe-io: no fsync per file of the modules; the image is thrown away if the build fails.
	DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -q --no-install-recommends \
		-o Dpkg::Options::=--force-unsafe-io "linux-image-amd64/$suite" initramfs-tools
	rm -f "$root/usr/sbin/policy-rc.d" "$root/etc/apt/sources.list.d/stock-kernel.sources"
	rm -rf "$root"/var/lib/apt/lists/*
	chroot "$root" dpkg-query -W -f "\${Version}\n" linux-image-amd64 >"$out/version"
	release=$(cd "$root/boot" && ls vmlinuz-* | sed "s/^vmlinuz-//" | sort -V | tail -n 1)
	echo "$release" >"$out/release"
	cp "$root/boot/vmlinuz-$release" "$out/vmlinuz"
	cp "$root/boot/initrd.img-$release" "$out/initrd.img"
	cp "$root/boot/config-$release" "$out/config"
' _ "$tmp/root.img" "$tmp" "$stock/debs-$flavour" "$mirror" "$suite" >"$tmp/apt.log" 2>&1 ||
	{ tail -n 30 "$tmp/apt.log" >&2; die "installing the stock kernel failed"; }
rmdir "$tmp/mnt"

version=$(cat "$tmp/version")
dir=$stock/$flavour-$key-$version
if [ -d "$dir" ]; then
	rm -rf "$tmp"
	log "stock kernel $flavour: $version is the cached one"
else
	mv "$tmp" "$dir"
fi
# Builds of other guest images, or older versions, are of no further use.
for old in "$stock/$flavour"-*; do
	case $old in "$dir" | *.lock) ;; *) rm -rf "$old" ;; esac
done
log "stock kernel $flavour: $(cat "$dir/release") ($version) in $dir, $((SECONDS - start)) s"
echo "$dir"

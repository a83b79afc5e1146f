#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the e2e guest's root disk: Debian bookworm (debootstrap minbase, then apt-get inside the chroot so that
# virtual packages resolve) with systemd, cloud-init, openssh-server, prometheus and the exporter's runtime
# libraries, turned into an ext4 image with mkfs.ext4 -d. Nothing of the project is baked in: the exporter, its
# unit and the Prometheus config arrive at boot through cloud-init, as on any VM.
#
# The image is cached under $BUILD_ROOT/e2e, keyed by a hash of this script and guest-packages.txt; a second run
# reuses it. Boots use a qcow2 overlay on top of it, so it stays clean.
# Prints the image's path as the last line of stdout; logs go to stderr.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

suite=bookworm
image_size=${E2E_IMAGE_SIZE:-2G}
key=$(hash_inputs "$E2E_DIR/build-image.sh" "$E2E_DIR/guest-packages.txt")
dir=$E2E_ROOT/image-$key
image=$dir/root.img

mkdir -p "$E2E_ROOT"
exec 9>"$E2E_ROOT/image.lock"
flock 9
if [ -f "$image" ]; then
	log "guest image: cached $image"
	echo "$image"
	exit 0
fi

[ "$(id -u)" -eq 0 ] || die "building the guest image needs root (debootstrap, chroot)"
mirror=$(debian_mirror "$suite")
[ -n "$mirror" ] || die "no apt source for $suite in /etc/apt/sources.list.d/"
security=$(debian_mirror "$suite-security")

start=$SECONDS
tmp=$dir.tmp
rm -rf "$tmp"
mkdir -p "$tmp"
root=$tmp/rootfs
log "guest image: debootstrap $suite into $root (log: $tmp/debootstrap.log)"
debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,udev \
	"$suite" "$root" "$mirror" >"$tmp/debootstrap.log" 2>&1 ||
	{ tail -n 30 "$tmp/debootstrap.log" >&2; die "debootstrap failed"; }

{
	printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: main\n' "$mirror" "$suite" "$suite"
	if [ -n "$security" ]; then
		printf '\nTypes: deb\nURIs: %s\nSuites: %s-security\nComponents: main\n' "$security" "$suite"
	fi
} >"$root/etc/apt/sources.list.d/debian.sources"
rm -f "$root/etc/apt/sources.list"
# No service may start inside the chroot.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"

mapfile -t packages < <(sed -e 's/#.*//' -e 's/[[:space:]]\+/\n/g' "$E2E_DIR/guest-packages.txt" | sed '/^$/d')
log "guest image: apt-get install ${#packages[@]} packages"
# A private mount namespace: /proc, /sys and /dev vanish with it, whatever happens.
unshare --mount --propagation private -- bash -euo pipefail -c '
	root=$1; shift
	mount -t proc proc "$root/proc"
	mount -t sysfs sys "$root/sys"
	mount --rbind /dev "$root/dev"
	chroot "$root" apt-get update -q
	DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -q --no-install-recommends "$@"
	chroot "$root" apt-get clean
' _ "$root" "${packages[@]}" >"$tmp/apt.log" 2>&1 ||
	{ tail -n 30 "$tmp/apt.log" >&2; die "apt-get in the guest chroot failed"; }
rm -f "$root/usr/sbin/policy-rc.d"
rm -rf "$root"/var/lib/apt/lists/*

# podman as the cases run it: rootful, the overlay storage driver, systemd's cgroups, crun; netavark, not
# the CNI plugins (which the guest does not have). Every podman of the guest reads these, so its database
# records the overlay driver whoever runs podman first.
mkdir -p "$root/etc/containers"
printf '[storage]\ndriver = "overlay"\nrunroot = "/run/containers/storage"\ngraphroot = "/var/lib/containers/storage"\n' \
	>"$root/etc/containers/storage.conf"
printf '[engine]\ncgroup_manager = "systemd"\nruntime = "crun"\n\n[network]\nnetwork_backend = "netavark"\n' \
	>"$root/etc/containers/containers.conf"
# The container image of the podman cases, made here rather than in the guest, where importing 64 MiB
# takes minutes under TCG: a static busybox, /data (64 MiB of random bytes) and its hard link
# /data.link, imported as localhost/e2e-data. No registry is involved.
log "guest image: podman import of localhost/e2e-data"
tree=$tmp/e2e-data
mkdir -p "$tree/bin" "$tree/dev" "$tree/proc" "$tree/sys" "$tree/tmp"
cp "$root/bin/busybox" "$tree/bin/busybox"
for cmd in sh cat sleep; do ln -s busybox "$tree/bin/$cmd"; done
head -c 64M /dev/urandom >"$tree/data"
ln "$tree/data" "$tree/data.link"
tar -C "$tree" -cf "$root/e2e-data.tar" .
rm -rf "$tree"
# No systemd in the chroot: cgroupfs and no events for this one command (the database keeps neither).
unshare --mount --propagation private -- bash -euo pipefail -c '
	root=$1
	# storage-untar remounts / private: the chroot'"'"'s root must be a mount point.
	mount --bind "$root" "$root"
	mount -t proc proc "$root/proc"
	mount -t sysfs sys "$root/sys"
	mount --rbind /dev "$root/dev"
	mount -t tmpfs tmpfs "$root/run"
	mount -t tmpfs tmpfs "$root/tmp"
	chroot "$root" podman --cgroup-manager=cgroupfs --events-backend=none import /e2e-data.tar localhost/e2e-data:latest
' _ "$root" >"$tmp/podman.log" 2>&1 || { tail -n 30 "$tmp/podman.log" >&2; die "podman import in the guest chroot failed"; }
rm -f "$root/e2e-data.tar"
rm -rf "$root"/var/tmp/*

log "guest image: configuring"
echo cachestat-guest >"$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 cachestat-guest\n::1 localhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
printf '/dev/vda / ext4 defaults,errors=remount-ro 0 1\n' >"$root/etc/fstab"
# systemd makes a fresh machine-id on each first boot.
: >"$root/etc/machine-id"
rm -f "$root/var/lib/dbus/machine-id"
# Every boot generates its own host keys (cloud-init's ssh module).
rm -f "$root"/etc/ssh/ssh_host_*

# Networking: systemd-networkd, DHCP on the one virtio NIC (QEMU user networking).
cat >"$root/etc/systemd/network/10-dhcp.network" <<'NET'
[Match]
Name=en* eth*

[Network]
DHCP=ipv4
LinkLocalAddressing=no
IPv6AcceptRA=no
NET
ln -sf /lib/systemd/system/systemd-networkd.service \
	"$root/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"
# Nothing waits for "online": the guest's only network is the host's forwarded ports.
ln -sf /dev/null "$root/etc/systemd/system/systemd-networkd-wait-online.service"
# Timers and services that would compete with the tests for the guest's slow CPUs.
# podman's own units (the API service and socket, containers with a restart policy, auto-update; the
# API and auto-update ran at boot for some 20 s of TCG time): none is used.
for unit in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer \
	podman.service podman.socket podman-restart.service podman-auto-update.timer podman-auto-update.service; do
	ln -sf /dev/null "$root/etc/systemd/system/$unit"
done

# cloud-init: the NoCloud seed drive only, never a network metadata service; the network is the image's.
cat >"$root/etc/cloud/cloud.cfg.d/90-e2e-guest.cfg" <<'CFG'
datasource_list: [ NoCloud ]
network: {config: disabled}
# One host key: RSA key generation alone takes many seconds under TCG.
ssh_genkeytypes: [ed25519]
CFG
# Modules that cost seconds of TCG time and have nothing to do here: locale (locale-gen, which the image
# neither has nor needs), grub-dpkg (no grub), keys-to-console (ssh-keygen once more per key),
# apt-configure (the guest installs nothing at boot).
sed -i -E '/^ - (locale|grub-dpkg|keys-to-console|apt-configure)$/d' "$root/etc/cloud/cloud.cfg"

log "guest image: mkfs.ext4 -d ($image_size)"
du -sh "$root" >&2
truncate -s "$image_size" "$tmp/root.img"
mkfs.ext4 -q -F -L cachestat-root -d "$root" "$tmp/root.img"
rm -rf "$root"

rm -rf "$dir"
mv "$tmp" "$dir"
# Images of older inputs are of no further use.
for old in "$E2E_ROOT"/image-*; do
	[ "$old" = "$dir" ] || rm -rf "$old"
done
log "guest image: built $image in $((SECONDS - start)) s"
echo "$image"

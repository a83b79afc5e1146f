#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make image: an OCI image of the exporter, from scratch, out of Debian packages only: the
# package of `make deb` and the runtime libraries it depends on (its Depends but adduser,
# followed recursively by apt-cache), each unpacked with dpkg-deb into a root filesystem that
# holds nothing else. apt-get download fetches the library packages from the host's configured
# archive into a cache; no image registry is contacted. buildah (its own storage, under
# $BUILD_ROOT/image) commits the image as localhost/cachestat-exporter:TAG and writes it as an
# OCI archive that `podman load -i` takes. TAG is the version of scripts/lib-version.sh with
# "~" and "+" (not allowed in a tag) written "-". Before committing, the binary must run in the
# root filesystem alone (chroot, --version). Prints the archive's path last.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
root=${BUILD_ROOT:-/var/tmp/cachestat_exporter}
out=$root/image
name=localhost/cachestat-exporter
[ "$(id -u)" -eq 0 ] || { echo "build-image: needs root (chroot, unpacking as root)" >&2; exit 1; }
for tool in buildah apt-get apt-cache dpkg-deb ldconfig; do
	command -v "$tool" >/dev/null || { echo "build-image: $tool missing (scripts/deps.txt)" >&2; exit 1; }
done

deb=$("$top/scripts/build-deb.sh" | tail -n 1)
version=$(dpkg-deb -f "$deb" Version)
tag=${version//[~+]/-}

# The runtime packages: the .deb's Depends without versions and alternatives, adduser dropped
# (the image has no maintainer scripts), then everything they depend on.
mapfile -t direct < <(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed -e 's/|.*//' -e 's/(.*)//' -e 's/[[:space:]]//g' |
	grep -vx -e adduser -e '')
mapfile -t pkgs < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
	--no-replaces --no-enhances "${direct[@]}" | grep -v -e '^ ' -e '^<' | sort -u)
mkdir -p "$out/debs"
rm -f "$out"/debs/*.deb
# apt downloads as _apt when that user can write the directory.
if getent passwd _apt >/dev/null; then chown _apt "$out/debs"; fi
(cd "$out/debs" && apt-get download -q "${pkgs[@]}" >"$out/download.log" 2>&1) || {
	cat "$out/download.log" >&2
	echo "build-image: apt-get download failed" >&2
	exit 1
}

rootfs=$out/rootfs
rm -rf "$rootfs"
mkdir -p "$rootfs"/{etc,tmp,proc,sys,dev}
chmod 1777 "$rootfs/tmp"
for f in "$out"/debs/*.deb "$deb"; do
	dpkg-deb -x "$f" "$rootfs"
done
# What the container does not use: the unit, the man pages, the docs but the copyrights.
rm -rf "$rootfs"/lib/systemd "$rootfs"/usr/share/man "$rootfs"/usr/share/info "$rootfs"/usr/share/lintian
find "$rootfs/usr/share/doc" -type f ! -name copyright -delete
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' \
	>"$rootfs/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
ldconfig -r "$rootfs"
got=$(chroot "$rootfs" /usr/bin/cachestat_exporter --version | head -n 1)
case $got in
"cachestat_exporter version $version "*) ;;
*)
	echo "build-image: the binary does not run in the root filesystem alone: $got" >&2
	exit 1
	;;
esac

bah=(buildah --root "$out/storage" --runroot "$out/run" --storage-driver vfs)
epoch=$(git -C "$top" log -1 --format=%ct HEAD)
ctr=$("${bah[@]}" from --name "cachestat-exporter-build-$$" scratch)
trap '"${bah[@]}" rm "$ctr" >/dev/null 2>&1 || true' EXIT
"${bah[@]}" copy "$ctr" "$rootfs" / >/dev/null
"${bah[@]}" config --entrypoint '["/usr/bin/cachestat_exporter"]' --cmd '' --port 9451/tcp \
	--stop-signal SIGTERM \
	--label org.opencontainers.image.title=cachestat-exporter \
	--label org.opencontainers.image.version="$version" \
	--label org.opencontainers.image.licenses=Apache-2.0 \
	--label org.opencontainers.image.description="Prometheus exporter of the page cache state of each cgroup" \
	"$ctr"
"${bah[@]}" commit -q --timestamp "$epoch" --rm "$ctr" "$name:$tag" >/dev/null
trap - EXIT
archive=$out/cachestat-exporter_$tag.oci.tar
rm -f "$out"/cachestat-exporter_*.oci.tar
"${bah[@]}" push -q "$name:$tag" "oci-archive:$archive:$name:$tag" >/dev/null
echo "build-image: $name:$tag, $(du -sh "$rootfs" | cut -f 1) unpacked, from ${#pkgs[@]} packages and the .deb" >&2
echo "$archive"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make image: OCI images of the exporter for amd64 and arm64, from scratch, out of Debian packages
# only, under one multi-arch index. amd64: the package of `make deb` and the runtime libraries
# it depends on (its Depends but adduser, followed recursively by apt-cache); arm64: the same
# libraries of Debian's arm64 archive (apt for that architecture, scripts/lib-apt-arch.sh; the
# host's package set is not changed) and the binary cross-compiled by scripts/build-cross.sh.
# Each package is unpacked with dpkg-deb into a root filesystem that holds nothing else; no
# image registry is contacted. Before committing, each binary must run in its root filesystem
# alone (amd64: chroot; arm64: qemu-aarch64-static) and say the version. buildah (its own
# storage, under $BUILD_ROOT/image) commits localhost/cachestat-exporter:TAG-ARCH, each with the
# OCI annotations (version, revision, source, licenses, created), and the index
# localhost/cachestat-exporter:TAG of both. Written: the index and both images as one OCI
# archive (cachestat-exporter_TAG.multiarch.oci.tar), an SPDX SBOM of each image's packages
# (cachestat-exporter_TAG.ARCH.spdx.json, also in the image at
# /usr/share/doc/cachestat-exporter/sbom.spdx.json), and the amd64 image alone as an OCI archive
# that `podman load -i` takes (cachestat-exporter_TAG.oci.tar). TAG is the version of
# scripts/lib-version.sh with "~" and "+" (not allowed in a tag) written "-". Prints the amd64
# archive's path last. ARCHES="amd64" builds that one alone. IMAGE_DIR (default $BUILD_ROOT/image) is where the
# storage and the archives go; the .deb and the cross-compiled binary come from $BUILD_ROOT's caches either way.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
root=${BUILD_ROOT:-/var/tmp/cachestat_exporter}
out=${IMAGE_DIR:-$root/image}
name=localhost/cachestat-exporter
[ "$(id -u)" -eq 0 ] || { echo "build-image: needs root (chroot, unpacking as root)" >&2; exit 1; }
for tool in buildah apt-get apt-cache dpkg-deb ldconfig; do
	command -v "$tool" >/dev/null || { echo "build-image: $tool missing (scripts/deps.txt)" >&2; exit 1; }
done

arches=${ARCHES:-amd64 arm64}
deb=$("$top/scripts/build-deb.sh" | tail -n 1)
version=$(dpkg-deb -f "$deb" Version)
tag=${version//[~+]/-}
revision=$(git -C "$top" rev-parse HEAD)
epoch=$(git -C "$top" log -1 --format=%ct HEAD)
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
source_url=$(sed -n 's/^Homepage: *//p' "$top/debian/control")
# shellcheck source=scripts/lib-apt-arch.sh
. "$top/scripts/lib-apt-arch.sh"

# The runtime packages: the .deb's Depends without versions and alternatives, adduser dropped
# (the image has no maintainer scripts), then everything they depend on.
mapfile -t direct < <(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed -e 's/|.*//' -e 's/(.*)//' -e 's/[[:space:]]//g' |
	grep -vx -e adduser -e '')

# rootfs ARCH: $out/rootfs-ARCH with the runtime packages of ARCH and the exporter.
rootfs() {
	local arch=$1 fs=$out/rootfs-$1 debs=$out/debs-$1 bin f got
	local -a pkgs run
	mkdir -p "$debs"
	rm -f "$debs"/*.deb
	# apt downloads as _apt when that user can write the directory.
	if getent passwd _apt >/dev/null; then chown _apt "$debs"; fi
	if [ "$arch" = "$(dpkg --print-architecture)" ]; then
		mapfile -t pkgs < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
			--no-breaks --no-replaces --no-enhances "${direct[@]}" | grep -v -e '^ ' -e '^<' | sort -u)
		(cd "$debs" && apt-get download -q "${pkgs[@]}" >"$out/download-$arch.log" 2>&1)
	else
		apt_arch_init "$out/apt-$arch" "$arch"
		mapfile -t pkgs < <(apt_arch_closure "${direct[@]}")
		(cd "$debs" && apt_arch apt-get download -q "${pkgs[@]}" >"$out/download-$arch.log" 2>&1)
	fi || {
		cat "$out/download-$arch.log" >&2
		echo "build-image: apt-get download for $arch failed" >&2
		return 1
	}
	rm -rf "$fs"
	mkdir -p "$fs"/{etc,tmp,proc,sys,dev}
	chmod 1777 "$fs/tmp"
	for f in "$debs"/*.deb; do
		dpkg-deb -x "$f" "$fs"
	done
	if [ "$arch" = "$(dpkg --print-architecture)" ]; then
		dpkg-deb -x "$deb" "$fs"
		cp "$deb" "$debs/"
		run=(chroot "$fs" /usr/bin/cachestat_exporter)
	else
		bin=$("$top/scripts/build-cross.sh" "$arch" | tail -n 1)
		install -D -m 0755 "$bin" "$fs/usr/bin/cachestat_exporter"
		install -D -m 0644 "$top/debian/copyright" "$fs/usr/share/doc/cachestat-exporter/copyright"
		run=("qemu-$(arch_qemu "$arch")-static" -L "$fs" "$fs/usr/bin/cachestat_exporter")
	fi
	# What the container does not use: the unit, the man pages, the docs but the copyrights.
	rm -rf "$fs"/lib/systemd "$fs"/usr/share/man "$fs"/usr/share/info "$fs"/usr/share/lintian
	find "$fs/usr/share/doc" -type f ! -name copyright -delete
	printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' \
		>"$fs/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$fs/etc/group"
	[ "$arch" != "$(dpkg --print-architecture)" ] || ldconfig -r "$fs"
	got=$("${run[@]}" --version 2>&1 | head -n 1) || true
	case $got in
	"cachestat_exporter version $version "*) ;;
	*)
		echo "build-image: the $arch binary does not run in its root filesystem alone: $got" >&2
		return 1
		;;
	esac
	# The SBOM of what the image holds: every package unpacked into it.
	{
		for f in "$debs"/*.deb; do
			dpkg-deb -f "$f" Package Version Architecture Homepage | sed 's/^[A-Za-z-]*: //' | paste -sd '\t'
		done
		# the cross-compiled exporter, installed without its .deb
		[ "${run[0]}" = chroot ] || printf 'cachestat-exporter\t%s\t%s\t%s\n' "$version" "$arch" "$source_url"
	} | "$top/scripts/image-sbom.py" --name "cachestat-exporter $tag $arch" --created "$created" \
		>"$out/cachestat-exporter_$tag.$arch.spdx.json"
	install -D -m 0644 "$out/cachestat-exporter_$tag.$arch.spdx.json" \
		"$fs/usr/share/doc/cachestat-exporter/sbom.spdx.json"
	echo "build-image: $arch root filesystem, $(du -sh "$fs" | cut -f 1) unpacked, from ${#pkgs[@]} packages" >&2
}

arch_qemu() {
	case $1 in
	arm64) echo aarch64 ;;
	*) echo "$1" ;;
	esac
}

bah=(buildah --root "$out/storage" --runroot "$out/run" --storage-driver vfs)
ann=(title=cachestat-exporter version="$version" revision="$revision" licenses=Apache-2.0
	created="$created" source="$source_url" url="$source_url"
	description="Prometheus exporter of the page cache state of each cgroup")
rm -f "$out"/cachestat-exporter_*.oci.tar "$out"/cachestat-exporter_*.spdx.json
"${bah[@]}" manifest rm "$name:$tag" >/dev/null 2>&1 || true
"${bah[@]}" manifest create "$name:$tag" >/dev/null
for arch in $arches; do
	rootfs "$arch"
	ctr=$("${bah[@]}" from --name "cachestat-exporter-build-$arch-$$" scratch)
	trap '"${bah[@]}" rm "$ctr" >/dev/null 2>&1 || true' EXIT
	"${bah[@]}" copy "$ctr" "$out/rootfs-$arch" / >/dev/null
	cfg=(--arch "$arch" --os linux --entrypoint '["/usr/bin/cachestat_exporter"]' --cmd '' --port 9451/tcp
		--stop-signal SIGTERM)
	for a in "${ann[@]}"; do
		cfg+=(--label "org.opencontainers.image.$a" --annotation "org.opencontainers.image.$a")
	done
	"${bah[@]}" config "${cfg[@]}" "$ctr"
	"${bah[@]}" commit -q --timestamp "$epoch" --rm "$ctr" "$name:$tag-$arch" >/dev/null
	trap - EXIT
	add=(--arch "$arch" --os linux)
	for a in "${ann[@]}"; do
		add+=(--annotation "org.opencontainers.image.$a")
	done
	"${bah[@]}" manifest add "${add[@]}" "$name:$tag" "containers-storage:$name:$tag-$arch" >/dev/null
done
index=$out/cachestat-exporter_$tag.multiarch.oci.tar
"${bah[@]}" manifest push -q --all --format oci "$name:$tag" "oci-archive:$index:$name:$tag" >/dev/null
echo "build-image: $name:$tag, an index of $arches: $index" >&2
archive=$out/cachestat-exporter_$tag.oci.tar
"${bah[@]}" push -q "$name:$tag-amd64" "oci-archive:$archive:$name:$tag" >/dev/null
echo "$archive"

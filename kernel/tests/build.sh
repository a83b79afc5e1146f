#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the guest side of the kernel tests and prints the directory that holds them (last line of
# stdout; progress goes to stderr):
#
#   test_cachestat           the seed's selftest       } built from the selftest patch's
#   test_cachestat_full      the fuller kselftest      } tools/testing/selftests/cachestat
#   test_cachestat_mainline  mainline's call form      }
#   test_cachestat_mainline32  the same built with -m32: a compat task on the 64-bit kernel
#   numa_refault          the NUMA workingset proof (kernel/tests/numa_refault.c)
#   cachestat_bench       cachestat against mmap+mincore (kernel/tests/cachestat_bench.c)
#   run-in-guest.sh       runs the tests in any guest and prints TAP plus a summary
#   initramfs.cpio.gz     busybox initramfs that runs them at boot (used by qemu-run.sh)
#
# All programs are static, so they run in the busybox initramfs and in a Debian guest alike.
# The selftests are compiled against the uapi headers of the patched tree: Debian's tarball is
# unpacked once under $BUILD_ROOT/kernel-tests/, the series is applied to a hard-linked
# copy, and `make headers` exports the headers. Outputs are cached under a hash of every input.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
kernel_dir=$(cd "$here/.." && pwd)
BUILD_ROOT=${BUILD_ROOT:-/var/tmp/cachestat_exporter}
KERNEL_TARBALL=${KERNEL_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
root=$BUILD_ROOT/kernel-tests
busybox=${BUSYBOX:-/usr/bin/busybox}

log() { printf '%s tests/build.sh: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The series as build.sh applies it, plus the selftest patch if the series does not list it yet.
patch_list() {
	local p listed=0
	while read -r p; do
		[ -n "$p" ] || continue
		echo "$kernel_dir/patches/$p"
		case $p in *-selftests-*) listed=1 ;; esac
	done < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$kernel_dir/patches/series")
	if [ $listed = 0 ]; then
		for p in "$kernel_dir"/patches/*-selftests-*.patch; do [ -r "$p" ] && echo "$p"; done
	fi
	return 0
}

mapfile -t patches < <(patch_list)
[ ${#patches[@]} -gt 0 ] || die "no patches in $kernel_dir/patches/series"
for p in "${patches[@]}"; do [ -r "$p" ] || die "missing patch $p"; done

key=$({
	stat -c 'tarball %n %s %Y' "$KERNEL_TARBALL"
	gcc --version | head -n1
	sha256sum "$busybox" | cut -d' ' -f1
	for p in "${patches[@]}"; do echo "${p##*/}"; sha256sum <"$p"; done
	cd "$here" && sha256sum ./*.c ./*.sh
} | sha256sum | cut -c1-16)
out=$root/out-$key
if [ -s "$out/initramfs.cpio.gz" ]; then
	log "cached ($out)"
	echo "$out"
	exit 0
fi

mkdir -p "$root"
exec 8>"$root/lock"
flock 8
if [ -s "$out/initramfs.cpio.gz" ]; then
	echo "$out"
	exit 0
fi

pristine=$root/linux-$(stat -c '%s-%Y' "$KERNEL_TARBALL")
if [ ! -e "$pristine/.unpacked" ]; then
	log "unpacking $KERNEL_TARBALL into $pristine"
	rm -rf "$pristine"
	mkdir -p "$pristine"
	tar -xJf "$KERNEL_TARBALL" -C "$pristine" --strip-components=1
	touch "$pristine/.unpacked"
fi

work=$root/work
rm -rf "$work" "$out.tmp"
log "applying ${#patches[@]} patches to a copy of the tree"
cp -al "$pristine" "$work"
for p in "${patches[@]}"; do
	(cd "$work" && git apply --whitespace=nowarn "$p") || die "${p##*/} does not apply"
done
log "exporting uapi headers"
make -s -C "$work" headers >/dev/null

mkdir -p "$out.tmp"
cflags=(-static -O2 -Wall -Werror)
st=$work/tools/testing/selftests/cachestat
for prog in test_cachestat test_cachestat_full test_cachestat_mainline; do
	[ -r "$st/$prog.c" ] || die "$prog.c is not in the series (selftest patch missing?)"
	# The seed's selftest is kept as it was, warnings included.
	extra=()
	[ $prog = test_cachestat ] && extra=(-Wno-error)
	gcc "${cflags[@]}" "${extra[@]}" -isystem "$work/usr/include" -o "$out.tmp/$prog" "$st/$prog.c"
done
# A 32-bit build of the mainline-form test: what a compat task gets. Debian's i686 cross compiler, not
# gcc-multilib, which conflicts with the other cross compilers (the arm64 build's).
i686-linux-gnu-gcc "${cflags[@]}" -isystem "$work/usr/include" -o "$out.tmp/test_cachestat_mainline32" \
	"$st/test_cachestat_mainline.c" || die "i686-linux-gnu-gcc failed (is gcc-i686-linux-gnu installed?)"
for prog in numa_refault cachestat_bench; do
	gcc "${cflags[@]}" -o "$out.tmp/$prog" "$here/$prog.c"
done
install -m 0755 "$here/run-in-guest.sh" "$out.tmp/run-in-guest.sh"

log "building the initramfs"
initrd=$out.tmp/initramfs
mkdir -p "$initrd"/{bin,dev,proc,sys,tmp,mnt/scratch,mnt/slow,tests}
cp "$busybox" "$initrd/bin/busybox"
install -m 0755 "$here/guest-init.sh" "$initrd/init"
cp "$out.tmp"/test_cachestat "$out.tmp"/test_cachestat_full "$out.tmp"/test_cachestat_mainline \
	"$out.tmp"/test_cachestat_mainline32 \
	"$out.tmp"/numa_refault \
	"$out.tmp"/cachestat_bench "$out.tmp"/run-in-guest.sh "$initrd/tests/"
(cd "$initrd" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) | gzip -1 >"$out.tmp/initramfs.cpio.gz"
rm -rf "$initrd" "$work"
# Outputs of older inputs are a few MB each, but nothing uses them any more.
find "$root" -maxdepth 1 -name 'out-*' ! -name "out-$key*" -exec rm -rf {} +
mv "$out.tmp" "$out"
log "built ($out)"
echo "$out"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The kernel's own scripts/checksyscalls.sh on the patched tree, for x86_64, i386 and arm64
# (native and compat tables): `make prepare` of a defconfig runs it and prints
# "warning: #warning syscall NAME not implemented" for every syscall an architecture lacks.
# Passes an architecture when no such warning names cachestat and the build of the prepare
# step succeeds. Not part of make test (a few minutes per architecture).
#
#   kernel/scripts/check-syscalls.sh [ARCH...]     (default: x86_64 i386 arm64)
#
# Needs the cross compilers of kernel/deps.txt's comment: gcc-i686-linux-gnu, gcc-aarch64-linux-gnu.
set -euo pipefail
. "$(dirname "$0")/lib-kernel.sh"

main() {
	local arches=("$@") arch cross out passed=0 failed=0 base tree
	[ $# -gt 0 ] || arches=(x86_64 i386 arm64)
	mapfile -t patches < <(series_patches)
	base=$(ensure_base_repo)
	tree=$KROOT/src-syscalls
	prepare_tree "$base" "$tree" "${patches[@]}"
	for arch in "${arches[@]}"; do
		case $arch in
		x86_64) cross= ;;
		i386) cross=i686-linux-gnu- ;;
		arm64) cross=aarch64-linux-gnu- ;;
		*) echo "unknown architecture $arch" >&2; exit 2 ;;
		esac
		out=$KROOT/syscalls-$arch
		mkdir -p "$out"
		if ! make -C "$tree" O="$out" ARCH="$arch" CROSS_COMPILE="$cross" -j"$JOBS" \
			defconfig prepare >"$out/prepare.log" 2>&1; then
			echo "FAIL checksyscalls $arch: make prepare failed ($out/prepare.log)"
			tail -n 20 "$out/prepare.log" | sed 's/^/    /'
			failed=$((failed + 1))
			continue
		fi
		if grep -q 'checksyscalls' "$out/prepare.log" && ! grep -q '#warning syscall' "$out/prepare.log"; then
			echo "PASS checksyscalls $arch: no missing syscall"
			passed=$((passed + 1))
		else
			echo "FAIL checksyscalls $arch:"
			grep '#warning syscall\|checksyscalls' "$out/prepare.log" | sed 's/^/    /'
			failed=$((failed + 1))
		fi
	done
	echo "$passed passed, $failed failed"
	[ $failed -eq 0 ]
}

main "$@"
exit

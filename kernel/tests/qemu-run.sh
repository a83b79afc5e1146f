#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Boots a kernel with the test initramfs under QEMU (TCG) and captures its serial console.
#
# Usage: qemu-run.sh BZIMAGE ARTIFACT_DIR LOG [MODE] [TIMEOUT_S] [MEM_MB_PER_NODE] [EXTRA_CMDLINE]
#   MODE            test (default) | numa | bench, see guest-init.sh
#   TIMEOUT_S       guard: QEMU is killed after this many seconds (default 900)
#
# The guest: two sockets of one CPU each and two NUMA nodes, emulated by the kernel (numa=fake=2:
# the kernels have no ACPI to read QEMU's node tables; each CPU lands on its own node), a fresh ext4
# scratch disk and a swap disk, four 2 MiB hugetlb pages, no network. Exit status: 0 when the guest
# reached the end marker and rebooted (QEMU's -no-reboot ends it), 124 on timeout, 1 otherwise. The
# log keeps the whole console output.
set -uo pipefail

bz=${1:?bzImage}
artifacts=${2:?artifact directory}
log=${3:?log file}
mode=${4:-test}
timeout_s=${5:-900}
node_mb=${6:-512}
extra=${7:-}
BUILD_ROOT=${BUILD_ROOT:-/var/tmp/cachestat_exporter}

mkdir -p "$BUILD_ROOT/kernel-tests"
run=$(mktemp -d "$BUILD_ROOT/kernel-tests/run.XXXXXX")
trap 'rm -rf "$run"' EXIT

# 3 GiB scratch: the 2^15-page files, a 2 TB sparse file (4K blocks), the 1 GiB benchmark file.
truncate -s 3G "$run/scratch.img"
mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 -L scratch "$run/scratch.img"
truncate -s 256M "$run/swap.img"
# A small ext4 disk throttled to 1 MiB/s of writes: writeback lasts long enough to be seen.
truncate -s 64M "$run/slow.img"
mkfs.ext4 -q -F -b 4096 -L slow "$run/slow.img"
mkswap -q "$run/swap.img" >/dev/null 2>&1 || mkswap "$run/swap.img" >/dev/null

cmdline="console=ttyS0 loglevel=1 log_buf_len=8M panic=-1 numa=fake=2 hugepages=4 cachestat.mode=$mode $extra"
: >"$log"
timeout -k 10 "$timeout_s" qemu-system-x86_64 \
	-accel tcg -machine pc -cpu qemu64 \
	-m $((2 * node_mb))M -smp 2,sockets=2,cores=1,threads=1 \
	-kernel "$bz" -initrd "$artifacts/initramfs.cpio.gz" -append "$cmdline" \
	-drive file="$run/scratch.img",format=raw,if=virtio,cache=unsafe \
	-drive file="$run/swap.img",format=raw,if=virtio,cache=unsafe \
	-drive file="$run/slow.img",format=raw,if=virtio,cache=unsafe,throttling.bps-write=1048576 \
	-nic none -vga none -display none -monitor none -serial file:"$log" -no-reboot \
	</dev/null >"$run/qemu.out" 2>&1
rc=$?
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	echo "qemu-run.sh: guest killed after ${timeout_s} s" >&2
	exit 124
fi
if [ $rc -ne 0 ]; then
	echo "qemu-run.sh: qemu exited $rc:" >&2
	cat "$run/qemu.out" >&2
	exit 1
fi
grep -q '^=== dmesg end' <(tr -d '\r' <"$log") || { echo "qemu-run.sh: guest did not finish" >&2; exit 1; }
exit 0

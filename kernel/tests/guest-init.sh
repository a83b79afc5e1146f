#!/bin/busybox sh
# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=dash
# /init of the test initramfs. The kernel command line chooses what runs:
#   cachestat.mode=test    run-in-guest.sh: seed selftest, kselftest, NUMA proof (default)
#   cachestat.mode=numa    run-in-guest.sh numa
#   cachestat.mode=bench   cachestat_bench (cachestat.bench=GB,GB,... sets the mincore sizes)
# Disks: /dev/vda an ext4 scratch file system, /dev/vdb a swap device, /dev/vdc a small ext4
# file system on a disk throttled to 1 MiB/s of writes.
# Everything is printed on the serial console between markers that qemu-run.sh looks for;
# then the kernel log follows and the guest powers off.
/bin/busybox mkdir -p /usr/bin /usr/sbin /sbin
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
mkdir -p /dev/shm /sys/fs/cgroup
mount -t tmpfs tmpfs /dev/shm
mount -t cgroup2 cgroup2 /sys/fs/cgroup

mode=test bench='' suites=''
for arg in $(cat /proc/cmdline); do
	case $arg in
	cachestat.mode=*) mode=${arg#*=} ;;
	cachestat.bench=*) bench=$(echo "${arg#*=}" | tr , ' ') ;;
	cachestat.suites=*) suites=$(echo "${arg#*=}" | tr , ' ') ;;
	esac
done

swapon /dev/vdb || echo "# swapon /dev/vdb failed"
# Without the ext4 scratch disk the file cases would run on the initramfs, where some pass by
# construction: no test runs then, and the run fails.
scratch_ok=1
mount -t ext4 /dev/vda /mnt/scratch || scratch_ok=0
mount -t ext4 /dev/vdc /mnt/slow && export CACHESTAT_SLOW_DIR=/mnt/slow

echo "=== cachestat-tests begin mode=$mode kernel=$(uname -r)"
# shellcheck disable=SC2086 # $suites and $bench are lists
[ $scratch_ok = 1 ] || mode=noscratch
case $mode in
noscratch) echo "not ok 1 setup: mounting the ext4 scratch disk /dev/vda failed"; false ;;
test) /tests/run-in-guest.sh /mnt/scratch $suites ;;
flush) /tests/cachestat_bench --flush /mnt/scratch ;;
numa) /tests/run-in-guest.sh /mnt/scratch numa ;;
bench)
	/tests/cachestat_bench /mnt/scratch $bench ;;
*) echo "unknown mode $mode"; false ;;
esac
echo "=== cachestat-tests exit $?"
echo "=== dmesg begin"
dmesg
echo "=== dmesg end"
umount /mnt/scratch
swapoff /dev/vdb
sync
# No ACPI to power off with: the reboot ends QEMU (-no-reboot).
reboot -f

#!/bin/busybox sh
# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=dash
# /init of the test initramfs. The kernel command line chooses what runs:
#   cachestat.mode=test    run-in-guest.sh: seed selftest, kselftest, NUMA proof (default)
#   cachestat.mode=numa    run-in-guest.sh numa
#   cachestat.mode=bench   cachestat_bench (cachestat.bench=GB,GB,... sets the mincore sizes)
# Disks: /dev/vda an ext4 scratch file system, /dev/vdb a swap device.
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

mode=test bench=
for arg in $(cat /proc/cmdline); do
	case $arg in
	cachestat.mode=*) mode=${arg#*=} ;;
	cachestat.bench=*) bench=$(echo "${arg#*=}" | tr , ' ') ;;
	esac
done

swapon /dev/vdb || echo "# swapon /dev/vdb failed"
mount -t ext4 /dev/vda /mnt/scratch || echo "# mounting the ext4 scratch disk failed"

echo "=== cachestat-tests begin mode=$mode kernel=$(uname -r)"
case $mode in
test) /tests/run-in-guest.sh /mnt/scratch ;;
numa) /tests/run-in-guest.sh /mnt/scratch numa ;;
bench)
	# shellcheck disable=SC2086 # a list of sizes
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
poweroff -f

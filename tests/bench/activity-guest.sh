#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-activity-guest: the activity collector against known workloads, and what it costs, in guests whose
# kernels have kprobes and BPF: the e2e guest on our patched 6.1 (release, kprobes without function tracing: the
# functions come from /proc/kallsyms) and on the stock mainline kernel of tests/e2e/stock.sh (bookworm-backports',
# with function tracing: available_filter_functions), each booted with the e2e guest image, the exporter built here
# shipped as a bare binary. In each guest tests/bench/activity-workload.sh reads a 64 MiB file cold and warm and
# writes 16 MiB in a cgroup of its own (the misses, hits and dirtied pages expected are 16,384, 16,384 and 4,096,
# each within 5%), then times a cached-read loop with the collector off and on and prints the ratio. The guests
# are emulated (QEMU TCG), where a trap into a kprobe costs more than on hardware: the ratio is an upper bound.
# Environment: ACTIVITY_KERNELS (default "release mainline"), and as for tests/e2e/run.sh (vm.sh); the host ports
# default to 10522, 19951 and 19590, apart from the e2e suite's and the stock suites', and the run is locked apart
# from them (run-bench-activity).
set -euo pipefail
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/../e2e/lib.sh"
export E2E_SSH_PORT=${E2E_SSH_PORT:-10522} E2E_EXPORTER_PORT=${E2E_EXPORTER_PORT:-19951}
export E2E_PROM_PORT=${E2E_PROM_PORT:-19590}
# shellcheck source=tests/e2e/vm.sh
source "$E2E_DIR/vm.sh"

[ "$(id -u)" -eq 0 ] || die "needs root (the guest's disks and QEMU, as the e2e suite)"
make -s -C "$TOP/exporter" ACTIVITY=yes cachestat_exporter >/dev/null || die "the exporter does not build with ACTIVITY=yes"
RUN=$E2E_ROOT/run-bench-activity
lock_run run-bench-activity
rm -rf "$RUN"
mkdir -p "$RUN"
trap vm_stop EXIT
export E2E_EXPORTER=$TOP/exporter/cachestat_exporter E2E_OCI=none

# one_kernel NAME: boot the guest on that kernel, run the workload and the cost loop there
one_kernel() {
	local dir
	case $1 in
	release) vm_boot "$RUN/$1" ;;
	mainline)
		dir=$("$E2E_DIR/build-stock-kernel.sh" mainline | tail -n 1) || die "build-stock-kernel.sh mainline failed"
		# as stock.sh boots it: a TCG guest misses the IO-APIC timer check of Debian's kernels
		E2E_APPEND="no_timer_check ${E2E_APPEND:-}" E2E_IMAGE=$dir/root.img E2E_KERNEL=$dir/vmlinuz \
			E2E_INITRD=$dir/initrd.img vm_boot "$RUN/$1"
		;;
	*) die "ACTIVITY_KERNELS: unknown kernel $1 (release, mainline)" ;;
	esac
	vm_wait_booted
	vm_ssh 'systemctl stop cachestat-exporter prometheus prometheus-alertmanager' || true
	vm_ssh 'cat >/root/activity-workload.sh && chmod 755 /root/activity-workload.sh' <"$TOP/tests/bench/activity-workload.sh"
	echo "== the activity collector in a guest (QEMU TCG, $1 kernel $(vm_ssh uname -r))"
	vm_ssh /root/activity-workload.sh | tee "$RUN/$1.txt"
	vm_stop
}

mkdir -p "$RUN"
for k in ${ACTIVITY_KERNELS:-release mainline}; do
	mkdir -p "$RUN/$k"
	one_kernel "$k"
done

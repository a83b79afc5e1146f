#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The activity collector against known workloads in a guest whose kernel has kprobes and BPF: the stock mainline
# kernel of tests/e2e/stock.sh (bookworm-backports'), booted with the e2e guest image, the exporter built here shipped
# as a bare binary. In a cgroup of its own the guest reads a 64 MiB file cold (after dropping the caches), then warm,
# then writes 16 MiB, and prints the cgroup's counters after each step: the misses, hits and dirtied pages expected
# are 16,384, 16,384 and 4,096 (pages of 4 KiB), each within 5%.
# Environment: as for tests/e2e/run.sh (vm.sh); the host ports default to 10522, 19951 and 19590, apart from the
# e2e suite's and the stock suites', and the run is locked apart from them (run-bench-activity).
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
dir=$("$E2E_DIR/build-stock-kernel.sh" mainline | tail -n 1) || die "build-stock-kernel.sh mainline failed"
rm -rf "$RUN"
mkdir -p "$RUN"
trap vm_stop EXIT

export E2E_EXPORTER=$TOP/exporter/cachestat_exporter E2E_OCI=none
# as stock.sh boots it: a TCG guest misses the IO-APIC timer check of Debian's kernels
E2E_APPEND="no_timer_check ${E2E_APPEND:-}" E2E_IMAGE=$dir/root.img E2E_KERNEL=$dir/vmlinuz E2E_INITRD=$dir/initrd.img \
	vm_boot "$RUN"
wait_for "${E2E_SSH_WAIT:-600}" ssh vm_ssh true
vm_ssh cloud-init status --wait >"$RUN/cloud-init-status" 2>&1 ||
	die "cloud-init reported an error (see /var/log/cloud-init-output.log in the guest)"
log "ready: cloud-init done at $((SECONDS - VM_STARTED)) s"
vm_ssh 'systemctl stop cachestat-exporter' || true
vm_ssh 'cat >/root/activity-workload.sh && chmod 755 /root/activity-workload.sh' <"$TOP/tests/bench/activity-workload.sh"
echo "the activity collector in a guest (QEMU TCG, kernel $(vm_ssh uname -r))"
vm_ssh /root/activity-workload.sh

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-cardinality-guest: bench-cardinality's two 110-pod nodes in the e2e guest, on a pure
# cgroup v2 tree with the memory controller (the patched kernel, two fake NUMA nodes), where a
# node sends what a hybrid host's cannot: the v2-only families, memory.max where kubelet set it,
# the refaults per NUMA node. Boots the guest of tests/e2e (its cached image and kernel under
# BUILD_ROOT, the exporter built here shipped as a bare binary, no OCI image), stops the guest's
# exporter, Prometheus and Alertmanager (beside the measured ones they would only take the
# emulated CPUs), copies in tests/bench/cardinality.sh and lib-node.sh, dashboards/rules/*.yml,
# holder.c built static here and the DaemonSet's arguments and config rendered here
# (tests/bench/daemonset-args.sh; the guest has neither a compiler nor kubectl), runs
# cardinality.sh there with CARD_V1 empty and CARD_V2=/sys/fs/cgroup, its files on the scratch
# disk, and prints its table (kept in $BUILD_ROOT/e2e/run-bench-cardinality/table.txt). The guest
# is emulated (QEMU TCG): a run took 6.5 minutes on 2 loaded cores, 4.7 of them in cardinality.sh.
# Environment: as for tests/e2e/run.sh (vm.sh), with E2E_MEM_MB 4096 by default (~700 processes,
# their files, memfds and temporary files, and a Prometheus), E2E_TIMEOUT 3600 and E2E_SSH_WAIT
# 600; the host ports default to 10222, 19651 and 19290, apart from the e2e suite's, and the run is
# locked apart from it (run-bench-cardinality). CARD_PODS, CARD_GAP_SECONDS, CARD_EXPORTER_FLAGS,
# CARD_PROM_INTERVAL and CARD_PROM_WAIT are passed on to cardinality.sh.
set -euo pipefail
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/../e2e/lib.sh"
E2E_SSH_PORT=${E2E_SSH_PORT:-10222} E2E_EXPORTER_PORT=${E2E_EXPORTER_PORT:-19651}
E2E_PROM_PORT=${E2E_PROM_PORT:-19290}
export E2E_MEM_MB=${E2E_MEM_MB:-4096} E2E_TIMEOUT=${E2E_TIMEOUT:-3600} E2E_SSH_WAIT=${E2E_SSH_WAIT:-600}
# shellcheck source=tests/e2e/vm.sh
source "$E2E_DIR/vm.sh"

[ "$(id -u)" -eq 0 ] || die "needs root (the guest's disks and QEMU, as the e2e suite)"
for t in cc kubectl; do command -v $t >/dev/null || die "$t missing"; done
make -s -C "$TOP/exporter" >/dev/null || die "the exporter does not build"
RUN=$E2E_ROOT/run-bench-cardinality
lock_run run-bench-cardinality
rm -rf "$RUN"
mkdir -p "$RUN"
trap vm_stop EXIT

# What the guest runs, laid out as in the tree (cardinality.sh finds the rules from its own path).
tree=$RUN/tree
mkdir -p "$tree/tests/bench" "$tree/dashboards/rules"
install -m 0755 "$TOP/tests/bench/cardinality.sh" "$tree/tests/bench/"
install -m 0644 "$TOP/tests/bench/lib-node.sh" "$tree/tests/bench/"
install -m 0644 "$TOP"/dashboards/rules/*.yml "$tree/dashboards/rules/"
cc -static -O2 -Wall -o "$tree/holder" "$TOP/tests/bench/holder.c" ||
	die "cannot build holder.c statically (the C library's static archive, libc6-dev)"
"$TOP/tests/bench/daemonset-args.sh" "$tree/daemonset"

# the binary of this tree, not a package: nothing to build but the seed; no OCI image
export E2E_EXPORTER=$TOP/exporter/cachestat_exporter E2E_OCI=none
vm_boot "$RUN"
vm_wait_booted
vm_ssh 'systemctl stop cachestat-exporter prometheus prometheus-alertmanager' || true
tar -C "$tree" -cf - . | vm_ssh 'rm -rf /root/bench && mkdir /root/bench && tar -C /root/bench -xf -'

env=(BUILD_ROOT=/scratch/bench CARD_V1= CARD_V2=/sys/fs/cgroup CARD_BIN=/usr/bin/cachestat_exporter
	CARD_HOLDER=/root/bench/holder CARD_ARGS_FILE=/root/bench/daemonset/args
	CARD_CONFIG=/root/bench/daemonset/config.json)
for v in CARD_PODS CARD_GAP_SECONDS CARD_EXPORTER_FLAGS CARD_PROM_INTERVAL CARD_PROM_WAIT; do
	[ -z "${!v+set}" ] || env+=("$v=${!v}")
done
log "guest: cardinality.sh ($(vm_ssh nproc) CPUs, $(vm_ssh 'numactl --hardware | head -n 1'))"
started=$SECONDS
echo "cardinality.sh in the e2e guest (QEMU TCG, kernel $(vm_ssh uname -r), ${E2E_MEM_MB} MiB)"
# shellcheck disable=SC2029 # expanded here on purpose: the guest gets the values
vm_ssh "cd /root/bench && env $(printf '%q ' "${env[@]}") tests/bench/cardinality.sh" | tee "$RUN/table.txt"
log "guest: cardinality.sh took $((SECONDS - started)) s; the whole run $((SECONDS - VM_STARTED)) s since QEMU started"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-hostile-guest: hostile.sh's descriptor rows (1 to 1,000,000 descriptors held by one
# process) in the e2e guest, where root has CAP_SYS_RESOURCE to raise fs.nr_open and
# RLIMIT_NOFILE, which a build container may lack. Boots the guest of tests/e2e (its cached image
# and kernel under BUILD_ROOT, the exporter built here shipped as a bare binary), runs
# HOSTILE_ROWS=descriptors tests/bench/hostile.sh there and prints its table. The guest is
# emulated (QEMU TCG): its CPU seconds are several times the host's, to compare with each other.
# Environment: as for tests/e2e/run.sh (vm.sh); the host ports default to 10122, 19551 and 19190,
# apart from the e2e suite's, and the run is locked apart from it (run-bench-hostile).
set -euo pipefail
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/../e2e/lib.sh"
E2E_SSH_PORT=${E2E_SSH_PORT:-10122} E2E_EXPORTER_PORT=${E2E_EXPORTER_PORT:-19551}
E2E_PROM_PORT=${E2E_PROM_PORT:-19190}
# shellcheck source=tests/e2e/vm.sh
source "$E2E_DIR/vm.sh"

[ "$(id -u)" -eq 0 ] || die "needs root (the guest's disks and QEMU, as the e2e suite)"
make -s -C "$TOP/exporter" >/dev/null || die "the exporter does not build"
RUN=$E2E_ROOT/run-bench-hostile
lock_run run-bench-hostile
rm -rf "$RUN"
mkdir -p "$RUN"
trap vm_stop EXIT

# the binary of this tree, not a package: nothing to build but the seed; no OCI image
export E2E_EXPORTER=$TOP/exporter/cachestat_exporter E2E_OCI=none
vm_boot "$RUN"
vm_wait_booted
vm_ssh 'mkdir -p /root/bench/tests/bench && cat >/root/bench/tests/bench/hostile.sh && chmod 755 /root/bench/tests/bench/hostile.sh' \
	<"$TOP/tests/bench/hostile.sh"
# the guest's own exporter service would scan beside the measured ones
vm_ssh 'systemctl stop cachestat-exporter' || true
log "guest: hostile.sh's descriptor rows"
echo "hostile.sh in the e2e guest (QEMU TCG, kernel $(vm_ssh uname -r)): the descriptors one process holds"
vm_ssh 'HOSTILE_BIN=/usr/bin/cachestat_exporter HOSTILE_ROWS=descriptors /root/bench/tests/bench/hostile.sh'

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make demo: boots the e2e guest (patched kernel, cloud-init, the exporter as a service, Prometheus) with two
# sample workloads in two cgroups, prints the host URLs of the exporter and of Prometheus, and runs until
# Ctrl-C, which stops the guest.
#   /demo-reader     holds a 96 MiB file that it read once: cached, nothing evicted
#   /demo-thrasher   re-reads a 64 MiB file in a 32 MiB memory.max: evictions and refaults all the time
# Environment: as for run.sh (vm.sh: ports, kernel, memory).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$E2E_DIR/vm.sh"

RUN=$E2E_ROOT/run-demo
lock_run run-demo
rm -rf "$RUN"
mkdir -p "$RUN"
trap vm_stop EXIT
trap 'echo; log "demo: Ctrl-C, stopping the guest"; exit 0' INT TERM

vm_boot "$RUN"
vm_wait_ready
vm_ssh 'cat >/usr/local/sbin/e2e-guest && chmod 755 /usr/local/sbin/e2e-guest' <"$E2E_DIR/guest-helper.sh"
log "demo: starting the workloads"
vm_ssh 'set -e
	e2e-guest cgroup demo-reader
	e2e-guest mkfile /scratch/demo/reader.dat 96
	e2e-guest hold demo-reader /scratch/demo/reader.dat
	e2e-guest cgroup demo-thrasher 32M
	e2e-guest mkfile /scratch/demo/thrasher.dat 64
	e2e-guest thrash demo-thrasher /scratch/demo/thrasher.dat'
workloads_seen() { [ -n "$(prom_value 'cachestat_cgroup_cached_bytes{cgroup="/demo-thrasher"}')" ]; }
wait_for 120 "the workloads' metrics in Prometheus" workloads_seen

prom=http://127.0.0.1:$E2E_PROM_PORT
cat <<EOT

  cachestat_exporter demo: the guest is up ($(vm_ssh uname -r)).

  Exporter metrics:  http://127.0.0.1:$E2E_EXPORTER_PORT/metrics
  Prometheus:        $prom/
    cached bytes per cgroup:      $prom/graph?g0.expr=cachestat_cgroup_cached_bytes&g0.tab=0&g0.range_input=15m
    refaults per second:          $prom/graph?g0.expr=cgroup%3Acachestat_workingset_refault_file%3Arate2m&g0.tab=0&g0.range_input=15m
    alerts:                       $prom/alerts
  A shell in the guest:   ssh -i $RUN/id_ed25519 -p $E2E_SSH_PORT -o StrictHostKeyChecking=no root@127.0.0.1
  The guest's console:    $RUN/console.log

  Ctrl-C stops the guest.
EOT
wait "$VM_PID" || true
log "demo: the guest stopped"

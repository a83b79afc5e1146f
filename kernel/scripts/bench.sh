#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make kernel-bench: times cachestat() against mmap()+mincore() in one guest run of the release
# kernel (TCG): (a) a 2 TB sparse file, (b) a fully cached 1 GiB file. A benchmark, not a test.
#
# Usage: kernel/scripts/bench.sh [MINCORE_SPARSE_GB...]
#   mincore() over the sparse file is timed on these prefixes of it (default: 16 128 2048, the
#   whole 2 TB taking about two minutes under TCG); without 2048 the largest is extrapolated.
# Console log: $BUILD_ROOT/kernel-tests/logs/bench.log
set -uo pipefail
. "$(dirname "$0")/../tests/host-lib.sh"

sizes=${*:-16 128 2048}
artifacts=$(test_artifacts) || exit 1
bz=$(kernel_image release) && [ -s "$bz" ] || { echo "kernel build failed"; exit 1; }
log=$LOG_DIR/bench.log
hlog "booting $bz with 2 x 1536 MiB (console: $log); mincore over ${sizes// /, } GB of the sparse file"
# 1 GiB must stay cached beside the guest's own memory: give each node 1.5 GiB.
"$TESTS_DIR/qemu-run.sh" "$bz" "$artifacts" "$log" bench 7200 1536 "cachestat.bench=${sizes// /,}"
rc=$?
log_section "$log" "=== cachestat-tests begin" "=== cachestat-tests exit" | grep -E '^(#|bench:)'
[ $rc -eq 0 ] || { echo "the guest did not finish (status $rc)"; exit 1; }
log_section "$log" "=== cachestat-tests begin" "=== cachestat-tests exit" | grep -q '^bench: cached_1gib_ratio' ||
	{ echo "no figures in $log"; exit 1; }

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make kernel-bench: first the cost of many small cachestat() calls from an unprivileged user,
# quiet and beside page cache churn, on the release kernel (rate-limited stats flush) and on the
# unlimited variant (a flush on every call, as v2 had), with their ratio; then cachestat()
# against mmap()+mincore() in one guest run of the release kernel (TCG): (a) a 2 TB sparse file,
# (b) a fully cached 1 GiB file. A benchmark, not a test.
#
# Usage: kernel/scripts/bench.sh [MINCORE_SPARSE_GB...]
#   mincore() over the sparse file is timed on these prefixes of it (default: 16 128 2048, the
#   whole 2 TB taking about two minutes under TCG); without 2048 the largest is extrapolated.
# Console log: $BUILD_ROOT/kernel-tests/logs/bench.log
set -uo pipefail
. "$(dirname "$0")/../tests/host-lib.sh"

sizes=${*:-16 128 2048}
artifacts=$(test_artifacts) || exit 1

declare -A fig
for v in unlimited release; do
	bz=$(kernel_image "$v") && [ -s "$bz" ] || { echo "$v: kernel build failed"; exit 1; }
	log=$LOG_DIR/bench-flush-$v.log
	hlog "$v: small calls from uid 65534 (console: $log)"
	"$TESTS_DIR/qemu-run.sh" "$bz" "$artifacts" "$log" flush 900 || { echo "$v: the guest did not finish"; exit 1; }
	log_section "$log" "=== cachestat-tests begin" "=== cachestat-tests exit" | grep -E '^(#|bench:)' |
		sed "s/^/$v: /"
	for k in mean p99 max; do
		key=small_call_memcgs_ns; [ $k = mean ] || key=small_call_memcgs_${k}_ns
		fig[$v.$k]=$(log_section "$log" "=== cachestat-tests begin" "=== cachestat-tests exit" |
			awk -v k="$key" '$1 == "bench:" && $2 == k { print $3 }')
		[ -n "${fig[$v.$k]}" ] || { echo "$v: no $key in $log"; exit 1; }
	done
done
for k in mean p99 max; do
	awk -v k=$k -v u="${fig[unlimited.$k]}" -v r="${fig[release.$k]}" 'BEGIN {
		printf "bench: beside churn in 128 memcgs, %s CPU ns/call: unlimited %d, rate-limited %d (%.2fx)\n",
			k, u, r, u / r }'
done
[ "${BENCH_FLUSH_ONLY:-0}" = 1 ] && exit 0
bz=$(kernel_image release) && [ -s "$bz" ] || { echo "kernel build failed"; exit 1; }
log=$LOG_DIR/bench.log
hlog "booting $bz with 2 x 1536 MiB (console: $log); mincore over ${sizes// /, } GB of the sparse file"
# 1 GiB must stay cached beside the guest's own memory: give each node 1.5 GiB.
"$TESTS_DIR/qemu-run.sh" "$bz" "$artifacts" "$log" bench 7200 1536 "cachestat.bench=${sizes// /,}"
rc=$?
log_section "$log" "=== cachestat-tests begin" "=== cachestat-tests exit" | grep -E '^(#|bench:)'
[ $rc -eq 0 ] || { echo "the guest did not finish (status $rc)"; exit 1; }
log_section "$log" "=== cachestat-tests begin" "=== cachestat-tests exit" | grep '^bench: cached_1gib_ratio' >/dev/null ||
	{ echo "no figures in $log"; exit 1; }

#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs the cachestat kernel tests in a guest booted with the patched kernel; prints one TAP stream
# and, last, "N passed, N failed, N skipped". Exits non-zero if anything failed.
#
# Usage: run-in-guest.sh SCRATCH_DIR [SUITE...]
#   SCRATCH_DIR  a directory on a block-backed file system (ext4), not tmpfs: the fsync cases
#                check that nothing stays dirty, which tmpfs never satisfies.
#   SUITE        seed (the seed's selftest), kselftest (test_cachestat_full), mainline
#                (test_cachestat_mainline: mainline's call form, overlayfs), m32 (the same program
#                built with -m32, run as a compat task; skipped on a kernel without
#                CONFIG_IA32_EMULATION), numa (the NUMA workingset proof), dmesg (no kernel splat
#                in the log). Default: all six. Not by default: bench (cachestat_bench --small:
#                make kernel-bench's program at a smoke test's size; it must print both files'
#                figures and their ratios).
#
# CACHESTAT_SLOW_DIR: a directory on a slow disk, for the writeback case of the mainline suite
# (which skips without it).
#
# Needs root, cgroup2 mounted, and for every case to run: swap (a swap file is set up in
# SCRATCH_DIR when there is none), hugetlbfs pages (reserved here when there are none), two NUMA
# nodes for the numa suite. The programs are the static binaries next to this script. Works
# with busybox sh as with dash or bash.
set -u

bindir=$(cd "$(dirname "$0")" && pwd)
scratch=${1:?usage: run-in-guest.sh SCRATCH_DIR [seed|kselftest|mainline|m32|numa|bench|dmesg]...}
shift
suites=${*:-seed kselftest mainline m32 numa dmesg}
scratch=$(cd "$scratch" && pwd) || exit 2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cachestat-tests.XXXXXX") || exit 2
total=0 passed=0 failed=0 skipped=0
cleanup_swap='' cleanup_hugepages='' cleanup_cgroup=''

# BUG/WARNING cover lockdep ("WARNING: possible circular locking dependency") and KASAN
# ("BUG: KASAN: ..."); the rest are splats that print neither word.
splat_re='BUG:|WARNING:|KASAN:|UBSAN:|Oops|Kernel panic|kernel BUG|general protection fault'
splat_re="$splat_re|possible .*locking|inconsistent lock state|suspicious RCU usage"
splat_re="$splat_re|sleeping function called from invalid context|blocked for more than"

# Renumbers a program's TAP results into the combined stream, prefixing them with the suite.
# Writes "total passed failed skipped" of the suite to $tmp/counts.
tap_merge() {
	awk -v suite="$1" -v n="$total" -v counts="$tmp/counts" '
	function result(ok, desc, skip) {
		n++
		if (skip)
			skipped++
		else if (ok)
			passed++
		else
			failed++
		printf "%s %d %s: %s%s\n", ok ? "ok" : "not ok", n, suite, desc, skip ? " # SKIP" : ""
		fflush()
	}
	/^(not )?ok [0-9]+/ {
		ok = $1 == "ok"
		line = $0
		sub(/^(not )?ok [0-9]+ *(- )?/, "", line)
		skip = 0
		if (line ~ /^# *SKIP/) {
			skip = 1
			sub(/^# *SKIP */, "", line)
		} else if (line ~ /# *SKIP/) {
			skip = 1
			sub(/ *# *SKIP.*/, "", line)
		}
		result(ok, line, skip)
		next
	}
	/^1\.\.0/ { result(1, "all cases skipped:" substr($0, 5), 1); next }
	/^Bail out!/ { result(0, $0, 0); next }
	/^#/ { print; fflush(); next }
	{ print "# " $0; fflush() }
	END { print n, passed + 0, failed + 0, skipped + 0 > counts }'
}

# run_suite NAME MIN_RESULTS COMMAND...: a suite that exits non-zero without a failed result,
# or reports fewer than MIN_RESULTS results, counts as one failure.
run_suite() {
	name=$1 min=$2
	shift 2
	echo "# suite $name: $*"
	start=$(date +%s)
	{ "$@" 2>&1; echo $? >"$tmp/rc"; } | tap_merge "$name"
	read -r n p f s <"$tmp/counts"
	rc=$(cat "$tmp/rc")
	echo "# suite $name: exit $rc, $((n - total)) results, $(( $(date +%s) - start )) s"
	# Exit status 4 is kselftest's "skipped", already counted from its "1..0 # SKIP".
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 4 ] && [ "$f" -eq 0 ] || [ $((n - total)) -lt "$min" ]; then
		n=$((n + 1)) f=$((f + 1))
		echo "not ok $n $name: exited $rc with $((n - total - 1)) results"
	fi
	total=$n passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

setup() {
	if [ "$(wc -l </proc/swaps)" -le 1 ]; then
		if dd if=/dev/zero of="$scratch/cachestat.swap" bs=1M count=256 2>/dev/null &&
			chmod 600 "$scratch/cachestat.swap" &&
			mkswap "$scratch/cachestat.swap" >/dev/null &&
			swapon "$scratch/cachestat.swap"; then
			cleanup_swap=$scratch/cachestat.swap
		else
			echo "# no swap and cannot add a swap file: the swap case will skip"
		fi
	fi
	if [ -w /proc/sys/vm/nr_hugepages ] && [ "$(cat /proc/sys/vm/nr_hugepages)" -eq 0 ]; then
		echo 4 >/proc/sys/vm/nr_hugepages && cleanup_hugepages=0
	fi
	if ! grep -q '^[^ ]* /dev/shm ' /proc/mounts; then
		mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm
	fi
	if ! grep -q ' cgroup2 ' /proc/mounts; then
		mkdir -p /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup &&
			cleanup_cgroup=/sys/fs/cgroup
	fi
}

cleanup() {
	[ -n "$cleanup_swap" ] && swapoff "$cleanup_swap" && rm -f "$cleanup_swap"
	[ -n "$cleanup_hugepages" ] && echo "$cleanup_hugepages" >/proc/sys/vm/nr_hugepages
	[ -n "$cleanup_cgroup" ] && umount "$cleanup_cgroup"
	rm -rf "$tmp"
}

no_ia32() {
	echo "ok 1 # SKIP 32-bit build of the mainline suite: kernel without CONFIG_IA32_EMULATION"
}

# The benchmark's smoke run: it exits 0 and prints, for each of its two files, the cachestat
# and the mincore figures and their ratio, as make kernel-bench's host side reads them.
bench_smoke() {
	"$bindir/cachestat_bench" --small "$scratch" >"$tmp/bench" 2>&1
	rc=$?
	sed 's/^/# /' "$tmp/bench"
	if [ "$rc" -eq 0 ]; then
		echo "ok 1 cachestat_bench --small exits 0"
	else
		echo "not ok 1 cachestat_bench --small exits 0 (exit $rc)"
	fi
	n=1
	for file in sparse_1gib cached_64mib; do
		n=$((n + 1))
		if grep -Eq "^bench: ${file}_cachestat_s [0-9]+\.[0-9]+\$" "$tmp/bench" &&
			grep -Eq "^bench: ${file}_mincore_s [0-9]+\.[0-9]+\$" "$tmp/bench" &&
			grep -Eq "^bench: ${file}_ratio [0-9]+(\.[0-9]+)?\$" "$tmp/bench"; then
			echo "ok $n $file: cachestat and mincore figures and their ratio"
		else
			echo "not ok $n $file: cachestat and mincore figures and their ratio"
		fi
	done
	[ "$rc" -eq 0 ]
}

check_dmesg() {
	if dmesg >"$tmp/dmesg" 2>&1; then
		if grep -E "$splat_re" "$tmp/dmesg" >"$tmp/splats"; then
			sed 's/^/# splat: /' "$tmp/splats" | head -n 50
			echo "not ok 1 kernel log has no BUG, WARNING, lockdep, KASAN or atomic-sleep splat"
			return 1
		fi
		echo "ok 1 kernel log has no BUG, WARNING, lockdep, KASAN or atomic-sleep splat"
	else
		echo "ok 1 # SKIP cannot read the kernel log"
	fi
}

echo "TAP version 13"
fstype=$(stat -f -c %T "$scratch" 2>/dev/null)
echo "# kernel $(uname -r), scratch $scratch ($fstype)"
case $fstype in
tmpfs|ramfs|"")
	# The file cases would pass by construction or skip: refuse to run them.
	echo "not ok 1 setup: scratch directory $scratch is not block-backed (${fstype:-unknown})"
	echo "1..1"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1 ;;
esac
setup
for suite in $suites; do
	case $suite in
	seed)
		# The seed's selftest makes its file in the block-backed scratch directory (its fsync
		# check needs tagged dirty pages) and reports 6 results.
		run_suite seed 6 "$bindir/test_cachestat" "$scratch" ;;
	# The minimum counts are the programs' plans: a program that stops early fails.
	kselftest) run_suite kselftest 53 "$bindir/test_cachestat_full" "$scratch" ;;
	mainline)
		run_suite mainline 20 "$bindir/test_cachestat_mainline" "$scratch" \
			${CACHESTAT_SLOW_DIR:+"$CACHESTAT_SLOW_DIR"} ;;
	m32)
		# Without IA32 emulation the kernel cannot run it (and sh would take it for a script).
		if [ -r /proc/config.gz ] && ! zcat /proc/config.gz | grep -q '^CONFIG_IA32_EMULATION=y'; then
			run_suite m32 1 no_ia32
		else
			run_suite m32 20 "$bindir/test_cachestat_mainline32" "$scratch" \
				${CACHESTAT_SLOW_DIR:+"$CACHESTAT_SLOW_DIR"}
		fi ;;
	numa) run_suite numa 1 "$bindir/numa_refault" "$scratch" ;;
	bench) run_suite bench 3 bench_smoke ;;
	dmesg) run_suite dmesg 1 check_dmesg ;;
	*) echo "# unknown suite $suite"; total=$((total + 1)) failed=$((failed + 1)) ;;
	esac
done
cleanup
echo "1..$total"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make kernel-test: checks first that the console-log parser fails broken logs
# (tests/check-parser.sh) and the build's huge-page preload (tests/check-preload.sh), then boots
# the debug and the release kernel under QEMU (TCG, two NUMA nodes) and runs the seed selftest,
# the cachestat kselftest, the mainline-form and overlayfs kselftest, the NUMA workingset proof and
# a kernel-log splat check in each, and checks that a KASAN kernel's checks started; in the
# release kernel's boot, also make kernel-bench's program at a smoke test's size (the bench suite
# of run-in-guest.sh), so that a benchmark that broke fails here. Prints one line per test and
# ends with "N passed, N failed, N skipped".
#
# Usage: kernel/scripts/test.sh [VARIANT...]      (default: debug release)
#        kernel/scripts/test.sh --checks          the host-side checks alone (make test's kernel-checks suite)
# Console logs: $BUILD_ROOT/kernel-tests/logs/test-VARIANT.log
set -uo pipefail
. "$(dirname "$0")/../tests/host-lib.sh"

variants=("${@:-debug}")
[ $# -eq 0 ] && variants=(debug release)
[ "${1:-}" = --checks ] && variants=()

# Guards: the guest normally finishes in well under these (see kernel/tests/README.md).
declare -A guard=([release]=900 [debug]=1800 [nofix]=900)

# The least number of results of each suite of a test-mode guest: the programs' plans. The 32-bit
# build of the mainline suite runs where the kernel has IA32 emulation and is one skip elsewhere.
minima="seed=6 kselftest=53 mainline=21 numa=1 dmesg=1"
# The suites of a boot, when not run-in-guest.sh's default: the benchmark's smoke run in the
# kernel that make kernel-bench boots (dmesg last, to see what it did to the kernel log).
declare -A suites=([release]="seed kselftest mainline m32 numa bench dmesg")
declare -A suite_minima=([release]="bench=3")

pass=0 fail=0 skip=0
# host_check SCRIPT WHAT: one result for a host-side check of kernel/tests (no kernel, no QEMU).
host_check() {
	local log=$LOG_DIR/${1%.sh}.log
	if "$TESTS_DIR/$1" >"$log" 2>&1; then
		echo "PASS $2"
		pass=$((pass + 1))
	else
		echo "FAIL $2; see $log"
		fail=$((fail + 1))
	fi
}
host_check check-parser.sh "console-log parser fails broken logs (exit 127, no TAP, truncated, short)"
host_check check-preload.sh "the kernel build's preload advises huge pages on large anonymous mappings only"
if [ ${#variants[@]} -eq 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
	[ "$fail" -eq 0 ]
	exit
fi
if ! artifacts=$(test_artifacts); then
	echo "FAIL building the guest test programs"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi

for v in "${variants[@]}"; do
	start=$SECONDS
	hlog "$v: building or reusing the kernel"
	if ! bz=$(kernel_image "$v") || [ ! -s "$bz" ]; then
		echo "FAIL $v: kernel build"
		fail=$((fail + 1))
		continue
	fi
	log=$LOG_DIR/test-$v.log
	hlog "$v: booting $bz (console: $log)"
	cmdline=
	[ -n "${suites[$v]:-}" ] && cmdline="cachestat.suites=$(echo "${suites[$v]}" | tr ' ' ,)"
	"$TESTS_DIR/qemu-run.sh" "$bz" "$artifacts" "$log" test "${guard[$v]:-900}" 512 "$cmdline"
	rc=$?
	m32=1
	grep -q '^CONFIG_IA32_EMULATION=y' "$(dirname "$bz")/.config" 2>/dev/null && m32=21
	parse_run "$v:" "$log" "$rc" "$minima m32=$m32 ${suite_minima[$v]:-}"
	pass=$((pass + RES_PASS)) fail=$((fail + RES_FAIL)) skip=$((skip + RES_SKIP))
	# A KASAN kernel whose checks never started would pass every test above without checking anything.
	# grep reads the whole section (no -q): under pipefail, a grep that quits at the match could make the
	# pipeline fail on its writer's SIGPIPE.
	if grep -q '^CONFIG_KASAN=y' "$(dirname "$bz")/.config" 2>/dev/null; then
		if log_section "$log" "=== dmesg begin" "=== dmesg end" |
			grep 'KernelAddressSanitizer initialized' >/dev/null; then
			echo "PASS $v: KASAN is running (the kernel log says KernelAddressSanitizer initialized)"
			pass=$((pass + 1))
		else
			echo "FAIL $v: KASAN is running: no 'KernelAddressSanitizer initialized' in the kernel log"
			fail=$((fail + 1))
		fi
	fi
	hlog "$v: $RES_PASS passed, $RES_FAIL failed, $RES_SKIP skipped in $((SECONDS - start)) s"
	# For the cover letter of make kernel-series.
	echo "$RES_PASS passed, $RES_FAIL failed, $RES_SKIP skipped ($(tr -d '\r' <"$log" |
		sed -n 's/^=== cachestat-tests begin .*kernel=//p' | head -n 1))" >"$LOG_DIR/test-$v.summary"
done

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]

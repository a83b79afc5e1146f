#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make kernel-test: checks first that the console-log parser fails broken logs
# (tests/check-parser.sh), then boots the debug and the release kernel under QEMU (TCG, two NUMA
# nodes) and runs the seed selftest, the cachestat kselftest, the mainline-form and overlayfs
# kselftest, the NUMA workingset proof and a kernel-log splat check in each. Prints one line per
# test and ends with "N passed, N failed, N skipped".
#
# Usage: kernel/scripts/test.sh [VARIANT...]      (default: debug release)
# Console logs: $BUILD_ROOT/kernel-tests/logs/test-VARIANT.log
set -uo pipefail
. "$(dirname "$0")/../tests/host-lib.sh"

variants=("${@:-debug}")
[ $# -eq 0 ] && variants=(debug release)

# Guards: the guest normally finishes in well under these (see kernel/tests/README.md).
declare -A guard=([release]=900 [debug]=1800 [nofix]=900)

# The least number of results of each suite of a test-mode guest: the programs' plans. The 32-bit
# build of the mainline suite runs where the kernel has IA32 emulation and is one skip elsewhere.
minima="seed=6 kselftest=53 mainline=16 numa=1 dmesg=1"

pass=0 fail=0 skip=0
if "$TESTS_DIR/check-parser.sh" >"$LOG_DIR/check-parser.log" 2>&1; then
	echo "PASS console-log parser fails broken logs (exit 127, no TAP, truncated, short)"
	pass=$((pass + 1))
else
	echo "FAIL console-log parser fails broken logs; see $LOG_DIR/check-parser.log"
	fail=$((fail + 1))
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
	"$TESTS_DIR/qemu-run.sh" "$bz" "$artifacts" "$log" test "${guard[$v]:-900}"
	rc=$?
	m32=1
	grep -q '^CONFIG_IA32_EMULATION=y' "$(dirname "$bz")/.config" 2>/dev/null && m32=16
	parse_run "$v:" "$log" "$rc" "$minima m32=$m32"
	pass=$((pass + RES_PASS)) fail=$((fail + RES_FAIL)) skip=$((skip + RES_SKIP))
	hlog "$v: $RES_PASS passed, $RES_FAIL failed, $RES_SKIP skipped in $((SECONDS - start)) s"
	# For the cover letter of make kernel-series.
	echo "$RES_PASS passed, $RES_FAIL failed, $RES_SKIP skipped ($(tr -d '\r' <"$log" |
		sed -n 's/^=== cachestat-tests begin .*kernel=//p' | head -n 1))" >"$LOG_DIR/test-$v.summary"
done

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make kernel-ab: the NUMA workingset proof on the release kernel (fix applied) and on the nofix
# kernel (the same series with patch 0001's fix undone, see build.sh). Prints an A/B table and
# exits 0 only if the fixed kernel passes and the nofix kernel fails.
#
# Console logs: $BUILD_ROOT/kernel-tests/logs/ab-{release,nofix}.log
set -uo pipefail
. "$(dirname "$0")/../tests/host-lib.sh"

artifacts=$(test_artifacts) || { echo "building the guest test programs failed"; exit 1; }

# A guest run that did not get through the setup (pages on node 0, shadows left, refaults on
# node 1) proves nothing either way; of the four refault checks the fixed kernel must pass all,
# the nofix kernel must fail at least one.
setup_re='read into node 0|left shadow entries|landed on node 1'
refault_re='workingset_refault_file'
declare -A verdict
for v in release nofix; do
	hlog "$v: building or reusing the kernel"
	if ! bz=$(kernel_image "$v") || [ ! -s "$bz" ]; then
		echo "$v: kernel build failed"
		exit 1
	fi
	log=$LOG_DIR/ab-$v.log
	hlog "$v: booting $bz (console: $log)"
	"$TESTS_DIR/qemu-run.sh" "$bz" "$artifacts" "$log" numa 900
	rc=$?
	results=$LOG_DIR/ab-$v.results
	parse_run "$v:" "$log" "$rc" >"$results"
	cat "$results"
	setup_ok=$(grep -E "$setup_re" "$results" | grep -c '^PASS')
	refault_pass=$(grep -E "$refault_re" "$results" | grep -c '^PASS')
	refault_fail=$(grep -E "$refault_re" "$results" | grep -c '^FAIL')
	if [ "$rc" -ne 0 ] || [ "$setup_ok" -ne 3 ] || [ $((refault_pass + refault_fail)) -ne 4 ]; then
		verdict[$v]=INVALID
	elif [ "$refault_fail" -eq 0 ] && [ "$RES_FAIL" -eq 0 ]; then
		verdict[$v]=PASS
	else
		verdict[$v]=FAIL
	fi
done

# One row per check, in the order the test makes them; one column per kernel.
echo
printf '%-76s %-8s %-8s\n' "NUMA refault check" release nofix
awk -F '\t' '
	FNR == 1 { file++ }
	{
		if (!match($0, /^(PASS|FAIL|SKIP) [a-z]+: /))
			next
		status = substr($0, 1, 4)
		check = substr($0, RLENGTH + 1)
		sub(/ \(\+?[0-9][^)]*\)$/, "", check)
		if (!(check in seen)) {
			seen[check] = 1
			order[++n] = check
		}
		res[file, check] = status
	}
	END {
		for (i = 1; i <= n; i++) {
			c = order[i]
			printf "%-76s %-8s %-8s\n", substr(c, 1, 76), \
				((1, c) in res) ? res[1, c] : "-", ((2, c) in res) ? res[2, c] : "-"
		}
	}' "$LOG_DIR/ab-release.results" "$LOG_DIR/ab-nofix.results"
for v in release nofix; do
	printf '%-8s %s\n' "$v:" "$(tr -d '\r' <"$LOG_DIR/ab-$v.log" | grep -m1 '^# refaults:' | sed 's/^# //')"
done
printf '%-76s %-8s %-8s\n' "verdict (fixed must pass, nofix must fail)" "${verdict[release]}" "${verdict[nofix]}"

if [ "${verdict[release]}" = PASS ] && [ "${verdict[nofix]}" = FAIL ]; then
	echo "A/B: with the fix the refaults are counted on the node the pages refault on; without it, not"
	exit 0
fi
echo "A/B: the fix is NOT shown"
exit 1

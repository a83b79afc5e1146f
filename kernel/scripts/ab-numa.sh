#!/usr/bin/env bash
# make kernel-ab: the NUMA workingset proof on the release kernel (fix applied) and on the nofix
# kernel (the same series with patch 0001's fix undone, see build.sh). Prints an A/B table and
# exits 0 only if the fixed kernel passes and the nofix kernel fails.
#
# Console logs: $BUILD_ROOT/kernel-tests/logs/ab-{release,nofix}.log
set -uo pipefail
. "$(dirname "$0")/../tests/host-lib.sh"

artifacts=$(test_artifacts) || { echo "building the guest test programs failed"; exit 1; }

declare -A verdict
for v in release nofix; do
	hlog "$v: building or reusing the kernel"
	bz=$(kernel_image "$v") && [ -s "$bz" ] || { echo "$v: kernel build failed"; exit 1; }
	log=$LOG_DIR/ab-$v.log
	hlog "$v: booting $bz (console: $log)"
	"$TESTS_DIR/qemu-run.sh" "$bz" "$artifacts" "$log" numa 900
	rc=$?
	parse_run "$v:" "$log" "$rc" >"$LOG_DIR/ab-$v.results"
	cat "$LOG_DIR/ab-$v.results"
	verdict[$v]=$([ "$RES_FAIL" -eq 0 ] && [ "$RES_PASS" -ge 7 ] && echo PASS || echo FAIL)
done

# One row per check, one column per kernel.
echo
printf '%-78s %-8s %-8s\n' "NUMA refault check" release nofix
join -t $'\t' -a1 -a2 -e - -o 0,1.2,2.2 \
	<(sed -E 's/^(PASS|FAIL|SKIP) release: (.*)$/\2\t\1/; t; d' "$LOG_DIR/ab-release.results" |
		sed -E 's/ \(\+?[0-9]+[^)]*\)//' | sort -t $'\t' -k1,1) \
	<(sed -E 's/^(PASS|FAIL|SKIP) nofix: (.*)$/\2\t\1/; t; d' "$LOG_DIR/ab-nofix.results" |
		sed -E 's/ \(\+?[0-9]+[^)]*\)//' | sort -t $'\t' -k1,1) |
	awk -F '\t' '{ printf "%-78s %-8s %-8s\n", substr($1, 1, 78), $2, $3 }'
for v in release nofix; do
	echo "$v: $(tr -d '\r' <"$LOG_DIR/ab-$v.log" | grep -m1 '^# refaults:' | sed 's/^# //')"
done
printf '%-78s %-8s %-8s\n' "verdict (fixed must pass, nofix must fail)" "${verdict[release]}" "${verdict[nofix]}"

if [ "${verdict[release]}" = PASS ] && [ "${verdict[nofix]}" = FAIL ]; then
	echo "A/B: the fix moves refaults to the node the page refaults on"
	exit 0
fi
echo "A/B: the fix is NOT shown"
exit 1

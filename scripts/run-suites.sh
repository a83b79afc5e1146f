#!/usr/bin/env bash
# Runs test suites one after another and adds up their results.
# Usage: run-suites.sh NAME=COMMAND...
# Every suite ends its output with a line "N passed, N failed" (optionally ", N skipped");
# a suite that exits non-zero without such a line counts as one failure.
set -uo pipefail

log_dir=${SUITE_LOG_DIR:-$(mktemp -d)}
mkdir -p "$log_dir"
total_pass=0 total_fail=0 total_skip=0
summary=()

for spec in "$@"; do
	name=${spec%%=*}
	cmd=${spec#*=}
	log="$log_dir/$name.log"
	echo "=== suite $name: $cmd"
	start=$SECONDS
	bash -c "$cmd" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	line=$(grep -E '^([A-Za-z0-9_-]+: )?[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$log" | tail -n 1)
	pass=0 fail=0 skip=0
	if [ -n "$line" ]; then
		read -r pass fail skip < <(echo "$line" | sed -E 's/^[A-Za-z0-9_-]+: //; s/([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?/\1 \2 \4/')
		skip=${skip:-0}
	fi
	if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
		fail=1
	fi
	total_pass=$((total_pass + pass)) total_fail=$((total_fail + fail)) total_skip=$((total_skip + skip))
	summary+=("$(printf '%-12s %4d passed, %4d failed, %4d skipped  (exit %d, %ds)' "$name" "$pass" "$fail" "$skip" "$rc" $((SECONDS - start)))")
done

echo "=== summary (logs in $log_dir)"
printf '%s\n' "${summary[@]}"
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]

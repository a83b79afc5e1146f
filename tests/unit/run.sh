#!/usr/bin/env bash
# Runs cmocka test binaries and adds up their results into the line "N passed, N failed".
# A binary that dies without a cmocka summary (a sanitizer report, a crash) counts as a failure.
set -uo pipefail
cd "$(dirname "$0")"

passed=0 failed=0
for bin in "$@"; do
	out=$(ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 "$bin" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]\+\) test.*/\1/p' | tail -n 1)
	f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]\+\) test.*/\1/p' | tail -n 1)
	p=${p:-0} f=${f:-0}
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "$(basename "$bin"): exited with status $rc without a failed test: counted as a failure"
		f=1
	fi
	passed=$((passed + p)) failed=$((failed + f))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

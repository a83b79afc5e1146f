#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs cmocka test binaries and adds up their results into the line "N passed, N failed, N skipped".
# Each skipped test is printed as "skip - BINARY: TEST (REASON)", the reason being the last line
# "skip: REASON" the test printed before it called skip().
# A binary that dies without a cmocka summary (a sanitizer report, a crash, exit 127) counts as a
# failure, and so does one whose counts do not add up to the tests it ran.
set -uo pipefail
cd "$(dirname "$0")" || exit 1

passed=0 failed=0 skipped=0
for bin in "$@"; do
	name=$(basename "$bin")
	out=$(ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 "$bin" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	# (cmocka writes some lines to stdout, some to stderr: a line may hold two of them)
	count() { printf '%s\n' "$out" | grep -o "\[  $1 *\] [0-9]\+ test" | tail -n 1 | tr -dc 0-9; }
	ran=$(printf '%s\n' "$out" | grep -o '\[==========\] [0-9]\+ test(s) run\.' | tail -n 1 | tr -dc 0-9)
	p=$(count PASSED) f=$(count FAILED) s=$(count SKIPPED)
	p=${p:-0} f=${f:-0} s=${s:-0}
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - $name: exited with status $rc without a failed test"
		f=$((f + 1))
	elif [ -z "$ran" ] || [ $((p + f + s)) -ne "$ran" ]; then
		echo "not ok - $name: no cmocka summary, or its counts do not add up to ${ran:-?} tests run"
		f=$((f + 1))
	fi
	# one line per skipped test, with the reason the test printed
	printf '%s\n' "$out" | awk -v bin="$name" '
		/^\[==========\] [0-9]+ test\(s\) run/ { done = 1 }
		/^\[ RUN      \] / { reason = "" }
		/^skip: / { reason = substr($0, 7) }
		!done && /^\[  SKIPPED \] [A-Za-z_0-9]+$/ {
			printf "skip - %s: %s (%s)\n", bin, $4, reason != "" ? reason : "the test gave no reason"
		}'
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

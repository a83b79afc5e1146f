#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The host's parser of guest console logs must not pass a run that did not run: fed broken logs
# (runner exited 127 with no TAP line, a truncated log, too few results, a non-zero exit line)
# it must report a failure; fed a complete one, it must not. No kernel, no QEMU: a second or so.
# Prints one line per log and "N passed, N failed"; exits non-zero if the parser was fooled.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

minima="seed=2 kselftest=3"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

good_tap() {
	printf '%s\n' "ok 1 seed: a" "ok 2 seed: b" "ok 3 kselftest: c" \
		"ok 4 kselftest: d # SKIP no swap" "ok 5 kselftest: e"
}

# make_log NAME EXIT_LINE TAP_FUNCTION [truncate]: a console log as guest-init.sh writes it.
make_log() {
	local f=$tmp/$1
	{
		echo "[    1.0] Linux version 6.1"
		echo "=== cachestat-tests begin mode=test kernel=6.1"
		"$3"
		[ -n "$2" ] && echo "$2"
		if [ "${4:-}" != truncate ]; then
			echo "=== dmesg begin"
			echo "[    2.0] all quiet"
			echo "=== dmesg end"
		fi
	} >"$f"
	echo "$f"
}

no_tap() { echo "/tests/run-in-guest.sh: not found"; }
short_tap() { printf '%s\n' "ok 1 seed: a" "ok 2 seed: b" "ok 3 kselftest: c"; }

# expect NAME WANT(pass|fail) LOG QEMU_RC
expect() {
	local name=$1 want=$2 log=$3 rc=$4 got
	parse_run "check:" "$log" "$rc" "$minima" >"$tmp/out"
	got=pass
	[ "$RES_FAIL" -eq 0 ] || got=fail
	if [ "$got" = "$want" ]; then
		pass=$((pass + 1))
		echo "PASS parser: $name -> $got"
	else
		fail=$((fail + 1))
		echo "FAIL parser: $name -> $got, want $want"
		sed 's/^/     | /' "$tmp/out"
	fi
}

expect "complete log, exit 0" pass "$(make_log good '=== cachestat-tests exit 0' good_tap)" 0
expect "runner exited 127, no TAP line" fail "$(make_log e127 '=== cachestat-tests exit 127' no_tap)" 0
expect "truncated log (no exit line, no dmesg)" fail "$(make_log trunc '' good_tap truncate)" 1
expect "fewer results than the plan" fail "$(make_log short '=== cachestat-tests exit 0' short_tap)" 0
expect "all ok but exit 1" fail "$(make_log exit1 '=== cachestat-tests exit 1' good_tap)" 0
expect "no exit line, dmesg present" fail "$(make_log noexit '' good_tap)" 0

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

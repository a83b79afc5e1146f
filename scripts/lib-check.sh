# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Helpers for the check scripts (dashboards/check.sh, deploy/check.sh), on top of tests/lib/tap.sh:
# one line per check, the last line "N passed, N failed, N skipped".
# Source it after `set -uo pipefail`; it makes $tmp (removed on exit).
# A failing check shows the output of its command, which the helpers leave in $tmp/out.

# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { pass "$1"; }
ko() {
	fail "$1"
	[ -s "$tmp/out" ] && sed 's/^/    /' "$tmp/out" | head -n 40
	return 0
}
# skipped "WHAT: REASON" (or skipped WHAT REASON): a check that cannot run here.
skipped() {
	if [ $# -ge 2 ]; then
		skip "$1" "$2"
	elif [[ $1 == *": "* ]]; then
		skip "${1%%: *}" "${1#*: }"
	else
		skip "$1" ""
	fi
}
# run NAME COMMAND...: passes when COMMAND succeeds.
run() {
	local name=$1
	shift
	if "$@" >"$tmp/out" 2>&1; then ok "$name"; else ko "$name"; fi
}
# reject NAME COMMAND...: passes when COMMAND fails (a broken input must be caught).
reject() {
	local name=$1
	shift
	if "$@" >"$tmp/out" 2>&1; then ko "$name (the broken input was accepted)"; else ok "$name"; fi
}
# tally COMMAND...: COMMAND prints its own results (PASS:/FAIL:/SKIP: lines, or this library's
# ok - / not ok - / skip - lines); count them. A command that exits non-zero without a failed
# result, or prints no result at all, counts as one failure.
tally() {
	local line rc n=0 bad=0
	"$@" >"$tmp/tally" 2>&1
	rc=$?
	while IFS= read -r line; do
		case $line in
		"PASS: "*) pass "${line#PASS: }"; n=$((n + 1)) ;;
		"ok - "*) pass "${line#ok - }"; n=$((n + 1)) ;;
		"FAIL: "*) fail "${line#FAIL: }"; n=$((n + 1)) bad=1 ;;
		"not ok - "*) fail "${line#not ok - }"; n=$((n + 1)) bad=1 ;;
		"SKIP: "*) skipped "${line#SKIP: }"; n=$((n + 1)) ;;
		"skip - "*)
			line=${line#skip - }
			if [[ $line =~ ^(.*)\ \((.*)\)$ ]]; then skip "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"; else skipped "$line"; fi
			n=$((n + 1)) ;;
		*) echo "    $line" ;;
		esac
	done <"$tmp/tally"
	: >"$tmp/out"
	if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
		ko "$1 ... exited with status $rc"
	elif [ "$n" -eq 0 ]; then
		ko "$1 ... printed no result"
	fi
	return 0
}

# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The one test library of the shell suites (sourced, not run).
#
# Output dialect, one line per result:
#   ok - WHAT
#   not ok - WHAT
#   skip - WHAT (REASON)
# and, last, "N passed, N failed, N skipped" (finish). scripts/run-suites.sh reads exactly this.
#
# The counting helpers (pass, fail, skip, check, eq) never exit and never return non-zero by
# surprise: a case goes on after a failed check. Only finish ends the script.
#
# Exporter helpers (start_exporter, stop_exporter) use the caller's variables: bin (the binary),
# port (pick_port), cg2 (--path.cgroupfs), log (its stderr), wrap (an optional command array
# that runs it, e.g. prlimit); they set exporter_pid.

passed=0 failed=0 skipped=0

pass() { passed=$((passed + 1)); echo "ok - $*"; }
fail() { failed=$((failed + 1)); echo "not ok - $*"; }
# skip WHAT REASON: a result that could not be had here, and why. A skip without a reason is a
# mistake of the suite: it is counted as a failure.
skip() {
	if [ $# -lt 2 ] || [ -z "$2" ]; then
		fail "$1 (skipped without a reason)"
		return 0
	fi
	skipped=$((skipped + 1))
	echo "skip - $1 ($2)"
}
# check WHAT COMMAND...: passes when COMMAND succeeds.
check() {
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
	return 0
}
# eq WHAT GOT WANT: passes when GOT is WANT.
eq() {
	if [ "$2" = "$3" ]; then pass "$1 ($2)"; else fail "$1: got '$2', want '$3'"; fi
	return 0
}
# skip_suite REASON: the whole suite cannot run here; ends it. Under CI=true that is a failure,
# not a skip: CI must run every suite.
skip_suite() {
	if [ "${CI:-}" = true ]; then
		fail "the whole suite: cannot run under CI: $1"
	else
		skip "the whole suite" "$1"
	fi
	finish
}
# finish: the summary line; exits 1 if a result failed, else 0.
finish() {
	echo "$passed passed, $failed failed, $skipped skipped"
	# an explicit status: a bare exit in an EXIT trap (the e2e suite's) keeps the status of the
	# command before the trap, not the test above
	if [ "$failed" -eq 0 ]; then exit 0; fi
	exit 1
}

# pick_port [FIRST]: prints a TCP port that nothing listens on at 127.0.0.1, from FIRST (default:
# a port derived from this process's id, so that suites running side by side differ) upwards.
pick_port() {
	local p=${1:-$((20000 + $$ % 20000))} n
	for n in $(seq 200); do
		if ! (echo >"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
		p=$((p + 1))
		: "$n"
	done
	return 1
}

exporter_pid=
wrap=()
stop_exporter() {
	if [ -n "$exporter_pid" ]; then
		kill "$exporter_pid" 2>/dev/null
		wait "$exporter_pid" 2>/dev/null
		exporter_pid=
	fi
	return 0
}
# start_exporter ARGS...: (re)starts "$bin" on 127.0.0.1:$port with --path.cgroupfs=$cg2 and
# ARGS, through "${wrap[@]}" if set (for this start only: it clears wrap), and waits until it
# listens. On failure it counts one failed result, shows the log and returns 1.
# shellcheck disable=SC2154 # bin, port, cg2 and log are the suite's (see the top)
start_exporter() {
	stop_exporter
	"${wrap[@]}" "$bin" --web.listen-address="127.0.0.1:$port" --path.cgroupfs="$cg2" "$@" 2>"$log" &
	exporter_pid=$!
	wrap=()
	for _ in $(seq 200); do
		grep -qi 'listening on' "$log" 2>/dev/null && return 0
		kill -0 "$exporter_pid" 2>/dev/null || break
		sleep 0.05
	done
	fail "the exporter did not start with: $*"
	sed 's/^/  | /' "$log"
	stop_exporter
	return 1
}

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs test suites one after another and adds up their results.
# Usage: run-suites.sh [+]NAME=COMMAND...
# A suite written +NAME runs beside the others: when the list reaches a run of such suites, they start one after
# another in a second lane, at a lower CPU priority, while the list goes on (make test: the stock-kernel guests beside
# the e2e guest, whose TCG keeps one of two cores busy). Their output is in their logs and printed when the lane is
# done, after the list; the run waits for the lane.
# SUITE=NAME[,NAME...] runs only the suites so named (make test SUITE=NAME), in the list's order; a name
# the list lacks is an error that lists the names.
#
# PREBUILD=COMMAND (make test: scripts/prebuild.sh) runs in the background, at the lowest CPU priority, beside the
# suites: it builds ahead what the later suites need. Its log is prebuild.log; the run waits for it at the end, and
# its failure counts as one. The table shows each suite's time, the CPU time of its processes (user + system, of
# those it waited for) and how busy the machine's CPUs were meanwhile (the background build included), then the
# whole run's.
#
# Every suite ends its output with the line "N passed, N failed, N skipped" (tests/lib/tap.sh) and
# prints one line per skip, "skip - WHAT (REASON)". A suite fails as a whole (one failure more)
# when it exits non-zero without a failed result, or exits 0 without its summary line.
# The table at the end shows passed, failed and skipped per suite, then every skip with its reason.
# Under CI=true a skip that scripts/skip-allowlist does not list is a failure, and so is a skip
# that the summary counts but no skip line explains.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
allowlist=${SKIP_ALLOWLIST:-$here/skip-allowlist}
log_dir=${SUITE_LOG_DIR:-$(mktemp -d)}
mkdir -p "$log_dir"
total_pass=0 total_fail=0 total_skip=0 cpu_total=0
summary=() skips=()
run_start=$SECONDS

# m:ss of a number of seconds.
mmss() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }

# cpu_seconds FILE: the CPU seconds (user + system) of the children of a shell whose EXIT trap wrote its times
# into FILE (run_timed): those of one suite, or of the background build, apart from each other.
cpu_seconds() {
	awk 'function sec(t) { split(t, a, /[ms]/); return a[1] * 60 + a[2] }
		NR == 2 { printf "%.0f\n", sec($1) + sec($2) }' "$1" 2>/dev/null || echo 0
}
# run_timed FILE COMMAND: runs COMMAND in a shell that writes its times into FILE when it exits.
run_timed() { bash -c "trap 'times >\"$1\"' EXIT; $2"; }
# "busy idle" clock ticks of all CPUs since boot, from /proc/stat (idle counts iowait too).
cpu_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6; exit }' /proc/stat; }
# busy_percent BEFORE AFTER: the share of the CPUs' time that was busy between two cpu_ticks.
busy_percent() {
	local b0 i0 b1 i1
	read -r b0 i0 <<<"$1"
	read -r b1 i1 <<<"$2"
	echo $(((b1 - b0) * 100 / (b1 - b0 + i1 - i0 + 1)))
}

# The suites SUITE names, when it names any.
if [ -n "${SUITE:-}" ]; then
	wanted=",$SUITE," names=() chosen=()
	for spec in "$@"; do
		name=${spec%%=*} name=${name#+}
		names+=("$name")
		[[ $wanted == *",$name,"* ]] && chosen+=("$spec")
	done
	for name in ${SUITE//,/ }; do
		if [[ " ${names[*]} " != *" $name "* ]]; then
			echo "run-suites: no suite named '$name'; the suites: ${names[*]}" >&2
			exit 2
		fi
	done
	set -- "${chosen[@]}"
fi
unset SUITE # not passed on to a suite that runs run-suites.sh itself

run_ticks=$(cpu_ticks)
prebuild_pid=
prebuild=${PREBUILD:-}
# Not passed on: a suite that runs run-suites.sh itself (the harness checks, the mutation baseline) must not
# start a second background build beside this one.
unset PREBUILD
if [ -n "$prebuild" ]; then
	echo "=== background: $prebuild (log: $log_dir/prebuild.log)"
	export -f run_timed
	nice -n 19 bash -c 'run_timed "$@"' _ "$log_dir/prebuild.times" "$prebuild" >"$log_dir/prebuild.log" 2>&1 &
	prebuild_pid=$!
fi

# allowed SUITE TEXT: whether the allow-list lists the skip TEXT of SUITE ("SUITE ERE" lines).
allowed() {
	local suite re
	[ -r "$allowlist" ] || return 1
	while read -r suite re; do
		case $suite in '' | '#'*) continue ;; esac
		[ "$suite" = "$1" ] && [[ $2 =~ $re ]] && return 0
	done <"$allowlist"
	return 1
}

# run_suite NAME COMMAND: runs one suite, its output into its log and onto stdout; its exit status, time and how
# busy the machine was meanwhile into NAME.status.
run_suite() {
	local start=$SECONDS ticks0 rc
	ticks0=$(cpu_ticks)
	run_timed "$log_dir/$1.times" "$2" 2>&1 | tee "$log_dir/$1.log"
	rc=${PIPESTATUS[0]}
	echo "$rc $((SECONDS - start)) $(busy_percent "$ticks0" "$(cpu_ticks)")" >"$log_dir/$1.status"
}

# account NAME: adds up the results of a suite that has run: its summary line, its exit status, its skips.
account() {
	local name=$1 rc secs busy cpu line pass=0 fail=0 skip=0 note="" lines=0 s log="$log_dir/$1.log"
	read -r rc secs busy <"$log_dir/$name.status"
	cpu=$(cpu_seconds "$log_dir/$name.times")
	cpu_total=$((cpu_total + cpu))
	line=$(grep -E '^([A-Za-z0-9_-]+: )?[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$log" | tail -n 1)
	if [ -n "$line" ]; then
		read -r pass fail skip < <(echo "$line" | sed -E 's/^[A-Za-z0-9_-]+: //; s/([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?/\1 \2 \4/')
		skip=${skip:-0}
	else
		note="no summary line"
		fail=$((fail + 1))
	fi
	if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
		note="exit $rc without a failed result"
		fail=1
	fi
	# The skips, with their reasons: "skip - WHAT (REASON)", and the kernel suite's "SKIP ..." lines.
	while IFS= read -r s; do
		lines=$((lines + 1))
		s=${s#skip - }
		if allowed "$name" "$s"; then
			skips+=("$name: $s [allowed]")
		elif [ "${CI:-}" = true ]; then
			skips+=("$name: $s [UNEXPECTED: a failure under CI]")
			fail=$((fail + 1))
		else
			skips+=("$name: $s [unexpected]")
		fi
	done < <(grep -E '^(skip - |SKIP )' "$log")
	if [ "$skip" -gt "$lines" ]; then
		skips+=("$name: $((skip - lines)) skipped without a line that says why")
		[ "${CI:-}" = true ] && fail=$((fail + skip - lines))
	fi
	total_pass=$((total_pass + pass)) total_fail=$((total_fail + fail)) total_skip=$((total_skip + skip))
	summary+=("$(printf '%-14s %4d passed, %4d failed, %4d skipped  (exit %d, %s, CPU %d s, machine %d%% busy)%s' \
		"$name" "$pass" "$fail" "$skip" "$rc" "$(mmss "$secs")" "$cpu" "$busy" "${note:+  $note}")")
}

# start_lane SPEC...: runs the suites SPEC (+NAME=COMMAND) one after another in the background.
lane_pids=() lane_specs=()
start_lane() {
	(
		renice -n 5 -p "$BASHPID" >/dev/null
		for spec in "$@"; do
			name=${spec%%=*} name=${name#+}
			run_suite "$name" "${spec#*=}"
		done
	) >/dev/null &
	lane_pids+=($!)
	lane_specs+=("$@")
}

beside=()
for spec in "$@" ""; do
	if [ "${spec:0:1}" = + ]; then
		beside+=("$spec")
		continue
	fi
	if [ ${#beside[@]} -gt 0 ]; then
		echo "=== beside the suites after it: ${beside[*]%%=*}"
		start_lane "${beside[@]}"
		beside=()
	fi
	[ -n "$spec" ] || break
	name=${spec%%=*}
	echo "=== suite $name: ${spec#*=}"
	run_suite "$name" "${spec#*=}"
	account "$name"
done
for pid in "${lane_pids[@]}"; do wait "$pid"; done
for spec in "${lane_specs[@]}"; do
	name=${spec%%=*} name=${name#+}
	echo "=== suite $name (ran beside the others): ${spec#*=}"
	cat "$log_dir/$name.log"
	account "$name"
done

if [ -n "$prebuild_pid" ]; then
	start=$SECONDS
	wait "$prebuild_pid"
	rc=$?
	waited=$((SECONDS - start))
	cpu=$(cpu_seconds "$log_dir/prebuild.times")
	cpu_total=$((cpu_total + cpu))
	summary+=("$(printf '%-14s CPU %d s' prebuild "$cpu")")
	if [ "$rc" -ne 0 ]; then
		summary+=("$(printf '%-14s background build failed (exit %d; see %s)' prebuild "$rc" "$log_dir/prebuild.log")")
		total_fail=$((total_fail + 1))
	fi
	while IFS= read -r line; do summary+=("  $line"); done < <(grep '^prebuild: ' "$log_dir/prebuild.log")
	[ "$waited" -gt 0 ] && summary+=("  prebuild: the run waited $(mmss "$waited") for it after the last suite")
fi

echo "=== summary (logs in $log_dir)"
printf '%s\n' "${summary[@]}"
if [ ${#skips[@]} -gt 0 ]; then
	echo "=== skips (allow-list: ${allowlist#"$(dirname "$here")/"})"
	printf '  %s\n' "${skips[@]}"
fi
busy=$(busy_percent "$run_ticks" "$(cpu_ticks)")
echo "all suites: $(mmss $((SECONDS - run_start))), CPU $cpu_total s (the background build's included), machine $busy% busy"
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]

# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Shared helpers of the e2e scripts: paths, logging, the Debian mirror, waiting, the parser of the
# kernel suite's output. Sourced, not run.

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck disable=SC2034 # for the scripts that source this
TOP=$(cd "$E2E_DIR/../.." && pwd)
BUILD_ROOT=${BUILD_ROOT:-/var/tmp/cachestat_exporter}
E2E_ROOT=$BUILD_ROOT/e2e

log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# debian_mirror SUITE: the URI of the apt source that serves SUITE on this host, read from the deb822 files
# in /etc/apt/sources.list.d/, else from one-line sources (the project never names a mirror itself).
debian_mirror() {
	local suite=$1 f
	{
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		awk -v want="$suite" '
			function flush() { if (has && uri != "") { print uri; found = 1; exit } has = 0; uri = "" }
			/^[[:space:]]*$/ { flush(); next }
			/^URIs:/ { uri = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == want) has = 1 }
			END { if (!found) flush() }
		' "$f"
	done
	# One-line sources ("deb [options] URI SUITE COMPONENT..."), for hosts that still use them.
	cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		sed -E -n 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]]+([^[:space:]]+).*/\2 \3/p' |
		awk -v want="$suite" '$2 == want { print $1 }' || true
	} | sed -n 1p
}

# hash_inputs FILE...: a short, stable hash of the named files' contents.
hash_inputs() {
	cat "$@" | sha256sum | cut -c1-16
}

# lock_run NAME: one run of NAME (run-e2e, run-demo) at a time; they share a directory and host ports.
lock_run() {
	mkdir -p "$E2E_ROOT"
	exec 8>"$E2E_ROOT/$1.lock"
	flock -n 8 || die "another $1 is in progress (lock $E2E_ROOT/$1.lock)"
}

# kernel_results LOG STATUS [PROGRAMS]: the results of the kernel suite that run-in-guest.sh printed into
# LOG and ended with exit STATUS, one line per program in the dialect of tests/lib/tap.sh:
#   ok - kernel PROGRAM: P passed, F failed, S skipped (exit RC)
#   not ok - kernel PROGRAM: ... (why)
# and one "skip - kernel PROGRAM: WHAT (skipped in the guest)" per skipped result. A program
# passes only with its "# suite NAME: exit RC" line, an exit status of 0 (4, kselftest's "skip",
# when every result is a skip), no failed result and at least its minimum number of results.
# PROGRAMS: the programs expected, each NAME or NAME=MINIMUM (1 when not given); by default
# run-in-guest.sh's default set, "seed=6 kselftest mainline m32 numa dmesg". The suite needs its
# summary line and STATUS 0 beside; a log without them (runner not found, truncated) fails.
kernel_results() {
	local log=$1 status=$2 programs=${3:-seed=6 kselftest mainline m32 numa dmesg}
	awk -v status="$status" -v programs="$programs" '
	BEGIN {
		n = split(programs, order, " ")
		for (i = 1; i <= n; i++) {
			min[order[i]] = 1
			if (split(order[i], kv, "=") == 2) {
				order[i] = kv[1]
				min[kv[1]] = kv[2] + 0
			}
		}
	}
	{ sub(/\r$/, "") }
	/^(not )?ok [0-9]+ [A-Za-z0-9_-]+: / {
		ok = $1 == "ok"
		line = $0
		sub(/^(not )?ok [0-9]+ /, "", line)
		prog = line
		sub(/:.*/, "", prog)
		desc = substr(line, length(prog) + 3)
		results[prog]++
		if (ok && desc ~ / # SKIP$/) {
			sub(/ # SKIP$/, "", desc)
			skips[prog]++
			printf "skip - kernel %s: %s (skipped in the guest)\n", prog, desc
		} else if (ok) {
			passes[prog]++
		} else {
			fails[prog]++
			printf "    failed in the guest: %s\n", line
		}
		next
	}
	/^# suite [A-Za-z0-9_-]+: exit -?[0-9]+,/ {
		prog = $3
		sub(/:$/, "", prog)
		rc = $5
		sub(/,$/, "", rc)
		exited[prog] = 1
		code[prog] = rc
		next
	}
	/^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/ { summary = 1 }
	END {
		bad = 0
		for (i = 1; i <= n; i++) {
			p = order[i]
			r = results[p] + 0; f = fails[p] + 0; s = skips[p] + 0
			counts = sprintf("%d passed, %d failed, %d skipped", passes[p] + 0, f, s)
			why = ""
			if (!exited[p])
				why = "no exit status (not run, or the output is cut)"
			else if (code[p] != 0 && !(code[p] == 4 && s == r && r > 0))
				why = "exit " code[p]
			else if (f > 0)
				why = f " failed"
			else if (r < min[p])
				why = r " results, want at least " min[p]
			if (why == "")
				printf "ok - kernel %s: %s (exit %s)\n", p, counts, code[p]
			else {
				printf "not ok - kernel %s: %s: %s\n", p, why, counts
				bad = 1
			}
		}
		if (!summary)
			print "not ok - kernel suite: no summary line (the runner did not finish)"
		else if (status != 0 && !bad)
			print "not ok - kernel suite: exit " status " though every program passed"
	}' "$log"
}

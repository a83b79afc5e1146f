#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Hardening against exhausted resources: scrapes while cgroups and files come and go (20
# clients for 6 s beside tests/load/churn.py: no error); a descriptor limit (RLIMIT_NOFILE) of
# 16, the walk running out (skipped for the limit, scrapes answered); the fair scan budget (a
# cgroup whose processes hold 600,000 descriptors, walked first, does not starve the cgroups
# after it within max_scan_seconds).
# Ends with "N passed, N failed, N skipped" (tests/lib/tap.sh).
set -uo pipefail
# shellcheck source=tests/integration/lib-hardening.sh
. "$(dirname "$0")/lib-hardening.sh"

# ==== scrapes while cgroups and files come and go ====
# A short version of the load test: 20 clients for 6 s while churn.py makes and removes
# cgroups with processes holding files (one deleted) and rewrites the assigned directory.
if [ "$(id -u)" -ne 0 ] || ! mkdir "$cg2/cse-churn-$$" 2>/dev/null; then
	skip "churn" "needs a writable cgroup v2 at $cg2"
elif ! cc -std=gnu11 -O2 -o "$work/loadclient" "$top/tests/load/loadclient.c" -lpthread; then
	fail "tests/load/loadclient.c does not build"
	rmdir "$cg2/cse-churn-$$"
else
	mkdir "$work/churn"
	printf '{ "cgroups": [ { "match": "/cse-churn-%s/*", "paths": ["%s"] } ] }\n' "$$" "$work/churn" \
		>"$work/churn.json"
	if start_exporter --config.file="$work/churn.json" --web.max-requests=0; then
		"$py" "$top/tests/load/churn.py" "$cg2/cse-churn-$$" "$work/churn" 8 200 >"$work/churn.out" 2>&1 &
		churn=$!
		for _ in $(seq 100); do # until the churn proper starts
			[ -n "$(ls "$cg2/cse-churn-$$")" ] && break
			sleep 0.1
		done
		"$work/loadclient" 127.0.0.1 "$port" /metrics 12 6 >"$work/client.out"
		rc=$?
		wait "$churn"
		sed 's/^/  | /' "$work/client.out" "$work/churn.out"
		[ "$rc" -eq 0 ] && grep -q ' errors=0 ' "$work/client.out" &&
			pass "scrapes under cgroup and file churn: no error" || fail "errors under churn"
		grep -q 'cgroups_removed=[1-9]' "$work/churn.out" && pass "cgroups were removed under the scans" ||
			fail "churn did not run"
		kill -0 "$exporter_pid" 2>/dev/null && no_http_death && pass "still running after the churn" ||
			fail "the exporter died under churn"
	fi
	rmdir "$cg2/cse-churn-$$" 2>/dev/null
fi

# ==== out of descriptors (RLIMIT_NOFILE) ====
# A directory tree 12 levels deep needs two descriptors a level to walk; with 16 in all, the
# walk runs out: what it cannot open is skipped for the limit, and the exporter keeps serving.
d=$work/deep
for i in $(seq 12); do d=$d/l$i; done
mkdir -p "$d"
d=$work/deep
for i in $(seq 12); do d=$d/l$i; echo x >"$d/f"; done
chmod -R a+rX "$work/deep"
printf '{ "cgroups": [ { "match": "/", "paths": ["%s"] } ] }\n' "$work/deep" >"$work/deep.json"
if ! command -v prlimit >/dev/null; then
	skip "RLIMIT_NOFILE" "prlimit (util-linux) not installed"
elif wrap=(prlimit --nofile=16:16) && start_exporter --config.file="$work/deep.json"; then
	codes=
	for _ in 1 2 3; do
		codes="$codes$(curl -s -m 20 -o "$work/deep.prom" -w '%{http_code}' "$base/metrics") "
	done
	eq "scrapes answered with 16 descriptors" "$codes" "200 200 200 "
	n=$(sed -n 's/^cachestat_files_skipped_total{reason="limit"} //p' "$work/deep.prom")
	[ "${n:-0}" -gt 0 ] && pass "files out of descriptors are skipped for the limit ($n)" ||
		fail "no skipped{reason=limit} out of descriptors: '$n'"
	kill -0 "$exporter_pid" 2>/dev/null && no_http_death && pass "still running out of descriptors" ||
		fail "the exporter died out of descriptors"
fi

# Fair scan budget: a cgroup whose processes hold 600,000 descriptors of one file, walked
# first, must not starve the cgroups after it of their series within max_scan_seconds.
hostile_fair() {
	local sub name first v missing=0
	hostile_tree fair || { fail "fair: no cgroup"; return; }
	for v in 1 2 3 4; do mkdir "$sub/v$v"; done
	# kernfs lists a directory in hash order: find a name for the hog that comes first
	for i in $(seq 200); do
		mkdir "$sub/hog$i"
		first=$("$py" -c 'import os, re, sys
print(next(n for n in os.listdir(sys.argv[1]) if re.fullmatch(r"v[0-9]|hog[0-9]+", n)))' "$sub")
		[ "$first" = "hog$i" ] && { name=hog$i; break; }
		rmdir "$sub/hog$i"
	done
	[ -n "${name:-}" ] || { skip "fair" "no hog name listed first"; hostile_cleanup; return; }
	head -c 4096 /dev/urandom >"$work/fair-file"
	# 30 processes of 19,900 descriptors each (RLIMIT_NOFILE may not be raised here)
	in_cgroup "$sub/$name" "$py" "$hostile/fd_hog.py" "$work/fair-file" "$work/fair.ready"
	for v in 1 2 3 4; do in_cgroup "$sub/v$v" sleep 1000 3<"$work/fair-file"; done
	for _ in $(seq 200); do [ -e "$work/fair.ready" ] && break; sleep 0.05; done
	printf '{ "limits": { "max_scan_seconds": 0.5 } }\n' >"$work/fair.json"
	timeout -k 2 60 "$bin" --once --path.cgroupfs="$sub" --config.file="$work/fair.json" \
		>"$work/fair.prom" 2>/dev/null
	for v in 1 2 3 4; do
		grep -q "^cachestat_cgroup_files{cgroup=\"/v$v\"} [1-9]" "$work/fair.prom" || missing=$((missing + 1))
	done
	eq "fair: cgroups after one with 600,000 descriptors that have no series" "$missing" 0
	grep -q "^cachestat_cgroup_files{cgroup=\"/$name\"}" "$work/fair.prom" &&
		pass "fair: the hog has its (partial) series too" || fail "fair: the hog has no series"
	hostile_cleanup
}

if hostile_ready; then
	hostile_fair
fi
stop_exporter
finish

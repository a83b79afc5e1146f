#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Load test of cachestat_exporter (make loadtest), on loopback, bounded in time:
#  1. LOAD_CLIENTS (200) concurrent keep-alive clients scrape /metrics for LOAD_SECONDS (60)
#     while churn.py creates and removes cgroups with processes holding files open (one of
#     them deleted) and creates, rewrites, renames and deletes files in a directory that the
#     config assigns to those cgroups. Reports requests served, errors (must be 0), p50/p99
#     latency and the exporter's peak RSS (VmHWM). LOAD_CGROUPS (5000) more cgroups, idle,
#     stand beside them, so that every scan walks them and every body holds their series.
#     LOAD_GZIP=1: the clients ask for gzip, as Prometheus does. LOAD_EXPORTER_FLAGS: more
#     flags for the exporter (e.g. --scan.min-interval=5: scrapes served from a cached
#     snapshot).
#  2. LOAD_MILLION (1000000) files in one directory assigned to one cgroup: a scrape must
#     come back within the configured caps (max_files_per_cgroup, max_scan_seconds) with the
#     rest counted as skipped{reason="limit"}. LOAD_MILLION=0 leaves this out; LOAD_MAX_FILES
#     (200000) sets that cap, so that a small run still crosses it.
# Needs root and a writable cgroup v2 for the cgroup churn (else files only, said so).
# Ends with "N passed, N failed, N skipped" (tests/lib/tap.sh); the figures also go to $BUILD_ROOT/loadtest/figures.txt.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tests/load
# shellcheck disable=SC2034 # read by start_exporter (tests/lib/tap.sh)
bin=$top/exporter/cachestat_exporter
py=/usr/bin/python3
clients=${LOAD_CLIENTS:-200}
seconds=${LOAD_SECONDS:-60}
million=${LOAD_MILLION:-1000000}
idle=${LOAD_CGROUPS:-5000}
max_files=${LOAD_MAX_FILES:-200000} # the config's max_files_per_cgroup (its default) for part 2
out=${BUILD_ROOT:-/var/tmp/cachestat_exporter}/loadtest
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"

mkdir -p "$out"
make -s -C "$top/exporter" >/dev/null || { fail "the exporter does not build"; finish; }
cc -std=gnu11 -O2 -Wall -Wextra -o "$out/loadclient" "$here/loadclient.c" -lpthread ||
	{ fail "loadclient does not build"; finish; }

work=$(mktemp -d /var/tmp/cse-load.XXXXXX)
chmod 755 "$work"
churn_pid='' cgparent='' idleparent=''
cleanup() {
	[ -n "$churn_pid" ] && kill "$churn_pid" 2>/dev/null && wait "$churn_pid" 2>/dev/null
	stop_exporter
	if [ -n "$idleparent" ]; then
		find "$idleparent" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
		rmdir "$idleparent" 2>/dev/null
	fi
	if [ -n "$cgparent" ]; then
		for d in "$cgparent"/*/; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
		rmdir "$cgparent" 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ -n "$cg2" ] && [ "$(id -u)" -eq 0 ] && mkdir "$cg2/cse-load-$$" 2>/dev/null; then
	cgparent=$cg2/cse-load-$$
	label=/cse-load-$$
	# the idle cgroups in a parent of their own, out of the config's match
	if [ "$idle" -gt 0 ] && mkdir "$cg2/cse-load-idle-$$"; then
		idleparent=$cg2/cse-load-idle-$$
		for i in $(seq 0 $((idle - 1))); do mkdir "$idleparent/g$i"; done
	fi
else
	echo "note: no writable cgroup v2 (need root); churning files only"
	[ -n "$cg2" ] || { cg2=$work/cgroupfs; mkdir "$cg2"; }
	label=/
fi

port=$(pick_port $((20000 + ($$ + 7) % 20000))) || { fail "no free port"; finish; }
log=$work/exporter.log

hwm_mib() { awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
# The HTTP process: the scanner's child (privilege separation); '?' when there is none.
http_hwm_mib() {
	local child
	child=$(cat /proc/"$1"/task/*/children 2>/dev/null | awk '{ print $1; exit }')
	if [ -n "$child" ]; then hwm_mib "$child"; else echo '?'; fi
}

# ==== 1. concurrent scrapes under churn ====
mkdir "$work/files"
if [ -n "$cgparent" ]; then
	printf '{ "cgroups": [ { "match": "%s/*", "paths": ["%s"] } ] }\n' "$label" "$work/files" \
		>"$work/load.json"
else
	printf '{ "cgroups": [ { "match": "/", "paths": ["%s"] } ] }\n' "$work/files" >"$work/load.json"
fi
# Every client gets its own connection and every scrape is answered: the limits are raised
# to the test's size (the defaults would answer some of 200 simultaneous clients with 503).
flags=(--config.file="$work/load.json" --web.max-requests=0
	--web.max-connections=$((clients + 64)) --web.max-connections-per-ip=0)
# LOAD_EXPORTER_FLAGS: more flags for the exporter, space separated
read -ra extra <<<"${LOAD_EXPORTER_FLAGS:-}"
flags+=("${extra[@]}")
start_exporter "${flags[@]}" || finish
"$py" "$here/churn.py" "${cgparent:--}" "$work/files" $((seconds + 5)) >"$work/churn.out" 2>&1 &
churn_pid=$!
for _ in $(seq 300); do # until the churn proper starts (its files are made first)
	if [ -n "$cgparent" ]; then [ -n "$(ls "$cgparent")" ] && break; else
		[ "$(ls "$work/files" | wc -l)" -ge 2000 ] && break; fi
	sleep 0.1
done
echo "load: $clients clients for ${seconds}s on 127.0.0.1:$port, churn in ${cgparent:-files only}"
"$out/loadclient" 127.0.0.1 "$port" /metrics "$clients" "$seconds" >"$work/client.out"
client_rc=$?
kill "$churn_pid" 2>/dev/null
wait "$churn_pid" 2>/dev/null
churn_pid=
cat "$work/client.out"
sed 's/^/churn: /' "$work/churn.out"
val() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" "$work/client.out" | head -n 1; }
requests=$(val requests) errors=$(val errors)
# shellcheck disable=SC2154 # exporter_pid: set by start_exporter (tests/lib/tap.sh)
if kill -0 "$exporter_pid" 2>/dev/null; then
	rss=$(hwm_mib "$exporter_pid") http_rss=$(http_hwm_mib "$exporter_pid")
	pass "the exporter survived the load (peak RSS ${rss} MiB, its HTTP process ${http_rss} MiB)"
else
	rss='?' http_rss='?'
	fail "the exporter died under load"
	sed 's/^/  | /' "$log" | tail -n 20
fi
[ "$client_rc" -eq 0 ] && [ "${errors:-1}" -eq 0 ] && pass "no errors in ${requests:-0} requests" ||
	fail "errors: ${errors:-?} (see first_error above)"
[ "${requests:-0}" -gt 0 ] && pass "requests were served" || fail "no request was served"
n=$(grep -c 'level=ERROR' "$log")
[ "$n" -eq 0 ] && pass "no error in the exporter's log" ||
	{ fail "$n errors in the exporter's log"; grep 'level=ERROR' "$log" | head -n 5; }
scans=$(curl -s "http://127.0.0.1:$port/metrics" | grep -c '^cachestat_cgroup_cached_bytes')
echo "after the load: $scans cgroups in a scrape"

summary1="load: clients=$clients seconds=$seconds cgroups=$scans gzip=${LOAD_GZIP:-0} flags=${LOAD_EXPORTER_FLAGS:-none} requests=$requests errors=$errors rps=$(val rps) p50_ms=$(val p50_ms) p99_ms=$(val p99_ms) max_ms=$(val max_ms) peak_rss_mib=$rss http_peak_rss_mib=$http_rss $(cat "$work/churn.out")"
stop_exporter

# ==== 2. a million files in one cgroup ====
summary2="million: skipped (LOAD_MILLION=0)"
if [ "$million" -eq 0 ]; then
	skip "a million files in one cgroup" "LOAD_MILLION=0"
else
	mdir=$work/million
	mkdir "$mdir"
	start=$SECONDS
	"$py" -c 'import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    os.close(os.open(os.path.join(d, "%07d" % i), os.O_CREAT | os.O_WRONLY, 0o644))' "$mdir" "$million"
	echo "million: $million files made in $((SECONDS - start))s"
	if [ -n "$cgparent" ]; then
		mkdir "$cgparent/million"
		mlabel=$label/million
	else
		mlabel=/
	fi
	printf '{ "cgroups": [ { "match": "%s", "paths": ["%s"] } ], "limits": { "max_files_per_cgroup": %d } }\n' \
		"$mlabel" "$mdir" "$max_files" >"$work/million.json"
	if start_exporter --config.file="$work/million.json"; then
		t0=$(date +%s.%N)
		code=$(curl -s -m 120 -o "$work/million.prom" -w '%{http_code}' "http://127.0.0.1:$port/metrics")
		took=$(echo "$(date +%s.%N) - $t0" | bc)
		files=$(sed -n "s|^cachestat_cgroup_files{cgroup=\"$mlabel\"} ||p" "$work/million.prom")
		limit=$(sed -n 's/^cachestat_files_skipped_total{reason="limit"} //p' "$work/million.prom")
		dur=$(sed -n 's/^cachestat_scrape_collector_duration_seconds{collector="cachestat"} //p' "$work/million.prom")
		rss=$(hwm_mib "$exporter_pid")
		echo "million: status $code in ${took}s, files counted $files, skipped for the limit $limit, cachestat collector ${dur}s, peak RSS ${rss} MiB"
		[ "$code" = 200 ] && pass "a scrape over $million files answers (${took}s)" ||
			fail "scrape over $million files: status $code"
		[ -n "$files" ] && [ "$files" -le "$max_files" ] && pass "the cgroup's files stay within max_files_per_cgroup ($files)" ||
			fail "files counted: '$files' (want at most $max_files)"
		[ -n "$limit" ] && [ "$limit" -gt 0 ] && pass "the rest is counted as skipped for the limit ($limit)" ||
			fail "no skipped{reason=limit}: '$limit'"
		echo "$took < 30" | bc | grep -q 1 && pass "within the scan time cap (10 s) plus margin" ||
			fail "took ${took}s"
		summary2="million: files=$million status=$code seconds=$took counted=$files skipped_limit=$limit collector_seconds=$dur peak_rss_mib=$rss"
		stop_exporter
	fi
	[ -n "$cgparent" ] && rmdir "$cgparent/million"
	rm -rf "$mdir"
fi

{
	echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) CPUs"
	echo "$summary1"
	echo "$summary2"
} | tee "$out/figures.txt"
finish

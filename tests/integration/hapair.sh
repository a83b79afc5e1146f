#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# An HA pair of Prometheus servers on one exporter: one scan per scrape interval.
#
# Two real Prometheus servers (Debian's), external labels replica=a and replica=b as an HA pair
# has, scrape one exporter every 15 s for SECONDS (HAPAIR_SECONDS, 70 by default). The exporter
# runs with the ARGS of the package's default file (deploy/systemd/cachestat-exporter.default),
# which the unit and the DaemonSet carry too. The oracle for the scans is the kernel's: an
# inotify watch on a file the config assigns to a cgroup counts its opens, one per scan (the
# exporter opens each assigned file once a scan); the scrapes are what each server's own `up`
# series recorded. Then the same with --scan.min-interval=0, where every scrape scans: the
# watch must see the difference, or it proves nothing.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"
bin=$top/exporter/cachestat_exporter
seconds=${HAPAIR_SECONDS:-70}

[ "$(id -u)" -eq 0 ] || skip_suite "needs root (a cgroup of its own)"
command -v prometheus >/dev/null || skip_suite "prometheus not installed (tests/integration/deps.txt)"
command -v python3 >/dev/null || skip_suite "python3 not installed"
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$cg2" ] || skip_suite "no cgroup v2 mounted"
[ -x "$bin" ] || make -s -C "$top/exporter" || { fail "build the exporter"; finish; }

work=$(mktemp -d /tmp/cse-hapair.XXXXXX)
cg=$cg2/cse-hapair-$$
proms=()
watch_pid=
cleanup() {
	local p
	stop_exporter
	for p in "${proms[@]}" $watch_pid; do kill "$p" 2>/dev/null; done
	for p in "${proms[@]}" $watch_pid; do wait "$p" 2>/dev/null; done
	rmdir "$cg" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$cg"
head -c 65536 /dev/urandom >"$work/assigned.bin"
printf '{ "cgroups": [ { "match": "/cse-hapair-%s", "paths": ["%s"] } ] }\n' "$$" "$work/assigned.bin" \
	>"$work/config.json"

# opens of the assigned file, counted by the kernel (inotify IN_OPEN), appended to a file
python3 - "$work/assigned.bin" "$work/opens" <<'PY' &
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init()
IN_OPEN = 0x20
libc.inotify_add_watch(fd, sys.argv[1].encode(), IN_OPEN)
out = open(sys.argv[2], "a", buffering=1)
while True:
    buf = os.read(fd, 4096)
    off = 0
    while off < len(buf):
        _, mask, _, ln = struct.unpack_from("iIII", buf, off)
        if mask & IN_OPEN:
            out.write("open\n")
        off += 16 + ln
PY
watch_pid=$!
: >"$work/opens"
opens() { wc -l <"$work/opens"; }

# the ARGS of the package's default file
args=$(sed -n 's/^ARGS="\(.*\)"$/\1/p' "$top/deploy/systemd/cachestat-exporter.default")
check "the package's default file sets --scan.min-interval ($args)" \
	bash -c "[[ '$args' == *--scan.min-interval=* ]]"

# start_prom NAME PORT REPLICA: a Prometheus scraping the exporter every 15 s.
start_prom() {
	mkdir -p "$work/$1"
	cat >"$work/$1/prometheus.yml" <<YML
global:
  scrape_interval: 15s
  external_labels: { replica: $3 }
scrape_configs:
  - job_name: cachestat
    static_configs: [ { targets: ["127.0.0.1:$port"] } ]
YML
	prometheus --config.file="$work/$1/prometheus.yml" --storage.tsdb.path="$work/$1/data" \
		--web.listen-address="127.0.0.1:$2" >"$work/$1/log" 2>&1 &
	proms+=($!)
}
# query PORT PROMQL: the first sample's value, or nothing.
query() {
	curl -s "http://127.0.0.1:$1/api/v1/query" --data-urlencode "query=$2" |
		python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}

# run_pair LABEL EXPORTER-ARGS...: the pair (one server with SINGLE=1) for $seconds; sets scans,
# scrapes_a, scrapes_b, the largest snapshot age each saw (age, age_b) and the longest scan (scan_max).
run_pair() {
	local what=$1 pa pb n0 i
	shift
	port=$(pick_port) || { fail "$what: no free port"; return 1; }
	# shellcheck disable=SC2034 # read by start_exporter (tests/lib/tap.sh)
	log=$work/exporter-$what.log
	# shellcheck disable=SC2086 # ARGS is a list of flags, split as systemd splits it
	start_exporter --config.file="$work/config.json" "$@" || return 1
	pa=$(pick_port $((port + 1))) && pb=$(pick_port $((pa + 1))) ||
		{ fail "$what: no free ports"; return 1; }
	n0=$(opens)
	start_prom "$what-a" "$pa" a
	[ -n "${SINGLE:-}" ] || start_prom "$what-b" "$pb" b
	sleep "$seconds"
	scans=$(($(opens) - n0))
	scrapes_a=$(query "$pa" "count_over_time(up[10m])")
	age=$(query "$pa" "max_over_time(cachestat_snapshot_age_seconds[10m])")
	scan_max=$(query "$pa" "max_over_time(sum(cachestat_scrape_collector_duration_seconds)[10m:])")
	scrapes_b=0 age_b=0
	if [ -z "${SINGLE:-}" ]; then
		scrapes_b=$(query "$pb" "count_over_time(up[10m])")
		age_b=$(query "$pb" "max_over_time(cachestat_snapshot_age_seconds[10m])")
	fi
	for i in "${proms[@]}"; do kill "$i" 2>/dev/null; wait "$i" 2>/dev/null; done
	proms=()
	stop_exporter
	echo "     $what: $scans scans (opens of the assigned file) for $scrapes_a + $scrapes_b scrapes;" \
		"largest snapshot age seen: ${age:-?} s (a), ${age_b:-?} s (b); longest scan ${scan_max:-?} s"
}
# age_within LIMIT AGE...: whether every AGE is at most LIMIT seconds (a missing one is not).
age_within() {
	python3 -c 'import sys; lim = float(sys.argv[1]); sys.exit(not all(a and float(a) <= lim for a in sys.argv[2:]))' "$@"
}

# shellcheck disable=SC2086 # ARGS is split on whitespace, as systemd does
if run_pair default $args; then
	check "default: both servers scraped ($scrapes_a, $scrapes_b)" \
		test "${scrapes_a:-0}" -ge 4 -a "${scrapes_b:-0}" -ge 4
	# one scan per interval: the scrapes of one server, give or take the one in flight at the
	# ends of the window; two servers' worth would be about twice as many
	most=$(( (scrapes_a > scrapes_b ? scrapes_a : scrapes_b) + 1 ))
	check "default: one scan per interval for the pair ($scans scans, at most $most)" \
		test "$scans" -ge 1 -a "$scans" -le "$most"
	# a scrape waits for a scan past the interval: no snapshot older than it plus a scan
	interval=$(sed -n 's/.*--scan.min-interval=\([0-9.]*\).*/\1/p' <<<"$args")
	check "default: no scrape got a snapshot older than the interval ($age, $age_b s; ${interval:-?} s + a scan)" \
		age_within "$(python3 -c "print(${interval:-0} + float('${scan_max:-0}' or 0) + 1)")" "$age" "$age_b"
fi
# One Prometheus (kube-prometheus-stack's default): every scrape finds the snapshot older than the
# interval, so each waits for the scan it starts and gets data no older than that scan.
# shellcheck disable=SC2086 # ARGS is split on whitespace, as systemd does
if SINGLE=1 run_pair single $args; then
	check "single: one scan per scrape ($scans scans for $scrapes_a scrapes)" \
		test "$scans" -ge $((scrapes_a - 1)) -a "$scans" -le $((scrapes_a + 2))
	check "single: fresh data, the age at most the scan's time ($age s; scan ${scan_max:-?} s + 1)" \
		age_within "$(python3 -c "print(float('${scan_max:-0}' or 0) + 1)")" "$age"
fi
if run_pair every-scrape --scan.min-interval=0; then
	total=$((scrapes_a + scrapes_b))
	check "min-interval 0: every scrape scans ($scans scans for $total scrapes)" \
		test "$scans" -ge $((total - 2))
fi
finish

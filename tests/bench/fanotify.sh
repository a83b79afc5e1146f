#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fanotify collector's overhead (a benchmark, not a test; not part of make test).
#
# On a loop-mounted ext4 of its own (the only file system marked, so that the host's other opens
# do not take part), a process in a cgroup opens and closes 1,000 files round robin:
#  1. a million opens as fast as they go, with the exporter (--collector.fanotify) running and
#     without it, alternated over BENCH_RUNS rounds in the same run: the medians and their ratio;
#     then 20,000 distinct files opened once each, with and without (every open an event: the
#     worst case, a build or a backup, where silencing does not help);
#  2. 50,000 opens per second for BENCH_SECONDS with the exporter running: its CPU time (utime +
#     stime of /proc/PID/stat) over that time, and the events it read;
#  3. 100,000 distinct files opened once each: the set's size, the daemon's resident set, and the
#     time of a scrape that measures them all.
# Prints one table.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
bin=${CACHESTAT_EXPORTER:-$top/exporter/cachestat_exporter}
runs=${BENCH_RUNS:-5}
seconds=${BENCH_SECONDS:-10}
opens=${BENCH_OPENS:-1000000}

[ "$(id -u)" -eq 0 ] || { echo "bench fanotify: needs root (cgroups, mount)" >&2; exit 1; }
for t in cc curl mkfs.ext4 python3; do
	command -v "$t" >/dev/null || { echo "bench fanotify: $t missing (tests/bench/deps.txt)" >&2; exit 1; }
done
[ -x "$bin" ] || make -s -C "$top/exporter"
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
work=$(mktemp -d /var/tmp/cse-bench-fa.XXXXXX)
mnt=$work/mnt
cg=$cg2/cse-bench-fa-$$
port=$((30000 + $$ % 20000))
exporter_pid=

stop_exporter() {
	if [ -n "$exporter_pid" ]; then
		kill "$exporter_pid" 2>/dev/null || true
		wait "$exporter_pid" 2>/dev/null || true
		exporter_pid=
	fi
}
cleanup() {
	stop_exporter
	mountpoint -q "$mnt" && umount "$mnt"
	[ -d "$cg" ] && rmdir "$cg"
	rm -rf "$work"
}
trap cleanup EXIT

start_exporter() { # ARGS...: on $port, marking only $mnt; waits for its first scan
	"$bin" --web.listen-address="127.0.0.1:$port" --path.cgroupfs="$cg2" --collector.fanotify \
		--collector.fanotify.filesystems="$mnt" "$@" 2>"$work/exporter.log" &
	exporter_pid=$!
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:$port/metrics" >/dev/null && return 0 # starts the listener
		sleep 0.1
	done
	echo "bench fanotify: the exporter did not start" >&2
	cat "$work/exporter.log" >&2
	exit 1
}
metric() { curl -sf "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

mkdir "$mnt" "$cg"
truncate -s 512M "$work/fs.img"
mkfs.ext4 -q -N 140000 "$work/fs.img"
mount -o loop "$work/fs.img" "$mnt"
mkdir "$mnt/loop" "$mnt/many"
python3 - "$mnt" <<'EOF'
import os, sys
d = sys.argv[1]
for i in range(1000):
    with open(os.path.join(d, "loop", "f%04d" % i), "wb") as f:
        f.write(b"x" * 4096)
for i in range(100000):
    open(os.path.join(d, "many", "m%06d" % i), "wb").close()
EOF
cc -O2 -o "$work/openloop" "$top/tests/bench/openloop.c"
loop_files=("$mnt"/loop/f*)

# The load runs in its own cgroup, as a workload would.
in_cgroup() { sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' sh "$cg" "$@"; }

# alternate NAME OPENS FILE...: BENCH_RUNS rounds of openloop without, then with, the exporter;
# the medians (ns per open) in alt_without and alt_with
alternate() {
	local name=$1 r
	shift
	: >"$work/$name.without" && : >"$work/$name.with"
	for r in $(seq "$runs"); do
		in_cgroup "$work/openloop" "$@" >>"$work/$name.without"
		start_exporter
		in_cgroup "$work/openloop" "$@" >>"$work/$name.with"
		stop_exporter
		: "$r"
	done
	alt_without=$(median <"$work/$name.without")
	alt_with=$(median <"$work/$name.with")
}

# ---- 1. a million opens, with and without ----
alternate loop "$opens" "${loop_files[@]}"
without=$alt_without with=$alt_with

# ---- 1b. 20,000 distinct files, each opened once (a build, a backup): every open an event ----
distinct=("$mnt"/many/m0[01]*)
alternate distinct "${#distinct[@]}" "${distinct[@]}"
d_without=$alt_without d_with=$alt_with

# ---- 2. the exporter's CPU at 50,000 opens per second ----
start_exporter
ev0=$(metric cachestat_fanotify_events_total)
t0=$(cpu_ticks "$exporter_pid")
in_cgroup "$work/openloop" -r 50000 "$seconds" "${loop_files[@]}" >/dev/null
sleep 0.5 # what is queued still
t1=$(cpu_ticks "$exporter_pid")
ev1=$(metric cachestat_fanotify_events_total)
overflows=$(metric cachestat_fanotify_queue_overflows_total)
stop_exporter
hz=$(getconf CLK_TCK)

# ---- 3. 100,000 distinct recent files ----
start_exporter --collector.fanotify.max-files-per-cgroup=100000 --collector.fanotify.max-files=100000
in_cgroup python3 -c 'import os, sys
for n in os.listdir(sys.argv[1]): os.close(os.open(os.path.join(sys.argv[1], n), os.O_RDONLY))' "$mnt/many"
sleep 2
s0=$(date +%s.%N)
curl -sf "http://127.0.0.1:$port/metrics" >"$work/scrape"
s1=$(date +%s.%N)
entries=$(awk '$1 == "cachestat_fanotify_recent_files" { print $2 }' "$work/scrape")
rss_kib=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$exporter_pid/status")
hwm_kib=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$exporter_pid/status")
stop_exporter

printf '%-62s %s\n' "what (kernel $(uname -r), $(nproc) CPUs, $runs rounds)" "figure"
printf '%-62s %s\n' "open+close, exporter not running (median ns/open)" "$without"
printf '%-62s %s\n' "open+close, exporter running, fs marked (median ns/open)" "$with"
printf '%-62s %s\n' "ratio with/without" "$(awk -v a="$with" -v b="$without" 'BEGIN { printf "%.3f", a / b }')"
printf '%-62s %s\n' "${#distinct[@]} distinct files opened once, not running (ns/open)" "$d_without"
printf '%-62s %s\n' "the same, exporter running (median ns/open)" "$d_with"
printf '%-62s %s\n' "ratio with/without, every open an event" \
	"$(awk -v a="$d_with" -v b="$d_without" 'BEGIN { printf "%.3f", a / b }')"
printf '%-62s %s\n' "exporter CPU at 50,000 opens/s (% of one CPU)" \
	"$(awk -v t=$((t1 - t0)) -v hz="$hz" -v s="$seconds" 'BEGIN { printf "%.1f", 100 * t / hz / s }')"
printf '%-62s %s\n' "events read in those ${seconds} s / queue overflows" "$((ev1 - ev0)) / $overflows"
printf '%-62s %s\n' "recent files kept after 100,000 distinct opens" "$entries"
printf '%-62s %s\n' "exporter RSS then / peak (MiB)" \
	"$(awk -v a="$rss_kib" -v b="$hwm_kib" 'BEGIN { printf "%.1f / %.1f", a / 1024, b / 1024 }')"
printf '%-62s %s\n' "scrape measuring them (s)" "$(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.2f", b - a }')"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run in a guest by activity-guest.sh: the exporter with the activity collector as a daemon on 127.0.0.1:9460, and
# in the cgroup /act-a a 64 MiB file read cold, read warm, and 16 MiB written; the cgroup's four counters after
# each step, with what BCC derives from them (misses = added - dirtied, hits = accesses - buffer_dirtied - misses).
# Meanwhile /act-b reads a file of its own, to be counted apart. Then the cost: a cached-read loop (the warm 64 MiB
# file read 4 KiB at a time, 8 passes: 131,072 read(2) calls, each a page-cache access the program counts) timed
# with the exporter running without the collector and with it, alternately, 7 times each (the exporter's own scans
# are in both); the medians and their ratio. Between the two, the exporter with the collector has exited: its
# programs are detached, which the kernel's kprobes or perf events must show. Environment: ACTIVITY_BIN (the
# exporter), ACTIVITY_DIR (where the files go, /scratch: ext4 on a disk), ACTIVITY_ROUNDS and ACTIVITY_PASSES (7
# and 8; e2e case 17 runs it at 1 and 1, a smoke size).
set -euo pipefail
bin=${ACTIVITY_BIN:-/usr/bin/cachestat_exporter}
[ -x /root/cachestat_exporter ] && bin=${ACTIVITY_BIN:-/root/cachestat_exporter}
dir=${ACTIVITY_DIR:-/scratch}
rounds=${ACTIVITY_ROUNDS:-7} passes=${ACTIVITY_PASSES:-8}
cg=/sys/fs/cgroup
mkdir -p "$cg/act-a" "$cg/act-b"
dd if=/dev/urandom of="$dir/act-64m" bs=1M count=64 status=none
dd if=/dev/urandom of="$dir/act-b-32m" bs=1M count=32 status=none
rm -f "$dir/act-16m"
sync
pid=
# start_exporter [FLAG...]: the exporter as a daemon, with the activity collector unless told otherwise
start_exporter() {
	[ $# -gt 0 ] || set -- --collector.activity
	"$bin" --web.listen-address=127.0.0.1:9460 "$@" >/root/activity-exporter.log 2>&1 &
	pid=$!
	for _ in $(seq 60); do curl -sf http://127.0.0.1:9460/metrics >/dev/null && return 0; sleep 1; done
	echo "the exporter did not answer in 60 s" >&2
	exit 1
}
stop_exporter() {
	kill "$pid"
	wait "$pid" || true
	pid=
}
# What is attached: where debugfs is (mainline's config), the kernel's list of kprobes names the access
# function (at +0x0, or +0x4 past an IBT kernel's endbr64) while the exporter runs and not once it has exited;
# where it is not (our release kernel), the perf events the kprobes hang on are counted among every process's
# descriptors, which the kernel frees, with their kprobes, when the last holder exits.
mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
if [ -r /sys/kernel/debug/kprobes/list ]; then
	probe_source="the kernel's kprobe list"
	probes() { grep -c -E ' (folio_mark_accessed|mark_page_accessed)\+0x[0-9a-f]+ ' /sys/kernel/debug/kprobes/list || true; }
else
	probe_source="perf event descriptors held"
	probes() { find /proc/[0-9]*/fd -lname 'anon_inode:\[perf_event\]' 2>/dev/null | wc -l; }
fi
probes_before=$(probes) # another exporter's (e2e case 17's unit), not ours
trap '[ -z "$pid" ] || kill $pid' EXIT
start_exporter
grep -o 'activity="[^"]*"' /root/activity-exporter.log | head -n 1 || true

# counters CGROUP: accesses added dirtied buffer_dirtied of the cgroup, one line
counters() {
	local body
	body=$(curl -sf http://127.0.0.1:9460/metrics)
	for f in accesses_total added_pages_total dirtied_pages_total buffer_dirtied_total; do
		awk -v n="cachestat_cgroup_pagecache_$f{cgroup=\"$1\"}" '$1 == n { v = $2 } END { printf "%d ", v }' <<<"$body"
	done
	echo
}
# in CGROUP, run a command
in_cgroup() {
	local c=$1
	shift
	bash -c 'echo $$ >'"$cg/$c"'/cgroup.procs && exec "$@"' sh "$@"
}
# the step's deltas of the four counters, set by step
d_acc=0 d_add=0 d_dirt=0 d_bd=0
step() {
	local before after
	before=$(counters /act-a)
	"$@"
	sleep 6 # a scan after the step (the scan interval is at least 5 s)
	after=$(counters /act-a)
	# shellcheck disable=SC2086
	set -- $before $after
	d_acc=$(($5 - $1)) d_add=$(($6 - $2)) d_dirt=$(($7 - $3)) d_bd=$(($8 - $4))
}
# report WHAT: the step's counts, and what BCC derives from them net of what starting dd costs in the cgroup
# (s_acc, s_add: a dd that copies nothing, measured first)
report() {
	local misses=$((d_add - d_dirt)) acc=$((d_acc - s_acc)) add=$((d_add - s_add))
	echo "$1: accesses $d_acc added $d_add dirtied $d_dirt buffer_dirtied $d_bd -> misses $misses" \
		"hits $((d_acc - d_bd - misses)); net of dd's start: misses $((add - d_dirt)) hits $((acc - d_bd - (add - d_dirt)))"
}
step in_cgroup act-a dd if="$dir/act-64m" of=/dev/null count=0 status=none
s_acc=$d_acc s_add=$d_add
echo "dd's start in the cgroup (a dd that copies nothing): accesses $s_acc added $s_add"
sync
echo 3 >/proc/sys/vm/drop_caches
in_cgroup act-b dd if="$dir/act-b-32m" of=/dev/null bs=1M status=none &
other=$!
step in_cgroup act-a dd if="$dir/act-64m" of=/dev/null bs=1M status=none
report "cold read of 64 MiB (expect misses 16384)"
wait "$other"
step in_cgroup act-a dd if="$dir/act-64m" of=/dev/null bs=1M status=none
report "warm read of 64 MiB (expect hits 16384, misses 0)"
step in_cgroup act-a dd if=/dev/zero of="$dir/act-16m" bs=1M count=16 status=none
report "write of 16 MiB (expect dirtied 4096)"
echo "/act-b (read 32 MiB cold, expect added 8192), accesses added dirtied buffer_dirtied: $(counters /act-b)"
curl -sf http://127.0.0.1:9460/metrics | grep -E '^cachestat_(pagecache_activity|collector_unavailable|scrape_collector_success\{collector="activity")' || true

# The cost.
echo "kprobes with the exporter running ($probe_source): $(($(probes) - probes_before))"
# loop: the cached-read loop; prints its wall time and the CPU time (user + system) of its reads, in ms. The kprobes
# run in the reading task, so its CPU time holds their cost and little of what else the guest does meanwhile.
loop() {
	local t0 t1 cpu
	t0=$(date +%s%N)
	cpu=$(
		for _ in $(seq "$passes"); do dd if="$dir/act-64m" of=/dev/null bs=4k status=none; done
		times # two lines, the shell's and its children's
	)
	t1=$(date +%s%N)
	# the children's user and system time: "0m0.123s 0m0.456s"
	awk -v wall=$(((t1 - t0) / 1000000)) 'NR == 2 {
		split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%d %d\n", wall, (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1000 + 0.5 }' <<<"$cpu"
}
loop >/dev/null # warm, and the first pass's page faults of dd paid
# prog_stats: the time the kernel measured in the exporter's programs and how many runs, "NS RUNS" (with
# kernel.bpf_stats_enabled, each program's fdinfo counts them): the programs' own cost, free of the guest's noise
prog_stats() {
	cat /proc/"$pid"/fdinfo/* 2>/dev/null | awk '$1 == "run_time_ns:" { ns += $2 } $1 == "run_cnt:" { n += $2 }
		END { printf "%d %d\n", ns, n }'
}
sysctl -qw kernel.bpf_stats_enabled=1 || echo "no kernel.bpf_stats_enabled: the programs' own time is not measured"
wall_off=() wall_on=() cpu_off=() cpu_on=() prog_ns=0 prog_runs=0
for _ in $(seq "$rounds"); do
	stop_exporter
	[ "$(probes)" = "$probes_before" ] ||
		echo "kprobes left after the exporter exited: $(($(probes) - probes_before))"
	start_exporter --no-collector.activity
	read -r w c < <(loop)
	wall_off+=("$w") cpu_off+=("$c")
	stop_exporter
	start_exporter
	read -r ns0 n0 < <(prog_stats)
	read -r w c < <(loop)
	read -r ns1 n1 < <(prog_stats)
	wall_on+=("$w") cpu_on+=("$c") prog_ns=$((prog_ns + ns1 - ns0)) prog_runs=$((prog_runs + n1 - n0))
done
stop_exporter
median() { printf '%s\n' "$@" | sort -n | sed -n "$(($# / 2 + 1))p"; }
cpu0=$(median "${cpu_off[@]}") cpu1=$(median "${cpu_on[@]}") wall0=$(median "${wall_off[@]}") wall1=$(median "${wall_on[@]}")
echo "cached-read loop ($((passes * 16384)) reads of 4 KiB), collector off / on: CPU ${cpu_off[*]} / ${cpu_on[*]} ms," \
	"medians $cpu0 / $cpu1 ms; wall ${wall_off[*]} / ${wall_on[*]} ms, medians $wall0 / $wall1 ms"
awk -v c0="$cpu0" -v c1="$cpu1" -v w0="$wall0" -v w1="$wall1" \
	'BEGIN { printf "ratio on/off: CPU %.3f, wall %.3f\n", c1 / c0, w1 / w0 }'
# per read: its CPU time off, and the programs' time per run (about one run per read: its access)
awk -v c0="$cpu0" -v reads=$((passes * 16384)) -v ns="$prog_ns" -v runs="$prog_runs" -v rounds="$rounds" 'BEGIN {
	printf "programs: %d runs in the loops with the collector on (%.2f a read), %.0f ns a run;", runs,
		runs / (reads * rounds), runs ? ns / runs : 0
	printf " a read off: %.0f ns of CPU\n", c0 * 1e6 / reads }'

#!/usr/bin/env bash
# The e2e suite: boots the guest (patched kernel, Debian bookworm provisioned by cloud-init from
# deploy/cloud-init/, the exporter as a systemd service, Prometheus scraping it) and checks, through
# Prometheus's HTTP API on the host's forwarded port, what Prometheus recorded while the suite drives
# workloads in the guest over ssh. One line per case; the last line is "N passed, N failed, N skipped".
#
# Environment: see vm.sh and build-seed.sh; E2E_CASES (e.g. "1 3") runs only those cases.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
source "$E2E_DIR/vm.sh"

MIB=1048576
RUN=$E2E_ROOT/run-e2e
passed=0 failed=0 skipped=0
all_cases="1 2 3 4 5 6 7"
cases=${E2E_CASES:-$all_cases}

fail() {
	echo "FAIL: $*"
	exit 1
}
skip() {
	echo "SKIP: $*"
	exit 3
}
note() { echo "  $*"; }

# g CMD...: the guest helper (guest-helper.sh) over ssh.
g() { vm_ssh e2e-guest "$@"; }

# pv EXPR: the value of the first sample of an instant query ("" when there is none).
pv() { prom_value "$1"; }
# pcount EXPR: how many series an instant query returns.
pcount() { prom_api query --data-urlencode "query=$1" | jq '.data.result | length'; }

# until_true SECONDS DESCRIPTION EXPR AWK_CONDITION: waits until the value v of EXPR makes the awk condition
# true; fails the case with the last value seen.
until_true() {
	local limit=$1 what=$2 expr=$3 cond=$4 deadline=$(($SECONDS + $1)) v=
	while :; do
		v=$(pv "$expr")
		if [ -n "$v" ] && awk -v v="$v" "BEGIN { exit !($cond) }"; then
			note "$what: $v"
			return 0
		fi
		[ "$SECONDS" -lt "$deadline" ] || fail "$what: after ${limit} s, $expr = '${v:-no data}' (want $cond)"
		vm_alive || fail "QEMU exited (see $RUN/console.log)"
		sleep 2
	done
}
# until_absent SECONDS DESCRIPTION EXPR: waits until EXPR returns no series.
until_absent() {
	local deadline=$(($SECONDS + $1)) n
	while :; do
		n=$(pcount "$3")
		[ "$n" = 0 ] && { note "$2"; return 0; }
		[ "$SECONDS" -lt "$deadline" ] || fail "$2: still $n series of $3 after $1 s"
		sleep 2
	done
}

# until_cmd SECONDS DESCRIPTION CMD...: waits until CMD succeeds.
until_cmd() {
	local limit=$1 deadline=$(($SECONDS + $1)) what=$2
	shift 2
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what: not after $limit s"
		sleep 2
	done
	note "$what"
}

scrape_job() { echo 'job=~"cachestat.*"'; }

# Case 1: a process in cgroup A reads a 64 MiB file and keeps it open.
case_1() {
	local cg=e2e-1-A f=/scratch/e2e/1/data
	until_true 10 "the exporter found both cachestat call forms (seed and mainline)" 'cachestat_syscall_info{abi="both"}' "v == 1"
	g cgroup $cg && g mkfile $f 64 && g hold $cg $f || fail "workload setup"
	until_true 60 "cached bytes of /$cg" "cachestat_cgroup_cached_bytes{cgroup=~\".*A\",cgroup=\"/$cg\"}" \
		"v >= 0.95 * 64 * $MIB && v <= 1.05 * 64 * $MIB"
	until_true 30 "per-file cached bytes of $f" \
		"cachestat_file_cached_bytes{cgroup=\"/$cg\",path=\"$f\"}" "v >= 0.95 * 64 * $MIB && v <= 64 * $MIB"
	g remove $cg
}

# Case 2: writes without fsync are dirty; after fsync dirty is 0.
case_2() {
	local cg=e2e-2-dirty f=/scratch/e2e/2/data
	# Keep the flusher from writing the pages back before Prometheus sees them dirty.
	vm_ssh 'mkdir -p /scratch/e2e/2 && sysctl -q -w vm.dirty_expire_centisecs=60000 vm.dirty_writeback_centisecs=60000' ||
		fail "sysctl"
	g cgroup $cg && g write-hold $cg $f 16 || fail "workload setup"
	until_true 60 "dirty bytes of /$cg before fsync" "cachestat_cgroup_dirty_bytes{cgroup=\"/$cg\"}" \
		"v >= 0.9 * 16 * $MIB"
	vm_ssh "sync $f" || fail "fsync"
	until_true 30 "dirty bytes of /$cg after fsync" "cachestat_cgroup_dirty_bytes{cgroup=\"/$cg\"}" "v == 0"
	until_true 30 "cached bytes of /$cg after fsync" "cachestat_cgroup_cached_bytes{cgroup=\"/$cg\"}" \
		"v >= 0.95 * 16 * $MIB"
	vm_ssh 'sysctl -q -w vm.dirty_expire_centisecs=3000 vm.dirty_writeback_centisecs=500'
	g remove $cg
}

# Case 3: proactive reclaim evicts; re-reading refaults, on the node where it happens.
case_3() {
	local cg=e2e-3-reclaim f=/scratch/e2e/3/data sel c0 e0 r0 n0 n1 t1 d0
	sel="cgroup=\"/$cg\""
	g cgroup $cg && g mkfile $f 32 || fail "file setup"
	# Read twice on node 0 so that the pages are activated (the workingset), then hold the file open.
	g read $cg $f 0 && g read $cg $f 0 && g hold $cg $f || fail "workload setup"
	until_true 60 "cached bytes before reclaim" "cachestat_cgroup_cached_bytes{$sel}" "v >= 0.95 * 32 * $MIB"
	c0=$(pv "cachestat_cgroup_cached_bytes{$sel}")
	e0=$(pv "cachestat_cgroup_recently_evicted_bytes{$sel}")
	r0=$(pv "cachestat_cgroup_workingset_refault_file_total{$sel}")
	n0=$(pv "cachestat_cgroup_node_workingset_refault_file_total{$sel,node=\"0\"}")
	n1=$(pv "cachestat_cgroup_node_workingset_refault_file_total{$sel,node=\"1\"}")
	[ -n "$r0" ] && [ -n "$n0" ] && [ -n "$n1" ] || fail "no refault counters for /$cg (memory.stat collector)"

	# A quarter of what the cgroup holds. Reclaiming it all would empty its LRU, and the shadow entries with
	# it; and an evicted page is "recent" only while its refault distance fits in the cgroup's active file
	# list, which a larger reclaim drains.
	note "before reclaim: $(vm_ssh "grep -E '^(active|inactive)_file' /sys/fs/cgroup/$cg/memory.stat" | tr '\n' ' ')"
	g reclaim $cg $((8 * MIB))
	note "after reclaim: $(vm_ssh "grep -E '^(active|inactive)_file' /sys/fs/cgroup/$cg/memory.stat" | tr '\n' ' ')"
	until_true 60 "cached bytes after reclaim" "cachestat_cgroup_cached_bytes{$sel}" "v <= $c0 - 4 * $MIB"
	until_true 30 "evicted bytes after reclaim" "cachestat_cgroup_evicted_bytes{$sel}" "v >= 4 * $MIB"
	# Recently evicted: the evicted pages that the refault-distance test still counts in the workingset.
	until_true 30 "recently evicted bytes after reclaim" "cachestat_cgroup_recently_evicted_bytes{$sel}" \
		"v > $e0"

	# Re-read from the same cgroup with its memory on node 1: the refaults belong to node 1.
	g read $cg $f 1 || fail "re-read"
	until_true 60 "refaults of /$cg after re-reading" "cachestat_cgroup_workingset_refault_file_total{$sel}" \
		"v - $r0 >= 1024"
	t1=$(pv "cachestat_cgroup_workingset_refault_file_total{$sel}")
	until_true 30 "refaults on node 1" "cachestat_cgroup_node_workingset_refault_file_total{$sel,node=\"1\"}" \
		"v - $n1 >= 0.9 * ($t1 - $r0)"
	d0=$(pv "cachestat_cgroup_node_workingset_refault_file_total{$sel,node=\"0\"}")
	awk -v a="$d0" -v b="$n0" -v t="$t1" -v r="$r0" 'BEGIN { exit !(a - b <= 0.1 * (t - r)) }' ||
		fail "refaults counted on node 0 too: $n0 -> $d0 of $((${t1%.*} - ${r0%.*})) in all"
	note "refaults on node 0: $n0 -> $d0"
	g remove $cg
}

# Case 4: a deleted but open file counts; a file that only the config assigns to cgroup B counts for B.
case_4() {
	local cg=e2e-4-deleted f=/scratch/e2e/4/deleted-data b=e2e-4-B dir=/scratch/e2e-4-B
	g cgroup $cg && g mkfile $f 8 && g hold $cg $f && vm_ssh "rm $f" || fail "workload setup"
	until_true 60 "cached bytes of /$cg (file deleted)" "cachestat_cgroup_cached_bytes{cgroup=\"/$cg\"}" \
		"v >= 0.95 * 8 * $MIB"
	until_true 30 "per-file series of the deleted file" \
		"max(cachestat_file_cached_bytes{cgroup=\"/$cg\",path=~\"$f.*\"})" "v >= 0.95 * 8 * $MIB"
	# /$b has no process: its files come from the exporter's config (exporter-config.json) alone.
	g cgroup $b && g mkfile $dir/one 4 && g mkfile $dir/sub/two 4 && vm_ssh "cat $dir/one $dir/sub/two >/dev/null" ||
		fail "config setup"
	until_true 60 "cached bytes of /$b" "cachestat_cgroup_cached_bytes{cgroup=\"/$b\"}" \
		"v >= 0.95 * 8 * $MIB && v <= 1.05 * 8 * $MIB"
	until_true 30 "files of /$b" "cachestat_cgroup_files{cgroup=\"/$b\"}" "v == 2"
	g remove $cg
	g remove $b
}

# Case 5: a file shared by two cgroups counts in both; a cgroup removed mid-run leaves without an error.
case_5() {
	local s1=e2e-5-S1 s2=e2e-5-S2 f=/scratch/e2e/5/shared t0
	g cgroup $s1 && g cgroup $s2 && g mkfile $f 16 && g hold $s1 $f && g hold $s2 $f || fail "workload setup"
	for cg in $s1 $s2; do
		until_true 60 "cached bytes of the shared file in /$cg" \
			"cachestat_file_cached_bytes{cgroup=\"/$cg\",path=\"$f\"}" "v >= 0.95 * 16 * $MIB"
	done
	# Cgroups appear and vanish while the exporter scans; one of them is S2.
	t0=$SECONDS
	vm_ssh 'mkdir -p /scratch/e2e/5 && head -c 1M /dev/urandom >/scratch/e2e/5/small
		for i in $(seq 15); do
			e2e-guest cgroup e2e-5-churn-$i && e2e-guest hold e2e-5-churn-$i /scratch/e2e/5/small
			sleep 0.3
			e2e-guest remove e2e-5-churn-$i
		done' &
	local churn=$!
	sleep 5
	g remove $s2 || fail "removing /$s2"
	until_absent 30 "/$s2 gone from the scrape" "cachestat_cgroup_cached_bytes{cgroup=\"/$s2\"}"
	wait $churn || fail "churn workload"
	until_true 15 "/$s1 still there" "cachestat_cgroup_cached_bytes{cgroup=\"/$s1\"}" "v >= 0.95 * 16 * $MIB"
	local window=$((SECONDS - t0 + 10))
	until_true 5 "scrapes succeeded throughout (min of up over ${window}s)" \
		"min_over_time(up{$(scrape_job)}[${window}s])" "v == 1"
	until_true 5 "collectors succeeded throughout" \
		"min(min_over_time(cachestat_scrape_collector_success[${window}s]))" "v == 1"
	g remove $s1
}

# Case 6: promtool accepts /metrics and the rules; the rules are loaded; the dashboard's queries return
# data; the refault alert fires for a cgroup that thrashes its page cache.
case_6() {
	local cg=e2e-6-thrash f=/scratch/e2e/6/data out groups loaded bad
	# Start the thrashing first: the alert needs its "for:" to pass while the rest is checked.
	g cgroup $cg $((24 * MIB)) && g mkfile $f 64 && g thrash $cg $f || fail "workload setup"

	out=$(curl -sf "http://127.0.0.1:$E2E_EXPORTER_PORT/metrics" | promtool check metrics 2>&1) ||
		fail "promtool check metrics: $out"
	[ -z "$out" ] || fail "promtool check metrics: $out"
	note "promtool check metrics: clean"
	out=$(vm_ssh 'promtool check rules /etc/prometheus/rules.d/*.yml' 2>&1) || fail "promtool check rules: $out"
	note "promtool check rules in the guest: ok"
	groups=$(rule_groups "$TOP"/dashboards/rules/*.yml)
	until_cmd 60 "$groups rule groups loaded" rules_loaded "$groups"
	bad=$(prom_api rules | jq -r '.data.groups[].rules[] | select(.health == "err") | "\(.name): \(.lastError)"')
	[ -z "$bad" ] || fail "rules with errors: $bad"

	until_true 240 "CachestatRefaultSpike firing for /$cg" \
		"ALERTS{alertname=\"CachestatRefaultSpike\",alertstate=\"firing\",cgroup=\"/$cg\"}" "v == 1"
	# The dashboard, looking at the thrashing cgroup: every panel has data.
	dashboard_queries "/$cg" || fail "dashboard queries without data"
	g remove $cg
}

# rule_groups FILE...: the number of rule groups in the rule files.
rule_groups() {
	python3 -c 'import sys, yaml
print(sum(len((yaml.safe_load(open(f)) or {}).get("groups", [])) for f in sys.argv[1:]))' "$@"
}
rules_loaded() { [ "$(prom_api rules | jq '.data.groups | length')" = "$1" ]; }

# Every query of the dashboard, with its variables set to this guest's job and instance, returns data.
dashboard_queries() {
	local cgroup=$1 job instance list q n=0 empty=0 expr
	job=$(prom_api query --data-urlencode 'query=cachestat_build_info' | jq -r '.data.result[0].metric.job')
	instance=$(prom_api query --data-urlencode 'query=cachestat_build_info' | jq -r '.data.result[0].metric.instance')
	list=$(dashboard_query_list) || return 1
	while IFS= read -r q; do
		[ -n "$q" ] || continue
		expr=$(printf '%s' "$q" | sed -e "s/\\\$__rate_interval/1m/g; s/\\\$__range/5m/g; s/\\\$__interval/5s/g" \
			-e "s/\\\$job/$job/g; s/\\\$instance/$instance/g; s/\\\${job}/$job/g; s/\\\${instance}/$instance/g" \
			-e "s|\\\$cgroup|$cgroup|g; s|\\\${cgroup}|$cgroup|g; s|\\\${cgroup:regex}|$cgroup|g")
		n=$((n + 1))
		if [ "$(pcount "$expr")" = 0 ]; then
			note "no data: $expr"
			empty=$((empty + 1))
		fi
	done <<<"$list"
	[ "$n" -gt 0 ] || { note "no dashboard queries found"; return 1; }
	note "dashboard queries with data: $((n - empty)) of $n"
	[ "$empty" -eq 0 ]
}
dashboard_query_list() {
	jq -r '.. | objects | select(has("expr")) | .expr' "$TOP/dashboards/cachestat.json"
}

# Case 7: the kernel's own tests (kernel/tests/README.md), in this same boot, on the scratch ext4 disk.
case_7() {
	local dir out rc summary
	[ -x "$TOP/kernel/tests/build.sh" ] || skip "no kernel/tests/build.sh"
	dir=$("$TOP/kernel/tests/build.sh" 2>"$RUN/kernel-tests-build.log" | tail -n 1) && [ -d "$dir" ] ||
		fail "kernel/tests/build.sh failed (see $RUN/kernel-tests-build.log)"
	tar -C "$dir" -cf - run-in-guest.sh test_cachestat test_cachestat_full numa_refault |
		vm_ssh 'mkdir -p /opt/cachestat-tests && tar -C /opt/cachestat-tests -xf -' || fail "copying the tests"
	vm_ssh 'mkdir -p /scratch/kernel-tests && /opt/cachestat-tests/run-in-guest.sh /scratch/kernel-tests' \
		>"$RUN/kernel-tests.log" 2>&1
	rc=$?
	summary=$(grep -E '^([A-Za-z0-9_-]+: )?[0-9]+ passed, [0-9]+ failed' "$RUN/kernel-tests.log" | tail -n 1)
	grep -E '^(not ok|ok .*# SKIP)' "$RUN/kernel-tests.log" | sed 's/^/  /'
	note "kernel suite: ${summary:-no summary} (log: $RUN/kernel-tests.log)"
	[ "$rc" -eq 0 ] && [ -n "$summary" ] || fail "kernel suite: ${summary:-no summary line}, exit $rc"
}

run_case() {
	local n=$1 name=$2 start=$SECONDS rc log=$RUN/case-$1.log
	( "case_$n" ) >"$log" 2>&1
	rc=$?
	# Whatever the outcome, the case's workloads must not weigh on the next one.
	vm_ssh "for d in /sys/fs/cgroup/e2e-$n-*; do [ ! -d \"\$d\" ] || e2e-guest remove \"\${d##*/}\"; done" >>"$log" 2>&1
	local took=$((SECONDS - start))
	case $rc in
	0) passed=$((passed + 1)); printf 'PASS %s %s (%d s)\n' "$n" "$name" "$took" ;;
	3) skipped=$((skipped + 1)); printf 'SKIP %s %s: %s\n' "$n" "$name" "$(grep '^SKIP: ' "$log" | tail -n 1 | cut -c7-)" ;;
	*) failed=$((failed + 1))
	   printf 'FAIL %s %s (%d s): %s\n' "$n" "$name" "$took" "$(grep '^FAIL: ' "$log" | tail -n 1 | cut -c7-)"
	   sed 's/^/    /' "$log" | tail -n 15 ;;
	esac
	if [ "${E2E_VERBOSE:-0}" = 1 ]; then sed 's/^/    /' "$log"; fi
}

declare -A names=(
	[1]="cgroup A's 64 MiB file is cached, and listed among its files"
	[2]="dirty bytes without fsync, 0 after fsync"
	[3]="reclaim evicts, re-reading refaults on the right node"
	[4]="deleted open file, and a file the config assigns to cgroup B"
	[5]="shared file counts in both cgroups; a removed cgroup leaves cleanly"
	[6]="promtool clean, rules loaded, dashboard queries have data, refault alert fires"
	[7]="kernel test suite in the same boot"
)

# On any exit: stop QEMU, count the cases that never ran as failed, print the summary.
finish() {
	trap - EXIT
	if vm_alive; then
		vm_ssh 'journalctl -b --no-pager' >"$RUN/journal.log" 2>/dev/null
		vm_ssh 'systemd-analyze; systemd-analyze blame | head -n 25; cloud-init analyze blame' \
			>"$RUN/boot-analysis.log" 2>&1
	fi
	vm_stop
	for n in $cases; do
		case " $reported " in *" $n "*) continue ;; esac
		failed=$((failed + 1))
		printf 'FAIL %s %s: not run, the guest did not come up (see %s)\n' "$n" "${names[$n]}" "$RUN"
	done
	log "e2e: $((SECONDS - suite_start)) s in all; logs in $RUN"
	echo "$passed passed, $failed failed, $skipped skipped"
	[ "$failed" -eq 0 ]
	exit
}

lock_run run-e2e
rm -rf "$RUN"
mkdir -p "$RUN"
suite_start=$SECONDS
reported=
trap finish EXIT
trap 'exit 130' INT TERM
vm_boot "$RUN"
vm_wait_ready
vm_ssh 'cat >/usr/local/sbin/e2e-guest && chmod 755 /usr/local/sbin/e2e-guest' <"$E2E_DIR/guest-helper.sh" ||
	die "installing the guest helper"
log "guest ready in $((SECONDS - suite_start)) s; running cases: $cases"
for n in $cases; do
	run_case "$n" "${names[$n]}"
	reported="$reported $n"
done

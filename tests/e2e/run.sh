#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The e2e suite: boots the guest (patched kernel, Debian bookworm provisioned by cloud-init from
# deploy/cloud-init/, the exporter as a systemd service, Prometheus scraping it) and checks, through
# Prometheus's HTTP API on the host's forwarded port, what Prometheus recorded while the suite drives
# workloads in the guest over ssh. One line per case; the last line is "N passed, N failed, N skipped".
#
# Environment: see vm.sh and build-seed.sh; E2E_CASES (e.g. "1 3") runs only those cases; E2E_ABI the
# cachestat_syscall_info abi that case 1 expects (both: this project's kernel; mincore, mainline: the stock
# kernels of stock.sh); E2E_RUN_NAME the run's directory and lock under $BUILD_ROOT/e2e (run-e2e).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
source "$E2E_DIR/vm.sh"
# shellcheck source=tests/lib/tap.sh
source "$TOP/tests/lib/tap.sh"

MIB=1048576
RUN_NAME=${E2E_RUN_NAME:-run-e2e}
RUN=$E2E_ROOT/$RUN_NAME
all_cases="1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17"
E2E_ABI=${E2E_ABI:-both}
cases=${E2E_CASES:-$all_cases}

# Inside a case (which runs in a subshell): fail_case and skip_case end the case there and then.
fail_case() {
	echo "FAIL: $*"
	exit 1
}
skip_case() {
	echo "SKIP: $*"
	exit 3
}
note() { echo "  $*"; }
# skip_part WHAT WHY: a part of the case that cannot apply to this kernel, counted as one skip; the case goes on.
# WHY without parentheses: the last pair is where run_case reads the reason.
skip_part() {
	echo "skip - $1 ($2)" >>"$RUN/case-$case_n.results"
	note "skipped: $1: $2"
}
# on_mincore: the exporter measures with mincore(2) here (a kernel without cachestat, E2E_ABI=mincore): cached
# bytes only, the dirty, writeback and evicted families absent.
on_mincore() { [ "$E2E_ABI" = mincore ]; }
NO_CACHESTAT="this kernel has no cachestat, and mincore sees only whether a page is cached"

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
		[ "$SECONDS" -lt "$deadline" ] || fail_case "$what: after ${limit} s, $expr = '${v:-no data}' (want $cond)"
		vm_alive || fail_case "QEMU exited (see $RUN/console.log)"
		sleep 2
	done
}
# until_absent SECONDS DESCRIPTION EXPR: waits until EXPR returns no series.
until_absent() {
	local deadline=$(($SECONDS + $1)) n
	while :; do
		n=$(pcount "$3")
		[ "$n" = 0 ] && { note "$2"; return 0; }
		[ "$SECONDS" -lt "$deadline" ] || fail_case "$2: still $n series of $3 after $1 s"
		sleep 2
	done
}

# until_cmd SECONDS DESCRIPTION CMD...: waits until CMD succeeds.
until_cmd() {
	local limit=$1 deadline=$(($SECONDS + $1)) what=$2
	shift 2
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail_case "$what: not after $limit s"
		sleep 2
	done
	note "$what"
}

scrape_job() { echo 'job=~"cachestat.*"'; }

# Case 1: a process in cgroup A reads a 64 MiB file and keeps it open.
case_1() {
	local cg=e2e-1-A f=/scratch/e2e/1/data fc
	until_true 10 "the exporter's method on $(vm_ssh 'uname -r'): abi=\"$E2E_ABI\" ($(prom_api query \
		--data-urlencode 'query=cachestat_syscall_info' | jq -r '.data.result[0].metric.abi // "no series"') found)" \
		"cachestat_syscall_info{abi=\"$E2E_ABI\"}" "v == 1"
	g cgroup $cg && g mkfile $f 64 && g hold $cg $f || fail_case "workload setup"
	# The oracle: fincore in the guest, on the file the holder read.
	fc=$(vm_ssh "fincore --bytes --noheadings --output RES $f" | tr -d ' ') && [ "${fc:-0}" -gt 0 ] || fail_case "fincore"
	note "fincore on $f: $fc bytes"
	until_true 60 "per-file cached bytes of $f within 5% of fincore's" \
		"cachestat_file_cached_bytes{cgroup=\"/$cg\",path=\"$f\"}" "v >= 0.95 * $fc && v <= 1.05 * $fc"
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
		fail_case "sysctl"
	g cgroup $cg && g write-hold $cg $f 16 || fail_case "workload setup"
	if on_mincore; then
		# What applies here: the written pages are cached, and the dirty family is absent, not zero.
		until_true 60 "cached bytes of /$cg before fsync" "cachestat_cgroup_cached_bytes{cgroup=\"/$cg\"}" \
			"v >= 0.9 * 16 * $MIB"
		until_absent 10 "no dirty series of /$cg" "cachestat_cgroup_dirty_bytes{cgroup=\"/$cg\"}"
		skip_part "dirty bytes before and after fsync" "$NO_CACHESTAT"
		vm_ssh 'sysctl -q -w vm.dirty_expire_centisecs=3000 vm.dirty_writeback_centisecs=500'
		g remove $cg
		return 0
	fi
	until_true 60 "dirty bytes of /$cg before fsync" "cachestat_cgroup_dirty_bytes{cgroup=\"/$cg\"}" \
		"v >= 0.9 * 16 * $MIB"
	vm_ssh "sync $f" || fail_case "fsync"
	until_true 30 "dirty bytes of /$cg after fsync" "cachestat_cgroup_dirty_bytes{cgroup=\"/$cg\"}" "v == 0"
	until_true 30 "cached bytes of /$cg after fsync" "cachestat_cgroup_cached_bytes{cgroup=\"/$cg\"}" \
		"v >= 0.95 * 16 * $MIB"
	vm_ssh 'sysctl -q -w vm.dirty_expire_centisecs=3000 vm.dirty_writeback_centisecs=500'
	g remove $cg
}

# Case 3: proactive reclaim evicts; re-reading refaults, on the node where it happens.
case_3() {
	local cg=e2e-3-reclaim f=/scratch/e2e/3/data sel c0 e0 r0 n0 n1 t1 d0 mglru node
	sel="cgroup=\"/$cg\""
	g cgroup $cg && g mkfile $f 32 || fail_case "file setup"
	# Read twice on node 0 so that the pages are activated (the workingset), then hold the file open.
	g read $cg $f 0 && g read $cg $f 0 && g hold $cg $f || fail_case "workload setup"
	until_true 60 "cached bytes before reclaim" "cachestat_cgroup_cached_bytes{$sel}" "v >= 0.95 * 32 * $MIB"
	c0=$(pv "cachestat_cgroup_cached_bytes{$sel}")
	e0=$(pv "cachestat_cgroup_recently_evicted_bytes{$sel}")
	r0=$(pv "cachestat_cgroup_workingset_refault_file_total{$sel}")
	n0=$(pv "cachestat_cgroup_node_workingset_refault_file_total{$sel,node=\"0\"}")
	n1=$(pv "cachestat_cgroup_node_workingset_refault_file_total{$sel,node=\"1\"}")
	[ -n "$r0" ] && [ -n "$n0" ] && [ -n "$n1" ] || fail_case "no refault counters for /$cg (memory.stat collector)"

	# A quarter of what the cgroup holds. Reclaiming it all would empty its LRU, and the shadow entries with
	# it; and an evicted page is "recent" only while its refault distance fits in the cgroup's active file
	# list, which a larger reclaim drains.
	note "before reclaim: $(vm_ssh "grep -E '^(active|inactive)_file' /sys/fs/cgroup/$cg/memory.stat" | tr '\n' ' ')"
	g reclaim $cg $((8 * MIB))
	note "after reclaim: $(vm_ssh "grep -E '^(active|inactive)_file' /sys/fs/cgroup/$cg/memory.stat" | tr '\n' ' ')"
	until_true 60 "cached bytes after reclaim" "cachestat_cgroup_cached_bytes{$sel}" "v <= $c0 - 4 * $MIB"
	if on_mincore; then
		until_absent 10 "no evicted series of /$cg" "cachestat_cgroup_evicted_bytes{$sel}"
		skip_part "evicted and recently evicted bytes after reclaim" "$NO_CACHESTAT"
	else
		until_true 30 "evicted bytes after reclaim" "cachestat_cgroup_evicted_bytes{$sel}" "v >= 4 * $MIB"
		# Recently evicted: the evicted pages that the refault-distance test still counts in the workingset.
		until_true 30 "recently evicted bytes after reclaim" "cachestat_cgroup_recently_evicted_bytes{$sel}" \
			"v > $e0"
	fi

	# Re-read from the same cgroup with its memory on node 1: the refaults belong to node 1. Under MGLRU
	# (lru_gen enabled, as bookworm-backports' kernel has it) a page that comes back on another node than
	# its eviction's is counted as no refault at all (lru_gen_refault()): then the re-read stays on node 0.
	mglru=$(vm_ssh 'cat /sys/kernel/mm/lru_gen/enabled 2>/dev/null' || true)
	node=1
	[ -z "$mglru" ] || [ "$mglru" = 0x0000 ] || node=0
	g read $cg $f $node || fail_case "re-read"
	until_true 60 "refaults of /$cg after re-reading on node $node" \
		"cachestat_cgroup_workingset_refault_file_total{$sel}" "v - $r0 >= 1024"
	t1=$(pv "cachestat_cgroup_workingset_refault_file_total{$sel}")
	if [ "$node" = 0 ]; then
		skip_part "refaults on the node of the re-read" \
			"MGLRU is on here (lru_gen $mglru): it counts no refault whose page returns on another node"
		g remove $cg
		return 0
	fi
	if on_mincore; then
		# Bookworm's 6.1 counted 10 of 3,140 refaults on node 1, the rest on node 0 where the pages were evicted:
		# its attribution is not that of the patched kernel (kernel/ patch 0002).
		note "refaults on node 1: $(pv "cachestat_cgroup_node_workingset_refault_file_total{$sel,node=\"1\"}") of $t1 - $r0"
		skip_part "refaults on the node of the re-read" "this kernel counts them on the node of the eviction"
		g remove $cg
		return 0
	fi
	until_true 30 "refaults on node 1" "cachestat_cgroup_node_workingset_refault_file_total{$sel,node=\"1\"}" \
		"v - $n1 >= 0.9 * ($t1 - $r0)"
	d0=$(pv "cachestat_cgroup_node_workingset_refault_file_total{$sel,node=\"0\"}")
	awk -v a="$d0" -v b="$n0" -v t="$t1" -v r="$r0" 'BEGIN { exit !(a - b <= 0.1 * (t - r)) }' ||
		fail_case "refaults counted on node 0 too: $n0 -> $d0 of $((${t1%.*} - ${r0%.*})) in all"
	note "refaults on node 0: $n0 -> $d0"
	g remove $cg
}

# Case 4: a deleted but open file counts (in its cgroup's sums, with no per-file series of its own by
# default); a file that only the config assigns to cgroup B counts for B.
case_4() {
	local cg=e2e-4-deleted f=/scratch/e2e/4/deleted-data b=e2e-4-B dir=/scratch/e2e-4-B
	g cgroup $cg && g mkfile $f 8 && g hold $cg $f && vm_ssh "rm $f" || fail_case "workload setup"
	until_true 60 "cached bytes of /$cg (file deleted)" "cachestat_cgroup_cached_bytes{cgroup=\"/$cg\"}" \
		"v >= 0.95 * 8 * $MIB"
	# named by no series of its own: --collector.perfile.unlinked=skip, the default, keeps a deleted
	# file's churning name out of the series
	until_absent 30 "no per-file series of the deleted file" \
		"cachestat_file_cached_bytes{cgroup=\"/$cg\",path=~\"$f.*\"}"
	# /$b has no process: its files come from the exporter's config (exporter-config.json) alone.
	g cgroup $b && g mkfile $dir/one 4 && g mkfile $dir/sub/two 4 && vm_ssh "cat $dir/one $dir/sub/two >/dev/null" ||
		fail_case "config setup"
	until_true 60 "cached bytes of /$b" "cachestat_cgroup_cached_bytes{cgroup=\"/$b\"}" \
		"v >= 0.95 * 8 * $MIB && v <= 1.05 * 8 * $MIB"
	until_true 30 "files of /$b" "cachestat_cgroup_files{cgroup=\"/$b\"}" "v == 2"
	g remove $cg
	g remove $b
}

# Case 5: a file shared by two cgroups counts in both; a cgroup removed mid-run leaves without an error.
case_5() {
	local s1=e2e-5-S1 s2=e2e-5-S2 f=/scratch/e2e/5/shared t0
	g cgroup $s1 && g cgroup $s2 && g mkfile $f 16 && g hold $s1 $f && g hold $s2 $f || fail_case "workload setup"
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
	g remove $s2 || fail_case "removing /$s2"
	until_absent 30 "/$s2 gone from the scrape" "cachestat_cgroup_cached_bytes{cgroup=\"/$s2\"}"
	wait $churn || fail_case "churn workload"
	until_true 15 "/$s1 still there" "cachestat_cgroup_cached_bytes{cgroup=\"/$s1\"}" "v >= 0.95 * 16 * $MIB"
	local window=$((SECONDS - t0 + 10))
	until_true 5 "scrapes succeeded throughout (min of up over ${window}s)" \
		"min_over_time(up{$(scrape_job)}[${window}s])" "v == 1"
	until_true 5 "collectors succeeded throughout" \
		"min(min_over_time(cachestat_scrape_collector_success[${window}s]))" "v == 1"
	g remove $s1
}

# Case 6: promtool accepts /metrics and the rules; the rules are loaded; the dashboard's queries return
# data; the thrashing alert fires for a cgroup that thrashes its page cache and reaches Alertmanager's webhook
# receiver with its labels (case 16: and resolves once the workload is gone).
case_6() {
	local cg=e2e-6-thrash f=/scratch/e2e/6/data out groups bad got runbook
	# Alertmanager's webhook receiver first, then the thrashing: the alert needs its "for:" to pass while the
	# rest is checked.
	g webhook $ALERTS_LOG || fail_case "starting the webhook receiver"
	g cgroup $cg $((24 * MIB)) && g mkfile $f 64 && g thrash $cg $f || fail_case "workload setup"

	out=$(curl -sf "http://127.0.0.1:$E2E_EXPORTER_PORT/metrics" | promtool check metrics 2>&1) ||
		fail_case "promtool check metrics: $out"
	[ -z "$out" ] || fail_case "promtool check metrics: $out"
	note "promtool check metrics: clean"
	out=$(vm_ssh 'promtool check rules /etc/prometheus/rules.d/*.yml' 2>&1) || fail_case "promtool check rules: $out"
	note "promtool check rules in the guest: ok"
	groups=$(rule_groups "$TOP"/dashboards/rules/*.yml)
	until_cmd 60 "$groups rule groups loaded" rules_loaded "$groups"
	bad=$(prom_api rules | jq -r '.data.groups[].rules[] | select(.health == "err") | "\(.name): \(.lastError)"')
	[ -z "$bad" ] || fail_case "rules with errors: $bad"

	# Thrashing at its memory.max: the thrashing alert (a warning), pending, then firing after its for: (the
	# seed's rules have it at 1 minute, build-seed.sh).
	until_true 240 "CachestatPageCacheThrashing pending or firing for /$cg" \
		"ALERTS{alertname=\"CachestatPageCacheThrashing\",cgroup=\"/$cg\"}" "v == 1"
	# The dashboard, looking at the thrashing cgroup: every panel has data.
	dashboard_queries "/$cg" || fail_case "dashboard queries without data"

	# The alert delivered: Prometheus to Alertmanager to the receiver, with its labels (case 16 sees it
	# resolved). The runbook is the rule file's, read here.
	vm_ssh 'amtool --version' >/dev/null 2>&1 || fail_case "no Alertmanager (prometheus-alertmanager) in the guest"
	until_cmd 240 "the receiver got CachestatPageCacheThrashing firing for /$cg" alert_received firing "/$cg"
	got=$(vm_ssh "cat $ALERTS_LOG" | jq -c -s --arg cg "/$cg" \
		'map(select(.status == "firing" and .labels.cgroup == $cg))[0]')
	note "received: $got"
	runbook=$(python3 -c 'import sys, yaml
print(next(r["annotations"]["runbook_url"] for g in yaml.safe_load(open(sys.argv[1]))["groups"]
      for r in g["rules"] if r.get("alert") == "CachestatPageCacheThrashing"))' "$TOP/dashboards/rules/cachestat.alerts.yml")
	[ "$(jq -r .labels.severity <<<"$got")" = warning ] || fail_case "the alert's severity is not warning: $got"
	[ "$(jq -r .annotations.runbook_url <<<"$got")" = "$runbook" ] ||
		fail_case "the alert's runbook_url is not the rule file's $runbook: $got"
	# Case 16 sees it resolved: the rules read 5-minute windows, so it resolves some 5 minutes after this.
	g remove $cg
}
# Case 16: case 6's alert resolved at the receiver. Its rules read 5-minute windows (rates, max_over_time), so it
# resolves some 5 minutes after case 6 removed the workload: the cases between take most of that wait.
case_16() {
	[[ " $cases " == *" 6 "* ]] || skip_case "case 6, whose alert this waits to see resolved, did not run"
	alert_received firing /e2e-6-thrash || skip_case "case 6 delivered no firing alert to resolve"
	until_cmd 480 "the receiver got CachestatPageCacheThrashing resolved for /e2e-6-thrash" \
		alert_received resolved /e2e-6-thrash
}

# The webhook receiver's log in the guest (e2e-guest webhook).
ALERTS_LOG=/run/e2e-alerts.jsonl
# alert_received STATUS CGROUP: the receiver got CachestatPageCacheThrashing for CGROUP with STATUS.
alert_received() {
	vm_ssh "cat $ALERTS_LOG" | jq -e -s --arg s "$1" --arg cg "$2" 'any(.[]; .status == $s and
		.labels.alertname == "CachestatPageCacheThrashing" and .labels.cgroup == $cg)' >/dev/null
}

# rule_groups FILE...: the number of rule groups in the rule files.
rule_groups() {
	python3 -c 'import sys, yaml
print(sum(len((yaml.safe_load(open(f)) or {}).get("groups", [])) for f in sys.argv[1:]))' "$@"
}
rules_loaded() { [ "$(prom_api rules | jq '.data.groups | length')" = "$1" ]; }

# dashboard_target: the job and instance of this guest's exporter, "JOB INSTANCE"
dashboard_target() {
	prom_api query --data-urlencode 'query=cachestat_build_info' | jq -r '.data.result[0].metric | "\(.job) \(.instance)"'
}
# dashboard_expr QUERY CGROUP JOB INSTANCE: the dashboard's QUERY with its variables set to them
dashboard_expr() {
	local c=$2 job=$3 instance=$4
	# the subtree families exist for cgroups with children only: those panels look at the root
	[[ $1 == *cachestat_cgroup_subtree_* ]] && c=/
	printf '%s' "$1" | sed -e "s/\\\$__rate_interval/1m/g; s/\\\$__range/5m/g; s/\\\$__interval/5s/g" \
		-e "s/\\\$job/$job/g; s/\\\$instance/$instance/g; s/\\\${job}/$job/g; s/\\\${instance}/$instance/g" \
		-e "s/\\\$namespace/.*/g; s/\\\$pod/.*/g; s/\\\$container/.*/g; s/\\\$cluster/.*/g" \
		-e "s|\\\$cgroup|$c|g; s|\\\${cgroup}|$c|g; s|\\\${cgroup:regex}|$c|g"
}
# Every query of the dashboard, with its variables set to this guest's job and instance, returns data.
dashboard_queries() {
	local cgroup=$1 list q n=0 empty=0 absent=0 lacks=0 expr target
	target=$(dashboard_target)
	list=$(dashboard_query_list) || return 1
	while IFS= read -r q; do
		[ -n "$q" ] || continue
		# shellcheck disable=SC2086 # target is two words
		expr=$(dashboard_expr "$q" "$cgroup" $target)
		n=$((n + 1))
		if on_mincore && [[ $q =~ cachestat_(cgroup|file)_(dirty|writeback|evicted|recently_evicted)_bytes ]]; then
			note "not on this kernel (mincore, $NO_CACHESTAT): $expr"
			absent=$((absent + 1))
		elif [[ $q == *cachestat_collector_unavailable_info* || $q =~ abi=\"(mincore|none)\" ]]; then
			# the top panel's: what a node lacks, empty where it lacks nothing. Our kernel
			# with cgroup v2, its memory controller and PSI lacks nothing.
			lacks=$((lacks + 1))
			if ! on_mincore && [ "$(pcount "$expr")" != 0 ]; then
				note "the top panel says this node lacks something: $expr"
				empty=$((empty + 1))
			fi
		elif [ "$(pcount "$expr")" = 0 ]; then
			note "no data: $expr"
			empty=$((empty + 1))
		fi
	done <<<"$list"
	[ "$n" -gt 0 ] || { note "no dashboard queries found"; return 1; }
	note "dashboard queries with data: $((n - empty - absent - lacks)) of $n ($lacks of the top panel's," \
		"what this node lacks: none expected here)"
	[ "$absent" -eq 0 ] ||
		skip_part "$absent dashboard queries of the dirty, writeback and evicted families" "$NO_CACHESTAT"
	[ "$empty" -eq 0 ]
}
dashboard_query_list() {
	jq -r '.. | objects | select(has("expr")) | .expr' "$TOP/dashboards/cachestat.json"
}

# Case 7: the kernel's own tests (kernel/tests/README.md), in this same boot, on the scratch ext4 disk, and
# make kernel-bench's program at a smoke size (so that a benchmark that broke fails here). This is the release
# kernel's test run of make test (make kernel-test boots the debug kernel too).
# Each program with the least number of results its plan gives (kernel/scripts/test.sh's minima).
KERNEL_PROGRAMS="seed=6 kselftest=53 mainline=21 m32=21 numa=1 bench=3 dmesg=1"
case_7() {
	local dir out rc summary
	# Its programs test the patched kernel's cachestat (the seed's call form first); a stock kernel is not it.
	[ "$E2E_ABI" = both ] ||
		skip_case "the kernel suite tests the patched kernel; $(vm_ssh 'uname -r') is a stock one (abi=$E2E_ABI)"
	[ -x "$TOP/kernel/tests/build.sh" ] || skip_case "no kernel/tests/build.sh"
	dir=$("$TOP/kernel/tests/build.sh" 2>"$RUN/kernel-tests-build.log" | tail -n 1) && [ -d "$dir" ] ||
		fail_case "kernel/tests/build.sh failed (see $RUN/kernel-tests-build.log)"
	tar -C "$dir" -cf - run-in-guest.sh test_cachestat test_cachestat_full test_cachestat_mainline \
		test_cachestat_mainline32 numa_refault cachestat_bench |
		vm_ssh 'mkdir -p /opt/cachestat-tests && tar -C /opt/cachestat-tests -xf -' || fail_case "copying the tests"
	vm_ssh "mkdir -p /scratch/kernel-tests && /opt/cachestat-tests/run-in-guest.sh /scratch/kernel-tests $(sed 's/=[0-9]*//g' <<<"$KERNEL_PROGRAMS")" \
		>"$RUN/kernel-tests.log" 2>&1
	rc=$?
	# One result per program, and one per skip, for run_case to count (not one folded PASS).
	kernel_results "$RUN/kernel-tests.log" "$rc" "$KERNEL_PROGRAMS" >"$RUN/case-7.results"
	summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$RUN/kernel-tests.log" | tail -n 1)
	note "kernel suite: ${summary:-no summary} (log: $RUN/kernel-tests.log)"
	grep -q '^not ok - ' "$RUN/case-7.results" && fail_case "kernel suite: $(grep -c "^not ok - " "$RUN/case-7.results") results failed"
	[ "$rc" -eq 0 ] || fail_case "kernel suite: exit $rc"
}

# Podman containers (cases 8 and 9): localhost/e2e-data, made in the guest by e2e-guest podman-image.
PODMAN_MIB=64

# within_5pct MIB: the awk condition "v is within 5% of MIB MiB".
within_5pct() { echo "v >= 0.95 * $1 * $MIB && v <= 1.05 * $1 * $MIB"; }

# podman_container NAME SCRIPT [OPTION]: starts a container of the image running the busybox sh SCRIPT
# (OPTION: one more option of podman run);
# sets cid (the id podman printed) and cg (its cgroup, read from /proc in the guest).
podman_container() {
	cid=$(vm_ssh "e2e-guest podman run -d --name $1 ${3:-} --network=none --pull=never localhost/e2e-data:latest sh -c $(printf %q "$2")") &&
		[[ $cid =~ ^[0-9a-f]{64}$ ]] || fail_case "podman run $1: '$cid'"
	cg=$(g podman-cgroup "$1") && [ -n "$cg" ] || fail_case "no cgroup for container $1"
	note "container $1: id $cid, cgroup $cg"
}

# need_overlayfs: podman's overlay storage driver needs CONFIG_OVERLAY_FS in the guest kernel.
need_overlayfs() {
	# a module on stock kernels: podman's mount would load it, but this check comes first
	vm_ssh 'modprobe -q overlay 2>/dev/null; grep -qw overlay /proc/filesystems' || skip_case "the guest kernel has no overlayfs (CONFIG_OVERLAY_FS)"
}

# assert_container_info CGROUP ID: the identity Prometheus recorded for the container's cgroup.
assert_container_info() {
	until_true 60 "cachestat_cgroup_info of $1" \
		"cachestat_cgroup_info{cgroup=\"$1\",container_id=\"$2\",container_runtime=\"podman\"}" "v == 1"
}

# Case 8: a podman container reads the image's 64 MiB file: its cgroup, its id, its bytes.
case_8() {
	local info real cid cg fc
	need_overlayfs
	info=$(vm_ssh "e2e-guest podman info --format '{{.Store.GraphDriverName}} {{.Host.CgroupManager}} {{.Host.OCIRuntime.Name}}'") ||
		fail_case "podman info"
	[ "$info" = "overlay systemd crun" ] || fail_case "podman runs with '$info', want 'overlay systemd crun'"
	note "podman: storage driver, cgroup manager, runtime: $info"
	real=$(g podman-image $PODMAN_MIB) || fail_case "building the image"
	note "the image's /data is $real"
	# fd 3 keeps /data listed among the container's files after the read.
	podman_container e2e-8-reader 'exec 3</data; cat /data >/dev/null; exec sleep 999999'
	assert_container_info "$cg" "$cid"
	until_true 60 "cached bytes of the container's cgroup" \
		"cachestat_cgroup_cached_bytes{cgroup=\"$cg\"}" "$(within_5pct $PODMAN_MIB)"
	until_true 30 "per-file cached bytes of /data in the container" \
		"cachestat_file_cached_bytes{cgroup=\"$cg\",path=\"/data\"}" "$(within_5pct $PODMAN_MIB)"
	# The oracle: fincore in the guest on the layer's real file.
	fc=$(vm_ssh "fincore --bytes --noheadings --output RES '$real'" | tr -d ' ') && [ -n "$fc" ] || fail_case "fincore"
	note "fincore on the real file: $fc bytes"
	until_true 30 "per-file cached bytes within 5% of fincore's $fc" \
		"cachestat_file_cached_bytes{cgroup=\"$cg\",path=\"/data\"}" \
		"v >= $fc - 0.05 * $PODMAN_MIB * $MIB && v <= $fc + 0.05 * $PODMAN_MIB * $MIB"
	note "overlay files skipped so far: $(pv 'sum(cachestat_files_skipped_total{reason="overlay_unresolved"}) or vector(0)')"
}

# Case 9: a second container of the image opens /data and its hard link without reading them:
# the same real inode, cached by the first container, counted once in its cgroup.
case_9() {
	local real cid cg
	need_overlayfs
	real=$(g podman-image $PODMAN_MIB) || fail_case "building the image"
	# A first container reads the file, and is gone (case 8's may not have run).
	vm_ssh "e2e-guest podman run --rm --network=none --pull=never localhost/e2e-data:latest sh -c 'cat /data >/dev/null'" ||
		fail_case "podman run: reading /data"
	note "fincore on the real file: $(vm_ssh "fincore --bytes --noheadings --output RES '$real'") bytes"
	podman_container e2e-9-holder 'exec 3</data 4</data.link; exec sleep 999999'
	assert_container_info "$cg" "$cid"
	until_true 60 "per-file cached bytes of the file the holder never read" \
		"max(cachestat_file_cached_bytes{cgroup=\"$cg\",path=~\"/data(.link)?\"})" "$(within_5pct $PODMAN_MIB)"
	# Two names of one inode: the cgroup holds 64 MiB once, not 128.
	until_true 30 "cached bytes of the holder's cgroup (two names, one inode)" \
		"cachestat_cgroup_cached_bytes{cgroup=\"$cg\"}" "$(within_5pct $PODMAN_MIB)"
	note "per-file series of the holder: $(pcount "cachestat_file_cached_bytes{cgroup=\"$cg\",path=~\"/data(.link)?\"}")"
}

# Case 10: Kubernetes-shaped cgroups of both kubelet drivers, real cgroups with real processes:
# pod UID, QoS class and container id on cachestat_cgroup_info.
case_10() {
	local f=/scratch/e2e/10/file uid1 uid2 uid3 id1 id2 id3 cg1 cg2 cg3
	uid1=$(cat /proc/sys/kernel/random/uuid) uid2=$(cat /proc/sys/kernel/random/uuid)
	uid3=$(cat /proc/sys/kernel/random/uuid)
	id1=$(random_id) id2=$(random_id) id3=$(random_id)
	k8s_cleanup
	g mkfile $f 1 || fail_case "file setup"
	# systemd driver: the kubelet's slices and containerd's scope, made by systemd itself.
	k8s_scope "kubepods-burstable-pod${uid1//-/_}.slice" "$id1" $f
	k8s_scope "kubepods-pod${uid2//-/_}.slice" "$id2" $f
	cg1=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid1//-/_}.slice/cri-containerd-$id1.scope
	cg2=/kubepods.slice/kubepods-pod${uid2//-/_}.slice/cri-containerd-$id2.scope
	# cgroupfs driver: directories the kubelet makes, the container's process moved in.
	cg3=/kubepods/besteffort/pod$uid3/$id3
	g cgroup-path "${cg3#/}" && g hold "${cg3#/}" $f || fail_case "cgroupfs setup"
	vm_ssh "test -d /sys/fs/cgroup$cg1 && test -d /sys/fs/cgroup$cg2" || fail_case "systemd made no $cg1 or $cg2"
	until_true 60 "systemd driver, burstable" \
		"cachestat_cgroup_info{cgroup=\"$cg1\",pod_uid=\"$uid1\",pod_qos=\"burstable\",container_id=\"$id1\",container_runtime=\"containerd\"}" "v == 1"
	until_true 30 "systemd driver, guaranteed" \
		"cachestat_cgroup_info{cgroup=\"$cg2\",pod_uid=\"$uid2\",pod_qos=\"guaranteed\",container_id=\"$id2\",container_runtime=\"containerd\"}" "v == 1"
	until_true 30 "cgroupfs driver, besteffort" \
		"cachestat_cgroup_info{cgroup=\"$cg3\",pod_uid=\"$uid3\",pod_qos=\"besteffort\",container_id=\"$id3\",container_runtime=\"containerd\"}" "v == 1"
	until_true 10 "the pod's own cgroup: its UID, no container" \
		"count(cachestat_cgroup_info{cgroup=\"/kubepods/besteffort/pod$uid3\",pod_uid=\"$uid3\",container_id=\"\"})" "v == 1"
	k8s_cleanup
}
# Case 11: the service runs the exporter as its Debian package installed it: the unit, the binary
# and the system user are the package's (dpkg's database and /proc are the oracles).
case_11() {
	local pkg unit exe pid sum want user uid pw
	[ -z "${E2E_EXPORTER:-}" ] || skip_case "E2E_EXPORTER is set: the guest runs that binary, not the package"
	pkg=$(vm_ssh 'dpkg-query -W -f "\${Status} \${Version}" cachestat-exporter') || fail_case "dpkg-query: not installed"
	[[ $pkg == "install ok installed "* ]] || fail_case "package state: '$pkg'"
	note "package: cachestat-exporter ${pkg##* }"
	unit=$(vm_ssh 'systemctl show -P FragmentPath cachestat-exporter.service')
	owned_by_package "the unit $unit" "$unit"
	exe=$(vm_ssh 'systemctl show -P ExecStart cachestat-exporter.service' | sed -n 's/.*path=\([^ ;]*\).*/\1/p')
	owned_by_package "the ExecStart binary $exe" "$exe"
	pid=$(vm_ssh 'systemctl show -P MainPID cachestat-exporter.service')
	[ "${pid:-0}" -gt 0 ] || fail_case "the service has no main process"
	[ "$(vm_ssh "readlink /proc/$pid/exe")" = "$exe" ] || fail_case "process $pid does not run $exe"
	# The running image is the file the package shipped: its md5sum against the package's record.
	sum=$(vm_ssh "md5sum </proc/$pid/exe" | cut -d' ' -f1)
	want=$(vm_ssh "awk -v f='${exe#/}' '\$2 == f { print \$1 }' /var/lib/dpkg/info/cachestat-exporter.md5sums")
	[ -n "$sum" ] && [ "$sum" = "$want" ] || fail_case "md5 of process $pid's binary '$sum', the package's '$want'"
	note "process $pid runs $exe, md5 $sum as the package records"
	user=$(vm_ssh 'systemctl show -P User cachestat-exporter.service')
	[ "$user" = cachestat-exporter ] || fail_case "the unit's User= is '$user'"
	pw=$(vm_ssh "getent passwd $user") || fail_case "no user $user (the package's postinst makes it)"
	uid=$(vm_ssh "awk '/^Uid:/ { print \$3 }' /proc/$pid/status")
	[ "$uid" = "$(cut -d: -f3 <<<"$pw")" ] || fail_case "process $pid runs as uid $uid, $user is $pw"
	[ "$uid" -lt 1000 ] || fail_case "$user is not a system user: $pw"
	note "User=$user, process $pid runs as it: $pw"
	vm_ssh "dpkg-query -W -f '\${Conffiles}' cachestat-exporter | grep -q ' /etc/default/cachestat-exporter '" ||
		fail_case "/etc/default/cachestat-exporter is not the package's conffile"
	vm_ssh "tr '\\0' ' ' </proc/$pid/cmdline | grep -q -- --config.file=" ||
		fail_case "process $pid lacks the ARGS of /etc/default/cachestat-exporter"
	note "the ARGS of the package's /etc/default/cachestat-exporter reach the process"
}
# owned_by_package WHAT PATH: dpkg -S says PATH belongs to cachestat-exporter.
owned_by_package() {
	local owner
	[ -n "$2" ] || fail_case "$1: empty path"
	# merged /usr: dpkg knows the path the package ships, /lib or /usr/lib
	owner=$(vm_ssh "dpkg -S '$2' 2>/dev/null || dpkg -S '$(usr_alias "$2")'" 2>&1) ||
		fail_case "$1 belongs to no package: $owner"
	[ "${owner%%: *}" = cachestat-exporter ] || fail_case "$1 belongs to '${owner%%: *}'"
	note "$1: $owner"
}

# Case 12: the OCI image of `make image` (the bundle's oci-archive), loaded with podman and run as the DaemonSet
# runs the exporter (deploy/kubernetes/base/daemonset.yaml: host PID namespace, the node's cgroup tree read-only at
# /host/sys/fs/cgroup, its arguments, uid 0 with only its four capabilities, no privilege escalation, a
# read-only root, the seccomp profile of deploy/seccomp), with --network=host on :9452, scraped by Prometheus
# as job "oci-image" (build-seed.sh). It must find cachestat and report a held file's cgroup as fincore and
# the service do. E2E_OCI_SECCOMP: the profile, "runtime-default" (podman's own) or "unconfined".
OCI_CAPS=000001000008000c # CAP_DAC_READ_SEARCH 2, CAP_FOWNER 3, CAP_SYS_PTRACE 19, CAP_CHECKPOINT_RESTORE 40
OCI_JOB='job="oci-image"'
case_12() {
	local cg=e2e-12-A f=/scratch/e2e/12/data bundle=/run/e2e-bundle image cid pid mnt fc t0=$SECONDS
	local seccomp=${E2E_OCI_SECCOMP:-$bundle/seccomp/cachestat-exporter.json} sec=()
	vm_ssh "mkdir -p $bundle && { mountpoint -q $bundle || mount -o ro LABEL=cachestat-bundle $bundle; }" ||
		fail_case "mounting the bundle drive"
	vm_ssh "test -f $bundle/cachestat-exporter.oci.tar" || skip_case "no OCI archive in the bundle (E2E_OCI=none)"
	case $seccomp in
	runtime-default) ;;
	*) sec=("--security-opt=seccomp=$seccomp") ;;
	esac
	image=$(g podman load -q -i $bundle/cachestat-exporter.oci.tar | sed -n 's/^Loaded image[^:]*: //p' | tail -n 1)
	[ -n "$image" ] || fail_case "podman load of the OCI archive"
	note "podman load: $image in $((SECONDS - t0)) s; seccomp: $seccomp"
	cid=$(g podman run -d --name e2e-12-exporter --pull=never --pid=host --network=host \
		--user=0 --read-only --cap-drop=all --cap-add=SYS_PTRACE,DAC_READ_SEARCH,CHECKPOINT_RESTORE,FOWNER \
		--security-opt=no-new-privileges "${sec[@]}" -v /sys/fs/cgroup:/host/sys/fs/cgroup:ro \
		-v /etc/cachestat_exporter:/etc/cachestat_exporter:ro "$image" --web.listen-address=:9452 \
		--web.config.file=/etc/cachestat_exporter/web/web-config.yml \
		--path.cgroupfs=/host/sys/fs/cgroup --path.procfs=/proc --config.file=/etc/cachestat_exporter/config.json) &&
		[[ $cid =~ ^[0-9a-f]{64}$ ]] || fail_case "podman run: '$cid'"
	vm_ssh "umount $bundle"
	# The container's process from its cgroup (crun's container/ under podman's scope): a podman call is
	# seconds under TCG.
	pid=$(vm_ssh "head -n 1 /sys/fs/cgroup/machine.slice/libpod-$cid.scope/container/cgroup.procs") ||
		pid=$(g podman inspect --format '{{.State.Pid}}' e2e-12-exporter)
	[ "$(vm_ssh "awk '/^CapEff:/ { print \$2 }' /proc/$pid/status")" = $OCI_CAPS ] ||
		fail_case "the container's capabilities are not the DaemonSet's four"
	mnt=$(vm_ssh "awk '\$5 == \"/host/sys/fs/cgroup\" { print \$6 }' /proc/$pid/mountinfo")
	[[ ,$mnt, == *,ro,* ]] || fail_case "/host/sys/fs/cgroup in the container is mounted '$mnt'"
	note "container ${cid:0:12}: process $pid, capabilities $OCI_CAPS, /host/sys/fs/cgroup $mnt, $((SECONDS - t0)) s"
	# Prometheus scrapes it over TLS with a login (build-seed.sh); without the login, or without TLS, no metrics.
	until_true 60 "the container's exporter scraped over TLS with a login" "up{$OCI_JOB}" "v == 1"
	[ "$(vm_ssh "curl -s -o /dev/null -w '%{http_code}' --cacert /etc/prometheus/e2e-tls/ca.crt \
		--resolve cachestat-exporter:9452:127.0.0.1 https://cachestat-exporter:9452/metrics")" = 401 ] ||
		fail_case "the container's /metrics over TLS without a login is not refused with 401"
	[ "$(vm_ssh "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:9452/metrics")" != 200 ] ||
		fail_case "the container's /metrics answers plain HTTP"
	note "without the login: 401; plain HTTP: refused"
	# Under a seccomp profile without syscall 451 it finds none (ENOSYS) and says abi="none".
	until_true 10 "cachestat found in the container: $(prom_api query --data-urlencode "query=cachestat_syscall_info{$OCI_JOB}" |
		jq -r '.data.result[0].metric.abi // "no series"')" "cachestat_syscall_info{$OCI_JOB,abi!=\"none\"}" "v == 1"

	g cgroup $cg && g mkfile $f 32 && g hold $cg $f || fail_case "workload setup"
	fc=$(vm_ssh "fincore --bytes --noheadings --output RES $f" | tr -d ' ') && [ "${fc:-0}" -gt 0 ] || fail_case "fincore"
	note "fincore on $f: $fc bytes"
	until_true 60 "the file's cached bytes from the container within 1% of fincore's" \
		"cachestat_file_cached_bytes{$OCI_JOB,cgroup=\"/$cg\",path=\"$f\"}" "v >= 0.99 * $fc && v <= 1.01 * $fc"
	# The cgroup: the file and the holder's own binaries (sleep, the C library, the loader), each as
	# fincore counts it. hold returns before the holder has exec'd sleep.
	until_cmd 20 "the holder runs sleep" vm_ssh "grep -qx sleep /proc/\$(head -n 1 /sys/fs/cgroup/$cg/cgroup.procs)/comm"
	fc=$(g fincore-cgroup $cg) && [ "${fc:-0}" -gt 0 ] || fail_case "fincore-cgroup"
	note "fincore over the files the holder has open or mapped: $fc bytes"
	until_true 30 "the cgroup's cached bytes from the container within 1% of fincore's" \
		"cachestat_cgroup_cached_bytes{$OCI_JOB,cgroup=\"/$cg\"}" "v >= 0.99 * $fc && v <= 1.01 * $fc"
	until_true 30 "the container's figure over the service's, for the same cgroup" \
		"cachestat_cgroup_cached_bytes{$OCI_JOB,cgroup=\"/$cg\"} / on(cgroup) cachestat_cgroup_cached_bytes{$(scrape_job),cgroup=\"/$cg\"}" \
		"v >= 0.99 && v <= 1.01"
	note "the service's: $(pv "cachestat_cgroup_cached_bytes{$(scrape_job),cgroup=\"/$cg\"}") bytes; the case took $((SECONDS - t0)) s"
	g remove $cg
}

# Case 13: two podman containers under one parent slice, as a pod's are (bookworm's podman 4.3 puts the
# containers of an infra-less pod straight into machine.slice, and an infra container needs a pause image the
# offline guest lacks), both holding the image's file, one reading it: the parent's subtree counts the real
# inode once while each container counts it too; the demo's slices and the node cover their children.
case_13() {
	local cid cg cg1 cg2 pcg=/e2epod13.slice sum real conmon want
	need_overlayfs
	real=$(g podman-image $PODMAN_MIB) || fail_case "building the image"
	podman_container e2e-13-reader 'exec 3</data; cat /data >/dev/null; exec sleep 999999' --cgroup-parent=e2epod13.slice
	cg1=$cg
	podman_container e2e-13-holder 'exec 3</data; exec sleep 999999' --cgroup-parent=e2epod13.slice
	cg2=$cg
	[[ $cg1 == "$pcg"/* && $cg2 == "$pcg"/* ]] || fail_case "the containers are not below $pcg: $cg1, $cg2"
	until_true 60 "each container's own cached bytes within 5% of $PODMAN_MIB MiB" \
		"count(cachestat_cgroup_cached_bytes{cgroup=~\"$cg1|$cg2\"} > 0.95 * $PODMAN_MIB * $MIB < 1.05 * $PODMAN_MIB * $MIB)" "v == 2"
	sum=$(pv "sum(cachestat_cgroup_cached_bytes{cgroup=~\"$cg1|$cg2\"})")
	note "the containers' own series add up to $sum bytes: the shared file twice"
	# The oracle: fincore over the union of what the slice's processes use: the layer's real /data and
	# busybox (the containers'), and the files of the conmon processes podman puts beside them.
	conmon=$(vm_ssh "cd /sys/fs/cgroup$pcg && ls -d libpod-conmon-*.scope" | sed "s|^|${pcg#/}/|") || true
	note "beside the containers: ${conmon:-no conmon scope}"
	# shellcheck disable=SC2086 # a list of cgroups
	want=$(($(g fincore-cgroup $conmon) + $(vm_ssh "fincore --bytes --noheadings --output RES '$real' '${real%/data}/bin/busybox'" |
		awk '{ s += $1 } END { print s + 0 }')))
	note "fincore over the slice's files, each once: $want bytes"
	until_true 30 "the parent's subtree: the shared inode once, within 5% of fincore's $want" \
		"cachestat_cgroup_subtree_cached_bytes{cgroup=\"$pcg\"}" "v >= 0.95 * $want && v <= 1.05 * $want"
	until_true 10 "and under what the containers' own series add up to ($sum)" \
		"cachestat_cgroup_subtree_cached_bytes{cgroup=\"$pcg\"}" "v < $sum"
	until_true 30 "system.slice's subtree covers its largest service" \
		"cachestat_cgroup_subtree_cached_bytes{cgroup=\"/system.slice\"} - scalar(max(cachestat_cgroup_cached_bytes{cgroup=~\"/system.slice/[^/]+\"}))" "v >= 0"
	until_true 30 "the node's subtree covers the parent's" \
		"cachestat_cgroup_subtree_cached_bytes{cgroup=\"/\"} - scalar(cachestat_cgroup_subtree_cached_bytes{cgroup=\"$pcg\"})" "v >= 0"
}

# Case 14: Debian's nginx (sendfile, no open file cache) serves 200 files to siege, opening, sending and
# closing each: with the fanotify collector on (the repository's drop-in), its service cgroup counts them as
# recently opened, within 5% of fincore's figure, and its per-file series name the largest of them.
NGINX_FILES=200
case_14() {
	local dir=/scratch/e2e/14/www cg=/system.slice/nginx.service sel out tx n sum f b port=8014
	local dropin=$TOP/deploy/systemd/cachestat-exporter.service.d/fanotify.conf
	[ -z "${E2E_EXPORTER:-}" ] || skip_case "E2E_EXPORTER is set: the drop-in starts the package's binary"
	sel="cgroup=\"$cg\""
	# The collector off again, nginx stopped, whatever the outcome: the other cases must not see them.
	trap 'g nginx-off; g fanotify-off && note "fanotify drop-in removed, exporter restarted"' EXIT
	# Owned by nginx's worker user: cachestat(2) answers only an opener that owns the file or may write it
	# (the kernel's rule, which the exporter applies to a recent file's opener); root's 0644 files served by
	# www-data are skipped as no_access (cachestat_files_skipped_total), and the cgroup counts none of them.
	g mkfiles $dir $NGINX_FILES 64 2048 && vm_ssh "chown -R www-data:www-data $dir" && g nginx-site $dir $port ||
		fail_case "files and nginx setup"
	g fanotify-on <"$dropin" || fail_case "installing the fanotify drop-in"
	until_true 60 "the restarted exporter watches file systems" "cachestat_fanotify_filesystems_marked" "v >= 1"
	until_true 30 "the fanotify collector succeeds" 'cachestat_scrape_collector_success{collector="fanotify"}' \
		"v == 1"
	# siege walks the URL file once per simulated user: 2 users, every file twice.
	out=$(vm_ssh "cd $dir && ls | sed 's|^|http://127.0.0.1:$port/|' >/tmp/e2e-14-urls &&
		siege -q -b -c 2 -r $NGINX_FILES -f /tmp/e2e-14-urls 2>&1") || fail_case "siege: $out"
	tx=$(sed -n 's/.*"successful_transactions":[[:space:]]*\([0-9]*\).*/\1/p' <<<"$out")
	n=$(vm_ssh "awk '\$9 == 200 { print \$7 }' /var/log/nginx/e2e.log | sort -u | wc -l")
	note "siege: $tx successful requests; nginx served $n distinct files with status 200"
	[ "$tx" = $((2 * NGINX_FILES)) ] && [ "$n" = $NGINX_FILES ] || fail_case "not every file was served twice"
	# Between requests nginx holds none of them: what the exporter counts of them, it owes to fanotify.
	! vm_ssh "for p in \$(pgrep -x nginx); do ls -l /proc/\$p/fd; done | grep -F '$dir/'" ||
		fail_case "nginx holds a served file open"
	# The oracle: fincore over the served files.
	vm_ssh "e2e-guest fincore-files $dir/*" >"$RUN/case-14.fincore" || fail_case "fincore"
	sum=$(awk '{ s += $1 } END { print s + 0 }' "$RUN/case-14.fincore")
	note "fincore: $sum bytes cached of the $NGINX_FILES served files"
	[ "$sum" -gt 0 ] || fail_case "fincore counts nothing cached of the served files"
	until_true 60 "recent-only files of $cg" "cachestat_cgroup_recent_only_files{$sel}" "v == $NGINX_FILES"
	until_true 30 "recent-only cached bytes of $cg" "cachestat_cgroup_recent_only_cached_bytes{$sel}" \
		"v > 0 && v >= 0.95 * $sum && v <= 1.05 * $sum"
	until_true 30 "cached bytes of $cg (held and recent)" \
		"cachestat_cgroup_cached_bytes{$sel} - cachestat_cgroup_recent_only_cached_bytes{$sel}" "v >= 0"
	note "cached bytes of $cg: $(pv "cachestat_cgroup_cached_bytes{$sel}")"
	# The five largest served files (the last five by name: sizes grow with the index) among its top files.
	while read -r b f; do
		until_true 30 "per-file series of $f (fincore $b)" "cachestat_file_cached_bytes{$sel,path=\"$f\"}" \
			"v > 0 && v >= 0.95 * $b && v <= 1.05 * $b"
	done < <(sort -k2 "$RUN/case-14.fincore" | tail -n 5)
	note "its top files: $(prom_api query --data-urlencode "query=cachestat_file_cached_bytes{$sel}" |
		jq -r '[.data.result[] | "\(.metric.path)=\(.value[1])"] | join(" ")')"
}

# Case 15: the hardened unit runs on this kernel as its filters stand: active, never restarted, no call killed by
# a seccomp filter (the kernel's audit records, type 1326, in the journal: systemd's SystemCallFilter kills
# with SIGSYS, which the kernel logs), every collector succeeding (none that is on refused
# its permission or failed at start), and no denial in the exporter's own log.
case_15() {
	local unit=cachestat-exporter.service state restarts audit denied unavailable
	[ -z "${E2E_EXPORTER:-}" ] || skip_case "E2E_EXPORTER is set: the guest runs that binary, not the package's unit"
	state=$(vm_ssh "systemctl show -P ActiveState $unit")
	restarts=$(vm_ssh "systemctl show -P NRestarts $unit")
	note "$unit: $state, $restarts restarts, on $(vm_ssh 'uname -r')"
	[ "$state" = active ] && [ "$restarts" = 0 ] || fail_case "$unit is $state after $restarts restarts"
	vm_ssh "systemctl show -P SystemCallFilter $unit | grep -q ." || fail_case "$unit has no SystemCallFilter"
	audit=$(vm_ssh "journalctl -b -k --no-pager -o cat | grep -E 'type=1326|audit: .*sig=31' | grep -F cachestat" || true)
	[ -z "$audit" ] || fail_case "seccomp killed the exporter's calls: $(head -n 3 <<<"$audit")"
	# The control: a unit whose filter kills swapoff. Whether this kernel logs it says whether the absence above
	# means anything (a kernel without audit, or with audit off, logs no kill).
	vm_ssh "systemd-run --wait --quiet -p SystemCallFilter=~@swap swapoff /e2e-15-none" >/dev/null 2>&1
	if vm_ssh "journalctl -b -k --no-pager -o cat | grep -E 'type=1326' | grep -q swapoff"; then
		note "no seccomp record of the exporter in the kernel log (the control's kill of swapoff is there)"
	else
		note "this kernel logs no seccomp kill (the control's neither): the log check says nothing here"
	fi
	# Warnings and errors that name a refusal; on a kernel without cachestat (E2E_ABI=mincore) the start-up
	# warning that it has none is the kernel's answer, not a filter's.
	denied=$(vm_ssh "journalctl -b -u $unit --no-pager -o cat | grep -E 'level=(WARN|ERROR)' |
		grep -iE 'seccomp|not permitted|EPERM|ENOSYS|EACCES|denied|sandbox'" | {
		if [ "$E2E_ABI" = mincore ]; then grep -v 'msg="no cachestat(2): the kernel lacks it'; else cat; fi
	} || true)
	[ -z "$denied" ] || fail_case "the exporter's log: $(head -n 3 <<<"$denied")"
	note "no denial in the exporter's log"
	until_true 30 "every collector succeeds" "min(cachestat_scrape_collector_success{$(scrape_job)})" "v == 1"
	until_true 10 "the scrape is up" "up{$(scrape_job)}" "v == 1"
	# A collector that is on but has nothing to measure has no success series, so the check above passes it by.
	# What the host lacks (cgroup v1, no PSI, a kernel without cachestat or kprobes) is a reason of its own;
	# a refused permission (the unit's drop-ins must grant what it needs) or a failed start is the unit's defect.
	unavailable=$(prom_api query --data-urlencode "query=cachestat_collector_unavailable_info{$(scrape_job)}" |
		jq -r '[.data.result[].metric | "\(.collector) (\(.reason))"] | join(", ")') ||
		fail_case "no answer from Prometheus"
	note "collectors on with nothing to measure on this host: ${unavailable:-none}"
	! grep -qE 'no_bpf_permission|bpf_failed' <<<"$unavailable" ||
		fail_case "a collector the unit turns on was refused or failed at start: $unavailable"
}

# Case 17: the activity collector (on in this guest: the package's drop-in activity.conf, build-seed.sh) counts
# what a cgroup's reads and writes did to the page cache, as the file sizes say: a cold read of 64 MiB misses
# 16,384 pages, a warm read hits 16,384 and misses none, a write of 16 MiB dirties 4,096, each within 5%, net of
# what starting the reading or writing program costs (measured in the same cgroup by the same program given
# nothing to do); a second cgroup reading 32 MiB meanwhile has its 8,192 misses counted apart.
case_17() {
	local cg=e2e-17-act other=e2e-17-other dir=/scratch/e2e/17 line cat0 cold warm dd0 write other_cold
	vm_ssh 'systemctl show -P ExecStart cachestat-exporter' | grep -q -- --collector.activity ||
		fail_case "the exporter runs without --collector.activity (the drop-in activity.conf is not installed)"
	line=$(vm_ssh "journalctl -b -u cachestat-exporter --no-pager -o cat | grep 'msg=\"will send\"' | tail -n 1")
	note "start line: $(grep -o 'activity="[^"]*"' <<<"$line")"
	g cgroup $cg && g cgroup $other && g mkfile $dir/data 64 && g mkfile $dir/other 32 || fail_case "workload setup"
	act_step cat0 "/$cg" g read $cg /dev/null
	act_settled "/$other"
	local other_before=$ACT
	act_step cold "/$cg" vm_ssh "e2e-guest read $other $dir/other & e2e-guest read $cg $dir/data; wait"
	act_settled "/$other"
	other_cold=$(act_delta "$other_before" "$ACT")
	act_step warm "/$cg" g read $cg $dir/data
	act_step dd0 "/$cg" g write $cg $dir/empty 0
	act_step write "/$cg" g write $cg $dir/written 16
	note "accesses added dirtied buffer_dirtied: starting cat $cat0; cold read $cold; warm read $warm;" \
		"starting dd $dd0; write $write; the other cgroup's read $other_cold"
	act_within "cold read: misses" $(($(act_misses "$cold") - $(act_misses "$cat0"))) 16384
	act_within "warm read: hits" $(($(act_hits "$warm") - $(act_hits "$cat0"))) 16384
	act_within "warm read: misses" $(($(act_misses "$warm") - $(act_misses "$cat0"))) 0 16384
	act_within "write: dirtied pages" $(($(act_field 3 "$write") - $(act_field 3 "$dd0"))) 4096
	act_within "the other cgroup's cold read, counted apart: misses" "$(act_misses "$other_cold")" 8192
	# the dashboard's row, from the guest's Prometheus: the recorded hit ratio, then each panel's queries
	until_true 120 "the recorded hit ratio of /$cg" "cgroup:cachestat_pagecache_hit_ratio:rate5m{cgroup=\"/$cg\"}" \
		"v >= 0 && v <= 1"
	act_dashboard_row "/$cg"
	act_bench_smoke
	act_failed_start
}
# A start that fails after attaching some of its kprobes detaches them: the exporter run by hand under lower and
# lower descriptor limits (RLIMIT_NOFILE) until the start fails at attaching a later kprobe than the first, which
# the daemon, still running when its descriptors are counted, must then hold no perf event and no BPF program for.
# A daemon gone by then (what it leaked may have left it no descriptor to serve with) shows nothing: it is noted,
# and at least one running daemon must have been seen.
act_failed_start() {
	local out later
	out=$(vm_ssh ': >/root/failed-start-exits.log; for n in $(seq 30 -1 8); do
		prlimit --nofile=$n:$n /usr/bin/cachestat_exporter --collector.activity \
			--web.listen-address=127.0.0.1:9461 >/root/failed-start.log 2>&1 &
		pid=$!
		for _ in $(seq 30); do grep -q "will send" /root/failed-start.log && break; kill -0 $pid 2>/dev/null || break; sleep 1; done
		held="$(find /proc/$pid/fd -lname "anon_inode:\[perf_event\]" 2>/dev/null | wc -l) $(find /proc/$pid/fd -lname anon_inode:bpf-prog 2>/dev/null | wc -l)"
		running=$(kill -0 $pid 2>/dev/null && echo running || echo exited)
		[ $running = running ] || echo "$n: $(grep -m1 "level=ERROR" /root/failed-start.log)" >>/root/failed-start-exits.log
		printf "%s %s %s %s\n" $n "$held" $running \
			"$(grep -o "attaching a kprobe to [a-z_]*" /root/failed-start.log | head -n 1 | cut -d" " -f5)"
		kill $pid 2>/dev/null; wait $pid 2>/dev/null
	done; true') || fail_case "the exporter under descriptor limits"
	# "LIMIT PERF_EVENTS PROGRAMS running|exited FUNCTION": the starts that failed at a kprobe after the first
	later=$(awk '$5 != "" && $5 != "folio_mark_accessed" && $5 != "mark_page_accessed"' <<<"$out")
	note "starts that failed at a later kprobe (limit, perf events and programs held, the daemon, the kprobe):" \
		"$(tr '\n' ';' <<<"$later")"
	note "daemons that exited at start, by limit: $(vm_ssh 'cat /root/failed-start-exits.log' | tr '\n' ';')"
	if grep -q ' running ' <<<"$later" &&
		awk '$4 == "running" && ($2 != 0 || $3 != 0) { bad = 1 } END { exit bad }' <<<"$later"; then
		echo "ok - a start that failed after attaching kprobes holds none of them" >>"$RUN/case-$case_n.results"
	else
		echo "not ok - a start that failed after attaching kprobes holds none of them: ${later:-no such start}" \
			>>"$RUN/case-$case_n.results"
	fi
}
# act_dashboard_row CG: what the panels of the dashboard's page-cache activity row show for CG, as notes
act_dashboard_row() {
	local target q v
	target=$(dashboard_target)
	while IFS= read -r q; do
		# shellcheck disable=SC2086 # target is two words
		v=$(prom_api query --data-urlencode "query=$(dashboard_expr "$q" "$1" $target)" |
			jq -r '[.data.result[] | .value[1]] | join(", ")')
		note "dashboard, ${q%%\{*}: ${v:-no data}"
	done < <(jq -r '.panels[] | select(.title | test("^Page-cache (hit ratio|misses)")) | .targets[].expr' \
		"$TOP/dashboards/cachestat.json")
}
# make bench-activity-guest's workload at a smoke size, beside the unit's exporter: a benchmark that broke fails
# here. Its counts are not held to the file sizes (act_within does that above), only that it runs to its ratio and
# its exporter's kprobes go when it exits.
act_bench_smoke() {
	local out
	vm_ssh 'cat >/root/activity-workload.sh && chmod 755 /root/activity-workload.sh' \
		<"$TOP/tests/bench/activity-workload.sh"
	out=$(vm_ssh 'ACTIVITY_ROUNDS=1 ACTIVITY_PASSES=1 /root/activity-workload.sh') ||
		fail_case "make bench-activity-guest's workload failed: $(tail -n 3 <<<"$out")"
	note "bench smoke: $(grep 'ratio on/off' <<<"$out")"
	if grep -q 'ratio on/off: CPU [0-9]' <<<"$out" && ! grep -q 'kprobes left' <<<"$out"; then
		echo "ok - the activity bench's workload runs to its ratio, its kprobes gone at exit" >>"$RUN/case-$case_n.results"
	else
		echo "not ok - the activity bench's workload: $(tail -n 2 <<<"$out")" >>"$RUN/case-$case_n.results"
	fi
}
# act_counts CG: the cgroup's four activity counters from the exporter, "ACCESSES ADDED DIRTIED BUFFER_DIRTIED"
act_counts() {
	curl -sf "http://127.0.0.1:$E2E_EXPORTER_PORT/metrics" | awk -v cg="$1" '
		BEGIN { n["accesses_total"] = 1; n["added_pages_total"] = 2; n["dirtied_pages_total"] = 3
			n["buffer_dirtied_total"] = 4 }
		{
			for (f in n)
				if ($1 == "cachestat_cgroup_pagecache_" f "{cgroup=\"" cg "\"}") v[n[f]] = $2
		}
		END { printf "%d %d %d %d\n", v[1], v[2], v[3], v[4] }'
}
# act_settled CG: CG's counters in ACT, once two scrapes 6 s apart (more than a scan's interval) agree
act_settled() {
	local a b n
	a=$(act_counts "$1")
	for n in $(seq 20); do
		sleep 6
		b=$(act_counts "$1")
		[ "$a" != "$b" ] || { ACT=$b; return 0; }
		a=$b
	done
	fail_case "the activity counters of $1 did not settle in $((n * 6)) s"
}
# act_delta BEFORE AFTER: the difference of two act_counts lines
act_delta() {
	local -a x y
	read -ra x <<<"$1"
	read -ra y <<<"$2"
	echo "$((y[0] - x[0])) $((y[1] - x[1])) $((y[2] - x[2])) $((y[3] - x[3]))"
}
# act_step VAR CG COMMAND...: VAR set to what COMMAND added to CG's counters
act_step() {
	local -n act_out=$1
	local cg=$2 before
	shift 2
	act_settled "$cg"
	before=$ACT
	"$@" >/dev/null || fail_case "$*"
	act_settled "$cg"
	# shellcheck disable=SC2034 # a name reference: this sets the caller's variable
	act_out=$(act_delta "$before" "$ACT")
}
act_field() { cut -d' ' -f"$1" <<<"$2"; }
# BCC's: misses = added - dirtied, hits = accesses - buffer dirtied - misses
act_misses() { echo $(($(act_field 2 "$1") - $(act_field 3 "$1"))); }
act_hits() { echo $(($(act_field 1 "$1") - $(act_field 4 "$1") - $(act_misses "$1"))); }
# act_within WHAT GOT WANT [OF]: GOT within 5% of WANT (of OF where WANT is 0), a result of its own
act_within() {
	local of=${4:-$3} verdict="not ok"
	[ $(($2 - $3)) -gt $((of / 20)) ] || [ $(($3 - $2)) -gt $((of / 20)) ] || verdict=ok
	echo "$verdict - $1: $2, want $3 within 5% of $of" >>"$RUN/case-$case_n.results"
}

usr_alias() {
	case $1 in
	/usr/lib/*) echo "${1#/usr}" ;;
	/lib/*) echo "/usr$1" ;;
	*) echo "$1" ;;
	esac
}

k8s_cleanup() { vm_ssh 'systemctl stop kubepods.slice 2>/dev/null; e2e-guest remove-tree kubepods'; }
random_id() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
# k8s_scope SLICE ID FILE: a process holding FILE in cri-containerd-ID.scope of SLICE (systemd nests
# kubepods-burstable-pod<uid>.slice in kubepods-burstable.slice in kubepods.slice by its name).
k8s_scope() {
	vm_ssh "setsid -f systemd-run --quiet --scope --slice='$1' --unit='cri-containerd-$2' -- \
		bash -c 'exec 3<$3; cat $3 >/dev/null; exec sleep infinity' </dev/null >/dev/null 2>&1" ||
		fail_case "systemd-run in $1"
	local n
	for n in $(seq 30); do
		vm_ssh "systemctl is-active --quiet 'cri-containerd-$2.scope'" && return 0
		sleep 1
	done
	fail_case "cri-containerd-$2.scope did not start ($n s)"
}

# run_case N NAME: runs case N in a subshell and counts it: one result, or, when the case wrote
# results of its own into $RUN/case-N.results (tests/lib/tap.sh's dialect), those.
run_case() {
	local n=$1 name=$2 start=$SECONDS rc log=$RUN/case-$1.log results=$RUN/case-$1.results line
	: >"$results"
	case_n=$n
	( "case_$n" ) >"$log" 2>&1
	rc=$?
	# Whatever the outcome, the case's workloads must not weigh on the next one.
	vm_ssh "e2e-guest cleanup $n" >>"$log" 2>&1
	local took=$((SECONDS - start))
	while IFS= read -r line; do
		case $line in
		"ok - "*) pass "$n ${line#ok - }" ;;
		"not ok - "*) fail "$n ${line#not ok - }" ;;
		"skip - "*)
			line=${line#skip - }
			skip "$n ${line% (*}" "$(sed -E 's/.* \((.*)\)$/\1/' <<<"$line")" ;;
		*) echo "$line" ;;
		esac
	done <"$results"
	case $rc in
	0) grep -q '^\(not \)\?ok - ' "$results" || pass "$n $name ($took s)" ;;
	3) skip "$n $name" "$(grep '^SKIP: ' "$log" | tail -n 1 | cut -c7-)" ;;
	*) grep -q '^not ok - ' "$results" || fail "$n $name ($took s): $(grep '^FAIL: ' "$log" | tail -n 1 | cut -c7-)"
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
	[6]="promtool clean, rules loaded, dashboard queries have data, the thrashing alert delivered"
	[7]="kernel test suite and kernel-bench smoke in the same boot"
	[8]="a podman container's 64 MiB image file: its cgroup, container id and cached bytes"
	[9]="a second container holding the same image file: the real inode, counted once"
	[10]="Kubernetes-shaped cgroups of both kubelet drivers: pod UID, QoS, container id"
	[11]="the service runs the Debian package's binary, unit and system user"
	[12]="the OCI image, run by podman as the DaemonSet runs it, finds cachestat and reports what the service does"
	[13]="two containers under one parent slice: its subtree counts their shared image file once"
	[14]="nginx under siege: the fanotify collector counts the files it served and closed, as fincore does"
	[15]="the hardened unit runs on this kernel: no seccomp kill, no denial, every collector succeeds"
	[16]="case 6's thrashing alert resolved at the receiver once its workload was gone"
	[17]="the activity collector counts a cgroup's misses, hits and dirtied pages as the file sizes say"
)

# On any exit: stop QEMU, count the cases that never ran as failed, print the summary.
e2e_finish() {
	trap - EXIT
	if vm_alive; then
		vm_ssh 'journalctl -b --no-pager' >"$RUN/journal.log" 2>/dev/null
		vm_ssh 'systemd-analyze; systemd-analyze blame | head -n 25' >"$RUN/boot-analysis.log" 2>&1
		# cloud-init's own analysis, of its log, on the host: Python under TCG is the guest's slowest work.
		vm_ssh 'cat /var/log/cloud-init.log' >"$RUN/cloud-init.log" 2>/dev/null &&
			cloud-init analyze blame -i "$RUN/cloud-init.log" >>"$RUN/boot-analysis.log" 2>&1
	fi
	vm_stop
	for n in $cases; do
		case " $reported " in *" $n "*) continue ;; esac
		fail "$n ${names[$n]}: not run, the guest did not come up (see $RUN)"
	done
	log "e2e: $((SECONDS - suite_start)) s in all; logs in $RUN"
	finish
}

lock_run "$RUN_NAME"
rm -rf "$RUN"
mkdir -p "$RUN"
suite_start=$SECONDS
reported=
trap e2e_finish EXIT
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

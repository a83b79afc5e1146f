#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Hardening by privileges, on loopback. Privilege separation: the process holding the accepted
# connections has no capability, an unprivileged uid, no_new_privs, its own filter, is not
# dumpable; it is started again when it dies (SIGSEGV), exits when the scanner dies, and SIGTERM
# leaves no process; started with ambient capabilities as the unit does; --no-security.seccomp.
# Privileges after binding: the scanner's uid, capabilities of every thread, no_new_privs,
# seccomp, with scrapes still answered; root without CAP_SETUID (a container given only the four);
# --no-security.drop-privileges; the DaemonSet's start (root with CAP_SETUID): no process stays
# root; the HTTP process made to call fcntl(F_SETOWN) cannot stop the scanner.
# Ends with "N passed, N failed, N skipped" (tests/lib/tap.sh).
set -uo pipefail
# shellcheck source=tests/integration/lib-hardening.sh
. "$(dirname "$0")/lib-hardening.sh"

# ==== privilege separation: the process that speaks HTTP holds nothing ====
# The scanner keeps the scan's capabilities; the process that accepts connections and parses
# requests holds none, runs under an unprivileged uid, not dumpable, with a filter stacked on
# the scanner's. It dies: the scanner starts another at once. SIGTERM: nothing is left.
conn_holder() { # conn_holder PORT: the pids holding an accepted connection to 127.0.0.1:PORT
	local hex ino
	hex=$(printf '%04X' "$1")
	# the server side: local 127.0.0.1:PORT, ESTABLISHED (01); 0 while not accepted yet
	for ino in $(awk -v l="0100007F:$hex" '$2 == l && $4 == "01" && $10 != 0 { print $10 }' /proc/net/tcp); do
		find /proc/[0-9]*/fd -lname "socket:\[$ino\]" 2>/dev/null
	done | cut -d/ -f3 | sort -u | xargs
}

hard_privsep() {
	local child holder st scan uid newchild t0 t1 c rc
	if [ "$(id -u)" -ne 0 ]; then
		skip "privilege separation" "needs root to drop privileges"
		return
	fi
	start_exporter || return
	child=$(wait_http_child) || { fail "privsep: the scanner has no HTTP process"; return; }
	eq "privsep: one HTTP process, a child of the scanner" "$(wc -w <<<"$child")" 1
	exec 9<>"/dev/tcp/127.0.0.1/$port" # a connection the server accepted and keeps open
	for _ in $(seq 40); do
		holder=$(conn_holder "$port")
		[ -n "$holder" ] && break
		sleep 0.05
	done
	exec 9<&-
	eq "privsep: the accepted connection is held by the HTTP process, and only by it" "$holder" "$child"
	st=/proc/$child/status scan=/proc/$exporter_pid/status
	for f in CapEff CapPrm CapInh CapAmb; do
		eq "privsep: HTTP process $f" "$(capfield "$f" "$st")" 0000000000000000
	done
	eq "privsep: HTTP process NoNewPrivs" "$(capfield NoNewPrivs "$st")" 1
	eq "privsep: HTTP process Seccomp (filter mode)" "$(capfield Seccomp "$st")" 2
	eq "privsep: HTTP process filters: the scanner's and its own" "$(capfield Seccomp_filters "$st")" \
		$(($(capfield Seccomp_filters "$scan") + 1))
	uid=$(capfield Uid "$st")
	[ -n "$uid" ] && [ "$uid" -ne 0 ] && pass "privsep: HTTP process uid $uid, not root" ||
		fail "privsep: HTTP process uid '$uid'"
	eq "privsep: HTTP process has the scanner's unprivileged uid" "$uid" "$(capfield Uid "$scan")"
	c=0
	for t in "/proc/$child/task/"*/status; do
		[ "$(capfield CapEff "$t")" = 0000000000000000 ] && [ "$(capfield Seccomp "$t")" = 2 ] || c=1
	done
	eq "privsep: every thread of the HTTP process has no capability and the filter" "$c" 0
	# what its credentials reach (the kernel's answer, for a process with its uid and no caps)
	if command -v setpriv >/dev/null; then
		setpriv --reuid="$uid" --regid="$(capfield Gid "$st")" --clear-groups --inh-caps=-all \
			--bounding-set=-all -- cat /proc/1/environ >/dev/null 2>&1 &&
			fail "privsep: the HTTP process's credentials read /proc/1/environ" ||
			pass "privsep: the HTTP process's credentials cannot read /proc/1/environ"
		setpriv --reuid="$uid" --regid="$(capfield Gid "$st")" --clear-groups --inh-caps=-all \
			--bounding-set=-all -- ls "/proc/$exporter_pid/fd" >/dev/null 2>&1 &&
			fail "privsep: the HTTP process's credentials list the scanner's descriptors" ||
			pass "privsep: the HTTP process's credentials cannot list the scanner's /proc/PID/fd"
		# not dumpable: even its own uid may not read its memory's neighbours (no ptrace, no core)
		setpriv --reuid="$uid" --regid="$(capfield Gid "$st")" --clear-groups --inh-caps=-all \
			--bounding-set=-all -- cat "/proc/$child/environ" >/dev/null 2>&1 &&
			fail "privsep: a process of the HTTP process's uid reads its /proc/PID/environ" ||
			pass "privsep: the HTTP process is not dumpable: its uid cannot read its /proc/PID/environ"
	else
		skip "privsep: what the HTTP process's credentials reach" "setpriv (util-linux) not installed"
	fi
	# CAP_SYS_PTRACE(19) CAP_DAC_READ_SEARCH(2) CAP_FOWNER(3) CAP_CHECKPOINT_RESTORE(40)
	eq "privsep: the scanner keeps the scan's capabilities" "$(capfield CapEff "$scan")" 000001000008000c
	eq "privsep: the scanner holds no accepted connection" \
		"$(grep -wc "$exporter_pid" <<<"$holder")" 0
	eq "privsep: a scrape through the HTTP process" "$(code "$base/metrics")" 200
	# the body from the scanner's memfd, then the HTTP process's own series as a second gzip
	# member: curl --compressed and python's gzip read both members
	curl -s --compressed "$base/metrics" >"$work/privsep-curl.prom"
	curl -s -H 'Accept-Encoding: gzip' "$base/metrics" >"$work/privsep.gz"
	"$py" -c 'import gzip, sys; sys.stdout.write(gzip.decompress(open(sys.argv[1], "rb").read()).decode())' \
		"$work/privsep.gz" >"$work/privsep-py.prom" 2>/dev/null
	for f in privsep-curl privsep-py; do
		eq "privsep: gzip ($f): the scanner's series and the HTTP process's" \
			"$(grep -c -e '^cachestat_build_info{' -e '^process_open_fds ' -e '^cachestat_http_restarts_total ' "$work/$f.prom")" 3
	done
	# the HTTP process dies: a new one serves within seconds, and the restart is counted
	t0=$(date +%s%N)
	kill -SEGV "$child"
	c=000
	for _ in $(seq 100); do
		c=$(code --max-time 2 "$base/metrics")
		[ "$c" = 200 ] && break
		sleep 0.05
	done
	t1=$(date +%s%N)
	eq "privsep: a scrape succeeds again after the HTTP process died ($(((t1 - t0) / 1000000)) ms)" "$c" 200
	[ $(((t1 - t0) / 1000000)) -lt 5000 ] && pass "privsep: ... within 5 s" || fail "privsep: the restart took over 5 s"
	curl -s "$base/metrics" >"$work/privsep.prom"
	eq "privsep: cachestat_http_restarts_total" "$(metric cachestat_http_restarts_total "$work/privsep.prom")" 1
	newchild=$(wait_http_child "$child") || newchild=
	[ -n "$newchild" ] && [ "$newchild" != "$child" ] && ! kill -0 "$child" 2>/dev/null &&
		pass "privsep: a new HTTP process ($newchild) replaced $child" ||
		fail "privsep: no new HTTP process (children: '$(http_children)')"
	eq "privsep: the new HTTP process holds no capability" \
		"$(capfield CapEff "/proc/$newchild/status" 2>/dev/null)" 0000000000000000
	grep -q "msg=\"HTTP process killed; starting a new one\" pid=$child signal=SIGSEGV\$" "$log" && pass "privsep: the death is logged" ||
		fail "privsep: the death is not logged"
	# SIGTERM: both end, the scanner with status 0, nothing left behind
	kill -TERM "$exporter_pid"
	wait "$exporter_pid"
	rc=$?
	exporter_pid=
	eq "privsep: SIGTERM: the scanner exits with status 0" "$rc" 0
	kill -0 "$newchild" 2>/dev/null && fail "privsep: SIGTERM left the HTTP process $newchild" ||
		pass "privsep: SIGTERM leaves no HTTP process"
	# the scanner dies: its HTTP process does not serve on, stale
	start_exporter || return
	child=$(wait_http_child) || { fail "privsep: no HTTP process"; return; }
	kill -KILL "$exporter_pid"
	wait "$exporter_pid" 2>/dev/null
	exporter_pid=
	for _ in $(seq 60); do
		kill -0 "$child" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$child" 2>/dev/null && { fail "privsep: the HTTP process outlives its scanner"; kill -KILL "$child"; } ||
		pass "privsep: the HTTP process exits when its scanner is gone"
	eq "privsep: nothing answers once the scanner is gone" "$(code --max-time 2 "$base/metrics")" 000
	# as the unit starts it: the unprivileged user with the four as ambient capabilities
	local four=+sys_ptrace,+dac_read_search,+fowner,+checkpoint_restore
	if ! command -v setpriv >/dev/null; then
		skip "privsep: started with ambient capabilities" "setpriv (util-linux) not installed"
	elif wrap=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps="$four" --ambient-caps="$four" --) &&
		start_exporter; then
		child=$(wait_http_child) || child=
		st=/proc/$child/status
		eq "privsep: ambient start, the scanner keeps the four" \
			"$(capfield CapEff "/proc/$exporter_pid/status")" 000001000008000c
		eq "privsep: ambient start, the HTTP process has the same uid" "$(capfield Uid "$st")" 65534
		eq "privsep: ambient start, the HTTP process's ambient set" "$(capfield CapAmb "$st")" 0000000000000000
		eq "privsep: ambient start, the HTTP process's effective set" "$(capfield CapEff "$st")" 0000000000000000
		setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all -- \
			cat "/proc/$child/environ" >/dev/null 2>&1 &&
			fail "privsep: ambient start, the HTTP process's uid reads its /proc/PID/environ (dumpable)" ||
			pass "privsep: ambient start, the HTTP process is not dumpable"
		eq "privsep: ambient start, a scrape" "$(code "$base/metrics")" 200
	fi
	# --no-security.seccomp: no filter in either process
	if start_exporter --no-security.seccomp; then
		child=$(wait_http_child) || child=
		eq "privsep: --no-security.seccomp, the scanner" "$(capfield Seccomp "/proc/$exporter_pid/status")" 0
		eq "privsep: --no-security.seccomp, the HTTP process" "$(capfield Seccomp "/proc/$child/status" 2>/dev/null)" 0
		eq "privsep: --no-security.seccomp, the HTTP process still holds no capability" \
			"$(capfield CapEff "/proc/$child/status" 2>/dev/null)" 0000000000000000
	fi
	stop_exporter
}

# ==== privileges after binding ====
if [ "$(id -u)" -ne 0 ]; then
	skip "privilege drop" "needs root"
elif start_exporter --security.seccomp; then
	status=/proc/$exporter_pid/status
	eq "runs as nobody" "$(awk '/^Uid:/ { print $2 "," $3 "," $4 "," $5 }' "$status")" \
		"$(id -u nobody),$(id -u nobody),$(id -u nobody),$(id -u nobody)"
	eq "no supplementary groups" "$(awk '/^Groups:/ { print $2 }' "$status")" ""
	# CAP_SYS_PTRACE(19) CAP_DAC_READ_SEARCH(2) CAP_FOWNER(3) CAP_CHECKPOINT_RESTORE(40)
	eq "effective capabilities" "$(awk '/^CapEff:/ { print $2 }' "$status")" 000001000008000c
	eq "permitted capabilities" "$(awk '/^CapPrm:/ { print $2 }' "$status")" 000001000008000c
	eq "bounding set" "$(awk '/^CapBnd:/ { print $2 }' "$status")" 0000000000000000
	eq "ambient set" "$(awk '/^CapAmb:/ { print $2 }' "$status")" 0000000000000000
	eq "no_new_privs" "$(awk '/^NoNewPrivs:/ { print $2 }' "$status")" 1
	eq "seccomp filter (mode 2)" "$(awk '/^Seccomp:/ { print $2 }' "$status")" 2
	# every thread, those libmicrohttpd started included
	bad=0
	for t in /proc/$exporter_pid/task/*/status; do
		[ "$(awk '/^CapEff:/ { print $2 }' "$t")" = 000001000008000c ] || bad=1
		[ "$(awk '/^Seccomp:/ { print $2 }' "$t")" = 2 ] || bad=1
	done
	eq "every thread has the same capabilities and filter" "$bad" 0
	# a scrape under all of it still sees this process's own open file
	exec 7<"$bin"
	curl -s "$base/metrics" >"$work/seccomp.prom"
	exec 7<&-
	grep -q '^cachestat_cgroup_files{cgroup="/' "$work/seccomp.prom" &&
		pass "scrapes work with the seccomp filter" || fail "no cgroup series under seccomp"
	grep -q '^cachestat_scrape_collector_success{collector="cachestat"} 1' "$work/seccomp.prom" &&
		pass "the cachestat collector succeeds under seccomp" ||
		fail "cachestat collector failed under seccomp"
	# root with only the four capabilities (a container given no CAP_SETUID): no
	# CAP_SETUID to become nobody, so it stays root with those four, and serves
	if ! command -v setpriv >/dev/null; then
		skip "root without CAP_SETUID" "setpriv (util-linux) not installed"
	elif wrap=(setpriv --bounding-set "-all,+sys_ptrace,+dac_read_search,+fowner,+checkpoint_restore" --) &&
		start_exporter; then
		eq "root without CAP_SETUID stays root" "$(awk '/^Uid:/ { print $2 }' /proc/$exporter_pid/status)" 0
		eq "root without CAP_SETUID keeps the four capabilities" \
			"$(awk '/^CapEff:/ { print $2 }' /proc/$exporter_pid/status)" 000001000008000c
		eq "root without CAP_SETUID serves" "$(code "$base/metrics")" 200
		grep -q 'without CAP_SETUID and CAP_SETGID' "$log" && pass "staying root is logged" ||
			fail "staying root is not logged"
	fi
	# the DaemonSet: root with the four and CAP_SETUID/CAP_SETGID (no CAP_SETPCAP to clear the
	# bounding set): both processes leave uid 0, the scanner keeping the four
	if command -v setpriv >/dev/null &&
		wrap=(setpriv --bounding-set "-all,+sys_ptrace,+dac_read_search,+fowner,+checkpoint_restore,+setuid,+setgid" --no-new-privs --) &&
		start_exporter; then
		child=$(wait_http_child) || child=
		eq "DaemonSet: the scanner leaves root" "$(awk '/^Uid:/ { print $2 "," $3 "," $4 "," $5 }' /proc/$exporter_pid/status)" \
			"$(id -u nobody),$(id -u nobody),$(id -u nobody),$(id -u nobody)"
		eq "DaemonSet: the scanner keeps the four capabilities" \
			"$(awk '/^CapEff:/ { print $2 }' /proc/$exporter_pid/status)" 000001000008000c
		eq "DaemonSet: the HTTP process is not root" "$(awk '/^Uid:/ { print $2 }' "/proc/$child/status" 2>/dev/null)" "$(id -u nobody)"
		eq "DaemonSet: a scrape" "$(code "$base/metrics")" 200
	fi
	if start_exporter --no-security.drop-privileges; then
		eq "--no-security.drop-privileges keeps root" "$(awk '/^Uid:/ { print $2 }' /proc/$exporter_pid/status)" 0
	fi
fi

# ==== the HTTP process cannot signal another process ====
# fcntl(F_SETOWN) + F_SETSIG + O_ASYNC on its listening socket would make the kernel send the
# scanner SIGSTOP at the next connection, a signal the filter's refusal of kill does not see.
# gdb (root, CAP_SYS_PTRACE) makes the HTTP process itself call fcntl, as a subverted one would.
hard_http_signal() {
	local child hex ino fd out state
	if [ "$(id -u)" -ne 0 ] || ! command -v gdb >/dev/null; then
		skip "the HTTP process cannot signal the scanner" "needs root and gdb (tests/integration/deps.txt); test-sandbox's test_seccomp_fcntl covers the filter"
		return
	fi
	start_exporter || return
	child=$(wait_http_child) || { fail "signal: no HTTP process"; return; }
	hex=$(printf '%04X' "$port")
	ino=$(awk -v l="0100007F:$hex" '$2 == l && $4 == "0A" { print $10 }' /proc/net/tcp)
	fd=$(find "/proc/$child/fd" -lname "socket:\[$ino\]" 2>/dev/null | head -n 1)
	fd=${fd##*/}
	[ -n "$fd" ] || { fail "signal: the HTTP process's listening socket not found"; return; }
	# F_SETOWN=8 to the scanner, F_SETSIG=10 SIGSTOP(19), F_SETFL=4 O_RDWR|O_NONBLOCK|O_ASYNC
	out=$(timeout 30 gdb -p "$child" -batch -nx -ex "call (int)fcntl($fd, 8, $exporter_pid)" \
		-ex "call (int)fcntl($fd, 10, 19)" -ex "call (int)fcntl($fd, 4, 0x2802)" 2>/dev/null |
		sed -n 's/^\$[0-9]* = //p' | xargs)
	eq "signal: F_SETOWN, F_SETSIG and O_ASYNC refused in the HTTP process" "$out" "-1 -1 -1"
	code --max-time 3 "$base/metrics" >/dev/null
	sleep 0.3
	state=$(awk '/^State:/ { print $2 }' "/proc/$exporter_pid/status")
	eq "signal: a connection leaves the scanner running" "$state" S
	eq "signal: a scrape after the attempt" "$(code --max-time 3 "$base/metrics")" 200
	if [ "$state" = T ]; then # the attack worked: the scanner would stop at every connection
		kill -KILL "$exporter_pid"
		wait "$exporter_pid" 2>/dev/null
		exporter_pid=
	fi
	stop_exporter
}

hard_privsep
hard_http_signal
stop_exporter
finish

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The exporter operated as node_exporter is, on loopback: the config file's reloads in
# cachestat_config_last_reload_successful and its timestamp (against the SIGHUPs sent and the
# clock), counters and process_* that survive a web-config reload (the HTTP process replaced,
# the scanner not: against the requests made and ps), a scrape in flight answered whole on
# SIGTERM (curl's exit status and the body's last family), plain HTTP to the TLS port answered
# with a 400 that says so, and a start log that says whether TLS and basic auth are on.
# Ends with "N passed, N failed, N skipped" (tests/lib/tap.sh).
set -uo pipefail
# shellcheck source=tests/integration/lib-hardening.sh
. "$(dirname "$0")/lib-hardening.sh"

# a cgroup of its own to walk, so that the scans stay short whatever else the host runs
if [ -w "$cg2" ] && mkdir "$cg2/cse-operable-$$" 2>/dev/null; then
	own_cg=$cg2/cse-operable-$$
	cg2=$own_cg
	trap 'rmdir "$own_cg" 2>/dev/null; hardening_cleanup' EXIT
fi

# a self-signed certificate for 127.0.0.1, made at test time
certs=$work/certs
mkdir "$certs"
if openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
	-keyout "$certs/server.key" -out "$certs/server.crt" -subj /CN=localhost \
	-addext 'subjectAltName=DNS:localhost,IP:127.0.0.1' 2>/dev/null; then
	chmod 644 "$certs"/*
else
	fail "openssl could not make a test certificate"
	finish
fi
tbase=https://127.0.0.1:$port
tls=(--cacert "$certs/server.crt")
# listening FILE: the "Listening on" line of the log
listening() { grep -m1 'msg="Listening on"' "$log"; }
# wait_log PATTERN: until the log has it (10 s at most)
wait_log() {
	for _ in $(seq 200); do
		grep -q "$1" "$log" && return 0
		sleep 0.05
	done
	return 1
}
# sample NAME FILE: the value of a sample, labels included in NAME
sample() { awk -v n="$1" '$1 == n { print $2; exit }' "$2"; }

# ==== the start log ====
if start_exporter; then
	case "$(listening)" in
	*" tls=off basic_auth=off"*) pass "start log without a web config: tls=off basic_auth=off" ;;
	*) fail "start log does not say TLS and basic auth are off: $(listening)" ;;
	esac
fi
hash=$(bcrypt s3cret)
printf 'tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  alice: %s\n' \
	"$certs/server.crt" "$certs/server.key" "'$hash'" >"$work/both.yml"
if start_exporter --web.config.file="$work/both.yml"; then
	case "$(listening)" in
	*" tls=on basic_auth=on"*) pass "start log with TLS and basic auth: tls=on basic_auth=on" ;;
	*) fail "start log does not say TLS and basic auth are on: $(listening)" ;;
	esac

	# ==== plain HTTP to the TLS port ====
	eq "TLS port: a TLS client with the login" "$(code "${tls[@]}" -u alice:s3cret "$tbase/metrics")" 200
	body=$(curl -s -w '\n%{http_code}' "$base/metrics")
	rc=$?
	eq "plain HTTP to the TLS port: curl completes (exit status)" "$rc" 0
	eq "plain HTTP to the TLS port: the status" "$(tail -n 1 <<<"$body")" 400
	case "$body" in
	*"Client sent an HTTP request to an HTTPS server."*) pass "the 400 says the port speaks HTTPS" ;;
	*) fail "the 400 does not say why: $(head -c 200 <<<"$body")" ;;
	esac
	eq "a TLS client still served after it" "$(code "${tls[@]}" -u alice:s3cret "$tbase/metrics")" 200
	no_http_death && pass "no HTTP process died" || fail "an HTTP process died"
fi

# ==== the config file's reloads ====
echo '{ "per_file_top": 5 }' >"$work/config.json"
t0=$(date +%s)
if start_exporter --config.file="$work/config.json"; then
	curl -s "$base/metrics" >"$work/r0.prom"
	eq "reload: successful after the start" "$(metric cachestat_config_last_reload_successful "$work/r0.prom")" 1
	ts0=$(metric cachestat_config_last_reload_success_timestamp_seconds "$work/r0.prom")
	awk -v t="$ts0" -v a="$t0" -v b="$(date +%s)" 'BEGIN { exit !(t >= a - 1 && t <= b + 1) }' &&
		pass "reload: the timestamp is the start's ($ts0, started at $t0)" ||
		fail "reload: timestamp '$ts0' is not the start's ($t0)"
	echo '{ "per_file_top": ' >"$work/config.json"
	sleep 1.1 # a second apart: the timestamps differ
	kill -HUP "$exporter_pid"
	wait_log 'config reload failed' || fail "reload: the bad config is not logged"
	curl -s "$base/metrics" >"$work/r1.prom"
	eq "reload: a bad config makes successful 0" "$(metric cachestat_config_last_reload_successful "$work/r1.prom")" 0
	eq "reload: a bad config keeps the last success's timestamp" \
		"$(metric cachestat_config_last_reload_success_timestamp_seconds "$work/r1.prom")" "${ts0:-none}"
	echo '{ "per_file_top": 7 }' >"$work/config.json"
	t1=$(date +%s)
	kill -HUP "$exporter_pid"
	wait_log 'msg="config reloaded"' || fail "reload: the good config is not logged"
	curl -s "$base/metrics" >"$work/r2.prom"
	eq "reload: a good config makes successful 1 again" "$(metric cachestat_config_last_reload_successful "$work/r2.prom")" 1
	ts2=$(metric cachestat_config_last_reload_success_timestamp_seconds "$work/r2.prom")
	awk -v t="$ts2" -v a="$t1" -v o="$ts0" 'BEGIN { exit !(t >= a - 1 && t > o) }' &&
		pass "reload: the timestamp moves to the good reload's ($ts2, sent at $t1)" ||
		fail "reload: timestamp '$ts2' is not the good reload's ($t1, before: $ts0)"
fi

# ==== a web-config reload: the counters and process_* go on ====
printf 'tls_server_config:\n  cert_file: %s\n  key_file: %s\n' "$certs/server.crt" "$certs/server.key" \
	>"$work/web.yml"
if start_exporter --web.config.file="$work/web.yml"; then
	hp=$(wait_http_child) || fail "web reload: no HTTP process"
	for _ in 1 2 3 4; do code "${tls[@]}" "$tbase/nope" >/dev/null; done
	curl -s "${tls[@]}" "$tbase/metrics" >"$work/w0.prom"
	n404=$(sample 'cachestat_http_requests_total{code="404"}' "$work/w0.prom")
	eq "web reload: the 404s before it" "$n404" 4
	start0=$(metric process_start_time_seconds "$work/w0.prom")
	hstart0=$(metric cachestat_http_process_start_time_seconds "$work/w0.prom")
	sleep 1.1 # the new HTTP process starts in another second than the old one
	printf 'tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  alice: %s\n' \
		"$certs/server.crt" "$certs/server.key" "'$hash'" >"$work/web.yml"
	if wait_log 'HTTP process serves the new web config'; then
		pass "web reload: a new HTTP process serves it"
		grep -q 'serves the new web config.*tls=on.*basic_auth=on' "$log" &&
			pass "web reload: the log says TLS and basic auth are on" ||
			fail "web reload: the log does not say TLS and basic auth are on"
	else
		fail "web reload: no new HTTP process"
	fi
	hp2=$(wait_http_child "$hp") || fail "web reload: the HTTP process was not replaced"
	code "${tls[@]}" -u alice:s3cret "$tbase/nope" >/dev/null
	curl -s "${tls[@]}" -u alice:s3cret "$tbase/metrics" >"$work/w1.prom"
	eq "web reload: cachestat_http_requests_total{code=\"404\"} counts on (4 + 1)" \
		"$(sample 'cachestat_http_requests_total{code="404"}' "$work/w1.prom")" 5
	# a scrape is counted once answered: the one before the reload, not this one
	eq "web reload: cachestat_http_requests_total{code=\"200\"} counts on (1)" \
		"$(sample 'cachestat_http_requests_total{code="200"}' "$work/w1.prom")" 1
	eq "web reload: process_start_time_seconds stays the scanner's" \
		"$(metric process_start_time_seconds "$work/w1.prom")" "$start0"
	hstart1=$(metric cachestat_http_process_start_time_seconds "$work/w1.prom")
	hstart_ps=$(date -d "$(ps -o lstart= -p "${hp2:-0}" 2>/dev/null)" +%s 2>/dev/null)
	awk -v a="$hstart1" -v b="$hstart0" -v p="${hstart_ps:-0}" \
		'BEGIN { d = a - p; if (d < 0) d = -d; exit !(a > b && d < 2) }' &&
		pass "web reload: cachestat_http_process_start_time_seconds is the new process's ($hstart1, ps: $hstart_ps)" ||
		fail "web reload: cachestat_http_process_start_time_seconds '$hstart1' (before $hstart0, ps: $hstart_ps)"
fi

# ==== SIGTERM with a scrape in flight ====
# The scrape waits for a scan: the scanner is stopped (SIGSTOP) until both processes got
# SIGTERM, as systemd sends it to the unit's cgroup; it answers once it runs again.
if start_exporter; then
	hp=$(wait_http_child) || fail "SIGTERM: no HTTP process"
	kill -STOP "$exporter_pid"
	curl -s -o "$work/term.prom" -w '%{http_code}' "$base/metrics" >"$work/term.code" 2>/dev/null &
	curl_pid=$!
	sleep 0.5
	kill -TERM "${hp:-0}" "$exporter_pid"
	sleep 0.5
	kill -CONT "$exporter_pid"
	wait "$curl_pid"
	rc=$?
	eq "SIGTERM: the scrape in flight completes (curl exit status)" "$rc" 0
	eq "SIGTERM: the scrape in flight gets a 200" "$(cat "$work/term.code")" 200
	grep -q '^cachestat_log_repeats_suppressed_total ' "$work/term.prom" &&
		grep -q '^cachestat_build_info' "$work/term.prom" &&
		pass "SIGTERM: the body is whole (its first and last families)" ||
		fail "SIGTERM: the body is cut ($(wc -c <"$work/term.prom") bytes)"
	stopped=no
	for _ in $(seq 150); do
		kill -0 "$exporter_pid" 2>/dev/null || { stopped=yes; break; }
		sleep 0.1
	done
	eq "SIGTERM: the exporter exits within 15 s" "$stopped" yes
	wait "$exporter_pid" 2>/dev/null
	exporter_pid=
fi

finish

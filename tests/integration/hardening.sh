#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Integration test of the exporter's hardening, on the build machine, loopback only:
#   HTTP limits: 404, 405 with Allow, header size (431/414), idle and slow clients cut at the
#   connection timeout, --web.max-connections-per-ip keeping a hogging client from locking
#   out others, --web.max-requests (503);
#   basic auth (401 without, with a wrong or unknown login; 200 with the right one);
#   TLS (curl --cacert), client certificates required (no certificate or one from another CA:
#   the handshake fails), web config reload (new password, bad file kept out, new certificate);
#   TLS policy: a client certificate must be for client auth (extended key usage), ECDHE with
#   AEAD ciphers by default, cipher_suites, curve_preferences, min_version and max_version;
#   a bad web config at start; privileges after binding (uid, capabilities, no_new_privs,
#   seccomp) with scrapes still answered; --web.max-connections;
#   privilege separation: the process holding the accepted connections has no capability,
#   an unprivileged uid, no_new_privs, its own filter; it is started again when it dies
#   (SIGSEGV), exits when the scanner dies, and SIGTERM leaves no process;
#   file safety: FIFOs, devices, symlink loops and symlinks out of a configured directory;
#   scrapes while cgroups and files come and go; a descriptor limit (RLIMIT_NOFILE) of 16.
# Certificates are made at test time with openssl in a temporary directory.
# Ends with "N passed, N failed, N skipped" (tests/lib/tap.sh).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$top/exporter/cachestat_exporter
py=/usr/bin/python3
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"

for tool in curl openssl "$py"; do
	if ! command -v "$tool" >/dev/null; then
		skip_suite "$tool is not installed (see tests/load/deps.txt)"
	fi
done
# (re)built: a stale binary would test old code
make -s -C "$top/exporter" >/dev/null || { fail "the exporter does not build"; finish; }

work=$(mktemp -d /tmp/cse-hard.XXXXXX)
chmod 755 "$work" # the daemon runs as nobody once it has dropped privileges
# What runs as another user (the daemon started as nobody, the hostile helpers) runs from copies
# here: the checkout may lie below a directory only its owner enters (a home directory is 0700
# on Debian 12), where nobody could not reach the originals.
cp "$bin" "$work/cachestat_exporter" && bin=$work/cachestat_exporter
cp -R "$top/tests/integration/hostile" "$work/hostile" && chmod -R a+rX "$work/hostile"
cgdir=
cleanup() {
	stop_exporter
	fuse_cleanup
	[ -n "$cgdir" ] && rmdir "$cgdir" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# A cgroup v2 mount to walk, else an empty directory: the HTTP tests do not need cgroups.
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ -z "$cg2" ]; then
	cg2=$work/cgroupfs
	mkdir "$cg2"
fi

port=$(pick_port) || { fail "no free port"; finish; }
base=http://127.0.0.1:$port
log=$work/exporter.log

code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

# ---- certificates ----
certs=$work/certs
mkdir "$certs"
mkcert() { # mkcert NAME CA SUBJECT EXT...: an EC key and a certificate signed by CA (or self)
	local name=$1 ca=$2 subj=$3
	shift 3
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$certs/$name.key" \
		-out "$certs/$name.csr" -subj "$subj" 2>/dev/null || return 1
	printf '%s\n' "$@" >"$certs/$name.ext"
	if [ "$ca" = self ]; then
		openssl x509 -req -in "$certs/$name.csr" -signkey "$certs/$name.key" -days 2 \
			-extfile "$certs/$name.ext" -out "$certs/$name.crt" 2>/dev/null
	else
		openssl x509 -req -in "$certs/$name.csr" -CA "$certs/$ca.crt" -CAkey "$certs/$ca.key" \
			-CAcreateserial -days 2 -extfile "$certs/$name.ext" -out "$certs/$name.crt" 2>/dev/null
	fi
}
ca_ext='basicConstraints=critical,CA:TRUE'
if mkcert ca self /CN=cse-test-ca "$ca_ext" &&
	mkcert other-ca self /CN=cse-other-ca "$ca_ext" &&
	mkcert server ca /CN=localhost 'subjectAltName=DNS:localhost,IP:127.0.0.1' 'extendedKeyUsage=serverAuth' &&
	mkcert server2 ca /CN=rotated 'subjectAltName=DNS:localhost,IP:127.0.0.1' 'extendedKeyUsage=serverAuth' &&
	mkcert client ca /CN=client 'extendedKeyUsage=clientAuth' &&
	mkcert rogue other-ca /CN=rogue 'extendedKeyUsage=clientAuth'; then
	pass "test certificates made with openssl"
else
	fail "openssl could not make the test certificates"
	finish
fi
chmod 644 "$certs"/*

# TLS policy: the client certificate's purpose, ECDHE with AEAD ciphers by default, and the
# toolkit's cipher_suites, curve_preferences, min_version and max_version. Run at the end;
# HARDENING_ONLY=tls_policy (tests/integration/hardening-tls.sh) runs this block alone.
tls_policy_start() { # tls_policy_start CERT LINE...: starts the exporter on a web config
	local cert=$1
	shift
	{
		printf 'tls_server_config:\n  cert_file: %s.crt\n  key_file: %s.key\n' "$certs/$cert" "$certs/$cert"
		printf '  %s\n' "$@"
	} >"$work/policy.yml"
	start_exporter --web.config.file="$work/policy.yml"
}

hard_tls_policy() {
	local turl=https://127.0.0.1:$port/metrics
	local srvauth=(--cacert "$certs/ca.crt" --cert "$certs/client-srv.crt" --key "$certs/client-srv.key")
	local client=(--cacert "$certs/ca.crt" --cert "$certs/client.crt" --key "$certs/client.key")
	local cbc=(--cacert "$certs/ca.crt" --ciphers ECDHE-RSA-AES128-SHA --tls-max 1.2)
	if ! mkcert client-srv ca /CN=client-srv 'extendedKeyUsage=serverAuth' ||
		! openssl req -newkey rsa:2048 -nodes -keyout "$certs/rsa.key" -out "$certs/rsa.csr" \
			-subj /CN=localhost 2>/dev/null ||
		! openssl x509 -req -in "$certs/rsa.csr" -CA "$certs/ca.crt" -CAkey "$certs/ca.key" -CAcreateserial \
			-days 2 -extfile <(printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n') \
			-out "$certs/rsa.crt" 2>/dev/null; then
		fail "TLS policy: openssl could not make the certificates"
		return
	fi
	chmod 644 "$certs"/*
	if tls_policy_start server "client_auth_type: RequireAndVerifyClientCert" "client_ca_file: $certs/ca.crt"; then
		eq "EKU: RequireAndVerifyClientCert, a clientAuth certificate" "$(code "${client[@]}" "$turl")" 200
		eq "EKU: RequireAndVerifyClientCert, a serverAuth-only certificate is refused" \
			"$(code "${srvauth[@]}" "$turl")" 000
	fi
	if tls_policy_start server "client_auth_type: VerifyClientCertIfGiven" "client_ca_file: $certs/ca.crt"; then
		eq "EKU: VerifyClientCertIfGiven, a clientAuth certificate" "$(code "${client[@]}" "$turl")" 200
		eq "EKU: VerifyClientCertIfGiven, a serverAuth-only certificate is refused" \
			"$(code "${srvauth[@]}" "$turl")" 000
	fi
	if tls_policy_start rsa; then
		eq "ciphers: ECDHE-RSA with AES-GCM, TLS 1.2" \
			"$(code --cacert "$certs/ca.crt" --ciphers ECDHE-RSA-AES128-GCM-SHA256 --tls-max 1.2 "$turl")" 200
		eq "ciphers: a CBC suite is refused by default" "$(code "${cbc[@]}" "$turl")" 000
		eq "ciphers: a static RSA key exchange is refused by default" \
			"$(code --cacert "$certs/ca.crt" --ciphers AES128-GCM-SHA256 --tls-max 1.2 "$turl")" 000
	fi
	if tls_policy_start rsa "cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA]"; then
		eq "ciphers: the CBC suite listed in cipher_suites" "$(code "${cbc[@]}" "$turl")" 200
		eq "ciphers: TLS 1.3 stays on with cipher_suites" \
			"$(code --cacert "$certs/ca.crt" --tlsv1.3 "$turl")" 200
	fi
	if tls_policy_start server "min_version: TLS13" "curve_preferences: [CurveP384]"; then
		eq "min_version TLS13: a TLS 1.2 client is refused" \
			"$(code --cacert "$certs/ca.crt" --tls-max 1.2 "$turl")" 000
		eq "curve_preferences [CurveP384]: a P-384 client" \
			"$(code --cacert "$certs/ca.crt" --curves P-384 "$turl")" 200
		eq "curve_preferences [CurveP384]: an X25519-only client is refused" \
			"$(code --cacert "$certs/ca.crt" --curves X25519 "$turl")" 000
	fi
	if tls_policy_start server "max_version: TLS12"; then
		eq "max_version TLS12: a TLS 1.3 client is refused" \
			"$(code --cacert "$certs/ca.crt" --tlsv1.3 "$turl")" 000
	fi
	printf 'tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites:\n    - TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n    - TLS_NOPE\n' \
		>"$work/policy-bad.yml"
	timeout 5 "$bin" --web.listen-address="127.0.0.1:$port" --web.config.file="$work/policy-bad.yml" \
		--path.cgroupfs="$cg2" 2>"$work/policy-bad.log" >/dev/null
	grep -q 'policy-bad.yml:6:7: cipher_suites: unknown cipher suite \\"TLS_NOPE\\"' "$work/policy-bad.log" &&
		pass "an unknown cipher suite is an error naming its line" ||
		{ fail "unknown cipher suite message"; cat "$work/policy-bad.log"; }
	stop_exporter
}
if [ "${HARDENING_ONLY:-}" = tls_policy ]; then
	fuse_cleanup() { :; } # (defined below, for the cleanup trap; no FUSE here)
	hard_tls_policy
	finish
fi

# ==== privilege separation: the process that speaks HTTP holds nothing ====
# The scanner keeps the scan's capabilities; the process that accepts connections and parses
# requests holds none, runs under an unprivileged uid, not dumpable, with a filter stacked on
# the scanner's. It dies: the scanner starts another at once. SIGTERM: nothing is left.
# HARDENING_ONLY=privsep (tests/integration/hardening-privsep.sh) runs this block alone.
capfield() { awk -v f="$1:" '$1 == f { print $2 }' "$2"; } # capfield FIELD STATUS_FILE
http_children() { cat "/proc/$exporter_pid/task/"*/children 2>/dev/null | xargs; }
conn_holder() { # conn_holder PORT: the pids holding an accepted connection to 127.0.0.1:PORT
	local hex ino
	hex=$(printf '%04X' "$1")
	# the server side: local 127.0.0.1:PORT, ESTABLISHED (01); 0 while not accepted yet
	for ino in $(awk -v l="0100007F:$hex" '$2 == l && $4 == "01" && $10 != 0 { print $10 }' /proc/net/tcp); do
		find /proc/[0-9]*/fd -lname "socket:\[$ino\]" 2>/dev/null
	done | cut -d/ -f3 | sort -u | xargs
}
# no HTTP process died since the exporter started (the scanner would start another: a crash
# must not pass for a process still running)
no_http_death() { ! grep -q 'msg="HTTP process \(killed\|exited\);' "$log"; }
# the HTTP process of the running exporter: the one child of the scanner, once it has one
wait_http_child() {
	local c
	for _ in $(seq 100); do
		c=$(http_children)
		[ -n "$c" ] && [ "$c" != "${1:-}" ] && { echo "$c"; return 0; }
		sleep 0.05
	done
	return 1
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
		wrap=()
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
if [ "${HARDENING_ONLY:-}" = privsep ]; then
	fuse_cleanup() { :; } # (defined below, for the cleanup trap; no FUSE here)
	metric() { sed -n "s/^$1 //p" "$2" | head -n 1; }
	hard_privsep
	finish
fi

bcrypt() { # bcrypt PASSWORD: a bcrypt hash ($2b$, cost 5) from crypt(3)
	"$py" -W ignore -c 'import crypt, sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=32)))' "$1"
}

# ==== plain HTTP: methods, paths, header size, timeouts ====
if start_exporter --web.connection-timeout=2 --web.max-connections=16 \
	--web.max-connections-per-ip=4; then
	eq "GET /metrics" "$(code "$base/metrics")" 200
	eq "HEAD /metrics" "$(code -I "$base/metrics")" 200
	eq "unknown path" "$(code "$base/nope")" 404
	eq "path below the telemetry path" "$(code "$base/metrics/x")" 404
	for m in POST PUT DELETE PATCH OPTIONS; do
		eq "$m /metrics" "$(code -X "$m" "$base/metrics")" 405
	done
	allow=$(curl -s -D - -o /dev/null -X POST --data x "$base/metrics" | tr -d '\r' | sed -n 's/^Allow: //Ip')
	eq "405 names the allowed methods" "$allow" "GET, HEAD"

	"$py" - "$port" >"$work/sock.out" 2>&1 <<'EOF'
import socket, sys, time
port = int(sys.argv[1])

def conn(src="127.0.0.1"):
    s = socket.create_connection(("127.0.0.1", port), source_address=(src, 0), timeout=10)
    return s

def read_all(s):
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except OSError as e:
        out += b"<" + str(e).encode() + b">"
    return out

def status(resp):
    return resp.split(b"\r\n", 1)[0].decode(errors="replace")

s = conn()
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\nConnection: close\r\n\r\n")
print("big-header", status(read_all(s)))
s = conn()
s.sendall(b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
print("long-uri", status(read_all(s)))

# idle and slow clients are cut after the connection timeout (2 s)
t = time.time()
s = conn()
print("idle-closed", read_all(s) == b"", round(time.time() - t))
t = time.time()
s = conn()
s.sendall(b"GET /metrics HTTP/1.1\r\nHo")
print("partial-closed", read_all(s) == b"", round(time.time() - t))

# a client that holds 4 connections (its per-address limit) with half-sent requests:
# a fifth from it is refused, and a scrape from another address is answered at once
hogs = []
for i in range(4):
    h = conn("127.0.0.2")
    h.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    hogs.append(h)
time.sleep(0.3)
extra = conn("127.0.0.2")
extra.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
r = read_all(extra)
print("fifth-from-hog", "answered" if r.startswith(b"HTTP/") else "refused")
t = time.time()
s = conn("127.0.0.1")
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
r = read_all(s)
print("other-address", status(r), time.time() - t < 1.5)
for h in hogs:
    h.close()
EOF
	cat "$work/sock.out" | sed 's/^/  | /'
	get() { sed -n "s/^$1 //p" "$work/sock.out"; }
	eq "a 20 KiB header is refused" "$(get big-header)" "HTTP/1.1 431 Request Header Fields Too Large"
	eq "a 20 KiB URI is refused" "$(get long-uri)" "HTTP/1.1 414 URI Too Long"
	eq "an idle connection is closed at the timeout" "$(get idle-closed)" "True 2"
	eq "a half-sent request is closed at the timeout" "$(get partial-closed)" "True 2"
	eq "a client over its per-address limit is refused" "$(get fifth-from-hog)" refused
	eq "a scrape from another address passes the hogging client" "$(get other-address)" "HTTP/1.1 200 OK True"
	kill -0 "$exporter_pid" 2>/dev/null && no_http_death && pass "still running after the hostile clients" ||
		fail "the exporter died"
fi

# ==== --web.max-requests: scrapes beyond it get 503 ====
# A directory of files assigned to every cgroup makes each scan take a while, so that
# simultaneous scrapes overlap.
mkdir -p "$work/many"
"$py" -c 'import os, sys
for i in range(20000): open(os.path.join(sys.argv[1], "f%d" % i), "w").close()' "$work/many"
printf '{ "cgroups": [ { "match": "/", "paths": ["%s"] } ] }\n' "$work/many" >"$work/slow.json"
burst() { # burst: 8 simultaneous scrapes, prints the status codes sorted
	"$py" - "$port" <<'EOF'
import sys, threading, urllib.request, urllib.error
port, codes, gate = int(sys.argv[1]), [], threading.Barrier(8)
def one():
    gate.wait()
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=60) as r:
            codes.append(r.status)
    except urllib.error.HTTPError as e:
        codes.append(e.code if e.headers.get("Retry-After") else -e.code)
    except Exception:
        codes.append(0)
ts = [threading.Thread(target=one) for _ in range(8)]
[t.start() for t in ts]
[t.join() for t in ts]
print(" ".join(str(c) for c in sorted(codes)))
EOF
}
if start_exporter --config.file="$work/slow.json" --web.max-requests=1; then
	codes=$(burst)
	echo "  | max-requests=1: $codes"
	case " $codes " in
	*" 200 "*" 503 "* | *" 503 "*" 200 "*) pass "over --web.max-requests=1: 503 with Retry-After, and 200" ;;
	*) fail "over --web.max-requests=1: want some 200 and some 503 with Retry-After, got: $codes" ;;
	esac
	case " $codes " in *" 0 "* | *" -"*) fail "max-requests: a scrape failed otherwise ($codes)" ;; esac
fi
if start_exporter --config.file="$work/slow.json" --web.max-requests=0; then
	eq "with --web.max-requests=0 every scrape is answered" "$(burst)" "200 200 200 200 200 200 200 200"
fi
rm -rf "$work/many"

# ==== basic auth ====
hash=$(bcrypt s3cret)
cat >"$work/web.yml" <<EOF
basic_auth_users:
  alice: '$hash'
EOF
if start_exporter --web.config.file="$work/web.yml"; then
	eq "no credentials" "$(code "$base/metrics")" 401
	realm=$(curl -s -D - -o /dev/null "$base/metrics" | tr -d '\r' | sed -n 's/^WWW-Authenticate: //Ip')
	eq "401 asks for basic auth" "$realm" 'Basic realm="cachestat_exporter"'
	eq "wrong password" "$(code -u alice:wrong "$base/metrics")" 401
	eq "unknown user" "$(code -u mallory:s3cret "$base/metrics")" 401
	eq "empty password" "$(code -u alice: "$base/metrics")" 401
	eq "right credentials" "$(code -u alice:s3cret "$base/metrics")" 200
	eq "right credentials again (cached)" "$(code -u alice:s3cret "$base/metrics")" 200
	eq "unknown path needs auth first" "$(code "$base/nope")" 401
	eq "landing page needs auth" "$(code "$base/")" 401
	grep -q 'passwords in clear text' "$log" && pass "auth without TLS is warned about" ||
		fail "no warning about auth without TLS"

	# reload: a new password works within a few seconds, the old one stops working
	cat >"$work/web.yml.new" <<EOF
basic_auth_users:
  alice: '$(bcrypt n3w)'
EOF
	mv "$work/web.yml.new" "$work/web.yml"
	got=401
	for _ in $(seq 40); do
		got=$(code -u alice:n3w "$base/metrics")
		[ "$got" = 200 ] && break
		sleep 0.1
	done
	eq "reloaded web config: new password" "$got" 200
	eq "reloaded web config: old password refused" "$(code -u alice:s3cret "$base/metrics")" 401
	grep -q 'web config reloaded' "$log" && pass "reload is logged" || fail "reload not logged"
	# a bad file keeps the running config and says why, with line and column
	printf 'basic_auth_users:\n  alice: [\n' >"$work/web.yml"
	sleep 1.2
	eq "bad web config on reload: running config kept" "$(code -u alice:n3w "$base/metrics")" 200
	grep -q 'web config reload failed.*web.yml:3:1' "$log" &&
		pass "bad web config on reload is logged with line and column" ||
		{ fail "bad reload not logged with its position"; sed 's/^/  | /' "$log"; }
fi

# ==== a bad web config at start ====
printf 'tls_server_config:\n  cert_file: a.crt\n  keyfile: a.key\n' >"$work/bad.yml"
"$bin" --web.listen-address=127.0.0.1:$port --path.cgroupfs="$cg2" --web.config.file="$work/bad.yml" \
	2>"$work/bad.log" &
bad_pid=$!
( sleep 5; kill $bad_pid 2>/dev/null ) &
wait $bad_pid
eq "bad web config at start exits 1" "$?" 1
grep -q 'bad.yml:3:3: unknown key \\"keyfile\\" in tls_server_config' "$work/bad.log" &&
	pass "bad web config names line, column and key" || { fail "bad web config message"; cat "$work/bad.log"; }

# ==== TLS ====
cat >"$work/tls.yml" <<EOF
tls_server_config:
  cert_file: certs/server.crt
  key_file: certs/server.key
EOF
tbase=https://127.0.0.1:$port
if start_exporter --web.config.file="$work/tls.yml"; then
	eq "TLS: curl --cacert" "$(code --cacert "$certs/ca.crt" "$tbase/metrics")" 200
	eq "TLS: TLS 1.2" "$(code --cacert "$certs/ca.crt" --tls-max 1.2 "$tbase/metrics")" 200
	curl -s --cacert "$certs/ca.crt" "$tbase/metrics" -o "$work/tls.prom"
	grep -q '^cachestat_build_info' "$work/tls.prom" && pass "TLS: the metrics come through" ||
		fail "TLS: no metrics"
	eq "TLS: a client that does not trust the CA" "$(code "$tbase/metrics")" 000
	eq "TLS: plain HTTP to the TLS port" "$(code "$base/metrics")" 000
	# TLS 1.1 is below the default min_version (TLS12)
	eq "TLS: TLS 1.1 refused" "$(code --cacert "$certs/ca.crt" --tlsv1.1 --tls-max 1.1 "$tbase/metrics")" 000

	# rotate the certificate: the next connection gets the new one
	cp "$certs/server2.crt" "$certs/server.crt.new" && mv "$certs/server.crt.new" "$certs/server.crt"
	cp "$certs/server2.key" "$certs/server.key.new" && mv "$certs/server.key.new" "$certs/server.key"
	subject=
	for _ in $(seq 40); do
		subject=$(curl -sv --cacert "$certs/ca.crt" "$tbase/metrics" -o /dev/null 2>&1 |
			sed -n 's/^\*  subject: //p')
		[ "$subject" = "CN=rotated" ] && break
		sleep 0.1
	done
	eq "TLS: a rotated certificate is served without a restart" "$subject" "CN=rotated"
fi

# ==== client certificates ====
cat >"$work/mtls.yml" <<EOF
tls_server_config:
  cert_file: $certs/server.crt
  key_file: $certs/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: $certs/ca.crt
basic_auth_users:
  alice: '$hash'
EOF
if start_exporter --web.config.file="$work/mtls.yml"; then
	ok=(--cacert "$certs/ca.crt" --cert "$certs/client.crt" --key "$certs/client.key")
	eq "mTLS: right certificate and login" "$(code "${ok[@]}" -u alice:s3cret "$tbase/metrics")" 200
	eq "mTLS: right certificate, wrong login" "$(code "${ok[@]}" -u alice:nope "$tbase/metrics")" 401
	curl -s --cacert "$certs/ca.crt" -u alice:s3cret "$tbase/metrics" -o /dev/null
	rc=$?
	if [ "$rc" -ne 0 ]; then pass "mTLS: no client certificate, the handshake fails (curl exit $rc)"; else
		fail "mTLS: served a client without a certificate"; fi
	eq "mTLS: no client certificate, no HTTP answer" "$(code --cacert "$certs/ca.crt" -u alice:s3cret "$tbase/metrics")" 000
	eq "mTLS: certificate of another CA" \
		"$(code --cacert "$certs/ca.crt" --cert "$certs/rogue.crt" --key "$certs/rogue.key" -u alice:s3cret "$tbase/metrics")" 000
	# the server side of the refusal, through openssl: no certificate, no response
	out=$(printf 'GET /metrics HTTP/1.0\r\n\r\n' | timeout 10 openssl s_client -connect 127.0.0.1:$port \
		-CAfile "$certs/ca.crt" -quiet 2>&1)
	case "$out" in
	*"HTTP/1."*) fail "mTLS: openssl s_client without a certificate got an HTTP answer" ;;
	*) pass "mTLS: openssl s_client without a certificate gets no HTTP answer" ;;
	esac
fi
cat >"$work/mtls-opt.yml" <<EOF
tls_server_config:
  cert_file: $certs/server.crt
  key_file: $certs/server.key
  client_auth_type: VerifyClientCertIfGiven
  client_ca_file: $certs/ca.crt
EOF
if start_exporter --web.config.file="$work/mtls-opt.yml"; then
	eq "VerifyClientCertIfGiven: no certificate" "$(code --cacert "$certs/ca.crt" "$tbase/metrics")" 200
	eq "VerifyClientCertIfGiven: right certificate" \
		"$(code --cacert "$certs/ca.crt" --cert "$certs/client.crt" --key "$certs/client.key" "$tbase/metrics")" 200
	eq "VerifyClientCertIfGiven: certificate of another CA" \
		"$(code --cacert "$certs/ca.crt" --cert "$certs/rogue.crt" --key "$certs/rogue.key" "$tbase/metrics")" 000
	# switching TLS off needs a restart: refused, logged, TLS still served
	printf 'basic_auth_users: {}\n' >"$work/mtls-opt.yml"
	sleep 1.2
	eq "switching TLS off on reload is refused" "$(code --cacert "$certs/ca.crt" "$tbase/metrics")" 200
	grep -q 'switching TLS on or off needs a restart.*tls=off' "$log" && pass "the refused TLS switch is logged" ||
		fail "refused TLS switch not logged"
fi

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
	# root with only the four capabilities, as the Kubernetes DaemonSet runs it: no
	# CAP_SETUID to become nobody, so it stays root with those four, and serves
	if ! command -v setpriv >/dev/null; then
		skip "root without CAP_SETUID" "setpriv (util-linux) not installed"
	elif wrap=(setpriv --bounding-set "-all,+sys_ptrace,+dac_read_search,+fowner,+checkpoint_restore" --) &&
		start_exporter; then
		wrap=()
		eq "root without CAP_SETUID stays root" "$(awk '/^Uid:/ { print $2 }' /proc/$exporter_pid/status)" 0
		eq "root without CAP_SETUID keeps the four capabilities" \
			"$(awk '/^CapEff:/ { print $2 }' /proc/$exporter_pid/status)" 000001000008000c
		eq "root without CAP_SETUID serves" "$(code "$base/metrics")" 200
		grep -q 'without CAP_SETUID and CAP_SETGID' "$log" && pass "staying root is logged" ||
			fail "staying root is not logged"
	fi
	if start_exporter --no-security.drop-privileges; then
		eq "--no-security.drop-privileges keeps root" "$(awk '/^Uid:/ { print $2 }' /proc/$exporter_pid/status)" 0
	fi
fi

# ==== file safety in configured paths ====
if [ "$(id -u)" -ne 0 ] || ! mkdir "$cg2/cse-hard-$$" 2>/dev/null; then
	skip "file safety" "needs a writable cgroup v2 at $cg2"
else
	cgdir=$cg2/cse-hard-$$
	d=$work/tree
	mkdir -p "$d/sub/deeper" "$work/outside"
	for f in a b sub/c sub/deeper/d; do head -c 5000 /dev/urandom >"$d/$f"; done
	head -c 5000 /dev/urandom >"$work/outside/secret"
	mkfifo "$d/fifo"                      # opening it for reading would block without O_NONBLOCK
	mknod "$d/null" c 1 3                 # a device: never opened
	ln -s loop "$d/loop"                  # a symlink loop
	ln -s . "$d/sub/self"                 # a directory symlink back up
	ln -s "$work/outside" "$d/escape"     # out of the configured directory
	ln -s "$work/outside/secret" "$d/secret-link"
	ln -s "$work/outside" "$d/sub/out"         # matched by the glob below: not followed
	printf '{ "cgroups": [ { "match": "/cse-hard-%s", "paths": ["%s", "%s/*"] } ] }\n' \
		"$$" "$d" "$d/sub" >"$work/files.json"
	# every file of the cgroup named (the default names only the host's top 20)
	if start_exporter --config.file="$work/files.json" --collector.perfile.cgroup-top=100; then
		start=$SECONDS
		curl -s -m 20 "$base/metrics" >"$work/files.prom"
		took=$((SECONDS - start))
		[ "$took" -lt 10 ] && pass "scrape over a FIFO, a device and symlink loops returns (${took}s)" ||
			fail "scrape took ${took}s"
		eq "only the 4 regular files of the directory are counted" \
			"$(sed -n "s|^cachestat_cgroup_files{cgroup=\"/cse-hard-$$\"} ||p" "$work/files.prom")" 4
		grep -q 'path="[^"]*secret' "$work/files.prom" &&
			fail "a file out of the configured directory was reported" ||
			pass "nothing out of the configured directory is reported"
		grep -q "path=\"$d/sub/deeper/d\"" "$work/files.prom" &&
			pass "a file deep in the directory is reported by its path" || fail "deep file missing"
		kill -0 "$exporter_pid" 2>/dev/null && no_http_death && pass "still running" || fail "the exporter died"
	fi
fi

# ==== --web.max-connections: the listener's own limit ====
if start_exporter --web.max-connections=3 --web.max-connections-per-ip=0; then
	"$py" - "$port" >"$work/maxconn.out" 2>&1 <<'EOF2'
import socket, sys, time
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(3)]
time.sleep(0.3)
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
try:
    r = s.recv(64)
except OSError:
    r = b""
print("fourth", "answered" if r.startswith(b"HTTP/") else "refused")
for h in held:
    h.close()
status = ""
for _ in range(50):  # the server notices the closes within moments
    time.sleep(0.1)
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    try:
        status = s.recv(64).split(b"\r\n", 1)[0].decode()
    except OSError:
        status = ""
    if status:
        break
print("after", status)
EOF2
	eq "past --web.max-connections a connection is refused" "$(sed -n 's/^fourth //p' "$work/maxconn.out")" refused
	eq "once connections close, scrapes are answered again" "$(sed -n 's/^after //p' "$work/maxconn.out")" "HTTP/1.1 200 OK"
fi

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
	# shellcheck disable=SC2034 # read by start_exporter (tests/lib/tap.sh)
	wrap=()
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

# ==== hostile processes and file systems: page cache oracle, check-then-open race, hung FUSE,
# ==== fair scan budget, one-to-one labels
# Each case runs the exporter over its own cgroup subtree (--path.cgroupfs), so that the scans
# see the test's processes only.
hostile=$work/hostile # a copy nobody can read (above)
hostile_cgroups=()
hostile_pids=()
hostile_cleanup() {
	local p c
	for p in "${hostile_pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
	for p in "${hostile_pids[@]}"; do wait "$p" 2>/dev/null; done
	hostile_pids=()
	for c in "${hostile_cgroups[@]}"; do
		# the processes they forked too (cgroup.kill: every process of the subtree)
		echo 1 >"$c/cgroup.kill" 2>/dev/null
		for _ in $(seq 50); do
			[ -z "$(find "$c" -name cgroup.procs -exec cat {} + 2>/dev/null)" ] && break
			sleep 0.1
		done
		find "$c" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
		rmdir "$c" 2>/dev/null || echo "  | could not remove $c"
	done
	hostile_cgroups=()
}
# hostile_tree NAME: a fresh cgroup subtree for one case, in $sub (not a subshell: the list of
# subtrees to remove is kept here)
hostile_tree() {
	sub=$cg2/cse-$1-$$
	mkdir "$sub" || return 1
	hostile_cgroups+=("$sub")
}
# in_cgroup CGROUP CMD...: runs CMD in the background inside CGROUP (sets $!)
in_cgroup() {
	local cg=$1
	shift
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$@" &
	hostile_pids+=($!)
}
as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
# no_dup_series FILE WHAT: the exposition has no series twice
no_dup_series() {
	if "$py" "$hostile/dupseries.py" "$1" >"$work/dups.out"; then
		pass "$2: no duplicate series"
	else
		fail "$2: duplicate series"
		sed 's/^/  | /' "$work/dups.out"
	fi
}

# 1. Page cache oracle: an unprivileged process holding root's files (O_PATH, read-only, mapped)
# must not make the exporter publish their page cache. The oracle is the kernel: the holder
# calls cachestat(2) on its own descriptors (mincore's rule, owner or writer, for mappings);
# exactly the files it may ask about are reported.
hostile_oracle() {
	local sub d=$work/orc expected got files
	hostile_tree oracle && mkdir "$sub/h" || { fail "oracle: no cgroup"; return; }
	mkdir -p "$d" "$work/orc-run" && chown 65534 "$work/orc-run"
	for f in secret public worldw own pubmap ownmap; do head -c 65536 /dev/urandom >"$d/$f"; done
	chmod 600 "$d/secret"
	chmod 644 "$d/public" "$d/pubmap" "$d/own" "$d/ownmap"
	chmod 666 "$d/worldw"
	chown 65534 "$d/own" "$d/ownmap"
	cat "$d"/* >/dev/null # all cached
	in_cgroup "$sub/h" "${as_nobody[@]}" "$py" "$hostile/holder.py" "$work/orc-run/ready" \
		"opath:$d/secret" "rdonly:$d/public" "rdonly:$d/worldw" "rdonly:$d/own" \
		"map:$d/pubmap" "map:$d/ownmap" </dev/null >/dev/null 2>"$work/orc-run/err"
	for _ in $(seq 100); do [ -e "$work/orc-run/ready" ] && break; sleep 0.05; done
	[ -e "$work/orc-run/ready" ] || { fail "oracle: holder did not start"; cat "$work/orc-run/err"; return; }
	sed 's/^/  | kernel says: /' "$work/orc-run/ready"
	expected=$(sed -n 's/^allowed //p' "$work/orc-run/ready" | sort | tr '\n' ' ')
	printf '{ "per_file_top": 100 }\n' >"$work/orc.json"
	start_exporter --path.cgroupfs="$sub" --config.file="$work/orc.json" \
		--collector.perfile.families=cached,size || return
	curl -s "$base/metrics" >"$work/orc.prom"
	got=$(sed -n "s|^cachestat_file_size_bytes{cgroup=\"/h\",path=\"\\($d/[^\"]*\\)\"}.*|\\1|p" \
		"$work/orc.prom" | sort | tr '\n' ' ')
	eq "oracle: the files reported are those the holder may ask cachestat about" "$got" "$expected"
	files=$(sed -n 's|^cachestat_cgroup_files{cgroup="/h"} ||p' "$work/orc.prom")
	# and its stderr file, which it holds open for writing
	eq "oracle: nothing else of the holder is counted (its binary and libraries are root's)" \
		"$files" "$(($(grep -c '^allowed ' "$work/orc-run/ready") + 1))"
	grep -q "path=\"$d/secret\"" "$work/orc.prom" && fail "oracle: the O_PATH secret is published" ||
		pass "oracle: the file held by O_PATH only is not published"
	no_dup_series "$work/orc.prom" "oracle"
	stop_exporter
	hostile_cleanup
}

# 2. Check-then-open race: descriptors 100-103 swap between O_PATH descriptors of a regular file,
# a root-only device node and a FIFO (and, in a second process, a regular file held read-only);
# inotify counts every open of the device and the FIFO.
hostile_race() {
	local sub d=$work/race out n
	if ! cc -O2 -o "$work/racer" "$hostile/racer.c"; then fail "racer.c does not build"; return; fi
	hostile_tree race && mkdir "$sub/r" || { fail "race: no cgroup"; return; }
	mkdir -p "$d"
	head -c 65536 /dev/urandom >"$d/regular"
	mknod -m 600 "$d/device" c 1 3
	mkfifo -m 600 "$d/fifo"
	# a configured directory anyone may write to, where a name flips between a file and a FIFO
	mkdir -m 1777 "$d/swap"
	mkfifo "$d/swap/p"
	head -c 4096 /dev/urandom >"$d/swap/r"
	chown 65534 "$d/swap/p" "$d/swap/r"
	"$py" - "$d/device" "$d/fifo" "$d/swap/p" "$work/race.stop" >"$work/race.watch" <<'EOF' &
import ctypes, os, select, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
ino = libc.inotify_init1(os.O_NONBLOCK)
IN_OPEN = 0x20
wd = {libc.inotify_add_watch(ino, p.encode(), IN_OPEN): p for p in sys.argv[1:-1]}
opens = {p: 0 for p in sys.argv[1:-1]}
print("watching", flush=True)
while not os.path.exists(sys.argv[-1]):
    select.select([ino], [], [], 0.2)
    try:
        buf = os.read(ino, 65536)
    except BlockingIOError:
        continue
    i = 0
    while i < len(buf):
        w, mask, _, n = struct.unpack_from("iIII", buf, i)
        if mask & IN_OPEN:
            opens[wd[w]] += 1
        i += 16 + n
for p in sys.argv[1:-1]:
    print("opens", os.path.basename(p), opens[p])
EOF
	local watcher=$!
	for _ in $(seq 100); do grep -q watching "$work/race.watch" && break; sleep 0.05; done
	in_cgroup "$sub/r" "${as_nobody[@]}" "$work/racer" "$d/regular" "$d/device" "$d/fifo" \
		>"$work/racer.out" 2>&1 </dev/null
	# and one holding its own file read-only, which it may ask cachestat about: the scan gets
	# past the permission check to the open, in the middle of the swaps
	head -c 65536 /dev/urandom >"$d/own"
	chown 65534 "$d/own"
	in_cgroup "$sub/r" "${as_nobody[@]}" "$work/racer" "$d/own" "$d/device" "$d/fifo" rdonly \
		>"$work/racer2.out" 2>&1 </dev/null
	in_cgroup "$sub/r" "${as_nobody[@]}" "$py" -c '
import os, sys
os.chdir(sys.argv[1])
while True:
    for n in ("r", "p"):
        os.rename(n, "f")
        os.rename("f", n)' "$d/swap"
	for _ in $(seq 100); do grep -q ready "$work/racer.out" && grep -q ready "$work/racer2.out" && break; sleep 0.05; done
	printf '{ "cgroups": [ { "match": "/r", "paths": ["%s"] } ] }\n' "$d/swap" >"$work/race.json"
	if start_exporter --path.cgroupfs="$sub" --config.file="$work/race.json"; then
		out=$("$py" - "$port" <<'EOF'
import http.client, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
ok, t = 0, time.time()
for _ in range(1000):
    c.request("GET", "/metrics")
    r = c.getresponse()
    r.read()
    ok += r.status == 200
print(ok, round(time.time() - t, 1))
EOF
)
		echo "  | 1000 scrapes: ${out#* } s"
		eq "race: 1000 scrapes answered" "${out%% *}" 1000
	fi
	touch "$work/race.stop"
	wait "$watcher"
	sed 's/^/  | /' "$work/race.watch"
	n=$(awk '$1 == "opens" && $2 == "device" { print $3 }' "$work/race.watch")
	eq "race: opens of the root-only device in 1000 scrapes" "$n" 0
	n=$(awk '$1 == "opens" && $2 == "fifo" { print $3 }' "$work/race.watch")
	eq "race: opens of the FIFO in 1000 scrapes" "$n" 0
	n=$(awk '$1 == "opens" && $2 == "p" { print $3 }' "$work/race.watch")
	eq "race: opens of the FIFO swapped into a configured directory in 1000 scrapes" "$n" 0
	stop_exporter
	hostile_cleanup
}

# 3. A FUSE file system that stops answering (bindfs, SIGSTOP): with the default flags, a scan
# touches nothing on it, neither a file a process holds open there nor a configured path.
hostile_fuse() {
	local sub src=$work/fuse-src mnt=$work/fuse-mnt bindfs_pid start took rc n
	if ! command -v bindfs >/dev/null; then skip "FUSE: bindfs not installed"; return; fi
	hostile_tree fuse && mkdir "$sub/f" || { fail "FUSE: no cgroup"; return; }
	mkdir -p "$src" "$mnt"
	head -c 65536 /dev/urandom >"$src/data"
	bindfs -f "$src" "$mnt" 2>"$work/bindfs.err" &
	bindfs_pid=$!
	for _ in $(seq 100); do [ -e "$mnt/data" ] && break; sleep 0.05; done
	[ -e "$mnt/data" ] || { fail "FUSE: bindfs did not mount"; cat "$work/bindfs.err"; kill "$bindfs_pid"; return; }
	in_cgroup "$sub/f" sleep 1000 3<"$mnt/data"
	printf '{ "cgroups": [ { "match": "/f", "paths": ["%s", "%s/*"] } ] }\n' "$mnt" "$mnt" >"$work/fuse.json"
	sleep 0.2
	kill -STOP "$bindfs_pid"
	start=$(date +%s%N)
	timeout -k 2 20 "$bin" --once --path.cgroupfs="$sub" --config.file="$work/fuse.json" \
		>"$work/fuse.prom" 2>"$work/fuse.log"
	rc=$?
	took=$((($(date +%s%N) - start) / 1000000))
	kill -CONT "$bindfs_pid"
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		fail "FUSE: a scan with the daemon stopped hung (killed after 20 s)"
	else
		pass "FUSE: a scan with the daemon stopped finishes (${took} ms, exit $rc)"
	fi
	n=$(sed -n 's/^cachestat_files_skipped_total{reason="fs_type"} //p' "$work/fuse.prom")
	[ "${n:-0}" -ge 2 ] && pass "FUSE: the held file and the configured path are skipped for their fs type ($n)" ||
		fail "FUSE: skipped{reason=fs_type} is '$n', want >= 2"
	grep -q "path=\"$mnt" "$work/fuse.prom" && fail "FUSE: a file on FUSE was reported" ||
		pass "FUSE: nothing on FUSE is reported"
	hostile_cleanup
	fusermount -u "$mnt" 2>/dev/null
	kill "$bindfs_pid" 2>/dev/null
	wait "$bindfs_pid" 2>/dev/null
}

# 3b. FUSE below an overlay: overlayfs checks permission on the real inode with the mounter's
# credentials, so opening a file of the overlay asks the FUSE daemon below it, whatever
# --no-allow-other says. With the daemon stopped, the scan must not open the overlay's files: the
# overlay is excluded for its layer's type, whether the layer is named by an absolute path or by
# one relative to the mounter's working directory (mountinfo then cannot place it).
hostile_fuse_overlay() {
	local src=$work/fo-src d=$work/fo mnt=$work/fo/fuse bindfs_pid rc n
	if ! command -v bindfs >/dev/null; then skip "FUSE below overlay: bindfs not installed"; return; fi
	hostile_tree fuseovl && mkdir "$sub/abs" "$sub/rel" || { fail "FUSE below overlay: no cgroup"; return; }
	mkdir -p "$src/l" "$mnt" "$d/top" "$d/abs" "$d/rel"
	head -c 65536 /dev/urandom >"$src/l/data.bin"
	bindfs -f --no-allow-other "$src" "$mnt" 2>"$work/fo-bindfs.err" &
	bindfs_pid=$!
	for _ in $(seq 100); do [ -e "$mnt/l/data.bin" ] && break; sleep 0.05; done
	if ! [ -e "$mnt/l/data.bin" ]; then
		fail "FUSE below overlay: bindfs did not mount"
		kill "$bindfs_pid"
		hostile_cleanup
		return
	fi
	mount -t overlay overlay -o "lowerdir=$d/top:$mnt/l" "$d/abs" &&
		(cd "$d" && mount -t overlay overlay -o lowerdir=top:fuse/l rel) ||
		{ fail "FUSE below overlay: overlay mounts"; kill "$bindfs_pid"; hostile_cleanup; return; }
	in_cgroup "$sub/abs" sleep 1000 3<"$d/abs/data.bin"
	in_cgroup "$sub/rel" sleep 1000 3<"$d/rel/data.bin"
	sleep 0.3
	kill -STOP "$bindfs_pid"
	timeout -k 2 20 "$bin" --once --path.cgroupfs="$sub" >"$work/fo.prom" 2>"$work/fo.log"
	rc=$?
	kill -CONT "$bindfs_pid"
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		fail "FUSE below overlay: a scan with the daemon stopped hung (killed after 20 s)"
	else
		pass "FUSE below overlay: a scan with the daemon stopped finishes (exit $rc)"
	fi
	grep -q "path=\"$d/" "$work/fo.prom" && fail "FUSE below overlay: a file of the overlays was reported" ||
		pass "FUSE below overlay: no file of the overlays is reported"
	n=$(sed -n 's/^cachestat_files_skipped_total{reason="fs_type"} //p' "$work/fo.prom")
	eq "FUSE below overlay: both held files skipped for their layer's fs type" "${n:-0}" 2
	hostile_cleanup
	umount "$d/abs" "$d/rel" 2>/dev/null
	fusermount -u "$mnt" 2>/dev/null
	kill "$bindfs_pid" 2>/dev/null
	wait "$bindfs_pid" 2>/dev/null
}

# 7. Fair scan budget: a cgroup whose processes hold 600,000 descriptors of one file, walked
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
	[ -n "${name:-}" ] || { skip "fair: no hog name listed first"; hostile_cleanup; return; }
	head -c 4096 /dev/urandom >"$work/fair-file"
	# 30 processes of 19,900 descriptors each (RLIMIT_NOFILE may not be raised here)
	in_cgroup "$sub/$name" "$py" -c '
import os, resource, sys, time
n = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 20000) - 100
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 100, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
fd = os.open(sys.argv[1], os.O_RDONLY)
for i in range(100, n + 100):
    os.dup2(fd, i)
for _ in range(29):
    if os.fork() == 0:
        break
else:
    open(sys.argv[2], "w").close()
time.sleep(1000)' "$work/fair-file" "$work/fair.ready"
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

# 10. Labels one-to-one: cgroups named c<0xff> and c\xff (a backslash), and a real file named
# like the suffix that tells two deleted files of the same name apart.
hostile_labels() {
	local sub d=$work/lbl n want
	hostile_tree labels || { fail "labels: no cgroup"; return; }
	mkdir "$sub/c"$'\xff' "$sub/c\\xff" "$sub/p" || { fail "labels: cannot name cgroups"; return; }
	in_cgroup "$sub/c"$'\xff' sleep 1000
	in_cgroup "$sub/c\\xff" sleep 1000
	mkdir -p "$d"
	echo one >"$d/x"
	echo "real file" >"$d/x (deleted) (2)"
	echo odd >"$d/"$'b\\x\xffy'
	in_cgroup "$sub/p" sh -c 'exec 3<"$1/x"; rm "$1/x"; echo two >"$1/x"; exec 4<"$1/x"; rm "$1/x";
		exec 5<"$1/x (deleted) (2)" 6<"$1/$2"; exec sleep 1000' sh "$d" $'b\\x\xffy'
	sleep 0.3
	printf '{ "per_file_top": 100 }\n' >"$work/lbl.json"
	"$bin" --once --path.cgroupfs="$sub" --config.file="$work/lbl.json" --collector.perfile.families=size \
		--collector.perfile.unlinked=keep >"$work/lbl.prom" 2>/dev/null
	n=$(grep -c '^cachestat_cgroup_files{cgroup="/c' "$work/lbl.prom")
	eq "labels: the two c-cgroups have two series" "$n" 2
	n=$(grep -c "^cachestat_file_size_bytes{cgroup=\"/p\",path=\"$d/x" "$work/lbl.prom")
	eq "labels: two deleted files and the real one have three series" "$n" 3
	no_dup_series "$work/lbl.prom" "labels"
	# the label of a name with a backslash and a byte that is not UTF-8, worked out apart from
	# the exporter: the backslash doubled, the byte as the text \xff, then the format's escapes
	want=$("$py" -c '
import sys
name, out, i = sys.argv[1].encode("utf-8", "surrogateescape"), "", 0
while i < len(name):
    if name[i] == 0x5c:
        out, i = out + "\\\\", i + 1
        continue
    for n in (1, 2, 3, 4):
        try:
            out, i = out + name[i:i + n].decode("utf-8"), i + n
            break
        except UnicodeDecodeError:
            pass
    else:
        out, i = out + "\\x%02x" % name[i], i + 1
print(out.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n"))' "$d/"$'b\\x\xffy')
	grep -qF "path=\"$want\"" "$work/lbl.prom" && pass "labels: an odd name reads as worked out ($want)" ||
		fail "labels: no path label $want"
	if command -v promtool >/dev/null; then
		promtool check metrics <"$work/lbl.prom" >"$work/lbl.promtool" 2>&1 &&
			pass "labels: promtool check metrics" || { fail "labels: promtool"; cat "$work/lbl.promtool"; }
	fi
	hostile_cleanup
}

# 8. Borrowed identity: a user who owns a delegated cgroup names its children like a pod, a
# container or a rootless container of another user. The oracle is the cgroups' owners (stat):
# below one root does not own, no runtime's or pod's name is believed, but rootless podman's
# below user@UID.service; the same names in root-owned cgroups are.
hostile_borrowed() {
	local sub id=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
	local uid_=5d3a3f2e_8b1c_4e0a_9f6d_2c7b1a0e9d84 uid=5d3a3f2e-8b1c-4e0a-9f6d-2c7b1a0e9d84
	local pod ctl user
	hostile_tree borrowed || { fail "borrowed: no cgroup"; return; }
	pod=deleg.slice/deleg-kubepods.slice/deleg-kubepods-besteffort.slice/deleg-kubepods-besteffort-pod$uid_.slice
	ctl=ctl.slice/ctl-kubepods.slice/ctl-kubepods-besteffort.slice/ctl-kubepods-besteffort-pod$uid_.slice
	user=user.slice/user-65534.slice/user@65534.service
	mkdir -p "$sub/$pod" "$sub/deleg-docker/docker-$id.scope" "$sub/$ctl" "$sub/root-docker/docker-$id.scope" \
		"$sub/$user/user.slice/libpod-$id.scope" "$sub/user.slice/user-65534.slice/x.service/libpod-$id.scope" ||
		{ fail "borrowed: cgroups"; hostile_cleanup; return; }
	chown -R 65534 "$sub/deleg.slice/deleg-kubepods.slice" "$sub/deleg-docker" "$sub/$user" \
		"$sub/user.slice/user-65534.slice/x.service"
	"$bin" --once --path.cgroupfs="$sub" >"$work/borrowed.prom" 2>/dev/null
	borrowed_info() { grep "^cachestat_cgroup_info{cgroup=\"/$1\"[,}]" "$work/borrowed.prom"; }
	borrowed_info "$pod" | grep -q pod_uid= && fail "borrowed: a pod UID below a user's cgroup is believed" ||
		pass "borrowed: no pod UID below a user's cgroup"
	borrowed_info "$ctl" | grep -q "pod_uid=\"$uid\"" && pass "borrowed: the same names root made give the pod UID" ||
		fail "borrowed: the root-owned pod slice has no pod UID"
	borrowed_info "deleg-docker/docker-$id.scope" | grep -q container_id= &&
		fail "borrowed: a container id below a user's cgroup is believed" ||
		pass "borrowed: no container id below a user's cgroup"
	borrowed_info "root-docker/docker-$id.scope" | grep -q "container_runtime=\"docker\",container_id=\"$id\"" &&
		pass "borrowed: the same scope root made is docker's" || fail "borrowed: the root-owned scope has no id"
	borrowed_info "$user/user.slice/libpod-$id.scope" |
		grep -q "container_runtime=\"podman\",container_id=\"$id\",rootless_uid=\"65534\"" &&
		pass "borrowed: rootless podman below user@65534.service, with its uid" ||
		fail "borrowed: rootless podman not recognised: $(borrowed_info "$user/user.slice/libpod-$id.scope")"
	borrowed_info "user.slice/user-65534.slice/x.service/libpod-$id.scope" | grep -q container_id= &&
		fail "borrowed: a podman scope below a user's other service is believed" ||
		pass "borrowed: no container below a user's service that is not its manager"
	no_dup_series "$work/borrowed.prom" "borrowed"
	hostile_cleanup
}

if [ "$(id -u)" -ne 0 ] || ! [ -w "$cg2" ] || ! command -v setpriv >/dev/null; then
	skip "hostile processes" "need root, a writable cgroup v2 at $cg2 and setpriv"
else
	trap 'hostile_cleanup; cleanup' EXIT
	for t in ${HOSTILE_CASES:-oracle race fuse fuse_overlay fair labels borrowed}; do "hostile_$t"; done
fi

# ==== serving under attack: a hung file system, slow clients, auth, self metrics ====
# Each case below failed on the code before the scheduler and epoll changes (see the
# exporter README's hardening sections).

# metric NAME FILE: the value of an unlabelled sample
metric() { sed -n "s/^$1 //p" "$2" | head -n 1; }
# elapsed CMD...: runs CMD, prints its status line and the seconds it took, from curl itself
timed_code() { curl -s -o "$work/timed.out" -w '%{http_code} %{time_total}' "$@"; }

fuse_pid='' fuse_mnt=''
fuse_cleanup() {
	[ -n "$fuse_pid" ] && kill -CONT "$fuse_pid" 2>/dev/null
	[ -n "$fuse_mnt" ] && { fusermount -u "$fuse_mnt" 2>/dev/null || umount -l "$fuse_mnt" 2>/dev/null; }
	fuse_pid='' fuse_mnt=''
}

# A FUSE file system (bindfs) whose daemon is stopped while a process holds a file in it
# open and the config names it: scrapes answer within their timeout with the last complete
# snapshot, the hung scan is left behind (at most two scanner threads), the scans after it skip
# the mount it waits on (quarantine, logged once) and end, and all recovers on SIGCONT.
hard_hung_fuse() {
	local holder t code secs age threads0 threads1 stuck
	if ! command -v bindfs >/dev/null; then
		skip "hung FUSE" "bindfs is not installed (exporter/deps.txt)"
		return
	fi
	if [ "$(id -u)" -ne 0 ]; then
		skip "hung FUSE" "mounting needs root"
		return
	fi
	mkdir -p "$work/fuse-src" "$work/fuse-mnt"
	head -c 65536 /dev/urandom >"$work/fuse-src/data"
	chmod -R a+rX "$work/fuse-src"
	if ! bindfs -o allow_other "$work/fuse-src" "$work/fuse-mnt"; then
		skip "hung FUSE" "bindfs could not mount"
		return
	fi
	fuse_mnt=$work/fuse-mnt
	fuse_pid=$(pgrep -n -x bindfs)
	sh -c 'exec 3<"$1"; exec sleep 600' sh "$fuse_mnt/data" &
	holder=$!
	printf '{ "cgroups": [ { "match": "/", "paths": ["%s"] } ], "per_file_top": 10000, "limits": { "max_scan_seconds": 1 } }\n' \
		"$fuse_mnt" >"$work/fuse.json"
	# the default excludes FUSE: this case is about a scan that does touch a hung mount
	if start_exporter --config.file="$work/fuse.json" --collector.cachestat.fs-types-exclude=; then
		eq "hung FUSE: a scrape before the hang" "$(code -m 20 "$base/metrics")" 200
		threads0=$(awk '/^Threads:/ { print $2 }' "/proc/$exporter_pid/status")
		kill -STOP "$fuse_pid"
		t=(-m 6 -H 'X-Prometheus-Scrape-Timeout-Seconds: 2' "$base/metrics")
		read -r code secs <<<"$(timed_code "${t[@]}")"
		eq "hung FUSE: a scrape with a 2 s timeout is answered" "$code" 200
		echo "$secs < 2" | bc | grep -q 1 && pass "hung FUSE: within the timeout (${secs}s)" ||
			fail "hung FUSE: took ${secs}s"
		grep -q '^cachestat_build_info' "$work/timed.out" && pass "hung FUSE: the last snapshot is served" ||
			fail "hung FUSE: no snapshot in the answer"
		sleep 3.2 # past max_scan_seconds (1) + the 2 s margin: the hung scan is stuck
		for _ in 1 2 3 4 5; do
			read -r code secs <<<"$(timed_code "${t[@]}")"
			[ "$code" = 200 ] || break
		done
		eq "hung FUSE: scrapes keep being answered" "$code" 200
		# the scans after the stuck one skip the mount it waits on (quarantine) and end
		age=$(metric cachestat_snapshot_age_seconds "$work/timed.out")
		echo "${age:-99} < 2" | bc | grep -q 1 &&
			pass "hung FUSE: the scans beside the stuck one end: a fresh snapshot (${age}s)" ||
			fail "hung FUSE: the snapshot is ${age}s old: the scans after the stuck one do not end"
		n=$(sed -n 's/^cachestat_files_skipped_total{reason="mount_stuck"} //p' "$work/timed.out")
		[ "${n:-0}" -ge 1 ] && pass "hung FUSE: the stuck mount's file is skipped as mount_stuck ($n)" ||
			fail "hung FUSE: skipped{reason=mount_stuck} is '${n}'"
		grep -q "path=\"$fuse_mnt/data\"" "$work/timed.out" &&
			fail "hung FUSE: the file of the stuck mount is reported" ||
			pass "hung FUSE: the file of the stuck mount is not reported meanwhile"
		eq "hung FUSE: the quarantine is logged once over 5 scrapes" \
			"$(grep -c 'has not answered a call' "$log")" 1
		stuck=$(metric cachestat_scans_stuck_total "$work/timed.out")
		eq "hung FUSE: the stuck scan is counted once" "$stuck" 1
		threads1=$(awk '/^Threads:/ { print $2 }' "/proc/$exporter_pid/status")
		# a scan is two threads: the scanner and, waiting on it, the one the scan runs in
		[ "$threads1" -le $((threads0 + 4)) ] &&
			pass "hung FUSE: at most two scans ($threads0 -> $threads1 threads)" ||
			fail "hung FUSE: threads grew from $threads0 to $threads1"
		kill -CONT "$fuse_pid"
		sleep 1
		read -r code secs <<<"$(timed_code -m 20 -H 'X-Prometheus-Scrape-Timeout-Seconds: 10' "$base/metrics")"
		eq "hung FUSE: after SIGCONT a scrape is answered" "$code" 200
		age=$(metric cachestat_snapshot_age_seconds "$work/timed.out")
		echo "${age:-99} < 1" | bc | grep -q 1 && pass "hung FUSE: after SIGCONT the snapshot is fresh (${age}s)" ||
			fail "hung FUSE: after SIGCONT the snapshot is ${age}s old"
		grep -q "path=\"$fuse_mnt/data\"" "$work/timed.out" &&
			pass "hung FUSE: the file on it is scanned again" || fail "hung FUSE: the file is missing"
		grep -q 'answers again' "$log" && pass "hung FUSE: the end of the quarantine is logged" ||
			fail "hung FUSE: the end of the quarantine is not logged"
		kill -0 "$exporter_pid" 2>/dev/null && no_http_death && pass "hung FUSE: still running" || fail "hung FUSE: the exporter died"
		stop_exporter
	fi
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
	fuse_cleanup
}

# 500 slow clients from 125 loopback addresses (4 each, under the per-address limit), each
# with half a request: a scrape from 127.0.0.1 and from 127.0.0.6 (one of theirs) is still
# answered within 1 s.
hard_slow_clients() {
	if ! start_exporter; then return; fi
	curl -s -o /dev/null "$base/metrics" # a first snapshot
	"$py" - "$port" >"$work/slow.out" 2>&1 <<'EOF'
import socket, sys, time
port = int(sys.argv[1])
held = []
for i in range(500):
    src = "127.0.0.%d" % (2 + i % 125)
    try:
        s = socket.create_connection(("127.0.0.1", port), source_address=(src, 0), timeout=5)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        held.append(s)
    except OSError:
        pass
print("held", len(held))
time.sleep(0.5)
for src in ("127.0.0.1", "127.0.0.6"):
    t = time.time()
    try:
        s = socket.create_connection(("127.0.0.1", port), source_address=(src, 0), timeout=5)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        status = data.split(b"\r\n", 1)[0].decode()
    except OSError as e:
        status = "error " + str(e)
    print("scrape", src, status.replace(" ", "_"), "%.2f" % (time.time() - t))
for s in held:
    s.close()
EOF
	sed 's/^/  | /' "$work/slow.out"
	eq "500 slow clients: connections held" "$(sed -n 's/^held //p' "$work/slow.out")" 500
	for src in 127.0.0.1 127.0.0.6; do
		read -r st secs <<<"$(sed -n "s/^scrape $src //p" "$work/slow.out")"
		eq "500 slow clients: a scrape from $src" "$st" "HTTP/1.1_200_OK"
		echo "${secs:-9} < 1" | bc | grep -q 1 && pass "500 slow clients: from $src within 1 s (${secs}s)" ||
			fail "500 slow clients: from $src took ${secs}s"
	done
	kill -0 "$exporter_pid" 2>/dev/null && no_http_death && pass "500 slow clients: still running" || fail "the exporter died"
	stop_exporter
}

# An IN_OPEN watch on a file the config names: a HEAD must open nothing (no scan), a GET does.
inotify_opens() { # inotify_opens FILE SECONDS CMD...: runs CMD, prints the opens of FILE seen
	local file=$1 secs=$2
	shift 2
	"$py" - "$file" "$secs" "$@" <<'EOF'
import ctypes, os, select, struct, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
libc.inotify_add_watch(fd, sys.argv[1].encode(), 0x20)  # IN_OPEN
subprocess.run(sys.argv[3:], stdout=subprocess.DEVNULL)
end, n = time.time() + float(sys.argv[2]), 0
while time.time() < end:
    if select.select([fd], [], [], max(0, end - time.time()))[0]:
        buf = os.read(fd, 4096)
        while buf:
            _, _, _, ln = struct.unpack("iIII", buf[:16])
            n, buf = n + 1, buf[16 + ln:]
print(n)
EOF
}

# Basic auth: the scheme name in any case, a password with a NUL, /metrics%00, HEAD without
# a scan, and the cost of wrong passwords (CPU time of the exporter, from /proc).
hard_auth() {
	local hash10 cpu0 cpu1 codes n hp
	mkdir -p "$work/headdir"
	echo x >"$work/headdir/watched"
	chmod -R a+rX "$work/headdir"
	printf '{ "cgroups": [ { "match": "/", "paths": ["%s"] } ] }\n' "$work/headdir" >"$work/head.json"
	hash10=$("$py" -W ignore -c 'import crypt; print(crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1024)))')
	printf "basic_auth_users:\n  alice: '%s'\n" "$hash10" >"$work/web10.yml"
	if ! start_exporter --web.config.file="$work/web10.yml" --config.file="$work/head.json"; then return; fi
	b64() { printf "$1" | base64 -w0; }
	eq "auth: scheme 'basic' in lower case" \
		"$(code -H "Authorization: basic $(b64 'alice:s3cret')" "$base/metrics")" 200
	eq "auth: scheme 'BASIC'" "$(code -H "Authorization: BASIC $(b64 'alice:s3cret')" "$base/metrics")" 200
	eq "auth: a password with a NUL after the right one" \
		"$(code -H "Authorization: Basic $(b64 'alice:s3cret\0x')" "$base/metrics")" 401
	eq "auth: /metrics%00" "$(code -u alice:s3cret "$base/metrics%00")" 404
	eq "auth: /metrics%2500 is not /metrics either" "$(code -u alice:s3cret "$base/metrics%2500")" 404
	stop_exporter

	# HEAD before any scan: the watched file is not opened; a GET then opens it
	if start_exporter --config.file="$work/head.json"; then
		n=$(inotify_opens "$work/headdir/watched" 1 curl -s -I "$base/metrics")
		eq "HEAD starts no scan (opens of a configured file)" "$n" 0
		n=$(inotify_opens "$work/headdir/watched" 1 curl -s -o /dev/null "$base/metrics")
		[ "$n" -ge 1 ] && pass "a GET scans (the watch sees $n opens)" || fail "the watch saw no open on GET"
		stop_exporter
	fi

	# 40 wrong passwords at once from 10 addresses, all different: bcrypt (cost 10) runs one
	# at a time and at most 5 a second plus a burst of 10; the rest get 429. Then the same
	# wrong password 40 times: cached, no bcrypt at all.
	if ! start_exporter --web.config.file="$work/web10.yml"; then return; fi
	hp=$(wait_http_child) || { fail "auth: no HTTP process"; return; } # bcrypt runs there
	cpu0=$(awk '{ print $14 + $15 }' "/proc/$hp/stat")
	codes=$(for i in $(seq 40); do
		code -m 20 --interface "127.0.0.$((2 + i % 10))" -u "alice:wrong$i" "$base/metrics" &
	done | fold -w 3 | sort | uniq -c | tr -s ' ' | tr '\n' ',')
	cpu1=$(awk '{ print $14 + $15 }' "/proc/$hp/stat")
	echo "  | 40 different wrong passwords: $codes CPU $((cpu1 - cpu0)) ticks"
	case "$codes" in *" 429"*) pass "auth: bcrypt is rate-limited (429)" ;; *) fail "auth: no 429 in $codes" ;; esac
	case "$codes" in *" 200"*) fail "auth: a wrong password got 200" ;; *) pass "auth: no wrong password let in" ;; esac
	# 40 runs of cost 10 would be over 2 s (200 ticks); the limit allows about 15
	[ $((cpu1 - cpu0)) -lt 150 ] && pass "auth: CPU for 40 wrong passwords $((cpu1 - cpu0)) ticks" ||
		fail "auth: 40 wrong passwords cost $((cpu1 - cpu0)) ticks of CPU"
	sleep 2.2 # the bucket refills
	code -u "alice:same-wrong" "$base/metrics" >/dev/null
	cpu0=$(awk '{ print $14 + $15 }' "/proc/$hp/stat")
	codes=$(for i in $(seq 40); do
		code -m 20 --interface "127.0.0.$((2 + i % 10))" -u "alice:same-wrong" "$base/metrics" &
	done | fold -w 3 | sort | uniq -c | tr -s ' ' | tr '\n' ',')
	cpu1=$(awk '{ print $14 + $15 }' "/proc/$hp/stat")
	eq "auth: the same wrong password 40 times" "$codes" " 40 401,"
	[ $((cpu1 - cpu0)) -lt 30 ] && pass "auth: a cached failure costs no bcrypt ($((cpu1 - cpu0)) ticks)" ||
		fail "auth: the same wrong password cost $((cpu1 - cpu0)) ticks"
	eq "auth: the right password still works" "$(code -u alice:s3cret "$base/metrics")" 200
	stop_exporter
}

# Self metrics against /proc, request counters against the requests made, and gzip.
hard_selfmetrics() {
	local fds rss rss_proc start start_proc n404 hp
	if ! start_exporter; then return; fi
	# the process_* series are the HTTP process's, which renders them
	hp=$(wait_http_child) || { fail "selfmetrics: no HTTP process"; return; }
	for _ in 1 2 3; do code "$base/nope" >/dev/null; done
	curl -s "$base/metrics" >"$work/self.prom"
	fds=$(metric process_open_fds "$work/self.prom")
	n=$(ls "/proc/$hp/fd" | wc -l)
	[ -n "$fds" ] && [ $((fds - n)) -le 2 ] && [ $((n - fds)) -le 2 ] &&
		pass "process_open_fds $fds (/proc: $n)" || fail "process_open_fds '$fds', /proc has $n"
	eq "process_max_fds" "$(metric process_max_fds "$work/self.prom")" \
		"$(awk '/^Max open files/ { print $4 }' "/proc/$hp/limits")"
	rss=$(metric process_resident_memory_bytes "$work/self.prom")
	rss_proc=$(awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$hp/status")
	[ -n "$rss" ] && echo "$rss > $rss_proc * 0.7 && $rss < $rss_proc * 1.3" | bc | grep -q 1 &&
		pass "process_resident_memory_bytes $rss (VmRSS $rss_proc)" || fail "process_resident_memory_bytes '$rss', VmRSS $rss_proc"
	start=$(metric process_start_time_seconds "$work/self.prom")
	start_proc=$(date -d "$(ps -o lstart= -p "$hp")" +%s)
	[ -n "$start" ] && echo "$start - $start_proc < 2 && $start_proc - $start < 2" | bc | grep -q 1 &&
		pass "process_start_time_seconds $start (ps: $start_proc)" || fail "process_start_time_seconds '$start', ps says $start_proc"
	grep -q '^process_cpu_seconds_total [0-9]' "$work/self.prom" && pass "process_cpu_seconds_total" ||
		fail "no process_cpu_seconds_total"
	grep -q '^process_virtual_memory_bytes [1-9]' "$work/self.prom" && pass "process_virtual_memory_bytes" ||
		fail "no process_virtual_memory_bytes"
	n404=$(sed -n 's/^cachestat_http_requests_total{code="404"} //p' "$work/self.prom")
	eq "cachestat_http_requests_total{code=\"404\"} counts the three 404s" "$n404" 3
	eq "cachestat_http_requests_in_flight counts this scrape" \
		"$(metric cachestat_http_requests_in_flight "$work/self.prom")" 1
	# gzip: negotiated, decodes to the same families
	enc=$(curl -s -D - -o "$work/self.gz" -H 'Accept-Encoding: gzip' "$base/metrics" | tr -d '\r' |
		sed -n 's/^Content-Encoding: //Ip')
	eq "gzip when the client accepts it" "$enc" gzip
	gzip -dc "$work/self.gz" >"$work/self.unz" 2>/dev/null
	grep -q '^cachestat_build_info' "$work/self.unz" && grep -q '^process_open_fds' "$work/self.unz" &&
		pass "the gzip body decodes to the metrics, both members" ||
		fail "the gzip body does not decode"
	stop_exporter
}

hard_privsep
hard_hung_fuse
hard_slow_clients
hard_auth
hard_selfmetrics
hard_tls_policy

stop_exporter
finish

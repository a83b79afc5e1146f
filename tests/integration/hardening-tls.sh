#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Hardening of the web config's TLS, on loopback: TLS (curl --cacert, TLS 1.2, 1.1 refused, a
# certificate rotated without a restart), client certificates required or verified if given
# (none, or one from another CA: the handshake fails), TLS switched off on reload refused; the
# TLS policy: a client certificate must be for client auth (extended key usage), ECDHE with
# AEAD ciphers by default, cipher_suites, curve_preferences, min_version and max_version, an
# unknown cipher suite an error naming its line. Certificates are made at test time with
# openssl in the work directory. A refusal passes only when curl ends with a TLS failure and the
# exporter logged the failed handshake: a server that is gone or not answering fails it.
# Ends with "N passed, N failed, N skipped" (tests/lib/tap.sh).
set -uo pipefail
# shellcheck source=tests/integration/lib-hardening.sh
. "$(dirname "$0")/lib-hardening.sh"

# The checks need an HTTP answer, not a scan of the host: each start's first scrape waits for a
# scan of --path.cgroupfs, and the host's whole tree, busy with builds, made that scan outlast the
# scrape's budget (503, or no answer at all). A cgroup of the suite's own, empty, scans at once.
if [ -w "$cg2" ] && mkdir "$cg2/cse-tls-$$" 2>/dev/null; then
	cgdir=$cg2/cse-tls-$$ # removed on exit (lib-hardening.sh)
	cg2=$cgdir
fi

# ---- a refused handshake, told from a server that is not answering ----
# Every exporter of this suite logs at debug level: libmicrohttpd's message for each failed
# handshake is the server's side of a refusal.
tls_start() { start_exporter --log.level=debug "$@"; }
handshake_failures() { grep -c 'msg=libmicrohttpd err=' "$log" 2>/dev/null; }
# refused WHAT CURL_ARGS...: passes when the request gets no HTTP answer because the server
# refused the TLS handshake: curl ends with a TLS failure (35 the handshake, 60 a certificate
# it does not trust; 52, 55 or 56 when TLS 1.3 refuses the client's certificate after the
# client's Finished, the alert meeting curl as it reads or sends), not 7 (nothing listens) or
# 28 (nothing answers), and the exporter logged one more failed handshake. A server gone or
# hung passes neither.
refused() {
	local what=$1 before got status
	shift
	before=$(handshake_failures)
	got=$(curl -s -o /dev/null --max-time 20 -w '%{http_code} %{exitcode}' "$@")
	status=${got#* }
	for _ in $(seq 50); do # the server logs once it has seen the alert or the close
		[ "$(handshake_failures)" -gt "$before" ] && break
		sleep 0.05
	done
	case "${got% *}:$status:$(($(handshake_failures) - before))" in
	000:35:[1-9]* | 000:60:[1-9]* | 000:52:[1-9]* | 000:55:[1-9]* | 000:56:[1-9]*)
		pass "$what (000, curl exit $status, the server logged the failed handshake)" ;;
	*)
		fail "$what: got HTTP ${got% *}, curl exit $status, $(($(handshake_failures) - before)) failed handshake(s) logged; want 000, a TLS failure, 1"
		sed 's/^/  | /' "$log" | grep -v 'skipped\|level=DEBUG source=skiplog' | tail -n 15 ;;
	esac
}

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

# ==== TLS ====
cat >"$work/tls.yml" <<EOF2
tls_server_config:
  cert_file: certs/server.crt
  key_file: certs/server.key
EOF2
tbase=https://127.0.0.1:$port
if tls_start --web.config.file="$work/tls.yml"; then
	eq "TLS: curl --cacert" "$(code --cacert "$certs/ca.crt" "$tbase/metrics")" 200
	eq "TLS: TLS 1.2" "$(code --cacert "$certs/ca.crt" --tls-max 1.2 "$tbase/metrics")" 200
	curl -s --cacert "$certs/ca.crt" "$tbase/metrics" -o "$work/tls.prom"
	grep -q '^cachestat_build_info' "$work/tls.prom" && pass "TLS: the metrics come through" ||
		fail "TLS: no metrics"
	refused "TLS: a client that does not trust the CA" "$tbase/metrics"
	eq "TLS: plain HTTP to the TLS port gets a 400" "$(code "$base/metrics")" 400
	curl -s "$base/metrics" | grep -q 'HTTP request to an HTTPS server' &&
		pass "TLS: the 400 says the server speaks HTTPS" || fail "TLS: the 400 does not say why"
	# TLS 1.1 is below the default min_version (TLS12)
	refused "TLS: TLS 1.1 refused" --cacert "$certs/ca.crt" --tlsv1.1 --tls-max 1.1 "$tbase/metrics"

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
hash=$(bcrypt s3cret)
cat >"$work/mtls.yml" <<EOF2
tls_server_config:
  cert_file: $certs/server.crt
  key_file: $certs/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: $certs/ca.crt
basic_auth_users:
  alice: '$hash'
EOF2
if tls_start --web.config.file="$work/mtls.yml"; then
	ok=(--cacert "$certs/ca.crt" --cert "$certs/client.crt" --key "$certs/client.key")
	eq "mTLS: right certificate and login" "$(code "${ok[@]}" -u alice:s3cret "$tbase/metrics")" 200
	eq "mTLS: right certificate, wrong login" "$(code "${ok[@]}" -u alice:nope "$tbase/metrics")" 401
	refused "mTLS: no client certificate, no HTTP answer" --cacert "$certs/ca.crt" -u alice:s3cret "$tbase/metrics"
	refused "mTLS: certificate of another CA" \
		--cacert "$certs/ca.crt" --cert "$certs/rogue.crt" --key "$certs/rogue.key" -u alice:s3cret "$tbase/metrics"
	# the same refusal through openssl: no certificate, no response, and the server saw the handshake
	before=$(handshake_failures)
	out=$(printf 'GET /metrics HTTP/1.0\r\n\r\n' | timeout 10 openssl s_client -connect 127.0.0.1:"$port" \
		-CAfile "$certs/ca.crt" -quiet 2>&1)
	for _ in $(seq 50); do [ "$(handshake_failures)" -gt "$before" ] && break; sleep 0.05; done
	case "$out" in
	*"HTTP/1."*) fail "mTLS: openssl s_client without a certificate got an HTTP answer" ;;
	*) if [ "$(handshake_failures)" -gt "$before" ]; then
		pass "mTLS: openssl s_client without a certificate gets no HTTP answer, the handshake failed"
	else
		fail "mTLS: openssl s_client got no HTTP answer, but the server logged no failed handshake"
	fi ;;
	esac
fi
cat >"$work/mtls-opt.yml" <<EOF2
tls_server_config:
  cert_file: $certs/server.crt
  key_file: $certs/server.key
  client_auth_type: VerifyClientCertIfGiven
  client_ca_file: $certs/ca.crt
EOF2
if tls_start --web.config.file="$work/mtls-opt.yml"; then
	eq "VerifyClientCertIfGiven: no certificate" "$(code --cacert "$certs/ca.crt" "$tbase/metrics")" 200
	eq "VerifyClientCertIfGiven: right certificate" \
		"$(code --cacert "$certs/ca.crt" --cert "$certs/client.crt" --key "$certs/client.key" "$tbase/metrics")" 200
	refused "VerifyClientCertIfGiven: certificate of another CA" \
		--cacert "$certs/ca.crt" --cert "$certs/rogue.crt" --key "$certs/rogue.key" "$tbase/metrics"
	# switching TLS off needs a restart: refused, logged, TLS still served
	printf 'basic_auth_users: {}\n' >"$work/mtls-opt.yml"
	sleep 1.2
	eq "switching TLS off on reload is refused" "$(code --cacert "$certs/ca.crt" "$tbase/metrics")" 200
	grep -q 'switching TLS on or off needs a restart.*tls=off' "$log" && pass "the refused TLS switch is logged" ||
		fail "refused TLS switch not logged"
fi

# ==== TLS policy ====
# The client certificate's purpose, ECDHE with AEAD ciphers by default, and the toolkit's
# cipher_suites, curve_preferences, min_version and max_version.
tls_policy_start() { # tls_policy_start CERT LINE...: starts the exporter on a web config
	local cert=$1
	shift
	{
		printf 'tls_server_config:\n  cert_file: %s.crt\n  key_file: %s.key\n' "$certs/$cert" "$certs/$cert"
		printf '  %s\n' "$@"
	} >"$work/policy.yml"
	tls_start --web.config.file="$work/policy.yml"
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
		refused "EKU: RequireAndVerifyClientCert, a serverAuth-only certificate is refused" \
			"${srvauth[@]}" "$turl"
	fi
	if tls_policy_start server "client_auth_type: VerifyClientCertIfGiven" "client_ca_file: $certs/ca.crt"; then
		eq "EKU: VerifyClientCertIfGiven, a clientAuth certificate" "$(code "${client[@]}" "$turl")" 200
		refused "EKU: VerifyClientCertIfGiven, a serverAuth-only certificate is refused" \
			"${srvauth[@]}" "$turl"
	fi
	if tls_policy_start rsa; then
		eq "ciphers: ECDHE-RSA with AES-GCM, TLS 1.2" \
			"$(code --cacert "$certs/ca.crt" --ciphers ECDHE-RSA-AES128-GCM-SHA256 --tls-max 1.2 "$turl")" 200
		refused "ciphers: a CBC suite is refused by default" "${cbc[@]}" "$turl"
		refused "ciphers: a static RSA key exchange is refused by default" \
			--cacert "$certs/ca.crt" --ciphers AES128-GCM-SHA256 --tls-max 1.2 "$turl"
	fi
	if tls_policy_start rsa "cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA]"; then
		eq "ciphers: the CBC suite listed in cipher_suites" "$(code "${cbc[@]}" "$turl")" 200
		eq "ciphers: TLS 1.3 stays on with cipher_suites" \
			"$(code --cacert "$certs/ca.crt" --tlsv1.3 "$turl")" 200
	fi
	if tls_policy_start server "min_version: TLS13" "curve_preferences: [CurveP384]"; then
		refused "min_version TLS13: a TLS 1.2 client is refused" \
			--cacert "$certs/ca.crt" --tls-max 1.2 "$turl"
		eq "curve_preferences [CurveP384]: a P-384 client" \
			"$(code --cacert "$certs/ca.crt" --curves P-384 "$turl")" 200
		refused "curve_preferences [CurveP384]: an X25519-only client is refused" \
			--cacert "$certs/ca.crt" --curves X25519 "$turl"
	fi
	if tls_policy_start server "max_version: TLS12"; then
		refused "max_version TLS12: a TLS 1.3 client is refused" \
			--cacert "$certs/ca.crt" --tlsv1.3 "$turl"
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

hard_tls_policy
stop_exporter
finish

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Hardening of the web config's TLS, on loopback: TLS (curl --cacert, TLS 1.2, 1.1 refused, a
# certificate rotated without a restart), client certificates required or verified if given
# (none, or one from another CA: the handshake fails), TLS switched off on reload refused; the
# TLS policy: a client certificate must be for client auth (extended key usage), ECDHE with
# AEAD ciphers by default, cipher_suites, curve_preferences, min_version and max_version, an
# unknown cipher suite an error naming its line. Certificates are made at test time with
# openssl in the work directory.
# Ends with "N passed, N failed, N skipped" (tests/lib/tap.sh).
set -uo pipefail
# shellcheck source=tests/integration/lib-hardening.sh
. "$(dirname "$0")/lib-hardening.sh"

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
if start_exporter --web.config.file="$work/tls.yml"; then
	eq "TLS: curl --cacert" "$(code --cacert "$certs/ca.crt" "$tbase/metrics")" 200
	eq "TLS: TLS 1.2" "$(code --cacert "$certs/ca.crt" --tls-max 1.2 "$tbase/metrics")" 200
	curl -s --cacert "$certs/ca.crt" "$tbase/metrics" -o "$work/tls.prom"
	grep -q '^cachestat_build_info' "$work/tls.prom" && pass "TLS: the metrics come through" ||
		fail "TLS: no metrics"
	eq "TLS: a client that does not trust the CA" "$(code "$tbase/metrics")" 000
	eq "TLS: plain HTTP to the TLS port gets a 400" "$(code "$base/metrics")" 400
	curl -s "$base/metrics" | grep -q 'HTTP request to an HTTPS server' &&
		pass "TLS: the 400 says the server speaks HTTPS" || fail "TLS: the 400 does not say why"
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
	out=$(printf 'GET /metrics HTTP/1.0\r\n\r\n' | timeout 10 openssl s_client -connect 127.0.0.1:"$port" \
		-CAfile "$certs/ca.crt" -quiet 2>&1)
	case "$out" in
	*"HTTP/1."*) fail "mTLS: openssl s_client without a certificate got an HTTP answer" ;;
	*) pass "mTLS: openssl s_client without a certificate gets no HTTP answer" ;;
	esac
fi
cat >"$work/mtls-opt.yml" <<EOF2
tls_server_config:
  cert_file: $certs/server.crt
  key_file: $certs/server.key
  client_auth_type: VerifyClientCertIfGiven
  client_ca_file: $certs/ca.crt
EOF2
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

hard_tls_policy
stop_exporter
finish

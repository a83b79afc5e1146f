#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The example web config (deploy/examples/web-config.yml, shipped under /usr/share/doc) against
# the parser of the exporter that ships it: loaded as it is, it serves TLS and basic auth; with
# its placeholder hash set, a scrape with the password gets the metrics and the header it names.
# Its cert_file and key_file are relative, so a certificate made here beside a copy of it is all
# it needs. scripts/check-package.sh runs it on the .deb's files.
#
# Usage: scripts/check-web-example.sh [WEB_CONFIG [BINARY]]
#   (default: deploy/examples/web-config.yml, exporter/cachestat_exporter)
# One line per check; the last line is "N passed, N failed, N skipped".
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"
example=$(realpath "${1:-$top/deploy/examples/web-config.yml}")
bin=$(realpath "${2:-$top/exporter/cachestat_exporter}")

cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$cg2" ] || skip_suite "no cgroup2 mount to scan"
for tool in openssl curl python3; do
	command -v "$tool" >/dev/null || skip_suite "no $tool (scripts/deps.txt)"
done
d=$(mktemp -d)
trap 'stop_exporter; rm -rf "$d"' EXIT
cp "$example" "$d/web-config.yml"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
	-keyout "$d/server.key" -out "$d/server.crt" -subj /CN=localhost \
	-addext 'subjectAltName=IP:127.0.0.1' >"$d/openssl.out" 2>&1 ||
	{ fail "openssl makes a test certificate: $(tail -n 1 "$d/openssl.out")"; finish; }
port=$(pick_port) log=$d/log
tls=(--cacert "$d/server.crt" "https://127.0.0.1:$port/metrics")
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

if start_exporter --web.config.file="$d/web-config.yml"; then
	check "as shipped: the start log says tls=on basic_auth=on" \
		grep -q 'msg="Listening on".* tls=on basic_auth=on' "$log"
	eq "as shipped: a scrape without credentials" "$(code "${tls[@]}")" 401
	eq "as shipped: its placeholder hash lets no password in" \
		"$(code -u prometheus:prometheus "${tls[@]}")" 401
	stop_exporter
fi

# the one line an operator must edit besides the files: the hash
hash=$(python3 -W ignore -c \
	'import crypt; print(crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))')
sed -i "s|^  prometheus: .*|  prometheus: '$hash'|" "$d/web-config.yml"
eq "with a hash set, the copy differs from the example in that line only" \
	"$(diff "$example" "$d/web-config.yml" | grep -c '^[<>]')" 2
if start_exporter --web.config.file="$d/web-config.yml"; then
	curl -s -D "$d/headers" -o "$d/body" -u prometheus:s3cret "${tls[@]}"
	check "with a hash set: a scrape with its password gets the metrics" \
		grep -q '^cachestat_scrape_collector_success{' "$d/body"
	check "with a hash set: the header it names is sent (X-Content-Type-Options: nosniff)" \
		grep -qi '^X-Content-Type-Options: nosniff' "$d/headers"
	stop_exporter
fi
finish

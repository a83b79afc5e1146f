#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Hardening against a cgroup bomb: a user with a delegated subtree (simulated by chowning one to
# nobody, as systemd and rootless podman delegate) makes many cgroups with long names of bytes
# that are not UTF-8. The scan keeps root's cgroups and cuts the tenant's subtree at its owner's
# share (--scan.max-cgroups-per-owner), counts it and logs it once; each label is cut to a
# bounded length with a SHA-256 suffix (checked against sha256sum); empty cgroups have no
# cachestat series; a body over --web.max-body-bytes is cut and counted, the JSON of --once
# --format=json as the text.
# Ends with "N passed, N failed, N skipped" (tests/lib/tap.sh).
set -uo pipefail
# shellcheck source=tests/integration/lib-hardening.sh
. "$(dirname "$0")/lib-hardening.sh"

hostile_ready || finish
export LC_ALL=C
# val SERIES FILE: the value of one series, named with its labels (which may hold a slash)
val() { awk -v k="$1" 'index($0, k " ") == 1 { print substr($0, length(k) + 2); exit }' "$2"; }
levels=4 leaves=120 share=30
name=$(head -c 250 /dev/zero | tr '\0' '\377')

# The tree: $sub (root's) holds keep/, a cgroup whose process holds one file, and tenant/, the
# delegated subtree: $levels nested names then $leaves leaves, every name 250 bytes of 0xff.
hostile_tree cgbomb || { fail "no cgroup at $cg2"; finish; }
mkdir "$sub/keep" "$sub/tenant"
d=$sub/tenant
for _ in $(seq "$levels"); do d=$d/$name; mkdir "$d"; done
"$py" - "$d" "$leaves" <<'EOF' || fail "could not make the leaves"
import os, sys
d, n = os.fsencode(sys.argv[1]), int(sys.argv[2])
for i in range(n):
    os.mkdir(d + b'/%04d' % i + b'\xff' * 246)
EOF
chown -R nobody "$sub/tenant"
head -c 65536 /dev/urandom >"$work/held"
cat "$work/held" >/dev/null
in_cgroup "$sub/keep" sh -c 'exec 7<"$1"; exec sleep 1000' sh "$work/held"
for _ in $(seq 50); do [ -n "$(cat "$sub/keep/cgroup.procs")" ] && break; sleep 0.1; done
made=$(find "$sub/tenant" -mindepth 1 -type d | wc -l)
eq "the tenant's cgroups made" "$made" $((levels + leaves))

# kept: root's cgroup, its held file (and the files its process maps) with its size (stat)
kept() {
	local n size
	n=$(val 'cachestat_cgroup_files{cgroup="/keep"}' "$1")
	size=$(val 'cachestat_cgroup_files_size_bytes{cgroup="/keep"}' "$1")
	if [ "${n:-0}" -ge 1 ] && [ "${size:-0}" -ge "$(stat -c %s "$work/held")" ]; then
		pass "$2: root's cgroup keeps its cachestat series ($n files, $size bytes)"
	else
		fail "$2: root's cgroup lost its series: files '$n', size '$size'"
	fi
}
# ==== --once with the defaults: bounded lines, no series for the empty cgroups ====
"$bin" --once --path.cgroupfs="$sub" >"$work/defaults.prom" 2>"$work/defaults.err"
longest=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$work/defaults.prom")
echo "  | defaults: --once printed $(wc -c <"$work/defaults.prom") bytes, the longest line $longest bytes"
[ "$longest" -gt 0 ] && [ "$longest" -le 2400 ] && pass "defaults: lines bounded (longest $longest bytes)" ||
	fail "defaults: a line of $longest bytes, want 1 to 2400 (a label of 1024 bytes, escaped)"
n=$(grep -c '^cachestat_cgroup_[a-z_]*{cgroup="/tenant' "$work/defaults.prom")
[ "$n" -gt 0 ] && ! grep -q '^cachestat_cgroup_files{cgroup="/tenant' "$work/defaults.prom" &&
	pass "defaults: the tenant's $((levels + leaves)) empty cgroups have no cachestat series" ||
	fail "defaults: cachestat series for cgroups that hold no file, or no tenant series ($n)"
kept "$work/defaults.prom" "defaults"

# ==== --once: the tenant's subtree cut at its share, root's cgroup kept ====
"$bin" --once --path.cgroupfs="$sub" --scan.max-cgroups-per-owner="$share" \
	>"$work/once.prom" 2>"$work/once.err"
bytes=$(wc -c <"$work/once.prom")
longest=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$work/once.prom")
echo "  | --once printed $bytes bytes, the longest line $longest bytes"
[ "$bytes" -gt 1000 ] && [ "$bytes" -lt 400000 ] && pass "output bounded ($bytes bytes)" ||
	fail "output of $bytes bytes, want 1000 to 400000"
[ "$longest" -le 2400 ] && pass "lines bounded (longest $longest bytes)" ||
	fail "a line of $longest bytes, want at most 2400 (a label of 1024 bytes, escaped)"
kept "$work/once.prom" "owner cap"
eq "the owner cap counted" \
	"$(val 'cachestat_scan_cgroups_capped_total{cap="owner"}' "$work/once.prom")" 1
eq "the node cap not counted" \
	"$(val 'cachestat_scan_cgroups_capped_total{cap="node"}' "$work/once.prom")" 0
# the cgroup labels of the tenant, each once
grep -o 'cachestat_cgroup_info{cgroup="/tenant[^"]*"' "$work/once.prom" | sort -u >"$work/tenant.labels"
n=$(wc -l <"$work/tenant.labels")
eq "the tenant keeps its share of cgroups" "$n" "$share"
grep -q '^cachestat_cgroup_[a-z_]*{cgroup="/tenant' "$work/once.prom" &&
	! grep -q '^cachestat_cgroup_files{cgroup="/tenant' "$work/once.prom" &&
	pass "the tenant's empty cgroups: no cachestat series" ||
	fail "cachestat series for cgroups that hold no file, or no tenant series at all"
grep -c 'cgroups left out of the scan at a cap.*owner_uids=65534' "$work/once.err" |
	{ read -r c; eq "one log line names the owner" "$c" 1; }

# Labels: the first level's is cut with a SHA-256 of the whole raw path (an independent sha256sum)
raw="/tenant/$name/$name/$name"
want=$(printf '%s' "$raw" | sha256sum | cut -c1-32)
grep -q "{cgroup=\"/tenant/[^\"]*\\\\\\\\~$want\"" "$work/once.prom" &&
	pass "a cut label ends in \\~ and the SHA-256 of the raw path" ||
	fail "no label ending in \\~$want (the SHA-256 of three levels' raw path)"
eq "distinct cut cgroups, distinct hashes" \
	"$(grep '\\~' "$work/tenant.labels" | sed 's/.*\\~//' | sort -u | wc -l)" \
	"$(grep -c '\\~' "$work/tenant.labels")"

# ==== the node cap: root's own cgroups first, the tenant gets what is left ====
"$bin" --once --path.cgroupfs="$sub" --scan.max-cgroups=5 >"$work/node.prom" 2>"$work/node.err"
kept "$work/node.prom" "node cap"
eq "node cap counted" "$(val 'cachestat_scan_cgroups_capped_total{cap="node"}' "$work/node.prom")" 1
eq "node cap: the tenant gets what root's leave (5 - 2)" \
	"$(grep -o 'cachestat_cgroup_info{cgroup="/tenant[^"]*"' "$work/node.prom" | sort -u | wc -l)" 3

# ==== the body cap ====
"$bin" --once --path.cgroupfs="$sub" --web.max-body-bytes=65536 >"$work/body.prom" 2>"$work/body.err"
bytes=$(wc -c <"$work/body.prom")
[ "$bytes" -le 65536 ] && pass "body cut at --web.max-body-bytes ($bytes bytes)" ||
	fail "body of $bytes bytes over --web.max-body-bytes=65536"
eq "body cut counted" "$(metric cachestat_scrape_body_truncated_total "$work/body.prom")" 1
eq "the families after the cut are there" \
	"$(val 'cachestat_scrape_collector_success{collector="cachestat"}' "$work/body.prom")" 1
[ -z "$(tail -c 1 "$work/body.prom" | tr -d '\n')" ] && pass "the cut body ends in whole lines" ||
	fail "the cut body ends inside a line"

# ==== the body cap bites on the JSON of --once --format=json as well ====
"$bin" --once --format=json --path.cgroupfs="$sub" --web.max-body-bytes=65536 >"$work/body.json" \
	2>"$work/body-json.err"
bytes=$(wc -c <"$work/body.json")
[ "$bytes" -le 65536 ] && pass "json: body cut at --web.max-body-bytes ($bytes bytes)" ||
	fail "json: body of $bytes bytes over --web.max-body-bytes=65536"
eq "json: valid, whole cgroups kept, the cut counted" "$("$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(len(d["cgroups"]) > 0 and all("cgroup" in c for c in d["cgroups"]), d.get("body_truncated_total"))
' "$work/body.json" 2>&1)" "True 1"
eq "json: the cut logged" "$(grep -c 'body cut at --web.max-body-bytes' "$work/body-json.err")" 1

# ==== the daemon: the cap logged once, not per scan; the counter climbs ====
if start_exporter --path.cgroupfs="$sub" --scan.max-cgroups-per-owner="$share"; then
	for i in 1 2 3; do curl -s -m 20 -o "$work/d$i.prom" "$base/metrics"; done
	eq "daemon: the owner cap counted per scan" \
		"$(val 'cachestat_scan_cgroups_capped_total{cap="owner"}' "$work/d3.prom")" 3
	eq "daemon: logged once over three scans" "$(grep -c 'cgroups left out of the scan at a cap' "$log")" 1
	kept "$work/d3.prom" "daemon"
	kill -0 "$exporter_pid" 2>/dev/null && pass "daemon still running" || fail "the daemon died"
	stop_exporter
fi
finish

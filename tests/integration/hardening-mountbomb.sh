#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Hardening against a mount bomb: an unprivileged user, in a user and mount namespace of its own
# (unshare -Urm), mounts MOUNTBOMB_N (3000) read-only overlays of 10 layers each and holds one
# file through the first. The CPU time of --once stays near the one measured without the bomb
# in the same run (the tables are indexed and judged lazily: before, overlays x layers x mounts),
# root's cgroup keeps its series and the tenant's held file is still counted. Then each cap
# (--scan.max-mounts, --scan.max-mountinfo-bytes, --scan.max-overlay-layers) made to bite: its
# counter moves, one log line, the tenant's files skipped as mount_capped, root's kept.
# Ends with "N passed, N failed, N skipped" (tests/lib/tap.sh).
set -uo pipefail
# shellcheck source=tests/integration/lib-hardening.sh
. "$(dirname "$0")/lib-hardening.sh"

hostile_ready || finish
n_overlays=${MOUNTBOMB_N:-3000}
val() { awk -v k="$1" 'index($0, k " ") == 1 { print substr($0, length(k) + 2); exit }' "$2"; }

# once NAME ARGS...: --once over $sub, its exposition in $work/NAME.prom, its log in
# $work/NAME.err, its user+system CPU seconds in $work/NAME.cpu
once() {
	local name=$1
	shift
	/usr/bin/time -f '%U %S' -o "$work/$name.time" "$bin" --once --path.cgroupfs="$sub" "$@" \
		>"$work/$name.prom" 2>"$work/$name.err"
	awk '{ printf "%.2f\n", $1 + $2 }' "$work/$name.time" >"$work/$name.cpu"
}
# kept NAME: root's cgroup keeps its series, its held file counted (at least its size, stat)
kept() {
	local n size
	n=$(val 'cachestat_cgroup_files{cgroup="/keep"}' "$work/$1.prom")
	size=$(val 'cachestat_cgroup_files_size_bytes{cgroup="/keep"}' "$work/$1.prom")
	if [ "${n:-0}" -ge 1 ] && [ "${size:-0}" -ge "$(stat -c %s "$work/held")" ]; then
		pass "$1: root's cgroup keeps its series ($n files, $size bytes)"
	else
		fail "$1: root's cgroup lost its series: files '$n', size '$size'"
	fi
}
if ! [ -x /usr/bin/time ]; then skip "mount bomb" "/usr/bin/time is not installed (tests/integration/deps.txt)"; finish; fi
if ! "${as_nobody[@]}" unshare -Urm true 2>/dev/null; then
	skip "mount bomb" "an unprivileged user cannot make a user namespace here"
	finish
fi
hostile_tree mountbomb || { fail "no cgroup at $cg2"; finish; }
mkdir "$sub/keep" "$sub/tenant"
head -c 65536 /dev/urandom >"$work/held"
cat "$work/held" >/dev/null
in_cgroup "$sub/keep" sh -c 'exec 7<"$1"; exec sleep 1000' sh "$work/held"
for _ in $(seq 50); do [ -n "$(cat "$sub/keep/cgroup.procs")" ] && break; sleep 0.1; done

# ==== the baseline: the same tree, the tenant not yet there ====
once base
kept base

# ==== the bomb ====
mkdir "$work/mb" && chown 65534:65534 "$work/mb"
start=$(date +%s)
in_cgroup "$sub/tenant" "${as_nobody[@]}" unshare -Urm "$py" "$hostile/mountbomb.py" \
	"$work/mb/x" "$n_overlays" 10 "$work/mb/ready"
for _ in $(seq 1800); do [ -s "$work/mb/ready" ] && break; sleep 0.1; done
made=$(awk '{ print $2 }' "$work/mb/ready" 2>/dev/null)
bomb_pid=$(cat "$sub/tenant/cgroup.procs" 2>/dev/null | head -n 1)
mounts=$(wc -l <"/proc/$bomb_pid/mountinfo" 2>/dev/null)
echo "  | the tenant made ${made:-no} overlays of 10 layers in $(($(date +%s) - start)) s: ${mounts:-?} mounts, $(wc -c <"/proc/$bomb_pid/mountinfo" 2>/dev/null) bytes of mountinfo"
if [ "${made:-0}" -lt "$n_overlays" ]; then
	fail "the mount bomb: ${made:-no} of $n_overlays overlays made"
	finish
fi

# --once with the bomb: its CPU within twice the baseline's and 0.25 s more (0.02 s here; before
# the index, 1.3 s at 4000 overlays, 24.8 s at 20,000)
once bomb
base_cpu=$(cat "$work/base.cpu") bomb_cpu=$(cat "$work/bomb.cpu")
echo "  | --once CPU: ${base_cpu} s without the bomb, ${bomb_cpu} s with $made overlays"
if awk -v b="$base_cpu" -v x="$bomb_cpu" 'BEGIN { exit !(x <= 2 * b + 0.25) }'; then
	pass "bomb: --once CPU bounded (${bomb_cpu} s against ${base_cpu} s without it)"
else
	fail "bomb: --once CPU ${bomb_cpu} s, want at most 2 x ${base_cpu} + 0.25 s"
fi
kept bomb
n=$(val 'cachestat_cgroup_files{cgroup="/tenant"}' "$work/bomb.prom")
[ "${n:-0}" -ge 1 ] && pass "bomb: the tenant's files below the caps still counted ($n)" ||
	fail "bomb: the tenant's cgroup counts '${n:-}' files, want its held file and mappings"
eq "bomb: no cap bit" "$(grep -c '^cachestat_scan_mounts_capped_total{cap="[a-z]*"} [1-9]' "$work/bomb.prom")" 0

# capped CASE FLAG CAP: the cap made to bite; counter, one log line, the tenant's files skipped
capped() {
	local name=$1 flag=$2 cap=$3 skipped lines
	once "$name" "$flag"
	eq "$name: $flag counted" \
		"$(val "cachestat_scan_mounts_capped_total{cap=\"$cap\"}" "$work/$name.prom")" 1
	lines=$(grep -c "over a cap.*cap=$cap" "$work/$name.err")
	eq "$name: logged once" "$lines" 1
	skipped=$(val 'cachestat_files_skipped_total{reason="mount_capped"}' "$work/$name.prom")
	[ "${skipped:-0}" -ge 1 ] && pass "$name: the tenant's files skipped as mount_capped ($skipped)" ||
		fail "$name: no mount_capped skip counted"
	kept "$name"
}
capped mounts --scan.max-mounts=$((n_overlays / 2)) mounts
capped bytes --scan.max-mountinfo-bytes=65536 bytes
capped layers --scan.max-overlay-layers=5 layers
finish

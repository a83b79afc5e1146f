#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The benchmarks' smoke runs (suite bench-smoke of make test): each benchmark target run at a tiny
# size, in seconds, so that a benchmark that can no longer run, or that prints no figure, fails
# here and not in front of the next person who runs it at full size. The figures of these runs
# mean nothing; that they exist is the test. kernel-bench's is not here: its program runs at a
# smoke size in the release kernel's boot of the e2e suite (case 7, beside the kernel's tests),
# which saves a boot; its flush half needs a third kernel build and is not smoke-tested.
#
# Usage: tests/bench/smoke.sh [BENCHMARK...]   (default: all; e.g. bench-hostile)
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"
work=$(mktemp -d /var/tmp/cse-bench-smoke.XXXXXX)
trap 'rm -rf "$work"' EXIT
# the benchmarks' caches and outputs stay apart from the full runs'
export BUILD_ROOT=$work/build

[ "$(id -u)" -eq 0 ] || skip_suite "needs root (cgroups, mounts)"
make -s -C "$top/exporter" >/dev/null || { fail "the exporter builds"; finish; }

# wanted NAME: NAME was asked for (or nothing was)
wanted() {
	[ ${#only[@]} -eq 0 ] || [[ " ${only[*]} " == *" $1 "* ]]
}
only=("$@")

# run NAME COMMAND...: runs one benchmark, its output in $work/NAME.out; passes when it exits 0
run() {
	local name=$1
	shift
	wanted "$name" || return 0
	if "$@" >"$work/$name.out" 2>&1; then
		pass "$name runs at a tiny size"
	else
		fail "$name runs at a tiny size (status $?; its last lines follow)"
		tail -n 15 "$work/$name.out" | sed 's/^/#   /'
	fi
}
# figure NAME WHAT REGEX: passes when the output of NAME has a line matching REGEX (extended)
figure() {
	wanted "$1" || return 0
	if grep -Eq "$3" "$work/$1.out"; then
		pass "$1 prints $2"
	else
		fail "$1 prints $2 (no line matches /$3/)"
	fi
}

run bench-exporter env BENCH_CGROUPS=2 BENCH_FILES_PER_DIR=10 BENCH_LARGE_MIB=1 BENCH_RUNS=1 \
	"$top/tests/bench/bench-exporter.sh"
figure bench-exporter "the scan's row against the floor" \
	'^\| exporter, one scan \| .* \| [0-9]+\.[0-9]{4} \| [0-9]+\.[0-9]{4} \|'
figure bench-exporter "the overlay row" '^\| exporter, one scan through the overlay \| .* \| [0-9]+\.[0-9]{4} \|'
figure bench-exporter "files counted" '^exporter counted [1-9][0-9]* files, [1-9][0-9]* bytes cached'
# at this size a floor may time at 0.0000 s, and its ratios print as "-"
figure bench-exporter "the mincore method's row against its floor" \
	'^\| exporter, one scan, mincore method \| .* \| [0-9]+\.[0-9]{4} \| ([0-9]+\.[0-9]+x|-) \|'
figure bench-exporter "the ratios of both methods and vmtouch" \
	'^ratios to their own floors \(best wall\): cachestat path ([0-9.]+x|-), mincore path ([0-9.]+x|-), vmtouch ([0-9.]+x|-)$'
# both methods count the same pages, but for those a loaded machine evicts between the scans
mc=$(wanted bench-exporter && sed -n 's/^the mincore method: exporter counted \([0-9]*\) bytes cached in the root.s subtree (cachestat: \([0-9]*\)).*/\1 \2/p' \
	"$work/bench-exporter.out")
if ! wanted bench-exporter; then
	:
elif [ -n "$mc" ] && awk -v a="${mc% *}" -v b="${mc#* }" 'BEGIN { exit !(a > 0 && a >= b * 0.95 && a <= b * 1.05) }'; then
	pass "bench-exporter: both methods count the same cached bytes, within 5% ($mc)"
else
	fail "bench-exporter: both methods count the same cached bytes, within 5% (got '${mc:-no line}')"
fi

run bench-fanotify env BENCH_RUNS=1 BENCH_SECONDS=1 BENCH_OPENS=1000 "$top/tests/bench/fanotify.sh"
figure bench-fanotify "the ratio with the exporter running" '^ratio with/without +[0-9]+\.[0-9]+$'
figure bench-fanotify "the exporter's RSS" '^exporter RSS then / peak \(MiB\) +[0-9.]+ / [0-9.]+$'

run bench-cardinality env CARD_PODS=2 CARD_GAP_SECONDS=2 CARD_PROM_INTERVAL=2s "$top/tests/bench/cardinality.sh"
figure bench-cardinality "series per cgroup" '^  cgroups: [1-9][0-9]*; series of the per-cgroup families: [1-9]'
figure bench-cardinality "series per container cgroup" '^  container cgroups \(.*\): 4; series per container cgroup: mean [1-9]'
figure bench-cardinality "the churn" '^  churn over 2 s: [0-9]+ appeared'
figure bench-cardinality "the recorded series of both nodes" '^  in all +[1-9][0-9]* +[1-9][0-9]*$'

run bench-fleet env FLEET_PODS=2 FLEET_EXPORTERS=2 FLEET_SECONDS=20 "$top/tests/bench/fleet.sh"
figure bench-fleet "Prometheus' head series" '^  head series +[1-9][0-9,]* '
figure bench-fleet "a dashboard query answered by both stores" 'equal \([1-9][0-9]* series\)'

run loadtest env LOAD_CLIENTS=5 LOAD_SECONDS=3 LOAD_CGROUPS=20 LOAD_MILLION=1000 LOAD_MAX_FILES=500 \
	"$top/tests/load/run.sh"
figure loadtest "its requests and latency" '^load: clients=5 .* requests=[1-9][0-9]* errors=0 .* p99_ms=[0-9]'
figure loadtest "its own checks all passed" '^[1-9][0-9]* passed, 0 failed'

# the smallest row of each kind; a row is its value, then numbers: CPU s, RSS MiB, bytes, cgroups
run bench-hostile env HOSTILE_CGROUPS=100 HOSTILE_NAME_BYTES=64 HOSTILE_FDS=1000 HOSTILE_FDS_CAPPED=1000 \
	OVERLAYS=100 "$top/tests/bench/hostile.sh"
row='[0-9]+\.[0-9]{2} \| +[1-9][0-9]* \| +[1-9][0-9]* \| +[1-9][0-9]{2,} \|$'
figure bench-hostile "the row of root's cgroups" "^\| cgroups, root's \(node cap 10000\) +\| +100 \| +$row"
figure bench-hostile "the row of delegated cgroups" "^\| cgroups, delegated \(owner cap 1000\) +\| +100 \| +$row"
figure bench-hostile "the row of long names" "^\| name bytes of 0xff, 1000 cgroups +\| +64 \| +$row"
figure bench-hostile "the row of one process's descriptors" "^\| descriptors of one process +\| +1000 \| +$row"
figure bench-hostile "the row of descriptors under a cap" "^\| descriptors, a cap of 5000 +\| +1000 \| +$row"
if wanted bench-hostile && grep -q 'cannot make a user namespace here' "$work/bench-hostile.out"; then
	skip "bench-hostile prints the row of 100 overlays" "an unprivileged user cannot make a user namespace here"
else
	figure bench-hostile "the row of 100 overlays" \
		'^\| +100 \| +[1-9][0-9]* \| +[0-9]+\.[0-9]{2} \| +[1-9][0-9]* \| +[0-9]+ \| [a-z]'
fi

finish

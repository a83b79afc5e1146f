#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Series budget of one Kubernetes node (make bench-cardinality; not part of make test).
#
# Builds two nodes at kubelet's default of 110 pods, one per kubelet cgroup driver, as real
# cgroups in the host's hierarchies (the v1 memory hierarchy and the v2 tree, mirrored):
#   systemd:  /kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid_>.slice/cri-containerd-<id>.scope
#   cgroupfs: /kubepods/<qos>/pod<uid>/<id>  (guaranteed pods straight below /kubepods)
# 2 containers a pod, the QoS classes in turn, plus system.slice (12 services) and user.slice
# (a session and a user manager). In every leaf a real process (holder.c) holds 10 files of its
# own open, maps its image's binary, and keeps a memfd and a deleted temporary file; one
# container in ten replaces that temporary file by one of a new name every 20 s. Each node's
# cgroups live below a directory of their own (cachestat-card-<driver>), which the exporter is
# given as its --path.cgroupfs, so that its labels are a node's. The exporter runs with the
# DaemonSet's arguments and config as `kubectl kustomize deploy/kubernetes/base` renders them, two
# scrapes 60 s apart. Prints, per node: series per family, per cgroup (mean, max), in all, and
# how many series changed identity between the two scrapes (appeared + disappeared, of the
# total), with that rate per hour.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$top/exporter/cachestat_exporter
BUILD_ROOT=${BUILD_ROOT:-/var/tmp/cachestat_exporter}
work=$BUILD_ROOT/bench-cardinality
pods=${CARD_PODS:-110}
gap=${CARD_GAP_SECONDS:-60}
extra=${CARD_EXPORTER_FLAGS:-}
drivers=(systemd cgroupfs)
ports=(19481 19482)
v1=/sys/fs/cgroup/memory
v2=/sys/fs/cgroup/unified

[ "$(id -u)" -eq 0 ] || { echo "bench-cardinality: needs root (cgroups)" >&2; exit 1; }
for t in python3 curl cc kubectl; do
	command -v $t >/dev/null || { echo "bench-cardinality: $t missing" >&2; exit 1; }
done
[ -d $v1 ] && [ -d $v2 ] || { echo "bench-cardinality: needs a hybrid host ($v1 and $v2)" >&2; exit 1; }
[ -x "$bin" ] || make -s -C "$top/exporter"
mkdir -p "$work"
cc -O2 -Wall -o "$work/holder" "$top/tests/bench/holder.c"

# shellcheck source=tests/bench/lib-node.sh
. "$top/tests/bench/lib-node.sh"
trap cleanup EXIT
make_data

for i in "${!drivers[@]}"; do
	echo "bench-cardinality: node ${drivers[$i]}: $pods pods ..." >&2
	build_node "${drivers[$i]}"
done
echo "bench-cardinality: $(( ${#pids[@]} )) processes running; starting the exporters" >&2
for i in "${!drivers[@]}"; do
	exporter_args "${drivers[$i]}" "${ports[$i]}" >"$work/args" # (a file: set -e sees a failure)
	mapfile -t args <"$work/args"
	# shellcheck disable=SC2086 # CARD_EXPORTER_FLAGS is a list of flags
	"$bin" "${args[@]}" $extra 2>"$work/exporter-${drivers[$i]}.log" &
	pids+=($!)
	echo "  ${drivers[$i]}: cachestat_exporter ${args[*]} $extra" >&2
done
for port in "${ports[@]}"; do
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.2; done
done
sleep 5 # the holders have read their files
# scrape N: both nodes at once
scrape() {
	local port curls=()
	for port in "${ports[@]}"; do
		curl -sf "http://127.0.0.1:$port/metrics" >"$work/scrape$1-$port.txt" &
		curls+=($!)
	done
	for port in "${curls[@]}"; do wait "$port"; done
}
scrape 1
echo "bench-cardinality: first scrape done; the second in $gap s" >&2
sleep "$gap"
scrape 2
for i in "${!drivers[@]}"; do
	echo
	echo "node ${drivers[$i]} (kubelet --cgroup-driver=${drivers[$i]}), $pods pods x 2 containers"
	grep -h 'msg="will send' "$work/exporter-${drivers[$i]}.log" | sed 's/^/  exporter: /' || true
	python3 - "$work/scrape1-${ports[$i]}.txt" "$work/scrape2-${ports[$i]}.txt" "$gap" <<'PY'
import collections, re, sys
sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)')
label_cg = re.compile(r'(?:^\{|,)cgroup="((?:[^"\\]|\\.)*)"')
def series(path):
    out = set()
    for line in open(path, encoding="utf-8"):
        if line.startswith("#") or not line.strip():
            continue
        m = sample.match(line)
        out.add((m.group(1), m.group(2) or ""))
    return out
s1, s2 = series(sys.argv[1]), series(sys.argv[2])
gap = float(sys.argv[3])
fam = collections.Counter(n for n, _ in s2)
per_cg = collections.Counter()
for n, labels in s2:
    m = label_cg.search(labels)
    if m:
        per_cg[m.group(1)] += 1
cgroups = {l for n, l in s2 if n == "cachestat_cgroup_info"}
ncg = len(cgroups) or 1
print(f"  {'family':<52} {'series':>7}")
for n, c in sorted(fam.items(), key=lambda x: (-x[1], x[0])):
    print(f"  {n:<52} {c:>7}")
with_cg = sum(per_cg.values())
print(f"  cgroups: {len(cgroups)}; series with a cgroup label: {with_cg}; "
      f"per cgroup: mean {with_cg / ncg:.1f}, max {max(per_cg.values(), default=0)}")
print(f"  series in all: {len(s2)}")
new, gone = len(s2 - s1), len(s1 - s2)
rate = (new + gone) / max(len(s2), 1)
print(f"  churn over {gap:.0f} s: {new} appeared, {gone} disappeared = {100 * rate:.2f}% "
      f"of the series ({100 * rate * 3600 / gap:.1f}% per hour)")
PY
done

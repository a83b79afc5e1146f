#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Series budget of one Kubernetes node (make bench-cardinality; not part of make test; make
# bench-cardinality-guest runs it in the e2e guest).
#
# Builds two nodes at kubelet's default of 110 pods, one per kubelet cgroup driver, as real
# cgroups (tests/bench/lib-node.sh): on a hybrid host in the v1 memory hierarchy and the v2
# tree, mirrored; on a cgroup v2 host (the e2e guest) in the v2 tree alone, with the memory
# controller enabled down to every leaf:
#   systemd:  /kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid_>.slice/cri-containerd-<id>.scope
#   cgroupfs: /kubepods/<qos>/pod<uid>/<id>  (guaranteed pods straight below /kubepods)
# Each pod has its pause (sandbox) container's cgroup beside its 2 containers', the QoS classes in
# turn, plus system.slice (12 services) and user.slice (a session and a user manager). kubelet's
# memory limits are set: 256 MiB on each container of a guaranteed or burstable pod, their sum on
# the pod (memory.max on v2, memory.limit_in_bytes on the v1 hierarchy); none on best-effort pods
# and pause containers. In every container's and service's leaf a real process (holder.c) holds
# 10 files of its own open, maps its image's binary, and keeps a memfd and a deleted temporary
# file; one container in ten replaces that temporary file by one of a new name every 20 s. A
# pause container's process maps a 700 KiB "pause" binary and nothing else. Each node's cgroups
# live below a directory of their own (cachestat-card-<driver>), which the exporter is given as
# its --path.cgroupfs (in the memory hierarchy), so that its labels are a node's. The exporter
# runs with the DaemonSet's arguments and config as `kubectl kustomize deploy/kubernetes/base`
# renders them, two scrapes 60 s apart. Prints, per node: series per family, per cgroup (mean,
# max), per container, pause and pod cgroup (mean, max: the per-cgroup families, and the max with
# the node's per-file series, which land on the cgroups holding its top files), in all, and how many series
# changed identity between the two scrapes (appeared + disappeared, of the total), with that
# rate per hour.
#
# Then, with a prometheus binary on PATH (Debian's package prometheus), a private Prometheus
# (its own port and storage under the work directory, scrape and evaluation interval 15 s) loads
# every dashboards/rules/*.yml and scrapes both nodes' exporters as job "cachestat"; once both
# were scraped twice (rate() over 5m needs two samples) and every rule group has evaluated twice
# since, it prints the recorded series (a ':' in the name) per record name and in all, per node.
# No kube-state-metrics runs: the identity rule falls back to the cgroup path, as the output says.
#
# Environment: CARD_PODS (110), CARD_GAP_SECONDS (60), CARD_EXPORTER_FLAGS (after the
# DaemonSet's); where it runs: CARD_V2 and CARD_V1 (the v2 tree and the v1 memory hierarchy;
# by default /sys/fs/cgroup/{unified,memory} on a hybrid host, else /sys/fs/cgroup and none when
# its v2 tree has the memory controller); what it runs, for a machine without a compiler or
# kubectl: CARD_BIN (the exporter; default the tree's), CARD_HOLDER (holder.c built; default
# built here with cc), CARD_ARGS_FILE and CARD_CONFIG (the DaemonSet's arguments, one a line, and
# the ConfigMap's config.json, rendered elsewhere: tests/bench/daemonset-args.sh),
# CARD_RULES_DIR (dashboards/rules); the Prometheus: CARD_PROM_PORT (19491), CARD_PROM_INTERVAL
# (15s), CARD_PROM_WAIT (600 s at most for the two scrapes and evaluations; 0 skips Prometheus).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
bin=${CARD_BIN:-$top/exporter/cachestat_exporter}
BUILD_ROOT=${BUILD_ROOT:-/var/tmp/cachestat_exporter}
work=$BUILD_ROOT/bench-cardinality
pods=${CARD_PODS:-110}
gap=${CARD_GAP_SECONDS:-60}
extra=${CARD_EXPORTER_FLAGS:-}
rules_dir=${CARD_RULES_DIR:-$top/dashboards/rules}
prom_port=${CARD_PROM_PORT:-19491}
prom_interval=${CARD_PROM_INTERVAL:-15s}
prom_wait=${CARD_PROM_WAIT:-600}
# read by lib-node.sh's exporter_args: the DaemonSet rendered elsewhere
ds_args=${CARD_ARGS_FILE:-} ds_config=${CARD_CONFIG:-}
drivers=(systemd cgroupfs)
ports=(19481 19482)
if [ -n "${CARD_V2:-}" ]; then
	v1=${CARD_V1:-} v2=$CARD_V2
elif [ -d /sys/fs/cgroup/memory ] && [ -d /sys/fs/cgroup/unified ]; then
	v1=/sys/fs/cgroup/memory v2=/sys/fs/cgroup/unified
elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	v1='' v2=/sys/fs/cgroup
else
	echo "bench-cardinality: no memory controller found (neither a hybrid host nor cgroup v2 with memory)" >&2
	exit 1
fi

[ "$(id -u)" -eq 0 ] || { echo "bench-cardinality: needs root (cgroups)" >&2; exit 1; }
tools=(python3 curl)
[ -n "${CARD_HOLDER:-}" ] || tools+=(cc)
[ -n "$ds_args" ] || tools+=(kubectl)
for t in "${tools[@]}"; do
	command -v "$t" >/dev/null || { echo "bench-cardinality: $t missing" >&2; exit 1; }
done
if [ -n "$v1" ]; then
	[ -d "$v1" ] && [ -d "$v2" ] || { echo "bench-cardinality: needs $v1 and $v2" >&2; exit 1; }
	layout="hybrid: the memory controller on cgroup v1 ($v1), mirrored in $v2"
else
	grep -qw memory "$v2/cgroup.controllers" ||
		{ echo "bench-cardinality: $v2 has no memory controller" >&2; exit 1; }
	layout="cgroup v2 ($v2) with the memory controller"
fi
if [ -n "$ds_args" ]; then
	[ -r "$ds_args" ] && [ -r "$ds_config" ] ||
		{ echo "bench-cardinality: CARD_ARGS_FILE and CARD_CONFIG must be readable files" >&2; exit 1; }
fi
[ -n "${CARD_BIN:-}" ] || [ -x "$bin" ] || make -s -C "$top/exporter"
[ -x "$bin" ] || { echo "bench-cardinality: no exporter at $bin" >&2; exit 1; }
mkdir -p "$work"
rm -f "$work/ready"
if [ -n "${CARD_HOLDER:-}" ]; then
	holder=$CARD_HOLDER
else
	holder=$work/holder
	cc -O2 -Wall -o "$holder" "$top/tests/bench/holder.c"
fi
# read by lib-node.sh's run_in: each holder says when it holds its files
holder_ready=$work/ready

# shellcheck source=tests/bench/lib-node.sh
. "$top/tests/bench/lib-node.sh"
trap cleanup EXIT
make_data

for i in "${!drivers[@]}"; do
	echo "bench-cardinality: node ${drivers[$i]}: $pods pods ..." >&2
	build_node "${drivers[$i]}"
done
holders=${#pids[@]}
echo "bench-cardinality: $holders processes started; waiting until they hold their files" >&2
for ((t = 0; ; t++)); do
	holders_alive
	n_ready=0
	[ ! -e "$work/ready" ] || n_ready=$(wc -l <"$work/ready")
	[ "$n_ready" -lt "$holders" ] || break
	[ "$t" -lt 600 ] || { echo "bench-cardinality: $n_ready of $holders processes ready after 600 s" >&2; exit 1; }
	sleep 1
done
echo "bench-cardinality: starting the exporters" >&2
for i in "${!drivers[@]}"; do
	exporter_args "${drivers[$i]}" "${ports[$i]}" >"$work/args" # (a file: set -e sees a failure)
	mapfile -t args <"$work/args"
	# shellcheck disable=SC2086 # CARD_EXPORTER_FLAGS is a list of flags
	"$bin" "${args[@]}" $extra 2>"$work/exporter-${drivers[$i]}.log" &
	pids+=($!)
	echo "  ${drivers[$i]}: $bin ${args[*]} $extra" >&2
done
for port in "${ports[@]}"; do
	for _ in $(seq 300); do curl -sf "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.2; done
done
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
echo "bench-cardinality: kernel $(uname -r); $layout"
for i in "${!drivers[@]}"; do
	echo
	echo "node ${drivers[$i]} (kubelet --cgroup-driver=${drivers[$i]}), $pods pods x (2 containers + pause)"
	grep -h 'msg="will send' "$work/exporter-${drivers[$i]}.log" | sed 's/^/  exporter: /' || true
	python3 - "$work/scrape1-${ports[$i]}.txt" "$work/scrape2-${ports[$i]}.txt" "$gap" \
		"$work/cgroups-${drivers[$i]}.tsv" <<'PY'
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
kinds = collections.defaultdict(list)  # (kind, limited) -> cgroup paths, from build_node's list
for line in open(sys.argv[4], encoding="utf-8"):
    kind, limit, path = line.rstrip("\n").split("\t")
    kinds[(kind, limit != "-")].append(path)
fam = collections.Counter(n for n, _ in s2)
# per cgroup: the per-cgroup families, and apart the node's top files (cachestat_file_*), a
# bounded number a node that lands on whichever cgroups hold those files
per_cg, per_cg_files = collections.Counter(), collections.Counter()
for n, labels in s2:
    m = label_cg.search(labels)
    if m:
        (per_cg_files if n.startswith("cachestat_file_") else per_cg)[m.group(1)] += 1
cgroups = {l for n, l in s2 if n == "cachestat_cgroup_info"}
ncg = len(cgroups) or 1
print(f"  {'family':<52} {'series':>7}")
for n, c in sorted(fam.items(), key=lambda x: (-x[1], x[0])):
    print(f"  {n:<52} {c:>7}")
with_cg = sum(per_cg.values())
files = sum(per_cg_files.values())
print(f"  cgroups: {len(cgroups)}; series of the per-cgroup families: {with_cg}; "
      f"per cgroup: mean {with_cg / ncg:.1f}, max {max(per_cg.values(), default=0)}; "
      f"and {files} per-file series on {len(per_cg_files)} cgroups (at most {max(per_cg_files.values(), default=0)} on one)")
def spread(paths):
    counts = [per_cg[p] for p in paths]
    both = [per_cg[p] + per_cg_files[p] for p in paths]
    return (f"mean {sum(counts) / max(len(counts), 1):.1f}, max {max(counts, default=0)} "
            f"(with the per-file series: max {max(both, default=0)})")
for kind, what in (("container", "container cgroups (leaves below a pod, not pause)"),
                   ("pause", "pause cgroups"), ("pod", "pod cgroups")):
    limited, unlimited = kinds[(kind, True)], kinds[(kind, False)]
    line = f"  {what}: {len(limited) + len(unlimited)}; series per {kind} cgroup: {spread(limited + unlimited)}"
    if limited and unlimited:
        line += (f" ({len(limited)} with a memory limit: {spread(limited)}; "
                 f"{len(unlimited)} without: {spread(unlimited)})")
    print(line)
print(f"  series in all: {len(s2)}")
new, gone = len(s2 - s1), len(s1 - s2)
rate = (new + gone) / max(len(s2), 1)
print(f"  churn over {gap:.0f} s: {new} appeared, {gone} disappeared = {100 * rate:.2f}% "
      f"of the series ({100 * rate * 3600 / gap:.1f}% per hour)")
PY
done

# ---- the recording rules' series, from a private Prometheus ----
echo
if [ "$prom_wait" -eq 0 ]; then
	echo "recorded series: not measured (CARD_PROM_WAIT=0)"
	exit 0
elif ! command -v prometheus >/dev/null; then
	echo "recorded series: not measured (no prometheus on PATH: Debian's package prometheus)"
	exit 0
fi
compgen -G "$rules_dir/*.yml" >/dev/null || { echo "bench-cardinality: no rule files in $rules_dir" >&2; exit 1; }
! ss -Htln "sport = :$prom_port" | grep -q . ||
	{ echo "bench-cardinality: port $prom_port is in use (CARD_PROM_PORT)" >&2; exit 1; }
rm -rf "$work/prom"
{
	cat <<YML
global:
  scrape_interval: $prom_interval
  scrape_timeout: $prom_interval
  evaluation_interval: $prom_interval
rule_files:
YML
	for f in "$rules_dir"/*.yml; do echo "  - $f"; done
	cat <<YML
scrape_configs:
  - job_name: cachestat
    static_configs:
      - targets: [$(printf '"127.0.0.1:%s", ' "${ports[@]}" | sed 's/, $//')]
YML
} >"$work/prometheus.yml"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom" \
	--web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)
echo "bench-cardinality: Prometheus $(prometheus --version 2>&1 | sed -n '1s/^prometheus, version \([^ ]*\).*/\1/p') on" \
	"127.0.0.1:$prom_port, every $prom_interval; waiting for two scrapes and two evaluations" >&2
nodes=()
for i in "${!drivers[@]}"; do nodes+=("127.0.0.1:${ports[$i]}=${drivers[$i]}"); done
python3 - "http://127.0.0.1:$prom_port" "$prom_wait" "$rules_dir" "${nodes[@]}" <<'PY'
import json, sys, time, urllib.parse, urllib.request
from datetime import datetime
prom, limit, rules_dir = sys.argv[1], float(sys.argv[2]), sys.argv[3]
nodes = dict(a.split("=", 1) for a in sys.argv[4:])
deadline = time.monotonic() + limit

def get(path, **params):
    url = f"{prom}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)["data"]

def wait(what, done):
    while True:
        try:
            if done():
                return
        except OSError:
            pass  # not listening yet
        if time.monotonic() > deadline:
            sys.exit(f"bench-cardinality: no {what} within {limit:.0f} s (see prometheus.log)")
        time.sleep(1)

def parse_ts(s):
    # RFC 3339 with nanoseconds: cut to microseconds for datetime
    head, _, frac = s.rstrip("Z").partition(".")
    return datetime.fromisoformat(f"{head}.{(frac + '000000')[:6]}+00:00").timestamp()

# two successful scrapes of every node; the instant the query saw them
ready_at = []
def scraped_twice():
    r = get("/api/v1/query", query='sum_over_time(up{job="cachestat"}[10m])')
    twice = [x for x in r["result"] if float(x["value"][1]) >= 2]
    if len(twice) == len(nodes):
        ready_at.append(max(float(x["value"][0]) for x in twice))
        return True
    return False
wait("two successful scrapes of both exporters", scraped_twice)
interval = None
def evaluated_twice():
    global interval
    groups = get("/api/v1/rules")["groups"]
    if not groups:
        return False
    interval = groups[0]["interval"]
    # evaluations are an interval apart: one later than ready_at + interval is the second since
    return all(g["lastEvaluation"][:4] != "0001" and
               parse_ts(g["lastEvaluation"]) > ready_at[0] + g["interval"] for g in groups)
wait("two rule evaluations after them", evaluated_twice)

groups = get("/api/v1/rules")["groups"]
records = [r["name"] for g in groups for r in g["rules"] if r["type"] == "recording"]
bad = [f"{g['name']}/{r.get('name')}: {r.get('lastError')}" for g in groups for r in g["rules"]
       if r.get("health") not in ("ok", None)]
r = get("/api/v1/query", query='count by (__name__, instance) ({__name__=~".+:.+"})')
count = {(x["metric"]["__name__"], x["metric"].get("instance", "")): int(x["value"][1]) for x in r["result"]}
names = sorted(set(records) | {n for n, _ in count})
cols = list(nodes) + ([""] if any(i == "" for _, i in count) else [])
heads = [nodes.get(c, "no instance") for c in cols]
ksm = get("/api/v1/query", query="count(kube_pod_info) or count(kube_pod_container_info)")["result"]
print(f"recorded series per node (Prometheus; {len(records)} recording rules, {len(groups)} groups of "
      f"{rules_dir}; scraped and evaluated every {interval:.0f} s, read after two scrapes and two evaluations)")
print("  kube-state-metrics: " + ("present" if ksm else
      "absent (no kube_pod_info): the identity rule falls back to the cgroup path"))
w = max(len(n) for n in names) if names else 6
print(f"  {'record':<{w}} " + " ".join(f"{h:>11}" for h in heads))
for n in names:
    print(f"  {n:<{w}} " + " ".join(f"{count.get((n, c), 0):>11}" for c in cols))
print(f"  {'in all':<{w}} " + " ".join(f"{sum(v for (n, i), v in count.items() if i == c):>11}" for c in cols))
for b in bad:
    print(f"  rule not healthy: {b}")
PY

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A fleet behind a real Prometheus (make bench-fleet; not part of make test).
#
# The two Kubernetes-shaped nodes of make bench-cardinality (tests/bench/lib-node.sh: 110 pods,
# real cgroups and processes, one node per kubelet cgroup driver) are read by FLEET_EXPORTERS
# (50) real exporter processes, each on a loopback address of its own (127.0.0.11, .12, ...) and
# so its own `instance`, with the DaemonSet's flags and config; half on each node. Debian's
# Prometheus scrapes them every 15 s with every rule file of dashboards/rules/ loaded and
# remote-writes everything to Debian's victoria-metrics, for FLEET_MINUTES (10). Then it prints:
# head series, Prometheus' RSS per 1,000 head series, samples appended per second, each rule
# group's evaluation time (sampled every 30 s: mean and max), and every dashboard query's latency
# (dashboards/queries.sh for one instance, and the fleet dashboard's over every node, as an
# instant query and over the last 10 minutes at a 15 s step; median of 3) in Prometheus and in victoria-metrics, and whether victoria-metrics'
# answer to each at the same instant equals Prometheus' (same series, values within 1e-9
# relative). Figures also go to $BUILD_ROOT/bench-fleet/figures.txt.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$top/exporter/cachestat_exporter
BUILD_ROOT=${BUILD_ROOT:-/var/tmp/cachestat_exporter}
work=$BUILD_ROOT/bench-fleet
pods=${FLEET_PODS:-110}
n_exporters=${FLEET_EXPORTERS:-50}
minutes=${FLEET_MINUTES:-10}
# FLEET_SECONDS, when set, replaces the minutes (the smoke run of make test: seconds, not minutes)
seconds=${FLEET_SECONDS:-$((minutes * 60))}
sample=$((seconds < 30 ? seconds : 30)) # how often the rule groups' evaluation time is read
# After the DaemonSet's flags. The figures are Prometheus' and do not depend on how often an
# exporter scans (a scrape is answered from its latest snapshot either way); scanning a minute
# apart leaves the 2 cores to Prometheus instead of 50 scans every 15 s.
extra_flags=${FLEET_EXPORTER_FLAGS:---scan.min-interval=60}
drivers=(systemd cgroupfs)
# shellcheck disable=SC2034 # read by lib-node.sh
node_prefix=cachestat-fleet
v1=/sys/fs/cgroup/memory
v2=/sys/fs/cgroup/unified
exporter_port=19451

[ "$(id -u)" -eq 0 ] || { echo "bench-fleet: needs root (cgroups)" >&2; exit 1; }
for t in python3 curl cc prometheus victoria-metrics; do
	command -v $t >/dev/null || { echo "bench-fleet: $t missing (tests/bench/deps.txt)" >&2; exit 1; }
done
[ -d $v1 ] && [ -d $v2 ] || { echo "bench-fleet: needs a hybrid host ($v1 and $v2)" >&2; exit 1; }
[ -x "$bin" ] || make -s -C "$top/exporter"
rm -rf "$work"
mkdir -p "$work"
cc -O2 -Wall -o "$work/holder" "$top/tests/bench/holder.c"
# shellcheck source=tests/bench/lib-node.sh
. "$top/tests/bench/lib-node.sh"
trap cleanup EXIT

free_port() { # free_port FIRST: a TCP port nothing listens on at 127.0.0.1
	local p=$1
	while ss -Htln "sport = :$p" | grep -q .; do p=$((p + 1)); done
	echo "$p"
}
prom_port=$(free_port 19090)
vm_port=$(free_port 18428)

make_data
for d in "${drivers[@]}"; do
	echo "bench-fleet: node $d: $pods pods ..." >&2
	build_node "$d"
done

# ---- the exporters ----
targets=()
for ((i = 0; i < n_exporters; i++)); do
	d=${drivers[$((i % 2))]}
	addr=127.0.0.$((11 + i))
	# through a file: a failure inside a process substitution would go unseen, and the exporters
	# would run without the DaemonSet's flags
	exporter_args "$d" 0 >"$work/args"
	mapfile -t args < <(grep -v '^--web.listen-address=' "$work/args")
	# shellcheck disable=SC2086 # FLEET_EXPORTER_FLAGS is a list of flags
	"$bin" "${args[@]}" --web.listen-address="$addr:$exporter_port" $extra_flags 2>"$work/exporter-$i.log" &
	pids+=($!)
	targets+=("$addr:$exporter_port $d")
done
echo "bench-fleet: $n_exporters exporters: cachestat_exporter ${args[*]} --web.listen-address=127.0.0.N:$exporter_port $extra_flags" >&2

# ---- victoria-metrics, then Prometheus writing to it ----
victoria-metrics -storageDataPath="$work/vm" -httpListenAddr="127.0.0.1:$vm_port" -retentionPeriod=1d \
	-search.latencyOffset=0s -loggerLevel=ERROR >"$work/vm.log" 2>&1 &
pids+=($!)
{
	cat <<YML
global:
  scrape_interval: 15s
  scrape_timeout: 10s
  evaluation_interval: 15s
rule_files:
YML
	for f in "$top"/dashboards/rules/*.yml; do echo "  - $f"; done
	cat <<YML
remote_write:
  - url: http://127.0.0.1:$vm_port/api/v1/write
scrape_configs:
  - job_name: cachestat
    static_configs:
YML
	for t in "${targets[@]}"; do
		echo "      - { targets: [\"${t% *}\"], labels: { cluster: \"bench-${t#* }\" } }"
	done
} >"$work/prometheus.yml"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom" \
	--web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
prom_pid=$!
pids+=("$prom_pid")
prom=http://127.0.0.1:$prom_port
vm=http://127.0.0.1:$vm_port
for _ in $(seq 100); do curl -sf "$prom/-/ready" >/dev/null && break; sleep 0.5; done
for _ in $(seq 100); do curl -sf "$vm/health" >/dev/null && break; sleep 0.5; done

# ---- the run: rule groups' evaluation time sampled every 30 s ----
start=$(date +%s)
# metric NAME: the sum of Prometheus' own samples of NAME (any labels)
metric() {
	curl -s "$prom/metrics" | awk -v m="$1" '$1 == m || index($1, m "{") == 1 { s += $2; n++ }
		END { if (n) printf "%.0f\n", s }'
}
echo "bench-fleet: $seconds s from $(date -u +%H:%M:%S)" >&2
samples_at_2m=
: >"$work/rules.tsv"
while [ $(($(date +%s) - start)) -lt "$seconds" ]; do
	sleep "$sample"
	curl -s "$prom/api/v1/rules" | python3 -c '
import json, sys
for g in json.load(sys.stdin)["data"]["groups"]:
    print(g["name"], g.get("evaluationTime", 0), sep="\t")' >>"$work/rules.tsv"
	if [ -z "$samples_at_2m" ] && [ $(($(date +%s) - start)) -ge 120 ]; then
		samples_at_2m="$(date +%s) $(metric prometheus_tsdb_head_samples_appended_total)"
	fi
	echo "  $(($(date +%s) - start)) s: head series $(metric prometheus_tsdb_head_series)" >&2
done
now=$(date +%s)
samples_end=$(metric prometheus_tsdb_head_samples_appended_total)
head_series=$(metric prometheus_tsdb_head_series)
rss=$(metric process_resident_memory_bytes)
# an instant both stores have: just after the last scrape of every target that remote_write has
# brought to victoria-metrics too (it lags a few seconds; a short run under load may end before its first
# scrape reached both, hence the wait)
last_scrape() {
	curl -s "$1/api/v1/query" --data-urlencode 'query=min(timestamp(up{job="cachestat"}))' |
		python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(int(float(r[0]["value"][1])) + 1 if r else "")' 2>/dev/null
}
ts=
for _ in $(seq 60); do
	a=$(last_scrape "$prom") b=$(last_scrape "$vm")
	if [ -n "$a" ] && [ -n "$b" ]; then
		ts=$((a < b ? a : b))
		break
	fi
	sleep 1
done
[ -n "$ts" ] || { echo "bench-fleet: no scrape reached both stores within 60 s of the run's end" >&2; exit 1; }

# ---- the dashboard's queries, against both ----
inst=127.0.0.11:$exporter_port
"$top/dashboards/queries.sh" --tsv --job cachestat --instance "$inst" >"$work/queries.tsv"
# and the fleet dashboard's, over every node (cluster and node: all)
python3 "$top/dashboards/tools/dashtool.py" exprs --tsv --dashboard "$top/dashboards/cachestat-fleet.json" \
	--job cachestat | sed 's/^\([a-z]*\)\t/\1\tfleet: /' >>"$work/queries.tsv"
python3 - "$prom" "$vm" "$ts" "$work/queries.tsv" "$work/rules.tsv" "$head_series" "$rss" \
	"$samples_at_2m" "$now" "$samples_end" "$n_exporters" "$seconds" <<'PY' | tee "$work/figures.txt"
import json, statistics, sys, time, urllib.error, urllib.parse, urllib.request
prom, vm, ts, qfile, rfile = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
head, rss = float(sys.argv[6]), float(sys.argv[7])
t2, s2 = map(float, sys.argv[8].split()) if sys.argv[8] else (None, None)
tend, send, n, seconds = float(sys.argv[9]), float(sys.argv[10]), int(sys.argv[11]), sys.argv[12]

class QueryFailed(Exception):
    pass

def get(base, path, **params):
    url = f"{base}{path}?{urllib.parse.urlencode(params)}"
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=120) as r:
            body = json.load(r)
    except urllib.error.HTTPError as e:
        # the store's own words (a 422 is an execution error: which, and of which query)
        raise QueryFailed(f"{base}{path}: HTTP {e.code}: {e.read().decode(errors='replace')[:300]}")
    return time.monotonic() - t0, body

def timed(base, path, **params):
    runs = [get(base, path, **params) for _ in range(3)]
    return statistics.median(r[0] for r in runs), runs[-1][1]

def series(body):
    out = {}
    for r in body.get("data", {}).get("result", []):
        labels = tuple(sorted((k, v) for k, v in r["metric"].items() if k != "__name__"))
        out[labels] = float(r["value"][1])
    return out

def same(a, b):
    if a.keys() != b.keys():
        return False
    return all(abs(a[k] - b[k]) <= 1e-9 * max(abs(a[k]), abs(b[k]), 1e-300) or a[k] == b[k]
               for k in a)

def how_different(a, b):
    if a.keys() != b.keys():
        return f"{len(a.keys() - b.keys())} series only in Prometheus, {len(b.keys() - a.keys())} only in victoria-metrics"
    worst = max(a, key=lambda k: abs(a[k] - b[k]) / max(abs(a[k]), abs(b[k]), 1e-300))
    return f"same series, largest difference {a[worst]:g} vs {b[worst]:g}"

print(f"Prometheus scraping {n} exporters every 15 s for {seconds} s, every rule file loaded")
print(f"  head series                        {head:,.0f} ({head / n:,.0f} a node)")
print(f"  RSS                                {rss / 2**20:,.1f} MiB = {rss / 2**10 / (head / 1000):,.1f} KiB per 1,000 head series")
if t2:
    print(f"  samples appended per second        {(send - s2) / (tend - t2):,.0f} (from minute 2 to the end)")
groups = {}
for line in open(rfile):
    g, sec = line.rstrip("\n").split("\t")
    groups.setdefault(g, []).append(float(sec))
print("  rule group evaluation time (sampled every 30 s): mean / max ms")
for g, v in sorted(groups.items()):
    print(f"    {g:<30} {1000 * statistics.mean(v):8.1f} / {1000 * max(v):8.1f}")
print("  dashboard queries, one instance's and the fleet's (median of 3, ms): Prometheus instant / 10 min range;"
      " victoria-metrics instant / range; equal at one instant")
equal = total = empty = failed = 0
for line in open(qfile):
    kind, name, expr = line.rstrip("\n").split("\t", 2)
    rng = dict(query=expr, start=ts - 600, end=ts, step=15)
    try:
        pi, pb = timed(prom, "/api/v1/query", query=expr, time=ts)
        pr, _ = timed(prom, "/api/v1/query_range", **rng)
        vi, vb = timed(vm, "/api/v1/query", query=expr, time=ts)
        vr, _ = timed(vm, "/api/v1/query_range", **rng)
    except QueryFailed as e:
        failed += 1
        print(f"    {kind:<8} {name[:44]:<44} FAILED: {e}\n      query: {expr}")
        continue
    a, b = series(pb), series(vb)
    ok = same(a, b)
    empty += not a and not b
    total += 1
    equal += ok
    print(f"    {kind:<8} {name[:44]:<44} {1000 * pi:7.1f} {1000 * pr:7.1f} | {1000 * vi:7.1f} {1000 * vr:7.1f} | "
          f"{'equal' if ok else 'DIFFERENT'} ({len(a)} series{'' if ok else ': ' + how_different(a, b)})")
print(f"  victoria-metrics answered {equal} of {total} dashboard queries as Prometheus did"
      f" ({empty} of them with no series at that instant in either)")
if failed:
    sys.exit(f"bench-fleet: {failed} dashboard queries failed (above)")
PY

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks the Grafana dashboard and the Prometheus rules of dashboards/:
#  - the rule files and the dashboards are what the jsonnet mixin (dashboards/mixin/) generates,
#    and a hand-edited copy is told apart;
#  - every rule file loads (promtool check rules) and its unit tests pass (promtool test rules);
#  - alerts follow the naming, label and annotation conventions and each has a firing and a quiet test;
#  - every PromQL expression of the dashboard parses once its variables are substituted;
#  - the namespace / pod / container names of rules/cachestat.identity.yml filter the dashboard's
#    own queries (promtool test rules on the queries, kube-state-metrics-shaped input);
#  - the dashboard follows the conventions (schemaVersion, uid, titles, descriptions, units,
#    job/instance filters, $__rate_interval);
#  - every family the exporter sends by default (docs/metrics.md) is read by a panel, an alert or a
#    recording rule, or docs/metrics.md says why it stays; every recording rule is read too;
#  - the recording rules record at most their budget of series for a 110-pod node;
#  - each of those checks can fail: broken copies of the dashboard, of the alerts and of
#    docs/metrics.md must be rejected.
# One line per check; the last line is "N passed, N failed, N skipped". Exit status 1 if anything failed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# Debian's Python, whose PyYAML is the one deps.txt installs (not whatever python3 is first in PATH).
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tool=("$py" "$here/tools/dashtool.py")
dashboard=$here/cachestat.json
# shellcheck source=scripts/lib-check.sh
. "$here/../scripts/lib-check.sh"

missing=()
command -v promtool >/dev/null || missing+=("promtool (package prometheus)")
command -v jsonnet >/dev/null || missing+=("jsonnet (package jsonnet)")
"$py" -c 'import yaml' 2>/dev/null || missing+=("python3 with yaml (package python3-yaml)")
if [ ${#missing[@]} -gt 0 ]; then
	ko "tools present: missing ${missing[*]}; run scripts/install-deps.sh"
	finish
fi
ok "tools present: $(promtool --version 2>&1 | head -n 1)"

rule_files=("$here"/rules/*.yml)
test_files=("$here"/tests/*.yml)

# The committed rules and dashboards are the mixin's output: a fresh generation must equal them,
# and the comparison must notice a hand edit (a copy with one alert's `for` changed).
run "rules and dashboards equal a fresh generation from the mixin (mixin/generate.sh --check)" \
	"$here/mixin/generate.sh" --check
# shellcheck disable=SC2154 # tmp: made by scripts/lib-check.sh
mkdir -p "$tmp/edited"
cp -r "$here/rules" "$here"/*.json "$tmp/edited/"
sed -i '0,/for: "10m"/s//for: "5m"/' "$tmp/edited/rules/cachestat.alerts.yml"
reject "the generation check fails on a hand-edited rule file" "$here/mixin/generate.sh" --check "$tmp/edited"

# Rules: load, unit tests, conventions.
for f in "${rule_files[@]}"; do
	run "promtool check rules ${f#"$here"/}" promtool check rules "$f"
done
for f in "${test_files[@]}"; do
	run "promtool test rules ${f#"$here"/}" promtool test rules "$f"
done
tally "${tool[@]}" rules --rule-files "${rule_files[@]}" --tests "${test_files[@]}" --dashboards "$here"/*.json
# The lint of unread recording rules can fail: a rule that nothing reads, added to a copy.
mkdir -p "$tmp/unread"
cp "${rule_files[@]}" "$tmp/unread/"
printf 'groups:\n  - name: unread\n    rules:\n      - record: cgroup:cachestat_cached:unread\n        expr: cachestat_cgroup_cached_bytes\n' \
	>"$tmp/unread/unread.yml"
reject "the rules lint fails on a recording rule that nothing reads" \
	"${tool[@]}" rules --rule-files "$tmp/unread"/*.yml --tests "${test_files[@]}" --dashboards "$here"/*.json

# What the rules record for a node stays within its budget (README, "Recording rules"): promtool
# counts the recorded series, by name, on a 110-pod node of 470 cgroups built by dashtool.py; the
# count fails with one rule more that records a series per cgroup (the copy above).
tally "${tool[@]}" budgettest "$tmp/budget.test.yml" --rule-files "${rule_files[@]}"
run "the rules record the budget's series for a 110-pod node (promtool test rules)" \
	promtool test rules "$tmp/budget.test.yml"
"${tool[@]}" budgettest "$tmp/budget-over.test.yml" --rule-files "$tmp/unread"/*.yml >/dev/null
reject "the budget's count fails on a rule recording a series per cgroup more" \
	promtool test rules "$tmp/budget-over.test.yml"

# Every family the exporter sends by default is read, or docs/metrics.md says why it stays; the
# lint can fail: a copy of docs/metrics.md with a family that nothing reads and no row explains,
# with the fanotify section no longer off by default, with a reason for a family a panel reads.
metrics_doc=$here/../docs/metrics.md
families=("${tool[@]}" families --rule-files "${rule_files[@]}" --dashboards "$here"/*.json)
tally "${families[@]}" --metrics-doc "$metrics_doc"
sed '/^| `cachestat_cgroup_cached_bytes` |/a | `cachestat_cgroup_unread_bytes` | gauge | `cgroup` | read by nothing |' \
	"$metrics_doc" >"$tmp/metrics-unread.md"
reject "the families lint fails on a default family that nothing reads and no row explains" \
	"${families[@]}" --metrics-doc "$tmp/metrics-unread.md"
sed 's/^Collector `fanotify` (off by default, /Collector `fanotify` (/' "$metrics_doc" >"$tmp/metrics-on.md"
reject "the families lint takes a section's families as default when its text does not say off by default" \
	"${families[@]}" --metrics-doc "$tmp/metrics-on.md"
sed 's/`cachestat_log_repeats_suppressed_total` |$/`cachestat_log_repeats_suppressed_total`, `cachestat_cgroup_evicted_bytes` |/' \
	"$metrics_doc" >"$tmp/metrics-read.md"
reject "the families lint fails on a reason given for a family a panel reads" \
	"${families[@]}" --metrics-doc "$tmp/metrics-read.md"

# Every alert's tests can fail: with the alert forced never to fire, or always to fire,
# the unit tests that assert on that alert must notice (the others, the slow tests of other
# alerts, are left out of its runs: all of them take 3 s, and there are two runs an alert).
mkdir -p "$tmp/mut/rules" "$tmp/mut/tests"
while IFS=$'\t' read -r alert file; do
	rm -f "$tmp"/mut/tests/*
	if ! "${tool[@]}" alert-tests "$alert" "$tmp/mut/tests" "${test_files[@]}" >"$tmp/out" 2>&1; then
		ko "the unit tests of $alert"
		continue
	fi
	for mode in never always; do
		cp "${rule_files[@]}" "$tmp/mut/rules/"
		"${tool[@]}" mutate-rule "$file" "$alert" "$mode" "$tmp/mut/rules/$(basename "$file")"
		reject "unit tests catch $alert forced to $mode fire" promtool test rules "$tmp"/mut/tests/*.yml
	done
done < <("${tool[@]}" alerts "${rule_files[@]}")

# Dashboard: JSON, conventions, every expression parses.
run "dashboard is valid JSON" "$py" -m json.tool "$dashboard"
tally "${tool[@]}" lint --dashboard "$dashboard"
if "${tool[@]}" rulefile --dashboard "$dashboard" "$tmp/exprs.yml" >"$tmp/count" 2>"$tmp/out" &&
	promtool check rules "$tmp/exprs.yml" >>"$tmp/out" 2>&1; then
	ok "all $(cat "$tmp/count") dashboard expressions parse (promtool check rules)"
else
	ko "dashboard expressions parse (promtool check rules)"
fi
n_expr=$(cat "$tmp/count" 2>/dev/null || echo 0)
if "$here"/queries.sh --job cachestat --instance 'vm:9451' --cgroup '/a\.slice/b' --namespace 'shop' >"$tmp/q" 2>"$tmp/out" &&
	[ "$(grep -c . "$tmp/q")" -eq "$n_expr" ] && ! grep -q '\$' "$tmp/q" &&
	grep -q 'cgroup=~"/a\\\\.slice/b"' "$tmp/q" && grep -q 'namespace=~"shop", pod=~".\*"' "$tmp/q"; then
	ok "queries.sh prints all $n_expr expressions, variables substituted"
else
	ko "queries.sh prints all $n_expr expressions, variables substituted"
fi

# The namespace / pod / container variables filter what the panels show: the dashboard's
# cached-bytes query with kube-state-metrics-shaped input, through the identity rules.
"${tool[@]}" filtertest "$tmp/filter.test.yml"
run "namespace / pod / container variables filter the panels (promtool test rules)" \
	promtool test rules "$tmp/filter.test.yml"
"${tool[@]}" mutate --dashboard "$dashboard" no-namespace-filter "$tmp/broken.json"
"${tool[@]}" filtertest --dashboard "$tmp/broken.json" "$tmp/filter.test.yml"
reject "the filter test catches a panel that ignores \$namespace" promtool test rules "$tmp/filter.test.yml"

# The top panel says what a node lacks: a target and a text for each thing (bannertest), and each
# target, on nodes that lack one thing or another or nothing, gives its code exactly when the node
# lacks its thing (promtool test rules). A wrong code or a sum over the collectors is caught.
tally "${tool[@]}" bannertest "$tmp/banner.test.yml"
run "the top panel's targets on three kinds of node (promtool test rules)" promtool test rules "$tmp/banner.test.yml"
"${tool[@]}" mutate --dashboard "$dashboard" banner-wrong-code "$tmp/broken.json"
reject "bannertest rejects a target whose code maps to another thing's text" \
	"${tool[@]}" bannertest --dashboard "$tmp/broken.json" "$tmp/broken-banner.yml"
"${tool[@]}" mutate --dashboard "$dashboard" banner-sum "$tmp/broken.json"
"${tool[@]}" bannertest --dashboard "$tmp/broken.json" "$tmp/broken-banner.yml" >/dev/null
reject "the top panel's test catches a sum over the collectors of one reason" \
	promtool test rules "$tmp/broken-banner.yml"

# The dashboard checks can fail: every broken copy must be rejected.
for m in schema-version uid no-title no-description no-unit no-instance-filter bare-metric \
	fixed-rate-window multi-value-equals unknown-variable unused-variable missing-panel datasource-hardcoded \
	no-namespace-filter no-identity-join variable-chain-broken panel-overlap panel-outside-row \
	novalue-silent novalue-no-cause flag-unnamed; do
	"${tool[@]}" mutate --dashboard "$dashboard" "$m" "$tmp/broken.json"
	reject "lint rejects a dashboard with mutation $m" "${tool[@]}" lint --dashboard "$tmp/broken.json"
done
"${tool[@]}" mutate --dashboard "$dashboard" bad-promql "$tmp/broken.json"
"${tool[@]}" rulefile --dashboard "$tmp/broken.json" "$tmp/broken.yml" >/dev/null
reject "promtool rejects a dashboard expression that does not parse" promtool check rules "$tmp/broken.yml"

# The fleet dashboard: recorded series only (rules/cachestat.fleet.yml), filtered by job, cluster
# and node; its expressions parse; a panel on a raw family or without the node filter is rejected.
fleet=$here/cachestat-fleet.json
tally "${tool[@]}" fleetlint --dashboard "$fleet"
if "${tool[@]}" rulefile --dashboard "$fleet" "$tmp/fleet.yml" >"$tmp/count" 2>"$tmp/out" &&
	promtool check rules "$tmp/fleet.yml" >>"$tmp/out" 2>&1; then
	ok "all $(cat "$tmp/count") fleet dashboard expressions parse (promtool check rules)"
else
	ko "fleet dashboard expressions parse (promtool check rules)"
fi
sed 's/instance_pod:cachestat_recently_evicted:top10_bytes/cachestat_cgroup_recently_evicted_bytes/' \
	"$fleet" >"$tmp/fleet-raw.json"
reject "fleetlint rejects a panel on a raw family" "${tool[@]}" fleetlint --dashboard "$tmp/fleet-raw.json"
sed 's/, instance=~\\"\$node\\"//' "$fleet" >"$tmp/fleet-nonode.json"
reject "fleetlint rejects a panel without the node filter" "${tool[@]}" fleetlint --dashboard "$tmp/fleet-nonode.json"

finish

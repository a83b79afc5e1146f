#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prints every PromQL expression of the cachestat dashboard, one per line, with the dashboard's
# variables substituted, so that a test can ask a Prometheus whether each returns data.
#
# Usage: dashboards/queries.sh [--job JOB] [--instance INSTANCE] [--cgroup REGEX]
#                              [--namespace REGEX] [--pod REGEX] [--container REGEX] [--cluster REGEX]
#                              [--rate-interval DURATION] [--panels-only] [--tsv]
#   --job            value for $job (default cachestat)
#   --instance       value for $instance (default localhost:9451)
#   --cgroup         value for $cgroup, a regular expression used with =~ (default .+)
#   --namespace, --pod, --container
#                    values for $namespace, $pod, $container, regular expressions used with =~
#                    (default .*, which also matches cgroups outside Kubernetes)
#   --cluster        value for $cluster, a regular expression used with =~ (default .*, which
#                    also matches series without the label)
#   --rate-interval  value for $__rate_interval (default 1m; at least 4x the scrape interval)
#   --panels-only    leave out the template variables' label_values() selectors
#   --tsv            print "kind<TAB>name<TAB>expression" (kind: panel or variable;
#                    name: "panel title/refId" or the variable's name)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" "$here/tools/dashtool.py" exprs --dashboard "$here/cachestat.json" "$@"

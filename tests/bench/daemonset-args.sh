#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The DaemonSet's exporter as operators deploy it, for the benchmarks that run the exporter as a
# node would: `kubectl kustomize deploy/kubernetes/base` rendered, its container's arguments
# written to DIR/args (one a line, as given) and its ConfigMap's config to DIR/config.json.
# Usage: tests/bench/daemonset-args.sh DIR (lib-node.sh's exporter_args calls it; a machine
# without kubectl, such as the e2e guest, is given the two files made here).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:?usage: daemonset-args.sh DIR}
command -v kubectl >/dev/null || { echo "daemonset-args: kubectl missing" >&2; exit 1; }
mkdir -p "$dir"
kubectl kustomize "$top/deploy/kubernetes/base" >"$dir/rendered.yaml"
python3 - "$dir/rendered.yaml" "$dir/config.json" >"$dir/args" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
ds = next(d for d in docs if d.get("kind") == "DaemonSet")
cm = next(d for d in docs if d.get("kind") == "ConfigMap")
open(sys.argv[2], "w").write(cm["data"]["config.json"])
c = next(c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "cachestat-exporter")
for a in c["args"]:
    print(a)
PY

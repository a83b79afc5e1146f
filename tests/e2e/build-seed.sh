#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds what a boot of the e2e guest attaches besides its root disk, into RUN_DIR:
#   seed.iso     the NoCloud seed (cloud-localds): deploy/cloud-init/user-data.yaml as it is, plus a second
#                cloud-config part for this run only (its ssh key, scratch and swap, a fast scrape interval),
#                joined as MIME multipart;
#   bundle.iso   the drive labelled "cachestat-bundle" that the user-data installs from: the exporter binary,
#                its unit, the Prometheus config and the rules (see the user-data's header);
#   id_ed25519   the run's ssh key.
# Usage: build-seed.sh RUN_DIR
# Environment: E2E_EXPORTER (binary; default exporter/cachestat_exporter, made up to date with make),
#   E2E_UNIT, E2E_PROM_CONFIG, E2E_RULES_DIR (default: the repository's), E2E_SCRAPE_INTERVAL (default 5s),
#   E2E_EXPORTER_CONFIG (the exporter's config.json; default: the suite's own, exporter-config.json).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

run=${1:?usage: build-seed.sh RUN_DIR}
exporter=${E2E_EXPORTER:-$TOP/exporter/cachestat_exporter}
unit=${E2E_UNIT:-$TOP/deploy/systemd/cachestat-exporter.service}
prom_config=${E2E_PROM_CONFIG:-$TOP/deploy/prometheus/prometheus.yml}
rules_dir=${E2E_RULES_DIR:-$TOP/dashboards/rules}
interval=${E2E_SCRAPE_INTERVAL:-5s}
exporter_config=${E2E_EXPORTER_CONFIG:-$E2E_DIR/exporter-config.json}
user_data=$TOP/deploy/cloud-init/user-data.yaml

mkdir -p "$run"
if [ -z "${E2E_EXPORTER:-}" ]; then
	make -s -C "$TOP/exporter" >&2 || die "make -C exporter failed"
fi
for f in "$exporter" "$unit" "$prom_config" "$user_data"; do
	[ -f "$f" ] || die "missing $f"
done
compgen -G "$rules_dir/*.yml" >/dev/null || die "no rule files in $rules_dir"

# The bundle drive.
bundle=$run/bundle
rm -rf "$bundle"
mkdir -p "$bundle/rules"
install -m 0755 "$exporter" "$bundle/cachestat_exporter"
install -m 0644 "$unit" "$bundle/cachestat-exporter.service"
install -m 0644 "$rules_dir"/*.yml "$bundle/rules/"
[ -f "$exporter_config" ] && install -m 0644 "$exporter_config" "$bundle/config.json"
# The operator's scrape config, with every interval shortened so that the cases converge in seconds.
python3 - "$prom_config" "$bundle/prometheus.yml" "$interval" <<'PY'
import sys, yaml
src, dst, interval = sys.argv[1:]
with open(src) as f:
    cfg = yaml.safe_load(f)
glob = cfg.setdefault("global", {})
glob["scrape_interval"] = interval
glob["evaluation_interval"] = interval
glob["scrape_timeout"] = interval
for job in cfg.get("scrape_configs", []):
    job.pop("scrape_interval", None)
    job.pop("scrape_timeout", None)
with open(dst, "w") as f:
    f.write("# " + src.rsplit("/", 3)[-3] + "/prometheus/prometheus.yml with intervals of " + interval + " for the e2e suite\n")
    yaml.safe_dump(cfg, f, sort_keys=False)
PY
genisoimage -quiet -V cachestat-bundle -r -J -o "$run/bundle.iso" "$bundle"

# The run's ssh key and cloud-config part.
[ -f "$run/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C cachestat-e2e -f "$run/id_ed25519"
cat >"$run/run-part.yaml" <<PART
#cloud-config
# This run only: the test's ssh key for root, the scratch and swap disks.
merge_how:
  - name: list
    settings: [append]
  - name: dict
    settings: [no_replace, recurse_list]
disable_root: false
ssh_authorized_keys:
  - $(cat "$run/id_ed25519.pub")
bootcmd:
  - [sh, -c, "mkdir -p /scratch && mount LABEL=cse-scratch /scratch && swapon LABEL=cse-swap"]
PART
cloud-init schema --config-file "$run/run-part.yaml" >/dev/null
cloud-init devel make-mime \
	-a "$user_data:cloud-config" \
	-a "$run/run-part.yaml:cloud-config" >"$run/user-data"
printf 'instance-id: cachestat-e2e-%s\nlocal-hostname: cachestat-guest\n' "$(date +%s)" >"$run/meta-data"
cloud-localds "$run/seed.iso" "$run/user-data" "$run/meta-data"
log "seed: $run/seed.iso, $run/bundle.iso"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds what a boot of the e2e guest attaches besides its root disk, into RUN_DIR:
#   seed.iso     the NoCloud seed (cloud-localds): deploy/cloud-init/user-data.yaml as it is, plus a second
#                cloud-config part for this run only (its ssh key, scratch and swap, a fast scrape interval),
#                joined as MIME multipart;
#   bundle.iso   the drive labelled "cachestat-bundle" that the user-data installs from: the exporter's Debian
#                package (or, with E2E_EXPORTER, a binary and its unit), the Prometheus config and the rules
#                (see the user-data's header), Alertmanager's config (alertmanager.yml: every alert to case 6's
#                webhook receiver); for case 12, not installed: the exporter's OCI image
#                (cachestat-exporter.oci.tar) and its seccomp profile (seccomp/, deploy/seccomp's);
#   id_ed25519   the run's ssh key.
# Usage: build-seed.sh RUN_DIR
# Environment: E2E_DEB (the .deb; default: the one `make deb` left in $BUILD_ROOT/deb when it was built
#   from this tree as it is, else scripts/build-deb.sh's into $BUILD_ROOT/e2e/deb), E2E_EXPORTER (a binary to
#   ship instead of the package, with E2E_UNIT, default deploy/systemd's unit), E2E_OCI (the OCI archive of
#   `make image`; default: make image's or an earlier run's of this commit, else scripts/build-image.sh's into
#   $BUILD_ROOT/e2e/image; "none" ships none, and case 12 skips), E2E_PROM_CONFIG, E2E_RULES_DIR (default: the mixin's
#   rules generated with E2E_RULES_CONFIG, jsonnet overrides of its _config: by default the thrashing alert's
#   `for` at 1 minute, so that case 6 sees it fire and case 16 resolve), E2E_SCRAPE_INTERVAL (default 5s),
#   E2E_EXPORTER_CONFIG (the exporter's config.json; default: the suite's own, exporter-config.json),
#   E2E_EXPORTER_ARGS (flags the user-data adds to the package's, after --scan.min-interval=0; default
#   --collector.numa), E2E_DROPINS (drop-ins of the exporter's unit the user-data installs, space-separated paths;
#   default deploy/systemd's activity.conf, the activity collector that case 17 counts with; "none": none).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
# shellcheck source=scripts/lib-version.sh
source "$TOP/scripts/lib-version.sh"

run=${1:?usage: build-seed.sh RUN_DIR}
exporter=${E2E_EXPORTER:-}
unit=${E2E_UNIT:-$TOP/deploy/systemd/cachestat-exporter.service}
prom_config=${E2E_PROM_CONFIG:-$TOP/deploy/prometheus/prometheus.yml}
rules_dir=${E2E_RULES_DIR:-}
rules_config=${E2E_RULES_CONFIG:-"{alerts+: {CachestatPageCacheThrashing+: {'for': '1m'}}}"}
interval=${E2E_SCRAPE_INTERVAL:-5s}
exporter_config=${E2E_EXPORTER_CONFIG:-$E2E_DIR/exporter-config.json}
user_data=$TOP/deploy/cloud-init/user-data.yaml

# deb_current DIR: the .deb that scripts/build-deb.sh left in DIR, when it was built from this tree as it is
# now: the same version (revision, .dirty) and every source file the same as in the package's source copy.
deb_current() {
	local dir=$1 deb src
	version_of "$TOP"
	deb=$dir/cachestat-exporter_${VERSION}_$(dpkg --print-architecture).deb
	src=$dir/cachestat-exporter-$VERSION
	[ -f "$deb" ] && [ -d "$src" ] || return 1
	# build-deb.sh adds a snapshot entry to the copy's debian/changelog; the version stands for it.
	(cd "$TOP" && git ls-files -z --cached --others --exclude-standard --deduplicate |
		grep -zvx debian/changelog | xargs -0 sha256sum --) >"$run/deb-sources.sha256" || return 1
	(cd "$src" && sha256sum --quiet --status -c "$run/deb-sources.sha256") || return 1
	echo "$deb"
}

# The package to install: E2E_DEB, a current one of `make deb` or of an earlier run, else a new build.
exporter_deb() {
	local own=$E2E_ROOT/deb deb
	if [ -n "${E2E_DEB:-}" ]; then
		echo "$E2E_DEB"
		return
	fi
	exec 7>"$E2E_ROOT/deb.lock"
	flock 7
	# E2E_SHARED_DEB=no (stock.sh, beside e2e, whose OCI image step rebuilds $BUILD_ROOT/deb from scratch):
	# only this suite's own build, under its lock.
	if { [ "${E2E_SHARED_DEB:-}" != no ] && deb=$(deb_current "$BUILD_ROOT/deb"); } || deb=$(deb_current "$own"); then
		log "package: current $deb"
		echo "$deb"
		return
	fi
	log "package: scripts/build-deb.sh into $own (log: $own/build.log)"
	deb=$(BUILD_ROOT=$E2E_ROOT "$TOP/scripts/build-deb.sh" | tail -n 1) || die "scripts/build-deb.sh failed"
	echo "$deb"
}

# The OCI archive of the image (scripts/build-image.sh) of this commit: its tag is the version with "~" and "+"
# written "-"; a tree with changes (.dirty) always builds a new one. It builds the .deb too, beside exporter_deb's.
exporter_oci() {
	local tag f
	if [ -n "${E2E_OCI:-}" ]; then
		echo "$E2E_OCI"
		return
	fi
	exec 7>"$E2E_ROOT/deb.lock"
	flock 7
	version_of "$TOP"
	tag=${VERSION//[~+]/-}
	for f in "$BUILD_ROOT/image/cachestat-exporter_$tag.oci.tar" "$E2E_ROOT/image/cachestat-exporter_$tag.oci.tar"; do
		if [[ $VERSION != *.dirty ]] && [ -f "$f" ]; then
			log "image: current $f"
			echo "$f"
			return
		fi
	done
	log "image: scripts/build-image.sh into $E2E_ROOT/image"
	# Into a folder of its own (a dirty tree's image must not replace make image's), from the .deb and the arm64
	# binary that the package and arm64 suites have built into BUILD_ROOT's caches.
	IMAGE_DIR=$E2E_ROOT/image "$TOP/scripts/build-image.sh" | tail -n 1 || die "scripts/build-image.sh failed"
}

mkdir -p "$run"
oci=${E2E_OCI:-}
[ "$oci" = none ] || oci=$(exporter_oci)
if [ -n "${E2E_EXPORTER:-}" ]; then
	payload=("$exporter" "$unit")
else
	deb=$(exporter_deb)
	payload=("$deb")
fi
for f in "${payload[@]}" "$prom_config" "$user_data"; do
	[ -f "$f" ] || die "missing $f"
done
if [ -z "$rules_dir" ]; then
	rules_dir=$run/rules
	rm -rf "$rules_dir"
	mkdir -p "$rules_dir"
	command -v jsonnet >/dev/null || die "no jsonnet (package jsonnet) to generate the rules"
	jsonnet -J "$TOP/dashboards/mixin" -S -m "$run" --tla-code "config=$rules_config" \
		-e 'function(config) (import "files.jsonnet")(config).rules' >/dev/null ||
		die "jsonnet could not generate the rules with $rules_config"
fi
compgen -G "$rules_dir/*.yml" >/dev/null || die "no rule files in $rules_dir"

# The bundle drive.
bundle=$run/bundle
rm -rf "$bundle"
mkdir -p "$bundle/rules"
if [ -n "${E2E_EXPORTER:-}" ]; then
	install -m 0755 "$exporter" "$bundle/cachestat_exporter"
	install -m 0644 "$unit" "$bundle/cachestat-exporter.service"
else
	install -m 0644 "${payload[0]}" "$bundle/"
fi
if [ "$oci" != none ]; then
	[ -f "$oci" ] || die "missing $oci"
	install -m 0644 "$oci" "$bundle/cachestat-exporter.oci.tar"
	install -D -m 0644 "$TOP"/deploy/seccomp/cachestat-exporter.json "$bundle/seccomp/cachestat-exporter.json"
fi
install -m 0644 "$rules_dir"/*.yml "$bundle/rules/"
install -m 0644 "$E2E_DIR/alertmanager.yml" "$bundle/alertmanager.yml"
[ -f "$exporter_config" ] && install -m 0644 "$exporter_config" "$bundle/config.json"
# Every scrape waits for a scan of its own (the user-data keeps the package's 10 s, in which a case's counts read
# just after its workload could be a scan behind); case 3 reads the refaults per NUMA node, a collector off by default.
printf '%s\n' "--scan.min-interval=0 ${E2E_EXPORTER_ARGS---collector.numa}" >"$bundle/args"
dropins=${E2E_DROPINS:-$TOP/deploy/systemd/cachestat-exporter.service.d/activity.conf}
if [ "$dropins" != none ]; then
	mkdir -p "$bundle/dropins"
	# shellcheck disable=SC2086 # a list of paths
	install -m 0644 $dropins "$bundle/dropins/"
fi
# The operator's scrape config, with every interval shortened so that the cases converge in seconds, and
# the job of case 12's container (:9452 over TLS with a login; named so that the rules' job=~"cachestat.*"
# leaves it out: it is down but while case 12 runs), and the guest's Alertmanager (case 6).
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
cfg["scrape_configs"].append({
    "job_name": "oci-image", "scheme": "https",
    "tls_config": {"ca_file": "/etc/prometheus/e2e-tls/ca.crt", "server_name": "cachestat-exporter"},
    "basic_auth": {"username": "prometheus", "password_file": "/etc/prometheus/e2e-tls/password"},
    "static_configs": [{"targets": ["localhost:9452"]}]})
cfg["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": ["localhost:9093"]}]}]}
with open(dst, "w") as f:
    f.write("# " + src.rsplit("/", 3)[-3] + "/prometheus/prometheus.yml with intervals of " + interval + " for the e2e suite\n")
    yaml.safe_dump(cfg, f, sort_keys=False)
PY
genisoimage -quiet -V cachestat-bundle -r -J -o "$run/bundle.iso" "$bundle"

# The run's ssh key and cloud-config part.
[ -f "$run/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C cachestat-e2e -f "$run/id_ed25519"
# Case 12's TLS and login, as deploy/kubernetes/components/tls lays them out: a CA of this run, the exporter's
# certificate for the name cachestat-exporter, its web config with a bcrypt hash of the password; Prometheus
# gets the CA and the password in files of its own.
tls=$run/tls
rm -rf "$tls"
mkdir -p "$tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=cse-e2e-ca \
	-keyout "$tls/ca.key" -out "$tls/ca.crt" 2>/dev/null &&
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=cachestat-exporter \
		-keyout "$tls/tls.key" -out "$tls/tls.csr" 2>/dev/null &&
	printf 'subjectAltName=DNS:cachestat-exporter\nextendedKeyUsage=serverAuth\n' >"$tls/ext" &&
	openssl x509 -req -in "$tls/tls.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial -days 2 \
		-extfile "$tls/ext" -out "$tls/tls.crt" 2>/dev/null || die "openssl could not make case 12's certificates"
openssl rand -hex 16 >"$tls/password"
printf 'tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\nbasic_auth_users:\n  prometheus: %s\n' \
	"$(python3 -W ignore -c 'import crypt, sys
print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=32)))' "$(cat "$tls/password")")" \
	>"$tls/web-config.yml"
# write_file PATH MODE FILE: a cloud-config write_files entry of FILE's bytes.
write_file() {
	printf '  - path: %s\n    permissions: "%s"\n    encoding: b64\n    content: %s\n' "$1" "$2" "$(base64 -w0 "$3")"
}

cat >"$run/run-part.yaml" <<PART
#cloud-config
# This run only: the test's ssh key for root, the scratch and swap disks, case 12's TLS files.
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
write_files:
$(write_file /etc/cachestat_exporter/web/web-config.yml 0440 "$tls/web-config.yml")
$(write_file /etc/cachestat_exporter/web/tls.crt 0440 "$tls/tls.crt")
$(write_file /etc/cachestat_exporter/web/tls.key 0440 "$tls/tls.key")
$(write_file /etc/prometheus/e2e-tls/ca.crt 0644 "$tls/ca.crt")
$(write_file /etc/prometheus/e2e-tls/password 0644 "$tls/password")
PART
cloud-init schema --config-file "$run/run-part.yaml" >/dev/null
cloud-init devel make-mime \
	-a "$user_data:cloud-config" \
	-a "$run/run-part.yaml:cloud-config" >"$run/user-data"
printf 'instance-id: cachestat-e2e-%s\nlocal-hostname: cachestat-guest\n' "$(date +%s)" >"$run/meta-data"
cloud-localds "$run/seed.iso" "$run/user-data" "$run/meta-data"
log "seed: $run/seed.iso, $run/bundle.iso"

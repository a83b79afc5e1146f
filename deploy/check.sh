#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Validates every deployment file of the project:
#  - yamllint (deploy/.yamllint) over every YAML file under deploy/ and dashboards/;
#  - `cloud-init schema` over the cloud-config files in deploy/cloud-init/;
#  - `systemd-analyze verify` and an offline `systemd-analyze security` of the unit (and of it with
#    the collectors' drop-ins), and the unit's capabilities and hardening against what
#    deploy/README.md promises;
#  - the runtime packages derived from the built binary, against every list of them in deploy/;
#  - the container seccomp profiles of deploy/seccomp (deploy/seccomp/check-profile.py), and that each
#    is what gen-profile.py makes of the runtime's default;
#  - `promtool check config` of the Prometheus configs, with the rules of dashboards/rules/;
#  - the PrometheusRule generated from dashboards/rules/ (deploy/tools/gen-prometheusrule.py);
#  - every Kubernetes manifest against the Kubernetes and Prometheus Operator schemas (npm
#    packages pinned in deploy/tools/schemas, installed once into a cache outside the tree),
#    and a broken copy of each kind rejected;
#  - the Kubernetes manifests' structure (host PID, read-only cgroup mount, the unit's capabilities,
#    Pod Security, priority, probes, the ConfigMap's config loaded by the exporter, the PodMonitor);
#  - that the pieces agree: the binary path, the rule directory, the job names.
# One line per check; the last line is "N passed, N failed, N skipped". Exit status 1 on failure.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
unit=deploy/systemd/cachestat-exporter.service
# shellcheck source=scripts/lib-check.sh
. scripts/lib-check.sh

# Debian's Python, whose PyYAML is the one deps.txt installs (not whatever python3 is first in PATH).
py=/usr/bin/python3
[ -x "$py" ] || py=python3
# The structural checks, a Python program with tests of its own (deploy/tools/test_deploycheck.py).
deploycheck=deploy/tools/deploycheck.py
missing=()
for tool in yamllint cloud-init systemd-analyze promtool "$py"; do
	command -v "$tool" >/dev/null || missing+=("$tool")
done
"$py" -c 'import yaml' 2>/dev/null || missing+=("python3-yaml")
if [ ${#missing[@]} -gt 0 ]; then
	# shellcheck disable=SC2154 # tmp: made by scripts/lib-check.sh
	: >"$tmp/out"
	ko "tools present: missing ${missing[*]} (see deploy/deps.txt; run scripts/install-deps.sh)"
	finish
fi
ok "tools present: yamllint, cloud-init, systemd-analyze, promtool, python3-yaml"

# --- YAML -------------------------------------------------------------------------------------
mapfile -t yamls < <(find deploy dashboards -type f \( -name '*.yaml' -o -name '*.yml' \) | sort)
for f in "${yamls[@]}"; do
	run "yamllint $f" yamllint --strict -f parsable -c deploy/.yamllint "$f"
done

# --- cloud-init -------------------------------------------------------------------------------
shopt -s nullglob
ci_files=(deploy/cloud-init/*.yaml deploy/cloud-init/*.yml)
shopt -u nullglob
if [ ${#ci_files[@]} -eq 0 ]; then
	skipped "cloud-init schema: no deploy/cloud-init/*.yaml yet"
fi
for f in "${ci_files[@]}"; do
	if [ "$(head -n 1 "$f")" != "#cloud-config" ]; then
		skipped "cloud-init schema $f: not a cloud-config file (first line is not #cloud-config)"
		continue
	fi
	run "cloud-init schema --config-file $f" cloud-init schema --config-file "$f"
done

# --- systemd ----------------------------------------------------------------------------------
# systemd-analyze verify needs ExecStart's binary to exist: verify a copy that points at the
# exporter built in the tree, or at /bin/true when it is not built.
exe=$top/exporter/cachestat_exporter
[ -x "$exe" ] || exe=/bin/true
mkdir -p "$tmp/unit"
sed "s#^ExecStart=/usr/bin/cachestat_exporter #ExecStart=$exe #" "$unit" >"$tmp/unit/cachestat-exporter.service"
# verify exits 0 on settings it ignores ("Failed to parse ..., ignoring"): any output is a failure.
if systemd-analyze verify --man=no "$tmp/unit/cachestat-exporter.service" >"$tmp/out" 2>&1 && [ ! -s "$tmp/out" ]; then
	ok "systemd-analyze verify $unit (ExecStart=$exe)"
else
	ko "systemd-analyze verify $unit (ExecStart=$exe)"
fi
# The fanotify variant: the unit with its drop-in (CAP_SYS_ADMIN, the flag), verified together.
mkdir -p "$tmp/unit-fa/cachestat-exporter.service.d"
cp "$tmp/unit/cachestat-exporter.service" "$tmp/unit-fa/"
sed "s#^ExecStart=/usr/bin/cachestat_exporter #ExecStart=$exe #" deploy/systemd/cachestat-exporter.service.d/fanotify.conf \
	>"$tmp/unit-fa/cachestat-exporter.service.d/fanotify.conf"
if systemd-analyze verify --man=no "$tmp/unit-fa/cachestat-exporter.service" >"$tmp/out" 2>&1 && [ ! -s "$tmp/out" ] &&
	grep -q '^ExecStart=.* --collector.fanotify ' "$tmp/unit-fa/cachestat-exporter.service.d/fanotify.conf"; then
	ok "systemd-analyze verify the unit with deploy/systemd/cachestat-exporter.service.d/fanotify.conf"
else
	ko "systemd-analyze verify the unit with deploy/systemd/cachestat-exporter.service.d/fanotify.conf"
fi
# The activity variant: the unit with its drop-in (CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN, bpf and
# perf_event_open allowed back, the flag), verified together; verify is silent about an unknown
# capability or system call, so systemd's own reading of the result (security) must say the service
# may load BPF programs and call both, and of the unit alone that it may not.
dropins=deploy/systemd/cachestat-exporter.service.d
mkdir -p "$tmp/unit-act/cachestat-exporter.service.d"
cp "$tmp/unit/cachestat-exporter.service" "$tmp/unit-act/"
sed "s#^ExecStart=/usr/bin/cachestat_exporter #ExecStart=$exe #" $dropins/activity.conf \
	>"$tmp/unit-act/cachestat-exporter.service.d/activity.conf"
if systemd-analyze verify --man=no "$tmp/unit-act/cachestat-exporter.service" >"$tmp/out" 2>&1 && [ ! -s "$tmp/out" ] &&
	grep -q '^ExecStart=.* --collector.activity ' "$tmp/unit-act/cachestat-exporter.service.d/activity.conf" &&
	grep -qx 'CapabilityBoundingSet=CAP_BPF CAP_PERFMON CAP_SYS_ADMIN' $dropins/activity.conf &&
	grep -qx 'AmbientCapabilities=CAP_BPF CAP_PERFMON CAP_SYS_ADMIN' $dropins/activity.conf; then
	ok "systemd-analyze verify the unit with $dropins/activity.conf (the flag, CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN)"
else
	ko "systemd-analyze verify the unit with $dropins/activity.conf (the flag, CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN)"
fi
# gives_bpf DIR: systemd reads DIR's unit as one that may load BPF programs and call bpf and perf_event_open.
gives_bpf() {
	systemd-analyze security --offline=yes "$1/cachestat-exporter.service" >"$tmp/sec-bpf" 2>&1
	grep -q 'CapabilityBoundingSet=~CAP_BPF  *Service may load BPF programs' "$tmp/sec-bpf" &&
		grep -q 'SystemCallFilter=~@privileged .*(e.g. bpf is allowed)' "$tmp/sec-bpf" &&
		grep -q 'SystemCallFilter=~@debug .*(e.g. perf_event_open is allowed)' "$tmp/sec-bpf"
}
run "systemd-analyze security reads the unit with activity.conf as loading BPF programs, bpf and perf_event_open allowed" \
	gives_bpf "$tmp/unit-act"
reject "systemd-analyze security reads the unit alone as loading no BPF program" gives_bpf "$tmp/unit"
# Both drop-ins set ExecStart=: activity.conf says how to combine them (a third drop-in that sorts
# after both, whose lines it quotes indented below "zz-collectors.conf, with"); that combination
# must verify and name both flags.
mkdir -p "$tmp/unit-both/cachestat-exporter.service.d"
cp "$tmp/unit/cachestat-exporter.service" "$tmp/unit-both/"
cp "$tmp/unit-fa/cachestat-exporter.service.d/fanotify.conf" "$tmp/unit-act/cachestat-exporter.service.d/activity.conf" \
	"$tmp/unit-both/cachestat-exporter.service.d/"
sed -n '/zz-collectors\.conf, with/,/^[^#]/s/^#   //p' $dropins/activity.conf |
	sed "s#^ExecStart=/usr/bin/cachestat_exporter #ExecStart=$exe #" >"$tmp/unit-both/cachestat-exporter.service.d/zz-collectors.conf"
if systemd-analyze verify --man=no "$tmp/unit-both/cachestat-exporter.service" >"$tmp/out" 2>&1 && [ ! -s "$tmp/out" ] &&
	grep -q '^ExecStart=.* --collector.activity --collector.fanotify ' "$tmp/unit-both/cachestat-exporter.service.d/zz-collectors.conf"; then
	ok "systemd-analyze verify the unit with fanotify.conf, activity.conf and the zz-collectors.conf activity.conf describes"
else
	cat "$tmp/unit-both/cachestat-exporter.service.d/zz-collectors.conf" >>"$tmp/out"
	ko "systemd-analyze verify the unit with fanotify.conf, activity.conf and the zz-collectors.conf activity.conf describes"
fi
if systemd-analyze security --offline=yes --threshold=30 "$tmp/unit/cachestat-exporter.service" >"$tmp/sec" 2>&1; then
	ok "systemd-analyze security: $(grep -o 'Overall exposure level.*' "$tmp/sec" | sed 's/ for [^:]*//') (threshold 3.0)"
else
	cp "$tmp/sec" "$tmp/out"
	ko "systemd-analyze security: exposure above 3.0"
fi
# deploy/README.md quotes the figure: it must be the one measured.
exposure=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$tmp/sec")
quoted=$(sed -n 's/.*`systemd-analyze security cachestat-exporter` rates it \([0-9.]*\).*/\1/p' deploy/README.md)
if [ -n "$exposure" ] && [ "$quoted" = "$exposure" ]; then
	ok "deploy/README.md quotes the measured exposure level $exposure"
else
	: >"$tmp/out"
	ko "deploy/README.md quotes exposure level ${quoted:-none}, systemd-analyze security measures ${exposure:-nothing}"
fi

tally "$py" "$deploycheck" unit "$unit"

# A broken unit must be caught: verify reports a bad setting, the structural check a bad capability.
sed 's/^ProtectHome=read-only/ProtectHome=sometimes/' "$tmp/unit/cachestat-exporter.service" >"$tmp/unit/broken.service"
if systemd-analyze verify --man=no "$tmp/unit/broken.service" >"$tmp/out" 2>&1 && [ ! -s "$tmp/out" ]; then
	ko "systemd-analyze verify catches a bad setting (it accepted ProtectHome=sometimes)"
else
	ok "systemd-analyze verify catches a bad setting"
fi

# --- Runtime libraries ------------------------------------------------------------------------
# The Debian packages the binary needs at run time, derived from the built binary: its NEEDED
# entries (objdump -p), the files ldd resolves them to, the packages dpkg -S says own them, in
# link order, without libc6. Every list of them in deploy/ must be exactly that set, so that
# none drifts when the exporter links one more library.
# dpkg_owner FILE: the package owning FILE, trying its real path and the /usr-merged twin.
dpkg_owner() {
	local p q
	for p in "$1" "$(readlink -f "$1")"; do
		for q in "$p" "${p#/usr}" "/usr$p"; do
			dpkg -S "$q" 2>/dev/null | sed -n '1s/:.*//p' | grep . && return 0
		done
	done
	return 1
}
runtime_packages() {
	local soname path pkg
	while read -r soname; do
		path=$(ldd "$exe" | awk -v s="$soname" '$1 == s && $2 == "=>" { print $3 }')
		pkg=$( [ -n "$path" ] && dpkg_owner "$path") || pkg="?$soname"
		[ "$pkg" = libc6 ] || printf '%s\n' "$pkg"
	done < <(objdump -p "$exe" | awk '$1 == "NEEDED" { print $2 }') | awk '!seen[$0]++' | paste -sd ' '
}
if [ "$exe" = /bin/true ]; then
	skipped "runtime libraries: exporter/cachestat_exporter is not built (make -C exporter), nothing to derive the list from"
elif ! command -v objdump >/dev/null; then
	skipped "runtime libraries: objdump missing (package binutils)"
else
	runtime=$(runtime_packages)
	tally "$py" "$deploycheck" runtime-libs "$runtime" deploy/README.md deploy/cloud-init/user-data.yaml \
		deploy/kubernetes/base/daemonset.yaml
fi

# --- The unit's capabilities, on this machine's kernel -----------------------------------------
# A process of another user holds a private (0600) file open and maps a file it then deletes.
# The exporter, run as nobody with exactly the unit's ambient capabilities, must count that
# cgroup's files as root does; with any one capability taken away it must count less.
cap_proof() {
	local cgfs='' d pid cg name caps root_bytes bytes c
	for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
		[ "$(stat -f -c %T "$d" 2>/dev/null)" = cgroup2fs ] && { cgfs=$d; break; }
	done
	if [ "$(id -u)" -ne 0 ]; then skipped "capabilities: needs root to switch users"; return; fi
	if [ ! -x exporter/cachestat_exporter ]; then skipped "capabilities: exporter not built (make -C exporter)"; return; fi
	if [ -z "$cgfs" ] || ! command -v setpriv >/dev/null; then skipped "capabilities: no cgroup v2 mount or no setpriv"; return; fi
	name=deploy-check-$$
	cg=$cgfs/$name
	if ! mkdir "$cg" 2>/dev/null; then skipped "capabilities: cannot create a cgroup under $cgfs"; return; fi
	d=$(mktemp -d /var/tmp/deploy-check.XXXXXX)
	chmod 0755 "$d"
	install -m 0755 exporter/cachestat_exporter "$d/cachestat_exporter"
	mkdir -m 0700 "$d/private"
	head -c $((4 << 20)) /dev/urandom >"$d/private/held.dat"
	head -c $((2 << 20)) /dev/urandom >"$d/private/mapped.dat"
	chown -R 4242:4242 "$d/private"
	chmod 0600 "$d/private"/*.dat
	cat "$d/private"/*.dat >/dev/null
	# The holder: held.dat open, mapped.dat mapped (no descriptor kept) and then deleted.
	(
		echo "$BASHPID" >"$cg/cgroup.procs" &&
			exec setpriv --reuid=4242 --regid=4242 --clear-groups /usr/bin/python3 -c '
import ctypes, os, sys, time
d = sys.argv[1]
held = open(d + "/held.dat", "rb")
# mmap(2) through libc: the mmap module keeps a dup of the descriptor, and the mapping
# must be reachable only through map_files.
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
fd = os.open(d + "/mapped.dat", os.O_RDONLY)
addr = libc.mmap(None, os.fstat(fd).st_size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
if addr in (None, ctypes.c_void_p(-1).value):
    sys.exit("mmap: " + os.strerror(ctypes.get_errno()))
os.close(fd)
os.unlink(d + "/mapped.dat")
print("ready", flush=True)
time.sleep(120)
' "$d/private"
	) >"$d/holder.out" 2>&1 &
	pid=$!
	for _ in $(seq 50); do grep -q ready "$d/holder.out" && break; sleep 0.1; done

	# cached bytes of the test cgroup as seen with the given setpriv capability list (or as root).
	# The exporter walks the test cgroup alone (its label is then "/"): a scan of the whole tree
	# of a busy machine can outlast the scan's time budget before it reaches the test cgroup.
	scan() {
		local out=$d/scan.out
		if [ "$1" = root ]; then
			"$d/cachestat_exporter" --once --path.cgroupfs="$cg" >"$out" 2>/dev/null
		else
			setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps="-all$1" --ambient-caps="-all$1" \
				--bounding-set="-all$1" "$d/cachestat_exporter" --once --path.cgroupfs="$cg" >"$out" 2>/dev/null
		fi
		awk -v m='cachestat_cgroup_cached_bytes{cgroup="/"}' '$1 == m { print $2 }' "$out"
	}
	caps=$(sed -n 's/^AmbientCapabilities=//p' "$unit" | tr 'A-Z' 'a-z')
	if grep -q ready "$d/holder.out"; then
		root_bytes=$(scan root)
		bytes=$(scan "$(for c in $caps; do printf ',+%s' "${c#cap_}"; done)")
		: >"$tmp/out"
		# Equal up to 1%: the page cache of the holder's libraries may move between two scans.
		if [ -n "$root_bytes" ] && [ -n "$bytes" ] && [ "${root_bytes%.*}" -ge $((6 << 20)) ] &&
			[ $(( ${bytes%.*} * 100 )) -ge $(( ${root_bytes%.*} * 99 )) ]; then
			ok "capabilities: as nobody with the unit's $(echo "$caps" | wc -w) capabilities the exporter counts what root counts ($bytes of $root_bytes bytes)"
		else
			ko "capabilities: as nobody with the unit's capabilities the exporter counts ${bytes:-nothing} bytes, root ${root_bytes:-nothing}"
		fi
		for c in $caps; do
			bytes=$(scan "$(for o in $caps; do [ "$o" = "$c" ] || printf ',+%s' "${o#cap_}"; done)")
			bytes=${bytes:-0}
			# Each capability hides at least one of the 2 and 4 MiB test files.
			if [ -n "$root_bytes" ] && [ "${bytes%.*}" -le $(( ${root_bytes%.*} - (1 << 20) )) ]; then
				ok "capabilities: without ${c^^} the exporter counts less ($bytes of $root_bytes bytes)"
			else
				ko "capabilities: without ${c^^} the exporter still counts ${bytes:-nothing} of ${root_bytes:-nothing} bytes: is it needed?"
			fi
		done
	else
		cp "$d/holder.out" "$tmp/out"
		ko "capabilities: the file-holding process did not start"
	fi
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	rmdir "$cg" 2>/dev/null
	rm -rf "$d"
}
cap_proof

# --- Prometheus -------------------------------------------------------------------------------
# rule_files in prometheus.yml are relative to its directory: lay out /etc/prometheus as the
# README says, with the rules of dashboards/rules/ in rules.d/.
mkdir -p "$tmp/etc-prometheus/rules.d"
cp deploy/prometheus/prometheus.yml "$tmp/etc-prometheus/"
cp dashboards/rules/*.yml "$tmp/etc-prometheus/rules.d/"
n_rules=$(find dashboards/rules -name '*.yml' | wc -l)
if promtool check config "$tmp/etc-prometheus/prometheus.yml" >"$tmp/out" 2>&1 &&
	grep -q "SUCCESS: $n_rules rule files found" "$tmp/out"; then
	ok "promtool check config deploy/prometheus/prometheus.yml (loads the $n_rules rule files of dashboards/rules)"
else
	ko "promtool check config deploy/prometheus/prometheus.yml (loads the $n_rules rule files of dashboards/rules)"
fi
cp deploy/prometheus/kubernetes-scrape.yml "$tmp/etc-prometheus/"
if promtool check config "$tmp/etc-prometheus/kubernetes-scrape.yml" >"$tmp/out" 2>&1; then
	ok "promtool check config deploy/prometheus/kubernetes-scrape.yml"
elif grep -q 'field kubernetes_sd_configs not found' "$tmp/out"; then
	skipped "promtool check config deploy/prometheus/kubernetes-scrape.yml: this promtool is built without kubernetes_sd_configs (Debian's); its structure is checked below"
else
	ko "promtool check config deploy/prometheus/kubernetes-scrape.yml"
fi

# --- Kubernetes: the PrometheusRule is generated from dashboards/rules ----------------------------
gen=deploy/tools/gen-prometheusrule.py
if "$py" "$gen" >"$tmp/prometheusrule.yaml" 2>"$tmp/out" &&
	diff -u deploy/kubernetes/base/prometheusrule.yaml "$tmp/prometheusrule.yaml" >"$tmp/out" 2>&1; then
	ok "kubernetes: prometheusrule.yaml is what $gen makes of dashboards/rules"
else
	ko "kubernetes: prometheusrule.yaml differs from dashboards/rules: run $gen >deploy/kubernetes/base/prometheusrule.yaml"
fi
# ... and the comparison can fail: a rule file whose first group is renamed must not match.
mkdir -p "$tmp/rules"
cp dashboards/rules/*.yml "$tmp/rules/"
sed -i '0,/- name: /s/- name: \(.*\)/- name: \1-renamed/' "$tmp/rules/$(ls "$tmp/rules" | head -n 1)"
reject "kubernetes: the comparison notices a changed rule file" \
	sh -c '"$1" "$2" --rules-dir "$3" | diff -q deploy/kubernetes/base/prometheusrule.yaml -' sh "$py" "$gen" "$tmp/rules"

# --- Seccomp profile for container runtimes ------------------------------------------------------
# deploy/seccomp/cachestat-exporter.json: valid, an allow list, cachestat allowed unconditionally, every
# call of the exporter's own filter allowed, nothing else granted by the exporter's capabilities; a copy
# without cachestat must fail; and it must be what
# gen-profile.py makes of this host's runtime default (podman's, from containers-common), if it has one.
profile=deploy/seccomp/cachestat-exporter.json
tally "$py" deploy/seccomp/check-profile.py "$profile"
"$py" -c 'import json, sys
p = json.load(open(sys.argv[1]))
for r in p["syscalls"]:
    r["names"] = [n for n in r["names"] if n != "cachestat"]
json.dump(p, sys.stdout)' "$profile" >"$tmp/no-cachestat.json"
reject "seccomp: the check refuses a copy of the profile without cachestat" \
	"$py" deploy/seccomp/check-profile.py "$tmp/no-cachestat.json"
# The fanotify variant's profile: open_by_handle_at allowed; the overlay names it.
fa_profile=deploy/seccomp/cachestat-exporter-fanotify.json
tally "$py" deploy/seccomp/check-profile.py --fanotify "$fa_profile"
reject "seccomp: the fanotify check refuses the base profile (no open_by_handle_at)" \
	"$py" deploy/seccomp/check-profile.py --fanotify "$profile"
check "seccomp: the fanotify overlay of the DaemonSet uses $fa_profile" \
	grep -q "value: ${fa_profile##*/}\$" deploy/kubernetes/components/fanotify/kustomization.yaml
# The activity variant's profile: bpf and perf_event_open allowed to CAP_BPF and CAP_PERFMON; the
# overlay names it. With the fanotify component too, fanotify's profile applies (listed after
# activity, as the components' header says and the render of all of them below does): with the
# capabilities of both, it must allow what both collectors call.
act_profile=deploy/seccomp/cachestat-exporter-activity.json
tally "$py" deploy/seccomp/check-profile.py --activity "$act_profile"
reject "seccomp: the activity check refuses the base profile (bpf and perf_event_open to CAP_SYS_ADMIN only)" \
	"$py" deploy/seccomp/check-profile.py --activity "$profile"
check "seccomp: the activity overlay of the DaemonSet uses $act_profile" \
	grep -q "value: ${act_profile##*/}\$" deploy/kubernetes/components/activity/kustomization.yaml
run "seccomp: $fa_profile allows what both collectors call, with the capabilities of both components (check-profile.py --fanotify --activity)" \
	"$py" deploy/seccomp/check-profile.py --fanotify --activity "$fa_profile"
runtime_default=/usr/share/containers/seccomp.json
for variant in "" --fanotify --activity; do
	case $variant in
	--fanotify) p=$fa_profile ;;
	--activity) p=$act_profile ;;
	*) p=$profile ;;
	esac
	if [ ! -r "$runtime_default" ]; then
		skipped "seccomp: $p against the runtime default: no $runtime_default here (package golang-github-containers-common)"
	elif "$py" deploy/seccomp/gen-profile.py $variant "$runtime_default" >"$tmp/profile.json" 2>"$tmp/out" &&
		diff -u "$p" "$tmp/profile.json" >"$tmp/out" 2>&1; then
		ok "seccomp: $p is $runtime_default with the exporter's calls added and its capabilities' other grants refused (deploy/seccomp/gen-profile.py $variant)"
	else
		ko "seccomp: $p is not what deploy/seccomp/gen-profile.py $variant makes of $runtime_default: regenerate it"
	fi
done

# --- Kubernetes: every variant rendered by kubectl kustomize ---------------------------------------
# The base and one variant per component (deploy/kubernetes/variants/), rendered as an operator's
# `kubectl apply -k` would; every later check reads these renders, not the source files.
mkdir -p "$tmp/render"
renders=()
if ! command -v kubectl >/dev/null; then
	: >"$tmp/out"
	ko "kubectl kustomize: kubectl is needed (deploy/deps.txt)"
else
	for dir in deploy/kubernetes/base deploy/kubernetes/variants/*/; do
		dir=${dir%/}
		name=${dir##*/}
		if kubectl kustomize "$dir" >"$tmp/render/$name.yaml" 2>"$tmp/out"; then
			renders+=("$name=$tmp/render/$name.yaml")
			ok "kubectl kustomize $dir ($(grep -c '^kind:' "$tmp/render/$name.yaml") objects)"
		else
			ko "kubectl kustomize $dir"
		fi
	done
	# Every component together with the others: a kustomization of an operator's own.
	mkdir -p "$tmp/all"
	cp -r deploy/kubernetes "$tmp/all/"
	mkdir -p "$tmp/all/kubernetes/variants/all"
	{
		printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../../base\ncomponents:\n'
		for c in deploy/kubernetes/components/*/; do c=${c%/}; printf '  - ../../components/%s\n' "${c##*/}"; done
	} >"$tmp/all/kubernetes/variants/all/kustomization.yaml"
	run "kubectl kustomize: the base with every component at once" kubectl kustomize "$tmp/all/kubernetes/variants/all"
	# ... where fanotify, listed after activity, sets the profile: the one that allows both collectors' calls.
	kubectl kustomize "$tmp/all/kubernetes/variants/all" 2>/dev/null | "$py" -c 'import sys, yaml
ds = next(d for d in yaml.safe_load_all(sys.stdin) if d and d["kind"] == "DaemonSet")
sc = ds["spec"]["template"]["spec"]["containers"][0]["securityContext"]
added = [c for c in sc["capabilities"]["add"] if c in ("SYS_ADMIN", "BPF", "PERFMON")]
print(sc["seccompProfile"]["localhostProfile"], *sorted(set(added)))' >"$tmp/all/got" 2>&1
	eq "kubectl kustomize: every component at once runs with the fanotify profile and SYS_ADMIN, BPF, PERFMON" \
		"$(cat "$tmp/all/got")" "${fa_profile##*/} BPF PERFMON SYS_ADMIN"
	# Broken copies: an overlay inside its own base (a cycle) and a patch of a field that is not there.
	mkdir -p "$tmp/broken"
	cp -r deploy/kubernetes "$tmp/broken/"
	mkdir -p "$tmp/broken/kubernetes/base/nested"
	printf 'resources:\n  - ..\n' >"$tmp/broken/kubernetes/base/nested/kustomization.yaml"
	reject "kubectl kustomize refuses an overlay inside its own base (cycle)" kubectl kustomize "$tmp/broken/kubernetes/base/nested"
	sed -i 's#/securityContext/seccompProfile/localhostProfile#/securityContext/seccompProfil/localhostProfile#' \
		"$tmp/broken/kubernetes/components/fanotify/kustomization.yaml"
	reject "kubectl kustomize refuses a component patching a field the base lacks" \
		kubectl kustomize "$tmp/broken/kubernetes/variants/fanotify"
fi

# The structural checks' own tests: each check fails on a broken object.
run "deploy/tools/test_deploycheck.py" "$py" -m unittest -q deploy/tools/test_deploycheck.py

# --- Kubernetes: every manifest against the real schemas -----------------------------------------
# Kubernetes' OpenAPI models and the Prometheus Operator's CRDs, from npm at the versions pinned in
# deploy/tools/schemas/package-lock.json, installed once into a cache outside the repository.
schemas=${CACHESTAT_SCHEMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cachestat-exporter/deploy-schemas}
install_schemas() {
	if cmp -s deploy/tools/schemas/package-lock.json "$schemas/installed-lock.json" && [ -d "$schemas/node_modules" ]; then
		return 0
	fi
	mkdir -p "$schemas" && rm -f "$schemas/installed-lock.json" &&
		cp deploy/tools/schemas/package.json deploy/tools/schemas/package-lock.json "$schemas/" &&
		(cd "$schemas" && npm ci --no-audit --no-fund --loglevel=error) &&
		cp deploy/tools/schemas/package-lock.json "$schemas/installed-lock.json"
}
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	: >"$tmp/out"
	ko "kubernetes schemas: node and npm are needed (Debian packages nodejs and npm; deploy/deps.txt)"
elif ! install_schemas >"$tmp/out" 2>&1; then
	ko "kubernetes schemas: npm ci of deploy/tools/schemas into $schemas failed"
else
	ok "kubernetes schemas: $(cd "$schemas" && node -p 'const v = (p) => require(p + "/package.json").version;
		"kubernetes-models " + v("kubernetes-models") + ", @kubernetes-models/prometheus-operator " +
		v("@kubernetes-models/prometheus-operator")' 2>&1) in $schemas"
	# Every object of every variant, as kubectl kustomize renders it.
	"$py" "$deploycheck" manifests-json "${renders[@]}" >"$tmp/manifests.json"
	NODE_PATH=$schemas/node_modules tally node deploy/tools/schemas/validate.js <"$tmp/manifests.json"
	NODE_PATH=$schemas/node_modules tally node deploy/tools/schemas/validate.js --broken <"$tmp/manifests.json"
fi

# --- Kubernetes: the ConfigMap's --config.file loads ----------------------------------------------
"$py" -c 'import sys, yaml; sys.stdout.write(yaml.safe_load(open(sys.argv[1]))["data"]["config.json"])' \
	deploy/kubernetes/base/configmap.yaml >"$tmp/config.json" 2>"$tmp/out"
if [ "$exe" = /bin/true ]; then
	run "kubernetes: the ConfigMap's config.json is JSON (the exporter is not built to load it)" \
		"$py" -m json.tool "$tmp/config.json"
else
	# A scan of empty directories: only the config is at stake (a cgroup.procs makes the
	# directory pass the exporter's check that --path.cgroupfs is a cgroup directory).
	mkdir -p "$tmp/empty/cgroup" "$tmp/empty/proc"
	: >"$tmp/empty/cgroup/cgroup.procs"
	once() {
		"$exe" --once --no-security.drop-privileges --config.file="$1" \
			--path.cgroupfs="$tmp/empty/cgroup" --path.procfs="$tmp/empty/proc"
	}
	run "kubernetes: the exporter loads the ConfigMap's config.json (--once --config.file)" once "$tmp/config.json"
	sed 's/"limits"/"limitz"/' "$tmp/config.json" >"$tmp/config-broken.json"
	reject "kubernetes: the exporter refuses the ConfigMap's config.json with an unknown key" once "$tmp/config-broken.json"
fi

# --- Kubernetes: the tls component served as its PodMonitor scrapes ------------------------------
# The Secret's files as the component's comment says to make them, in a directory standing for its
# mount; the exporter started with the rendered --web.config.file's name in it; curl asks as the
# PodMonitor does: the CA from the scrape Secret, serverName cachestat-exporter, the login.
tls_serve() {
	local web=$tmp/tls/web ca=$tmp/tls/ca port log=$tmp/tls/exporter.log pid rc=1 arg
	mkdir -p "$web" "$ca" "$tmp/empty/cgroup" "$tmp/empty/proc"
	: >"$tmp/empty/cgroup/cgroup.procs"
	arg=$("$py" -c 'import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "DaemonSet":
        print(next(a for a in d["spec"]["template"]["spec"]["containers"][0]["args"] if a.startswith("--web.config.file=")))' \
		"$tmp/render/tls.yaml") || return 1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=cse-ca \
		-keyout "$ca/ca.key" -out "$ca/ca.crt" 2>/dev/null &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=cachestat-exporter \
			-keyout "$web/tls.key" -out "$ca/tls.csr" 2>/dev/null &&
		printf 'subjectAltName=DNS:cachestat-exporter\nextendedKeyUsage=serverAuth\n' >"$ca/ext" &&
		openssl x509 -req -in "$ca/tls.csr" -CA "$ca/ca.crt" -CAkey "$ca/ca.key" -CAcreateserial -days 2 \
			-extfile "$ca/ext" -out "$web/tls.crt" 2>/dev/null || return 1
	printf 'tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\nbasic_auth_users:\n  prometheus: %s\n' \
		"$("$py" -W ignore -c 'import crypt; print(crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=32)))')" \
		>"$web/${arg##*/}"
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	"$exe" --no-security.drop-privileges --web.listen-address="127.0.0.1:$port" --web.config.file="$web/${arg##*/}" \
		--path.cgroupfs="$tmp/empty/cgroup" --path.procfs="$tmp/empty/proc" 2>"$log" &
	pid=$!
	for _ in $(seq 300); do grep -qi 'listening on' "$log" && break; sleep 0.1; done
	# Up to three scrapes, a second apart, as Prometheus scrapes again: on a loaded machine the first has
	# failed now and then (seen twice, not explained); each failure says what curl got, and the log follows.
	for _ in 1 2 3; do
		curl -s --max-time 20 --resolve "cachestat-exporter:$port:127.0.0.1" --cacert "$ca/ca.crt" \
			-u "prometheus:$1" -o "$tmp/tls/body" -w '%{http_code}' "https://cachestat-exporter:$port/metrics" \
			>"$tmp/tls/code" 2>"$tmp/tls/curl.err"
		grep -q '^cachestat_syscall_info' "$tmp/tls/body" 2>/dev/null && { rc=0; break; }
		[ "$(cat "$tmp/tls/code")" = 401 ] && break # the login refused: no retry changes that
		echo "tls_serve: a scrape got HTTP $(cat "$tmp/tls/code") $(head -c 200 "$tmp/tls/curl.err")" |
			tee -a "$tmp/tls/retried" >&2
		sleep 1
	done
	[ "$rc" -eq 0 ] || sed 's/^/  exporter: /' "$log" >&2
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return "$rc"
}
if [ "$exe" = /bin/true ] || [ ! -s "$tmp/render/tls.yaml" ] || ! command -v openssl >/dev/null; then
	skipped "kubernetes tls: the component's layout is not served (needs the built exporter, openssl and the render)"
else
	run "kubernetes tls: the exporter serves the Secret's layout; the PodMonitor's CA, serverName and login get /metrics" \
		tls_serve s3cret
	# a scrape that needed a retry is said even when the check passes
	[ ! -s "$tmp/tls/retried" ] || sed 's/^/    note: /' "$tmp/tls/retried"
	reject "kubernetes tls: the same scrape with a wrong password is refused" tls_serve wrong
fi

# --- Kubernetes and agreement between the parts --------------------------------------------------
tally "$py" "$deploycheck" kubernetes --unit "$unit" --base-dir deploy/kubernetes/base "${renders[@]}"
tally "$py" "$deploycheck" agreement --unit "$unit" --rendered "$tmp/render/base.yaml"

finish

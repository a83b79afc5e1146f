#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Validates every deployment file of the project:
#  - yamllint (deploy/.yamllint) over every YAML file under deploy/ and dashboards/;
#  - `cloud-init schema` over the cloud-config files in deploy/cloud-init/;
#  - `systemd-analyze verify` and an offline `systemd-analyze security` of the unit, and the unit's
#    capabilities and hardening against what deploy/README.md promises;
#  - the runtime packages derived from the built binary, against every list of them in deploy/;
#  - the container seccomp profile of deploy/seccomp (deploy/seccomp/check-profile.py), and that it is
#    what gen-profile.py makes of the runtime's default;
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

tally "$py" - "$unit" <<'PY'
import re, sys

CAPS = {"CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH", "CAP_CHECKPOINT_RESTORE", "CAP_FOWNER"}
path = sys.argv[1]
text = open(path).read()
settings = {}
for line in text.splitlines():
    m = re.match(r"^([A-Za-z]+)=(.*)$", line)
    if m:
        settings.setdefault(m.group(1), []).append(m.group(2).strip())
comments = "\n".join(l for l in text.splitlines() if l.lstrip().startswith("#"))

def one(key):
    return settings.get(key, [""])[-1]

def check(what, problems):
    print(("FAIL: %s: %s" % (what, "; ".join(problems))) if problems else "PASS: %s" % what)

for key in ("CapabilityBoundingSet", "AmbientCapabilities"):
    got = set(one(key).split())
    check("unit %s is exactly %s" % (key, " ".join(sorted(CAPS))),
          [] if got == CAPS else ["has %s" % " ".join(sorted(got)) or "nothing"])
check("unit explains each capability in a comment",
      ["%s not explained" % c for c in sorted(CAPS) if not re.search(r"#\s+%s\s+\S" % c, comments)])
want = {"ProtectSystem": "strict", "ProtectHome": "read-only", "PrivateTmp": "yes", "NoNewPrivileges": "yes",
        "DynamicUser": "yes", "PrivateDevices": "yes", "ProtectKernelTunables": "yes",
        "ProtectControlGroups": "yes", "RestrictNamespaces": "yes", "MemoryDenyWriteExecute": "yes",
        "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX", "SystemCallArchitectures": "native"}
check("unit hardening settings", ["%s=%s, want %s" % (k, one(k), v) for k, v in want.items() if one(k) != v])
problems = []
for key in ("PrivateUsers", "ProtectProc", "ProcSubset"):
    if key in settings:
        problems.append("%s would hide other users' processes or void the capabilities" % key)
check("unit sets nothing that blinds the exporter", problems)
filters = settings.get("SystemCallFilter", [])
# The first SystemCallFilter= sets the mode: after a deny list, lines without "~" only take
# syscalls back out of it; after an allow list, every line without "~" is part of the allow list.
allow = [f for f in filters if not f.startswith("~")] if filters and not filters[0].startswith("~") else []
problems = ["allow list %r without cachestat: syscall 451 would fail with ENOSYS" % f
            for f in allow if "cachestat" not in f.split()]
if not filters:
    problems.append("no SystemCallFilter")
for f in filters:
    if f.startswith("~") and re.search(r"(^|[\s~])(cachestat|@default|@basic-io|@file-system|@network-io|@io-event)(\s|$)", f):
        problems.append("deny list %r takes away what the exporter needs" % f)
check("unit system call filter keeps cachestat (syscall 451) allowed", problems)
check("unit has memory and task limits",
      [k for k in ("MemoryMax", "TasksMax") if not one(k)])
check("unit runs /usr/bin/cachestat_exporter with $ARGS and reloads with SIGHUP",
      ([] if re.fullmatch(r"/usr/bin/cachestat_exporter \$ARGS", one("ExecStart")) else ["ExecStart=%s" % one("ExecStart")])
      + ([] if re.search(r"kill -HUP \$MAINPID", one("ExecReload")) else ["ExecReload=%s" % one("ExecReload")]))
PY

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
	tally "$py" - "$runtime" deploy/README.md deploy/cloud-init/user-data.yaml deploy/kubernetes/daemonset.yaml <<'PY'
import re, sys
want = sys.argv[1].split()
print(("FAIL: runtime libraries: cannot tell the package of %s" % " ".join(w[1:] for w in want if w.startswith("?")))
      if any(w.startswith("?") for w in want) else "PASS: runtime libraries of the binary: %s" % " ".join(want))
for path in sys.argv[2:]:
    lists = []
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        got = set(re.findall(r"\b(lib[a-z0-9][a-z0-9.+-]*[0-9]|zlib1g)\b", line)) - {"libc6"}
        if got & set(want):
            lists.append((n, got))
    problems = ["line %d lacks %s" % (n, " ".join(w for w in want if w not in got)) for n, got in lists if set(want) - got]
    problems += ["line %d names %s, which the binary does not need" % (n, " ".join(sorted(got - set(want))))
                 for n, got in lists if got - set(want)]
    if not lists:
        problems.append("no list of the runtime packages")
    print(("FAIL: runtime libraries listed in %s: %s" % (path, "; ".join(problems))) if problems
          else "PASS: runtime libraries listed in %s (%d place%s) are the binary's" % (path, len(lists), "s"[:len(lists) > 1]))
PY
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
	diff -u deploy/kubernetes/prometheusrule.yaml "$tmp/prometheusrule.yaml" >"$tmp/out" 2>&1; then
	ok "kubernetes: prometheusrule.yaml is what $gen makes of dashboards/rules"
else
	ko "kubernetes: prometheusrule.yaml differs from dashboards/rules: run $gen >deploy/kubernetes/prometheusrule.yaml"
fi
# ... and the comparison can fail: a rule file whose first group is renamed must not match.
mkdir -p "$tmp/rules"
cp dashboards/rules/*.yml "$tmp/rules/"
sed -i '0,/- name: /s/- name: \(.*\)/- name: \1-renamed/' "$tmp/rules/$(ls "$tmp/rules" | head -n 1)"
reject "kubernetes: the comparison notices a changed rule file" \
	sh -c '"$1" "$2" --rules-dir "$3" | diff -q deploy/kubernetes/prometheusrule.yaml -' sh "$py" "$gen" "$tmp/rules"

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
	grep -q "value: ${fa_profile##*/}\$" deploy/kubernetes/fanotify/kustomization.yaml
runtime_default=/usr/share/containers/seccomp.json
for variant in "" --fanotify; do
	p=$profile
	[ -z "$variant" ] || p=$fa_profile
	if [ ! -r "$runtime_default" ]; then
		skipped "seccomp: $p against the runtime default: no $runtime_default here (package golang-github-containers-common)"
	elif "$py" deploy/seccomp/gen-profile.py $variant "$runtime_default" >"$tmp/profile.json" 2>"$tmp/out" &&
		diff -u "$p" "$tmp/profile.json" >"$tmp/out" 2>&1; then
		ok "seccomp: $p is $runtime_default with the exporter's calls added and its capabilities' other grants refused (deploy/seccomp/gen-profile.py $variant)"
	else
		ko "seccomp: $p is not what deploy/seccomp/gen-profile.py $variant makes of $runtime_default: regenerate it"
	fi
done

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
	# The manifests as JSON: one entry per document. kustomization.yaml is no API object.
	"$py" - >"$tmp/manifests.json" <<'PY'
import glob, json, yaml
out = []
for path in sorted(glob.glob("deploy/kubernetes/**/*.yaml", recursive=True)):
    if path.endswith("/kustomization.yaml"):
        continue
    for doc in yaml.safe_load_all(open(path, encoding="utf-8")):
        if doc:
            out.append({"file": path, "doc": doc})
# The fanotify overlay: its JSON patches (op "add" only) applied to the base DaemonSet.
import copy
over = yaml.safe_load(open("deploy/kubernetes/fanotify/kustomization.yaml", encoding="utf-8"))
for entry in over["patches"]:
    ds = copy.deepcopy(next(o["doc"] for o in out if o["doc"].get("kind") == entry["target"]["kind"]))
    for op in yaml.safe_load(entry["patch"]):
        assert op["op"] == "add", op
        *parents, last = op["path"].strip("/").split("/")
        node = ds
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if last == "-":
            node.append(op["value"])
        else:
            node[last] = op["value"]
    out.append({"file": "deploy/kubernetes/fanotify (the base DaemonSet patched)", "doc": ds})
print(json.dumps(out))
PY
	NODE_PATH=$schemas/node_modules tally node deploy/tools/schemas/validate.js <"$tmp/manifests.json"
	NODE_PATH=$schemas/node_modules tally node deploy/tools/schemas/validate.js --broken <"$tmp/manifests.json"
fi

# --- Kubernetes: the ConfigMap's --config.file loads ----------------------------------------------
"$py" -c 'import sys, yaml; sys.stdout.write(yaml.safe_load(open(sys.argv[1]))["data"]["config.json"])' \
	deploy/kubernetes/configmap.yaml >"$tmp/config.json" 2>"$tmp/out"
if [ "$exe" = /bin/true ]; then
	run "kubernetes: the ConfigMap's config.json is JSON (the exporter is not built to load it)" \
		"$py" -m json.tool "$tmp/config.json"
else
	# A scan of empty directories: only the config is at stake.
	mkdir -p "$tmp/empty/cgroup" "$tmp/empty/proc"
	once() {
		"$exe" --once --no-security.drop-privileges --config.file="$1" \
			--path.cgroupfs="$tmp/empty/cgroup" --path.procfs="$tmp/empty/proc"
	}
	run "kubernetes: the exporter loads the ConfigMap's config.json (--once --config.file)" once "$tmp/config.json"
	sed 's/"limits"/"limitz"/' "$tmp/config.json" >"$tmp/config-broken.json"
	reject "kubernetes: the exporter refuses the ConfigMap's config.json with an unknown key" once "$tmp/config-broken.json"
fi

# --- Kubernetes and agreement between the parts --------------------------------------------------
tally "$py" - "$unit" <<'PY'
import glob, os, re, sys
import yaml

unit = open(sys.argv[1]).read()
caps = set(re.search(r"^CapabilityBoundingSet=(.*)$", unit, re.M).group(1).split())

def check(what, problems):
    print(("FAIL: %s: %s" % (what, "; ".join(problems))) if problems else "PASS: %s" % what)

docs = {}
for path in sorted(glob.glob("deploy/kubernetes/*.yaml")):
    for doc in yaml.safe_load_all(open(path)):
        if doc:
            docs.setdefault(doc.get("kind"), []).append((path, doc))

def get(kind):
    items = docs.get(kind) or [(None, {})]
    return items[0][1]

ds, svc, sa = get("DaemonSet"), get("Service"), get("ServiceAccount")
pod = ds.get("spec", {}).get("template", {})
spec = pod.get("spec", {})
containers = spec.get("containers") or [{}]
c = containers[0]
sc = c.get("securityContext") or {}
capctx = sc.get("capabilities") or {}

KINDS = ("Namespace", "PriorityClass", "ServiceAccount", "ConfigMap", "DaemonSet", "Service", "PodMonitor",
         "PrometheusRule")
check("kubernetes: %s present" % ", ".join(KINDS), [k for k in KINDS if k not in docs])
check("kubernetes: DaemonSet shares the host PID namespace", [] if spec.get("hostPID") is True else ["hostPID is not true"])
check("kubernetes: capabilities drop ALL and add exactly the unit's",
      ([] if capctx.get("drop") == ["ALL"] else ["drop is %r" % capctx.get("drop")])
      + ([] if set("CAP_" + x for x in capctx.get("add") or []) == caps
         else ["add is %r, the unit has %s" % (capctx.get("add"), " ".join(sorted(caps)))]))
seccomp = sc.get("seccompProfile") or {}
check("kubernetes: seccompProfile Localhost, a profile of deploy/seccomp (it allows cachestat)",
      [] if seccomp.get("type") == "Localhost"
      and os.path.isfile(os.path.join("deploy/seccomp", seccomp.get("localhostProfile") or "-"))
      else ["seccompProfile is %r" % seccomp])
check("kubernetes: read-only root filesystem, no privilege escalation, not privileged",
      [k for k, v in (("readOnlyRootFilesystem", True), ("allowPrivilegeEscalation", False), ("privileged", False))
       if sc.get(k) is not v])
res = c.get("resources") or {}
check("kubernetes: container has resource requests and limits",
      [k for k in ("requests", "limits") if not (res.get(k) or {}).get("memory")])

problems = []
cg_arg = next((a.split("=", 1)[1] for a in c.get("args", []) if a.startswith("--path.cgroupfs=")), None)
mounts = {m.get("mountPath"): m for m in c.get("volumeMounts", [])}
vols = {v.get("name"): v for v in spec.get("volumes", [])}
m = mounts.get(cg_arg)
if not cg_arg:
    problems.append("no --path.cgroupfs argument")
elif not m:
    problems.append("nothing mounted at --path.cgroupfs=%s" % cg_arg)
else:
    if m.get("readOnly") is not True:
        problems.append("cgroup mount is not readOnly")
    hp = (vols.get(m.get("name")) or {}).get("hostPath", {}).get("path")
    if hp != "/sys/fs/cgroup":
        problems.append("cgroup volume is hostPath %r" % hp)
check("kubernetes: the node's /sys/fs/cgroup mounted read-only at --path.cgroupfs", problems)

problems = []
labels = pod.get("metadata", {}).get("labels", {})
sel = svc.get("spec", {}).get("selector", {})
if not sel or any(labels.get(k) != v for k, v in sel.items()):
    problems.append("Service selector %r does not match the pod labels %r" % (sel, labels))
ports = {p.get("name"): p for p in c.get("ports", [])}
for p in svc.get("spec", {}).get("ports", []):
    if p.get("targetPort") not in ports and p.get("targetPort") not in [q.get("containerPort") for q in ports.values()]:
        problems.append("Service targetPort %r is no container port" % p.get("targetPort"))
if (ports.get("metrics") or {}).get("containerPort") != 9451:
    problems.append("container port 'metrics' is not 9451")
ann = svc.get("metadata", {}).get("annotations", {})
if ann.get("prometheus.io/scrape") != "true" or ann.get("prometheus.io/port") != "9451":
    problems.append("Service lacks prometheus.io/scrape and port annotations")
check("kubernetes: Service selects the DaemonSet's pods on port 9451, annotated for Prometheus", problems)

problems = []
if spec.get("serviceAccountName") != sa.get("metadata", {}).get("name"):
    problems.append("serviceAccountName %r is not the ServiceAccount" % spec.get("serviceAccountName"))
if sa.get("automountServiceAccountToken") is not False or spec.get("automountServiceAccountToken") is not False:
    problems.append("service account token is mounted")
namespaces = {d.get("metadata", {}).get("namespace") for k, items in docs.items() if k != "Namespace"
              for _, d in items if k != "Kustomization"}
namespaces.discard(None)
if len(namespaces) != 1:
    problems.append("objects spread over namespaces %r" % sorted(namespaces))
check("kubernetes: own token-less ServiceAccount, one namespace", problems)

# Pod Security admission: hostPID, hostPath volumes and capabilities beyond the baseline list
# (SYS_PTRACE, DAC_READ_SEARCH, CHECKPOINT_RESTORE) are allowed by the "privileged" level only.
ns = get("Namespace")
ns_labels = ns.get("metadata", {}).get("labels") or {}
problems = []
if ns.get("metadata", {}).get("name") not in namespaces:
    problems.append("Namespace %r is not the objects' %r" % (ns.get("metadata", {}).get("name"), sorted(namespaces)))
if ns_labels.get("pod-security.kubernetes.io/enforce") != "privileged":
    problems.append("pod-security.kubernetes.io/enforce is %r" % ns_labels.get("pod-security.kubernetes.io/enforce"))
check("kubernetes: the namespace's Pod Security level is privileged (hostPID, hostPath, capabilities)", problems)

classes = [d.get("metadata", {}).get("name") for _, d in docs.get("PriorityClass", [])]
pc = spec.get("priorityClassName")
check("kubernetes: the pod's priorityClassName is defined (%s)" % pc,
      [] if pc and (pc in classes or pc in ("system-node-critical", "system-cluster-critical"))
      else ["priorityClassName %r, PriorityClasses here: %r" % (pc, classes)])
check("kubernetes: the pod runs on Linux nodes only (nodeSelector kubernetes.io/os: linux)",
      [] if (spec.get("nodeSelector") or {}).get("kubernetes.io/os") == "linux"
      else ["nodeSelector is %r" % spec.get("nodeSelector")])

# Probes: with basic auth (--web.config.file) every path answers 401, which fails an httpGet probe.
problems = []
for probe in ("livenessProbe", "readinessProbe"):
    pr = c.get(probe)
    if not pr:
        problems.append("no %s" % probe)
    elif set(pr) & {"httpGet", "grpc", "exec"} or (pr.get("tcpSocket") or {}).get("port") not in ("metrics", 9451):
        problems.append("%s is not a tcpSocket probe of the metrics port: %r" % (probe, pr))
check("kubernetes: liveness and readiness probes that pass with basic auth on (tcpSocket on the metrics port)",
      problems)

problems = []
cfg = next((a.split("=", 1)[1] for a in c.get("args", []) if a.startswith("--config.file=")), None)
cms = {d.get("metadata", {}).get("name"): d for _, d in docs.get("ConfigMap", [])}
if not cfg:
    problems.append("no --config.file argument")
else:
    m = mounts.get(os.path.dirname(cfg))
    cm_name = ((vols.get((m or {}).get("name")) or {}).get("configMap") or {}).get("name")
    if not m:
        problems.append("nothing mounted at %s" % os.path.dirname(cfg))
    elif m.get("subPath"):
        problems.append("a subPath mount never sees an edited ConfigMap")
    elif cm_name not in cms:
        problems.append("the volume at %s is not one of the ConfigMaps %r" % (os.path.dirname(cfg), sorted(cms)))
    elif os.path.basename(cfg) not in (cms[cm_name].get("data") or {}):
        problems.append("ConfigMap %s has no key %s" % (cm_name, os.path.basename(cfg)))
check("kubernetes: --config.file is a key of the ConfigMap, mounted as a directory", problems)

pm = get("PodMonitor").get("spec", {})
problems = []
msel = (pm.get("selector") or {}).get("matchLabels") or {}
if not msel or any(labels.get(k) != v for k, v in msel.items()):
    problems.append("selector %r does not match the pod labels %r" % (msel, labels))
eps = pm.get("podMetricsEndpoints") or []
if not eps or any(e.get("port") not in ports for e in eps):
    problems.append("endpoints %r are not the container's named ports %r" % ([e.get("port") for e in eps], sorted(ports)))
job = labels.get(pm.get("jobLabel") or "", "")
if not job.startswith("cachestat"):
    problems.append("job label from pod label %r is %r, the alerts match job=~\"cachestat.*\"" % (pm.get("jobLabel"), job))
for e in eps:
    drops = [r.get("regex", "") for r in e.get("relabelings") or [] if r.get("action", "").lower() == "labeldrop"]
    for target in ("namespace", "pod", "container"):
        if not any(re.fullmatch(rx, target) for rx in drops):
            problems.append("target label %r is kept: it would read as the cgroup's %s" % (target, target))
check("kubernetes: PodMonitor scrapes the DaemonSet's pods as job cachestat*, without the exporter's own pod labels",
      problems)

kust = yaml.safe_load(open("deploy/kubernetes/kustomization.yaml")) if os.path.exists("deploy/kubernetes/kustomization.yaml") else {}
listed = set(kust.get("resources") or [])
files = {os.path.basename(p) for p in glob.glob("deploy/kubernetes/*.yaml")} - {"kustomization.yaml"}
check("kubernetes: kustomization.yaml lists every manifest",
      ["%s not listed" % f for f in sorted(files - listed)] + ["%s listed, missing" % f for f in sorted(listed - files)])

# Prometheus fragment for clusters.
ks = yaml.safe_load(open("deploy/prometheus/kubernetes-scrape.yml"))
problems = []
for job in ks.get("scrape_configs", []):
    if not job.get("job_name", "").startswith("cachestat"):
        problems.append("job %r does not start with cachestat (the alerts match job=~\"cachestat.*\")" % job.get("job_name"))
    text = yaml.safe_dump(job)
    if svc.get("metadata", {}).get("name") not in text:
        problems.append("job %r does not keep the Service %r" % (job.get("job_name"), svc.get("metadata", {}).get("name")))
    sd_ns = [n for sd in job.get("kubernetes_sd_configs", []) for n in (sd.get("namespaces") or {}).get("names", [])]
    if sd_ns and not set(sd_ns) & namespaces:
        problems.append("discovers namespaces %r, the manifests use %r" % (sd_ns, sorted(namespaces)))
check("prometheus: kubernetes-scrape.yml finds the Service of deploy/kubernetes", problems)

prom = yaml.safe_load(open("deploy/prometheus/prometheus.yml"))
jobs = [j.get("job_name") for j in prom.get("scrape_configs", [])
        if any("9451" in t for sc in j.get("static_configs", []) for t in sc.get("targets", []))]
check("prometheus: the :9451 job of prometheus.yml is named cachestat*",
      [] if jobs and all(j.startswith("cachestat") for j in jobs) else ["jobs scraping :9451: %r" % jobs])

# The operator's user-data installs what the unit and prometheus.yml expect.
exec_path = re.search(r"^ExecStart=(\S+)", unit, re.M).group(1)
rule_dirs = [os.path.dirname(r) for r in prom.get("rule_files", [])]
for path in sorted(glob.glob("deploy/cloud-init/*.yaml")):
    text = open(path).read()
    if "cachestat_exporter" not in text:
        continue
    problems = []
    if not re.search(r"(^|[\s\"'])%s([\s\"']|$)" % re.escape(exec_path), text, re.M):
        problems.append("it does not install the binary at %s, the unit's ExecStart" % exec_path)
    for d in rule_dirs:
        full = d if d.startswith("/") else os.path.join("/etc/prometheus", d)
        if "rules" in text and full not in text:
            problems.append("it does not install rules into %s (prometheus.yml's rule_files)" % full)
    check("cloud-init: %s installs what the unit and prometheus.yml expect" % path, problems)
PY

finish

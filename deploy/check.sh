#!/usr/bin/env bash
# Validates every deployment file of the project:
#  - yamllint (deploy/.yamllint) over every YAML file under deploy/ and dashboards/;
#  - `cloud-init schema` over the cloud-config files in deploy/cloud-init/;
#  - `systemd-analyze verify` and an offline `systemd-analyze security` of the unit, and the unit's
#    capabilities and hardening against what deploy/README.md promises;
#  - `promtool check config` of the Prometheus configs, with the rules of dashboards/rules/;
#  - the Kubernetes manifests' structure (host PID, read-only cgroup mount, the unit's capabilities);
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
if systemd-analyze security --offline=yes --threshold=30 "$tmp/unit/cachestat-exporter.service" >"$tmp/sec" 2>&1; then
	ok "systemd-analyze security: $(grep -o 'Overall exposure level.*' "$tmp/sec" | sed 's/ for [^:]*//') (threshold 3.0)"
else
	cp "$tmp/sec" "$tmp/out"
	ko "systemd-analyze security: exposure above 3.0"
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
	scan() {
		local out=$d/scan.out
		if [ "$1" = root ]; then
			"$d/cachestat_exporter" --once --path.cgroupfs="$cgfs" >"$out" 2>/dev/null
		else
			setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps="-all$1" --ambient-caps="-all$1" \
				--bounding-set="-all$1" "$d/cachestat_exporter" --once --path.cgroupfs="$cgfs" >"$out" 2>/dev/null
		fi
		awk -v m="cachestat_cgroup_cached_bytes{cgroup=\"/$name\"}" '$1 == m { print $2 }' "$out"
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

check("kubernetes: DaemonSet, Service and ServiceAccount present",
      [k for k in ("DaemonSet", "Service", "ServiceAccount") if k not in docs])
check("kubernetes: DaemonSet shares the host PID namespace", [] if spec.get("hostPID") is True else ["hostPID is not true"])
check("kubernetes: capabilities drop ALL and add exactly the unit's",
      ([] if capctx.get("drop") == ["ALL"] else ["drop is %r" % capctx.get("drop")])
      + ([] if set("CAP_" + x for x in capctx.get("add") or []) == caps
         else ["add is %r, the unit has %s" % (capctx.get("add"), " ".join(sorted(caps)))]))
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

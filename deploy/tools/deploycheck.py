#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The structural checks of deploy/check.sh: the systemd unit, the runtime package lists, the
Kubernetes objects as `kubectl kustomize` renders each variant, and the agreement between parts.

Each subcommand prints one "PASS: ..." or "FAIL: ..." line per check (deploy/check.sh counts them)
and exits 1 when one failed. Tests: deploy/tools/test_deploycheck.py.

    deploycheck.py unit UNIT
    deploycheck.py runtime-libs "PKG PKG..." FILE...
    deploycheck.py manifests-json NAME=RENDERED.yaml...     (JSON for validate.js, on stdout)
    deploycheck.py kubernetes --unit UNIT --base-dir DIR NAME=RENDERED.yaml...
    deploycheck.py agreement --unit UNIT --rendered BASE.yaml

Only the Python standard library and PyYAML are used.
"""

import argparse
import glob
import json
import os
import re
import sys

import yaml

CAPS = {"CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH", "CAP_CHECKPOINT_RESTORE", "CAP_FOWNER"}
# What the DaemonSet adds to the unit's: the container starts as root and leaves it after binding
# (the unit starts as its user), so that neither process runs as uid 0 on the node.
LEAVE_ROOT_CAPS = {"CAP_SETUID", "CAP_SETGID"}
# Calls of @debug the exporter made once and no longer does (it reopens, it does not duplicate).
UNUSED_CALLS = ("pidfd_getfd",)
KINDS = ("Namespace", "PriorityClass", "ServiceAccount", "ConfigMap", "DaemonSet", "Service", "PodMonitor",
         "PrometheusRule")
# What each variant's component must add to the base (deploy/kubernetes/components/).
VARIANTS = ("base", "activity", "fanotify", "kube-prometheus", "kube-prometheus-stack", "networkpolicy", "tls")
# What a variant adds to the unit's capabilities: its drop-in's (deploy/systemd/cachestat-exporter.service.d/).
EXTRA_CAPS = {"activity": ["CAP_BPF", "CAP_PERFMON", "CAP_SYS_ADMIN"], "fanotify": ["CAP_SYS_ADMIN"]}
# kube-prometheus' Prometheus: service account prometheus-k8s in namespace monitoring.
KUBE_PROMETHEUS_SA = ("monitoring", "prometheus-k8s")


class Results:
    """Collects (what, problems) pairs; prints them as PASS:/FAIL: lines."""

    def __init__(self):
        self.items = []

    def check(self, what, problems):
        self.items.append((what, list(problems)))

    def failed(self):
        return [what for what, problems in self.items if problems]

    def print(self, out=sys.stdout):
        for what, problems in self.items:
            out.write(("FAIL: %s: %s\n" % (what, "; ".join(problems))) if problems else "PASS: %s\n" % what)


# --- systemd --------------------------------------------------------------------------------------

def unit_settings(text):
    settings = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z]+)=(.*)$", line)
        if m:
            settings.setdefault(m.group(1), []).append(m.group(2).strip())
    return settings


def check_unit(text, res):
    settings = unit_settings(text)
    comments = "\n".join(line for line in text.splitlines() if line.lstrip().startswith("#"))

    def one(key):
        return settings.get(key, [""])[-1]

    for key in ("CapabilityBoundingSet", "AmbientCapabilities"):
        got = set(one(key).split())
        res.check("unit %s is exactly %s" % (key, " ".join(sorted(CAPS))),
                  [] if got == CAPS else ["has %s" % (" ".join(sorted(got)) or "nothing")])
    res.check("unit explains each capability in a comment",
              ["%s not explained" % c for c in sorted(CAPS) if not re.search(r"#\s+%s\s+\S" % c, comments)])
    want = {"ProtectSystem": "strict", "ProtectHome": "read-only", "PrivateTmp": "yes", "NoNewPrivileges": "yes",
            "DynamicUser": "yes", "PrivateDevices": "yes", "ProtectKernelTunables": "yes",
            "ProtectControlGroups": "yes", "RestrictNamespaces": "yes", "MemoryDenyWriteExecute": "yes",
            "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX", "SystemCallArchitectures": "native"}
    res.check("unit hardening settings", ["%s=%s, want %s" % (k, one(k), v) for k, v in want.items() if one(k) != v])
    res.check("unit sets nothing that blinds the exporter",
              ["%s would hide other users' processes or void the capabilities" % key
               for key in ("PrivateUsers", "ProtectProc", "ProcSubset") if key in settings])
    filters = settings.get("SystemCallFilter", [])
    # The first SystemCallFilter= sets the mode: after a deny list, lines without "~" only take
    # syscalls back out of it; after an allow list, every line without "~" is part of the allow list.
    allow = [f for f in filters if not f.startswith("~")] if filters and not filters[0].startswith("~") else []
    problems = ["allow list %r without cachestat: syscall 451 would fail with ENOSYS" % f
                for f in allow if "cachestat" not in f.split()]
    if not filters:
        problems.append("no SystemCallFilter")
    for f in filters:
        if f.startswith("~") and re.search(
                r"(^|[\s~])(cachestat|@default|@basic-io|@file-system|@network-io|@io-event)(\s|$)", f):
            problems.append("deny list %r takes away what the exporter needs" % f)
    res.check("unit system call filter keeps cachestat (syscall 451) allowed", problems)
    # After a deny list, a line without "~" allows calls back: none the exporter no longer makes.
    back = [f for f in filters if not f.startswith("~")] if filters and filters[0].startswith("~") else []
    res.check("unit allows back no call the exporter does not make (%s)" % " ".join(UNUSED_CALLS),
              ["%r allows %s" % (f, c) for f in back for c in UNUSED_CALLS if c in f.split()])
    res.check("unit has memory and task limits", [k for k in ("MemoryMax", "TasksMax") if not one(k)])
    res.check("unit runs /usr/bin/cachestat_exporter with $ARGS and reloads with SIGHUP",
              ([] if re.fullmatch(r"/usr/bin/cachestat_exporter \$ARGS", one("ExecStart"))
               else ["ExecStart=%s" % one("ExecStart")])
              + ([] if re.search(r"kill -HUP \$MAINPID", one("ExecReload")) else ["ExecReload=%s" % one("ExecReload")]))


# --- runtime package lists ------------------------------------------------------------------------

def check_runtime_libs(want, files, res):
    """want: the packages derived from the binary ("?SONAME" for one without a package);
    files: {path: text}. Every line of a file naming one of them must name exactly them."""
    unknown = [w[1:] for w in want if w.startswith("?")]
    res.check("runtime libraries of the binary: %s" % " ".join(want),
              ["cannot tell the package of %s" % " ".join(unknown)] if unknown else [])
    for path, text in files.items():
        lists = []
        for n, line in enumerate(text.splitlines(), 1):
            got = set(re.findall(r"\b(lib[a-z0-9][a-z0-9.+-]*[0-9]|zlib1g)\b", line)) - {"libc6"}
            if got & set(want):
                lists.append((n, got))
        problems = ["line %d lacks %s" % (n, " ".join(w for w in want if w not in got))
                    for n, got in lists if set(want) - got]
        problems += ["line %d names %s, which the binary does not need" % (n, " ".join(sorted(got - set(want))))
                     for n, got in lists if got - set(want)]
        if not lists:
            problems.append("no list of the runtime packages")
        res.check("runtime libraries listed in %s%s are the binary's"
                  % (path, " (%d places)" % len(lists) if len(lists) > 1 else ""), problems)


# --- Kubernetes -----------------------------------------------------------------------------------

def load_objects(text):
    return [doc for doc in yaml.safe_load_all(text) if doc]


def by_kind(objects):
    kinds = {}
    for doc in objects:
        kinds.setdefault(doc.get("kind"), []).append(doc)
    return kinds


def first(kinds, kind):
    return (kinds.get(kind) or [{}])[0]


def exporter_container(kinds):
    spec = first(kinds, "DaemonSet").get("spec", {}).get("template", {}).get("spec", {})
    return spec, (spec.get("containers") or [{}])[0]


def check_base(objects, unit_text, res, extra_caps=()):
    """The objects every variant has: the DaemonSet, its Service, PodMonitor, namespace.
    extra_caps: what a variant adds to the unit's capabilities (EXTRA_CAPS)."""
    caps = (set(re.search(r"^CapabilityBoundingSet=(.*)$", unit_text, re.M).group(1).split()) | set(extra_caps)
            | LEAVE_ROOT_CAPS)
    kinds = by_kind(objects)
    ds, svc, sa = first(kinds, "DaemonSet"), first(kinds, "Service"), first(kinds, "ServiceAccount")
    pod = ds.get("spec", {}).get("template", {})
    spec, c = exporter_container(kinds)
    sc = c.get("securityContext") or {}
    capctx = sc.get("capabilities") or {}

    res.check("kubernetes: %s present" % ", ".join(KINDS), [k for k in KINDS if k not in kinds])
    res.check("kubernetes: DaemonSet shares the host PID namespace",
              [] if spec.get("hostPID") is True else ["hostPID is not true"])
    args = c.get("args", [])
    user = next((a.split("=", 1)[1] for a in args if a.startswith("--security.user=")), None)
    res.check("kubernetes: started as root, it becomes a non-root user after binding (CAP_SETUID, CAP_SETGID)",
              ([] if sc.get("runAsUser") == 0 else ["runAsUser is %r" % sc.get("runAsUser")])
              + (["--security.user=%s is root" % user] if user in ("0", "root") else [])
              + [a for a in args if a.startswith("--no-security.drop-privileges")])
    res.check("kubernetes: capabilities drop ALL and add exactly the unit's, and SETUID, SETGID to leave root",
              ([] if capctx.get("drop") == ["ALL"] else ["drop is %r" % capctx.get("drop")])
              + ([] if set("CAP_" + x for x in capctx.get("add") or []) == caps
                 else ["add is %r, the unit has %s" % (capctx.get("add"), " ".join(sorted(caps)))]))
    seccomp = sc.get("seccompProfile") or {}
    res.check("kubernetes: seccompProfile Localhost, a profile of deploy/seccomp (it allows cachestat)",
              [] if seccomp.get("type") == "Localhost"
              and os.path.isfile(os.path.join("deploy/seccomp", seccomp.get("localhostProfile") or "-"))
              else ["seccompProfile is %r" % seccomp])
    res.check("kubernetes: read-only root filesystem, no privilege escalation, not privileged",
              [k for k, v in (("readOnlyRootFilesystem", True), ("allowPrivilegeEscalation", False),
                              ("privileged", False)) if sc.get(k) is not v])
    resources = c.get("resources") or {}
    res.check("kubernetes: container has resource requests and limits",
              [k for k in ("requests", "limits") if not (resources.get(k) or {}).get("memory")])

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
    res.check("kubernetes: the node's /sys/fs/cgroup mounted read-only at --path.cgroupfs", problems)

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
    res.check("kubernetes: Service selects the DaemonSet's pods on port 9451, annotated for Prometheus", problems)

    problems = []
    if spec.get("serviceAccountName") != sa.get("metadata", {}).get("name"):
        problems.append("serviceAccountName %r is not the ServiceAccount" % spec.get("serviceAccountName"))
    if sa.get("automountServiceAccountToken") is not False or spec.get("automountServiceAccountToken") is not False:
        problems.append("service account token is mounted")
    namespaces = {d.get("metadata", {}).get("namespace") for k, items in kinds.items()
                  if k not in ("Namespace", "PriorityClass") for d in items}
    if len(namespaces) != 1:
        problems.append("objects spread over namespaces %r" % sorted(map(str, namespaces)))
    res.check("kubernetes: own token-less ServiceAccount, one namespace", problems)

    # Pod Security admission: hostPID, hostPath volumes and capabilities beyond the baseline list
    # (SYS_PTRACE, DAC_READ_SEARCH, CHECKPOINT_RESTORE) are allowed by the "privileged" level only.
    ns = first(kinds, "Namespace")
    ns_labels = ns.get("metadata", {}).get("labels") or {}
    problems = []
    if ns.get("metadata", {}).get("name") not in namespaces:
        problems.append("Namespace %r is not the objects' %r" % (ns.get("metadata", {}).get("name"),
                                                                 sorted(map(str, namespaces))))
    if ns_labels.get("pod-security.kubernetes.io/enforce") != "privileged":
        problems.append("pod-security.kubernetes.io/enforce is %r" % ns_labels.get("pod-security.kubernetes.io/enforce"))
    res.check("kubernetes: the namespace's Pod Security level is privileged (hostPID, hostPath, capabilities)",
              problems)

    classes = [d.get("metadata", {}).get("name") for d in kinds.get("PriorityClass", [])]
    pc = spec.get("priorityClassName")
    res.check("kubernetes: the pod's priorityClassName is defined (%s)" % pc,
              [] if pc and (pc in classes or pc in ("system-node-critical", "system-cluster-critical"))
              else ["priorityClassName %r, PriorityClasses here: %r" % (pc, classes)])
    res.check("kubernetes: the pod runs on Linux nodes only (nodeSelector kubernetes.io/os: linux)",
              [] if (spec.get("nodeSelector") or {}).get("kubernetes.io/os") == "linux"
              else ["nodeSelector is %r" % spec.get("nodeSelector")])

    check_probes(c, res)

    problems = []
    cfg = next((a.split("=", 1)[1] for a in c.get("args", []) if a.startswith("--config.file=")), None)
    cms = {d.get("metadata", {}).get("name"): d for d in kinds.get("ConfigMap", [])}
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
    res.check("kubernetes: --config.file is a key of the ConfigMap, mounted as a directory", problems)

    pm = first(kinds, "PodMonitor").get("spec", {})
    problems = []
    msel = (pm.get("selector") or {}).get("matchLabels") or {}
    if not msel or any(labels.get(k) != v for k, v in msel.items()):
        problems.append("selector %r does not match the pod labels %r" % (msel, labels))
    eps = pm.get("podMetricsEndpoints") or []
    if not eps or any(e.get("port") not in ports for e in eps):
        problems.append("endpoints %r are not the container's named ports %r"
                        % ([e.get("port") for e in eps], sorted(ports)))
    job = labels.get(pm.get("jobLabel") or "", "")
    if not job.startswith("cachestat"):
        problems.append("job label from pod label %r is %r, the alerts match job=~\"cachestat.*\""
                        % (pm.get("jobLabel"), job))
    for e in eps:
        drops = [r.get("regex", "") for r in e.get("relabelings") or [] if r.get("action", "").lower() == "labeldrop"]
        for target in ("namespace", "pod", "container"):
            if not any(re.fullmatch(rx, target) for rx in drops):
                problems.append("target label %r is kept: it would read as the cgroup's %s" % (target, target))
    res.check("kubernetes: PodMonitor scrapes the DaemonSet's pods as job cachestat*, without the exporter's own "
              "pod labels", problems)
    return namespaces


def check_probes(c, res):
    """The probes ask the exporter's own /-/healthy and /-/ready, which answer without basic auth
    (a kubelet's httpGet probe sends none and counts 401 as a failure)."""
    problems = []
    ports = {p.get("name") for p in c.get("ports", [])} | {p.get("containerPort") for p in c.get("ports", [])}
    for probe, path in (("livenessProbe", "/-/healthy"), ("readinessProbe", "/-/ready")):
        get = (c.get(probe) or {}).get("httpGet")
        if not get:
            problems.append("%s is not an httpGet probe: %r" % (probe, c.get(probe)))
            continue
        if get.get("path") != path:
            problems.append("%s asks %r, not %s" % (probe, get.get("path"), path))
        if get.get("port") not in ports:
            problems.append("%s port %r is no container port" % (probe, get.get("port")))
    res.check("kubernetes: liveness on /-/healthy and readiness on /-/ready (httpGet on the metrics port)",
              problems)


def check_activity(objects, res):
    _, c = exporter_container(by_kind(objects))
    sc = c.get("securityContext") or {}
    problems = [] if "--collector.activity" in (c.get("args") or []) else ["no --collector.activity"]
    problems += ["no %s" % cap for cap in ("BPF", "PERFMON", "SYS_ADMIN")
                 if cap not in (sc.get("capabilities") or {}).get("add", [])]
    profile = (sc.get("seccompProfile") or {}).get("localhostProfile")
    if profile != "cachestat-exporter-activity.json":
        problems.append("seccomp profile %r, not cachestat-exporter-activity.json" % profile)
    res.check("kubernetes activity: --collector.activity, BPF, PERFMON and SYS_ADMIN, the activity seccomp profile",
              problems)


def check_fanotify(objects, res):
    _, c = exporter_container(by_kind(objects))
    sc = c.get("securityContext") or {}
    args = c.get("args") or []
    problems = []
    if "--collector.fanotify" not in args:
        problems.append("no --collector.fanotify")
    if "SYS_ADMIN" not in (sc.get("capabilities") or {}).get("add", []):
        problems.append("no SYS_ADMIN")
    profile = (sc.get("seccompProfile") or {}).get("localhostProfile")
    if profile != "cachestat-exporter-fanotify.json":
        problems.append("seccomp profile %r, not cachestat-exporter-fanotify.json" % profile)
    fs = next((a.split("=", 1)[1] for a in args if a.startswith("--collector.fanotify.filesystems=")), "")
    mounts = {m.get("mountPath"): m for m in c.get("volumeMounts", [])}
    for path in filter(None, fs.split(",")):
        if (mounts.get(path) or {}).get("readOnly") is not True:
            problems.append("%s (--collector.fanotify.filesystems) is not mounted read-only" % path)
    if not fs:
        problems.append("no --collector.fanotify.filesystems")
    res.check("kubernetes fanotify: --collector.fanotify, SYS_ADMIN, the fanotify seccomp profile, its file "
              "systems mounted read-only", problems)


def check_kube_prometheus(objects, res):
    """kube-prometheus' Prometheus may list the pods of the PodMonitor's namespace."""
    kinds = by_kind(objects)
    ns = first(kinds, "PodMonitor").get("metadata", {}).get("namespace")
    roles = {(r["metadata"].get("namespace"), r["metadata"]["name"]): r for r in kinds.get("Role", [])}
    granted = False
    for rb in kinds.get("RoleBinding", []):
        if rb["metadata"].get("namespace") != ns:
            continue
        subjects = {(s.get("namespace"), s.get("name")) for s in rb.get("subjects") or []
                    if s.get("kind") == "ServiceAccount"}
        role = roles.get((ns, (rb.get("roleRef") or {}).get("name")))
        if KUBE_PROMETHEUS_SA not in subjects or not role or rb["roleRef"].get("kind") != "Role":
            continue
        for rule in role.get("rules") or []:
            if "" in rule.get("apiGroups", []) and "pods" in rule.get("resources", []) \
                    and {"get", "list", "watch"} <= set(rule.get("verbs", [])):
                granted = True
    res.check("kubernetes kube-prometheus: a Role and RoleBinding let %s/%s get, list and watch the pods of "
              "namespace %s" % (KUBE_PROMETHEUS_SA + (ns,)), [] if granted else ["no such grant"])


def check_kube_prometheus_stack(objects, res):
    """kube-prometheus-stack selects by the release label: on the PodMonitor and the PrometheusRule,
    one value, and not on the pods (a label there would change the DaemonSet's selector)."""
    kinds = by_kind(objects)
    problems = []
    values = set()
    for kind in ("PodMonitor", "PrometheusRule"):
        value = (first(kinds, kind).get("metadata", {}).get("labels") or {}).get("release")
        if not value:
            problems.append("%s has no release label" % kind)
        values.add(value)
    if len(values) > 1:
        problems.append("release labels differ: %r" % sorted(map(str, values)))
    for doc in objects:
        if doc.get("kind") in ("PodMonitor", "PrometheusRule"):
            continue
        pod_labels = doc.get("spec", {}).get("template", {}).get("metadata", {}).get("labels") or {}
        if "release" in (doc.get("metadata", {}).get("labels") or {}) or "release" in pod_labels:
            problems.append("%s %s carries a release label" % (doc.get("kind"), doc["metadata"].get("name")))
    res.check("kubernetes kube-prometheus-stack: the PodMonitor and the PrometheusRule carry one release label "
              "(%s)" % ", ".join(sorted(map(str, values))), problems)


def check_networkpolicy(objects, res):
    """Only Prometheus pods of one namespace reach the metrics port, and the exporter reaches nothing."""
    kinds = by_kind(objects)
    ds = first(kinds, "DaemonSet")
    _, c = exporter_container(kinds)
    pod_labels = ds.get("spec", {}).get("template", {}).get("metadata", {}).get("labels") or {}
    ports = {p.get("name") for p in c.get("ports", [])} | {p.get("containerPort") for p in c.get("ports", [])}
    policies = kinds.get("NetworkPolicy", [])
    problems = [] if policies else ["no NetworkPolicy"]
    for np in policies:
        spec = np.get("spec") or {}
        name = np["metadata"]["name"]
        if np["metadata"].get("namespace") != ds.get("metadata", {}).get("namespace"):
            problems.append("%s is not in the DaemonSet's namespace" % name)
        selected = (spec.get("podSelector") or {}).get("matchLabels") or {}
        if not selected or any(pod_labels.get(k) != v for k, v in selected.items()):
            problems.append("%s does not select the exporter's pods: %r" % (name, selected))
        if set(spec.get("policyTypes") or []) != {"Ingress", "Egress"} or spec.get("egress"):
            problems.append("%s does not close both directions with egress empty" % name)
        for rule in spec.get("ingress") or []:
            for peer in rule.get("from") or [{}]:
                ns = (peer.get("namespaceSelector") or {}).get("matchLabels") or {}
                pods = (peer.get("podSelector") or {}).get("matchLabels") or {}
                if "kubernetes.io/metadata.name" not in ns or pods.get("app.kubernetes.io/name") != "prometheus":
                    problems.append("%s admits a peer that is not a Prometheus pod of a named namespace: %r"
                                    % (name, peer))
            for port in rule.get("ports") or [{}]:
                if port.get("port") not in ports:
                    problems.append("%s opens port %r, not the metrics port" % (name, port.get("port")))
        if not spec.get("ingress"):
            problems.append("%s admits nobody" % name)
    res.check("kubernetes networkpolicy: only Prometheus pods of a named namespace reach the metrics port; no "
              "egress", problems)


def check_tls(objects, res):
    """The exporter serves its web config from a Secret; the PodMonitor and the probes speak HTTPS."""
    kinds = by_kind(objects)
    pod, c = exporter_container(kinds)
    problems = []
    arg = next((a.split("=", 1)[1] for a in c.get("args") or [] if a.startswith("--web.config.file=")), None)
    if not arg:
        problems.append("no --web.config.file")
    else:
        volumes = {v.get("name"): v for v in pod.get("volumes") or []}
        mount = next((m for m in c.get("volumeMounts") or []
                      if arg.startswith(m.get("mountPath", "").rstrip("/") + "/")), None)
        if not mount or "secret" not in volumes.get(mount.get("name"), {}):
            problems.append("--web.config.file=%s is not on a Secret's volume" % arg)
        elif mount.get("readOnly") is not True:
            problems.append("the web config's Secret is mounted writable")
    for probe in ("livenessProbe", "readinessProbe"):
        if ((c.get(probe) or {}).get("httpGet") or {}).get("scheme") != "HTTPS":
            problems.append("%s does not ask over HTTPS" % probe)
    for ep in first(kinds, "PodMonitor").get("spec", {}).get("podMetricsEndpoints") or []:
        tls = ep.get("tlsConfig") or {}
        auth = ep.get("basicAuth") or {}
        if ep.get("scheme") != "https":
            problems.append("the PodMonitor scrapes over %r" % ep.get("scheme"))
        if tls.get("insecureSkipVerify") or not ((tls.get("ca") or {}).get("secret") and tls.get("serverName")):
            problems.append("the PodMonitor does not verify the certificate (a CA from a Secret and a serverName)")
        if not ((auth.get("username") or {}).get("name") and (auth.get("password") or {}).get("name")):
            problems.append("the PodMonitor sends no login from a Secret")
    res.check("kubernetes tls: the web config from a read-only Secret, HTTPS probes, a PodMonitor that verifies "
              "the certificate and logs in", problems)


def check_variants(renders, unit_text, base_dir, res):
    """renders: {variant: rendered YAML text}. Every variant is the base plus its component."""
    missing = [v for v in VARIANTS if v not in renders]
    res.check("kubernetes: variants rendered: %s" % ", ".join(renders), ["%s not rendered" % v for v in missing])
    objects = {name: load_objects(text) for name, text in renders.items()}
    for name, objs in objects.items():
        sub = Results()
        check_base(objs, unit_text, sub, EXTRA_CAPS.get(name, []))
        res.check("kubernetes %s: the base's checks (%d)" % (name, len(sub.items)),
                  ["%s: %s" % (w, "; ".join(p)) for w, p in sub.items if p])
        if name == "base":
            res.items.extend(sub.items)
    checks = {"activity": check_activity, "fanotify": check_fanotify, "kube-prometheus": check_kube_prometheus,
              "kube-prometheus-stack": check_kube_prometheus_stack, "networkpolicy": check_networkpolicy,
              "tls": check_tls}
    for name, fn in checks.items():
        if name in objects:
            fn(objects[name], res)
    # The components add only what they say: the base's checks of the others must fail on the base.
    if "base" in objects:
        for name, fn in checks.items():
            sub = Results()
            fn(objects["base"], sub)
            res.check("kubernetes: the base alone fails the %s check (the component is what adds it)" % name,
                      [] if sub.failed() else ["the base passes it"])
    kust = yaml.safe_load(read(os.path.join(base_dir, "kustomization.yaml")))
    listed = set(kust.get("resources") or [])
    files = {os.path.basename(p) for p in glob.glob(os.path.join(base_dir, "*.yaml"))} - {"kustomization.yaml"}
    res.check("kubernetes: the base's kustomization.yaml lists every manifest of %s" % base_dir,
              ["%s not listed" % f for f in sorted(files - listed)] + ["%s listed, missing" % f
                                                                      for f in sorted(listed - files)])


def check_agreement(objects, unit_text, scrape, prom, cloud_init, res, package_default=""):
    """The pieces agree: the cluster scrape job finds the Service; job names; cloud-init paths and flags.
    scrape, prom: the parsed kubernetes-scrape.yml and prometheus.yml; cloud_init: {path: text};
    package_default: the package's /etc/default file, whose ARGS a cloud-init that writes ARGS starts from."""
    kinds = by_kind(objects)
    svc = first(kinds, "Service")
    namespaces = {d.get("metadata", {}).get("namespace") for d in objects} - {None}
    problems = []
    for job in scrape.get("scrape_configs", []):
        if not job.get("job_name", "").startswith("cachestat"):
            problems.append("job %r does not start with cachestat (the alerts match job=~\"cachestat.*\")"
                            % job.get("job_name"))
        if svc.get("metadata", {}).get("name") not in yaml.safe_dump(job):
            problems.append("job %r does not keep the Service %r" % (job.get("job_name"), svc.get("metadata", {}).get("name")))
        sd_ns = [n for sd in job.get("kubernetes_sd_configs", []) for n in (sd.get("namespaces") or {}).get("names", [])]
        if sd_ns and not set(sd_ns) & namespaces:
            problems.append("discovers namespaces %r, the manifests use %r" % (sd_ns, sorted(namespaces)))
    res.check("prometheus: kubernetes-scrape.yml finds the Service of deploy/kubernetes", problems)

    jobs = [j.get("job_name") for j in prom.get("scrape_configs", [])
            if any("9451" in t for sc in j.get("static_configs", []) for t in sc.get("targets", []))]
    res.check("prometheus: the :9451 job of prometheus.yml is named cachestat*",
              [] if jobs and all(j.startswith("cachestat") for j in jobs) else ["jobs scraping :9451: %r" % jobs])

    exec_path = re.search(r"^ExecStart=(\S+)", unit_text, re.M).group(1)
    rule_dirs = [os.path.dirname(r) for r in prom.get("rule_files", [])]
    for path, text in cloud_init.items():
        if "cachestat_exporter" not in text:
            continue
        problems = []
        if not re.search(r"(^|[\s\"'])%s([\s\"']|$)" % re.escape(exec_path), text, re.M):
            problems.append("it does not install the binary at %s, the unit's ExecStart" % exec_path)
        for d in rule_dirs:
            full = d if d.startswith("/") else os.path.join("/etc/prometheus", d)
            if "rules" in text and full not in text:
                problems.append("it does not install rules into %s (prometheus.yml's rule_files)" % full)
        # It replaces the package's ARGS: it must keep their flags (the scan interval, the limits collector).
        default = re.search(r'^ARGS="([^"]*)"', package_default, re.M)
        written = re.search(r'^\s*args="([^"$]*)', text, re.M)
        if default and "ARGS=" in text:
            kept = written.group(1).split() if written else []
            problems += ["it writes ARGS without the package's %s" % f for f in default.group(1).split()
                         if f not in kept]
        res.check("cloud-init: %s installs what the unit and prometheus.yml expect" % path, problems)


def manifests_json(renders):
    """One entry per rendered object, for validate.js."""
    return [{"file": "%s (kubectl kustomize)" % name, "doc": doc}
            for name, text in renders.items() for doc in load_objects(text)]


# --- command line ---------------------------------------------------------------------------------

def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def renders_of(pairs):
    out = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep:
            raise SystemExit("expected NAME=RENDERED.yaml, got %r" % pair)
        out[name] = read(path)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("unit")
    p.add_argument("unit")
    p = sub.add_parser("runtime-libs")
    p.add_argument("packages")
    p.add_argument("files", nargs="+")
    p = sub.add_parser("manifests-json")
    p.add_argument("renders", nargs="+")
    p = sub.add_parser("kubernetes")
    p.add_argument("--unit", required=True)
    p.add_argument("--base-dir", required=True)
    p.add_argument("renders", nargs="+")
    p = sub.add_parser("agreement")
    p.add_argument("--unit", required=True)
    p.add_argument("--rendered", required=True)
    p.add_argument("--scrape", default="deploy/prometheus/kubernetes-scrape.yml")
    p.add_argument("--prometheus", default="deploy/prometheus/prometheus.yml")
    p.add_argument("--cloud-init", nargs="*", default=sorted(glob.glob("deploy/cloud-init/*.yaml")))
    p.add_argument("--package-default", default="debian/cachestat-exporter.default")
    args = ap.parse_args(argv)

    res = Results()
    if args.cmd == "unit":
        check_unit(read(args.unit), res)
    elif args.cmd == "runtime-libs":
        check_runtime_libs(args.packages.split(), {f: read(f) for f in args.files}, res)
    elif args.cmd == "manifests-json":
        json.dump(manifests_json(renders_of(args.renders)), sys.stdout)
        return 0
    elif args.cmd == "kubernetes":
        check_variants(renders_of(args.renders), read(args.unit), args.base_dir, res)
    elif args.cmd == "agreement":
        check_agreement(load_objects(read(args.rendered)), read(args.unit), yaml.safe_load(read(args.scrape)),
                        yaml.safe_load(read(args.prometheus)), {p: read(p) for p in args.cloud_init}, res,
                        read(args.package_default))
    res.print()
    return 1 if res.failed() else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the exporter's container seccomp profile from a runtime's default profile:
 - the system calls the exporter's own filter allows (exporter/privsep/sandbox.c) that the default lacks are
   added to its unconditional allow list: cachestat(2) (451) always, and today futex_waitv;
 - the calls the default allows only to a holder of one of the exporter's four capabilities, and
   the exporter does not make, are refused whatever the capabilities: open_by_handle_at
   (CAP_DAC_READ_SEARCH: it would open any inode of the node by handle), kcmp and
   process_madvise (CAP_SYS_PTRACE: the latter pages out other processes' memory). The systemd
   unit denies them too. Grants tied to capabilities the exporter never holds stay as they are.
Nothing else changes. With --fanotify, the profile of the fanotify variant
(deploy/kubernetes/components/fanotify): open_by_handle_at stays allowed to CAP_DAC_READ_SEARCH, as the
collector opens the files of its events by handle (read-only, under the exporter's own filter).
With --activity, the profile of the activity variant (deploy/kubernetes/components/activity): bpf is
allowed to CAP_BPF and perf_event_open to CAP_PERFMON, as moby's default allows them, and the
runtime's refusal of each (EPERM unless CAP_SYS_ADMIN) no longer applies to that capability's holder.
The collector loads its program and attaches its kprobes at start with them; afterwards the
exporter's own filter allows bpf(2) only on the map it holds. The base profile leaves both as the
default has them: containers-common's grants them to CAP_SYS_ADMIN alone, which the base's
container does not hold.

Default profiles that predate Linux 6.5 (Debian bookworm's containers-common 0.50.1, which podman
uses) leave out syscall 451, and their defaultErrnoRet (ENOSYS) makes the exporter find no
cachestat: it reports abi="none". Everything else stays the runtime's, so that reviewing the
profile is reviewing the differences above. The exporter's own allow list (exporter/privsep/sandbox.c, on by
default, --no-security.seccomp turns it off) is not a container profile: it covers the daemon
once it has started, not the runtime and the start (exporter/README.md).

Usage: gen-profile.py [--fanotify | --activity] [DEFAULT_PROFILE [PRIVS_C]]
       >cachestat-exporter[-fanotify|-activity].json
DEFAULT_PROFILE: /usr/share/containers/seccomp.json (package golang-github-containers-common);
PRIVS_C: exporter/privsep/sandbox.c of this repository.
"""
import json
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# The capabilities of the DaemonSet and the unit (deploy/check.sh checks that they agree).
EXPORTER_CAPS = {"CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH", "CAP_CHECKPOINT_RESTORE", "CAP_FOWNER"}
# What only the fanotify collector calls: refused in the base profile, allowed in its variant's.
FANOTIFY_ONLY = {"open_by_handle_at"}
# What only the activity collector calls, at start, and the capability the kernel wants for each
# (a BPF_PROG_TYPE_KPROBE program needs both): left as the runtime's default has them in the base
# profile, allowed to these capabilities in its variant's.
ACTIVITY_ONLY = {"bpf": "CAP_BPF", "perf_event_open": "CAP_PERFMON"}


def unconditional_allow(rule):
    return (rule.get("action") == "SCMP_ACT_ALLOW" and not rule.get("args")
            and not any((rule.get("includes") or {}).values())
            and not any((rule.get("excludes") or {}).values()))


def exporter_syscalls(path):
    """The names the scanner's filter allows (the HTTP process's list, which both processes share,
    and the scanner's own), and the calls it allows with arguments."""
    src = open(path, encoding="utf-8").read()
    names = set()
    for name in ("http_syscalls", "scanner_syscalls"):
        m = re.search(name + r"\[\] = \{(.*?)\};", src, re.S)
        if not m:
            sys.exit("%s: no %s list" % (path, name))
        names |= set(re.findall(r'"([a-z0-9_]+)"', re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)))
    names |= set(re.findall(r"SCMP_ACT_ALLOW, SCMP_SYS\((\w+)\)", src))
    if "PRIVS_NR_CACHESTAT" in src:
        names.add("cachestat")
    return names


def wanted_syscalls(privs, fanotify, activity=False):
    """What the profile must allow: the daemon's filter, cachestat, the fanotify calls or not, the
    activity calls or not (the daemon's filter names bpf: the map's reads, once started)."""
    names = exporter_syscalls(privs) | {"cachestat"}
    names = names if fanotify else names - FANOTIFY_ONLY
    return names | set(ACTIVITY_ONLY) if activity else names - set(ACTIVITY_ONLY)


def held_caps(activity):
    """The capabilities whose grants the profile reviews: the exporter's, and the activity ones."""
    return EXPORTER_CAPS | set(ACTIVITY_ONLY.values()) if activity else EXPORTER_CAPS


def granted(rule, name, cap):
    """Whether rule allows name, unconditionally but for cap."""
    return (rule.get("action") == "SCMP_ACT_ALLOW" and name in (rule.get("names") or []) and not rule.get("args")
            and (rule.get("includes") or {}).get("caps") == [cap])


def grant_to_capabilities(profile, grants):
    """Allows each call of grants ({name: capability}) to that capability's holder, by an allow rule
    of its own; a rule refusing the call (containers-common's EPERM unless CAP_SYS_ADMIN) is split,
    the call's copy excluding that holder too, so that no two rules disagree for any container."""
    def allow(n):
        return {"names": [n], "action": "SCMP_ACT_ALLOW", "args": [], "comment": "",
                "includes": {"caps": [grants[n]]}, "excludes": {}}

    # moby's default has these grants already: none is added twice
    todo = {n for n in grants if not any(granted(r, n, grants[n]) for r in profile["syscalls"])}
    rules = []
    for r in profile["syscalls"]:
        names = r.get("names") or []
        moved = [n for n in names if n in grants] if r.get("action") != "SCMP_ACT_ALLOW" else []
        if not moved:
            rules.append(r)
            continue
        if len(moved) < len(names):
            rules.append(dict(r, names=[n for n in names if n not in grants]))
        for n in moved:
            if n in todo:
                rules.append(allow(n))  # beside the refusal it makes an exception to
                todo.discard(n)
            excludes = dict(r.get("excludes") or {})
            excludes["caps"] = (excludes.get("caps") or []) + [grants[n]]
            rules.append(dict(r, names=[n], excludes=excludes))
    rules += [allow(n) for n in sorted(todo)]
    profile["syscalls"] = rules


def refuse_capability_grants(profile, needed, held=EXPORTER_CAPS):
    """Drops the allows conditional on the capabilities held of calls the exporter does not make;
    their refusals (the rules the runtime applies without the capability) then apply with it too."""
    refused = set()
    rules = []
    for r in profile["syscalls"]:
        caps = set((r.get("includes") or {}).get("caps") or [])
        if r.get("action") == "SCMP_ACT_ALLOW" and caps & held:
            keep = [n for n in r["names"] if n in needed]
            refused |= set(r["names"]) - set(keep)
            if not keep:
                continue
            r["names"] = keep
        rules.append(r)
    for r in rules:
        if r.get("action") != "SCMP_ACT_ALLOW" and set(r.get("names", [])) & refused:
            r["excludes"] = {k: v for k, v in (r.get("excludes") or {}).items() if k != "caps"}
    profile["syscalls"] = rules


def main():
    args = sys.argv[1:]
    fanotify = "--fanotify" in args
    activity = "--activity" in args
    args = [a for a in args if a not in ("--fanotify", "--activity")]
    src = args[0] if args else "/usr/share/containers/seccomp.json"
    privs = args[1] if len(args) > 1 else os.path.join(TOP, "exporter/privsep/sandbox.c")
    with open(src, encoding="utf-8") as f:
        profile = json.load(f)
    if profile.get("defaultAction") == "SCMP_ACT_ALLOW":
        sys.exit("%s: defaultAction allows every call: not an allow list" % src)
    rules = [r for r in profile.get("syscalls", []) if unconditional_allow(r)]
    if not rules:
        sys.exit("%s: no unconditional SCMP_ACT_ALLOW rule to add to" % src)
    allowed = {n for r in profile["syscalls"] if r.get("action") == "SCMP_ACT_ALLOW" for n in r.get("names", [])}
    main_rule = max(rules, key=lambda r: len(r.get("names", [])))
    needed = wanted_syscalls(privs, fanotify, activity)
    main_rule["names"] = sorted(set(main_rule["names"]) | (needed - allowed - set(ACTIVITY_ONLY)))
    if activity:
        grant_to_capabilities(profile, ACTIVITY_ONLY)
    refuse_capability_grants(profile, needed, held_caps(activity))
    json.dump(profile, sys.stdout, indent="\t")
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

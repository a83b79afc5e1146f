#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the exporter's container seccomp profile: a runtime's default profile, with the system
calls the exporter's own filter allows (exporter/privs.c) that the default lacks added to its
unconditional allow list: cachestat(2) (451) always, and today futex_waitv. Nothing else changes.

Default profiles that predate Linux 6.5 (Debian bookworm's containers-common 0.50.1, which podman
uses) leave out syscall 451, and their defaultErrnoRet (ENOSYS) makes the exporter find no
cachestat: it reports abi="none". Everything else stays the runtime's, so that reviewing the
profile is reviewing the added names; once it serves, the exporter installs its own narrower
filter (exporter/privs.c), the bound that matters for the daemon.

Usage: gen-profile.py [DEFAULT_PROFILE [PRIVS_C]] >cachestat-exporter.json
DEFAULT_PROFILE: /usr/share/containers/seccomp.json (package golang-github-containers-common);
PRIVS_C: exporter/privs.c of this repository.
"""
import json
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def unconditional_allow(rule):
    return (rule.get("action") == "SCMP_ACT_ALLOW" and not rule.get("args")
            and not any((rule.get("includes") or {}).values())
            and not any((rule.get("excludes") or {}).values()))


def exporter_syscalls(path):
    """The names the daemon's filter allows: its list and the calls it allows with arguments."""
    src = open(path, encoding="utf-8").read()
    m = re.search(r"allowed_syscalls\[\] = \{(.*?)\};", src, re.S)
    if not m:
        sys.exit("%s: no allowed_syscalls list" % path)
    names = set(re.findall(r'"([a-z0-9_]+)"', m.group(1)))
    names |= set(re.findall(r"SCMP_ACT_ALLOW, SCMP_SYS\((\w+)\)", src))
    if "PRIVS_NR_CACHESTAT" in src:
        names.add("cachestat")
    return names


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/containers/seccomp.json"
    privs = sys.argv[2] if len(sys.argv) > 2 else os.path.join(TOP, "exporter/privs.c")
    with open(src, encoding="utf-8") as f:
        profile = json.load(f)
    if profile.get("defaultAction") == "SCMP_ACT_ALLOW":
        sys.exit("%s: defaultAction allows every call: not an allow list" % src)
    rules = [r for r in profile.get("syscalls", []) if unconditional_allow(r)]
    if not rules:
        sys.exit("%s: no unconditional SCMP_ACT_ALLOW rule to add to" % src)
    allowed = {n for r in profile["syscalls"] if r.get("action") == "SCMP_ACT_ALLOW" for n in r.get("names", [])}
    main_rule = max(rules, key=lambda r: len(r.get("names", [])))
    needed = exporter_syscalls(privs) | {"cachestat"}
    main_rule["names"] = sorted(set(main_rule["names"]) | (needed - allowed))
    json.dump(profile, sys.stdout, indent="\t")
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

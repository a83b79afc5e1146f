#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks a container seccomp profile for the exporter; one PASS:/FAIL: line per check, exit 1 on
any failure:
 - it is JSON in the format of the runtimes' default profiles (containers-common, moby);
 - it is an allow list (defaultAction is not SCMP_ACT_ALLOW);
 - cachestat (451) is allowed on every architecture and whatever the capabilities, and no earlier
   rule refuses it;
 - every system call the exporter's own filter allows (exporter/privsep/sandbox.c) is allowed, but for
   open_by_handle_at, which only the fanotify collector calls;
 - no call is allowed for one of the exporter's capabilities that the exporter does not make
   (open_by_handle_at with CAP_DAC_READ_SEARCH, ...), and open_by_handle_at by no rule at all.
With --fanotify (the fanotify variant's profile), open_by_handle_at must be allowed instead.

Usage: check-profile.py [--fanotify] PROFILE [PRIVS_C]
"""
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
gen = __import__("gen-profile")


def check(what, problems):
    print(("FAIL: %s: %s" % (what, "; ".join(problems))) if problems else "PASS: %s" % what)
    return not problems


def main():
    args = sys.argv[1:]
    fanotify = "--fanotify" in args
    args = [a for a in args if a != "--fanotify"]
    path = args[0]
    privs = args[1] if len(args) > 1 else os.path.join(gen.TOP, "exporter/privsep/sandbox.c")
    name = os.path.relpath(path, gen.TOP) if path.startswith(gen.TOP + "/") else path
    try:
        profile = json.load(open(path, encoding="utf-8"))
    except (OSError, ValueError) as e:
        check("seccomp: %s is JSON" % name, [str(e)])
        sys.exit(1)
    good = check("seccomp: %s is JSON with defaultAction and syscalls" % name,
                 [] if isinstance(profile, dict) and profile.get("defaultAction")
                 and isinstance(profile.get("syscalls"), list) else ["not a profile"])
    if not good:
        sys.exit(1)
    good &= check("seccomp: %s is an allow list (defaultAction %s)" % (name, profile["defaultAction"]),
                  [] if profile["defaultAction"] != "SCMP_ACT_ALLOW" else ["every call is allowed by default"])
    # The runtime applies the rules of a syscall in order; the first that matches decides.
    first = next((r for r in profile["syscalls"] if "cachestat" in (r.get("names") or [])), None)
    problems = []
    if first is None:
        problems.append("no rule names cachestat")
    elif not gen.unconditional_allow(first):
        problems.append("its first rule is %s with args %r, includes %r, excludes %r" % (
            first.get("action"), first.get("args"), first.get("includes"), first.get("excludes")))
    good &= check("seccomp: cachestat (451) allowed unconditionally", problems)
    allowed = {n for r in profile["syscalls"] if r.get("action") == "SCMP_ACT_ALLOW" for n in r.get("names") or []}
    needed = gen.wanted_syscalls(privs, fanotify)
    missing = sorted(needed - allowed)
    good &= check("seccomp: every system call of the exporter's own filter (exporter/privsep/sandbox.c) allowed%s" % (
                  "" if fanotify else ", but the fanotify collector's"),
                  ["not allowed: %s" % " ".join(missing)] if missing else [])
    granted = sorted({"%s (with %s)" % (n, "/".join(sorted(set(r["includes"]["caps"]) & gen.EXPORTER_CAPS)))
                      for r in profile["syscalls"] if r.get("action") == "SCMP_ACT_ALLOW"
                      and set((r.get("includes") or {}).get("caps") or []) & gen.EXPORTER_CAPS
                      for n in r.get("names") or [] if n not in needed})
    if "open_by_handle_at" in allowed and not fanotify:
        granted.append("open_by_handle_at, by some rule")
    good &= check("seccomp: no call the exporter does not make is allowed by its capabilities%s" % (
                  "" if fanotify else "; no open_by_handle_at"),
                  ["allowed: %s" % ", ".join(granted)] if granted else [])
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    main()

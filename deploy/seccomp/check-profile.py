#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks a container seccomp profile for the exporter; one PASS:/FAIL: line per check, exit 1 on
any failure:
 - it is JSON in the format of the runtimes' default profiles (containers-common, moby);
 - it is an allow list (defaultAction is not SCMP_ACT_ALLOW);
 - cachestat (451) is allowed on every architecture and whatever the capabilities, and no earlier
   rule refuses it;
 - every system call the exporter's own filter allows (exporter/privsep/sandbox.c) is allowed, but for
   open_by_handle_at, which only the fanotify collector calls, and bpf, which only the activity
   collector calls (perf_event_open too, at start);
 - no call is allowed for one of the exporter's capabilities that the exporter does not make
   (open_by_handle_at with CAP_DAC_READ_SEARCH, ...), and open_by_handle_at by no rule at all;
 - a container with the base's capabilities is refused bpf and perf_event_open, which only the
   activity collector calls.
With --fanotify (the fanotify variant's profile), open_by_handle_at must be allowed instead. With
--activity (the activity variant's), bpf and perf_event_open must be allowed to a container
holding CAP_BPF and CAP_PERFMON besides the base's (the variant adds CAP_SYS_ADMIN as well, for
kernels at perf_event_paranoid 3, whose grants the runtime default's rules make; with --fanotify
too, the two components together, CAP_SYS_ADMIN is checked with them), and no other call to
CAP_BPF or CAP_PERFMON. A rule
applies to a container as the runtimes (moby, containerd, containers-common) read it: every
capability of its includes held, none of its excludes.

Usage: check-profile.py [--fanotify] [--activity] PROFILE [PRIVS_C]
"""
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
gen = __import__("gen-profile")


# The capabilities of the DaemonSet's container (deploy/kubernetes): the unit's four and the two it
# leaves root with; what the fanotify component adds.
BASE_CAPS = gen.EXPORTER_CAPS | {"CAP_SETUID", "CAP_SETGID"}
FANOTIFY_CAPS = {"CAP_SYS_ADMIN"}


def applies(rule, caps):
    """Whether the runtime puts rule in the filter of a container holding caps."""
    return (set((rule.get("includes") or {}).get("caps") or []) <= caps
            and not set((rule.get("excludes") or {}).get("caps") or []) & caps)


def verdict(profile, name, caps):
    """What a container holding caps gets from name: None when allowed, else why not."""
    actions = sorted({r.get("action") for r in profile["syscalls"]
                      if name in (r.get("names") or []) and not r.get("args") and applies(r, caps)})
    if actions == ["SCMP_ACT_ALLOW"]:
        return None
    return "%s: %s" % (name, " and ".join(actions) if actions else "no rule, the default action")


def check(what, problems):
    print(("FAIL: %s: %s" % (what, "; ".join(problems))) if problems else "PASS: %s" % what)
    return not problems


def main():
    args = sys.argv[1:]
    fanotify = "--fanotify" in args
    activity = "--activity" in args
    args = [a for a in args if a not in ("--fanotify", "--activity")]
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
    needed = gen.wanted_syscalls(privs, fanotify, activity)
    missing = sorted(needed - allowed)
    but = [c for c, on in (("the fanotify collector's", fanotify), ("the activity collector's", activity)) if not on]
    good &= check("seccomp: every system call of the exporter's own filter (exporter/privsep/sandbox.c) allowed%s" % (
                  ", but %s" % " and ".join(but) if but else ""),
                  ["not allowed: %s" % " ".join(missing)] if missing else [])
    held = gen.held_caps(activity)
    granted = sorted({"%s (with %s)" % (n, "/".join(sorted(set(r["includes"]["caps"]) & held)))
                      for r in profile["syscalls"] if r.get("action") == "SCMP_ACT_ALLOW"
                      and set((r.get("includes") or {}).get("caps") or []) & held
                      for n in r.get("names") or [] if n not in needed})
    if "open_by_handle_at" in allowed and not fanotify:
        granted.append("open_by_handle_at, by some rule")
    good &= check("seccomp: no call the exporter does not make is allowed by its capabilities%s" % (
                  "" if fanotify else "; no open_by_handle_at"),
                  ["allowed: %s" % ", ".join(granted)] if granted else [])
    calls = sorted(gen.ACTIVITY_ONLY)
    if activity:
        caps = BASE_CAPS | set(gen.ACTIVITY_ONLY.values()) | (FANOTIFY_CAPS if fanotify else set())
        good &= check("seccomp: %s allowed to a container with the capabilities of the activity variant%s (%s)" % (
                      " and ".join(calls), " and the fanotify one" if fanotify else "",
                      " ".join(sorted(caps - BASE_CAPS))),
                      [v for v in (verdict(profile, n, caps) for n in calls) if v])
    good &= check("seccomp: %s refused to a container with the base's capabilities" % " and ".join(calls),
                  ["%s: allowed" % n for n in calls if verdict(profile, n, BASE_CAPS) is None])
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The tables of the docs against the exporter itself (scripts/check-docs.sh runs it).

Usage: check-docs-tables.py TOP HELP_FILE ONCE_FILE, HELP_FILE holding `cachestat_exporter
--help` and ONCE_FILE the text of a real scan (`--once`); or check-docs-tables.py --run TOP,
which runs TOP/exporter/cachestat_exporter for both (the scan of a cgroup it makes). Prints one "ok - " or "not ok - " line
per check (exit status 1 when one fails): the collectors of exporter/README.md's flag table against --help, its metric table
against docs/metrics.md and the scan, its log sample's source lines against exporter/main.c,
the HELP of cachestat_syscall_info against the ABI names of base/pagecache.c, the per-file
default the Markdown files state against --help, and the design map's table of the layers
against exporter/layers.mk.
"""
import glob
import os
import re
import subprocess
import sys


def expand(name):
    """a_{b,c}_d -> [a_b_d, a_c_d]"""
    m = re.search(r"\{([^{}]*)\}", name)
    if not m:
        return [name]
    return [x for alt in m.group(1).split(",")
            for x in expand(name[:m.start()] + alt + name[m.end():])]


failed = 0


def result(ok, what, detail):
    global failed
    failed += 0 if ok else 1
    print(("ok - " if ok else "not ok - ") + what + " (" + (detail or "none") + ")")


def exporter_output(top):
    """--help and a --once scan of the built exporter: of a cgroup of its own where it may make
    one (the scan stays short whatever the host runs), else of the whole cgroup2 tree."""
    exe = os.path.join(top, "exporter/cachestat_exporter")
    cg2 = next((l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup2"),
               "/sys/fs/cgroup")
    own = os.path.join(cg2, "cse-docs-%d" % os.getpid())
    try:
        os.mkdir(own)
    except OSError:
        own = None
    try:
        helptext = subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
        once = subprocess.run([exe, "--once", "--path.cgroupfs=" + (own or cg2)],
                              capture_output=True, text=True, timeout=300).stdout
    finally:
        if own:
            os.rmdir(own)
    return helptext, once


def main():
    if sys.argv[1] == "--run":
        top = sys.argv[2]
        helptext, once = exporter_output(top)
    else:
        top, help_file, once_file = sys.argv[1:4]
        helptext = open(help_file).read()
        once = open(once_file).read()
    readme = open(os.path.join(top, "exporter/README.md")).read()
    metrics_md = open(os.path.join(top, "docs/metrics.md")).read()

    # collectors: --help's --[no-]collector.NAME against the README row of --collector.NAME
    helped = set(re.findall(r"^  --\[no-\]collector\.([a-z]+) ", helptext, re.M))
    row = next((l for l in readme.splitlines() if l.startswith("| `--collector.NAME`")), "")
    listed = set(re.findall(r"`([a-z]+)`", row.split("|")[3] if row.count("|") > 3 else ""))
    result(len(helped) > 3 and not helped - listed,
           "exporter/README.md's flag table names every collector of --help (%d)" % len(helped),
           " ".join(sorted(helped - listed)))

    # metric table: every family of docs/metrics.md, of the scan and process_* in the README
    table = set()
    for l in readme.splitlines():
        if l.startswith("| `"):
            for n in re.findall(r"`([a-z_{},]+)`", l.split("|")[1]):
                table.update(expand(n))
    documented = set(re.findall(r"^\| `(cachestat_[a-z0-9_]+)` \|", metrics_md, re.M))
    scanned = set(re.findall(r"^# TYPE ([a-z0-9_]+) ", once, re.M))
    want = documented | scanned | {"process_cpu_seconds_total", "process_open_fds"}
    result(len(scanned) > 10 and not want - table,
           "exporter/README.md's metric table lists every family of docs/metrics.md and of a "
           "scan (%d)" % len(want), " ".join(sorted(want - table)))

    # the log sample: source=main.c:N names the line of that message's log call
    main_c = open(os.path.join(top, "exporter/main.c")).read().splitlines()
    wrong = []
    for n, msg in re.findall(r'source[=":]+main\.c:(\d+)"? msg="([^"]+)"', readme):
        line = main_c[int(n) - 1] if 0 < int(n) <= len(main_c) else ""
        if '"' + msg not in line:
            at = [i + 1 for i, l in enumerate(main_c) if '"' + msg in l]
            wrong.append("main.c:%s is not %r%s" % (n, msg, " (it is at %s)" % at if at else ""))
    result(not wrong, "exporter/README.md's log sample names the lines of main.c", "; ".join(wrong))

    # cachestat_syscall_info's HELP names every ABI pagecache_abi_name() returns
    src = open(os.path.join(top, "exporter/base/pagecache.c")).read()
    fn = re.search(r"pagecache_abi_name\([^)]*\)\s*\{(.*?)\n\}", src, re.S)
    abis = set(re.findall(r'return "([a-z]+)";', fn.group(1) if fn else ""))
    helpline = re.search(r"^# HELP cachestat_syscall_info (.*)$", once, re.M)
    missing = sorted(a for a in abis if not helpline or not re.search(r"\b%s\b" % a, helpline.group(1)))
    result(len(abis) >= 3 and not missing,
           "the HELP of cachestat_syscall_info names every ABI (%s)" % ",".join(sorted(abis)),
           " ".join(missing))

    # the per-file default stated next to per_file_top is --collector.perfile.cgroup-top's
    d = re.search(r"--collector\.perfile\.cgroup-top=N.*?\(default (\d+)\)", helptext, re.S)
    default = d.group(1) if d else "?"
    bad = []
    for md in glob.glob(os.path.join(top, "**/*.md"), recursive=True):
        for m in re.finditer(r"`per_file_top`[^.\n]*?default (\d+)", open(md).read()):
            if m.group(1) != default:
                bad.append("%s says %s" % (os.path.relpath(md, top), m.group(1)))
    result(d is not None and not bad,
           "the per-file default the docs state is --help's (%s)" % default, "; ".join(bad))

    check_suite_table(top)
    check_module_map(top)
    check_layers(top)


def layers_table(top):
    """exporter/layers.mk's table: {folder: set of the folders it may use}."""
    text = open(os.path.join(top, "exporter/layers.mk")).read()
    return {m.group(1): set(m.group(2).split())
            for m in re.finditer(r"^USES_([a-z]+) :=(.*)$", text, re.M)}


def check_layers(top):
    """docs/design.md's table of which folder may use which is exporter/layers.mk's."""
    design = open(os.path.join(top, "docs/design.md")).read()
    section = design.split("## The map of the exporter", 1)[-1].split("\n## ", 1)[0]
    doc = {}
    for folder, uses in re.findall(r"^\| `([a-z]+)/?` \| ([^|]*) \|$", section, re.M):
        uses = re.sub(r"\s*\([^)]*\)", "", uses).strip()
        doc[folder] = set() if uses == "nothing" else {u.strip() for u in uses.split(",")}
    table = layers_table(top)
    wrong = ["%s: the doc says %s, layers.mk %s" % (f, " ".join(sorted(doc.get(f, {"(no row)"}))),
                                                  " ".join(sorted(table.get(f, {"(no row)"}))))
             for f in sorted(set(doc) | set(table)) if doc.get(f) != table.get(f)]
    result(len(table) > 5 and not wrong,
           "docs/design.md's table of the layers is exporter/layers.mk's (%d folders)" % len(table),
           "; ".join(wrong[:3]))


def check_module_map(top):
    """docs/design.md's module conventions against the tree: every module without its own
    NAME.h is of a family the map names, every one without test-NAME.c is in the table of
    tests, and each test the table names exists."""
    design = open(os.path.join(top, "docs/design.md")).read()
    section = design.split("## The map of the exporter", 1)[-1].split("\n## ", 1)[0]
    table = dict(re.findall(r"^\| `([a-z]+/[a-z0-9_]+\.c)` \| (.*) \|$", section, re.M))
    modules = [os.path.relpath(p, os.path.join(top, "exporter"))
               for p in sorted(glob.glob(os.path.join(top, "exporter/*/*.c")))
               if "/fuzz/" not in p]
    no_header, untested, wrong = [], [], []
    for m in modules:
        name = os.path.basename(m)[:-2]
        registers = "REGISTER_COLLECTOR(" in open(os.path.join(top, "exporter", m)).read()
        if not os.path.exists(os.path.join(top, "exporter", m[:-2] + ".h")) and not registers \
                and "`%s.c`" % name not in section:
            no_header.append(m)
        if not os.path.exists(os.path.join(top, "tests/unit", os.path.dirname(m), "test-%s.c" % name)) \
                and m not in table:
            untested.append(m)
    for m, tests in table.items():
        if m not in modules:
            wrong.append("%s is no module" % m)
        for t in re.split(r"[,;]\s*", re.sub(r"\s*\([^)]*\)", "", tests)):
            t = t.strip()
            found = os.path.exists(os.path.join(top, t)) if "/" in t else \
                bool(glob.glob(os.path.join(top, "tests/unit/**/%s.c" % t), recursive=True))
            if not found:
                wrong.append("%s: no test %s" % (m, t))
    result(len(modules) > 40 and not no_header,
           "docs/design.md names every module without a header of its own (%d modules)" % len(modules),
           " ".join(no_header))
    result(not untested and not wrong,
           "docs/design.md's table names the tests of every module without a test-NAME.c (%d)" % len(table),
           "; ".join(untested[:5] + wrong[:5]))


def makefile_suites(top):
    """The (name, command) pairs of the top Makefile's SUITES, in order, $(MAKE) read as make; a +NAME (a suite run
    beside the others) is NAME."""
    lines = open(os.path.join(top, "Makefile")).read().split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith("SUITES = "))
    suites = []
    for l in lines[start + 1:]:
        m = re.match(r"\t\+?([a-z0-9-]+)='(.*)'", l)
        if m:
            suites.append((m.group(1), m.group(2).replace("$(MAKE) -s", "make").replace("$(MAKE)", "make")))
        if not l.endswith("\\"):
            break
    return suites


def check_suite_table(top):
    """README.md's table of make test's suites: the Makefile's suites, in its order, with its commands."""
    readme = open(os.path.join(top, "README.md")).read()
    section = readme.split("## What `make test` runs", 1)[-1].split("\n## ", 1)[0]
    rows = []
    for l in section.splitlines():
        cells = l.split("|")
        if len(cells) > 4 and "`" in cells[2]:
            rows.append((cells[1].strip(), re.search(r"`([^`]*)`", cells[2]).group(1)))
    suites = makefile_suites(top)
    wrong = ["row %d is %s (`%s`), the Makefile's %s (`%s`)" % (i + 1, r[0], r[1], m[0], m[1])
             for i, (r, m) in enumerate(zip(rows, suites)) if r != m]
    if len(rows) != len(suites):
        wrong.append("%d rows for %d suites" % (len(rows), len(suites)))
    result(len(suites) > 10 and not wrong,
           "README.md's suite table is the Makefile's SUITES, in order, with their commands (%d)" % len(suites),
           "; ".join(wrong[:3]))


if __name__ == "__main__":
    main()
    sys.exit(1 if failed else 0)

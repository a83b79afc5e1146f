#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Reads the cachestat Grafana dashboard and its Prometheus rules for the checks.

Subcommands:
  exprs     print every PromQL expression of the dashboard with its variables substituted
  rulefile  write those expressions as recording rules, for `promtool check rules` to parse
  lint      check the dashboard against the project's conventions, one line per check
  rules     check the alerting/recording rule files and that every alert has unit tests
  families  check that every metric family sent by default is read by a panel, an alert or a
            rule, or docs/metrics.md says why it stays
  mutate    write a copy of the dashboard broken in one named way (to prove lint can fail)
  mutate-rule  write a rule file in which one alert never or always fires (to prove its tests can fail)
  alerts    list the alerts of rule files
  alert-tests  copy the promtool tests that assert on one alert (its mutations' tests)
  filtertest  write a promtool test: the dashboard's cached-bytes query, variables set to a
            namespace, pod or container, returns the cgroups kube-state-metrics-shaped input
            puts there (through rules/cachestat.identity.yml)
  bannertest  check the top panel's targets and texts; write a promtool test of its targets
  budgettest  write a promtool test: the rule files, on a 110-pod node of 470 cgroups, record
            the series of the budget (dashboards/README.md, "Recording rules"), at most 1,000

Output lines of lint and rules are "PASS: what" or "FAIL: what: why"; the exit status is 1
if any check failed. Only the Python standard library and PyYAML are used, and jsonnet, which
rules runs to read the mixin's _config (its selector and runbook URL pattern).
"""

import argparse
import copy
import glob
import json
import os
import re
import sys

DASHBOARD_UID = "cachestat-exporter"
SCHEMA_VERSION = 39

# The recording rule of rules/cachestat.identity.yml that names each cgroup's namespace, pod and
# container; the per-cgroup panels join it to filter by the variables of these labels.
IDENTITY = "cgroup:cachestat_cgroup_info:identity"
IDENTITY_VARS = ("namespace", "pod", "container")

# Grafana's built-in interval and range variables, with the values the checks use.
BUILTINS = {
    "__rate_interval": "1m",
    "__interval": "15s",
    "__interval_ms": "15000",
    "__range": "1h",
    "__range_s": "3600",
    "__range_ms": "3600000",
}

# Functions whose range argument must be $__rate_interval.
RATE_FUNCS = ("rate", "irate", "increase", "delta", "idelta", "deriv")

KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
            "group_left", "group_right", "inf", "nan", "atan2"}

PROMQL_FUNCS = {
    "abs", "absent", "absent_over_time", "avg", "avg_over_time", "bottomk", "ceil", "changes",
    "clamp", "clamp_max", "clamp_min", "count", "count_over_time", "count_values", "day_of_month",
    "day_of_week", "day_of_year", "days_in_month", "delta", "deriv", "exp", "floor", "group",
    "histogram_quantile", "holt_winters", "hour", "idelta", "increase", "irate", "label_join",
    "label_replace", "last_over_time", "ln", "log10", "log2", "max", "max_over_time", "min",
    "min_over_time", "minute", "month", "predict_linear", "present_over_time", "quantile",
    "quantile_over_time", "rate", "resets", "round", "scalar", "sgn", "sort", "sort_desc", "sqrt",
    "stddev", "stddev_over_time", "stdvar", "stdvar_over_time", "sum", "sum_over_time", "time",
    "timestamp", "topk", "vector", "year",
}

# What the issue asks the dashboard to show: (description, regular expression over all exprs).
REQUIRED_QUERIES = [
    ("cached bytes per cgroup", r"\bcachestat_cgroup_cached_bytes\{"),
    ("dirty bytes per cgroup", r"\bcachestat_cgroup_dirty_bytes\{"),
    ("writeback bytes per cgroup", r"\bcachestat_cgroup_writeback_bytes\{"),
    ("evicted bytes per cgroup", r"\bcachestat_cgroup_evicted_bytes\{"),
    ("recently evicted bytes per cgroup", r"\bcachestat_cgroup_recently_evicted_bytes\{"),
    ("residency ratio (cached over files' size)",
     r"cachestat_cgroup_cached_bytes\{[^}]*\}\s*/\s*\(?\s*cachestat_cgroup_files_size_bytes\{"),
    ("refault rate per cgroup", r"rate\(\s*cachestat_cgroup_workingset_refault_file_total\{"),
    ("refault rate per NUMA node", r"rate\(\s*cachestat_cgroup_node_workingset_refault_file_total\{"),
    ("top files by recently evicted bytes", r"topk\(\s*\d+\s*,\s*cachestat_file_recently_evicted_bytes\{"),
    ("exporter scrape duration", r"\bcachestat_scrape_collector_duration_seconds\{"),
    ("exporter skipped files", r"\bcachestat_files_skipped_total\{"),
    ("memory.current against memory.high and memory.max",
     r"\bcachestat_cgroup_memory_current_bytes\{(?s:.*)\bcachestat_cgroup_memory_high_bytes\{(?s:.*)"
     r"\bcachestat_cgroup_memory_max_bytes\{"),
    ("memory PSI some and full", r"rate\(\s*cachestat_cgroup_memory_pressure_some_seconds_total\{(?s:.*)"
     r"rate\(\s*cachestat_cgroup_memory_pressure_full_seconds_total\{"),
    ("memory.events per second", r"rate\(\s*cachestat_cgroup_memory_events_total\{"),
    ("what this node cannot show: the method", r"\bcachestat_syscall_info\{[^}]*abi=\"mincore\""),
    ("what this node cannot show: the collectors", r"\bcachestat_collector_unavailable_info\{"),
]

# Families some kernel or cgroup layout cannot give (docs/metrics.md, "What a host cannot show"):
# (where, the families as a regular expression over a selector's metric name, what a panel that
# reads one must name in its noValue text, so that an empty panel says why).
UNAVAILABLE_ON = [
    ("abi mincore",
     r"cachestat_(cgroup|cgroup_subtree|file)_(dirty|writeback|evicted|recently_evicted)_bytes", 'abi="mincore"'),
    ("abi none",
     r"cachestat_(cgroup|cgroup_subtree|file)_(cached|dirty|writeback|evicted|recently_evicted|"
     r"files_size|size)_bytes|cachestat_cgroup(_subtree)?_files|cachestat_node_\w+"
     r"|cachestat_cgroup_recent_only_\w+", 'abi="none"'),
    ("the v1 memory hierarchy",
     r"cachestat_cgroup_memory_(current|high|max)_bytes|cachestat_cgroup_memory_events_total"
     r"|cachestat_cgroup_memory_pressure_\w+|cachestat_cgroup_workingset_(activate|restore)_file_total"
     r"|cachestat_cgroup_node_workingset_refault_file_total", "cgroup v1"),
    ("a v2 tree without the memory controller",
     r"cachestat_cgroup_memory_(file|current|high|max)_bytes|cachestat_cgroup_memory_events_total"
     r"|cachestat_cgroup_(node_)?workingset_\w+", "memory controller"),
    ("a kernel without PSI", r"cachestat_cgroup_memory_pressure_\w+", "PSI"),
]


# Families the exporter sends only when a flag turns their collector on (docs/metrics.md): (the
# families as a regular expression over a selector's metric name, the flag that a panel reading
# one names in its description, so that an empty panel on a default exporter says what it needs).
OFF_BY_DEFAULT_FLAGS = [
    (r"cachestat_cgroup_memory_(file|current|high|max)_bytes", "--collector.limits"),
    (r"cachestat_cgroup_node_workingset_refault_file_total", "--collector.numa"),
]


def flag_problems(dash):
    """A panel reading a family off by default names the flag that turns it on."""
    problems = []
    for p in walk_panels(dash.get("panels")):
        names = {m for t in p.get("targets") or [] for m, _ in selectors(t.get("expr", "")) if m}
        for families, flag in OFF_BY_DEFAULT_FLAGS:
            read = sorted(n for n in names if re.fullmatch(families, n))
            if read and flag not in (p.get("description") or ""):
                problems.append("panel %r reads %s, off by default, and its description does not name %s" %
                                (p.get("title"), read[0], flag))
    return problems


def unavailable_problems(dash):
    """A panel reading a family that some kernel or layout lacks has a noValue that says so."""
    problems = []
    for p in walk_panels(dash.get("panels")):
        if p.get("type") == "row":
            continue
        names = {m for t in p.get("targets") or [] for m, _ in selectors(t.get("expr", "")) if m}
        text = ((p.get("fieldConfig") or {}).get("defaults") or {}).get("noValue") or ""
        for where, families, word in UNAVAILABLE_ON:
            read = sorted(n for n in names if re.fullmatch(families, n))
            if read and word.lower() not in text.lower():
                problems.append("panel %r reads %s, absent on %s, and its noValue does not name %s" %
                                (p.get("title"), read[0], where, word))
    return problems


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def walk_panels(panels):
    for p in panels or []:
        yield p
        yield from walk_panels(p.get("panels"))


def variables(dash):
    return {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}


def variable_query(var):
    q = var.get("query")
    if isinstance(q, dict):
        q = q.get("query")
    return q if isinstance(q, str) else ""


def label_values_selector(query):
    """label_values(SELECTOR, label) -> SELECTOR; None if the query has no selector."""
    m = re.fullmatch(r"\s*label_values\(\s*(.+)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*", query, re.S)
    if m:
        return m.group(1).strip()
    m = re.fullmatch(r"\s*query_result\(\s*(.+)\s*\)\s*", query, re.S)
    return m.group(1).strip() if m else None


def expressions(dash):
    """Yields (kind, name, raw expression) for panel targets and query variables."""
    for p in walk_panels(dash.get("panels")):
        for t in p.get("targets") or []:
            if "expr" in t:
                yield "panel", "%s/%s" % (p.get("title", "?"), t.get("refId", "?")), t["expr"]
    for name, v in variables(dash).items():
        if v.get("type") == "query":
            q = variable_query(v)
            sel = label_values_selector(q)
            yield "variable", name, sel if sel is not None else q


def promql_string(value):
    return value.replace("\\", "\\\\").replace('"', '\\"')


VAR_RE = re.compile(r"\$\{([A-Za-z0-9_]+)(?::[^}]*)?\}|\[\[([A-Za-z0-9_]+)(?::[^\]]*)?\]\]|\$([A-Za-z0-9_]+)")


def substitute(expr, values):
    """Replaces Grafana variables; raises KeyError naming an unknown one."""
    def repl(m):
        name = m.group(1) or m.group(2) or m.group(3)
        if name in BUILTINS:
            return values.get(name, BUILTINS[name])
        if name in values:
            return promql_string(values[name])
        raise KeyError(name)
    return VAR_RE.sub(repl, expr)


def strip_strings(expr):
    """Replaces the contents of string literals with placeholders, keeping the quotes."""
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)


def selectors(expr):
    """Yields (metric name or '', matcher text) for every vector selector in expr."""
    s = re.sub(r"#.*", "", expr)
    # Grouping and matching label lists are not selectors.
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    # Ranges, subqueries and offsets' durations.
    s = re.sub(r"\[[^\]]*\]", " ", s)
    pos = 0
    while pos < len(s):
        m = re.compile(r'"(?:[^"\\]|\\.)*"|[A-Za-z_:][A-Za-z0-9_:]*|\{').search(s, pos)
        if not m:
            break
        tok = m.group(0)
        pos = m.end()
        if tok.startswith('"'):
            continue
        if tok == "{":
            end = find_close(s, m.start())
            yield "", s[m.start() + 1:end]
            pos = end + 1
            continue
        rest = s[pos:].lstrip()
        if rest.startswith("("):
            continue  # a function or aggregation
        if tok.lower() in KEYWORDS or re.fullmatch(r"\d.*", tok):
            continue
        if rest.startswith("{"):
            start = s.index("{", pos)
            end = find_close(s, start)
            yield tok, s[start + 1:end]
            pos = end + 1
        else:
            yield tok, ""


def find_close(s, start):
    i, depth = start, 0
    while i < len(s):
        c = s[i]
        if c == '"':
            m = re.compile(r'"(?:[^"\\]|\\.)*"').match(s, i)
            i = m.end() if m else i + 1
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(s)


def calls(expr, names):
    """Yields (function, argument text) for each call of the named functions."""
    for m in re.finditer(r"\b(%s)\s*\(" % "|".join(names), expr):
        depth, i = 0, m.end() - 1
        while i < len(expr):
            if expr[i] == "(":
                depth += 1
            elif expr[i] == ")":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        yield m.group(1), expr[m.end():i]


class Report:
    def __init__(self):
        self.failed = 0

    def check(self, what, problems):
        if problems:
            self.failed += 1
            print("FAIL: %s: %s" % (what, "; ".join(problems)))
        else:
            print("PASS: %s" % what)


README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")


def readme_rows(path=README):
    """The rows the README lists under "Panels, top to bottom:", in its order."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    part = text.split("Panels, top to bottom:", 1)[1].split("\n\n", 2)[1]
    return re.findall(r"^- \*\*(.+?)\*\*", part, re.M)


def layout_problems(dash, readme=None):
    """Grafana lays a dashboard out by gridPos, not by the list: panels that overlap, a panel
    above its row or at the next row's height, rows out of the README's order."""
    problems = []
    top = dash.get("panels", [])
    boxes = []
    for p in top:
        g = p.get("gridPos") or {}
        if not all(isinstance(g.get(k), int) for k in ("x", "y", "w", "h")):
            problems.append("panel %r: no complete gridPos" % p.get("title"))
            continue
        if g["x"] < 0 or g["w"] < 1 or g["x"] + g["w"] > 24:
            problems.append("panel %r: outside the 24 columns (x %d, w %d)" % (p.get("title"), g["x"], g["w"]))
        boxes.append((p, g))
    for i, (a, ga) in enumerate(boxes):
        for b, gb in boxes[i + 1:]:
            if (ga["x"] < gb["x"] + gb["w"] and gb["x"] < ga["x"] + ga["w"] and
                    ga["y"] < gb["y"] + gb["h"] and gb["y"] < ga["y"] + ga["h"]):
                problems.append("panels %r and %r overlap (at x %d, y %d and x %d, y %d)" %
                                (a.get("title"), b.get("title"), ga["x"], ga["y"], gb["x"], gb["y"]))
    # each panel lies below the row listed before it and above the row listed after it
    for i, (p, g) in enumerate(boxes):
        if p.get("type") == "row":
            continue
        before = [rg for rp, rg in boxes[:i] if rp.get("type") == "row"]
        after = [(rp, rg) for rp, rg in boxes[i + 1:] if rp.get("type") == "row"]
        if before and g["y"] < before[-1]["y"] + before[-1]["h"]:
            problems.append("panel %r (y %d) is above its row (y %d)" % (p.get("title"), g["y"], before[-1]["y"]))
        if after and g["y"] + g["h"] > after[0][1]["y"]:
            problems.append("panel %r (y %d, h %d) reaches into the next row %r (y %d)" %
                            (p.get("title"), g["y"], g["h"], after[0][0].get("title"), after[0][1]["y"]))
    rows = [(p, g) for p, g in boxes if p.get("type") == "row"]
    if [g["y"] for _, g in rows] != sorted(g["y"] for _, g in rows) or \
            len({g["y"] for _, g in rows}) != len(rows):
        problems.append("rows are not listed top to bottom at distinct heights: %s" %
                        ", ".join("%r at y %d" % (p.get("title"), g["y"]) for p, g in rows))
    if readme is not None:
        titles = [p.get("title") for p, _ in sorted(rows, key=lambda r: r[1]["y"])]
        if titles != readme:
            problems.append("rows top to bottom are %s; the README lists %s" % (titles, readme))
    return problems


def lint(dash, report):
    report.check("the layout: no panels overlap, each lies within its row, rows in the README's order",
                 layout_problems(dash, readme_rows()))
    report.check("dashboard schemaVersion is %d" % SCHEMA_VERSION,
                 [] if dash.get("schemaVersion") == SCHEMA_VERSION
                 else ["schemaVersion is %r" % dash.get("schemaVersion")])
    report.check("dashboard uid is the stable %r" % DASHBOARD_UID,
                 [] if dash.get("uid") == DASHBOARD_UID else ["uid is %r" % dash.get("uid")])
    report.check("dashboard has a title", [] if dash.get("title") else ["no title"])

    vars_ = variables(dash)
    ds = vars_.get("datasource", {})
    report.check("datasource variable of type prometheus",
                 [] if ds.get("type") == "datasource" and ds.get("query") == "prometheus"
                 else ["variable 'datasource' is missing or not a prometheus datasource variable"])

    problems = []
    # Each variable's query filters on the variables before it: the choices narrow down.
    filters = {"job": [], "instance": ["job"],
               "namespace": ["job", "instance"], "pod": ["job", "instance", "namespace"],
               "container": ["job", "instance", "namespace", "pod"],
               "cgroup": ["job", "instance", "namespace", "pod", "container"]}
    for name, needs in filters.items():
        v = vars_.get(name)
        if not v or v.get("type") != "query":
            problems.append("no query variable %r" % name)
            continue
        q = variable_query(v)
        if not q.startswith("label_values("):
            problems.append("%s: query is not label_values(...): %r" % (name, q))
        if (v.get("datasource") or {}).get("uid") != "${datasource}":
            problems.append("%s: does not use ${datasource}" % name)
        for need in needs:
            if not re.search(r'\b%s\s*=~?\s*"\$%s"' % (need, need), q):
                problems.append("%s: query does not filter on %s" % (name, need))
    report.check("job, instance, namespace, pod, container and cgroup variables with label_values queries",
                 problems)

    # A variable nobody reads is a selector that filters nothing.
    problems = []
    for name in vars_:
        others = [v for n, v in vars_.items() if n != name]
        text = json.dumps([dash.get("panels"), others])
        if not any((m.group(1) or m.group(2) or m.group(3)) == name for m in VAR_RE.finditer(text)):
            problems.append("variable $%s is used by no panel and no other variable" % name)
    report.check("every variable is used", problems)

    panels = [p for p in walk_panels(dash.get("panels")) if p.get("type") != "row"]
    report.check("dashboard has panels", [] if panels else ["no panels"])

    ids = [p.get("id") for p in walk_panels(dash.get("panels"))]
    dup = sorted({i for i in ids if ids.count(i) > 1 or i is None}, key=str)
    report.check("panel ids are unique", ["duplicate or missing id %r" % i for i in dup])

    for field, get in (("title", lambda p: p.get("title")),
                       ("description", lambda p: p.get("description")),
                       ("unit", lambda p: ((p.get("fieldConfig") or {}).get("defaults") or {}).get("unit"))):
        report.check("every panel has a %s" % field,
                     ["panel %s has none" % (p.get("title") or p.get("id")) for p in panels
                      if not (isinstance(get(p), str) and get(p).strip())])

    problems = []
    for p in panels:
        uses = [p.get("datasource")] + [t.get("datasource") for t in p.get("targets") or []]
        if not p.get("targets"):
            problems.append("panel %s has no query" % p.get("title"))
        for d in uses:
            if not isinstance(d, dict) or d.get("uid") != "${datasource}":
                problems.append("panel %s uses datasource %r" % (p.get("title"), d))
                break
    report.check("every panel queries the ${datasource} variable", problems)

    multi = {n for n, v in vars_.items() if v.get("multi") or v.get("includeAll")}
    exprs = [(n, e) for k, n, e in expressions(dash) if k == "panel"]
    problems = []
    for name, expr in exprs:
        for metric, matchers in selectors(expr):
            for label in ("job", "instance"):
                if not re.search(r'\b%s\s*=~?\s*"\$\{?%s\}?"' % (label, label), matchers):
                    problems.append("%s: %s has no %s filter" % (name, metric or "{...}", label))
    report.check("every query filters on job and instance", problems)

    problems = []
    for name, expr in exprs:
        sels = list(selectors(expr))
        if not any(re.search(r'\bcgroup\s*=~\s*"\$\{?cgroup\}?"', m) for _, m in sels):
            continue
        ids = [m for metric, m in sels if metric == IDENTITY]
        if not ids:
            problems.append("%s: per-cgroup query does not join %s" % (name, IDENTITY))
        for m in ids:
            for var in IDENTITY_VARS:
                if not re.search(r'\b%s\s*=~\s*"\$\{?%s\}?"' % (var, var), m):
                    problems.append("%s: %s has no %s=~\"$%s\" filter" % (name, IDENTITY, var, var))
    report.check("every per-cgroup query filters on namespace, pod and container (through %s)" % IDENTITY,
                 problems)

    problems = []
    for name, expr in exprs:
        for var in multi:
            for m in re.finditer(r'\b([a-zA-Z_]\w*)\s*(!?=)(?!~)\s*"\$\{?%s\}?"' % var, expr):
                problems.append('%s: %s%s"$%s" on a multi-value variable needs =~' % (name, m.group(1), m.group(2), var))
    report.check("multi-value variables are matched with =~", problems)

    problems = []
    for name, expr in exprs:
        for func, arg in calls(expr, RATE_FUNCS):
            ranges = re.findall(r"\[([^\]]*)\]", arg)
            if not ranges:
                problems.append("%s: %s() without a range" % (name, func))
            for r in ranges:
                if r.strip() not in ("$__rate_interval", "${__rate_interval}"):
                    problems.append("%s: %s() over [%s]" % (name, func, r))
    report.check("rate/irate/increase use $__rate_interval", problems)

    problems = []
    known = set(vars_) | set(BUILTINS)
    for kind, name, expr in expressions(dash):
        for m in VAR_RE.finditer(expr):
            var = m.group(1) or m.group(2) or m.group(3)
            if var not in known:
                problems.append("%s %s: unknown variable $%s" % (kind, name, var))
        for fn in re.findall(r"\b([a-z_]+)\s*\(", strip_strings(re.sub(r"\[[^\]]*\]", "", expr))):
            if fn not in PROMQL_FUNCS and fn not in KEYWORDS:
                problems.append("%s %s: unknown function %s()" % (kind, name, fn))
    report.check("queries use only known variables and functions", problems)

    report.check("a panel reading a family some kernel or cgroup layout lacks says why in its noValue",
                 unavailable_problems(dash))
    report.check("a panel reading a family off by default names the flag it needs in its description",
                 flag_problems(dash))

    alltext = "\n".join(e for _, e in exprs)
    report.check("panels cover what the issue asks for",
                 ["no query for %s" % what for what, rx in REQUIRED_QUERIES if not re.search(rx, alltext)])


def exprs_substituted(dash, values):
    for kind, name, expr in expressions(dash):
        yield kind, name, " ".join(substitute(expr, values).split())


def cmd_exprs(args):
    dash = load(args.dashboard)
    values = {"job": args.job, "instance": args.instance, "cgroup": args.cgroup,
              "namespace": args.namespace, "pod": args.pod, "container": args.container,
              "cluster": args.cluster, "node": args.node, "topn": args.topn,
              "datasource": "prometheus", "__rate_interval": args.rate_interval}
    for kind, name, expr in exprs_substituted(dash, values):
        if args.panels_only and kind != "panel":
            continue
        print("%s\t%s\t%s" % (kind, name, expr) if args.tsv else expr)
    return 0


def cmd_rulefile(args):
    dash = load(args.dashboard)
    values = {"job": "cachestat", "instance": "localhost:9451", "cgroup": "/system.slice/db.service",
              "namespace": "shop", "pod": "web-0", "container": "nginx", "datasource": "prometheus",
              "cluster": ".*", "node": ".*", "topn": "10"}
    out = ["groups:", "  - name: dashboard-expressions", "    rules:"]
    for i, (kind, name, expr) in enumerate(exprs_substituted(dash, values)):
        out.append("      # %s %s" % (kind, name.replace("\n", " ")))
        out.append("      - record: dashboard:expr_%d" % i)
        out.append("        expr: %s" % json.dumps(expr))
    with open(args.output, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    print(i + 1)
    return 0


def fleet_lint(dash, report):
    """The fleet dashboard: every panel reads recorded series only, filtered by job, cluster, node."""
    report.check("fleet dashboard uid is 'cachestat-fleet'",
                 [] if dash.get("uid") == "cachestat-fleet" else ["uid is %r" % dash.get("uid")])
    report.check("fleet dashboard schemaVersion is %d" % SCHEMA_VERSION,
                 [] if dash.get("schemaVersion") == SCHEMA_VERSION else ["schemaVersion %r" % dash.get("schemaVersion")])
    vars_ = variables(dash)
    report.check("fleet dashboard has job, cluster, node and topn variables",
                 ["no variable %r" % v for v in ("datasource", "job", "cluster", "node", "topn") if v not in vars_])
    unrecorded, unfiltered, n = [], [], 0
    for kind, name, expr in expressions(dash):
        if kind != "panel":
            continue
        for metric, matchers in selectors(re.sub(r"\$\{?topn\}?", "10", expr)):
            n += 1
            if ":" not in metric:
                unrecorded.append("%s reads %s" % (name, metric or "a selector without a name"))
            for label, var in (("job", "$job"), ("cluster", "$cluster"), ("instance", "$node")):
                if not re.search(r'\b%s\s*=~\s*"\%s"' % (label, var), matchers):
                    unfiltered.append("%s: %s without %s=~\"%s\"" % (name, metric, label, var))
    report.check("fleet panels read only recorded series (level:metric:operations), %d selectors" % n,
                 unrecorded or ([] if n else ["no selector found"]))
    report.check("fleet panels filter on job, cluster and node", unfiltered)


def cmd_fleetlint(args):
    report = Report()
    fleet_lint(load(args.dashboard), report)
    return 1 if report.failed else 0


def cmd_lint(args):
    report = Report()
    lint(load(args.dashboard), report)
    return 1 if report.failed else 0


def load_yaml(path):
    import yaml
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def dashboard_exprs(node):
    """Every PromQL expression of a dashboard: its targets' and its variables' queries."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("expr", "query") and isinstance(value, str):
                yield value
            else:
                yield from dashboard_exprs(value)
    elif isinstance(node, list):
        for item in node:
            yield from dashboard_exprs(item)


def readers_of(rule_files, dashboards):
    """[(reader, PromQL expression)]: every alert and recording rule of rule_files, and every
    expression (panel targets, variable queries) of the dashboards."""
    readers = []
    for path in rule_files:
        for group in (load_yaml(path) or {}).get("groups", []):
            for rule in group.get("rules", []):
                readers.append((rule.get("alert") or rule.get("record", ""), rule.get("expr", "")))
    for path in dashboards or []:
        readers += [(os.path.basename(path), e) for e in dashboard_exprs(load(path))]
    return readers


def read_by(name, readers, but=None):
    """The readers whose expression names the series name (a whole name: cachestat_cgroup_files
    is not read by a query of cachestat_cgroup_files_size_bytes), reader but left out."""
    word = re.compile(r"(?<![a-zA-Z0-9_:])%s(?![a-zA-Z0-9_:])" % re.escape(name))
    return sorted({reader for reader, expr in readers if reader != but and word.search(expr)})


# docs/metrics.md: a family is a row of its tables whose first cell is the family's name, the rows
# scripts/check-docs.sh reads and keeps equal to what the exporter emits. A family is off by
# default when its row says so, or its section's text before the section's first table does.
METRICS_DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "metrics.md")
FAMILY_ROW = re.compile(r"^\| `(cachestat_[a-z0-9_]+)` \|(.*)$", re.M)
OFF_BY_DEFAULT = "off by default"
# The section of docs/metrics.md that says why a family nothing reads stays: a table of rows
# "| why it stays | `family`, `family` |".
UNREAD_SECTION = "## Families nothing reads"


def doc_families(text):
    """{family: True when the exporter sends it by default} for the tables of docs/metrics.md."""
    families = {}
    for section in re.split(r"^(?=## )", text, flags=re.M):
        off = OFF_BY_DEFAULT in section.split("\n|", 1)[0]
        for m in FAMILY_ROW.finditer(section):
            families[m.group(1)] = not (off or OFF_BY_DEFAULT in m.group(2))
    return families


def doc_unread_reasons(text):
    """[(family, why it stays)] from the table of UNREAD_SECTION, in its order."""
    section = text.split("\n%s\n" % UNREAD_SECTION, 1)[1:]
    section = re.split(r"^## ", section[0], flags=re.M)[0] if section else ""
    reasons = []
    for row in re.findall(r"^\|(.*)\|\s*$", section, re.M):
        cells = [c.strip() for c in row.split("|")]
        for family in re.findall(r"`(cachestat_[a-z0-9_]+)`", cells[-1]):
            reasons.append((family, " ".join(cells[:-1]).strip()))
    return reasons


def cmd_families(args):
    """Every family the exporter sends by default earns its series: a panel, an alert or a rule
    reads it, or docs/metrics.md says why it stays; and it says so only for such a family."""
    report = Report()
    with open(args.metrics_doc, encoding="utf-8") as f:
        text = f.read()
    families = doc_families(text)
    default = [n for n, on in families.items() if on]
    report.check("docs/metrics.md lists the families, %d sent by default and %d off by default" %
                 (len(default), len(families) - len(default)),
                 [] if default else ["no family found in the tables of %s" % args.metrics_doc])
    reasons = doc_unread_reasons(text)
    why = dict(reasons)
    readers = readers_of(args.rule_files, args.dashboards)
    unread = [n for n in default if not read_by(n, readers)]
    boards = ", ".join(os.path.basename(p) for p in args.dashboards)
    report.check("every family sent by default is read by a panel (%s), an alert or a rule, or "
                 "docs/metrics.md says why it stays (%d unread)" % (boards, len(unread)),
                 ["%s: nothing reads it and docs/metrics.md gives no reason" % n for n in unread if not why.get(n)])
    problems = []
    seen = set()
    for name, reason in reasons:
        if name in seen:
            problems.append("%s: listed twice" % name)
        seen.add(name)
        if name not in families:
            problems.append("%s: no such family in the tables" % name)
        elif not families[name]:
            problems.append("%s: off by default, out of the lint's scope" % name)
        elif read_by(name, readers):
            problems.append("%s: read by %s" % (name, ", ".join(read_by(name, readers))))
        if not reason:
            problems.append("%s: an empty reason" % name)
    report.check("docs/metrics.md's %r lists only families sent by default that nothing reads (%d)" %
                 (UNREAD_SECTION.lstrip("# "), len(reasons)), problems)
    return 1 if report.failed else 0


def cmd_rules(args):
    report = Report()
    alerts, records = {}, []
    for path in args.rule_files:
        for group in (load_yaml(path) or {}).get("groups", []):
            for rule in group.get("rules", []):
                if "alert" in rule:
                    alerts[rule["alert"]] = rule
                else:
                    records.append(rule.get("record", ""))
    report.check("alerting rules exist", [] if alerts else ["no alert found"])
    report.check("alert names are CamelCase with the Cachestat prefix",
                 [n for n in alerts if not re.fullmatch(r"Cachestat(?:[A-Z][a-z0-9]*)+", n)])
    problems = []
    for name, rule in alerts.items():
        if (rule.get("labels") or {}).get("severity") not in ("critical", "warning", "info"):
            problems.append("%s: labels.severity is %r" % (name, (rule.get("labels") or {}).get("severity")))
        for key in ("summary", "description"):
            if not (rule.get("annotations") or {}).get(key):
                problems.append("%s: no annotations.%s" % (name, key))
        if not rule.get("for"):
            problems.append("%s: no for:" % name)
    report.check("every alert has severity, summary, description and for", problems)
    # runbook_url: the mixin's runbookURLPattern with the alert's name, absolute, and the page exists.
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    config = mixin_config(args.mixin)
    pattern = config["runbookURLPattern"]
    problems = [] if re.fullmatch(r"https?://[^/\s]+(/\S*)?", pattern % "X") else [
        "runbookURLPattern %r does not make an absolute URL" % pattern]
    for name, rule in alerts.items():
        url = (rule.get("annotations") or {}).get("runbook_url", "")
        if url != pattern % name:
            problems.append("%s: runbook_url %r is not %r" % (name, url, pattern % name))
        if not os.path.isfile(os.path.join(top, "docs", "runbooks", name + ".md")):
            problems.append("%s: no docs/runbooks/%s.md" % (name, name))
    report.check("every alert's runbook_url is %s, a page of docs/runbooks/" % (pattern % "ALERT"), problems)
    # A job selector (the mixin's cachestatSelector): in the expression, or in every recording
    # rule it reads.
    selector = config["cachestatSelector"]
    recs = {r["record"]: r.get("expr", "") for path in args.rule_files
            for g in (load_yaml(path) or {}).get("groups", []) for r in g.get("rules", [])
            if r.get("record")}
    selected, grown = set(), True
    while grown:  # a rule that reads a selected rule is selected
        new = {n for n, e in recs.items() if n not in selected and
               (selector in e or any(re.search(r"\b%s\b" % re.escape(x), e) for x in selected))}
        selected |= new
        grown = bool(new)
    problems = []
    for name, rule in alerts.items():
        expr = rule.get("expr", "")
        if selector not in expr and not any(re.search(r"\b%s\b" % re.escape(x), expr)
                                                          for x in selected):
            problems.append("%s: no job selector" % name)
    report.check("every alert selects the exporter's job", problems)
    report.check("recording rule names follow level:metric:operations",
                 [r for r in records if not re.fullmatch(r"[a-z_]+:cachestat_[a-z0-9_]+:[a-z0-9_]+", r)])
    # Every recording rule earns its series: a panel, an alert or another rule reads it.
    readers = readers_of(args.rule_files, args.dashboards)
    problems = ["%s: no panel, alert or rule reads it" % name for name in recs
                if not read_by(name, readers, but=name)]
    boards = ", ".join(os.path.basename(p) for p in args.dashboards or []) or "no dashboard"
    report.check("every recording rule is read by a panel (%s), an alert or another rule" % boards, problems)

    fires, quiet = set(), set()
    for path in args.tests:
        for test in (load_yaml(path) or {}).get("tests", []):
            for t in test.get("alert_rule_test") or []:
                (fires if t.get("exp_alerts") else quiet).add(t.get("alertname"))
    report.check("every alert has a unit test where it fires",
                 ["%s never expected to fire" % n for n in sorted(alerts) if n not in fires])
    report.check("every alert has a unit test where it must not fire",
                 ["%s never expected quiet" % n for n in sorted(alerts) if n not in quiet])
    return 1 if report.failed else 0


def first_panel(dash, pred=lambda p: True):
    return next(p for p in walk_panels(dash["panels"]) if p.get("type") != "row" and pred(p))


def _replace_expr(dash, old, new):
    for p in walk_panels(dash["panels"]):
        for t in p.get("targets") or []:
            if old in t.get("expr", ""):
                t["expr"] = t["expr"].replace(old, new, 1)
                return
    raise SystemExit("mutation found nothing to change: %r" % old)


MUTATIONS = {
    "panel-overlap": lambda d: d["panels"][2]["gridPos"].update(x=6),
    "panel-outside-row": lambda d: d["panels"][-1]["gridPos"].update(y=0),
    "schema-version": lambda d: d.update(schemaVersion=38),
    "uid": lambda d: d.update(uid="cachestat-exporter-copy"),
    "no-description": lambda d: first_panel(d).pop("description"),
    "no-unit": lambda d: first_panel(d)["fieldConfig"]["defaults"].pop("unit"),
    "no-title": lambda d: first_panel(d).update(title=""),
    "no-instance-filter": lambda d: _replace_expr(d, ', instance="$instance"', ""),
    "bare-metric": lambda d: _replace_expr(d, "cachestat_cgroup_cached_bytes{", "cachestat_cgroup_cached_bytes + 0 * up{"),
    "fixed-rate-window": lambda d: _replace_expr(d, "[$__rate_interval]", "[5m]"),
    "multi-value-equals": lambda d: _replace_expr(d, 'cgroup=~"$cgroup"', 'cgroup="$cgroup"'),
    "unknown-variable": lambda d: _replace_expr(d, '"$job"', '"$jobname"'),
    "missing-panel": lambda d: d.update(panels=[p for p in d["panels"]
                                                if "topk(" not in json.dumps(p.get("targets", []))]),
    "datasource-hardcoded": lambda d: first_panel(d).update(datasource={"type": "prometheus", "uid": "abc123"}),
    "unused-variable": lambda d: d["templating"]["list"].append(dict(
        variables(d)["cgroup"], name="node", label="Node",
        query='label_values(cachestat_build_info{job="$job", instance="$instance"}, node_name)',
        definition='label_values(cachestat_build_info{job="$job", instance="$instance"}, node_name)')),
    "no-namespace-filter": lambda d: _replace_expr(d, ', namespace=~"$namespace"', ""),
    "no-identity-join": lambda d: _replace_expr(
        d, ' * on (cluster, job, instance, cgroup) group_left (display) %s{cluster=~"$cluster", job="$job", '
        'instance="$instance", '
        'namespace=~"$namespace", pod=~"$pod", container=~"$container"}' % IDENTITY, ""),
    "variable-chain-broken": lambda d: variables(d)["pod"].update(
        query='label_values(%s{cluster=~"$cluster", job="$job", instance="$instance"}, pod)' % IDENTITY),
    "novalue-silent": lambda d: first_panel(d, lambda p: "dirty_bytes" in json.dumps(p.get("targets")))
    ["fieldConfig"]["defaults"].pop("noValue"),
    "flag-unnamed": lambda d: first_panel(d, lambda p: "memory_current" in json.dumps(p.get("targets"))).update(
        description="memory.current of the cgroup against its memory.high and memory.max."),
    "novalue-no-cause": lambda d: first_panel(d, lambda p: "pressure_some" in json.dumps(p.get("targets")))
    ["fieldConfig"]["defaults"].update(noValue="No data"),
    "banner-wrong-code": lambda d: _replace_expr(d, 'reason="no_psi"}) * 3', 'reason="no_psi"}) * 2'),
    "banner-sum": lambda d: _replace_expr(d, 'max(cachestat_collector_unavailable_info{cluster=~"$cluster", job="$job", '
                                          'instance="$instance", reason="cgroup_v1"})',
                                          'sum(cachestat_collector_unavailable_info{cluster=~"$cluster", '
                                          'job="$job", instance="$instance", reason="cgroup_v1"})'),
    "bad-promql": lambda d: _replace_expr(d, "cachestat_cgroup_cached_bytes{", "sum by (cgroup (cachestat_cgroup_cached_bytes{"),
}


def cmd_mutate(args):
    dash = load(args.dashboard)
    MUTATIONS[args.mutation](dash)
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(dash, f, indent=2)
    return 0


def cmd_mutate_rule(args):
    """Rewrites one alert so that it never fires or always fires; other rules stay as they are."""
    import yaml
    doc = load_yaml(args.rule_file)
    found = False
    for group in doc.get("groups", []):
        for rule in group.get("rules", []):
            if rule.get("alert") == args.alert:
                rule["expr"] = "vector(1) < 0" if args.mode == "never" else "vector(1)"
                found = True
    if not found:
        raise SystemExit("no alert %s in %s" % (args.alert, args.rule_file))
    with open(args.output, "w", encoding="utf-8") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    return 0


def cmd_alert_tests(args):
    """Writes, into the directory OUTPUT, a copy of each promtool test file that keeps only the tests
    asserting on ALERT (an alert_rule_test with its alertname): a mutation of that alert is caught by
    those or by none, and the others (the slow ones of other alerts) need not run for it."""
    import yaml
    kept = 0
    for path in args.test_files:
        doc = load_yaml(path)
        tests = [t for t in doc.get("tests", [])
                 if any(a.get("alertname") == args.alert for a in t.get("alert_rule_test", []))]
        if not tests:
            continue
        doc["tests"] = tests
        kept += len(tests)
        with open(os.path.join(args.output, os.path.basename(path)), "w", encoding="utf-8") as f:
            yaml.safe_dump(doc, f, sort_keys=False)
    if not kept:
        raise SystemExit("no test asserts on %s in %s" % (args.alert, " ".join(args.test_files)))
    return 0


# Cgroups of one node for filtertest: (cgroup, info labels, cached bytes, display).
FILTER_UID = "0f7c2a4e-3b1d-4c8e-9a6f-5d2e1b7c8a90"
FILTER_ID = "5be1ecc7935f1dd85635d4feedaf660594030253cc97c9e9ca3819ffeac36b65"
FILTER_POD_CG = "/kubepods.slice/kubepods-pod%s.slice" % FILTER_UID.replace("-", "_")
FILTER_CGROUPS = [
    (FILTER_POD_CG, 'pod_uid="%s",pod_qos="guaranteed"' % FILTER_UID, 100, "shop/web-0"),
    (FILTER_POD_CG + "/cri-containerd-%s.scope" % FILTER_ID,
     'pod_uid="%s",pod_qos="guaranteed",container_runtime="containerd",container_id="%s"'
     % (FILTER_UID, FILTER_ID), 200, "shop/web-0/nginx"),
    ("/system.slice/db.service", 'systemd_slice="system.slice",systemd_unit="db.service"', 300,
     "/system.slice/db.service"),
]
# (variable values, displays the query must return)
FILTER_CASES = [
    ({}, ["shop/web-0", "shop/web-0/nginx", "/system.slice/db.service"]),
    ({"namespace": "shop"}, ["shop/web-0", "shop/web-0/nginx"]),
    ({"namespace": "shop", "pod": "web-0", "container": "nginx"}, ["shop/web-0/nginx"]),
    ({"namespace": "kube-system"}, []),
]


def cmd_filtertest(args):
    import yaml
    dash = load(args.dashboard)
    base = {"job": "cachestat", "instance": "node-a", "cgroup": ".+", "namespace": ".*", "pod": ".*",
            "container": ".*", "cluster": ".*", "datasource": "prometheus"}
    target = 'job="cachestat",instance="node-a"'
    series = [{"series": 'kube_pod_info{namespace="shop",pod="web-0",uid="%s"}' % FILTER_UID, "values": "1x4"},
              {"series": 'kube_pod_container_info{namespace="shop",pod="web-0",container="nginx",'
                         'container_id="containerd://%s"}' % FILTER_ID, "values": "1x4"}]
    for cg, labels, value, _ in FILTER_CGROUPS:
        series.append({"series": 'cachestat_cgroup_info{%s,cgroup="%s",%s}' % (target, cg, labels), "values": "1x4"})
        series.append({"series": 'cachestat_cgroup_cached_bytes{%s,cgroup="%s"}' % (target, cg),
                       "values": "%dx4" % value})
    tests = []
    for values, displays in FILTER_CASES:
        exprs = [e for k, n, e in exprs_substituted(dash, dict(base, **values))
                 if k == "panel" and "cachestat_cgroup_cached_bytes{" in e]
        samples = [{"labels": '{%s,cgroup="%s",display="%s"}' % (target, cg, disp), "value": value}
                   for cg, _, value, disp in FILTER_CGROUPS if disp in displays]
        tests.append({"expr": exprs[0], "eval_time": "1m", "exp_samples": samples})
    doc = {"rule_files": [os.path.abspath(args.rules)], "evaluation_interval": "15s",
           "tests": [{"name": "dashboard cached bytes filtered by namespace, pod and container",
                      "interval": "15s", "input_series": series, "promql_expr_test": tests}]}
    with open(args.output, "w", encoding="utf-8") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    return 0


# What the top panel must say for each thing a node can lack: the reason of
# cachestat_collector_unavailable_info or the abi of cachestat_syscall_info, and a word its text
# names. no_cachestat needs no line of its own: abi="none" says it.
BANNER_WORDS = {("reason", "cgroup_v1"): "cgroup v1", ("reason", "no_memory_controller"): "memory controller",
                ("reason", "no_psi"): "PSI", ("abi", "mincore"): "mincore", ("abi", "none"): "no file"}
# Nodes for the test: (name, abi, [(collector, reason)]).
BANNER_NODES = [
    ("v1-mincore", "mincore", [("events", "cgroup_v1"), ("limits", "cgroup_v1"), ("pressure", "cgroup_v1")]),
    ("complete", "mainline", []),
    ("bare", "none", [("memstat", "no_memory_controller"), ("events", "no_memory_controller"),
                      ("limits", "no_memory_controller"), ("pressure", "no_psi"), ("cachestat", "no_cachestat")]),
]


def banner_problems(dash):
    """The top panel: one target per thing of BANNER_WORDS, its value mapped to a text naming it.
    Returns (problems, [(label, value, code, expr)])."""
    panel = next((p for p in walk_panels(dash.get("panels"))
                  if "cachestat_collector_unavailable_info" in json.dumps(p.get("targets"))), None)
    if panel is None:
        return ["no panel reads cachestat_collector_unavailable_info"], []
    texts = {}
    for m in (panel.get("fieldConfig") or {}).get("defaults", {}).get("mappings") or []:
        for code, o in (m.get("options") or {}).items():
            texts[code] = o.get("text", "")
    problems, found = [], []
    for t in panel.get("targets") or []:
        expr = t.get("expr", "")
        m = re.search(r'\b(reason|abi)="([a-z0-9_]+)"', expr)
        if not m:
            problems.append("target %s names no reason or abi" % t.get("refId"))
            continue
        key = (m.group(1), m.group(2))
        code = re.search(r"\*\s*(\d+)\s*$", expr)
        code = code.group(1) if code else "1"
        word = BANNER_WORDS.get(key)
        if word is None:
            problems.append("target %s: %s=%s is not a thing a node can lack" % ((t.get("refId"),) + key))
        elif word.lower() not in texts.get(code, "").lower():
            problems.append("target %s (%s=%s) gives %s, whose text %r does not name %r" %
                            (t.get("refId"), key[0], key[1], code, texts.get(code), word))
        found.append((key, code, expr))
    missing = sorted("%s=%s" % k for k in BANNER_WORDS if k not in [f[0] for f in found])
    if missing:
        problems.append("nothing says %s" % ", ".join(missing))
    return problems, found


def cmd_bannertest(args):
    """Checks the top panel's targets and mappings, and writes a promtool test: on each node of
    BANNER_NODES each target gives its code exactly when the node lacks its thing."""
    import yaml
    dash = load(args.dashboard)
    problems, found = banner_problems(dash)
    for p in problems:
        print("FAIL: the top panel says what a node lacks: %s" % p)
    if problems:
        return 1
    values = {"job": "cachestat", "cluster": ".*", "datasource": "prometheus"}
    tests = []
    for node, abi, lacks in BANNER_NODES:
        target = 'job="cachestat",instance="%s"' % node
        series = [{"series": 'cachestat_syscall_info{%s,abi="%s"}' % (target, abi), "values": "1x4"}]
        series += [{"series": 'cachestat_collector_unavailable_info{%s,collector="%s",reason="%s"}' %
                    (target, c, r), "values": "1x4"} for c, r in lacks]
        cases = []
        for (label, value), code, expr in found:
            expr = " ".join(substitute(expr, dict(values, instance=node)).split())
            has = abi == value if label == "abi" else value in [r for _, r in lacks]
            labels = '{abi="%s",instance="%s",job="cachestat"}' % (abi, node) if label == "abi" else "{}"
            cases.append({"expr": expr, "eval_time": "1m",
                          "exp_samples": [{"labels": labels, "value": int(code)}] if has else []})
        tests.append({"name": "the top panel on node %s" % node, "interval": "15s",
                      "input_series": series, "promql_expr_test": cases})
    with open(args.output, "w", encoding="utf-8") as f:
        yaml.safe_dump({"rule_files": [], "evaluation_interval": "15s", "tests": tests}, f, sort_keys=False)
    print("PASS: the top panel names everything a node can lack (%d targets)" % len(found))
    return 0


# The node of the series budget (dashboards/README.md, "Recording rules"): kubelet's default of 110
# pods on cgroup v2 with the systemd driver, each pod a cgroup with two containers and its sandbox
# (pause); around them the root, kubepods.slice and its QoS slices, system.slice with its services,
# user.slice and init.scope. 470 cgroups.
BUDGET_PODS = 110
BUDGET_CONTAINERS = 2
BUDGET_SERVICES = 23
# At most this many series recorded for that node.
BUDGET_MAX = 1000


def budget_node():
    """[(cgroup, info labels, kind)] of the budget's node, kind one of root, slice, pod, container,
    sandbox, leaf; and [(uid, namespace, pod, [(container, id)])] of its pods."""
    cgroups = [("/", "", "root"),
               ("/kubepods.slice", 'systemd_slice="kubepods.slice"', "slice"),
               ("/kubepods.slice/kubepods-burstable.slice", 'systemd_slice="kubepods-burstable.slice"', "slice"),
               ("/kubepods.slice/kubepods-besteffort.slice", 'systemd_slice="kubepods-besteffort.slice"', "slice"),
               ("/system.slice", 'systemd_slice="system.slice"', "slice"),
               ("/user.slice", 'systemd_slice="user.slice"', "slice"),
               ("/init.scope", 'systemd_unit="init.scope"', "leaf")]
    cgroups += [("/system.slice/svc%02d.service" % i,
                 'systemd_slice="system.slice",systemd_unit="svc%02d.service"' % i, "leaf")
                for i in range(BUDGET_SERVICES)]
    pods = []
    for p in range(BUDGET_PODS):
        uid = "0f7c2a4e-3b1d-4c8e-9a6f-%012x" % p
        pod_cg = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice" % uid.replace("-", "_")
        pod_labels = 'pod_uid="%s",pod_qos="burstable"' % uid
        cgroups.append((pod_cg, pod_labels, "pod"))
        ctrs = []
        for c in range(BUDGET_CONTAINERS + 1):
            cid = "%056x%08x" % (p, c)
            labels = '%s,container_runtime="containerd",container_id="%s"' % (pod_labels, cid)
            kind = "container" if c < BUDGET_CONTAINERS else "sandbox"
            cgroups.append(("%s/cri-containerd-%s.scope" % (pod_cg, cid), labels, kind))
            if kind == "container":
                ctrs.append(("c%d" % c, cid))
        pods.append((uid, "ns%d" % (p % 7), "pod-%03d" % p, ctrs))
    return cgroups, pods


def budget_expected(n_cgroups, n_pods):
    """{recorded series name: how many} on a healthy node of n_cgroups cgroups and n_pods pods: the
    formula of dashboards/README.md. The alerts' sparse rules record nothing there."""
    return {
        "cgroup:cachestat_cgroup_info:identity": n_cgroups,
        "pod:cachestat_recently_evicted:bytes": n_pods,
        "pod:cachestat_workingset_refault_file:rate5m": n_pods,
        "instance_pod:cachestat_recently_evicted:top10_bytes": min(10, n_pods),
        "instance_pod:cachestat_workingset_refault_file:top10_rate5m": min(10, n_pods),
        "instance_cgroup:cachestat_recently_evicted:top10_bytes": min(10, n_cgroups),
        "instance_cgroup:cachestat_workingset_refault_file:top10_rate5m": min(10, n_cgroups),
        "instance:cachestat_unattributed_cached:bytes": 1,
    }


def cmd_budgettest(args):
    """Writes a promtool test: the rule files, on the budget's node sending every family (the
    collectors off by default too), record the series of budget_expected, at most BUDGET_MAX."""
    import yaml
    cgroups, pods = budget_node()
    expected = budget_expected(len(cgroups), len(pods))
    total = sum(expected.values())
    if total > BUDGET_MAX:
        print("FAIL: the recording rules' budget: %d series a node, more than %d" % (total, BUDGET_MAX))
        return 1
    t = 'job="cachestat",instance="node-a"'
    series = []

    def add(name, labels, values):
        series.append({"series": "%s{%s}" % (name, ",".join(x for x in (t, labels) if x)), "values": values})

    for i, (cg, info, kind) in enumerate(cgroups):
        c = 'cgroup="%s"' % cg
        add("cachestat_cgroup_info", ",".join(x for x in (c, info) if x), "1x6")
        # memory.pressure everywhere (the root's is the node's); memory.stat, memory.events,
        # memory.current below the root; limits on the pods and their containers.
        add("cachestat_cgroup_memory_pressure_some_seconds_total", c, "0x6")
        add("cachestat_cgroup_memory_pressure_full_seconds_total", c, "0x6")
        if kind != "root":
            for family in ("workingset_refault_file", "workingset_activate_file", "workingset_restore_file"):
                add("cachestat_cgroup_%s_total" % family, c, "0+%dx6" % (i + 1))
            add("cachestat_cgroup_node_workingset_refault_file_total", c + ',node="0"', "0+%dx6" % (i + 1))
            add("cachestat_cgroup_memory_file_bytes", c, "%dx6" % (i << 20))
            add("cachestat_cgroup_memory_current_bytes", c, "%dx6" % (i << 20))
            for event in ("low", "high", "max", "oom", "oom_kill"):
                add("cachestat_cgroup_memory_events_total", c + ',event="%s"' % event, "0x6")
        if kind in ("pod", "container"):
            add("cachestat_cgroup_memory_max_bytes", c, "%dx6" % (i << 22))
        # The files' sums: a cgroup with a process holds files (its own), a parent its subtree's.
        if kind in ("root", "slice", "pod"):
            for family in ("cached", "recently_evicted"):
                add("cachestat_cgroup_subtree_%s_bytes" % family, c, "%dx6" % (i << 12))
        else:
            for family in ("cached", "dirty", "writeback", "evicted", "recently_evicted", "files_size"):
                add("cachestat_cgroup_%s_bytes" % family, c, "%dx6" % (i << 12))
            add("cachestat_cgroup_files", c, "%dx6" % i)
    add("cachestat_node_unattributed_cached_bytes", "", "1048576x6")
    for uid, ns, pod, ctrs in pods:
        series.append({"series": 'kube_pod_info{namespace="%s",pod="%s",uid="%s"}' % (ns, pod, uid),
                       "values": "1x6"})
        for name, cid in ctrs:
            series.append({"series": 'kube_pod_container_info{namespace="%s",pod="%s",container="%s",'
                                     'container_id="containerd://%s"}' % (ns, pod, name, cid), "values": "1x6"})
    recorded = '{__name__=~"[a-z_]+:cachestat_[a-z0-9_]+:[a-z0-9_]+"}'
    doc = {"rule_files": [os.path.abspath(f) for f in args.rule_files], "evaluation_interval": "1m",
           "tests": [{"name": "the recorded series of a %d-pod node of %d cgroups" % (len(pods), len(cgroups)),
                      "interval": "1m", "input_series": series,
                      "promql_expr_test": [
                          {"expr": "count by (__name__) (%s)" % recorded, "eval_time": "6m",
                           "exp_samples": [{"labels": '{__name__="%s"}' % n, "value": v}
                                           for n, v in sorted(expected.items())]},
                          {"expr": "count(%s)" % recorded, "eval_time": "6m",
                           "exp_samples": [{"labels": "{}", "value": total}]}]}]}
    with open(args.output, "w", encoding="utf-8") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    print("PASS: the recording rules' budget: %d series for %d cgroups and %d pods, at most %d" %
          (total, len(cgroups), len(pods), BUDGET_MAX))
    return 0


# The mixin whose _config the checks read (dashboards/mixin/).
MIXIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mixin")


def mixin_config(mixin=MIXIN):
    """The mixin's _config (dashboards/mixin/config.libsonnet with what mixin.libsonnet adds)."""
    import subprocess
    out = subprocess.run(["jsonnet", "-J", mixin, "-e", '(import "mixin.libsonnet")._config'],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def cmd_alerts(args):
    for path in args.rule_files:
        for group in (load_yaml(path) or {}).get("groups", []):
            for rule in group.get("rules", []):
                if "alert" in rule:
                    print("%s\t%s" % (rule["alert"], path))
    return 0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.join(here, "..", "cachestat.json")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("exprs", help="print the dashboard's expressions, variables substituted")
    p.add_argument("--dashboard", default=default)
    p.add_argument("--job", default="cachestat")
    p.add_argument("--instance", default="localhost:9451")
    p.add_argument("--cgroup", default=".+", help="regular expression for cgroup=~ (default .+)")
    for var in IDENTITY_VARS:
        p.add_argument("--" + var, default=".*", help="regular expression for %s=~ (default .*)" % var)
    p.add_argument("--rate-interval", default="1m")
    p.add_argument("--cluster", default=".*", help="regular expression for cluster=~ (both dashboards)")
    p.add_argument("--node", default=".*", help="regular expression for instance=~ (fleet dashboard)")
    p.add_argument("--topn", default="10", help="the fleet dashboard's top N")
    p.add_argument("--tsv", action="store_true", help="print kind<TAB>name<TAB>expression")
    p.add_argument("--panels-only", action="store_true", help="leave out the template variables' queries")
    p.set_defaults(func=cmd_exprs)

    p = sub.add_parser("rulefile", help="write the expressions as recording rules")
    p.add_argument("--dashboard", default=default)
    p.add_argument("output")
    p.set_defaults(func=cmd_rulefile)

    p = sub.add_parser("lint", help="check the dashboard's conventions")
    p.add_argument("--dashboard", default=default)
    p.set_defaults(func=cmd_lint)

    p = sub.add_parser("fleetlint", help="check the fleet dashboard's conventions")
    p.add_argument("--dashboard", default=os.path.join(here, "..", "cachestat-fleet.json"))
    p.set_defaults(func=cmd_fleetlint)

    p = sub.add_parser("rules", help="check rule files and their unit tests")
    p.add_argument("--rule-files", nargs="+", required=True)
    p.add_argument("--tests", nargs="+", required=True)
    p.add_argument("--dashboards", nargs="*", help="the dashboards whose panels read the recording rules")
    p.add_argument("--mixin", default=MIXIN, help="the mixin whose _config the rules follow")
    p.set_defaults(func=cmd_rules)

    p = sub.add_parser("families", help="check that every family sent by default is read, or its staying explained")
    p.add_argument("--metrics-doc", default=METRICS_DOC, help="the metric contract (default docs/metrics.md)")
    p.add_argument("--rule-files", nargs="+", required=True)
    p.add_argument("--dashboards", nargs="+", required=True)
    p.set_defaults(func=cmd_families)

    p = sub.add_parser("mutate", help="write a copy of the dashboard broken one way")
    p.add_argument("--dashboard", default=default)
    p.add_argument("mutation", choices=sorted(MUTATIONS))
    p.add_argument("output")
    p.set_defaults(func=cmd_mutate)

    p = sub.add_parser("mutate-rule", help="write a rule file where one alert never or always fires")
    p.add_argument("rule_file")
    p.add_argument("alert")
    p.add_argument("mode", choices=["never", "always"])
    p.add_argument("output")
    p.set_defaults(func=cmd_mutate_rule)

    p = sub.add_parser("alert-tests", help="copy the promtool tests that assert on one alert into a directory")
    p.add_argument("alert")
    p.add_argument("output")
    p.add_argument("test_files", nargs="+")
    p.set_defaults(func=cmd_alert_tests)

    p = sub.add_parser("filtertest", help="write a promtool test of the namespace / pod / container filters")
    p.add_argument("--dashboard", default=default)
    p.add_argument("--rules", default=os.path.join(here, "..", "rules", "cachestat.identity.yml"))
    p.add_argument("output")
    p.set_defaults(func=cmd_filtertest)

    p = sub.add_parser("bannertest", help="check the top panel's mappings; write a promtool test of its targets")
    p.add_argument("--dashboard", default=default)
    p.add_argument("output")
    p.set_defaults(func=cmd_bannertest)

    p = sub.add_parser("budgettest", help="write a promtool test counting the series the rules record for a node")
    p.add_argument("--rule-files", nargs="+", required=True)
    p.add_argument("output")
    p.set_defaults(func=cmd_budgettest)

    p = sub.add_parser("alerts", help="list alert names and their files")
    p.add_argument("rule_files", nargs="+")
    p.set_defaults(func=cmd_alerts)

    args = ap.parse_args()
    try:
        return args.func(args)
    except KeyError as e:
        print("unknown variable $%s" % e.args[0], file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

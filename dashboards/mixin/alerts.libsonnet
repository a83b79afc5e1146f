// SPDX-License-Identifier: Apache-2.0
// The alerting rules: prometheusAlerts, written to dashboards/rules/cachestat.alerts.yml. The
// refault alerts read the sparse recording rules of rules.libsonnet (group
// cachestat.alerting.rules), the others the exporter's families; the alerts about a cgroup read
// the identity rule (cachestat.identity) too: load them all. Each alert's severity and `for` come from
// _config.alerts, its runbook_url from _config.runbookURLPattern (docs/runbooks/ALERT.md).
// Severities as kubernetes-mixin and node-mixin use them: critical pages someone now, warning
// opens a ticket. Nothing fires in under 10 minutes; windows and `for` suit scrape intervals of
// 15 s to 60 s.
// Routing: each alert about a cgroup carries namespace, pod and container where the identity
// rule (kube-state-metrics) knows them, for Alertmanager's routes; the cgroup label always. The
// others carry the exporter's target labels as its series have them (no `by` that drops one).
{
  local cfg = $._config,

  // Every line of a PromQL text indented by two spaces, without its last newline.
  local indent(text) = std.join('\n', ['  ' + l for l in std.split(std.rstripChars(text, '\n'), '\n')]),

  // The identity's namespace, pod and container for an alert about a cgroup, or none: the
  // cgroup's own series where the identity rule does not name it.
  local withIdentity(expr, series) = |||
    (
    %(expr)s
    )
    * on (%(clusterLabel)s, job, instance, cgroup) group_left (namespace, pod, container)
      (
          max by (%(clusterLabel)s, job, instance, cgroup, namespace, pod, container) (cgroup:cachestat_cgroup_info:identity)
        or on (%(clusterLabel)s, job, instance, cgroup)
          group by (%(clusterLabel)s, job, instance, cgroup) (%(series)s)
      )
  ||| % (cfg { expr: indent(expr), series: series }),

  // A Prometheus duration of whole minutes or hours ("15m", "1h") in minutes, and in words.
  local minutes(d) =
    local n = std.parseInt(std.substr(d, 0, std.length(d) - 1));
    local unit = d[std.length(d) - 1];
    assert std.member(['m', 'h'], unit) : 'a duration in m or h: %s' % d;
    if unit == 'h' then 60 * n else n,
  local words(d) = if minutes(d) == 1 then '1 minute' else '%d minutes' % minutes(d),
  local forWords(name) = words(cfg.alerts[name]['for']),

  // An alert's severity, `for` and runbook_url, from the configuration.
  local configured(rule) = rule {
    'for': cfg.alerts[rule.alert]['for'],
    labels+: { severity: cfg.alerts[rule.alert].severity },
    annotations+: { runbook_url: cfg.runbookURLPattern % rule.alert },
  },

  prometheusAlerts+:: {
    groups+: [
      {
        name: 'cachestat.alerts',
        rules: std.map(configured, [
          // Thrashing at a limit. A cgroup pages because it is at its own limit (memory.high or
          // memory.max), re-reads file pages it lost, and its tasks stall for it (PSI). A warm-up
          // re-reads too and stalls, but without a limit in the way: it does not fire.
          // memory.stat, memory.events and memory.pressure count the subtree, so a parent slice
          // meets the condition with its thrashing child: a cgroup whose child is thrashing is
          // left out, and the alert names the deepest cgroup. Not "leaves only": a limit is often
          // set on the parent (a pod's memory.max over its containers, a slice's MemoryHigh=),
          // and then the parent is the one thrashing and the one to name. One workload: a warning.
          {
            alert: 'CachestatPageCacheThrashing',
            expr: withIdentity(|||
              cgroup:cachestat_page_cache_thrashing:active
              unless on (%(clusterLabel)s, job, instance, cgroup)
                label_replace(
                  cgroup:cachestat_page_cache_thrashing:active{cgroup=~"/.+/.+"},
                  "cgroup", "$1", "cgroup", "(/.+)/[^/]+")
            ||| % cfg, 'cgroup:cachestat_page_cache_thrashing:active'),
            annotations: {
              summary: 'Page cache thrashing at the memory limit of {{ $labels.cgroup }} on {{ $labels.instance }}',
              description: std.join(' ', [
                'Cgroup {{ $labels.cgroup }} on {{ $labels.instance }} has re-read and activated',
                '{{ $value | printf "%.0f" }} evicted file pages per second for',
                forWords('CachestatPageCacheThrashing'),
                'while its tasks stall on memory (PSI) and it sits at its memory.high or memory.max:',
                'it evicts what it reads again. Raise the limit or shrink the working set.',
              ]),
            },
          },

          // Refaults that stall for half an hour without a limit of the cgroup's own in the
          // way: the node or an ancestor is short of memory. A ticket, not a page; a warm-up is
          // over long before 30 minutes. The same rule for parents as above; a cgroup thrashing
          // at its limit is the other alert's.
          {
            alert: 'CachestatRefaultSpike',
            expr: withIdentity(|||
              cgroup:cachestat_workingset_refaults_stalling:active
              unless on (%(clusterLabel)s, job, instance, cgroup)
                (
                    label_replace(
                      cgroup:cachestat_workingset_refaults_stalling:active{cgroup=~"/.+/.+"},
                      "cgroup", "$1", "cgroup", "(/.+)/[^/]+")
                  or
                    label_replace(
                      cgroup:cachestat_workingset_refaults_stalling:active{cgroup=~"/[^/]+"},
                      "cgroup", "/", "", "")
                )
              unless on (%(clusterLabel)s, job, instance, cgroup)
                cgroup:cachestat_page_cache_thrashing:active
            ||| % cfg, 'cgroup:cachestat_workingset_refaults_stalling:active'),
            annotations: {
              summary: 'Sustained page cache refaults in {{ $labels.cgroup }} on {{ $labels.instance }}',
              description: std.join(' ', [
                'Cgroup {{ $labels.cgroup }} on {{ $labels.instance }} has re-read and activated',
                '{{ $value | printf "%.0f" }} evicted file pages per second, with its tasks stalling',
                'on memory, for', forWords('CachestatRefaultSpike') + ':',
                'its file working set does not fit in the memory it gets.',
              ]),
            },
          },

          // Dirty and writeback bytes that stay high: writeback does not keep up with the writer.
          // Their sum at each evaluation of the last 10 minutes (a subquery at the evaluation
          // interval, as a recording rule would have sampled it), its lowest above the threshold.
          {
            alert: 'CachestatDirtyBacklog',
            expr: withIdentity(|||
              min_over_time(
                (
                  cachestat_cgroup_dirty_bytes{%(cachestatSelector)s}
                  + cachestat_cgroup_writeback_bytes{%(cachestatSelector)s}
                )[10m:]
              ) > %(dirtyBacklogBytes)s
            ||| % cfg, 'cachestat_cgroup_dirty_bytes{%(cachestatSelector)s}' % cfg),
            annotations: {
              summary: 'Dirty page backlog in {{ $labels.cgroup }} on {{ $labels.instance }}',
              description: std.join(' ', [
                'The files of cgroup {{ $labels.cgroup }} on {{ $labels.instance }} have held at least',
                '{{ $value | humanize1024 }}B of dirty and writeback pages for',
                words('%dm' % (10 + minutes(cfg.alerts.CachestatDirtyBacklog['for']))),
                '(threshold %s MiB).' % (cfg.dirtyBacklogBytes / 1048576),
                'The kernel writes dirty pages back within about 30 s: the device does not',
                'keep up with the writer, or writeback is stuck.',
              ]),
            },
          },

          // The whole node thrashes: the file refaults of its top-level cgroups (memory.stat is
          // hierarchical: they count every cgroup below) stall the node's tasks (the root's PSI,
          // the whole system's). Every workload of the node suffers: it pages (critical). A
          // node-wide condition names the node, not a cgroup: the exporter's target labels.
          {
            alert: 'CachestatNodePageCacheThrashing',
            expr: |||
              sum without (cgroup) (
                rate(cachestat_cgroup_workingset_activate_file_total{%(cachestatSelector)s, cgroup=~"/[^/]+"}[5m])
              ) > %(nodeRefaultActivatedPagesPerSecond)s
              and on (%(clusterLabel)s, job, instance)
                rate(cachestat_cgroup_memory_pressure_some_seconds_total{%(cachestatSelector)s, cgroup="/"}[5m])
                  > %(nodePressureSomeRatio)g
            ||| % cfg,
            annotations: {
              summary: 'The page cache of node {{ $labels.instance }} thrashes',
              description: std.join(' ', [
                'The cgroups of {{ $labels.instance }} have re-read and activated',
                '{{ $value | printf "%.0f" }} evicted file pages per second for',
                forWords('CachestatNodePageCacheThrashing'),
                'while the node\'s tasks stalled on memory more than',
                '%g%% of the time (PSI some):' % (cfg.nodePressureSomeRatio * 100),
                'the node\'s file working sets do not fit in its memory, and every workload on it',
                'waits for the disk.',
              ]),
            },
          },

          {
            alert: 'CachestatExporterDown',
            expr: |||
              up{%(cachestatSelector)s} == 0
            ||| % cfg,
            annotations: {
              summary: 'cachestat exporter {{ $labels.instance }} is down',
              description: std.join(' ', [
                'Prometheus has failed to scrape the cachestat exporter at {{ $labels.instance }}',
                '(job {{ $labels.job }}) for', forWords('CachestatExporterDown') + ':',
                'the page cache metrics of that host are missing.',
              ]),
            },
          },

          // No target at all: absent() gives the selector's equality matchers' labels only.
          {
            alert: 'CachestatExporterAbsent',
            expr: |||
              absent(up{%(cachestatSelector)s})
            ||| % cfg,
            annotations: {
              summary: 'No cachestat exporter target',
              description: std.join(' ', [
                'Prometheus has had no target matching %s for' % cfg.cachestatSelector,
                forWords('CachestatExporterAbsent') + ':',
                'service discovery or the scrape configuration lost the exporters.',
              ]),
            },
          },

          // More than _config.permissionSkipRatio of the files found per scan, and more than
          // _config.permissionSkipsPerScan a scan, skipped for lack of permission, for 30 minutes.
          // Files of processes that could not have asked about them are another reason; a few
          // files whose open the kernel refuses are not worth a ticket. Each side is summed
          // without its own labels only and matched on all the rest, so the alert keeps every
          // target label.
          {
            alert: 'CachestatPermissionSkips',
            expr: |||
              (
                  sum without (reason) (
                    increase(cachestat_files_skipped_total{%(cachestatSelector)s, reason="eperm"}[30m]))
                / sum without (version, revision) (count_over_time(cachestat_build_info{%(cachestatSelector)s}[30m]))
                > %(permissionSkipsPerScan)s
              )
              /
                (
                    sum without (reason) (
                      increase(cachestat_files_skipped_total{%(cachestatSelector)s, reason="eperm"}[30m]))
                  / sum without (version, revision) (count_over_time(cachestat_build_info{%(cachestatSelector)s}[30m]))
                  + (
                      sum without (cgroup) (cachestat_cgroup_files{%(cachestatSelector)s})
                    # a cgroup without a counted file has no series: every file refused is none
                    or 0 * sum without (version, revision) (cachestat_build_info{%(cachestatSelector)s})
                  )
                )
              > %(permissionSkipRatio)g
            ||| % cfg,
            annotations: {
              summary: 'cachestat exporter on {{ $labels.instance }} may not read {{ $value | humanizePercentage }} of its files',
              description: std.join(' ', [
                'For', forWords('CachestatPermissionSkips'),
                'the exporter on {{ $labels.instance }} has skipped',
                '{{ $value | humanizePercentage }} of the files it found in each scan for lack of',
                'permission (cachestat_files_skipped_total{reason="eperm"}); the page cache gauges',
                'leave them out. `cachestat_exporter --once --log.level=debug` names the process',
                '(pid, command) and the refused call of each.',
              ]),
            },
          },

          // The exporter runs but measures no file: only the cgroup memory files' metrics are
          // served. A kernel without cachestat(2) (before 6.5) gets the mincore method under the
          // default --cachestat.method=auto, abi="mincore": cached bytes are measured, so it does
          // not fire there (docs/metrics.md, "What a host cannot show", names what that node lacks).
          {
            alert: 'CachestatSyscallUnavailable',
            expr: |||
              cachestat_syscall_info{%(cachestatSelector)s, abi="none"} == 1
            ||| % cfg,
            annotations: {
              summary: 'cachestat exporter on {{ $labels.instance }} measures no file\'s page cache',
              description: std.join(' ', [
                'The exporter on {{ $labels.instance }} measures no file\'s page cache (abi="none")',
                'and serves only the cgroup memory files\' metrics: a seccomp filter refused its',
                'cachestat(2) probe (EPERM), or --cachestat.method=cachestat asked for a call this',
                'kernel lacks. With --cachestat.method=auto (the default) a kernel without',
                'cachestat(2) is measured with mincore(2) instead (abi="mincore"): cached bytes per',
                'cgroup, subtree and file, but no dirty, writeback, evicted or recently evicted',
                'bytes. Allow cachestat in the filter, or run with --cachestat.method=auto; a kernel',
                'of 6.5 or later gives every family.',
              ]),
            },
          },

          {
            alert: 'CachestatCollectorFailing',
            expr: |||
              cachestat_scrape_collector_success{%(cachestatSelector)s} == 0
            ||| % cfg,
            annotations: {
              summary: 'cachestat collector {{ $labels.collector }} fails on {{ $labels.instance }}',
              description: std.join(' ', [
                'The {{ $labels.collector }} collector of the exporter on {{ $labels.instance }} has',
                'reported failure on every scrape for', forWords('CachestatCollectorFailing') + ';',
                'its metrics are missing or partial.',
              ]),
            },
          },
        ]),
      },
    ],
  },
}

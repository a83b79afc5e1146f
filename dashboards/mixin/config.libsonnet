// SPDX-License-Identifier: Apache-2.0
// The settings of the cachestat mixin, in kubernetes-mixin's and node-mixin's form: override
// them with `(import 'mixin.libsonnet') + { _config+:: { ... } }` (dashboards/README.md).
{
  _config+:: {
    // Selects the exporter's series: every rule reads them through it, and the dashboards'
    // job variables list only the jobs it matches. Matches `cachestat` and `cachestat-*`.
    cachestatSelector: 'job=~"cachestat.*"',

    // The label that tells clusters apart where one ruler or one store sees several (a target
    // label, or the external label of a Thanos or Mimir ruler). Every aggregation and every
    // vector match of the rules keeps it, and the fleet dashboard filters on it. Where there is
    // none, the rules work the same: an absent label is one empty value.
    clusterLabel: 'cluster',

    // Each alert's runbook_url: the pattern with the alert's name for %s. The pages are
    // docs/runbooks/ALERT.md of this repository: serve that directory and point this at it.
    runbookURLPattern: 'https://cachestat-exporter.a-seed-847dbd9a.example/runbooks/%s.md',

    // Each alert's severity and `for`. As in kubernetes-mixin and node-mixin: an alert about one
    // workload (a container, a pod, a service) is a warning, a ticket for its owners; an alert
    // about the whole node pages (critical). The exporter's own health alerts are warnings: a
    // node without page cache metrics is blind, not broken.
    alerts: {
      CachestatPageCacheThrashing: { severity: 'warning', 'for': '10m' },
      CachestatRefaultSpike: { severity: 'warning', 'for': '30m' },
      CachestatDirtyBacklog: { severity: 'warning', 'for': '15m' },
      CachestatNodePageCacheThrashing: { severity: 'critical', 'for': '15m' },
      CachestatExporterDown: { severity: 'warning', 'for': '10m' },
      CachestatExporterAbsent: { severity: 'warning', 'for': '15m' },
      CachestatPermissionSkips: { severity: 'warning', 'for': '30m' },
      CachestatSyscallUnavailable: { severity: 'warning', 'for': '15m' },
      CachestatCollectorFailing: { severity: 'warning', 'for': '15m' },
    },

    // The thresholds of the alerts and of the recording rules they read.
    // A cgroup's refaults stall: activated refaults above this many pages a second ...
    refaultActivatedPagesPerSecond: 100,
    // ... while some task of the cgroup stalls on memory above this share of the time (PSI).
    pressureSomeRatio: 0.01,
    // At its own limit: memory.current at least this share of memory.high or memory.max.
    limitUsageRatio: 0.95,
    // The whole node thrashes: its top-level cgroups' activated refaults above this many pages a
    // second, while the node's memory PSI some (the root cgroup's) is above this share.
    nodeRefaultActivatedPagesPerSecond: 1000,
    nodePressureSomeRatio: 0.1,
    // Dirty plus writeback bytes of a cgroup that have not fallen below this in 10 minutes.
    dirtyBacklogBytes: 256 * 1024 * 1024,
    // Files skipped for lack of permission: more than this share of the files found per scan,
    // and more than this many a scan, over 30 minutes.
    permissionSkipRatio: 0.1,
    permissionSkipsPerScan: 10,

    // The dashboards' uids, kept across versions so that links and re-imports keep working.
    dashboardUIDs: {
      'cachestat.json': 'cachestat-exporter',
      'cachestat-fleet.json': 'cachestat-fleet',
    },
  },
}

// SPDX-License-Identifier: Apache-2.0
// The recording rules: prometheusRules, written to dashboards/rules/cachestat.rules.yml,
// cachestat.identity.yml and cachestat.fleet.yml (files.jsonnet says which group goes where).
// Names follow level:metric:operations. What they record for a node is bounded by its cgroups
// (the identity), its pods and a few series (dashboards/README.md, "Recording rules"): a rate or
// ratio of every cgroup is left to the dashboards (over $__rate_interval) and to the alerts'
// expressions, which compute it when they read it. Every vector match and every aggregation
// keeps the cluster label (_config.clusterLabel), so that one ruler over several clusters keeps
// them apart.
{
  prometheusRules+:: {
    groups+: [
      // The signals of the alerts, recorded only for the cgroups that meet them: a healthy node
      // records none, a thrashing cgroup one series of each (and its ancestors, whose memory.stat
      // and memory.pressure count it). Everything a signal reads is computed here from the
      // exporter's families (_config.cachestatSelector), over 5m windows, which hold 5 samples
      // at a 60s scrape interval and 20 at 15s (rate() needs two). The rates and ratios they
      // compare are not recorded: one series per cgroup each, which only these two rules read.
      {
        name: 'cachestat.alerting.rules',
        rules: [
          // Refaults that stall: refaults of workingset pages the kernel activated at once above
          // _config.refaultActivatedPagesPerSecond, while memory PSI some (the share of the time
          // some task of the cgroup stalled on memory, 0..1) is above _config.pressureSomeRatio,
          // so that a stray microsecond does not count. Value: activated pages/s.
          {
            record: 'cgroup:cachestat_workingset_refaults_stalling:active',
            expr: |||
              rate(cachestat_cgroup_workingset_activate_file_total{%(cachestatSelector)s}[5m])
                > %(refaultActivatedPagesPerSecond)s
              and on (%(clusterLabel)s, job, instance, cgroup)
                rate(cachestat_cgroup_memory_pressure_some_seconds_total{%(cachestatSelector)s}[5m])
                  > %(pressureSomeRatio)g
            ||| % $._config,
          },
          // Thrashing: stalling refaults while the cgroup is at its own limit. Either memory.events
          // says so (throttled over memory.high or reclaimed at memory.max; the events collector
          // sends high and max by default, and counts the subtree: a parent has its children's
          // events), or, where the limits collector is on (--collector.limits, off by default),
          // memory.current is within _config.limitUsageRatio of the nearer of memory.high and
          // memory.max. The limits are read over 5m windows, so that a failed scrape (its
          // staleness markers) does not make the cgroup look unlimited; a limit of "max" has no
          // series. Either side alone suffices: an absent ratio leaves the events.
          {
            record: 'cgroup:cachestat_page_cache_thrashing:active',
            expr: |||
              cgroup:cachestat_workingset_refaults_stalling:active
              and on (%(clusterLabel)s, job, instance, cgroup)
                (
                    sum without (event) (
                      rate(cachestat_cgroup_memory_events_total{%(cachestatSelector)s, event=~"high|max"}[5m])
                    ) > 0
                  or
                    max without (limit) (
                        label_replace(
                          max_over_time(cachestat_cgroup_memory_current_bytes{%(cachestatSelector)s}[5m])
                          / min_over_time(cachestat_cgroup_memory_high_bytes{%(cachestatSelector)s}[5m]),
                          "limit", "high", "", "")
                      or
                        label_replace(
                          max_over_time(cachestat_cgroup_memory_current_bytes{%(cachestatSelector)s}[5m])
                          / min_over_time(cachestat_cgroup_memory_max_bytes{%(cachestatSelector)s}[5m]),
                          "limit", "max", "", "")
                    ) >= %(limitUsageRatio)g
                )
            ||| % $._config,
          },
        ],
      },
      // The page cache's hit ratio as BCC's cachestat computes it, from the activity collector's
      // counters (--collector.activity, off by default: without it these record nothing):
      // accesses less buffer dirtyings are the lookups, additions less dirtyings the misses
      // (a written page is added and dirtied, and is no miss), the rest hits. Recorded per cgroup
      // only where its tasks looked pages up in the window (idle cgroups have no series), and per
      // node; each event is counted in one cgroup, the task's, so the node's sums are exact.
      {
        name: 'cachestat.activity',
        rules: [
          {
            record: 'cgroup:cachestat_pagecache_hit_ratio:rate5m',
            expr: |||
              clamp(
                1 - clamp_min(
                      rate(cachestat_cgroup_pagecache_added_pages_total{%(cachestatSelector)s}[5m])
                      - rate(cachestat_cgroup_pagecache_dirtied_pages_total{%(cachestatSelector)s}[5m]),
                      0)
                    / (
                      rate(cachestat_cgroup_pagecache_accesses_total{%(cachestatSelector)s}[5m])
                      - rate(cachestat_cgroup_pagecache_buffer_dirtied_total{%(cachestatSelector)s}[5m])
                      > 0),
                0, 1)
            ||| % $._config,
          },
          {
            record: 'instance:cachestat_pagecache_hit_ratio:rate5m',
            expr: |||
              clamp(
                1 - clamp_min(
                      sum by (%(clusterLabel)s, job, instance) (
                        rate(cachestat_cgroup_pagecache_added_pages_total{%(cachestatSelector)s}[5m])
                        - rate(cachestat_cgroup_pagecache_dirtied_pages_total{%(cachestatSelector)s}[5m])),
                      0)
                    / (
                      sum by (%(clusterLabel)s, job, instance) (
                        rate(cachestat_cgroup_pagecache_accesses_total{%(cachestatSelector)s}[5m])
                        - rate(cachestat_cgroup_pagecache_buffer_dirtied_total{%(cachestatSelector)s}[5m]))
                      > 0),
                0, 1)
            ||| % $._config,
          },
        ],
      },
      // Who a cgroup belongs to: Kubernetes namespace, pod and container names for the
      // exporter's cachestat_cgroup_info (pod_uid, container_id parsed from the cgroup path),
      // through kube-state-metrics' kube_pod_info{uid} and kube_pod_container_info{container_id}.
      // Without kube-state-metrics, or for a cgroup it does not know, the cgroup path stands in.
      // The dashboard's namespace / pod / container variables and its panels read this series.
      {
        name: 'cachestat.identity',
        rules: [
          // One series per cgroup of cachestat_cgroup_info, with its labels and
          //   namespace, pod, container  from kube-state-metrics, absent when it does not know them;
          //   display                    "namespace/pod/container" for a container it lists,
          //                              "namespace/pod" for a pod's own cgroup,
          //                              "namespace/pod/<first 12 hex of the id>" for a container of a
          //                              known pod that it does not list (the pod sandbox),
          //                              the cgroup path otherwise;
          //                              " (conmon)" added for the container's conmon cgroup
          //                              (CRI-O, podman), which has the container's id too.
          // kube-state-metrics writes container_id as "containerd://<id>" (docker://, cri-o://):
          // the scheme is stripped before the join. Its series are aggregated first so that two
          // replicas (or shards) of kube-state-metrics do not make the join many-to-many; the
          // cluster label is kept on both sides, so that one id or uid in two clusters stays two.
          // namespace, pod and container are set or removed in every branch, so target labels of
          // the same names (added by a PodMonitor that does not drop them) never pass for the
          // cgroup's identity. A rootless container (rootless_uid) is a user's: its id is never
          // looked up in kube-state-metrics. Two cgroups may carry one id (a conmon and its
          // container, or a copy): each keeps its own series, the kube-state-metrics side of the
          // join being one per id.
          {
            record: 'cgroup:cachestat_cgroup_info:identity',
            expr: |||
              label_replace(label_replace(label_join(
                (
                  # A container kube-state-metrics lists.
                  label_join(
                    cachestat_cgroup_info{container_id!="", rootless_uid=""}
                    * on (%(clusterLabel)s, container_id) group_left (namespace, pod, container)
                      max by (%(clusterLabel)s, container_id, namespace, pod, container) (
                        label_replace(kube_pod_container_info{container_id!=""},
                          "container_id", "$1", "container_id", "[a-z0-9.+-]+://(.+)")
                      ),
                    "display", "/", "namespace", "pod", "container")
                  or ignoring (namespace, pod, container, display)
                  # A known pod: its own cgroup, or a container the pod does not list.
                  label_replace(label_replace(
                    label_join(
                      label_replace(cachestat_cgroup_info{pod_uid!="", rootless_uid=""}, "container", "", "container", ".*")
                      * on (%(clusterLabel)s, pod_uid) group_left (namespace, pod)
                        max by (%(clusterLabel)s, pod_uid, namespace, pod) (
                          label_replace(kube_pod_info{uid!=""}, "pod_uid", "$1", "uid", "(.+)")
                        ),
                      "display", "/", "namespace", "pod", "container_id"),
                    "display", "$1", "display", "(.*)/"),
                    "display", "$1", "display", "(.*/[0-9a-f]{12})[0-9a-f]{52}")
                ),
                # " (conmon)" where the cgroup is a conmon's: display|cgroup, rewritten, cut back.
                "display", "|", "display", "cgroup"),
                "display", "$1 (conmon)", "display", "([^|]*)[|].*-conmon-[0-9a-f]{64}([.]scope)?"),
                "display", "$1", "display", "([^|]*)[|].*")
              or ignoring (namespace, pod, container, display)
              # Anything else: the cgroup path.
              label_replace(label_replace(label_replace(label_replace(
                cachestat_cgroup_info,
                "namespace", "", "namespace", ".*"), "pod", "", "pod", ".*"), "container", "", "container", ".*"),
                "display", "$1", "cgroup", "(.*)")
            ||| % $._config,
          },
        ],
      },
      // The fleet view (dashboards/cachestat-fleet.json): pods, cgroups and nodes across every
      // node of a fleet, from a few series per node recorded here, so that a panel over 500 nodes
      // reads thousands of series rather than the cgroups' hundreds of thousands, and a range
      // query does not rank 176,000 series at every step. One series per pod, ten per node for
      // each top ten, one per node: each computed from the exporter's families, joined to the
      // identity rule (cachestat.identity: load them together), not through a series per cgroup.
      // Recently evicted bytes are a cgroup's subtree's, each file once, where it has children
      // (cachestat_cgroup_subtree_*: a pod, a slice), its own where it is a leaf.
      {
        name: 'cachestat.fleet',
        rules: [
          // A pod's recently evicted bytes, each file once (its own cgroup's subtree), with its
          // names from the identity rule; one series per pod.
          {
            record: 'pod:cachestat_recently_evicted:bytes',
            expr: |||
              (cachestat_cgroup_subtree_recently_evicted_bytes or cachestat_cgroup_recently_evicted_bytes)
              * ignoring (systemd_slice, systemd_unit, container_runtime, container_id, pod_uid, pod_qos,
                          namespace, pod, container, display)
                group_left (pod_uid, namespace, pod, display)
                cgroup:cachestat_cgroup_info:identity{pod_uid!="", container_id=""}
            |||,
          },
          // A pod's file refaults per second: memory.stat of the pod's own cgroup, which counts
          // its containers' (hierarchical on v2; v1's total_ keys).
          {
            record: 'pod:cachestat_workingset_refault_file:rate5m',
            expr: |||
              rate(cachestat_cgroup_workingset_refault_file_total{%(cachestatSelector)s}[5m])
              * ignoring (systemd_slice, systemd_unit, container_runtime, container_id, pod_uid, pod_qos,
                          namespace, pod, container, display)
                group_left (pod_uid, namespace, pod, display)
                cgroup:cachestat_cgroup_info:identity{pod_uid!="", container_id=""}
            ||| % $._config,
          },
          // The ten of each node, for the fleet's top N: at most 10 series a node whatever its
          // size, and each cluster's nodes ranked apart.
          {
            record: 'instance_pod:cachestat_recently_evicted:top10_bytes',
            expr: |||
              topk by (%(clusterLabel)s, job, instance) (10, pod:cachestat_recently_evicted:bytes)
            ||| % $._config,
          },
          {
            record: 'instance_pod:cachestat_workingset_refault_file:top10_rate5m',
            expr: |||
              topk by (%(clusterLabel)s, job, instance) (10, pod:cachestat_workingset_refault_file:rate5m)
            ||| % $._config,
          },
          // Every cgroup, pods' containers and system services alike, with its display name,
          // ranked at evaluation from the exporter's families.
          {
            record: 'instance_cgroup:cachestat_recently_evicted:top10_bytes',
            expr: |||
              topk by (%(clusterLabel)s, job, instance) (10,
                (cachestat_cgroup_subtree_recently_evicted_bytes or cachestat_cgroup_recently_evicted_bytes)
                * ignoring (systemd_slice, systemd_unit, container_runtime, container_id, pod_uid, pod_qos,
                            namespace, pod, container, display)
                  group_left (display)
                  cgroup:cachestat_cgroup_info:identity)
            ||| % $._config,
          },
          {
            record: 'instance_cgroup:cachestat_workingset_refault_file:top10_rate5m',
            expr: |||
              topk by (%(clusterLabel)s, job, instance) (10,
                rate(cachestat_cgroup_workingset_refault_file_total{%(cachestatSelector)s}[5m])
                * ignoring (systemd_slice, systemd_unit, container_runtime, container_id, pod_uid, pod_qos,
                            namespace, pod, container, display)
                  group_left (display)
                  cgroup:cachestat_cgroup_info:identity)
            ||| % $._config,
          },
          // The node's page cache that no file in use holds, in bytes (one series a node).
          {
            record: 'instance:cachestat_unattributed_cached:bytes',
            expr: |||
              cachestat_node_unattributed_cached_bytes
            |||,
          },
        ],
      },
    ],
  },
}

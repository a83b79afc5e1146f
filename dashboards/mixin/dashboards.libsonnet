// SPDX-License-Identifier: Apache-2.0
// The Grafana dashboards: grafanaDashboards, written to dashboards/cachestat.json and
// dashboards/cachestat-fleet.json. Their panels are edited in Grafana and saved as the sources
// under dashboards/mixin/dashboards/; the mixin applies the configuration to them:
//   - the job variables list only the jobs of _config.cachestatSelector;
//   - the per-node dashboard gets a cluster variable, before the job, and every selector of its
//     job filters on it too, so that two clusters with an instance of one name stay apart (as
//     kubernetes-mixin's dashboards do); All is `.*`, which matches series without the label;
//   - the fleet dashboard's cluster variable and filters use _config.clusterLabel;
//   - the uids are _config.dashboardUIDs.
{
  local cfg = $._config,

  // The queries of a dashboard (a panel target's expr, a variable's query and definition) passed
  // through f; every other string is left alone (jsonnet's std.strReplace is slow on the long texts).
  local queryKeys = ['expr', 'query', 'definition'],
  local mapStrings(f, v) =
    if std.isArray(v) then [mapStrings(f, x) for x in v]
    else if std.isObject(v) then {
      [k]: if std.isString(v[k]) && std.member(queryKeys, k) then f(v[k]) else mapStrings(f, v[k])
      for k in std.objectFields(v)
    }
    else v,

  // label_values(cachestat_build_info, job): the jobs the selector matches.
  local jobs(s) = std.strReplace(s, 'label_values(cachestat_build_info, job)',
                                 'label_values(cachestat_build_info{%s}, job)' % cfg.cachestatSelector),

  // cluster=~"$cluster" and label_values(..., cluster): the configured label.
  local cluster(s) = std.strReplace(std.strReplace(s, 'cluster=~"$cluster"', '%s=~"$cluster"' % cfg.clusterLabel),
                                    '}, cluster)', '}, %s)' % cfg.clusterLabel),

  // The per-node dashboard's selectors and joins: the cluster's too (All may match two).
  local nodeCluster(s) = std.foldl(function(acc, r) std.strReplace(acc, r[0], r[1]), [
    ['label_values(cachestat_build_info{%s}, job)' % cfg.cachestatSelector,
     'label_values(cachestat_build_info{%s, %s=~"$cluster"}, job)' % [cfg.cachestatSelector, cfg.clusterLabel]],
    ['job="$job"', '%s=~"$cluster", job="$job"' % cfg.clusterLabel],
    ['on (job, instance, cgroup)', 'on (%s, job, instance, cgroup)' % cfg.clusterLabel],
    ['by (reason)', 'by (%s, reason)' % cfg.clusterLabel],
  ], s),

  local clusterVariable = {
    type: 'query',
    name: 'cluster',
    label: 'Cluster',
    description: 'The %s label of the exporter\'s series; All matches series without it.' % cfg.clusterLabel,
    datasource: { type: 'prometheus', uid: '${datasource}' },
    definition: 'label_values(cachestat_build_info{%s}, %s)' % [cfg.cachestatSelector, cfg.clusterLabel],
    query: {
      query: 'label_values(cachestat_build_info{%s}, %s)' % [cfg.cachestatSelector, cfg.clusterLabel],
      refId: 'PrometheusVariableQueryEditor-VariableQuery',
    },
    refresh: 2,
    sort: 1,
    multi: false,
    includeAll: true,
    allValue: '.*',
    hide: 0,
    current: {},
    options: [],
    regex: '',
  },

  // The cluster variable after the data source, before the job.
  local withClusterVariable(dash) = dash {
    templating+: {
      list: [v for v in super.list if v.type == 'datasource'] + [clusterVariable] +
            [v for v in super.list if v.type != 'datasource'],
    },
  },

  local configured(name, dash, f) = mapStrings(f, dash) { uid: cfg.dashboardUIDs[name] },

  grafanaDashboards+:: {
    'cachestat.json': withClusterVariable(
      configured('cachestat.json', import 'dashboards/cachestat.json', function(s) nodeCluster(jobs(s)))
    ),
    'cachestat-fleet.json': configured('cachestat-fleet.json', import 'dashboards/cachestat-fleet.json',
                                       function(s) cluster(jobs(s))),
  },
}

// SPDX-License-Identifier: Apache-2.0
// The Grafana dashboards: grafanaDashboards, written to dashboards/cachestat.json and
// dashboards/cachestat-fleet.json. Their panels are edited in Grafana and saved as the sources
// under dashboards/mixin/dashboards/; the mixin applies the configuration to them:
//   - the job variables list only the jobs of _config.cachestatSelector;
//   - the fleet dashboard's cluster variable and filters use _config.clusterLabel;
//   - the uids are _config.dashboardUIDs.
{
  local cfg = $._config,

  // Every string of a dashboard (queries, definitions, texts) passed through f.
  local mapStrings(f, v) =
    if std.isString(v) then f(v)
    else if std.isArray(v) then [mapStrings(f, x) for x in v]
    else if std.isObject(v) then { [k]: mapStrings(f, v[k]) for k in std.objectFields(v) }
    else v,

  // label_values(cachestat_build_info, job): the jobs the selector matches.
  local jobs(s) = std.strReplace(s, 'label_values(cachestat_build_info, job)',
                                 'label_values(cachestat_build_info{%s}, job)' % cfg.cachestatSelector),

  // cluster=~"$cluster" and label_values(..., cluster): the configured label.
  local cluster(s) = std.strReplace(std.strReplace(s, 'cluster=~"$cluster"', '%s=~"$cluster"' % cfg.clusterLabel),
                                    '}, cluster)', '}, %s)' % cfg.clusterLabel),

  local configured(name, dash, f) = mapStrings(f, dash) { uid: cfg.dashboardUIDs[name] },

  grafanaDashboards+:: {
    'cachestat.json': configured('cachestat.json', import 'dashboards/cachestat.json', jobs),
    'cachestat-fleet.json': configured('cachestat-fleet.json', import 'dashboards/cachestat-fleet.json',
                                       function(s) cluster(jobs(s))),
  },
}

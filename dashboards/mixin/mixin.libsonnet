// SPDX-License-Identifier: Apache-2.0
// The cachestat mixin: prometheusAlerts, prometheusRules and grafanaDashboards, as
// kubernetes-mixin and node-mixin have them. Override its _config (config.libsonnet):
//   (import 'mixin.libsonnet') + { _config+:: { clusterLabel: 'k8s_cluster' } }
(import 'config.libsonnet') +
(import 'alerts.libsonnet') +
(import 'rules.libsonnet') +
(import 'dashboards.libsonnet')

// SPDX-License-Identifier: Apache-2.0
// Validates Kubernetes manifests against the OpenAPI schemas of Kubernetes (kubernetes-models)
// and the Prometheus Operator's CRDs (@kubernetes-models/prometheus-operator), for deploy/check.sh.
//
// Input on stdin: a JSON array of {"file": ..., "doc": {...}}, one entry per YAML document.
// Output: one "PASS: ..." or "FAIL: ..." line per document; exit status 1 if any failed.
//   --broken  instead, validate two broken copies of each document (a field of the wrong type
//             picked per kind, and an unknown field); each must be rejected (PASS) or it FAILs.
//
// The schemas accept fields they do not define, where the API server (kubectl apply's strict
// field validation) refuses them. So the objects are validated through proxies that record the
// fields the schema looks at: a field it never looked at is one it does not know.
"use strict";

function modulePath(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (group === "monitoring.coreos.com")
    return `@kubernetes-models/prometheus-operator/${group}/${version}/${kind}`;
  return group ? `kubernetes-models/${group}/${version}/${kind}` : `kubernetes-models/${version}/${kind}`;
}

function modelOf(doc) {
  if (!doc || typeof doc.apiVersion !== "string" || typeof doc.kind !== "string")
    throw new Error("no apiVersion and kind");
  let mod;
  try {
    mod = require(modulePath(doc.apiVersion, doc.kind));
  } catch (e) {
    throw new Error(`no schema for ${doc.apiVersion} ${doc.kind}`);
  }
  return mod[doc.kind];
}

// A deep proxy of value; seen maps each object to the set of its keys that were read.
function tracked(value, seen) {
  if (value === null || typeof value !== "object") return value;
  const keys = new Set();
  seen.set(value, keys);
  return new Proxy(value, {
    get(target, key, receiver) {
      if (typeof key === "string") keys.add(key);
      return tracked(Reflect.get(target, key, receiver), seen);
    },
  });
}

// The packages' schema generator drops every "description" key, and with it the properties of
// that name (PriorityClass.description): such a field is taken as known, unchecked.
const UNCHECKED = new Set(["description"]);

function unknownFields(value, seen, path, out) {
  if (value === null || typeof value !== "object") return out;
  const keys = seen.get(value) || new Set();
  for (const [k, v] of Object.entries(value)) {
    const p = Array.isArray(value) ? `${path}[${k}]` : `${path}.${k}`;
    if (!Array.isArray(value) && !keys.has(k) && !UNCHECKED.has(k)) out.push(p);
    else unknownFields(v, seen, p, out);
  }
  return out;
}

// Problems with doc, [] when it is valid.
function check(doc) {
  let Model;
  try {
    Model = modelOf(doc);
  } catch (e) {
    return [e.message];
  }
  const seen = new Map();
  try {
    Model.prototype.validate.call(tracked(doc, seen));
  } catch (e) {
    return [String(e.message || e).split("\n").slice(0, 5).join("; ")];
  }
  return unknownFields(doc, seen, "", []).map((p) => `unknown field ${p.slice(1)}`);
}

// A field of the wrong type, per kind: what a hand edit gets wrong.
const BREAK = {
  Namespace: (d) => (d.metadata.labels = { "pod-security.kubernetes.io/enforce": 1 }),
  ServiceAccount: (d) => (d.automountServiceAccountToken = "false"),
  ConfigMap: (d) => (d.data = { "config.json": { per_file_top: 10 } }),
  PriorityClass: (d) => (d.value = "1000000"),
  DaemonSet: (d) => (d.spec.template.spec.containers[0].ports[0].containerPort = "9451"),
  Service: (d) => (d.spec.ports[0].port = "metrics"),
  ServiceMonitor: (d) => (d.spec.endpoints[0].interval = "15 seconds"),
  PodMonitor: (d) => (d.spec.podMetricsEndpoints[0].interval = "15 seconds"),
  PrometheusRule: (d) => delete d.spec.groups[0].rules[0].expr,
  Role: (d) => (d.rules[0].verbs = "get"),
  RoleBinding: (d) => delete d.roleRef.name,
  NetworkPolicy: (d) => (d.spec.policyTypes = "Ingress"),
};

// An unknown field next to a known one, as a typo makes it.
function addUnknown(d) {
  const spec = d.spec && d.spec.template ? d.spec.template.spec : d.spec || d.metadata;
  spec.unknownFieldForTheCheck = true;
}

function name(entry) {
  const d = entry.doc || {};
  const m = d.metadata || {};
  return `${entry.file} ${d.kind} ${m.namespace ? m.namespace + "/" : ""}${m.name}`;
}

function main() {
  const broken = process.argv.includes("--broken");
  const entries = JSON.parse(require("fs").readFileSync(0, "utf8"));
  let failed = 0;
  for (const entry of entries) {
    if (!broken) {
      const problems = check(entry.doc);
      if (problems.length) failed++;
      console.log(problems.length ? `FAIL: schema: ${name(entry)}: ${problems.join("; ")}`
                                  : `PASS: schema: ${name(entry)}`);
      continue;
    }
    for (const [how, mutate] of [["a field of the wrong type", BREAK[entry.doc.kind]], ["an unknown field", addUnknown]]) {
      const copy = JSON.parse(JSON.stringify(entry.doc));
      if (!mutate) {
        failed++;
        console.log(`FAIL: schema rejects ${name(entry)} with ${how}: no broken copy for kind ${entry.doc.kind}`);
        continue;
      }
      mutate(copy);
      const problems = check(copy);
      if (!problems.length) failed++;
      console.log(problems.length ? `PASS: schema rejects ${name(entry)} with ${how} (${problems[0]})`
                                  : `FAIL: schema rejects ${name(entry)} with ${how}: accepted`);
    }
  }
  process.exit(failed ? 1 : 0);
}

main();

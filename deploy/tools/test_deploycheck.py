#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Tests of deploycheck.py: each check passes on the project's own files as `kubectl kustomize`
renders them, and fails on a copy with the one thing it guards broken.

Run from the repository's top: python3 -m unittest deploy/tools/test_deploycheck.py
(deploy/check.sh does). Needs kubectl for the renders; without it the Kubernetes cases skip.
"""

import copy
import os
import shutil
import subprocess
import sys
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploycheck  # noqa: E402

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
UNIT = os.path.join(TOP, "deploy/systemd/cachestat-exporter.service")
KUBE = os.path.join(TOP, "deploy/kubernetes")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def render(path):
    return subprocess.run(["kubectl", "kustomize", path], check=True, capture_output=True, text=True).stdout


def failed(fn, *args):
    res = deploycheck.Results()
    fn(*args, res)
    return res.failed()


class Unit(unittest.TestCase):
    def setUp(self):
        self.text = read(UNIT)

    def test_project_unit_passes(self):
        self.assertEqual(failed(deploycheck.check_unit, self.text), [])

    def test_extra_capability_fails(self):
        broken = self.text.replace("AmbientCapabilities=", "AmbientCapabilities=CAP_SYS_ADMIN ", 1)
        self.assertIn("unit AmbientCapabilities is exactly " + " ".join(sorted(deploycheck.CAPS)),
                      failed(deploycheck.check_unit, broken))

    def test_allow_list_without_cachestat_fails(self):
        broken = "\n".join(line for line in self.text.splitlines() if not line.startswith("SystemCallFilter="))
        broken += "\nSystemCallFilter=@system-service\n"
        self.assertIn("unit system call filter keeps cachestat (syscall 451) allowed",
                      failed(deploycheck.check_unit, broken))

    def test_pidfd_getfd_allowed_back_fails(self):
        self.assertIn("unit allows back no call the exporter does not make (pidfd_getfd)",
                      failed(deploycheck.check_unit, self.text + "\nSystemCallFilter=pidfd_getfd\n"))

    def test_private_users_fails(self):
        self.assertIn("unit sets nothing that blinds the exporter",
                      failed(deploycheck.check_unit, self.text + "\nPrivateUsers=yes\n"))


class RuntimeLibs(unittest.TestCase):
    WANT = ["libjansson4", "zlib1g"]

    def test_exact_list_passes(self):
        self.assertEqual(failed(deploycheck.check_runtime_libs, self.WANT, {"f": "x libjansson4 zlib1g y\n"}), [])

    def test_missing_and_extra_fail(self):
        self.assertEqual(len(failed(deploycheck.check_runtime_libs, self.WANT, {"f": "libjansson4 libfoo1\n"})), 1)
        self.assertEqual(len(failed(deploycheck.check_runtime_libs, self.WANT, {"f": "nothing here\n"})), 1)

    def test_unknown_package_fails(self):
        self.assertEqual(len(failed(deploycheck.check_runtime_libs, ["?libx.so.1"], {})), 1)


@unittest.skipUnless(shutil.which("kubectl"), "kubectl missing: the variants cannot be rendered")
class Kubernetes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.renders = {"base": render(os.path.join(KUBE, "base"))}
        for name in ("activity", "fanotify", "kube-prometheus", "kube-prometheus-stack", "networkpolicy", "tls"):
            cls.renders[name] = render(os.path.join(KUBE, "variants", name))
        cls.unit = read(UNIT)

    def objects(self, name):
        return copy.deepcopy(deploycheck.load_objects(self.renders[name]))

    @staticmethod
    def container(objects):
        return deploycheck.exporter_container(deploycheck.by_kind(objects))[1]

    def test_project_variants_pass(self):
        self.assertEqual(failed(deploycheck.check_variants, self.renders, self.unit, os.path.join(KUBE, "base")), [])

    def test_missing_variant_fails(self):
        renders = dict(self.renders)
        del renders["kube-prometheus"]
        got = failed(deploycheck.check_variants, renders, self.unit, os.path.join(KUBE, "base"))
        self.assertTrue(any(w.startswith("kubernetes: variants rendered") for w in got), got)

    def test_tcp_probe_fails(self):
        objs = self.objects("base")
        c = self.container(objs)
        c["readinessProbe"] = {"tcpSocket": {"port": "metrics"}}
        self.assertTrue(any("/-/ready" in w for w in failed(deploycheck.check_base, objs, self.unit)))

    def test_probe_on_metrics_path_fails(self):
        objs = self.objects("base")
        self.container(objs)["livenessProbe"]["httpGet"]["path"] = "/metrics"
        self.assertTrue(any("/-/healthy" in w for w in failed(deploycheck.check_base, objs, self.unit)))

    def test_writable_cgroup_mount_fails(self):
        objs = self.objects("base")
        for m in self.container(objs)["volumeMounts"]:
            m["readOnly"] = False
        self.assertIn("kubernetes: the node's /sys/fs/cgroup mounted read-only at --path.cgroupfs",
                      failed(deploycheck.check_base, objs, self.unit))

    def test_kept_pod_label_fails(self):
        objs = self.objects("base")
        pm = deploycheck.first(deploycheck.by_kind(objs), "PodMonitor")
        for e in pm["spec"]["podMetricsEndpoints"]:
            e["relabelings"] = [r for r in e["relabelings"] if r.get("action") != "labeldrop"]
        self.assertTrue(any(w.startswith("kubernetes: PodMonitor") for w in failed(deploycheck.check_base, objs, self.unit)))

    def test_staying_root_fails(self):
        for cap in ("SETUID", "SETGID"):
            objs = self.objects("base")
            self.container(objs)["securityContext"]["capabilities"]["add"].remove(cap)
            self.assertTrue(any(w.startswith("kubernetes: capabilities drop ALL")
                                for w in failed(deploycheck.check_base, objs, self.unit)))
        objs = self.objects("base")
        self.container(objs)["args"].append("--no-security.drop-privileges")
        self.assertTrue(any(w.startswith("kubernetes: started as root, it becomes a non-root user")
                            for w in failed(deploycheck.check_base, objs, self.unit)))

    def test_fanotify_without_sys_admin_fails(self):
        objs = self.objects("fanotify")
        self.assertEqual(failed(deploycheck.check_fanotify, objs), [])
        caps = self.container(objs)["securityContext"]["capabilities"]
        caps["add"].remove("SYS_ADMIN")
        self.assertEqual(len(failed(deploycheck.check_fanotify, objs)), 1)

    def test_activity_without_perfmon_or_its_profile_fails(self):
        objs = self.objects("activity")
        self.assertEqual(failed(deploycheck.check_activity, objs), [])
        self.container(objs)["securityContext"]["capabilities"]["add"].remove("PERFMON")
        self.assertEqual(len(failed(deploycheck.check_activity, objs)), 1)
        objs = self.objects("activity")
        self.container(objs)["securityContext"]["seccompProfile"]["localhostProfile"] = "cachestat-exporter.json"
        self.assertEqual(len(failed(deploycheck.check_activity, objs)), 1)

    def test_activity_capabilities_beyond_its_drop_in_fail(self):
        def check(objs, res):
            deploycheck.check_base(objs, self.unit, res, deploycheck.EXTRA_CAPS["activity"])

        objs = self.objects("activity")
        self.assertEqual(failed(check, objs), [])
        self.container(objs)["securityContext"]["capabilities"]["add"].append("NET_ADMIN")
        self.assertTrue(any(w.startswith("kubernetes: capabilities drop ALL") for w in failed(check, objs)))

    def test_kube_prometheus_binding_elsewhere_fails(self):
        objs = self.objects("kube-prometheus")
        self.assertEqual(failed(deploycheck.check_kube_prometheus, objs), [])
        for o in objs:
            if o["kind"] == "RoleBinding":
                o["subjects"][0]["namespace"] = "default"
        self.assertEqual(len(failed(deploycheck.check_kube_prometheus, objs)), 1)

    def test_kube_prometheus_role_without_pods_fails(self):
        objs = self.objects("kube-prometheus")
        for o in objs:
            if o["kind"] == "Role":
                for r in o["rules"]:
                    r["resources"] = [x for x in r["resources"] if x != "pods"]
        self.assertEqual(len(failed(deploycheck.check_kube_prometheus, objs)), 1)

    def test_networkpolicy_open_to_any_namespace_fails(self):
        objs = self.objects("networkpolicy")
        self.assertEqual(failed(deploycheck.check_networkpolicy, objs), [])
        for o in objs:
            if o["kind"] == "NetworkPolicy":
                del o["spec"]["ingress"][0]["from"][0]["namespaceSelector"]
        self.assertEqual(len(failed(deploycheck.check_networkpolicy, objs)), 1)

    def test_networkpolicy_with_egress_fails(self):
        objs = self.objects("networkpolicy")
        for o in objs:
            if o["kind"] == "NetworkPolicy":
                o["spec"]["egress"] = [{}]
        self.assertEqual(len(failed(deploycheck.check_networkpolicy, objs)), 1)

    def test_tls_without_verification_fails(self):
        objs = self.objects("tls")
        self.assertEqual(failed(deploycheck.check_tls, objs), [])
        for o in objs:
            if o["kind"] == "PodMonitor":
                o["spec"]["podMetricsEndpoints"][0]["tlsConfig"] = {"insecureSkipVerify": True}
        self.assertEqual(len(failed(deploycheck.check_tls, objs)), 1)

    def test_tls_web_config_off_its_secret_fails(self):
        objs = self.objects("tls")
        c = self.container(objs)
        c["args"] = [a if not a.startswith("--web.config.file=") else "--web.config.file=/etc/web.yml"
                     for a in c["args"]]
        self.assertEqual(len(failed(deploycheck.check_tls, objs)), 1)

    def test_release_label_on_one_object_only_fails(self):
        objs = self.objects("kube-prometheus-stack")
        self.assertEqual(failed(deploycheck.check_kube_prometheus_stack, objs), [])
        for o in objs:
            if o["kind"] == "PrometheusRule":
                del o["metadata"]["labels"]["release"]
        self.assertEqual(len(failed(deploycheck.check_kube_prometheus_stack, objs)), 1)

    def test_release_label_values_differ_fails(self):
        objs = self.objects("kube-prometheus-stack")
        for o in objs:
            if o["kind"] == "PrometheusRule":
                o["metadata"]["labels"]["release"] = "other"
        self.assertEqual(len(failed(deploycheck.check_kube_prometheus_stack, objs)), 1)

    def test_release_label_on_pods_fails(self):
        objs = self.objects("kube-prometheus-stack")
        for o in objs:
            if o["kind"] == "DaemonSet":
                o["spec"]["template"]["metadata"]["labels"]["release"] = "kube-prometheus-stack"
        self.assertEqual(len(failed(deploycheck.check_kube_prometheus_stack, objs)), 1)

    def test_agreement_passes_and_notices_a_renamed_service(self):
        scrape = yaml.safe_load(read(os.path.join(TOP, "deploy/prometheus/kubernetes-scrape.yml")))
        prom = yaml.safe_load(read(os.path.join(TOP, "deploy/prometheus/prometheus.yml")))
        objs = self.objects("base")
        self.assertEqual(failed(deploycheck.check_agreement, objs, self.unit, scrape, prom, {}), [])
        for o in objs:
            if o["kind"] == "Service":
                o["metadata"]["name"] = "renamed"
        self.assertEqual(len(failed(deploycheck.check_agreement, objs, self.unit, scrape, prom, {})), 1)


if __name__ == "__main__":
    unittest.main()

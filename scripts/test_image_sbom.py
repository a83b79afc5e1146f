#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Tests of image-sbom.py: every package of the input is in the SBOM with its version,
architecture and purl, the document describes each, and bad input is an error."""

import importlib.util
import os
import unittest

spec = importlib.util.spec_from_file_location(
    "image_sbom", os.path.join(os.path.dirname(os.path.abspath(__file__)), "image-sbom.py"))
image_sbom = importlib.util.module_from_spec(spec)
spec.loader.exec_module(image_sbom)

LINES = ["libc6\t2.36-9+deb12u14\tarm64\thttps://www.gnu.org/software/libc/libc.html\n",
         "zlib1g\t1:1.2.13.dfsg-1\tarm64\n",
         "cachestat-exporter\t0.1.0~git390.g4ffc2e4\tamd64\t\n"]


class Sbom(unittest.TestCase):
    def test_every_package_with_version_arch_and_purl(self):
        doc = image_sbom.sbom(LINES, "t", "2026-01-02T03:04:05Z")
        self.assertEqual(doc["spdxVersion"], "SPDX-2.3")
        got = {p["name"]: p for p in doc["packages"]}
        self.assertEqual(sorted(got), ["cachestat-exporter", "libc6", "zlib1g"])
        self.assertEqual(got["zlib1g"]["versionInfo"], "1:1.2.13.dfsg-1")
        self.assertEqual(got["zlib1g"]["externalRefs"][0]["referenceLocator"],
                         "pkg:deb/debian/zlib1g@1%3A1.2.13.dfsg-1?arch=arm64&distro=debian-12")
        self.assertEqual(got["cachestat-exporter"]["homepage"], "NOASSERTION")
        described = {r["relatedSpdxElement"] for r in doc["relationships"] if r["relationshipType"] == "DESCRIBES"}
        self.assertEqual(described, {p["SPDXID"] for p in doc["packages"]})
        self.assertEqual(len({p["SPDXID"] for p in doc["packages"]}), 3)

    def test_bad_line_and_no_package_are_errors(self):
        with self.assertRaises(ValueError):
            image_sbom.sbom(["libc6\t\tarm64\n"], "t", "x")
        with self.assertRaises(ValueError):
            image_sbom.sbom(["\n"], "t", "x")
        # dpkg-deb -f with several fields names them: a line still holding "Package: " is refused
        with self.assertRaises(ValueError):
            image_sbom.sbom(["Package: libc6\tVersion: 2.36\tArchitecture: arm64\n"], "t", "x")


if __name__ == "__main__":
    unittest.main()

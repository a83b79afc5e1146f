#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Tests of check-md-links.py on a scratch tree with known mistakes: a missing file, a missing
anchor (a heading that moved), a reference definition to nowhere and a link out of the tree are
found; good links of every kind, links in code and other schemes are not reported."""

import contextlib
import importlib.util
import io
import os
import tempfile
import unittest

spec = importlib.util.spec_from_file_location(
    "check_md_links", os.path.join(os.path.dirname(os.path.abspath(__file__)), "check-md-links.py"))
check_md_links = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_md_links)

A = """# Top: `a.md`
## Twice
### Twice
[ok](sub/b.md) [ok](sub/b.md#limits-worth-knowing) [ok](#twice-1) [ok](#top-amd) [web](https://x/y)
`[not a link](nowhere.md)` ![img](sub/b.md "title") [dir](sub)
```
[in a fence](fenced.md)
```
[gone](sub/nowhere.md) [moved](sub/b.md#old-heading)
[ref]: #no-such-heading
[out](../../../../etc/passwd)
"""
B = """# B
## Limits worth knowing
## Flags: `--flag.name` (a/b.sh)
<a name="explicit"></a>
[up](../a.md#twice) [explicit](#explicit) [slug](#flags---flagname-absh)
"""


class Links(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        root = os.path.join(self.tmp.name, "repo")
        os.makedirs(os.path.join(root, "sub"))
        for name, text in (("a.md", A), ("sub/b.md", B)):
            with open(os.path.join(root, name), "w", encoding="utf-8") as f:
                f.write(text)
        self.root = root

    def tearDown(self):
        self.tmp.cleanup()

    def problems(self, name):
        return [p.split(": ", 2)[:2] for p in check_md_links.check(self.root, name)]

    def test_broken_links_found_and_good_ones_not(self):
        self.assertEqual(self.problems("a.md"), [
            ["a.md:9", "sub/nowhere.md"],
            ["a.md:9", "sub/b.md#old-heading"],
            ["a.md:10", "#no-such-heading"],
            ["a.md:11", "../../../../etc/passwd"],
        ])

    def test_reasons(self):
        reasons = [p.split(": ", 2)[2] for p in check_md_links.check(self.root, "a.md")]
        self.assertEqual(reasons, ["no such file", "no heading with that anchor in sub/b.md",
                                   "no heading with that anchor in a.md", "points out of the repository"])

    def test_explicit_anchor_heading_slug_and_parent_link(self):
        self.assertEqual(self.problems("sub/b.md"), [])

    def test_slug_as_github_makes_it(self):
        self.assertEqual(check_md_links.slug("Files opened and closed: `--collector.fanotify`"),
                         "files-opened-and-closed---collectorfanotify")
        self.assertEqual(check_md_links.slug("One scan for an HA pair: `--scan.min-interval`"),
                         "one-scan-for-an-ha-pair---scanmin-interval")

    def test_exit_status_and_count(self):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            self.assertEqual(check_md_links.main(["x", self.root, "sub/b.md"]), 0)
            self.assertEqual(check_md_links.main(["x", self.root, "a.md", "sub/b.md"]), 1)
        self.assertEqual(len(out.getvalue().splitlines()), 4)
        self.assertIn("checked 13 relative links in 2 files", err.getvalue())


if __name__ == "__main__":
    unittest.main()

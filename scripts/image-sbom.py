#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""An SPDX 2.3 JSON SBOM of an image's Debian packages, for scripts/build-image.sh.

Input on stdin: one package a line, "Package<TAB>Version<TAB>Architecture[<TAB>Homepage]"
(dpkg-deb -f DEB Package Version Architecture Homepage). Output: the SBOM on stdout, one SPDX
package per line of input, each with its Debian package URL (purl), and the document
DESCRIBES every one. A line that is not a package is an error, not skipped.
"""

import argparse
import json
import re
import sys


def spdx_id(name, version, arch):
    return "SPDXRef-Package-" + re.sub(r"[^A-Za-z0-9.-]", "-", "%s-%s-%s" % (name, version, arch))


def package(fields):
    if len(fields) < 3 or not all(fields[:3]):
        raise ValueError("want Package, Version and Architecture, got %r" % "\t".join(fields))
    name, version, arch = fields[:3]
    if not re.fullmatch(r"[a-z0-9][a-z0-9.+-]+", name) or not re.fullmatch(r"[0-9][A-Za-z0-9.+~:-]*", version):
        raise ValueError("not a Debian package name and version: %r %r" % (name, version))
    homepage = fields[3] if len(fields) > 3 and fields[3] else "NOASSERTION"
    purl = "pkg:deb/debian/%s@%s?arch=%s&distro=debian-12" % (name, version.replace(":", "%3A"), arch)
    return {
        "SPDXID": spdx_id(name, version, arch),
        "name": name,
        "versionInfo": version,
        "supplier": "Organization: Debian",
        "downloadLocation": "NOASSERTION",
        "homepage": homepage,
        "licenseConcluded": "NOASSERTION",
        "licenseDeclared": "NOASSERTION",
        "copyrightText": "NOASSERTION",
        "filesAnalyzed": False,
        "externalRefs": [{"referenceCategory": "PACKAGE-MANAGER", "referenceType": "purl",
                          "referenceLocator": purl}],
    }


def sbom(lines, name, created):
    pkgs = [package(line.rstrip("\n").split("\t")) for line in lines if line.strip()]
    if not pkgs:
        raise ValueError("no package")
    return {
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": name,
        "documentNamespace": "urn:cachestat-exporter:sbom:" + re.sub(r"[^A-Za-z0-9.-]", "-", name),
        "creationInfo": {"created": created, "creators": ["Tool: cachestat-exporter scripts/image-sbom.py"]},
        "packages": sorted(pkgs, key=lambda p: p["name"]),
        "relationships": [{"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES",
                           "relatedSpdxElement": p["SPDXID"]} for p in sorted(pkgs, key=lambda p: p["name"])],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", required=True)
    ap.add_argument("--created", required=True, help="RFC 3339 UTC, e.g. 2026-01-02T03:04:05Z")
    args = ap.parse_args()
    try:
        doc = sbom(sys.stdin.readlines(), args.name, args.created)
    except ValueError as e:
        sys.exit("image-sbom: %s" % e)
    json.dump(doc, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

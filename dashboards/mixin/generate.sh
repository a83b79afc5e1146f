#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Writes the rule files (dashboards/rules/*.yml) and the dashboards (dashboards/*.json) from the
# jsonnet mixin of this directory (files.jsonnet names them), or with --check compares a fresh
# generation with them and fails, printing the difference, when any file differs or is missing.
# Usage: dashboards/mixin/generate.sh [--check] [DIR]   (DIR: where the files are, default dashboards/)
# Needs jsonnet (Debian package jsonnet).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
check=false
if [ "${1:-}" = --check ]; then
	check=true
	shift
fi
dir=$(cd "${1:-$here/..}" && pwd)
command -v jsonnet >/dev/null || { echo "generate.sh: no jsonnet (package jsonnet)" >&2; exit 2; }

out=$(mktemp -d)
trap 'rm -rf "$out" "$out.list"' EXIT
mkdir -p "$out/rules"
# -m prints the files it wrote, one a line: the list of generated files.
{
	jsonnet -J "$here" -S -m "$out" -e '(import "files.jsonnet")().rules'
	jsonnet -J "$here" -m "$out" -e '(import "files.jsonnet")().dashboards'
} >"$out.list"

status=0
while IFS= read -r f; do
	name=${f#"$out"/}
	if $check; then
		if [ ! -f "$dir/$name" ]; then
			echo "generate.sh: $name: not generated yet (run dashboards/mixin/generate.sh)" >&2
			status=1
		elif ! diff -u --label "$name" --label "$name (generated)" "$dir/$name" "$f"; then
			echo "generate.sh: $dir/$name differs from the mixin's output (edit the mixin, then run dashboards/mixin/generate.sh)" >&2
			status=1
		fi
	else
		mkdir -p "$(dirname "$dir/$name")"
		cp "$f" "$dir/$name"
	fi
done <"$out.list"
exit $status

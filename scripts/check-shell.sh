#!/usr/bin/env bash
# Runs shellcheck over every shell script of the repository (every *.sh git knows of, and .ci/run):
# no error and no warning (-S warning), following sourced files (-x) from the repository's top.
# One result per file; the last line is "N passed, N failed, N skipped".
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
# shellcheck source=tests/lib/tap.sh
. tests/lib/tap.sh

command -v shellcheck >/dev/null || { fail "shellcheck is installed (scripts/deps.txt)"; finish; }
mapfile -t files < <({ git ls-files '*.sh' .ci/run 2>/dev/null || find . -name '*.sh' -not -path './.git/*'; } | sort -u)
[ ${#files[@]} -gt 0 ] || fail "no shell script found"
for f in "${files[@]}"; do
	[ -e "$f" ] || continue
	if out=$(shellcheck -x -S warning -f gcc "$f" 2>&1); then
		pass "shellcheck $f"
	else
		fail "shellcheck $f: $(grep -c ': error:' <<<"$out") errors, $(grep -c ': warning:' <<<"$out") warnings"
		sed 's/^/    /' <<<"$out" | head -n 20
	fi
done
finish

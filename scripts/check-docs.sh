#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The documents in step with the code:
#  - every metric family the exporter's sources name (a string literal "cachestat_...", as
#    render.c passes them to family()) is in the table of docs/metrics.md, and every family of
#    that table is emitted;
#  - nothing in the repository sends readers to a design document outside it;
#  - every relative link of every Markdown file leads to a file that exists and, with a
#    #anchor, to a heading of it (scripts/check-md-links.py, whose tests run first on a
#    scratch tree with known mistakes); no file has two ## sections of one name;
#  - the tables of exporter/README.md against the exporter built from the tree (its --help and
#    the text of a real scan, scripts/check-docs-tables.py): the collectors, the metric
#    families, the log sample's source lines, the HELP of cachestat_syscall_info, the per-file
#    default.
# One line per check; the last line is "N passed, N failed, N skipped".
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
# shellcheck source=tests/lib/tap.sh
. tests/lib/tap.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Whole string literals that are metric names: a prefix such as "cachestat_cgroup_" and the
# program's name are not.
find exporter -name '*.c' -not -path '*/fuzz/*' -print0 | xargs -0 grep -ho '"cachestat_[a-z0-9_]*[a-z0-9]"' |
	tr -d '"' | grep -vx 'cachestat_exporter' | sort -u >"$work/code"
# The first column of the tables of docs/metrics.md.
sed -n 's/^| `\(cachestat_[a-z0-9_]*\)` |.*/\1/p' docs/metrics.md | sort >"$work/doc.all"
sort -u "$work/doc.all" >"$work/doc"

n=$(wc -l <"$work/code")
check "the exporter's sources name metric families ($n)" test "$n" -gt 0
missing=$(comm -23 "$work/code" "$work/doc" | tr '\n' ' ')
eq "every family the exporter emits is in docs/metrics.md" "${missing:-none}" none
extra=$(comm -13 "$work/code" "$work/doc" | tr '\n' ' ')
eq "every family of docs/metrics.md is emitted by the exporter" "${extra:-none}" none
dups=$(uniq -d "$work/doc.all" | tr '\n' ' ')
eq "each family is listed once in docs/metrics.md" "${dups:-none}" none

# References out of the repository: a DESIGN.md that is not here, the project's shared notes.
outside=$(git grep -n -I -e 'DESIGN\.md' -e '\.\./shared' -- . ':!scripts/check-docs.sh' 2>/dev/null | head -n 5)
eq "no file points to a design document outside the repository" "${outside:-none}" none
# Relative links: the checker first on a scratch tree with known mistakes, which it must find.
link_checker_tests() {
	python3 -m unittest -q scripts/test_check_md_links.py 2>"$work/unittest.out" && return 0
	sed 's/^/    /' "$work/unittest.out"
	return 1
}
check "the link checker's tests (scripts/test_check_md_links.py)" link_checker_tests
mapfile -t mds < <(git ls-files '*.md')
if scripts/check-md-links.py . "${mds[@]}" >"$work/links.out" 2>"$work/links.err"; then
	pass "every relative link of the Markdown files resolves ($(cat "$work/links.err"))"
else
	fail "relative links that lead nowhere: $(wc -l <"$work/links.out")"
	sed 's/^/    /' "$work/links.out"
fi
# Two top sections (##) of one name in one file: the second is reached only by an anchor
# ending in -1, and a reader cannot tell which is meant.
dup_sections=$(for f in "${mds[@]}"; do
	grep -E '^## ' "$f" | sort | uniq -d | sed "s|^|$f: |"
done | tr '\n' ';')
eq "no Markdown file has two sections of one name" "${dup_sections:-none}" none

for f in docs/design.md docs/metrics.md; do
	check "$f exists" test -s "$f"
done
# The tables against the exporter itself: its --help, and a scan (--once).
if make -s -C exporter cachestat_exporter >/dev/null 2>"$work/build.err"; then
	while IFS= read -r line; do
		case $line in
		"ok - "*) pass "${line#ok - }" ;;
		*) fail "${line#not ok - }" ;;
		esac
	done < <(scripts/check-docs-tables.py --run . 2>&1 || true)
else
	fail "the exporter builds, for its --help and a scan ($(head -c 200 "$work/build.err"))"
fi
finish

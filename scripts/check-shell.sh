#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs shellcheck over every shell script of the repository (every *.sh git knows of, and .ci/run):
# no error and no warning (-S warning), following sourced files (-x) from the repository's top.
# One result per file; the last line is "N passed, N failed, N skipped".
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
# shellcheck source=tests/lib/tap.sh
. tests/lib/tap.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

command -v shellcheck >/dev/null || { fail "shellcheck is installed (scripts/deps.txt)"; finish; }
mapfile -t files < <({ git ls-files '*.sh' .ci/run 2>/dev/null || find . -name '*.sh' -not -path './.git/*'; } | sort -u)
[ ${#files[@]} -gt 0 ] || { fail "no shell script found"; finish; }

# One run over all of them (shellcheck starts slowly), then one result per file.
shellcheck -x -S warning -f gcc "${files[@]}" >"$work/out" 2>&1
for f in "${files[@]}"; do
	if grep -qF "$f:" "$work/out"; then
		fail "shellcheck $f: $(grep -cF -e "$f:" "$work/out" | head -n 1) findings ($(grep -F "$f:" "$work/out" | grep -c ': error:') errors)"
		grep -F "$f:" "$work/out" | sed 's/^/    /' | head -n 20
	else
		pass "shellcheck $f"
	fi
done
# Anything else it said (a file it could not read, a usage error) is a failure too.
if grep -qv -E '^[^:]+:[0-9]+:[0-9]+: ' "$work/out"; then
	fail "shellcheck said something that is not a finding"
	sed 's/^/    /' "$work/out" | head -n 20
fi

# Commit subjects that can be skimmed, from the commit after commits_from on: `area: imperative summary`,
# 72 characters at most, no full stop (the why goes in the body), as the kernel and systemd write them.
# Merges keep git's own subject.
commits_from=c5a776c
subject_ok() {
	[ "${#1}" -le 72 ] && [[ $1 =~ ^[A-Za-z0-9][A-Za-z0-9_./+,\ -]{0,40}:\ [^\ ] ]] && [[ $1 != *. ]]
}
for bad in "exporter: $(printf 'x%.0s' $(seq 63))" "no area here" "area:no space" "area: ends with a stop."; do
	if subject_ok "$bad"; then fail "commit subjects: the check refuses '$bad'"; else pass "commit subjects: the check refuses '${bad:0:40}'"; fi
done
if ! git merge-base --is-ancestor "$commits_from" HEAD 2>/dev/null; then
	skip "commit subjects since $commits_from" "that commit is not in this clone's history (a shallow clone?)"
else
	n=0 wrong=()
	while IFS= read -r subject; do
		n=$((n + 1))
		subject_ok "$subject" || wrong+=("$subject")
	done < <(git log --no-merges --format=%s "$commits_from..HEAD")
	if [ ${#wrong[@]} -eq 0 ]; then
		pass "commit subjects since $commits_from: $n, each \`area: summary\` of 72 characters at most"
	else
		fail "commit subjects since $commits_from: ${#wrong[@]} of $n not \`area: summary\` of 72 characters at most"
		printf '    %s\n' "${wrong[@]}" | head -n 20
	fi
fi
finish

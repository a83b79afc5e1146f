#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make kernel-series: the series in posting form, in $BUILD_ROOT/kernel/posting/ (or DIR):
#   0000-cover-letter.patch   [PATCH v5 0/N]: what the series is, the changes since v2, the test
#                             results of the last kernel/scripts/test.sh run, the diffstat
#   0001-....patch ...        the patches of kernel/patches/series as [PATCH v5 i/N]
# Each patch is checked with checkpatch.pl --strict when an unpacked tree is at hand (commit
# ids are not looked up: the unpacked tarball has no mainline history).
#
#   kernel/scripts/series.sh [DIR]
set -euo pipefail
. "$(dirname "$0")/lib-kernel.sh"

main() {
	local out=${1:-$KROOT/posting} n i p name date results base
	mapfile -t patches < <(series_patches)
	n=${#patches[@]}
	rm -rf "$out"
	mkdir -p "$out"

	i=0
	for p in "${patches[@]}"; do
		i=$((i + 1))
		name=${p##*/}
		sed -E "1,/^Subject:/ s/^Subject: \[PATCH[^]]*\]/Subject: [PATCH v5 $i\/$n]/" "$p" >"$out/$name"
	done

	# The cover letter is dated one second before the first patch.
	date=$(sed -n 's/^Date: //p' "${patches[0]}" | head -n 1)
	date=$(date -u -R -d "$date - 1 second")
	results=$(test_results)
	{
		echo "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001"
		echo "From: Seed 847dbd9a maintainers <maintainers@users.noreply.a-seed-847dbd9a.example>"
		echo "Date: $date"
		echo "Subject: [PATCH v5 0/$n] cachestat: a syscall to query the page cache state of files"
		echo
		cat "$KERNEL_DIR/patches/cover-letter.txt"
		echo
		base_tree
		echo
		echo "Test results (kernel/scripts/test.sh, QEMU TCG, two NUMA nodes):"
		echo
		echo "$results"
		echo
		for p in "${patches[@]}"; do
			# The subject with its folded continuation lines.
			awk '/^Subject:/ { s = $0; on = 1; next }
				on && /^ / { s = s $0; next }
				on { exit }
				END { sub(/^Subject: \[PATCH[^]]*\] /, "", s); print s }' "$p"
		done | nl -w2 -s': ' | sed 's/^/  /'
		echo
		cat "${patches[@]}" | git apply --stat --summary 2>/dev/null | sed 's/^/ /'
		echo
		echo "-- "
		echo "2.39.5"
	} >"$out/0000-cover-letter.patch"

	base=$(ls -d "$KROOT"/base-* 2>/dev/null | head -n 1 || true)
	if [ -n "$base" ] && [ -x "$base/scripts/checkpatch.pl" ]; then
		for p in "$out"/0*.patch; do
			[ "${p##*/}" = 0000-cover-letter.patch ] && continue
			if (cd "$base" && PATH=/usr/bin:$PATH scripts/checkpatch.pl --strict -q --ignore UNKNOWN_COMMIT_ID "$p") >/dev/null 2>&1; then
				echo "checkpatch --strict: ${p##*/}: clean"
			else
				echo "checkpatch --strict: ${p##*/}: NOT clean" >&2
				exit 1
			fi
		done
	fi
	echo "$out"
}

# The tree the series applies to. Debian's tarball has no public git commit of its own, so
# the package, the stable release it carries and the tarball's checksum name it.
base_tree() {
	local version sublevel
	version=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null || echo unknown)
	sublevel=$(tar -xJOf "$KERNEL_TARBALL" --wildcards --no-wildcards-match-slash --occurrence=1 '*/Makefile' 2>/dev/null |
		awk '/^VERSION =/ { v = $3 } /^PATCHLEVEL =/ { p = $3 } /^SUBLEVEL =/ && !s { s = $3 }
			END { if (s != "") print v "." p "." s }' || true)
	echo "Base tree: Debian's linux-source-6.1 $version (Linux ${sublevel:-6.1.y} with Debian's"
	echo "patches), $(basename "$KERNEL_TARBALL") sha256 $(sha256sum <"$KERNEL_TARBALL" | cut -c1-64)."
	echo "Debian's tree has no public commit for a base-commit: line; the stable tag under it is"
	echo "v${sublevel:-6.1.y}."
}

# The summary lines of the last test runs, or a note that there is none.
test_results() {
	local v logs=$BUILD_ROOT/kernel-tests/logs f line
	for v in release debug; do
		f=$logs/test-$v.summary
		if [ -s "$f" ]; then
			line=$(cat "$f")
			echo "  $v config: $line"
		else
			echo "  $v config: not run yet"
		fi
	done
}

main "$@"
exit

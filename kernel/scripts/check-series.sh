#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Check kernel/patches/series the way a reviewer would:
#   1. every patch passes scripts/checkpatch.pl --strict;
#   2. the series applies with `git am`, in order, on a fresh unpacked tree;
#   3. every commit builds on its own (release config, incremental builds with ccache),
#      and so does the nofix variant's extra patch on top.
# Ends with "N passed, N failed"; exits non-zero if anything failed.
#
#   kernel/scripts/check-series.sh [--no-build]
set -euo pipefail
. "$(dirname "$0")/lib-kernel.sh"

# In a function: bash reads all of it before running (the script may be edited meanwhile).
main() {
	build=1
	[ "${1:-}" = --no-build ] && build=0

	passed=0 failed=0
	ok() { passed=$((passed + 1)); echo "ok: $*"; }
	nok() { failed=$((failed + 1)); echo "FAIL: $*"; }

	mkdir -p "$KROOT/logs" "$CCACHE_DIR"
	# The build lock is held for the setup and for each build, not in between, so
	# that build.sh callers get their (mostly cached) kernels while this runs.
	exec 9>"$KROOT/lock"
	lock() {
		flock -n 9 && return
		log "another kernel build is running; waiting for $KROOT/lock"
		flock 9
	}
	lock

	mapfile -t patches < <(series_patches)
	extra=()
	for p in $(variant_extra_patches nofix); do extra+=("$KERNEL_DIR/patches/$p"); done

	base=$(ensure_base_repo)
	tree=$KROOT/src-check
	# A fresh checkout of the unpacked tarball each time: nothing left over from earlier runs.
	prepare_tree "$base" "$tree"
	# From here on the tree no longer matches what prepare_tree recorded.
	rm -f "$tree/.applied"
	flock -u 9

	for p in "${patches[@]}" "${extra[@]}"; do
		name=${p#"$KERNEL_DIR"/patches/}
		if (cd "$tree" && PATH=/usr/bin:$PATH scripts/checkpatch.pl --strict -q "$p") >"$KROOT/logs/checkpatch.log" 2>&1; then
			ok "checkpatch --strict $name"
		else
			nok "checkpatch --strict $name"
			sed 's/^/    /' "$KROOT/logs/checkpatch.log"
		fi
	done

	for p in "${patches[@]}" "${extra[@]}"; do
		name=${p#"$KERNEL_DIR"/patches/}
		if ! (cd "$tree" && git am -q --whitespace=nowarn "$p") >"$KROOT/logs/am.log" 2>&1; then
			nok "git am $name"
			sed 's/^/    /' "$KROOT/logs/am.log"
			(cd "$tree" && git am --abort) >/dev/null 2>&1 || true
			break
		fi
		ok "git am $name"
		[ $build -eq 1 ] || continue
		lock
		configure_tree "$tree" release.config
		start=$(date +%s)
		if (make_bzimage "$tree" "$KROOT/logs/check-build.log") 2>/dev/null; then
			ok "build after $name ($(( $(date +%s) - start )) s)"
		else
			nok "build after $name"
			tail -n 30 "$KROOT/logs/check-build.log" | sed 's/^/    /'
		fi
		flock -u 9
	done
	echo "$passed passed, $failed failed"
	[ $failed -eq 0 ]
}

main "$@"
exit

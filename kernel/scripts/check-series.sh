#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Check kernel/patches/series the way a reviewer would:
#   1. every patch passes scripts/checkpatch.pl --strict (but for UNKNOWN_COMMIT_ID: the
#      unpacked tarball has no mainline history to look up the commits the messages name);
#   2. the series applies with `git am`, in order, on a fresh unpacked tree;
#   3. every prefix of the series builds (release config, incremental builds with ccache),
#      and so do the A/B variants' extra patches on top;
#   4. with --boot, every prefix boots under QEMU and passes what it should at that point:
#      the kernel log stays clean; once cachestat is in, the seed's selftest passes; once the
#      overlayfs patch is in, the mainline-form and overlayfs kselftest passes too;
#   5. with --configs, the whole series also builds without SWAP, without MEMCG and without
#      LRU_GEN, as the kernel test robot would try.
# Ends with "N passed, N failed"; exits non-zero if anything failed.
#
#   kernel/scripts/check-series.sh [--no-build] [--boot] [--configs]
#
# It builds in the release tree and holds the build lock throughout: build.sh callers whose
# kernel is cached still get it at once; the next release build re-applies the series (ccache
# makes that quick).
set -euo pipefail
. "$(dirname "$0")/lib-kernel.sh"
. "$(dirname "$0")/../tests/host-lib.sh"

# In a function: bash reads all of it before running (the script may be edited meanwhile).
main() {
	local build=1 boot=0 configs=0 arg
	for arg in "$@"; do
		case $arg in
		--no-build) build=0 ;;
		--boot) boot=1 ;;
		--configs) configs=1 ;;
		*) echo "usage: $0 [--no-build] [--boot] [--configs]" >&2; exit 2 ;;
		esac
	done

	passed=0 failed=0
	ok() { passed=$((passed + 1)); echo "ok: $*"; }
	nok() { failed=$((failed + 1)); echo "FAIL: $*"; }

	mkdir -p "$KROOT/logs" "$CCACHE_DIR"
	exec 9>"$KROOT/lock"
	if ! flock -n 9; then
		log "another kernel build is running; waiting for $KROOT/lock"
		flock 9
	fi

	mapfile -t patches < <(series_patches)
	extra=()
	for p in $(variant_extra_patches nofix) $(variant_extra_patches unlimited); do
		extra+=("$KERNEL_DIR/patches/$p")
	done
	artifacts=
	if [ $boot -eq 1 ]; then
		artifacts=$(test_artifacts) || { nok "building the guest test programs"; boot=0; }
	fi

	base=$(ensure_base_repo)
	tree=$(variant_tree release)
	# Back to the unpacked tarball: nothing of an earlier series is left.
	prepare_tree "$base" "$tree"
	# From here on the tree no longer matches what prepare_tree recorded.
	rm -f "$tree/.applied"

	# The fragments of build.sh release, so that its next build reuses these objects.
	read -ra release_frags <<<"$(variant_fragments release)"

	for p in "${patches[@]}" "${extra[@]}"; do
		name=${p#"$KERNEL_DIR"/patches/}
		if (cd "$tree" && PATH=/usr/bin:$PATH scripts/checkpatch.pl --strict -q --ignore UNKNOWN_COMMIT_ID "$p") >"$KROOT/logs/checkpatch.log" 2>&1; then
			ok "checkpatch --strict $name"
		else
			nok "checkpatch --strict $name"
			sed 's/^/    /' "$KROOT/logs/checkpatch.log"
		fi
	done

	for p in "${patches[@]}" "${extra[@]}"; do
		name=${p#"$KERNEL_DIR"/patches/}
		# An A/B patch goes on top of the whole series, not of the one before it.
		case $name in ab/*) (cd "$tree" && git reset -q --hard "$series_head") ;; esac
		if ! (cd "$tree" && git am -q --whitespace=nowarn "$p") >"$KROOT/logs/am.log" 2>&1; then
			nok "git am $name"
			sed 's/^/    /' "$KROOT/logs/am.log"
			(cd "$tree" && git am --abort) >/dev/null 2>&1 || true
			break
		fi
		ok "git am $name"
		case $name in ab/*) ;; *) series_head=$(git -C "$tree" rev-parse HEAD) ;; esac
		[ $build -eq 1 ] || continue
		build_one "$name" "${release_frags[@]}" || continue
		[ $boot -eq 1 ] && case $name in ab/*) ;; *) boot_one "$name" ;; esac
	done

	if [ $configs -eq 1 ] && [ $build -eq 1 ]; then
		(cd "$tree" && git reset -q --hard "$series_head")
		for frag in robot-noswap.config robot-nomemcg.config robot-nolrugen.config; do
			build_one "the series, the release config + $frag" "${release_frags[@]}" "$frag" || true
		done
		configure_tree "$tree" "${release_frags[@]}"
	fi
	rm -f "$tree/.applied"
	echo "$passed passed, $failed failed"
	[ $failed -eq 0 ]
}

# build_one WHAT FRAGMENT...: an incremental bzImage build of the tree as it is.
build_one() {
	local what=$1 start
	shift
	configure_tree "$tree" "$@"
	start=$(date +%s)
	if (make_bzimage "$tree" "$KROOT/logs/check-build.log") 2>/dev/null; then
		ok "build after $what ($(( $(date +%s) - start )) s)"
	else
		nok "build after $what"
		tail -n 30 "$KROOT/logs/check-build.log" | sed 's/^/    /'
		return 1
	fi
}

# boot_one NAME: boot the tree's bzImage and run the suites this prefix must pass.
boot_one() {
	local name=$1 suites=dmesg minima="dmesg=1" bz logf rc
	if grep -q cachestat "$tree/arch/x86/entry/syscalls/syscall_64.tbl"; then
		suites=seed,dmesg minima="seed=6 dmesg=1"
	fi
	if [ -e "$tree/mm/cachestat.c" ] && grep -q d_real_inode "$tree/mm/cachestat.c"; then
		suites=seed,mainline,dmesg minima="seed=6 mainline=16 dmesg=1"
	fi
	bz=$KROOT/logs/check-boot.bzImage
	cp "$tree/arch/x86/boot/bzImage" "$bz"
	logf=$LOG_DIR/check-boot-${name%%-*}.log
	"$TESTS_DIR/qemu-run.sh" "$bz" "$artifacts" "$logf" test 900 512 "cachestat.suites=$suites" &&
		rc=0 || rc=$?
	parse_run "boot ${name%%-*}:" "$logf" "$rc" "$minima" >"$KROOT/logs/check-boot.results"
	if [ "$RES_FAIL" -eq 0 ]; then
		ok "boot after $name: $suites, $RES_PASS passed, $RES_SKIP skipped"
	else
		nok "boot after $name: $suites ($logf)"
		grep -v '^PASS' "$KROOT/logs/check-boot.results" | head -n 20 | sed 's/^/    /'
	fi
}

main "$@"
exit

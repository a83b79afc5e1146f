#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build the patched kernel of one variant, or reuse the cached build, and print the absolute
# path of its bzImage as the last line of stdout. Progress goes to stderr.
#
#   kernel/scripts/build.sh release   the series of kernel/patches/series; config/base.config, system.config,
#                                     compat.config
#   kernel/scripts/build.sh debug     the series; config/base.config and debug.config (lockdep, KASAN, ...)
#   kernel/scripts/build.sh nofix     release with patches/ab/revert-0001.patch on top (A/B test)
#   kernel/scripts/build.sh unlimited release with patches/ab/unlimited-flush.patch on top: the
#                                     stats flush of every call, for make kernel-bench
#
# Environment: BUILD_ROOT (default /var/tmp/cachestat_exporter), KERNEL_TARBALL, JOBS.
set -euo pipefail
. "$(dirname "$0")/lib-kernel.sh"

# cached VARIANT DIR: the build in DIR is current. Points $KROOT/VARIANT at it (the suites boot that link, and a
# cache filled by an interrupted run or another variant's may have left the link elsewhere), prints it, exits.
cached() {
	log "$1: cached ($2)"
	ln -sfn "$2" "$KROOT/$1"
	echo "$2/bzImage"
	exit 0
}

# All in a function, so that bash has read the whole script before running any of it:
# editing build.sh while a build runs must not change what the running build does.
main() {
	local variant=${1:-} fragments key out start base tree logfile tmp p make_args
	fragments=$(variant_fragments "$variant" 2>/dev/null) ||
		{ echo "usage: $0 release|debug|nofix|unlimited" >&2; exit 2; }
	[ -r "$KERNEL_TARBALL" ] || die "$KERNEL_TARBALL not found (Debian package linux-source-6.1)"

	key=$(kernel_cache_key "$variant")
	out=$KROOT/cache/$variant-$key
	if [ -s "$out/bzImage" ]; then
		cached "$variant" "$out"
	fi

	mkdir -p "$KROOT/cache" "$KROOT/logs" "$CCACHE_DIR"
	exec 9>"$KROOT/lock"
	if ! flock -n 9; then
		log "another kernel build is running; waiting for $KROOT/lock"
		flock 9
	fi
	# The build we waited for may have been this one.
	if [ -s "$out/bzImage" ]; then
		cached "$variant" "$out"
	fi

	start=$(date +%s)
	patches=()
	mapfile -t patches < <(series_patches)
	for p in $(variant_extra_patches "$variant"); do patches+=("$KERNEL_DIR/patches/$p"); done
	for p in "${patches[@]}"; do [ -r "$p" ] || die "missing patch $p"; done

	base=$(ensure_base_repo)
	tree=$(variant_tree "$variant")
	prepare_tree "$base" "$tree" "${patches[@]}"
	# shellcheck disable=SC2086 # fragments is a list of names
	configure_tree "$tree" $fragments
	# shellcheck disable=SC2086
	check_config "$tree/.config" $fragments

	logfile=$KROOT/logs/$variant-$key.log
	log "$variant: building bzImage in $tree (log: $logfile)"
	mapfile -t make_args < <(variant_make_args "$variant")
	make_bzimage "$tree" "$logfile" "${make_args[@]}"
	check_kasan_scope "$tree"

	tmp=$out.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$tmp"
	cp "$tree/arch/x86/boot/bzImage" "$tree/.config" "$tree/System.map" "$tmp/"
	git -C "$tree" log --oneline base..HEAD >"$tmp/series.txt"
	cp "$logfile" "$tmp/build.log"
	rm -rf "$out"
	mv "$tmp" "$out"
	ln -sfn "$out" "$KROOT/$variant"
	# Keep the three newest builds of the variant (a caller may still be booting an
	# older one) and the newest logs.
	ls -1dt "$KROOT/cache/$variant"-* | tail -n +4 | xargs -r rm -rf
	ls -1t "$KROOT/logs/$variant"-*.log | tail -n +6 | xargs -r rm -f
	log "$variant: built in $(( $(date +%s) - start )) s ($out)"
	echo "$out/bzImage"
}

main "$@"
exit

# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Shared by the kernel build scripts (sourced, not run).
#
# Layout under $BUILD_ROOT/kernel (never inside the repository):
#   base-<tar>/        Debian's linux-source tarball unpacked, one git commit tagged "base"
#   src-<variant>/     a git worktree of base-<tar> with the series applied, built in place
#   cache/<variant>-<key>/bzImage   finished builds, keyed by every input (see kernel_cache_key)
#   ccache/            compiler cache shared by all variants
#   lock               flock: one build at a time (two builds on two cores gain nothing)

KERNEL_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_ROOT=${BUILD_ROOT:-/var/tmp/cachestat_exporter}
KROOT=$BUILD_ROOT/kernel
KERNEL_TARBALL=${KERNEL_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
JOBS=${JOBS:-$(nproc)}

export CCACHE_DIR=${CCACHE_DIR:-$KROOT/ccache}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-6G}
# Fresh worktrees have brand-new header mtimes; the sources are identified by content anyway.
export CCACHE_SLOPPINESS=include_file_mtime,include_file_ctime,time_macros
# Depend mode: a miss hashes the dependency file kbuild asks gcc for (-Wp,-MMD) instead of running the
# preprocessor a second time, which is 15 to 20% of an object's CPU time; a cold build is all misses.
export CCACHE_DEPEND=1
# Reproducible version strings, so that ccache hits for init/version.c too.
export KBUILD_BUILD_USER=cachestat KBUILD_BUILD_HOST=build
export KBUILD_BUILD_TIMESTAMP="Thu Jan  1 00:00:00 UTC 1970"
# git am needs an identity; the author of each patch comes from the patch itself.
export GIT_COMMITTER_NAME="cachestat build" GIT_COMMITTER_EMAIL="build@cachestat.invalid"
export GIT_AUTHOR_NAME="cachestat build" GIT_AUTHOR_EMAIL="build@cachestat.invalid"

log() { printf '%s build.sh: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The source tree a variant builds in: variants of one config share it, so that switching
# between them rebuilds only what their extra patches touch.
variant_tree() {
	case $1 in
	debug) echo "$KROOT/src-debug" ;;
	*) echo "$KROOT/src-release" ;;
	esac
}

# The fragments and extra patches of a variant, relative to kernel/config and kernel/patches.
variant_fragments() {
	case $1 in
	release|nofix|unlimited) echo base.config system.config compat.config ;;
	debug) echo base.config debug.config ;;
	*) return 1 ;;
	esac
}

# Extra make arguments of a variant, one per line.
# debug: KASAN instruments the code the series changes or calls into, and nothing else: mm/ (the syscall,
# workingset, memcg), fs/ (the VFS, overlayfs and ext4, whose page cache it reads), lib/ (the XArray it walks)
# and kernel/cgroup/. The rest (arch/, drivers/, net/, the scheduler, ...) runs no line of the series, and
# KASAN's flags make those objects some 16% dearer to compile (kernel/README.md). A variable given on make's
# command line overrides the directories' own KASAN_SANITIZE, so mm/kasan/'s "n" is repeated here; the
# per-file KASAN_SANITIZE_x.o of the Makefiles still apply. check_kasan_scope proves the result.
variant_make_args() {
	case $1 in
	debug)
		# shellcheck disable=SC2016 # make, not the shell, expands this, once per directory ($(obj))
		echo 'KASAN_SANITIZE=$(if $(filter mm/kasan mm/kasan/%,$(obj)),n,$(if $(filter mm mm/% fs fs/% lib lib/% kernel/cgroup,$(obj)),y,n))'
		;;
	esac
}

variant_extra_patches() {
	case $1 in
	nofix) echo ab/revert-0001.patch ;;
	unlimited) echo ab/unlimited-flush.patch ;;
	*) ;;
	esac
}

# The patches of kernel/patches/series, one path per line (comments and blank lines skipped).
series_patches() {
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$KERNEL_DIR/patches/series" |
		sed "s|^|$KERNEL_DIR/patches/|"
}

# Identity of the tarball without reading its 130 MB: name, size, mtime.
tarball_key() {
	stat -c '%n %s %Y' "$KERNEL_TARBALL" | sha256sum | cut -c1-12
}

# Everything that decides the bytes of a variant's bzImage.
kernel_cache_key() {
	local variant=$1 f
	{
		echo "variant $variant"
		stat -c 'tarball %n %s %Y' "$KERNEL_TARBALL"
		gcc --version | head -n1
		cat "$KERNEL_DIR/patches/series"
		series_patches | while read -r f; do sha256sum <"$f"; done
		for f in $(variant_extra_patches "$variant"); do sha256sum <"$KERNEL_DIR/patches/$f"; done
		for f in $(variant_fragments "$variant"); do sha256sum <"$KERNEL_DIR/config/$f"; done
		sha256sum <"$KERNEL_DIR/scripts/build.sh"
		sha256sum <"$KERNEL_DIR/scripts/lib-kernel.sh"
	} | sha256sum | cut -c1-16
}

# Unpack the tarball once into a git repository whose first commit is tagged "base".
ensure_base_repo() {
	local base tmp
	base=$KROOT/base-$(tarball_key)
	if [ -e "$base/.git/refs/tags/base" ]; then
		echo "$base"
		return
	fi
	tmp=$base.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp"
	log "unpacking $KERNEL_TARBALL"
	tar -xJf "$KERNEL_TARBALL" -C "$tmp" --strip-components=1
	log "committing the unpacked tree"
	(
		cd "$tmp" || exit
		git init -q
		git config core.autocrlf false
		git config gc.auto 0
		# The tarball's ignore rules would hide files of the tree itself: add everything.
		git add -A -f
		git commit -q -m "linux-source $(basename "$KERNEL_TARBALL") as shipped"
		git tag base
	) >&2
	mv "$tmp" "$base"
	echo "$base"
}

# Make $2 a worktree of base repo $1 holding base + series + extra patches.
# Only files that differ from what is checked out are rewritten, so kbuild rebuilds little.
prepare_tree() {
	local base=$1 tree=$2
	shift 2
	local want have
	want=$(cat "$@" /dev/null | sha256sum | cut -c1-16)
	if [ ! -e "$tree/.git" ]; then
		rm -rf "$tree"
		git -C "$base" worktree prune
		git -C "$base" worktree add -q --detach "$tree" base >&2
	fi
	have=$(cat "$tree/.applied" 2>/dev/null || true)
	if [ "$have" = "$want" ]; then
		return
	fi
	log "applying ${#} patches in $tree"
	(
		cd "$tree"
		rm -f .applied
		git am --abort >/dev/null 2>&1 || true
		old=$(git rev-parse HEAD)
		# Going back to base and applying the series again rewrites every file the
		# series touches. Remember their mtimes, to give back those of the files whose
		# content ends up unchanged: make then rebuilds only what the new series changes.
		git diff --name-only -z base "$old" | xargs -0r stat -c '%.9Y %n' 2>/dev/null >.mtimes || true
		git reset -q --hard base
		if [ $# -gt 0 ]; then
			git am -q --whitespace=nowarn "$@"
		fi
		git diff --name-only "$old" HEAD >.changed
		while read -r mtime file; do
			[ -e "$file" ] && ! grep -qxF "$file" .changed && touch -m -d "@$mtime" "$file"
		done <.mtimes
		rm -f .mtimes .changed
		echo "$want" >.applied
	) >&2 || die "the series does not apply on $(basename "$KERNEL_TARBALL")"
}

# Write the merged config of the fragments into $1/.config, keeping the old file (and its
# mtime) when nothing changed.
configure_tree() {
	local tree=$1
	shift
	local frag frags=()
	for frag in "$@"; do frags+=("$KERNEL_DIR/config/$frag"); done
	(
		cd "$tree"
		[ -e .config ] && cp -p .config .config.prev
		scripts/kconfig/merge_config.sh -n "${frags[@]}" >.config.merge.log 2>&1 ||
			{ cat .config.merge.log; exit 1; }
		if [ -e .config.prev ] && cmp -s .config .config.prev; then
			mv .config.prev .config
		fi
		rm -f .config.prev
	) >&2 || die "merging the config failed"
}

# Every "CONFIG_X=v" line of the fragments (names relative to kernel/config) must be in
# .config $1 as is; every "# CONFIG_X is not set" must not be set. merge_config.sh only
# warns when kconfig drops a symbol (an unmet dependency); this prints every mismatch,
# then fails.
check_config() {
	local config=$1 frag line sym val bad=0
	shift
	for frag in "$@"; do
		frag=$KERNEL_DIR/config/$frag
		while IFS= read -r line; do
			case $line in
			CONFIG_*=*)
				sym=${line%%=*} val=${line#*=}
				if ! grep -qxF "$sym=$val" "$config"; then
					log "config: $(basename "$frag") asks $sym=$val, got: $(grep -E "^(# )?${sym}[= ]" "$config" || echo absent)"
					bad=1
				fi
				;;
			"# CONFIG_"*" is not set")
				sym=${line#\# } sym=${sym%% *}
				if grep -q "^$sym=" "$config"; then
					log "config: $(basename "$frag") asks $sym unset, got: $(grep "^$sym=" "$config")"
					bad=1
				fi
				;;
			esac
		done <"$frag"
	done
	[ $bad -eq 0 ] || die "the config fragments are not satisfied (see above)"
}

# The preload of hugepage-heap.c, compiled once per content into $KROOT/tools; prints its path.
hugepage_preload() {
	local src=$KERNEL_DIR/scripts/hugepage-heap.c so
	so=$KROOT/tools/hugepage-heap-$(sha256sum <"$src" | cut -c1-12).so
	if [ ! -s "$so" ]; then
		mkdir -p "$KROOT/tools"
		gcc -O2 -Wall -Werror -shared -fPIC -o "$so.tmp" "$src" -ldl >&2 || return 1
		mv "$so.tmp" "$so"
	fi
	echo "$so"
}

# Build bzImage in $1 with ccache, the compiler's output going to log file $2; the rest are make arguments.
# The compilers run with hugepage-heap.c preloaded: a cold build takes some 20% less CPU.
make_bzimage() {
	local tree=$1 logfile=$2 preload
	shift 2
	preload=$(hugepage_preload) || die "compiling $KERNEL_DIR/scripts/hugepage-heap.c failed"
	if ! LD_PRELOAD=$preload make -C "$tree" -j"$JOBS" CC="ccache gcc" HOSTCC="ccache gcc" "$@" bzImage \
		>"$logfile" 2>&1; then
		tail -n 40 "$logfile" >&2
		die "kernel build failed in $tree (full log: $logfile)"
	fi
}

# A KASAN build's scope (variant_make_args): objects inside it call KASAN's reports, objects outside call none.
# Fails the build otherwise, as check_config does for the config. The symbols go through a variable: under
# pipefail, `nm | grep -q` can fail on nm's SIGPIPE when grep quits at its match.
check_kasan_scope() {
	local tree=$1 obj undefined
	grep -qx 'CONFIG_KASAN=y' "$tree/.config" || return 0
	for obj in mm/cachestat.o mm/workingset.o fs/overlayfs/file.o lib/xarray.o \
		kernel/fork.o net/core/dev.o arch/x86/kernel/process.o; do
		undefined=$(nm -u "$tree/$obj") || die "KASAN scope: nm $obj failed"
		case $obj in
		mm/* | fs/* | lib/*) [[ $undefined == *__asan_report_* ]] || die "KASAN scope: $obj is not instrumented" ;;
		*) [[ $undefined != *__asan_report_* ]] || die "KASAN scope: $obj is instrumented" ;;
		esac
	done
}

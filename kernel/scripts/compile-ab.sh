#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a change to the kernel build's compiler runs costs, in CPU: compiles N objects picked at random from a
# built tree, each from the command kbuild recorded for it (its .cmd file), once as the build ran it (A) and once
# changed (B), two at a time, and prints both totals and their ratio.
#
#   kernel/scripts/compile-ab.sh preload TREE [N]   B runs the compiler with hugepage-heap.c preloaded
#   kernel/scripts/compile-ab.sh kasan TREE [N]     B adds KASAN's flags, on objects built without them
#
# N defaults to 100. The objects go to a scratch directory; the tree is not changed.
set -euo pipefail
. "$(dirname "$0")/lib-kernel.sh"

mode=${1:-} tree=${2:-} count=${3:-100}
case $mode in preload | kasan) ;; *) echo "usage: $0 preload|kasan TREE [N]" >&2; exit 2 ;; esac
[ -f "$tree/.config" ] || die "$tree is not a built kernel tree"
tree=$(cd "$tree" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
preload=$(hugepage_preload)
cd "$tree"
# KASAN's flags as kbuild passed them to an instrumented object of this tree (kasan mode needs a KASAN build).
kasan_flags=
if [ "$mode" = kasan ]; then
	kasan_flags=$(grep -o -- '-fsanitize=kernel-address\( \+\(-fasan[^ ]*\|--param [^ ]*asan[^ ]*\)\)*' \
		mm/.cachestat.o.cmd) || die "$tree has no KASAN-instrumented mm/cachestat.o"
fi

# The objects kbuild compiled with ccache gcc; for kasan, only those compiled without KASAN.
find . -name '.*.o.cmd' -newer include/generated/autoconf.h | while read -r cmdfile; do
	dir=$(dirname "$cmdfile") name=$(basename "$cmdfile" .cmd)
	obj=${dir#./}/${name#.}
	line=$(grep -m1 "^cmd_$obj := ccache gcc " "$cmdfile") || continue
	[ "$mode" = kasan ] && [[ $line == *-fsanitize=kernel-address* ]] && continue
	echo "$obj"
done | shuf -n "$count" --random-source=<(yes) >"$scratch/objects"
[ -s "$scratch/objects" ] || die "no object to compile in $tree"

# compile_one OBJ A|B: prints "A|B USER SYS" for one compile of OBJ.
compile_one() {
	local obj=$1 side=$2 cmd env=()
	cmd=$(sed -n "s|^cmd_$obj := ccache ||p" "$(dirname "$obj")/.$(basename "$obj").cmd" |
		sed "s|-Wp,-MMD,[^ ]*||; s| -o $obj | -o $scratch/$side-$BASHPID.o |")
	if [ "$side" = B ]; then
		case $mode in
		kasan) cmd=${cmd/ -c -o / $kasan_flags -c -o } ;;
		preload) env=(LD_PRELOAD="$preload") ;;
		esac
	fi
	env "${env[@]}" /usr/bin/time -f "$side %U %S" sh -c "$cmd" 2>&1 >/dev/null | tail -n 1
}
export -f compile_one
export mode scratch preload kasan_flags

while read -r obj; do printf '%s A\n%s B\n' "$obj" "$obj"; done <"$scratch/objects" |
	xargs -P 2 -n 2 bash -c 'compile_one "$@"' _ >"$scratch/times"
awk -v n="$(wc -l <"$scratch/objects")" -v mode="$mode" '
	{ cpu[$1] += $2 + $3 }
	END { printf "%d objects, %s: A (as built) %.1f s of CPU, B %.1f s, B/A %.2f\n", n, mode, cpu["A"], cpu["B"], cpu["B"] / cpu["A"] }
' "$scratch/times"

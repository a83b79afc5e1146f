#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for a bounded time.
# Usage: fuzz/run.sh [TARGET...]      (default: every fuzz-*.c here)
# Env:   FUZZ_SECONDS (default 60) per target; FUZZ_JOBS (default 1) parallel workers per target;
#        FUZZ_BUILD (default exporter/build/fuzz) for binaries, working corpora and crashes.
# Seeds and regression inputs live in fuzz/corpus/TARGET/ (committed); the unit tests run every
# one of them through the same target, so a crash input copied there stays fixed.
# Ends with "N passed, N failed"; a target that finds a crash fails.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
seconds=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-1}
out=${FUZZ_BUILD:-$src/build/fuzz}
CC=${FUZZ_CC:-clang}
mkdir -p "$out"

if ! command -v "$CC" >/dev/null; then
	echo "fuzz: $CC not found (Debian: clang, libclang-rt-14-dev)"
	echo "0 passed, 1 failed"
	exit 1
fi

# The modules (every exporter source but main.c, or FUZZ_MODULES from the Makefile) are
# built once with the fuzzer's instrumentation and linked into every target, with the
# libraries of FUZZ_PKGS (pkg-config names; the Makefile passes its PKGS).
if [ -n "${FUZZ_MODULES:-}" ]; then
	read -r -a modules <<<"$FUZZ_MODULES"
else
	modules=()
	for f in "$src"/*/*.c; do
		m=${f#"$src"/}
		case $m in fuzz/*) ;; *) modules+=("${m%.c}") ;; esac
	done
fi
pkgs=${FUZZ_PKGS:-libmicrohttpd jansson libcgroup yaml-0.1 gnutls libcrypt libcap-ng libseccomp zlib}
if [ $# -gt 0 ]; then targets=("$@"); else
	targets=()
	for f in "$here"/fuzz-*.c; do t=${f##*/fuzz-}; targets+=("${t%.c}"); done
fi

san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
# shellcheck disable=SC2086
cflags="-g -O1 -fno-omit-frame-pointer $san -I$src -I$src/build $(pkg-config --cflags $pkgs)"
# shellcheck disable=SC2086
libs="$(pkg-config --libs $pkgs) -lpthread"
passed=0 failed=0
objs=()
mkdir -p "$out/obj"
for m in "${modules[@]}"; do
	o=$out/obj/$m.o
	mkdir -p "${o%/*}"
	if [ ! -e "$o" ] || [ "$src/$m.c" -nt "$o" ] ||
		[ -n "$(find "$src" -path "$src/build" -prune -o -name '*.h' -newer "$o" -print)" ]; then
		# shellcheck disable=SC2086
		"$CC" $cflags -fsanitize=fuzzer-no-link -c -o "$o" "$src/$m.c" || {
			echo "fuzz: $m.c does not build"
			echo "0 passed, 1 failed"
			exit 1
		}
	fi
	objs+=("$o")
done
for t in "${targets[@]}"; do
	bin="$out/fuzz-$t"
	# shellcheck disable=SC2086
	if ! "$CC" $cflags -fsanitize=fuzzer -o "$bin" "$here/fuzz-$t.c" "${objs[@]}" $libs; then
		echo "fuzz-$t: build failed"
		failed=$((failed + 1))
		continue
	fi
	corpus="$out/corpus-$t" artifacts="$out/artifacts-$t"
	mkdir -p "$corpus" "$artifacts" "$here/corpus/$t"
	rm -f "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* "$artifacts"/oom-*
	dict=() par=()
	# with -jobs, libFuzzer writes fuzz-N.log into the current directory: run from $out
	[ "$jobs" -gt 1 ] && par=(-jobs="$jobs" -workers="$jobs")
	[ -f "$here/$t.dict" ] && dict=(-dict="$here/$t.dict")
	log="$out/fuzz-$t.log"
	echo "fuzz-$t: ${seconds}s, corpus $corpus + $here/corpus/$t"
	(cd "$out" && ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
		"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
		"${par[@]}" -print_final_stats=1 "${dict[@]}" \
		-artifact_prefix="$artifacts/" "$corpus" "$here/corpus/$t") >"$log" 2>&1
	rc=$?
	stats=$(grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$log" | tr '\n' ' ')
	found=$(ls "$artifacts" 2>/dev/null | head -n 5)
	if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
		echo "fuzz-$t: FAILED (exit $rc) $stats"
		grep -m 5 -E 'ERROR: |SUMMARY: |runtime error' "$log" | sed 's/^/  /'
		for a in $found; do
			echo "  input: $artifacts/$a -> copy it to exporter/fuzz/corpus/$t/ once fixed"
		done
		failed=$((failed + 1))
	else
		echo "fuzz-$t: ok, $stats corpus $(ls "$corpus" | wc -l) inputs"
		passed=$((passed + 1))
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

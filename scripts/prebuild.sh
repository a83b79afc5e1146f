#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds, ahead of the suites that need them, what takes longest to make cold: the e2e guest image (then the stock
# kernels installed into copies of it) and the release kernel side by side (the image spends most of its time
# fetching and unpacking packages, while the kernel keeps the cores busy). make test starts it in the background
# (run-suites.sh's PREBUILD). A suite that needs one of these calls the same build script, which waits on the build's lock and
# then finds the result cached: no suite sees a half-built artifact, and without this script each builds its own.
# Prints one line per artifact with its time; exits non-zero if any build failed (its log says why).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

# children_cpu PID: the CPU seconds (user + system) of the waited-for children of process PID (its
# cutime and cstime in /proc, in clock ticks).
children_cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%d\n", ($14 + $15) / hz }' "/proc/$1/stat"
}

# timed NAME COMMAND...: runs COMMAND (its path output dropped, its log on stderr), then says how long it took
# and the CPU it used.
timed() {
	local name=$1 start=$SECONDS me=$BASHPID cpu rc
	shift
	cpu=$(children_cpu "$me")
	"$@" >/dev/null
	rc=$?
	cpu=$(($(children_cpu "$me") - cpu))
	if [ "$rc" -eq 0 ]; then
		printf 'prebuild: %s ready in %d s (CPU %d s)\n' "$name" $((SECONDS - start)) "$cpu"
	else
		printf 'prebuild: %s FAILED (exit %d) after %d s\n' "$name" "$rc" $((SECONDS - start))
	fi
	return "$rc"
}

rc=0
# The stock kernels of tests/e2e/stock.sh install into a copy of the guest image (downloads, then initramfs-tools).
{
	timed "guest image" "$top/tests/e2e/build-image.sh" &&
		timed "stock kernel bookworm" "$top/tests/e2e/build-stock-kernel.sh" bookworm &&
		timed "stock kernel mainline" "$top/tests/e2e/build-stock-kernel.sh" mainline
} &
image=$!
timed "release kernel" "$top/kernel/scripts/build.sh" release || rc=1
wait "$image" || rc=1
exit "$rc"

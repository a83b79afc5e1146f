#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds, ahead of the suites that need them, what takes longest to make cold: the e2e guest image and the
# release kernel side by side (the image spends most of its time fetching and unpacking packages, while the
# kernel keeps the cores busy), then the debug kernel. make test starts it in the background (run-suites.sh's
# PREBUILD). A suite that needs one of these calls the same build script, which waits on the build's lock and
# then finds the result cached: no suite sees a half-built artifact, and without this script each builds its own.
# Prints one line per artifact with its time; exits non-zero if any build failed (its log says why).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

# timed NAME COMMAND...: runs COMMAND (its path output dropped, its log on stderr), then says how long it took.
timed() {
	local name=$1 start=$SECONDS rc
	shift
	"$@" >/dev/null
	rc=$?
	if [ "$rc" -eq 0 ]; then
		printf 'prebuild: %s ready in %d s\n' "$name" $((SECONDS - start))
	else
		printf 'prebuild: %s FAILED (exit %d) after %d s\n' "$name" "$rc" $((SECONDS - start))
	fi
	return "$rc"
}

rc=0
timed "guest image" "$top/tests/e2e/build-image.sh" &
image=$!
timed "release kernel" "$top/kernel/scripts/build.sh" release || rc=1
timed "debug kernel" "$top/kernel/scripts/build.sh" debug || rc=1
wait "$image" || rc=1
exit "$rc"

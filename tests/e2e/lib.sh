# Shared helpers of the e2e scripts: paths, logging, the Debian mirror, waiting.
# Sourced, not run.

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$E2E_DIR/../.." && pwd)
BUILD_ROOT=${BUILD_ROOT:-/var/tmp/cachestat_exporter}
E2E_ROOT=$BUILD_ROOT/e2e

log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# debian_mirror SUITE: the URI of the apt source that serves SUITE on this host, read from the deb822 files
# in /etc/apt/sources.list.d/, else from one-line sources (the project never names a mirror itself).
debian_mirror() {
	local suite=$1 f
	{
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		awk -v want="$suite" '
			function flush() { if (has && uri != "") { print uri; found = 1; exit } has = 0; uri = "" }
			/^[[:space:]]*$/ { flush(); next }
			/^URIs:/ { uri = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == want) has = 1 }
			END { if (!found) flush() }
		' "$f"
	done
	# One-line sources ("deb [options] URI SUITE COMPONENT..."), for hosts that still use them.
	cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		sed -E -n 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]]+([^[:space:]]+).*/\2 \3/p' |
		awk -v want="$suite" '$2 == want { print $1 }' || true
	} | sed -n 1p
}

# hash_inputs FILE...: a short, stable hash of the named files' contents.
hash_inputs() {
	cat "$@" | sha256sum | cut -c1-16
}

# lock_run NAME: one run of NAME (run-e2e, run-demo) at a time; they share a directory and host ports.
lock_run() {
	mkdir -p "$E2E_ROOT"
	exec 8>"$E2E_ROOT/$1.lock"
	flock -n 8 || die "another $1 is in progress (lock $E2E_ROOT/$1.lock)"
}

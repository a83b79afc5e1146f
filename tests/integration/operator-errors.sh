#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Errors that say what to do, as an operator meets them in the first hour: a bad flag value is
# refused at start naming the flag and the value (a regular expression that does not compile, a
# fanotify refresh not shorter than its window), a --path.cgroupfs that is missing or not a
# cgroup directory exits 1 with the path, an unknown flag is one line and a pointer to --help
# (not the whole usage), a config entry that cannot match anything is a warning at load naming
# its key, and a run without the privileges to read the files is a warning that names a few of
# them, their count and what to run instead, in --once and in the daemon.
# Ends with "N passed, N failed, N skipped" (tests/lib/tap.sh).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck disable=SC2034 # read by start_exporter (tests/lib/tap.sh)
bin=$top/exporter/cachestat_exporter
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"

command -v curl >/dev/null || skip_suite "curl is not installed (see tests/integration/deps.txt)"
make -s -C "$top/exporter" >/dev/null || { fail "the exporter does not build"; finish; }
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$cg2" ] || skip_suite "no cgroup v2 mounted"
work=$(mktemp -d /tmp/cse-operr.XXXXXX)
chmod 755 "$work"
# shellcheck disable=SC2034 # read by start_exporter
log=$work/exporter.log
port=$(pick_port) || { fail "no free port"; finish; }
trap 'stop_exporter; rm -rf "$work"' EXIT
trap 'exit 1' INT TERM

# refused WHAT WANT_GREP ARGS...: the exporter exits 1 at once, its stderr one line that
# matches WANT_GREP (fixed string).
refused() {
	local what=$1 want=$2 rc lines
	shift 2
	timeout 10 "$bin" --once "$@" >/dev/null 2>"$work/err"
	rc=$?
	lines=$(wc -l <"$work/err")
	if [ "$rc" -eq 1 ] && [ "$lines" -eq 1 ] && grep -qF -- "$want" "$work/err"; then
		pass "$what: exit 1, one line: $(cat "$work/err")"
	else
		fail "$what: exit $rc, $lines line(s), want exit 1 and one line with '$want'"
		head -n 5 "$work/err" | sed 's/^/  | /'
	fi
}

# ---- flags ----
refused "an unknown flag" "--no-such-flag: unknown flag; see --help" --no-such-flag
refused "a flag without its value" "--path.cgroupfs: this flag needs a value; see --help" --path.cgroupfs
refused "a regular expression that does not compile, named with its flag and value" \
	'--collector.cachestat.fs-types-exclude: "(" is not an extended regular expression' \
	'--collector.cachestat.fs-types-exclude=('
refused "a fanotify refresh as long as the window, at start" \
	"--collector.fanotify.refresh=10 must be shorter than --collector.fanotify.window (10 s)" \
	--collector.fanotify.window=10 --collector.fanotify.refresh=10
refused "the refresh first, then a shorter window" \
	"--collector.fanotify.refresh=20 must be shorter than --collector.fanotify.window (10 s)" \
	--collector.fanotify.refresh=20 --collector.fanotify.window=10

# ---- the cgroup path ----
refused "a --path.cgroupfs that does not exist" "--path.cgroupfs=$work/nonexistent: No such file or directory" \
	--path.cgroupfs="$work/nonexistent"
refused "a --path.cgroupfs that is no cgroup directory" "--path.cgroupfs=$work: not a cgroup directory" \
	--path.cgroupfs="$work"
# the daemon too: it must not start, answer /-/ready and serve an empty node (timeout's 124: it ran)
timeout 10 "$bin" --web.listen-address="127.0.0.1:$port" --path.cgroupfs="$work/nonexistent" \
	>/dev/null 2>"$work/daemon.err"
eq "the daemon with a missing --path.cgroupfs exits 1 at start" "$?" 1

# ---- the config ----
cat >"$work/config.json" <<EOF
{ "cgroups": [
  { "match": "system.slice/*", "paths": ["/etc/hostname"] },
  { "match": "/system.slice/*", "paths": ["$work/no-such-file.db", "$work/*.none"] }
] }
EOF
"$bin" --once --path.cgroupfs="$cg2" --config.file="$work/config.json" >/dev/null 2>"$work/config.err"
check "a match without its leading slash is a warning naming its key and the fix" \
	grep -q 'level=WARN .*this match cannot meet any cgroup.*key=cgroups\[0\]\.match match=system.slice/\* did_you_mean=/system.slice/\*' "$work/config.err"
check "a configured path that does not exist is a warning naming its key and the path" \
	grep -q "level=WARN .*key=cgroups\[1\]\.paths\[0\] path=$work/no-such-file.db err=\"No such file or directory\"" "$work/config.err"
eq "a glob that matches nothing yet is not warned about" \
	"$(grep -c 'paths\[1\]' "$work/config.err")" 0
eq "a right match is not warned about" "$(grep -c 'cgroups\[1\]\.match' "$work/config.err")" 0

# ---- without the privileges to read the files ----
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
	skip "without privileges" "needs root to run the exporter as nobody, and setpriv"
else
	as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	cp "$bin" "$work/cachestat_exporter" && chmod 755 "$work/cachestat_exporter"
	"${as_nobody[@]}" "$work/cachestat_exporter" --once --path.cgroupfs="$cg2" >/dev/null 2>"$work/nobody.err"
	line=$(grep 'level=WARN .*files skipped: without the privileges' "$work/nobody.err")
	# the oracle: processes whose /proc/PID/fd nobody cannot list
	others=$(for d in /proc/[0-9]*; do "${as_nobody[@]}" test -r "$d/fd" 2>/dev/null || echo x; done | wc -l)
	check "--once as nobody: a WARN says what to run instead" grep -q 'run as root' <<<"$line"
	count=$(sed -n 's/.* count=\([0-9]*\).*/\1/p' <<<"$line")
	check "and counts the skipped ($count; $others processes nobody cannot list)" test "${count:-0}" -ge 1
	check "and names the first of them" grep -Eq 'first="?/proc/[0-9]+' <<<"$line"
	# the daemon: the warning once its first scan has run
	bin=$work/cachestat_exporter
	# shellcheck disable=SC2034 # read by start_exporter (tests/lib/tap.sh)
	wrap=("${as_nobody[@]}")
	if start_exporter --no-security.drop-privileges; then
		curl -s -o /dev/null "http://127.0.0.1:$port/metrics"
		for _ in $(seq 50); do grep -q 'files skipped: without the privileges' "$log" && break; sleep 0.1; done
		check "the daemon as nobody: the same WARN in its log" \
			grep -q 'level=WARN .*files skipped: without the privileges.*count=[1-9]' "$log"
		curl -s -o /dev/null "http://127.0.0.1:$port/metrics"
		sleep 0.5
		eq "said once, not at every scan" "$(grep -c 'files skipped: without the privileges' "$log")" 1
		stop_exporter
	fi
fi
finish

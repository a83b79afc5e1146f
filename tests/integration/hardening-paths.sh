#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Hardening of configured globs. A user who owns a directory a glob passes through
# (/srv/hst/*/logs/* and the user's /srv/hst/alice) links logs to a directory only root may read:
# root's 0600 file must be neither named nor counted, while the legitimate match of the same glob
# is, with the cached bytes fincore reports. A link in the literal prefix the operator wrote is
# followed. A directory on an excluded mount below the prefix is judged before it is read (its
# atime, the kernel's record of a read, stays put). A directory of many names costs what
# --collector.cachestat.max-glob-entries allows (the names read counted by strace's getdents64
# calls), the cut is counted and logged once; the scan's deadline stops a glob that matches
# nothing. A FIFO and a device matched in a directory only root can change are never opened. Each case runs --once over a cgroup subtree of its own whose root holds no process:
# only the configured paths count. Ends with "N passed, N failed, N skipped" (tests/lib/tap.sh).
set -uo pipefail
# shellcheck source=tests/integration/lib-hardening.sh
. "$(dirname "$0")/lib-hardening.sh"

hostile_ready || finish
export LC_ALL=C
# val SERIES FILE: the value of one series, named with its labels
val() { awk -v k="$1" 'index($0, k " ") == 1 { print substr($0, length(k) + 2); exit }' "$2"; }
# res FILE: its cached bytes by fincore, the kernel's answer through mincore
res() { fincore -b -n -o RES "$1" | tr -d ' '; }
ramfs=
trap 'if [ -n "$ramfs" ]; then umount "$ramfs"; fi; hardening_cleanup' EXIT

hostile_tree paths || { fail "no cgroup at $cg2"; finish; }
# conf NAME PATTERN [LIMITS]: a config assigning PATTERN to the subtree's root cgroup
conf() {
	printf '{ "per_file_top": 10000, "cgroups": [ { "match": "/", "paths": ["%s"] } ]%s }\n' \
		"$2" "${3:+, \"limits\": $3}" >"$work/$1.json"
}
# once NAME [FLAGS...]: one scan with config NAME into $work/NAME.prom and NAME.err
once() {
	local name=$1
	shift
	"$bin" --once --path.cgroupfs="$sub" --config.file="$work/$name.json" \
		--collector.perfile.families=cached,size "$@" >"$work/$name.prom" 2>"$work/$name.err"
}
files_of() { val 'cachestat_cgroup_files{cgroup="/"}' "$1"; }
skipped_of() { val "cachestat_files_skipped_total{reason=\"$1\"}" "$2"; }

# ==== the attack: a tenant's link in a globbed component ====
h=$work/hst
mkdir -p "$h/alice" "$h/bob/logs" "$work/rootonly"
chmod 700 "$work/rootonly"
head -c 40960 /dev/urandom >"$work/rootonly/secret.key"
chmod 600 "$work/rootonly/secret.key"
head -c 20480 /dev/urandom >"$h/bob/logs/app.log"
chown 65534 "$h/alice"
"${as_nobody[@]}" ln -s "$work/rootonly" "$h/alice/logs" ||
	fail "nobody could not plant the link in the directory it owns"
cat "$work/rootonly/secret.key" "$h/bob/logs/app.log" >/dev/null
app=$(res "$h/bob/logs/app.log") secret=$(res "$work/rootonly/secret.key")
echo "  | fincore: app.log $app bytes cached, root's secret.key $secret"
[ "${secret:-0}" -gt 0 ] || fail "root's file is not cached: the case proves nothing"
conf attack "$h/*/logs/*"
once attack
echo "  | --once: $(grep -E '^cachestat_(cgroup_files|file_cached_bytes)\{' "$work/attack.prom" | tr '\n' ' ')"
grep -q 'secret' "$work/attack.prom" && fail "attack: root's file is named through the link" ||
	pass "attack: root's file is not named"
eq "attack: only the legitimate match is counted" "$(files_of "$work/attack.prom")" 1
eq "attack: the cgroup's cached bytes are the legitimate file's (fincore)" \
	"$(val 'cachestat_cgroup_cached_bytes{cgroup="/"}' "$work/attack.prom")" "$app"
eq "attack: the match is named with its cached bytes (fincore)" \
	"$(val "cachestat_file_cached_bytes{cgroup=\"/\",path=\"$h/bob/logs/app.log\"}" "$work/attack.prom")" "$app"
[ "$(skipped_of not_regular "$work/attack.prom")" -ge 1 ] 2>/dev/null &&
	pass "attack: the link is counted as skipped (not_regular)" ||
	fail "attack: the link left no not_regular skip"

# ==== a link in the literal prefix is the operator's: followed ====
ln -s "$h" "$work/hstlink"
conf prefix "$work/hstlink/*/logs/*"
once prefix
eq "prefix: a link in the literal prefix is followed" \
	"$(val "cachestat_file_cached_bytes{cgroup=\"/\",path=\"$work/hstlink/bob/logs/app.log\"}" "$work/prefix.prom")" "$app"
eq "prefix: and still no link below it" "$(files_of "$work/prefix.prom")" 1

# ==== a match in a directory only root can change: only a regular file is opened ====
# (the sealed directory's cheaper path believes readdir's type: a FIFO or a device is never
# opened, inotify's IN_OPEN counts every open but O_PATH's)
mkdir -p "$work/sealed/x"
mkfifo "$work/sealed/x/pipe"
mknod "$work/sealed/x/null" c 1 3
head -c 8192 /dev/urandom >"$work/sealed/x/real.log"
"$py" "$hostile/watch_opens.py" "$work/sealed/x/pipe" "$work/sealed/x/null" "$work/sealed.stop" \
	>"$work/sealed.watch" &
watcher=$!
for _ in $(seq 100); do grep -q watching "$work/sealed.watch" && break; sleep 0.05; done
conf sealed "$work/sealed/*/*"
once sealed
touch "$work/sealed.stop"
wait "$watcher"
eq "sealed: the regular file is counted" "$(files_of "$work/sealed.prom")" 1
eq "sealed: the FIFO and the device are never opened" \
	"$(awk '$1 == "opens" { n += $3 } END { print n + 0 }' "$work/sealed.watch")" 0

# ==== a directory on another mount is judged before it is read ====
mkdir -p "$h/dave/logs"
if mount -t ramfs cse-paths "$h/dave/logs"; then
	ramfs=$h/dave/logs
	for f in a b c; do head -c 8192 /dev/urandom >"$ramfs/$f.log"; done
	touch -a -d '2001-01-01 00:00:00' "$ramfs"
	before=$(stat -c %X "$ramfs")
	conf excluded_mount "$h/*/logs/*"
	once excluded_mount --collector.cachestat.fs-types-exclude='^ramfs$'
	eq "mount: the directory on an excluded mount is not read (its atime)" "$(stat -c %X "$ramfs")" "$before"
	eq "mount: judged once, as a directory, not file by file" \
		"$(skipped_of fs_type "$work/excluded_mount.prom")" 1
	eq "mount: the rest of the glob is counted" "$(files_of "$work/excluded_mount.prom")" 1
	conf mount_allowed "$h/*/logs/*"
	once mount_allowed
	eq "mount: not excluded, the mount crossed is read" "$(files_of "$work/mount_allowed.prom")" 4
	umount "$ramfs" && ramfs=
else
	skip "mount judgement" "ramfs cannot be mounted here"
fi

# ==== the cap: a directory of many names costs what the cap allows ====
many=12000 cap=1000
mkdir "$work/big"
"$py" - "$work/big" "$many" <<'EOF' || fail "could not make the names"
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    fd = os.open(f"{d}/f{i:06d}", os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b"x")  # one cached page each: a file with a per-file series
    os.close(fd)
EOF
conf cap "$work/big/*"
# getdents64 calls: the names the scan read, counted by strace (32 KiB, about 1,000 names, a call)
traced() {
	local name=$1
	shift
	if command -v strace >/dev/null; then
		strace -f -qq -e trace=getdents64 -o "$work/$name.strace" "$bin" --once --path.cgroupfs="$sub" \
			--config.file="$work/cap.json" "$@" >"$work/$name.prom" 2>"$work/$name.err"
		grep -c 'getdents64(.* = [1-9]' "$work/$name.strace"
	else
		once cap "$@" && cp "$work/cap.prom" "$work/$name.prom" && cp "$work/cap.err" "$work/$name.err"
		echo 0
	fi
}
calls_full=$(traced full)
calls_cap=$(traced capped --collector.cachestat.max-glob-entries="$cap")
echo "  | getdents64 calls returning names: $calls_full with the default cap, $calls_cap with $cap"
eq "cap: the default reads every name" "$(files_of "$work/full.prom")" "$many"
eq "cap: not counted when it does not bite" \
	"$(metric cachestat_scan_globs_capped_total "$work/full.prom")" 0
eq "cap: counted" "$(metric cachestat_scan_globs_capped_total "$work/capped.prom")" 1
eq "cap: the files counted stop at the cap" "$(files_of "$work/capped.prom")" "$cap"
n=$(grep -c '^cachestat_file_cached_bytes{' "$work/capped.prom")
[ "$n" -gt 0 ] && [ "$n" -le "$cap" ] && pass "cap: per-file series bounded ($n)" || fail "cap: $n per-file series over the cap $cap"
eq "cap: one log line names the pattern" \
	"$(grep -c "a configured glob stopped at its cap.*pattern=$work/big/\*" "$work/capped.err")" 1
if command -v strace >/dev/null; then
	[ "$calls_cap" -gt 0 ] && [ $((calls_cap * 3)) -le "$calls_full" ] &&
		pass "cap: the names read stop at the cap ($calls_cap getdents64 calls, $calls_full uncapped)" ||
		fail "cap: $calls_cap getdents64 calls under the cap, $calls_full without: not bounded"
else
	skip "cap: names read" "strace is not installed"
fi

# ==== the deadline is asked while expanding: a glob that matches nothing stops too ====
conf deadline "$work/big/nothing*" '{ "max_scan_seconds": 0.001 }'
once deadline
eq "deadline: the scan is cut inside the glob" \
	"$(val 'cachestat_scrape_collector_success{collector="cachestat"}' "$work/deadline.prom")" 0
grep -q 'scan cut at limits.max_scan_seconds' "$work/deadline.err" &&
	pass "deadline: the cut is logged" || fail "deadline: no 'scan cut' line"

# ==== the daemon: the cap logged once over three scans, the counter climbs ====
if start_exporter --path.cgroupfs="$sub" --config.file="$work/cap.json" \
	--collector.cachestat.max-glob-entries="$cap"; then
	for i in 1 2 3; do curl -s -m 20 -o "$work/d$i.prom" "$base/metrics"; done
	eq "daemon: the cap counted per scan" "$(metric cachestat_scan_globs_capped_total "$work/d3.prom")" 3
	eq "daemon: logged once over three scans" "$(grep -c 'a configured glob stopped at its cap' "$log")" 1
	kill -0 "$exporter_pid" 2>/dev/null && pass "daemon still running" || fail "the daemon died"
	stop_exporter
fi
finish

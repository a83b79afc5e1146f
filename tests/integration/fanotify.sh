#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fanotify collector on the build machine (real kernel, real cgroups, a real ext4).
#
# A process in a cgroup reads half of each of 200 files and closes them, then stays, holding
# none of them. The next scrape must count their cached bytes for that cgroup within 5% of what
# fincore (mincore(2), independent of the exporter) says they hold, and count them once. Without
# the collector the same files count nothing (the check above would fail), a deleted one is
# skipped as vanished, and without CAP_SYS_ADMIN the collector fails while the daemon serves.
# Silencing (--collector.fanotify.refresh): a file opened in a loop makes a few events a period,
# not one per open (the loop's own count of its opens, and the ignore mark on its inode that the
# kernel lists in the group's fdinfo, are the oracles), its cgroup still counts it within 5% of
# fincore, a second cgroup that opens it after a refresh counts it too and one that opens it
# before does not, a silenced file deleted frees its blocks at once (df) and loses its mark, and
# with refresh=0 every open is an event again.
# The watched file system is a loop-mounted ext4 of its own (--collector.fanotify.filesystems),
# so that the host's other opens neither flood the queue nor fill the sets.
# Ends with "N passed, N failed, N skipped" (tests/lib/tap.sh).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck disable=SC2034 # read by start_exporter (tests/lib/tap.sh)
bin=${CACHESTAT_EXPORTER:-$top/exporter/cachestat_exporter}
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"

[ "$(id -u)" -eq 0 ] || skip_suite "needs root to make cgroups and mount a file system"
for tool in promtool curl fincore python3 mkfs.ext4 setpriv; do
	command -v "$tool" >/dev/null || skip_suite "$tool is not installed (see tests/integration/deps.txt)"
done
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$cg2" ] || skip_suite "no cgroup v2 mounted"
# built every time (make does nothing when it is up to date): make mutate changes a source under it
if [ -z "${CACHESTAT_EXPORTER:-}" ]; then
	make -s -C "$top/exporter" >/dev/null || { fail "the exporter does not build"; finish; }
fi

name=cse-fa-$$
parent=$cg2/$name # the reader runs in its child r: the parent's subtree is the reader's files
cg=$parent/r
label=/$name/r
work=$(mktemp -d /var/tmp/cse-fa.XXXXXX)
mnt=$work/mnt
log=$work/exporter.log
port=$(pick_port)
reader_pid=
loop_pids=()
mounted=

cleanup() {
	stop_exporter
	if [ -n "$reader_pid" ]; then
		kill "$reader_pid" 2>/dev/null
		wait "$reader_pid" 2>/dev/null
	fi
	for p in "${loop_pids[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	[ -n "$mounted" ] && umount "$mnt"
	for c in "$parent/s" "$parent/t" "$parent/drop"; do
		[ -d "$c" ] && rmdir "$c" 2>/dev/null
	done
	[ -d "$cg" ] && rmdir "$cg" 2>/dev/null
	[ -d "$parent" ] && rmdir "$parent" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir "$parent" 2>/dev/null || skip_suite "cgroup v2 at $cg2 is not writable"
mkdir "$cg"
mkdir "$mnt"
truncate -s 96M "$work/fs.img"
mkfs.ext4 -q "$work/fs.img" || skip_suite "mkfs.ext4 failed"
mount -o loop "$work/fs.img" "$mnt" 2>/dev/null || skip_suite "cannot mount a loop device here"
mounted=1

# 200 files of different sizes, none a multiple of the page, written and then dropped from the
# cache (fadvise), so that what is cached afterwards is what the reader read.
python3 - "$mnt" <<'EOF'
import os, sys
d = sys.argv[1]
for i in range(200):
    p = os.path.join(d, "f%03d.bin" % i)
    with open(p, "wb") as f:
        f.write(os.urandom(20000 + 997 * i))
        f.flush()
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
EOF
files=("$mnt"/f*.bin)
eq "files made" "${#files[@]}" 200

scrape() { curl -sf "http://127.0.0.1:$port/metrics"; }
value() { # value METRIC: its sample for our cgroup, or nothing
	scrape | awk -v m="$1{cgroup=\"$label\"}" '$1 == m { print $2 }'
}
fincore_sum() { fincore -b -n -o RES "${files[@]}" | awk '{ s += $1 } END { print s + 0 }'; }
# held_sum: fincore's bytes of the regular files the reader holds (mapped, or open: its
# interpreter, libraries and inherited stdout), which its cgroup counts with or without the
# collector. Their residency moves with what the host runs (another python touches other pages
# of the same interpreter), so it is measured at each scrape rather than taken as constant.
held_sum() {
	local f p
	{
		awk '$6 ~ /^\// { print $6 }' "/proc/$reader_pid/maps"
		for f in /proc/"$reader_pid"/fd/*; do
			p=$(readlink "$f") && echo "$p"
		done
	} | sort -u | while IFS= read -r p; do [ -f "$p" ] && printf '%s\0' "$p"; done |
		xargs -0 -r fincore -b -n -o RES | awk '{ s += $1 } END { print s + 0 }'
}
within() { # within GOT WANT PERCENT
	awk -v g="$1" -v w="$2" -v p="$3" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(w > 0 && d <= w * p / 100) }'
}

# ---- with the collector ----
echo '{ "per_file_top": 400 }' >"$work/config.json" # every file of the cgroup has its series
start_exporter --collector.fanotify --collector.fanotify.filesystems="$mnt" \
	--config.file="$work/config.json" --no-security.drop-privileges || finish
scrape >/dev/null # the first scan starts the listener's thread
eq "the ext4 is the one file system marked" \
	"$(scrape | awk '$1 == "cachestat_fanotify_filesystems_marked" { print $2 }')" 1

# The reader: into the cgroup, half of each file, closed; then it stays and holds none of them.
python3 - "$cg" "$work/done" "${files[@]}" <<'EOF' &
import os, sys, time
with open(os.path.join(sys.argv[1], "cgroup.procs"), "w") as f:
    f.write(str(os.getpid()))
for p in sys.argv[3:]:
    with open(p, "rb") as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)  # no readahead past the half
        f.read(os.path.getsize(p) // 2)
open(sys.argv[2], "w").close()
time.sleep(600)
EOF
reader_pid=$!
for _ in $(seq 100); do [ -e "$work/done" ] && break; sleep 0.1; done
check "the reader read its 200 files" test -e "$work/done"

recent=
for _ in $(seq 50); do # the listener is asynchronous: wait for it, not for a fixed time
	recent=$(value cachestat_cgroup_recent_only_files)
	[ "${recent:-0}" -ge 200 ] && break
	sleep 0.2
done
eq "files counted only because the cgroup opened them recently" "$recent" 200
want=$(fincore_sum)
held_with=$(held_sum)
out=$(scrape)
# the oracles again, right after the scrape: the exporter's figures fall between the two
files_with=("$want" "$(fincore_sum)")
held_with=("$held_with" "$(held_sum)")
got=$(awk -v m="cachestat_cgroup_recent_only_cached_bytes{cgroup=\"$label\"}" '$1 == m { print $2 }' <<<"$out")
total_with=$(awk -v m="cachestat_cgroup_cached_bytes{cgroup=\"$label\"}" '$1 == m { print $2 }' <<<"$out")
check "their cached bytes ($got) are within 5% of fincore's $want" within "${got:-0}" "$want" 5
check "fincore sees the halves read, not the whole files (the oracle can tell)" \
	test "$want" -lt "$(du -cb "${files[@]}" | tail -n 1 | cut -f1)"
check "promtool check metrics finds nothing" promtool check metrics <<<"$out"
one=${files[150]}
eq "a recent file has its per-file series, by its path, with fincore's bytes" \
	"$(awk -v m="cachestat_file_cached_bytes{cgroup=\"$label\",path=\"$one\"}" '$1 == m { print $2 }' <<<"$out")" \
	"$(fincore -b -n -o RES "$one")"
sub=$(awk -v m="cachestat_cgroup_subtree_cached_bytes{cgroup=\"/$name\"}" '$1 == m { print $2 }' <<<"$out")
eq "the parent's subtree total is its only child's, recent files included" "${sub:-none}" "$total_with"
events=$(awk '$1 == "cachestat_fanotify_events_total" { print $2 }' <<<"$out")
check "at least 200 open events were read ($events)" test "${events:-0}" -ge 200
eq "no queue overflow" "$(awk '$1 == "cachestat_fanotify_queue_overflows_total" { print $2 }' <<<"$out")" 0

# A file deleted since: its handle is stale, it is skipped as vanished and no longer counted.
vanished() { scrape | awk '$1 == "cachestat_files_skipped_total{reason=\"vanished\"}" { print $2 }'; }
before=$(vanished)
rm "${files[0]}"
files=("${files[@]:1}")
eq "a deleted file is no longer counted" "$(value cachestat_cgroup_recent_only_files)" 199
check "and is counted as vanished" test "$(vanished)" -gt "$before"

# ---- silencing: a file opened over and over ----
metric() { scrape | awk -v m="$1" '$1 == m { print $2 }'; }
metric_of() { # metric_of METRIC CGROUP [PATH]: its sample for that cgroup (and file), or nothing
	local sel="cgroup=\"$2\""
	[ $# -gt 2 ] && sel="$sel,path=\"$3\""
	scrape | awk -v m="$1{$sel}" '$1 == m { print $2 }'
}
# The inode marks of the exporter's fanotify group, as the kernel lists them (fdinfo).
# shellcheck disable=SC2154 # exporter_pid: set by start_exporter (tests/lib/tap.sh)
inode_marks() {
	local p f
	for p in "$exporter_pid" $(pgrep -P "$exporter_pid"); do
		for f in /proc/"$p"/fd/*; do
			[ "$(readlink "$f" 2>/dev/null)" = "anon_inode:[fanotify]" ] &&
				grep '^fanotify ino:' "/proc/$p/fdinfo/${f##*/}"
		done
	done
	return 0
}
# ignore_mark INODE: the group has an ignore mark for FAN_OPEN (0x20) on that inode number.
ignore_mark() { inode_marks | grep -Eq "^fanotify ino:$(printf %x "$1") .*ignored_mask:20( |$)"; }
no_ignore_mark() { ! ignore_mark "$1"; }
wait_for() { # wait_for TENTHS COMMAND...: until COMMAND succeeds, for at most TENTHS tenths of a second
	local n=$1
	shift
	for _ in $(seq "$n"); do
		"$@" && return 0
		sleep 0.1
	done
	"$@"
}
gt() { [ "${1:-0}" -gt "${2:-0}" ]; }

# Credentials at the time of the open: a process opens a file as root, drops to nobody, then
# opens a root-owned 0644 file. Judged as nobody (neither its owner nor a writer), the second is
# not its recent file; root's credentials must not be carried over to it. The listener reads the
# credentials when it handles an event, so the process drops only once the first open is counted
# (the file "go"): a drop before that would have the root open judged as nobody's, which is safe
# but not what this case checks.
mkdir "$parent/drop"
head -c 65536 /dev/urandom >"$mnt/first.bin"
head -c 65536 /dev/urandom >"$mnt/after-drop.bin"
chmod 0644 "$mnt/first.bin" "$mnt/after-drop.bin"
events0=$(metric cachestat_fanotify_events_total)
python3 - "$parent/drop" "$work/dropped" "$mnt/first.bin" "$mnt/after-drop.bin" "$(id -u nobody)" \
	"$(id -g nobody)" "$work/go" <<'EOF' &
import os, sys, time
with open(os.path.join(sys.argv[1], "cgroup.procs"), "w") as f:
    f.write(str(os.getpid()))
done = open(sys.argv[2], "w")  # opened as root: written once the second file is read
mnt = os.open(os.path.dirname(sys.argv[4]), os.O_RDONLY | os.O_DIRECTORY)
with open(sys.argv[3], "rb") as f:
    f.read()
while not os.path.exists(sys.argv[7]):
    time.sleep(0.05)
uid, gid = int(sys.argv[5]), int(sys.argv[6])
os.setgroups([])
os.setresgid(gid, gid, gid)
os.setresuid(uid, uid, uid)
fd = os.open(os.path.basename(sys.argv[4]), os.O_RDONLY, dir_fd=mnt)  # $work is root's alone
os.read(fd, 1 << 20)
os.close(fd)
done.write("1")
done.close()
time.sleep(600)
EOF
loop_pids+=($!)
seen_first() { [ "$(metric cachestat_fanotify_events_total)" -ge $((events0 + 1)) ]; }
wait_for 100 seen_first
touch "$work/go"
seen_both() { [ -s "$work/dropped" ] && [ "$(metric cachestat_fanotify_events_total)" -ge $((events0 + 2)) ]; }
wait_for 100 seen_both
check "the listener read both opens of the process that dropped root" seen_both
eq "opened as root: its recent file" \
	"$(metric_of cachestat_file_cached_bytes "/$name/drop" "$mnt/first.bin")" \
	"$(fincore -b -n -o RES "$mnt/first.bin")"
eq "opened after dropping to nobody: not its file (judged with the credentials it had then)" \
	"$(metric_of cachestat_file_cached_bytes "/$name/drop" "$mnt/after-drop.bin")" ""
# looper CGROUP DONE COUNT INTERVAL FILE: in the background, COUNT opens of FILE (each read in
# full, then closed) INTERVAL seconds apart, by a process in CGROUP that then writes how many it
# made to DONE and stays, holding nothing.
looper() {
	python3 - "$@" <<'PY' &
import os, sys, time
cg, done, count, interval, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
with open(os.path.join(cg, "cgroup.procs"), "w") as f:
    f.write(str(os.getpid()))
n = 0
for _ in range(count):
    with open(path, "rb") as f:
        f.read()
    n += 1
    time.sleep(interval)
with open(done, "w") as f:
    f.write("%d\n" % n)
time.sleep(600)
PY
	loop_pids+=($!)
}
stop_loopers() {
	[ "${#loop_pids[@]}" -gt 0 ] || return 0
	kill "${loop_pids[@]}" 2>/dev/null
	wait "${loop_pids[@]}" 2>/dev/null
	loop_pids=()
}
mkdir "$parent/s" "$parent/t"
label_s=/$name/s
label_t=/$name/t
hot=$mnt/hot.bin
big=$mnt/big.bin
python3 - "$hot" "$big" <<'PY'
import os, sys
for p, size in ((sys.argv[1], 300000), (sys.argv[2], 24 << 20)):
    with open(p, "wb") as f:
        f.write(os.urandom(size))
        f.flush()
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
PY
hot_ino=$(stat -c %i "$hot")
big_ino=$(stat -c %i "$big")

# A period of 1 s; 4 s of opens 10 ms apart, time enough for the listener to mark the file after
# its second open in each period, even on a busy machine.
start_exporter --collector.fanotify --collector.fanotify.filesystems="$mnt" \
	--collector.fanotify.refresh=1 --config.file="$work/config.json" --no-security.drop-privileges || finish
scrape >/dev/null
eq "silencing is on" "$(metric cachestat_fanotify_silence_enabled)" 1
ev0=$(metric cachestat_fanotify_events_total)
rf0=$(metric cachestat_fanotify_silence_refreshes_total)
looper "$parent/s" "$work/s.done" 400 0.01 "$hot"
check "while the loop runs, the kernel lists an ignore mark on its file's inode" wait_for 30 ignore_mark "$hot_ino"
wait_for 100 test -s "$work/s.done"
opens=$(cat "$work/s.done" 2>/dev/null)
ev1=$(metric cachestat_fanotify_events_total)
rf1=$(metric cachestat_fanotify_silence_refreshes_total)
periods=$((rf1 - rf0 + 1))
check "the loop's ${opens:-0} opens made at most 4 events a period ($((ev1 - ev0)) in $periods periods)" \
	test "$((ev1 - ev0))" -le "$((4 * periods))"
check "each refresh let the next open be seen: at least one event a period ($((ev1 - ev0)) in $periods)" \
	test "$((ev1 - ev0))" -ge "$((periods - 1))"
check "the loop spanned refreshes ($((rf1 - rf0)))" test "$((rf1 - rf0))" -ge 2
got=$(metric_of cachestat_file_cached_bytes "$label_s" "$hot")
want=$(fincore -b -n -o RES "$hot")
check "its cgroup, holding it no more, counts it within 5% of fincore (${got:-none} vs $want)" \
	within "${got:-0}" "$want" 5
check "after a refresh the kernel lists no ignore mark on it" wait_for 30 no_ignore_mark "$hot_ino"
# Another cgroup opens it once, after a refresh that followed the loop's last open.
rf2=$(metric cachestat_fanotify_silence_refreshes_total)
wait_for 30 gt "$(metric cachestat_fanotify_silence_refreshes_total)" "$rf2"
looper "$parent/t" "$work/t.done" 1 0 "$hot"
wait_for 50 test -s "$work/t.done"
wait_for 30 test -n "$(metric_of cachestat_file_cached_bytes "$label_t" "$hot")"
got=$(metric_of cachestat_file_cached_bytes "$label_t" "$hot")
check "a second cgroup that opens it after a refresh counts it within 5% of fincore (${got:-none} vs $want)" \
	within "${got:-0}" "$want" 5
check "promtool check metrics finds nothing" promtool check metrics <<<"$(scrape)"
stop_loopers

# A long period: another cgroup's open of a silenced file is not seen before the refresh, and a
# silenced file deleted is freed at once, its mark gone with it. (The kernel drops every mark of
# an inode whose last link goes, evictable or not: what FAN_MARK_EVICTABLE adds, that the marks
# do not pin inodes against reclaim, would take a host-wide drop_caches to show.)
start_exporter --collector.fanotify --collector.fanotify.filesystems="$mnt" \
	--collector.fanotify.window=3600 --collector.fanotify.refresh=600 \
	--config.file="$work/config.json" --no-security.drop-privileges || finish
scrape >/dev/null
looper "$parent/s" "$work/s2.done" 20 0.01 "$big"
wait_for 100 test -s "$work/s2.done"
check "the kernel lists an ignore mark on the big file's inode" wait_for 30 ignore_mark "$big_ino"
ev0=$(metric cachestat_fanotify_events_total)
looper "$parent/t" "$work/t2.done" 1 0 "$big"
wait_for 50 test -s "$work/t2.done"
sleep 0.5 # the listener is asynchronous: an event would have been read by now
eq "another cgroup's open of it before the refresh makes no event" \
	"$(metric cachestat_fanotify_events_total)" "$ev0"
eq "and it is not counted for that cgroup (the price of silencing)" \
	"$(metric_of cachestat_file_cached_bytes "$label_t" "$big")" ""
used0=$(df -B1 --output=used "$mnt" | tail -n 1)
rm "$big"
sync
freed() { [ "$((used0 - $(df -B1 --output=used "$mnt" | tail -n 1)))" -ge $((20 << 20)) ]; }
check "deleted, its 24 MiB are freed at once (df): the mark does not keep the file" wait_for 30 freed
check "and the kernel lists no mark on its inode any more" no_ignore_mark "$big_ino"
eq "no refresh did it" "$(metric cachestat_fanotify_silence_refreshes_total)" 0
eq "no mark failed" "$(metric cachestat_fanotify_silence_errors_total)" 0
stop_loopers

# --collector.fanotify.refresh=0: every open is an event again, and no file gets a mark.
start_exporter --collector.fanotify --collector.fanotify.filesystems="$mnt" \
	--collector.fanotify.refresh=0 --config.file="$work/config.json" --no-security.drop-privileges || finish
scrape >/dev/null
eq "with refresh=0 silencing is off" "$(metric cachestat_fanotify_silence_enabled)" 0
ev0=$(metric cachestat_fanotify_events_total)
looper "$parent/s" "$work/s3.done" 300 0.005 "$hot"
wait_for 100 test -s "$work/s3.done"
sleep 0.5
ev1=$(metric cachestat_fanotify_events_total)
opens=$(cat "$work/s3.done" 2>/dev/null)
check "its ${opens:-0} opens made as many events, less what the kernel merged in its queue ($((ev1 - ev0)), at least 90%)" \
	test "$((ev1 - ev0))" -ge "$((${opens:-1000} * 9 / 10))"
eq "the kernel lists no inode mark" "$(inode_marks | wc -l)" 0
stop_loopers

# A refresh not shorter than the window: refused at start, naming both flags, whichever comes first.
for order in "--collector.fanotify.window=10 --collector.fanotify.refresh=10" \
	"--collector.fanotify.refresh=20 --collector.fanotify.window=10"; do
	# shellcheck disable=SC2086 # the two flags, split
	err=$(timeout 10 "$bin" --once --collector.fanotify $order 2>&1 >/dev/null)
	rc=$?
	eq "a refresh as long as the window is refused at start ($order)" "$rc" 1
	check "and the message names both flags" grep -q -- "--collector.fanotify.refresh=.* must be shorter than --collector.fanotify.window" <<<"$err"
done

# ---- without the collector: the same files count nothing ----
start_exporter --no-security.drop-privileges || finish
held_without=$(held_sum)
out=$(scrape)
held_without=("$held_without" "$(held_sum)")
total_without=$(awk -v m="cachestat_cgroup_cached_bytes{cgroup=\"$label\"}" '$1 == m { print $2 }' <<<"$out")
eq "without the collector there is no recent-only series" \
	"$(grep -c "^cachestat_cgroup_recent_only_cached_bytes{cgroup=\"$label\"}" <<<"$out")" 0
# The two scrapes are minutes apart, and the files the reader holds (its interpreter and
# libraries) change residency meanwhile with what else the host runs: each total is set against
# fincore of that moment, the files read plus the files held, bounded by the oracles taken just
# before and just after each scrape. What the collector adds is total_with - total_without less
# the held files' own change; it must be fincore's bytes of the files read, within 5% or 1 MiB.
read -r lo hi < <(printf '%s\n' "${files_with[@]}" "${held_with[@]}" "${held_without[@]}" | xargs |
	awk '{ f_lo = $1 < $2 ? $1 : $2; f_hi = $1 + $2 - f_lo; h_lo = $3 < $4 ? $3 : $4; h_hi = $3 + $4 - h_lo
	       w_lo = $5 < $6 ? $5 : $6; w_hi = $5 + $6 - w_lo
	       print f_lo + h_lo - w_hi, f_hi + h_hi - w_lo }')
# between GOT LO HI: GOT lies in [LO, HI] widened by 5% of HI or 1 MiB, whichever is more; both
# scrapes must have answered and the reader must still hold its files (else HI is not theirs)
between() {
	[ -n "$total_with" ] && [ -n "$total_without" ] && kill -0 "$reader_pid" 2>/dev/null || return 1
	awk -v g="$1" -v lo="$2" -v hi="$3" 'BEGIN { t = hi * 5 / 100; if (t < 1048576) t = 1048576
		exit !(hi > 0 && g >= lo - t && g <= hi + t) }'
}
check "without it the cgroup's cached bytes lack the files ($total_with - $total_without vs fincore's $lo..$hi: files read ${files_with[*]}, held ${held_with[*]} then ${held_without[*]}; within 5% or 1 MiB)" \
	between "$((${total_with:-0} - ${total_without:-0}))" "$lo" "$hi"
if between 0 "$lo" "$hi"; then
	fail "the files' share without the collector (0) passes the check: the check cannot fail"
else
	pass "the files' share without the collector (0) fails the check: the check can fail"
fi
check "and without it the cgroup counts what its process holds ($total_without vs fincore's ${held_without[*]}, within 5% or 1 MiB)" \
	between "$total_without" "$(printf '%s\n' "${held_without[@]}" | sort -n | head -n 1)" \
	"$(printf '%s\n' "${held_without[@]}" | sort -n | tail -n 1)"

# ---- without CAP_SYS_ADMIN: the collector fails, the daemon serves ----
# shellcheck disable=SC2034 # read by start_exporter (tests/lib/tap.sh)
wrap=(setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin)
if start_exporter --collector.fanotify --no-security.drop-privileges; then
	out=$(scrape) || {
		echo "# the scrape failed: $(curl -s -o /dev/null -w 'HTTP %{http_code}' "http://127.0.0.1:$port/metrics")"
		sed 's/^/#  | /' "$log"
	}
	eq "without CAP_SYS_ADMIN the collector reports failure" \
		"$(awk '$1 == "cachestat_scrape_collector_success{collector=\"fanotify\"}" { print $2 }' <<<"$out")" 0
	check "and the other collectors still serve" grep -q "^cachestat_cgroup_cached_bytes{cgroup=\"$label\"}" <<<"$out"
	check "the log says why" grep -q "fanotify" "$log"
fi
finish

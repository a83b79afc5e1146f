#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fanotify collector on the build machine (real kernel, real cgroups, a real ext4).
#
# A process in a cgroup reads half of each of 200 files and closes them, then stays, holding
# none of them. The next scrape must count their cached bytes for that cgroup within 5% of what
# fincore (mincore(2), independent of the exporter) says they hold, and count them once. Without
# the collector the same files count nothing (the check above would fail), a deleted one is
# skipped as vanished, and without CAP_SYS_ADMIN the collector fails while the daemon serves.
# The watched file system is a loop-mounted ext4 of its own (--collector.fanotify.filesystems),
# so that the host's other opens neither flood the queue nor fill the sets.
# Ends with "N passed, N failed, N skipped" (tests/lib/tap.sh).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
bin=${CACHESTAT_EXPORTER:-$top/exporter/cachestat_exporter}
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"

[ "$(id -u)" -eq 0 ] || skip_suite "needs root to make cgroups and mount a file system"
for tool in promtool curl fincore python3 mkfs.ext4 setpriv; do
	command -v "$tool" >/dev/null || skip_suite "$tool is not installed (see tests/integration/deps.txt)"
done
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$cg2" ] || skip_suite "no cgroup v2 mounted"
if [ ! -x "$bin" ]; then
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
mounted=

cleanup() {
	stop_exporter
	if [ -n "$reader_pid" ]; then
		kill "$reader_pid" 2>/dev/null
		wait "$reader_pid" 2>/dev/null
	fi
	[ -n "$mounted" ] && umount "$mnt"
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
out=$(scrape)
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

# ---- without the collector: the same files count nothing ----
start_exporter --no-security.drop-privileges || finish
out=$(scrape)
total_without=$(awk -v m="cachestat_cgroup_cached_bytes{cgroup=\"$label\"}" '$1 == m { print $2 }' <<<"$out")
eq "without the collector there is no recent-only series" \
	"$(grep -c "^cachestat_cgroup_recent_only_cached_bytes{cgroup=\"$label\"}" <<<"$out")" 0
want=$(fincore_sum)
check "without it the cgroup's cached bytes lack the files ($total_with - $total_without vs fincore's $want, within 5%)" \
	within "$((total_with - total_without))" "$want" 5
if within 0 "$want" 5; then
	fail "the files' share without the collector (0) passes the 5% check: the check cannot fail"
else
	pass "the files' share without the collector (0) fails the 5% check: the check can fail"
fi

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

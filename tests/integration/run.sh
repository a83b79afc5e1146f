#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Integration test of cachestat_exporter on the build machine itself (real kernel, real cgroups).
#
# Makes cgroups below the cgroup v2 mount, runs processes there that hold files open (one of
# them deleted, one with a name full of characters that need escaping, one written and not
# synced), assigns a directory to one cgroup by config, and checks what the exporter says over
# HTTP and with --once, against the file sizes and an independent count (fincore, mincore-based).
# Ends with "N passed, N failed, N skipped" (tests/lib/tap.sh); skips with a reason where it cannot run.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
bin=${CACHESTAT_EXPORTER:-$top/exporter/cachestat_exporter}
page=$(getconf PAGESIZE)
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"

[ "$(id -u)" -eq 0 ] || skip_suite "needs root to make cgroups"
for tool in promtool curl jq busybox fincore ss; do
	command -v "$tool" >/dev/null || skip_suite "$tool is not installed (see tests/integration/deps.txt)"
done

# The cgroup v2 mount: /sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a hybrid one.
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$cg2" ] || skip_suite "no cgroup v2 mounted"
name=cse-it-$$
cga=$cg2/$name
mkdir "$cga" 2>/dev/null || skip_suite "cgroup v2 at $cg2 is not writable"

if [ ! -x "$bin" ]; then
	make -s -C "$top/exporter" >/dev/null || { rmdir "$cga"; fail "the exporter does not build"; finish; }
fi

work=$(mktemp -d /var/tmp/cse-it.XXXXXX)
pids=()

cleanup() {
	local p
	[ -n "$exporter_pid" ] && kill "$exporter_pid" 2>/dev/null
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}" $exporter_pid; do
		while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
	done
	for d in "$cga/b" "$cga"; do
		[ -d "$d" ] && rmdir "$d" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir "$cga/b" 2>/dev/null || true
# v2 forbids processes in a cgroup with children that has controllers enabled; ours has none.

# ---- the files ----
data=$work/data.bin                 # known size, not page aligned, clean and fully cached
dd if=/dev/urandom of="$data" bs=1000 count=1237 conv=fsync status=none
data_size=$(stat -c %s "$data")
cat "$data" >/dev/null
weird=$work/$'we"i\\rd\nname\xff\xc3(.dat'
head -c 5000 /dev/urandom >"$weird"
cat "$weird" >/dev/null
del=$work/deleted.bin
dd if=/dev/urandom of="$del" bs=4096 count=50 conv=fsync status=none
cat "$del" >/dev/null
dirty=$work/dirty.bin
: >"$dirty"
mkdir -p "$work/assigned/sub" "$work/assigned/other"
dd if=/dev/urandom of="$work/assigned/a.bin" bs=4096 count=10 conv=fsync status=none
dd if=/dev/urandom of="$work/assigned/sub/b.bin" bs=4096 count=3 conv=fsync status=none
ln -s "$data" "$work/assigned/link-to-data"   # not followed in a directory walk
mkfifo "$work/assigned/fifo"                  # must not hang the scan
cat "$work"/assigned/a.bin "$work"/assigned/sub/b.bin >/dev/null

roundup() { echo $((($1 + page - 1) / page * page)); }

# A holder: moves itself into the cgroup, opens the files, then sleeps. busybox is static, so
# the only mapping it adds is its own binary.
start_holder() { # start_holder CGROUP_DIR SCRIPT
	local cg=$1 script=$2
	DATA=$data WEIRD=$weird DEL=$del DIRTY=$dirty CG=$cg \
		busybox sh -c "echo \$\$ > \"\$CG/cgroup.procs\" || exit 1; $script; exec busybox sleep 600" \
		</dev/null >/dev/null 2>&1 &
	pids+=($!)
}
start_holder "$cga" 'exec 3<"$DATA" 4<"$WEIRD" 5<"$DEL" 6>>"$DIRTY"'
start_holder "$cga/b" 'exec 3<"$DATA"'
# wait until both sit in their cgroups with the files open
for _ in $(seq 100); do
	[ -e "/proc/${pids[0]}/fd/6" ] && [ -e "/proc/${pids[1]}/fd/3" ] &&
		grep -qx "${pids[0]}" "$cga/cgroup.procs" && grep -qx "${pids[1]}" "$cga/b/cgroup.procs" && break
	sleep 0.05
done
rm "$del"                                     # deleted, still open: still holds page cache
head -c 300000 /dev/zero >>"/proc/${pids[0]}/fd/6"   # written, not synced: dirty
dirty_size=300000

label=/$name
config=$work/config.json
cat >"$config" <<JSON
{
  "cgroups": [ { "match": "/cse-it-*", "paths": ["$work/assigned", "$work/nothing-here/*.x"] } ],
  "per_file_top": 10,
  "limits": { "max_scan_seconds": 20 }
}
JSON

# Every per-file family, deleted files named: these cases check each against its oracle (the
# defaults, fewer, are checked apart below).
all_files=("--collector.perfile.families=cached,dirty,writeback,evicted,recently_evicted,size"
	--collector.perfile.unlinked=keep)

# ---- the daemon ----
port=$(pick_port 29451) || { fail "no free port from 29451"; finish; }
# shellcheck disable=SC2034 # read by start_exporter (tests/lib/tap.sh)
log=$work/exporter.log
start_exporter --config.file="$config" "${all_files[@]}"
metrics=$work/metrics.prom

value() { # value METRIC LABELS  (exact label set, as printed)
	awk -v k="$1{$2}" 'index($0, k " ") == 1 { print $NF }' "$metrics"
}
file_value() { # file_value METRIC CGROUP PATH
	value "$1" "cgroup=\"$2\",path=\"$3\""
}

# The machine is shared and something else may drop page cache at any moment (a benchmark, a
# reclaim): read the files again right before looking, and look again (up to 5 times) if the
# pages the checks count on went missing in between. A wrong exporter fails every attempt.
warm() {
	cat "$data" "$weird" "/proc/${pids[0]}/fd/5" "$work"/assigned/a.bin "$work"/assigned/sub/b.bin \
		/bin/busybox >/dev/null
}
expected_total() { # the files of the first cgroup, busybox counted by mincore (fincore)
	local bb
	bb=$(fincore -b -n -o RES /bin/busybox | tr -d ' ')
	echo $(($(roundup "$data_size") + $(roundup 5000) + 50 * 4096 + $(roundup "$dirty_size") + 13 * 4096 + bb))
}
for attempt in 1 2 3 4 5; do
	warm
	curl -sf "http://127.0.0.1:$port/metrics" >"$metrics"
	[ "$(file_value cachestat_file_cached_bytes "$label" "$data")" = "$(roundup "$data_size")" ] &&
		[ "$(value cachestat_cgroup_cached_bytes "cgroup=\"$label\"")" = "$(expected_total)" ] && break
	echo "     (page cache changed under the scrape, attempt $attempt; looking again)"
done
check "GET /metrics answers" test -s "$metrics"

# 1. the known file, per file: exactly its size in pages
eq "cached bytes of the read file = its size rounded to pages" \
	"$(file_value cachestat_file_cached_bytes "$label" "$data")" "$(roundup "$data_size")"
eq "size of the read file" "$(file_value cachestat_file_size_bytes "$label" "$data")" "$data_size"

# 2. the cgroup: the sum over its files, which are exactly the ones we gave it
files=$(value cachestat_cgroup_files "cgroup=\"$label\"")
# busybox, data, weird, deleted, dirty + a.bin, sub/b.bin from the config
eq "files of the cgroup (held, mapped, deleted, assigned)" "$files" 7
sum=$(awk -v c="cachestat_file_cached_bytes{cgroup=\"$label\"," 'index($0, c) == 1 { s += $NF } END { print s + 0 }' "$metrics")
cg_cached=$(value cachestat_cgroup_cached_bytes "cgroup=\"$label\"")
eq "cgroup cached bytes = sum over its files" "$cg_cached" "$sum"
# an independent count of the part we did not write: busybox's own pages, through mincore
eq "cgroup cached bytes = file sizes + busybox (fincore)" "$cg_cached" "$(expected_total)"
eq "cgroup files size bytes" "$(value cachestat_cgroup_files_size_bytes "cgroup=\"$label\"")" \
	$((data_size + 5000 + 50 * 4096 + dirty_size + 13 * 4096 + $(stat -c %s /bin/busybox)))

# 3. dirty, not synced
d=$(value cachestat_cgroup_dirty_bytes "cgroup=\"$label\"")
check "dirty bytes > 0 after a write without fsync ($d)" test "${d:-0}" -gt 0

# 4. deleted but open
eq "deleted-but-open file counted" \
	"$(file_value cachestat_file_cached_bytes "$label" "$del (deleted)")" $((50 * 4096))

# 5. assigned by config, walked into a subdirectory, symlink not followed
eq "config-assigned file" "$(file_value cachestat_file_cached_bytes "$label" "$work/assigned/a.bin")" $((10 * 4096))
eq "config-assigned file in a subdirectory" \
	"$(file_value cachestat_file_cached_bytes "$label" "$work/assigned/sub/b.bin")" $((3 * 4096))
check "symlink in an assigned directory not followed" \
	bash -c "! grep -q 'link-to-data' '$metrics'"

# 6. the same file open in two cgroups counts in both; the child has only it (and busybox)
eq "shared file counted in the second cgroup" \
	"$(file_value cachestat_file_cached_bytes "$label/b" "$data")" "$(roundup "$data_size")"
eq "files of the second cgroup" "$(value cachestat_cgroup_files "cgroup=\"$label/b\"")" 2

# 7. the awkward name: escaped, and the whole output is clean for promtool
check "name with quote, backslash, newline and invalid UTF-8 is exported" \
	grep -qF 'name\\xff\\xc3(.dat' "$metrics"
check "promtool check metrics: no finding on the whole /metrics" \
	bash -c "promtool check metrics <'$metrics' >'$work/promtool.out' 2>&1"
[ -s "$work/promtool.out" ] && sed 's/^/    /' "$work/promtool.out"

# 8. memory.stat: present where the memory controller is, absent (not zero) where it is not
if [ -e "$cga/memory.stat" ]; then
	check "memory.stat series present" grep -q "^cachestat_cgroup_workingset_refault_file_total{cgroup=\"$label\"}" "$metrics"
else
	check "no memory controller on v2: memory.stat series absent" \
		bash -c "! grep -qE '^cachestat_cgroup_(memory_file_bytes|workingset_|node_)' '$metrics'"
fi
eq "syscall ABI reported" "$(value cachestat_syscall_info 'abi="mainline"')$(value cachestat_syscall_info 'abi="seed"')$(value cachestat_syscall_info 'abi="both"')" 1
nr=$(value cachestat_files_skipped_total 'reason="not_regular"')
check "stdin/stdout, the fifo and the symlink counted as not_regular ($nr)" test "${nr:-0}" -ge 3
eq "configured glob with no match: nothing counted as an error" \
	"$(value cachestat_files_skipped_total 'reason="error"')" 0
eq "collector success" "$(value cachestat_scrape_collector_success 'collector="cachestat"')" 1

# 9. concurrent scrapes, then a reload with a bad config keeps the running one
curls=()
for i in 1 2 3 4; do
	curl -sf "http://127.0.0.1:$port/metrics" -o "$work/c$i.prom" &
	curls+=($!)
done
wait "${curls[@]}"
ok=1
for i in 1 2 3 4; do grep -q "^cachestat_cgroup_files{cgroup=\"$label\"} 7$" "$work/c$i.prom" || ok=0; done
check "four concurrent scrapes all answered" test $ok -eq 1

# 9a. A daemon keeps the listings of the directories it walks (exporter/files/dircache.h) and reads a
# directory again only when its mtime or ctime moved. The oracle that it kept one: inotify sees
# no read (IN_ACCESS) of the directory during a scrape. Then every change of the directory shows
# at the next scrape: a file added, one added behind its mtime put back (touch -d moves ctime),
# one added in a subdirectory, one removed. A listing is kept once the directory settled (2 s).
assigned_files() {
	curl -sf "http://127.0.0.1:$port/metrics" |
		awk -v k="cachestat_cgroup_files{cgroup=\"$label\"}" 'index($0, k " ") == 1 { print $NF }'
}
settle() { # settle DIR...: until the directories' mtime and ctime are 3 s old, then two scrapes
	local d
	for d in "$@"; do
		while [ $(($(date +%s) - $(stat -c %Z "$d"))) -lt 3 ] ||
			[ $(($(date +%s) - $(stat -c %Y "$d"))) -lt 3 ]; do sleep 0.2; done
	done
	assigned_files >/dev/null
	assigned_files >/dev/null
}
dir_reads() { # dir_reads DIR: reads of DIR itself (IN_ACCESS, no name) during one scrape
	python3 - "$1" "http://127.0.0.1:$port/metrics" <<'PY'
import ctypes, os, struct, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
libc.inotify_add_watch(fd, sys.argv[1].encode(), 0x1)  # IN_ACCESS
subprocess.run(["curl", "-sf", "-o", "/dev/null", sys.argv[2]], check=True)
n = 0
try:
    buf = os.read(fd, 65536)
except BlockingIOError:
    buf = b""
while buf:
    _, _, _, ln = struct.unpack("iIII", buf[:16])
    n, buf = n + (ln == 0), buf[16 + ln:]
print(n)
PY
}
settle "$work/assigned" "$work/assigned/sub"
eq "kept listing: a scrape does not read the settled directory again" "$(dir_reads "$work/assigned")" 0
dd if=/dev/urandom of="$work/assigned/new1.bin" bs=4096 count=2 conv=fsync status=none
eq "kept listing: a file added is counted at the next scrape" "$(assigned_files)" 8
settle "$work/assigned"
mtime=$(stat -c %y "$work/assigned")
dd if=/dev/urandom of="$work/assigned/new2.bin" bs=4096 count=2 conv=fsync status=none
touch -m -d "$mtime" "$work/assigned"
check "premise: the directory's mtime is back to $mtime" test "$(stat -c %y "$work/assigned")" = "$mtime"
eq "kept listing: a file added behind the mtime put back is counted" "$(assigned_files)" 9
settle "$work/assigned/sub"
dd if=/dev/urandom of="$work/assigned/sub/new3.bin" bs=4096 count=2 conv=fsync status=none
eq "kept listing: a file added in a subdirectory is counted" "$(assigned_files)" 10
rm "$work/assigned/new1.bin" "$work/assigned/new2.bin" "$work/assigned/sub/new3.bin"
eq "kept listing: the files removed are gone at the next scrape" "$(assigned_files)" 7
cp "$config" "$work/good.json"
printf '{\n  "cgroups": [\n    { "match": "/x", "paths": ["/y"] oops }\n  ]\n}\n' >"$config"
kill -HUP "$exporter_pid"
for _ in $(seq 50); do grep -q "reload failed" "$work/exporter.log" && break; sleep 0.05; done
check "bad config on SIGHUP is logged with line and column" grep -q "config.json:3:" "$work/exporter.log"
curl -sf "http://127.0.0.1:$port/metrics" >"$metrics"
eq "after a failed reload the running config is kept" "$(value cachestat_cgroup_files "cgroup=\"$label\"")" 7
printf '{ "cgroups": [] }\n' >"$config"
kill -HUP "$exporter_pid"
for _ in $(seq 50); do grep -q "config reloaded" "$work/exporter.log" && break; sleep 0.05; done
curl -sf "http://127.0.0.1:$port/metrics" >"$metrics"
eq "after a good reload the assigned paths are gone" "$(value cachestat_cgroup_files "cgroup=\"$label\"")" 5
# promslog's fields: time, level, source, msg, then key=value fields to the end of the line.
check "daemon logs are logfmt lines with time, level, source, msg and lower_snake key=value fields" \
	bash -c "grep -vqE '^time=[0-9T:.-]+Z level=(DEBUG|INFO|WARN|ERROR) source=[a-z_-]+[.]c:[0-9]+ msg=(\"[^\"]*\"|[^ \"]+)( [a-z][a-z0-9_]*=(\"([^\"\\\\]|\\\\.)*\"|[^ \"]+))*\$' '$work/exporter.log'; test \$? -eq 1"
cp "$work/good.json" "$config"

# ---- --once ----
"$bin" --once --path.cgroupfs="$cg2" --config.file="$config" "${all_files[@]}" >"$work/once.prom" 2>"$work/once.err"
check "--once exits 0" test $? -eq 0
check "--once text is clean for promtool" bash -c "promtool check metrics <'$work/once.prom'"
check "--once text has the cgroup" grep -q "^cachestat_cgroup_files{cgroup=\"$label\"} 7$" "$work/once.prom"
# --log.format=json: one object a line, promslog's keys first, every key lower_snake
"$bin" --once --log.level=debug --log.format=json --path.cgroupfs="$cg2" --config.file="$config" \
	>/dev/null 2>"$work/once-log.json"
check "--log.format=json: $(wc -l <"$work/once-log.json") lines, each an object with time, level, source, msg first and lower_snake keys" \
	jq -en '[inputs | keys_unsorted | .[0:4] == ["time", "level", "source", "msg"] and all(.[]; test("^[a-z][a-z0-9_]*$"))] | length > 0 and all' "$work/once-log.json"
json_data_cached() {
	jq -r --arg c "$label" --arg p "$data" \
		'.cgroups[] | select(.cgroup == $c) | .top_files[] | select(.path == $p) | .cached_bytes' "$work/once.json"
}
for attempt in 1 2 3 4 5; do
	warm
	"$bin" --once --format=json --path.cgroupfs="$cg2" --config.file="$config" "${all_files[@]}" >"$work/once.json" 2>>"$work/once.err"
	rc=$?
	[ "$(json_data_cached)" = "$(roundup "$data_size")" ] && break
done
check "--once --format=json exits 0 and is JSON" bash -c "[ $rc -eq 0 ] && jq -e . '$work/once.json' >/dev/null"
eq "--once json: cached bytes of the read file" "$(json_data_cached)" "$(roundup "$data_size")"
eq "--once json: files of the cgroup" \
	"$(jq -r --arg c "$label" '.cgroups[] | select(.cgroup == $c) | .files' "$work/once.json")" 7

# As nobody with the capabilities the daemon keeps after its privilege drop, and with those
# but CAP_CHECKPOINT_RESTORE (a unit or pod that grants three): then /proc/PID/map_files can
# be listed but its links not followed, and the mappings (busybox here) come from maps.
busybox_path=$(readlink -f /bin/busybox)
for caps in sys_ptrace,dac_read_search,fowner,checkpoint_restore sys_ptrace,dac_read_search,fowner; do
	if ! command -v setpriv >/dev/null; then
		skip "--once as nobody" "setpriv (util-linux) not installed"
		break
	fi
	plus=+${caps//,/,+}
	setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups \
		--inh-caps=-all,"$plus" --ambient-caps=-all,"$plus" --bounding-set=-all,"$plus" \
		"$bin" --once --path.cgroupfs="$cg2" --config.file="$config" "${all_files[@]}" >"$work/nobody.prom" 2>"$work/nobody.err"
	eq "--once as nobody with $caps: files of the cgroup" \
		"$(awk -v k="cachestat_cgroup_files{cgroup=\"$label\"}" '$1 == k { print $2 }' "$work/nobody.prom")" 7
	eq "--once as nobody with $caps: the mapped busybox is counted" \
		"$(awk -v k="cachestat_file_size_bytes{cgroup=\"$label/b\",path=\"$busybox_path\"}" \
			'$1 == k { print $2 }' "$work/nobody.prom")" "$(stat -c %s "$busybox_path")"
done

# a scan that cannot run prints what it has and says so in its exit status (a procfs that is
# not there fails the cachestat collector; a cgroupfs that is not there is refused at start)
"$bin" --once --path.cgroupfs="$cg2" --path.procfs="$work/no-such-procfs" >"$work/fail.prom" 2>/dev/null
eq "--once with a collector failing exits 1" "$?" 1
check "--once still prints the report, with success 0" \
	grep -q '^cachestat_scrape_collector_success{collector="cachestat"} 0$' "$work/fail.prom"
# this host's v2 mount has no memory controller, and that procfs no /proc/pressure: the other
# collectors say why they have nothing, rather than a success with no series
check "--once: the other collectors say why they have nothing here" bash -c \
	"grep -q '^cachestat_collector_unavailable_info{collector=\"memstat\",reason=\"no_memory_controller\"} 1$' '$work/fail.prom' &&
	grep -q '^cachestat_collector_unavailable_info{collector=\"pressure\",reason=\"no_psi\"} 1$' '$work/fail.prom' &&
	! grep -q '^cachestat_scrape_collector_success{collector=\"memstat\"}' '$work/fail.prom'"

# ---- a bad config at start ----
printf '{\n  "per_file_top": 3,\n  "limits": { "max_files_per_scan" 7 }\n}\n' >"$work/bad.json"
"$bin" --once --path.cgroupfs="$cg2" --config.file="$work/bad.json" >/dev/null 2>"$work/bad.err"
eq "bad config at start exits 1" "$?" 1
check "bad config error names line and column" grep -q "bad.json:3:36: " "$work/bad.err"
printf '{ "per_file_top": 3, "colour": "blue" }\n' >"$work/bad2.json"
"$bin" --once --path.cgroupfs="$cg2" --config.file="$work/bad2.json" >/dev/null 2>"$work/bad2.err"
eq "config with an unknown key exits 1" "$?" 1
check "unknown key is named" grep -q 'unknown key \\"colour\\"' "$work/bad2.err"

# ---- the per-file defaults: node-wide top, two families, deleted files not named ----
printf '{ "cgroups": [ { "match": "/cse-it-*", "paths": ["%s/assigned"] } ] }\n' "$work" >"$work/def.json"
"$bin" --once --path.cgroupfs="$cg2" --config.file="$work/def.json" \
	--collector.perfile.cgroup-top=1000 >"$work/def-all.prom" 2>/dev/null
"$bin" --once --path.cgroupfs="$cg2" --config.file="$work/def.json" >"$work/def.prom" 2>"$work/def.err"
def_value() { awk -v k="$1{$2}" 'index($0, k " ") == 1 { print $NF }' "$work/def-all.prom"; }
check "defaults: the read file is named (every file of the cgroup asked for)" \
	test -n "$(def_value cachestat_file_cached_bytes "cgroup=\"$label\",path=\"$data\"")"
check "defaults: the deleted file has no series of its own" \
	bash -c "! grep -q '(deleted)' '$work/def-all.prom'"
eq "defaults: the deleted file still counts in its cgroup's files" \
	"$(def_value cachestat_cgroup_files "cgroup=\"$label\"")" 7
check "defaults: no per-file size, dirty, writeback or evicted family" \
	bash -c "! grep -Eq '^cachestat_file_(size|dirty|writeback|evicted)_bytes' '$work/def.prom'"
n=$(grep -c '^cachestat_file_cached_bytes{' "$work/def.prom")
check "defaults: at most 20 per-file series a family over the host ($n)" test "$n" -ge 1 -a "$n" -le 20
check "defaults: the start says what it will send" \
	grep -q 'msg="will send" .*perfile="top 20 files of the node, top 0 of each cgroup, families cached,recently_evicted, memfds and deleted files not named"' "$work/def.err"

# ---- the seed ABI: the same probe on the patched 6.1 kernel, if one was built already ----
# The e2e guest runs that kernel; here its bzImage boots a busybox initramfs in QEMU (TCG, no
# network) with the probe built statically, which must say "seed" and count a file's pages.
seed_kernel=${SEED_BZIMAGE:-${BUILD_ROOT:-/var/tmp/cachestat_exporter}/kernel/release/bzImage}
if [ ! -e "$seed_kernel" ]; then
	skip "seed ABI probe" "no patched kernel at $seed_kernel (make kernel builds it)"
elif ! command -v qemu-system-x86_64 >/dev/null || ! cc -static -O2 -I"$top/exporter" \
	-o "$work/abiprobe" "$top/tests/integration/abiprobe.c" "$top/exporter/base/pagecache.c" 2>"$work/abiprobe.err"; then
	skip "seed ABI probe" "no qemu-system-x86_64 or no static build: $(head -c 200 "$work/abiprobe.err")"
else
	mkdir -p "$work/initrd/bin" "$work/initrd/proc" "$work/initrd/tmp"
	cp /bin/busybox "$work/abiprobe" "$work/initrd/bin/"
	cat >"$work/initrd/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t tmpfs tmpfs /tmp
/bin/abiprobe /tmp/data
echo "abiprobe-exit=$?"
/bin/busybox reboot -f
INIT
	chmod +x "$work/initrd/init"
	(cd "$work/initrd" && find . | cpio -o -H newc 2>/dev/null | gzip -1 >"$work/initrd.gz")
	timeout 300 qemu-system-x86_64 -accel tcg -m 256 -smp 1 -kernel "$seed_kernel" \
		-initrd "$work/initrd.gz" -append "console=ttyS0 panic=-1 quiet" -nographic \
		-no-reboot -nic none </dev/null >"$work/seed.out" 2>&1
	# The kernels have no ACPI: the guest ends by rebooting, which -no-reboot makes QEMU's exit.
	eq "patched kernel: the probe's guest ends by itself (exit 0; 124 is the 300 s guard)" "$?" 0
	eq "patched kernel: the probe finds both ABIs (seed and mainline forms)" \
		"$(grep -ao 'abi=[a-z]*' "$work/seed.out" | head -n 1)" "abi=both"
	eq "seed kernel: a seed-form call counts a 100-page file" \
		"$(grep -ao 'cached=[0-9]*' "$work/seed.out" | head -n 1)" "cached=$((100 * 4096))"
fi

# ---- cgroup v1 memory hierarchy (hybrid hosts): real numbers per cgroup ----
# Where the memory controller is on cgroup v1, the exporter (no --path.cgroupfs) walks the v1
# memory hierarchy. Two v1 cgroups of our own, a parent and a child: a process in each reads a
# file whose page cache was dropped first, so that the kernel charges the pages to its cgroup;
# the child's memory limit is a quarter of its file, read twice, so that it refaults. Oracles:
# the file sizes, fincore, and memory.stat of those cgroups read here (the same before and after
# the scan, else the scan is taken again).
v1_memory_mount() {
	awk '$3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/ { print $2; exit }' /proc/mounts
}

v1_stat() { # v1_stat CGROUP_DIR KEY
	awk -v k="$2" '$1 == k { print $2 }' "$1/memory.stat"
}

v1_cleanup() {
	local p
	for p in "${v1_pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${v1_pids[@]}"; do
		while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
	done
	[ -n "$v1_cg" ] && [ -d "$v1_cg/r" ] && rmdir "$v1_cg/r"
	[ -n "$v1_cg" ] && [ -d "$v1_cg" ] && rmdir "$v1_cg"
	v1_pids=() v1_cg=
}

# A file of $2 bytes at $1, on disk and not in the page cache.
v1_uncached_file() {
	head -c "$2" /dev/urandom >"$1" && sync "$1" &&
		dd if="$1" iflag=nocache count=0 status=none &&
		[ "$(fincore -b -n -o RES "$1" | tr -d ' ')" = 0 ]
}

# A process that joins v1 cgroup $1, runs $2, then holds its files open.
v1_holder() {
	CG=$1 F1=$v1_f1 F2=$v1_f2 busybox sh -c \
		"echo \$\$ > \"\$CG/cgroup.procs\" || exit 1; $2; exec busybox sleep 600" \
		</dev/null >/dev/null 2>&1 &
	v1_pids+=($!)
	pids+=($!)
}

# The page cache both cgroups hold: memory.stat of each, the files by fincore.
v1_state() {
	cat "$v1_cg/memory.stat" "$v1_cg/r/memory.stat"
	fincore -b -n -o RES "$v1_f1" /bin/busybox
}

# One --once scan with the default root, taken while v1_state held still: a shared machine may
# reclaim or drop page cache at any time, and the oracles are read around the scan.
v1_scan() {
	local attempt before
	printf '{ "per_file_top": 10, "limits": { "max_scan_seconds": 60 } }\n' >"$work/v1.json"
	for attempt in 1 2 3 4 5; do
		before=$(v1_state)
		"$bin" --once --config.file="$work/v1.json" "${all_files[@]}" --collector.limits --collector.numa \
			>"$work/v1.prom" 2>"$work/v1.err"
		[ "$before" = "$(v1_state)" ] && return 0
		echo "     (page cache of the v1 cgroups moved during the scan, attempt $attempt)"
		sleep 1
	done
	return 1
}

v1_value() { # v1_value METRIC LABELS
	awk -v k="$1{$2}" 'index($0, k " ") == 1 { print $NF }' "$work/v1.prom"
}

v1_memory_cases() {
	local v1 label f1_size=$((8 << 20)) f2_size=$((16 << 20)) cache total f1 bb
	v1=$(v1_memory_mount)
	if [ -z "$v1" ] || grep -qw memory "$cg2/cgroup.controllers"; then
		skipped=$((skipped + 1))
		echo "skip - cgroup v1 memory: ${v1:-no v1 memory hierarchy mounted}${v1:+ is not where the memory controller is}"
		return
	fi
	v1_cg=$v1/cse-it-v1-$$ v1_f1=$work/v1-parent.bin v1_f2=$work/v1-child.bin
	label=/cse-it-v1-$$
	trap 'v1_cleanup; cleanup' EXIT
	if ! mkdir "$v1_cg" "$v1_cg/r" || ! echo $((4 << 20)) >"$v1_cg/r/memory.limit_in_bytes"; then
		fail "cgroup v1 memory: cannot make $v1_cg with a limited child"
		v1_cleanup
		return
	fi
	if ! v1_uncached_file "$v1_f1" "$f1_size" || ! v1_uncached_file "$v1_f2" "$f2_size"; then
		skipped=$((skipped + 1))
		echo "skip - cgroup v1 memory: the test files' page cache could not be dropped"
		v1_cleanup
		return
	fi
	v1_holder "$v1_cg" 'busybox cat "$F1" >/dev/null; exec 3<"$F1"'
	v1_holder "$v1_cg/r" 'busybox cat "$F2" "$F2" >/dev/null; exec 3<"$F2"'
	for _ in $(seq 200); do
		[ -e "/proc/${v1_pids[0]}/fd/3" ] && [ -e "/proc/${v1_pids[1]}/fd/3" ] && break
		sleep 0.05
	done
	sleep 2 # the kernel flushes memcg statistics every 2 s
	if ! v1_scan; then
		fail "cgroup v1 memory: the page cache never held still for a scan"
		v1_cleanup
		return
	fi
	if grep -q "scan cut" "$work/v1.err"; then
		fail "cgroup v1 memory: the scan was cut by its time budget: $(cat "$work/v1.err")"
	fi
	check "default root on this host is the v1 memory hierarchy (log)" \
		grep -q "msg=\"cgroup tree chosen\" cgroupfs=$v1 reason=" "$work/v1.err"
	# v1 has no memory.events, memory.current/high/max, refaults per node or PSI: each of those
	# collectors, turned on, says so instead of a success with no series, and the start log names
	# them once
	local c
	for c in events limits numa pressure; do
		eq "v1: $c says it has nothing to measure here (cachestat_collector_unavailable_info)" \
			"$(v1_value cachestat_collector_unavailable_info "collector=\"$c\",reason=\"cgroup_v1\"")" 1
		eq "v1: $c has no success series" "$(v1_value cachestat_scrape_collector_success "collector=\"$c\"")" ""
	done
	eq "v1: memstat reads v1's memory.stat (success)" \
		"$(v1_value cachestat_scrape_collector_success 'collector="memstat"')" 1
	eq "v1: the start log names what this host lacks, in one line" \
		"$(grep -c 'msg="collectors with nothing to measure on this host: no series, no success" events=cgroup_v1 limits=cgroup_v1 numa=cgroup_v1 pressure=cgroup_v1$' "$work/v1.err")" 1
	total=$(v1_stat "$v1_cg" total_cache) cache=$(v1_stat "$v1_cg" cache)
	echo "     v1 oracle: $label cache=$cache total_cache=$total" \
		"total_workingset_refault_file=$(v1_stat "$v1_cg" total_workingset_refault_file);" \
		"$label/r total_cache=$(v1_stat "$v1_cg/r" total_cache)" \
		"total_workingset_refault_file=$(v1_stat "$v1_cg/r" total_workingset_refault_file)"
	check "premise: the parent is charged its file, its child's pages on top (0 < $cache < $total)" \
		test "$cache" -gt 0 -a "$total" -gt "$cache"
	check "premise: the child refaulted ($(v1_stat "$v1_cg/r" total_workingset_refault_file))" \
		test "$(v1_stat "$v1_cg/r" total_workingset_refault_file)" -gt 0
	eq "v1: workingset_refault_file of the child = memory.stat total_workingset_refault_file" \
		"$(v1_value cachestat_cgroup_workingset_refault_file_total "cgroup=\"$label/r\"")" \
		"$(v1_stat "$v1_cg/r" total_workingset_refault_file)"
	eq "v1: workingset_refault_file of the parent = memory.stat total_workingset_refault_file" \
		"$(v1_value cachestat_cgroup_workingset_refault_file_total "cgroup=\"$label\"")" \
		"$(v1_stat "$v1_cg" total_workingset_refault_file)"
	check "v1: what v1 lacks is absent, not zero (activate, restore, per node, the charge)" bash -c \
		"! grep -E '^cachestat_cgroup_(workingset_(activate|restore)_file_total|node_workingset_refault_file_total|memory_file_bytes)\\{cgroup=\"$label' '$work/v1.prom'"
	# the processes and files come from the v1 cgroups too
	eq "v1: files of the parent (busybox, its file)" \
		"$(v1_value cachestat_cgroup_files "cgroup=\"$label\"")" 2
	f1=$(fincore -b -n -o RES "$v1_f1" | tr -d ' ')
	bb=$(fincore -b -n -o RES /bin/busybox | tr -d ' ')
	check "premise: the parent's file is cached, at most its size ($f1 of $f1_size)" \
		test "$f1" -gt 0 -a "$f1" -le "$f1_size"
	eq "v1: cached bytes of the parent's file = fincore" \
		"$(v1_value cachestat_file_cached_bytes "cgroup=\"$label\",path=\"$v1_f1\"")" "$f1"
	eq "v1: cached bytes of the parent = its file + busybox (fincore)" \
		"$(v1_value cachestat_cgroup_cached_bytes "cgroup=\"$label\"")" $((f1 + bb))
	eq "v1: files size of the parent = the sizes of its file and busybox" \
		"$(v1_value cachestat_cgroup_files_size_bytes "cgroup=\"$label\"")" \
		$((f1_size + $(stat -c %s "$(readlink -f /bin/busybox)")))
	check "v1: the child's file is listed in the child" \
		grep -q "^cachestat_file_size_bytes{cgroup=\"$label/r\",path=\"$v1_f2\"} $f2_size$" "$work/v1.prom"
	check "v1: --once output is clean for promtool" bash -c "promtool check metrics <'$work/v1.prom'"
	v1_cleanup
}
v1_pids=() v1_cg=
v1_memory_cases

# ---- subtree totals on the v1 memory hierarchy: a file shared by two children counts once ----
# A parent v1 cgroup with no process of its own and two children, each holding the same 32 MiB
# file open (and busybox, mapped by both). Oracle: fincore over the union of the children's files,
# each once; the children's per-cgroup gauges summed count both files twice. And the node's
# figures against /proc/meminfo read around the scan.
st_cleanup() {
	local p
	for p in "${st_pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${st_pids[@]}"; do
		while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
	done
	for p in "$st_cg/a" "$st_cg/b" "$st_cg"; do [ -n "$st_cg" ] && [ -d "$p" ] && rmdir "$p"; done
	st_pids=() st_cg=
}

st_state() { fincore -b -n -o RES "$st_f" /bin/busybox; }

meminfo_cached() { awk '$1 == "Cached:" { printf "%.0f\n", $2 * 1024 }' /proc/meminfo; }

subtree_cases() {
	local v1 label f_size=$((32 << 20)) f bb sub c1 c2 attempt before m0 m1 node root un
	v1=$(v1_memory_mount)
	if [ -z "$v1" ] || grep -qw memory "$cg2/cgroup.controllers"; then
		skipped=$((skipped + 1))
		echo "skip - subtree on cgroup v1 memory: ${v1:-no v1 memory hierarchy mounted}${v1:+ is not where the memory controller is}"
		return
	fi
	st_cg=$v1/cse-it-st-$$ st_f=$work/shared-32m.bin label=/cse-it-st-$$
	trap 'st_cleanup; v1_cleanup; cleanup' EXIT
	if ! mkdir "$st_cg" "$st_cg/a" "$st_cg/b"; then
		fail "subtree: cannot make $st_cg with two children"
		st_cleanup
		return
	fi
	head -c "$f_size" /dev/urandom >"$st_f" && cat "$st_f" >/dev/null
	for c in a b; do
		CG=$st_cg/$c F=$st_f busybox sh -c \
			"echo \$\$ > \"\$CG/cgroup.procs\" || exit 1; exec 3<\"\$F\"; exec busybox sleep 600" \
			</dev/null >/dev/null 2>&1 &
		st_pids+=($!)
		pids+=($!)
	done
	for _ in $(seq 200); do
		[ -e "/proc/${st_pids[0]}/fd/3" ] && [ -e "/proc/${st_pids[1]}/fd/3" ] && break
		sleep 0.05
	done
	printf '{ "limits": { "max_scan_seconds": 60 } }\n' >"$work/st.json"
	for attempt in 1 2 3 4 5; do
		before=$(st_state) m0=$(meminfo_cached)
		"$bin" --once --config.file="$work/st.json" >"$work/st.prom" 2>"$work/st.err"
		m1=$(meminfo_cached)
		[ "$before" = "$(st_state)" ] && break
		echo "     (page cache of the shared file moved during the scan, attempt $attempt)"
	done
	st_value() { awk -v k="$1{$2}" 'index($0, k " ") == 1 { print $NF }' "$work/st.prom"; }
	stn_value() { awk -v k="$1" '$1 == k { print $2 }' "$work/st.prom"; }
	f=$(fincore -b -n -o RES "$st_f" | tr -d ' ')
	bb=$(fincore -b -n -o RES /bin/busybox | tr -d ' ')
	check "premise: the shared file is cached ($f of $f_size)" test "$f" -gt $((f_size / 2))
	sub=$(st_value cachestat_cgroup_subtree_cached_bytes "cgroup=\"$label\"")
	c1=$(st_value cachestat_cgroup_cached_bytes "cgroup=\"$label/a\"")
	c2=$(st_value cachestat_cgroup_cached_bytes "cgroup=\"$label/b\"")
	echo "     subtree oracle: fincore shared=$f busybox=$bb; exporter: $label subtree=$sub, children $c1 + $c2"
	eq "subtree: parent's cached bytes = the union of its children's files, each once (fincore)" \
		"$sub" $((f + bb))
	eq "subtree: each child counts the shared file (fincore)" "$c1 $c2" "$((f + bb)) $((f + bb))"
	"$bin" --once --format=json --config.file="$work/st.json" >"$work/st.json.out" 2>/dev/null
	eq "subtree: parent's files = 2 (the shared file, busybox; the JSON report)" \
		"$(jq -r --arg cg "$label" '.cgroups[] | select(.cgroup == $cg) | .subtree.files' "$work/st.json.out")" 2
	eq "subtree: parent's files size = their sizes (the JSON report)" \
		"$(jq -r --arg cg "$label" '.cgroups[] | select(.cgroup == $cg) | .subtree.files_size_bytes' "$work/st.json.out")" \
		$((f_size + $(stat -c %s "$(readlink -f /bin/busybox)")))
	check "subtree: leaves have no subtree series" bash -c \
		"! grep -q '^cachestat_cgroup_subtree_[a-z_]*{cgroup=\"$label/[ab]\"}' '$work/st.prom'"
	node=$(stn_value cachestat_node_memory_cached_bytes)
	root=$(st_value cachestat_cgroup_subtree_cached_bytes 'cgroup="/"')
	un=$(stn_value cachestat_node_unattributed_cached_bytes)
	echo "     node: meminfo Cached $m0 before, $m1 after; exporter Cached $node, root subtree $root, unattributed $un"
	check "node: Cached is meminfo's, read around the scan (within 64 MiB)" \
		test "$node" -ge $(( (m0 < m1 ? m0 : m1) - (64 << 20) )) -a "$node" -le $(( (m0 > m1 ? m0 : m1) + (64 << 20) ))
	check "node: the root's subtree holds the parent's ($root >= $sub)" test "$root" -ge "$sub"
	eq "node: unattributed = Cached - the root subtree's cached bytes" "$un" $((node - root))
	check "subtree: --once output is clean for promtool" bash -c "promtool check metrics <'$work/st.prom'"
	st_cleanup
}
st_pids=() st_cg=
subtree_cases

# shellcheck disable=SC2154 # failed: counted by tests/lib/tap.sh
if [ "$failed" -ne 0 ]; then
	echo "---- exporter log"
	sed 's/^/    /' "$work/exporter.log"
fi
finish

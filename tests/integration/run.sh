#!/usr/bin/env bash
# Integration test of cachestat_exporter on the build machine itself (real kernel, real cgroups).
#
# Makes cgroups below the cgroup v2 mount, runs processes there that hold files open (one of
# them deleted, one with a name full of characters that need escaping, one written and not
# synced), assigns a directory to one cgroup by config, and checks what the exporter says over
# HTTP and with --once, against the file sizes and an independent count (fincore, mincore-based).
# Ends with "N passed, N failed" (", N skipped"); skips with a reason where it cannot run.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
bin=${CACHESTAT_EXPORTER:-$top/exporter/cachestat_exporter}
page=$(getconf PAGESIZE)
passed=0 failed=0 skipped=0

pass() { passed=$((passed + 1)); echo "ok   - $*"; }
fail() { failed=$((failed + 1)); echo "FAIL - $*"; }
skip_all() {
	echo "skip - $*"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
}
check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}
eq() { # eq DESCRIPTION GOT WANT
	if [ "$2" = "$3" ]; then pass "$1 ($2)"; else fail "$1: got '$2', want '$3'"; fi
}

[ "$(id -u)" -eq 0 ] || skip_all "needs root to make cgroups"
for tool in promtool curl jq busybox fincore ss; do
	command -v "$tool" >/dev/null || skip_all "$tool is not installed (see tests/integration/deps.txt)"
done

# The cgroup v2 mount: /sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a hybrid one.
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$cg2" ] || skip_all "no cgroup v2 mounted"
name=cse-it-$$
cga=$cg2/$name
mkdir "$cga" 2>/dev/null || skip_all "cgroup v2 at $cg2 is not writable"

if [ ! -x "$bin" ]; then
	make -s -C "$top/exporter" >/dev/null || { rmdir "$cga"; echo "0 passed, 1 failed"; exit 1; }
fi

work=$(mktemp -d /var/tmp/cse-it.XXXXXX)
pids=()
exporter_pid=

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

# ---- the daemon ----
port=
for p in $(seq 29451 29550); do
	if [ -z "$(ss -Htln "sport = :$p")" ]; then port=$p; break; fi
done
[ -n "$port" ] || { fail "no free port in 29451-29550"; echo "$passed passed, $failed failed"; exit 1; }
"$bin" --web.listen-address="127.0.0.1:$port" --path.cgroupfs="$cg2" --config.file="$config" \
	2>"$work/exporter.log" &
exporter_pid=$!
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/" >/dev/null && break
	sleep 0.05
done
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
	check "memory.stat series present" grep -q "^cachestat_cgroup_memory_file_bytes{cgroup=\"$label\"}" "$metrics"
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
check "daemon logs are logfmt lines with a level" \
	bash -c "grep -vqE '^ts=[0-9T:.-]+Z level=(debug|info|warn|error) msg=\".*\"$' '$work/exporter.log'; test \$? -eq 1"
cp "$work/good.json" "$config"

# ---- --once ----
"$bin" --once --path.cgroupfs="$cg2" --config.file="$config" >"$work/once.prom" 2>"$work/once.err"
check "--once exits 0" test $? -eq 0
check "--once text is clean for promtool" bash -c "promtool check metrics <'$work/once.prom'"
check "--once text has the cgroup" grep -q "^cachestat_cgroup_files{cgroup=\"$label\"} 7$" "$work/once.prom"
json_data_cached() {
	jq -r --arg c "$label" --arg p "$data" \
		'.cgroups[] | select(.cgroup == $c) | .top_files[] | select(.path == $p) | .cached_bytes' "$work/once.json"
}
for attempt in 1 2 3 4 5; do
	warm
	"$bin" --once --format=json --path.cgroupfs="$cg2" --config.file="$config" >"$work/once.json" 2>>"$work/once.err"
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
		skipped=$((skipped + 1))
		echo "skip - --once as nobody: setpriv (util-linux) not installed"
		break
	fi
	plus=+${caps//,/,+}
	setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups \
		--inh-caps=-all,"$plus" --ambient-caps=-all,"$plus" --bounding-set=-all,"$plus" \
		"$bin" --once --path.cgroupfs="$cg2" --config.file="$config" >"$work/nobody.prom" 2>"$work/nobody.err"
	eq "--once as nobody with $caps: files of the cgroup" \
		"$(awk -v k="cachestat_cgroup_files{cgroup=\"$label\"}" '$1 == k { print $2 }' "$work/nobody.prom")" 7
	eq "--once as nobody with $caps: the mapped busybox is counted" \
		"$(awk -v k="cachestat_file_size_bytes{cgroup=\"$label/b\",path=\"$busybox_path\"}" \
			'$1 == k { print $2 }' "$work/nobody.prom")" "$(stat -c %s "$busybox_path")"
done

# a scan that cannot run prints what it has and says so in its exit status
"$bin" --once --path.cgroupfs="$work/no-such-cgroupfs" >"$work/fail.prom" 2>/dev/null
eq "--once with a collector failing exits 1" "$?" 1
check "--once still prints the report, with success 0" \
	grep -q '^cachestat_scrape_collector_success{collector="memstat"} 0$' "$work/fail.prom"

# ---- a bad config at start ----
printf '{\n  "per_file_top": 3,\n  "limits": { "max_files_per_scan" 7 }\n}\n' >"$work/bad.json"
"$bin" --once --path.cgroupfs="$cg2" --config.file="$work/bad.json" >/dev/null 2>"$work/bad.err"
eq "bad config at start exits 1" "$?" 1
check "bad config error names line and column" grep -q "bad.json:3:36: " "$work/bad.err"
printf '{ "per_file_top": 3, "colour": "blue" }\n' >"$work/bad2.json"
"$bin" --once --path.cgroupfs="$cg2" --config.file="$work/bad2.json" >/dev/null 2>"$work/bad2.err"
eq "config with an unknown key exits 1" "$?" 1
check "unknown key is named" grep -q 'unknown key \\"colour\\"' "$work/bad2.err"

# ---- the seed ABI: the same probe on the patched 6.1 kernel, if one was built already ----
# The e2e guest runs that kernel; here its bzImage boots a busybox initramfs in QEMU (TCG, no
# network) with the probe built statically, which must say "seed" and count a file's pages.
seed_kernel=${SEED_BZIMAGE:-${BUILD_ROOT:-/var/tmp/cachestat_exporter}/kernel/release/bzImage}
if [ ! -e "$seed_kernel" ]; then
	skipped=$((skipped + 1))
	echo "skip - seed ABI probe: no patched kernel at $seed_kernel (make kernel builds it)"
elif ! command -v qemu-system-x86_64 >/dev/null || ! cc -static -O2 -I"$top/exporter" \
	-o "$work/abiprobe" "$top/tests/integration/abiprobe.c" "$top/exporter/pagecache.c" 2>"$work/abiprobe.err"; then
	skipped=$((skipped + 1))
	echo "skip - seed ABI probe: no qemu-system-x86_64 or no static build ($(head -c 200 "$work/abiprobe.err"))"
else
	mkdir -p "$work/initrd/bin" "$work/initrd/proc" "$work/initrd/tmp"
	cp /bin/busybox "$work/abiprobe" "$work/initrd/bin/"
	cat >"$work/initrd/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t tmpfs tmpfs /tmp
/bin/abiprobe /tmp/data
echo "abiprobe-exit=$?"
/bin/busybox poweroff -f
INIT
	chmod +x "$work/initrd/init"
	(cd "$work/initrd" && find . | cpio -o -H newc 2>/dev/null | gzip -1 >"$work/initrd.gz")
	timeout 300 qemu-system-x86_64 -accel tcg -m 256 -smp 1 -kernel "$seed_kernel" \
		-initrd "$work/initrd.gz" -append "console=ttyS0 panic=-1 quiet" -nographic \
		-no-reboot -nic none </dev/null >"$work/seed.out" 2>&1
	eq "patched kernel: the probe finds both ABIs (seed and mainline forms)" \
		"$(grep -ao 'abi=[a-z]*' "$work/seed.out" | head -n 1)" "abi=both"
	eq "seed kernel: a seed-form call counts a 100-page file" \
		"$(grep -ao 'cached=[0-9]*' "$work/seed.out" | head -n 1)" "cached=$((100 * 4096))"
fi

if [ "$failed" -ne 0 ]; then
	echo "---- exporter log"
	sed 's/^/    /' "$work/exporter.log"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

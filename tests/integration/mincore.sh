#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The mincore method (--cachestat.method=mincore), on this machine's kernel whatever it has:
# the cached bytes of a regular file, of a file read through an overlayfs mount (the mapping
# reaches the real inode: vmtouch through the overlay path and fincore on the lower file agree),
# of a sparse file and of a huge sparse one (several mapping windows) against util-linux's
# fincore and vmtouch, each file held open by a process of its own cgroup; the families mincore
# cannot measure absent, never zero (where cachestat, on a kernel that has it, sees dirty pages);
# the caps of pages per file and per scan skipping as page_cap; atime and residency unchanged by
# a scan; as nobody with the daemon's capabilities the same numbers, and without CAP_FOWNER a
# file skipped as eperm rather than reported as the zeros mincore(2) gives; the daemon under its
# own seccomp filter serving cachestat_syscall_info{abi="mincore"}.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed, N skipped" last.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
bin=${CACHESTAT_EXPORTER:-$top/exporter/cachestat_exporter}
mib=$((1 << 20))
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"
# shellcheck source=tests/integration/lib-subtree.sh
. "$top/tests/integration/lib-subtree.sh"

subtree_setup mc jq busybox fincore vmtouch setpriv python3 curl
ps=$(getconf PAGESIZE)
chmod 755 "$work"

# ---- helpers ---- (ovmount, res, oracle one, and file_cached: lib-subtree.sh)
vmt() { # cached bytes, oracle two: vmtouch's resident pages times the page size
	local pages
	pages=$(vmtouch "$1" | sed -n 's|^ *Resident Pages: \([0-9]*\)/.*|\1|p')
	echo $((pages * ps))
}
drop() { python3 -c 'import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); os.fsync(fd); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)' "$1"; }
# readat FILE PAGE COUNT: reads those pages alone (POSIX_FADV_RANDOM: no readahead around them)
readat() {
	python3 -c 'import os,sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
ps, first, n = int(sys.argv[4]), int(sys.argv[2]), int(sys.argv[3])
for p in range(first, first + n):
    os.pread(fd, ps, p * ps)' "$1" "$2" "$3" "$ps"
}
atime() { stat -c %X "$1"; }
old_atime() { touch -a -d 2020-01-01 "$@"; }
# hold NAME FILE: a process of cgroup NAME holds FILE open
hold() {
	mkdir "$parent/$1"
	# no descriptor of ours: a log file as stdout would be one more regular file of the cgroup
	busybox sh -c 'echo $$ >"$1/cgroup.procs"; exec 3<"$2"; exec busybox sleep 3600' sh \
		"$parent/$1" "$2" </dev/null >/dev/null 2>&1 &
	holders+=($!)
}
wait_fd() { # wait_fd PID PATH: until the process has PATH open
	local f
	for _ in $(seq 100); do
		for f in /proc/"$1"/fd/*; do
			[ "$(readlink "$f" 2>/dev/null)" = "$2" ] && return 0
		done
		sleep 0.05
	done
	return 1
}
once() { # once OUT [FLAGS...]: a scan of our subtree with the mincore method, as JSON
	local out=$1
	shift
	"${pre[@]}" "$bin" --once --format=json --path.cgroupfs="$parent" --config.file="$work/config.json" \
		--cachestat.method=mincore "$@" >"$out" 2>"$out.err" || true
	pre=()
}
pre=()
skipped() { jq -r --arg r "$2" '.files_skipped_total[$r]' "$1"; }
# oracles FILE...: fincore's and vmtouch's readings of each file, kept in fin[] and vmt[] as
# "before after" (each call adds one); they map the file, so they move atime: never between a
# reset of atime and its check.
declare -A fin=() vmt=()
oracles() {
	local f
	for f; do
		fin[$f]="${fin[$f]:-} $(res "$f")"
		vmt[$f]="${vmt[$f]:-} $(vmt "$f")"
	done
}
forget() { fin=() vmt=(); }
# agree NAME GOT FILE [VMTOUCH_PATH]: GOT, the exporter's bytes, lies within fincore's and
# vmtouch's readings of FILE taken before and after the scan (a loaded machine evicts a few
# pages meanwhile: the scan and the tools each see their own moment); vmtouch reads
# VMTOUCH_PATH if given (the overlay path).
agree() {
	local readings lo hi v
	readings="${fin[$3]:-} ${vmt[${4:-$3}]:-}"
	lo="" hi=""
	for v in $readings; do
		[ -z "$lo" ] || [ "$v" -lt "$lo" ] && lo=$v
		[ -z "$hi" ] || [ "$v" -gt "$hi" ] && hi=$v
	done
	if [ -n "$lo" ] && [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -ge "$lo" ] && [ "$2" -le "$hi" ]; then
		pass "$1: $2 bytes; fincore${fin[$3]}, vmtouch${vmt[${4:-$3}]}"
	else
		fail "$1: got '$2', fincore${fin[$3]:-?}, vmtouch${vmt[${4:-$3}]:-?}"
	fi
}

echo '{ "per_file_top": 50 }' >"$work/config.json"

# ---- the files: each held by a process of its own cgroup ----
reg=$work/regular.bin sparse=$work/sparse.bin huge=$work/huge.bin
head -c $((8 * mib)) /dev/urandom >"$reg"
truncate -s 1G "$sparse"
dd if=/dev/urandom of="$sparse" bs=1M count=3 seek=500 conv=notrunc status=none
# 16 GiB: pages cached in the first, fifth and last windows of 2^18 pages
truncate -s 16G "$huge"
for at in 0 $((5 * 262144 + 17)) $((16 * 262144 - 1)); do
	dd if=/dev/urandom of="$huge" bs="$ps" count=4 seek="$at" conv=notrunc status=none
done
mkdir -p "$work/lo" "$work/up" "$work/wk"
head -c $((6 * mib)) /dev/urandom >"$work/lo/lower.bin"
ovl=ok
ovmount "$work/m" "lowerdir=$work/lo,upperdir=$work/up,workdir=$work/wk" || ovl=
for f in "$reg" "$sparse" "$huge" "$work/lo/lower.bin"; do drop "$f"; done
readat "$reg" 0 1000
readat "$reg" 1500 3
readat "$sparse" $((500 * mib / ps)) 300
for at in 0 $((5 * 262144 + 17)) $((16 * 262144 - 1)); do readat "$huge" "$at" 4; done
hold regular "$reg"
hold sparse "$sparse"
hold huge "$huge"
if [ -n "$ovl" ]; then
	readat "$work/m/lower.bin" 0 700 # through the overlay: the pages land on the lower inode
	hold overlay "$work/m/lower.bin"
fi
pids=("${holders[@]}")
wait_fd "${pids[0]}" "$reg" && wait_fd "${pids[1]}" "$sparse" && wait_fd "${pids[2]}" "$huge" ||
	fail "a holder did not open its file"

# ---- residency and atime: a scan changes neither (fincore and vmtouch do move atime) ----
cold=$work/cold.bin # never read: a scan that faulted or read ahead would bring pages in
head -c $((8 * mib)) /dev/urandom >"$cold"
drop "$cold"
hold cold "$cold"
wait_fd "${holders[-1]}" "$cold" || fail "the cold file's holder did not open it"
files=("$reg" "$sparse" "$huge" "$cold")
[ -z "$ovl" ] || files+=("$work/lo/lower.bin")
oracles "${files[@]}"
[ -z "$ovl" ] || oracles "$work/m/lower.bin" # vmtouch through the overlay mount
old_atime "${files[@]}"
a0=$(atime "$reg")
out=$work/mincore.json
once "$out"
for f in "${files[@]}"; do
	eq "atime of $(basename "$f") unchanged by the scan" "$(atime "$f")" "$a0"
done
oracles "${files[@]}"
[ -z "$ovl" ] || oracles "$work/m/lower.bin"
for f in "${files[@]}"; do
	read -r was now <<<"${fin[$f]}"
	check "residency of $(basename "$f") not grown by the scan (fincore $was then $now)" test "$now" -le "$was"
done
eq "the cold file: still no page cached after the scan (fincore)" "$(res "$cold")" 0
eq "the cold file: 0 bytes cached, a true zero" "$(file_cached "$out" cold "$cold")" 0

eq "abi is mincore" "$(jq -r .abi "$out")" mincore
agree "regular (8 MiB)" "$(file_cached "$out" regular "$reg")" "$reg"
agree "sparse 1 GiB" "$(file_cached "$out" sparse "$sparse")" "$sparse"
agree "huge 16 GiB sparse (pages in three windows of 1 GiB)" "$(file_cached "$out" huge "$huge")" "$huge"
# read_pages NAME GOT PAGES: GOT is the pages read, or a few fewer (a loaded machine evicts some)
read_pages() {
	if [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -le $(($3 * ps)) ] && [ "$2" -ge $(($3 * ps * 95 / 100)) ]; then
		pass "$1: $(($2 / ps)) of the $3 pages read"
	else
		fail "$1: got '$2', want the $3 pages read ($(($3 * ps)) bytes) or a few fewer"
	fi
}
read_pages "huge" "$(file_cached "$out" huge "$huge")" 12
read_pages "regular" "$(file_cached "$out" regular "$reg")" 1003
read_pages "sparse" "$(file_cached "$out" sparse "$sparse")" 300
if [ -n "$ovl" ]; then
	got=$(file_cached "$out" overlay "$work/m/lower.bin")
	agree "overlay: the file read through the mount (fincore: the lower file; vmtouch: the mount)" \
		"$got" "$work/lo/lower.bin" "$work/m/lower.bin"
	# the mapping of the overlay path is the lower inode's: vmtouch through the mount sees its pages
	eq "overlay: vmtouch through the mount = fincore of the lower file" \
		"$(vmt "$work/m/lower.bin")" "$(res "$work/lo/lower.bin")"
	read_pages "overlay" "$got" 700
else
	skip "overlay" "this kernel refused the overlay mount"
fi

# ---- the families mincore cannot measure: absent, never zero ----
dirty=$work/dirty.bin
head -c $((4 * mib)) /dev/urandom >"$dirty" # not synced: dirty pages
hold dirty "$dirty"
wait_fd "${holders[-1]}" "$dirty" || fail "the dirty file's holder did not open it"
once "$out"
for k in dirty_bytes writeback_bytes evicted_bytes recently_evicted_bytes; do
	eq "JSON: no $k under mincore" "$(jq --arg k "$k" '[.. | objects | select(has($k))] | length' "$out")" 0
done
txt=$work/mincore.prom
"$bin" --once --path.cgroupfs="$parent" --config.file="$work/config.json" --cachestat.method=mincore \
	>"$txt" 2>"$txt.err" || true
check "text: cachestat_syscall_info{abi=\"mincore\"}" grep -qx 'cachestat_syscall_info{abi="mincore"} 1' "$txt"
for fam in cgroup_dirty_bytes cgroup_writeback_bytes cgroup_evicted_bytes cgroup_recently_evicted_bytes \
	cgroup_subtree_dirty_bytes file_recently_evicted_bytes; do
	eq "text: no cachestat_$fam series or HELP" "$(grep -c "cachestat_$fam\b" "$txt" || true)" 0
done
check "text: cached bytes per cgroup, subtree and file" \
	grep -q '^cachestat_cgroup_cached_bytes{cgroup="/dirty"} [1-9]' "$txt"
check "text: the subtree's cached bytes" grep -q '^cachestat_cgroup_subtree_cached_bytes{cgroup="/"} [1-9]' "$txt"
if "$bin" --version | grep -qx 'kernel cachestat: \(mainline\|seed\|both\)'; then
	cs=$work/cachestat.prom
	"$bin" --once --path.cgroupfs="$parent" --cachestat.method=cachestat >"$cs" 2>/dev/null || true
	n=$(sed -n 's/^cachestat_cgroup_dirty_bytes{cgroup="\/dirty"} //p' "$cs")
	# a zero under mincore would have been a lie: cachestat sees the dirty pages
	if [ "${n:-0}" -gt 0 ]; then pass "cachestat sees dirty bytes mincore cannot ($n)"; else
		skip "cachestat's dirty bytes" "written back before the scan (${n:-absent})"
	fi
	eq "auto on this kernel with cachestat: cachestat" \
		"$("$bin" --version | sed -n 's/^page cache method: //p')" cachestat
else
	skip "cachestat's dirty bytes" "this kernel has no cachestat"
	eq "auto on this kernel without cachestat: mincore" \
		"$("$bin" --version | sed -n 's/^page cache method: //p')" mincore
fi

# ---- the caps: what they cut is page_cap, never a partial number ----
once "$out" --cachestat.mincore.max-pages-per-file=$((1 << 20))
eq "per-file cap: the huge file (4 Mi pages) absent" "$(file_cached "$out" huge "$huge")" absent
eq "per-file cap: skipped as page_cap" "$(skipped "$out" page_cap)" 1
check "per-file cap: the sparse file (256 Ki pages) still counted" \
	test "$(file_cached "$out" sparse "$sparse")" != absent
# 4 Mi pages of the scan: the huge file takes them all or is cut, and the rest goes on
once "$out" --cachestat.mincore.max-pages-per-scan=$((4 << 20))
n=$(skipped "$out" page_cap)
if [ "$(file_cached "$out" huge "$huge")" = absent ]; then
	check "per-scan cap: the huge file cut, skipped as page_cap ($n)" test "$n" -ge 1
else
	check "per-scan cap: the huge file took the scan's pages, the others cut as page_cap ($n)" \
		test "$n" -ge 2
fi
once "$out" --cachestat.mincore.max-pages-per-scan=1
check "per-scan cap of 1 page: every file of a page or more skipped as page_cap" \
	test "$(skipped "$out" page_cap)" -ge 6
eq "per-scan cap of 1 page: no file's cached bytes" \
	"$(jq '[.cgroups[].top_files[]?] | length' "$out")" 0
check "a bad cap is refused" bash -c "! '$bin' --once --cachestat.mincore.max-pages-per-file=0 2>/dev/null"
check "a bad method is refused" bash -c "! '$bin' --once --cachestat.method=fincore 2>/dev/null"

# ---- as nobody: with the daemon's capabilities, and without CAP_FOWNER ----
caps=+sys_ptrace,+dac_read_search,+fowner,+checkpoint_restore
nob=$work/nobody.json
# shellcheck disable=SC2054 # the commas are setpriv's
pre=(setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups
	--inh-caps=-all,"$caps" --ambient-caps=-all,"$caps" --bounding-set=-all,"$caps")
forget
oracles "$reg"
once "$nob"
oracles "$reg"
agree "as nobody with the unit's capabilities: regular" "$(file_cached "$nob" regular "$reg")" "$reg"
nocaps=+sys_ptrace,+dac_read_search,+checkpoint_restore
# shellcheck disable=SC2054 # the commas are setpriv's
pre=(setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups
	--inh-caps=-all,"$nocaps" --ambient-caps=-all,"$nocaps" --bounding-set=-all,"$nocaps")
once "$nob"
eq "without CAP_FOWNER: root's file not reported as a zero" "$(file_cached "$nob" regular "$reg")" absent
check "without CAP_FOWNER: skipped as eperm" test "$(skipped "$nob" eperm)" -ge 5

# ---- the daemon, privileges dropped, under its own seccomp filter ----
port=$(pick_port $((30000 + $$ % 20000)))
log=$work/daemon.log
cg2=$parent
if start_exporter --cachestat.method=mincore --config.file="$work/config.json"; then
	scrape=$work/scrape.prom
	curl -s "http://127.0.0.1:$port/metrics" >"$scrape" || true
	check "daemon: cachestat_syscall_info{abi=\"mincore\"}" \
		grep -qx 'cachestat_syscall_info{abi="mincore"} 1' "$scrape"
	got=$(sed -n "s|^cachestat_file_cached_bytes{cgroup=\"/regular\",path=\"$reg\"} ||p" "$scrape")
	eq "daemon: the regular file's cached bytes = fincore" "$got" "$(res "$reg")"
	check "daemon: the seccomp filter installed" grep -q 'seccomp filter installed' "$log"
	check "daemon: no file skipped as error" \
		grep -qx 'cachestat_files_skipped_total{reason="error"} 0' "$scrape"
	stop_exporter
fi

# shellcheck disable=SC2154 # failed: counted by tests/lib/tap.sh
if [ "$failed" -ne 0 ]; then
	echo "---- exporter stderr"
	sed 's/^/    /' "$out.err" "$nob.err" "$log" 2>/dev/null || true
fi
finish

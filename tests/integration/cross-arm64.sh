#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The arm64 exporter of the multi-arch image (scripts/build-cross.sh, cross-compiled from
# Debian's arm64 packages) run on this machine under qemu-user, with the arm64 runtime
# libraries of its root filesystem, as `--once` against the host's real /proc and cgroups.
# A cgroup of its own (the v1 memory hierarchy of a hybrid host, or cgroup v2 with memory)
# holds a process with a 4 MiB file open; the oracles are independent of the exporter:
# the cgroup's memory.stat read here, the file's size, fincore's count of its cached pages,
# and the amd64 binary's output for the same cgroup (the same families and cgroups).
# Where qemu-user does not pass cachestat(2) through, the exporter must say abi="none" and
# still serve memory.stat (that is checked, and said).
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed, N skipped" last.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
amd64=${CACHESTAT_EXPORTER:-$top/exporter/cachestat_exporter}
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"

[ "$(id -u)" -eq 0 ] || skip_suite "needs root to make a cgroup"
for tool in qemu-aarch64-static aarch64-linux-gnu-gcc fincore python3; do
	command -v "$tool" >/dev/null || skip_suite "$tool is not installed (scripts/deps.txt, tests/integration/deps.txt)"
done
[ -x "$amd64" ] || skip_suite "the exporter is not built (make -C exporter)"

# The arm64 binary and its root filesystem (libraries of Debian's arm64 archive).
log=$(mktemp)
if ! bin=$("$top/scripts/build-cross.sh" arm64 2>"$log" | tail -n 1); then
	sed 's/^/  | /' "$log"
	fail "scripts/build-cross.sh arm64 builds the exporter"
	rm -f "$log"
	finish
fi
rm -f "$log"
runtime=${bin%/src/exporter/cachestat_exporter}/runtime
pass "scripts/build-cross.sh arm64: $(file -b "$bin" | cut -d, -f1-2)"
check "the arm64 binary is an aarch64 ELF" bash -c "file -b '$bin' | grep -q 'ARM aarch64'"

# A memory cgroup with a process holding a file.
mem=''
for d in /sys/fs/cgroup/memory /sys/fs/cgroup; do
	[ -e "$d/memory.stat" ] && { mem=$d; break; }
done
[ -n "$mem" ] || skip_suite "no cgroup hierarchy with memory.stat"
cg=$mem/cse-arm64-$$
mkdir "$cg"
work=$(mktemp -d /var/tmp/cse-arm64.XXXXXX)
holder=''
cleanup() {
	[ -z "$holder" ] || kill "$holder" 2>/dev/null || true
	wait 2>/dev/null || true
	rmdir "$cg" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
(
	echo "$BASHPID" >"$cg/cgroup.procs"
	# written from inside: its page cache is charged to the cgroup
	head -c $((4 << 20)) /dev/urandom >"$work/held.dat"
	exec python3 -c 'import sys, time; f = open(sys.argv[1], "rb"); f.read(); print("ready", flush=True); time.sleep(120)' \
		"$work/held.dat"
) >"$work/holder.out" 2>&1 &
holder=$!
for _ in $(seq 50); do grep -q ready "$work/holder.out" && break; sleep 0.1; done
check "a process holds the file in cgroup ${cg#"$mem"}" grep -q ready "$work/holder.out"

once() { # once RUNNER...: one scan of the test cgroup alone (its label is then "/")
	"$@" --once --no-security.drop-privileges --path.cgroupfs="$cg" --path.procfs=/proc
}
once qemu-aarch64-static -L "$runtime" "$bin" >"$work/arm64.prom" 2>"$work/arm64.log" &&
	pass "the arm64 binary runs under qemu-aarch64-static: --once exits 0" ||
	{ fail "the arm64 binary runs under qemu-aarch64-static: --once exits 0"; sed 's/^/  | /' "$work/arm64.log"; }
once "$amd64" >"$work/amd64.prom" 2>/dev/null
sed 's/^/  | arm64 log: /' "$work/arm64.log"

value() { awk -v m="$2" '$1 == m { print $2 }' "$1"; }
abi=$(sed -n 's/^cachestat_syscall_info{abi="\([a-z]*\)"} 1$/\1/p' "$work/arm64.prom")
echo "  | arm64: cachestat_syscall_info abi=$abi, $(grep -c '^cachestat_' "$work/arm64.prom") cachestat_ samples"
check "the arm64 scan says which cachestat it found (abi=$abi)" test -n "$abi"
# qemu-user passes mincore(2) but not cachestat(2) through: the arm64 scan then used the mincore
# method, whose families the amd64 binary exports with the same method
[ "$abi" = mincore ] && once "$amd64" --cachestat.method=mincore >"$work/amd64.prom" 2>/dev/null
families() { sed -n 's/^# TYPE \([a-z_]*\) .*/\1/p' "$1" | grep -v -e '^process_' | sort; }
extra=$(comm -23 <(families "$work/arm64.prom") <(families "$work/amd64.prom") | tr '\n' ' ')
eq "every family of the arm64 scan is one the amd64 binary exports" "${extra:-none}" none
check "the arm64 scan has the memory.stat and identity families" \
	grep -q '^cachestat_cgroup_info{cgroup="/"' "$work/arm64.prom"
if [ "$abi" = none ]; then
	skip "the arm64 and amd64 binaries export the same families" \
		"without cachestat(2) under qemu-user the cachestat, perfile and subtree collectors have nothing to say"
else
	eq "the arm64 and amd64 binaries export the same families" "$(families "$work/arm64.prom" | tr '\n' ' ')" \
		"$(families "$work/amd64.prom" | tr '\n' ' ')"
fi

# memory.stat, read here: the cgroup's file refaults (v2's key, or v1's total_ one), against the
# exporter's cachestat_cgroup_workingset_refault_file_total: the arm64 parser on the real file.
want=$(awk '$1 == "workingset_refault_file" || $1 == "total_workingset_refault_file" { print $2; exit }' "$cg/memory.stat")
got=$(value "$work/arm64.prom" 'cachestat_cgroup_workingset_refault_file_total{cgroup="/"}')
got=${got%.*}
# within 256 pages: the host's reclaim may refault a few of the holder's pages between the reads
if [ -n "$got" ] && [ -n "$want" ] && [ $((got > want ? got - want : want - got)) -le 256 ]; then
	pass "arm64: memory.stat's file refaults of the cgroup ($got; memory.stat says $want)"
else
	fail "arm64: memory.stat's file refaults of the cgroup: exporter ${got:-nothing}, memory.stat ${want:-nothing}"
fi

if [ "$abi" = none ]; then
	skip "arm64: the held file's cached bytes against fincore" \
		"qemu-user on this machine does not pass cachestat(2) (syscall 451) through: abi=none"
else
	cached=$(fincore -b -n -o RES "$work/held.dat" | tr -d ' ')
	got=$(value "$work/arm64.prom" 'cachestat_cgroup_cached_bytes{cgroup="/"}')
	got=${got%.*}
	check "arm64: the cgroup's cached bytes hold the file's ($got >= fincore's $cached)" \
		test "${got:-0}" -ge "$cached"
	eq "arm64: files counted for the cgroup include the held one" \
		"$(grep -c "held.dat" "$work/arm64.prom" | awk '{ print ($1 > 0) }')" 1
fi
finish

#!/bin/bash
# Runs inside the e2e guest (installed as /usr/local/sbin/e2e-guest): makes cgroups, files and workloads for
# the suite's cases. Every workload runs in the cgroup it is given (a path below /sys/fs/cgroup).
#
#   e2e-guest cgroup CG [MEMORY_MAX]     make the cgroup (and set memory.max)
#   e2e-guest mkfile PATH MIB            write PATH with random data, fsync it, drop it from the page cache
#   e2e-guest hold CG FILE...            detached: read each FILE in CG, then sleep holding them all open
#   e2e-guest write-hold CG FILE MIB     detached: write FILE in CG without fsync, then hold it open
#   e2e-guest read CG FILE [NODE]        read FILE once in CG (memory bound to NUMA node NODE)
#   e2e-guest thrash CG FILE             detached: read FILE over and over in CG
#   e2e-guest reclaim CG BYTES           proactive reclaim (memory.reclaim) in CG
#   e2e-guest remove CG                  kill every process of CG and remove it
set -euo pipefail
cgroot=/sys/fs/cgroup

cg_join() { echo "$BASHPID" >"$cgroot/$1/cgroup.procs"; }

case $1 in
cgroup)
	# Let the memory controller reach the cgroups below the root.
	echo +memory >"$cgroot/cgroup.subtree_control"
	mkdir -p "$cgroot/$2"
	[ -z "${3:-}" ] || echo "$3" >"$cgroot/$2/memory.max"
	;;
mkfile)
	mkdir -p "$(dirname "$2")"
	dd if=/dev/urandom of="$2" bs=1M count="$3" conv=fsync status=none
	dd if="$2" iflag=nocache count=0 status=none
	;;
hold)
	cg=$2
	shift 2
	setsid -f bash -c '
		echo $$ >"$0/cgroup.procs"
		for f; do cat "$f" >/dev/null; exec {fd}<"$f"; done
		exec env -i /usr/bin/sleep infinity' "$cgroot/$cg" "$@" </dev/null >/dev/null 2>&1
	;;
write-hold)
	setsid -f bash -c '
		echo $$ >"$0/cgroup.procs"
		head -c "$(($2 << 20))" /dev/urandom >"$1"
		exec {fd}<"$1"
		exec env -i /usr/bin/sleep infinity' "$cgroot/$2" "$3" "$4" </dev/null >/dev/null 2>&1
	;;
read)
	(
		cg_join "$2"
		if [ -n "${4:-}" ]; then
			exec numactl --membind="$4" cat "$3" >/dev/null
		fi
		exec cat "$3" >/dev/null
	)
	;;
thrash)
	setsid -f bash -c '
		echo $$ >"$0/cgroup.procs"
		exec {fd}<"$1"
		while :; do cat "$1" >/dev/null; done' "$cgroot/$2" "$3" </dev/null >/dev/null 2>&1
	;;
reclaim)
	# Asking for more than the cgroup can give back fails with EAGAIN: report it, the caller decides.
	echo "$3" >"$cgroot/$2/memory.reclaim" || echo "memory.reclaim of $3 in $2: incomplete" >&2
	;;
remove)
	[ -d "$cgroot/$2" ] || exit 0
	echo 1 >"$cgroot/$2/cgroup.kill"
	for _ in $(seq 50); do
		grep -q '^populated 0' "$cgroot/$2/cgroup.events" && break
		sleep 0.1
	done
	rmdir "$cgroot/$2"
	;;
*)
	echo "e2e-guest: unknown command $1" >&2
	exit 2
	;;
esac

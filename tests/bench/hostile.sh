#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-hostile: the cost of one scan (--once: CPU seconds, peak RSS, bytes printed) against
# each input a tenant controls, to show it linear below each cap and flat above it:
#  - cgroups, root's own (the node's cap, --scan.max-cgroups, 10000 by default) and below a
#    delegated directory owned by nobody (the owner's cap, --scan.max-cgroups-per-owner, 1000);
#  - the length of their names, in bytes of 0xff (labels are cut at 1024 bytes);
#  - the descriptors one process holds (one file, dup'ed; RLIMIT_NOFILE and fs.nr_open raised).
# The trees are directories on a tmpfs walked as --path.cgroupfs, each with a cgroup.procs file:
# mkdir in a real cgroupfs costs 30 ms a cgroup here, the exporter's own cost is what is measured.
# Then tests/bench/hostile-overlays.sh (the mount side), when it is there and executable.
# Needs root (chown, the tmpfs, the descriptor limits). HOSTILE_BIN=PATH measures another build
# of the exporter (an older one, for a before and after). HOSTILE_ROWS picks the inputs (default
# "cgroups names descriptors overlays"). A descriptor row the host's limits forbid (RLIMIT_NOFILE's
# hard limit without CAP_SYS_RESOURCE, fs.nr_open) is printed as not run, with the limit found.
# The sizes of each row (the smoke run of tests/bench/smoke.sh takes the smallest of each):
# HOSTILE_CGROUPS="100 1000" (both cgroup rows), HOSTILE_NAME_BYTES="16 255", HOSTILE_FDS="1 1000"
# (descriptors under the default cap), HOSTILE_FDS_CAPPED="1000 5000" (under a cap of 5000), and
# hostile-overlays.sh's OVERLAYS. Exits 1 when a scan fails (a row of a run that did not happen is
# no figure), or with hostile-overlays.sh's status.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=${HOSTILE_BIN:-$top/exporter/cachestat_exporter}
cgroup_rows=${HOSTILE_CGROUPS:-100 1000 2000 5000 10000 20000}
name_rows=${HOSTILE_NAME_BYTES:-16 64 128 255}
fd_rows=${HOSTILE_FDS:-1 1000 10000 19000 100000 1000000}
fd_capped_rows=${HOSTILE_FDS_CAPPED:-1000 5000 10000 19000}
py=/usr/bin/python3
export LC_ALL=C

[ "$(id -u)" -eq 0 ] || { echo "hostile.sh: needs root (chown, a tmpfs, descriptor limits)" >&2; exit 1; }
# time(1), else BusyBox's (the e2e guest has busybox-static, not time), whose %M (1.35) takes
# ru_maxrss, already in KiB, for pages: its peak RSS is divided back
rss_div=1
if [ -x /usr/bin/time ]; then
	timer=(/usr/bin/time)
elif command -v busybox >/dev/null; then
	timer=(busybox time)
	rss_div=$(($(getconf PAGESIZE) / 1024))
else
	echo "hostile.sh: needs /usr/bin/time (apt-get install time) or busybox" >&2
	exit 1
fi
# HOSTILE_BIN is run as it is (in the e2e guest there is no compiler)
[ -n "${HOSTILE_BIN:-}" ] || make -s -C "$top/exporter" >/dev/null || exit 1

work=$(mktemp -d /tmp/cse-hostile.XXXXXX)
holder=
cleanup() {
	[ -n "$holder" ] && kill "$holder" 2>/dev/null
	umount "$work/t" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/t"
mount -t tmpfs -o size=512m,mode=755 cse-hostile "$work/t" || exit 1

# tree N NAMELEN OWNER [PID]: $work/t/tree holding /sys/... (root's, 10) and /tenant (OWNER's)
# with N cgroups below it, 100 a directory, each name NAMELEN bytes of 0xff (16: ASCII);
# PID, when given, is the process of /sys/holder's cgroup.procs.
tree() {
	rm -rf "$work/t/tree"
	"$py" - "$work/t/tree" "$1" "$2" "${4:-}" <<'EOF' || exit 1
import os, sys
root, n, namelen, pid = os.fsencode(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def cg(path, procs=b''):
    os.mkdir(path)
    with open(path + b'/cgroup.procs', 'wb') as f:
        f.write(procs)
cg(root)
cg(root + b'/sys')
for i in range(10):
    cg(root + b'/sys/s%d' % i)
cg(root + b'/sys/holder', pid.encode() + b'\n' if pid else b'')
cg(root + b'/tenant')
def name(i):
    tag = b'%06d' % i
    return tag + (b'x' if namelen == 16 else b'\xff') * (namelen - len(tag))
for g in range((n + 99) // 100):
    d = root + b'/tenant/' + name(g)
    cg(d)
    for i in range(min(100, n - 100 * g) - 1):
        cg(d + b'/' + name(i))
EOF
	[ "$3" = root ] || chown -R "$3" "$work/t/tree/tenant"
}

# measure WHAT VALUE: one --once over the tree (and the flags of measure_args); a row of the table
measure_args=()
rows=" ${HOSTILE_ROWS:-cgroups names descriptors overlays} "
row() { [[ $rows == *" $1 "* ]]; }
# not_run WHAT VALUE WHY: the row of an input this host cannot give, and why
not_run() { printf '| %-34s | %9s | not run: %s |\n' "$1" "$2" "$3"; }
measure() {
	local u s rss
	if ! "${timer[@]}" -f '%U %S %M %e' -o "$work/time" "$bin" --once --path.cgroupfs="$work/t/tree" \
		"${measure_args[@]}" >"$work/out.prom" 2>"$work/err"; then
		echo "hostile.sh: the scan of the row '$1' $2 failed: $(tail -n 3 "$work/err" "$work/time")" >&2
		exit 1
	fi
	read -r u s rss _ <"$work/time"
	printf '| %-34s | %9s | %8.2f | %9s | %12s | %7s |\n' "$1" "$2" \
		"$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')" "$((rss / rss_div / 1024))" \
		"$(wc -c <"$work/out.prom")" "$(grep -c '^cachestat_cgroup_info{' "$work/out.prom")"
}

printf '| %-34s | %9s | %8s | %9s | %12s | %7s |\n' input value "CPU s" "RSS MiB" "bytes" cgroups
printf '|%s|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..36})" "-----------" "----------" \
	"-----------" "--------------" "---------"
if row cgroups; then
	for n in $cgroup_rows; do
		tree "$n" 16 root
		measure "cgroups, root's (node cap 10000)" "$n"
	done
	for n in $cgroup_rows; do
		tree "$n" 16 nobody
		measure "cgroups, delegated (owner cap 1000)" "$n"
	done
fi
if row names; then
	for len in $name_rows; do
		tree 1000 "$len" root
		measure "name bytes of 0xff, 1000 cgroups" "$len"
	done
fi

# the descriptors of one process: one file, dup'ed N times
row descriptors || run_descriptors=false
[ "${run_descriptors:-true}" = false ] || sysctl -q -w fs.nr_open=1100000 2>/dev/null ||
	echo "  (fs.nr_open not raised: it stays $(cat /proc/sys/fs/nr_open))"
head -c 65536 /dev/urandom >"$work/held"
# the default cap (limits.max_descriptors_per_process, 100,000), then one of 5,000: flat above it
printf '{ "limits": { "max_descriptors_per_process": 5000 } }\n' >"$work/cap.json"
for run in "$fd_rows" "cap $fd_capped_rows"; do
	[ "${run_descriptors:-true}" = false ] && break
	label="descriptors of one process"
	measure_args=()
	if [ "${run%% *}" = cap ]; then
		label="descriptors, a cap of 5000"
		measure_args=(--config.file="$work/cap.json")
		run=${run#cap }
	fi
	for n in $run; do
		# raising the hard limit needs CAP_SYS_RESOURCE (a container may not have it)
		if [ $((n + 64)) -gt "$(ulimit -Hn)" ] && ! (ulimit -Hn $((n + 64))) 2>/dev/null; then
			not_run "$label" "$n" \
				"RLIMIT_NOFILE's hard limit is $(ulimit -Hn), and raising it needs CAP_SYS_RESOURCE"
			continue
		fi
		if [ $((n + 64)) -gt "$(cat /proc/sys/fs/nr_open)" ]; then
			not_run "$label" "$n" "fs.nr_open is $(cat /proc/sys/fs/nr_open), and it could not be raised"
			continue
		fi
		"$py" - "$work/held" "$n" "$work/ready" <<'EOF' &
import os, resource, signal, sys
path, n, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 64, n + 64))
fd = os.open(path, os.O_RDONLY)
for _ in range(n - 1):
    os.dup(fd)
open(ready, 'w').close()
signal.pause()
EOF
		holder=$!
		for _ in $(seq 600); do
			[ -e "$work/ready" ] || kill -0 "$holder" 2>/dev/null || break
			[ -e "$work/ready" ] && break
			sleep 0.1
		done
		if ! [ -e "$work/ready" ]; then
			not_run "$label" "$n" "the holder could not open $n descriptors in 60 s (limits: $(ulimit -Hn) hard, fs.nr_open $(cat /proc/sys/fs/nr_open))"
			kill "$holder" 2>/dev/null
			wait "$holder" 2>/dev/null
			holder=
			continue
		fi
		rm -f "$work/ready"
		tree 100 16 root "$holder"
		measure "$label" "$n"
		kill "$holder"
		wait "$holder" 2>/dev/null
		holder=
	done
done
measure_args=()

if row overlays && [ -x "$top/tests/bench/hostile-overlays.sh" ]; then
	echo
	"$top/tests/bench/hostile-overlays.sh"
fi

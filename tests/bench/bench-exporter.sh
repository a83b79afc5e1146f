#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Exporter benchmark (make bench-exporter; not part of make test).
#
# 100,000 small files and 100 large ones over a 3-level tree of 100 cgroups below the walked root:
# 10 slices s0..s9 of 9 leaves each (s0/l0..s0/l8). The files are in 10 sets of 10 directories
# (1,000 small each) and 10 large: slice sC is assigned the large ones and the last directory of
# set C, its leaf lK directory K. In each slice's leaf l0 a process holds 1,000 small files (l0's
# own) and the 10 large (the slice's) open: they dedupe in l0 and in the slice's subtree, and the
# per-cgroup sums count the large ones twice. All files are cached first, so every tool answers
# the same question about warm files. Prints one table: the exporter's full scan (--once, and a
# timed scrape of the daemon), the floor (open + cachestat + close over the same files, see
# floor.c), vmtouch and fincore (both mincore-based), and the exporter's peak RSS. Then the
# mincore method (--cachestat.method=mincore) in the same rounds, against its own floor (open +
# mmap + mincore + munmap + close: floor.c --mincore), beside the cachestat path's ratio and
# vmtouch's against that floor.
# Then files on overlayfs, reported apart: one cgroup's files read through an overlay whose
# lower layer is that cgroup's directory, against the floor over the same (real) files.
# BENCH_BASELINE=/path/to/another/cachestat_exporter adds its --once and scrape rows to the same
# rounds (and its --once through the overlay), to compare two builds under the same load. BENCH_PATHS=glob names each configured
# directory's files by a glob (DIR/*), expanded by the exporter, instead of walking it.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$top/exporter/cachestat_exporter
BUILD_ROOT=${BUILD_ROOT:-/var/tmp/cachestat_exporter}
# BENCH_CGROUPS, BENCH_FILES_PER_DIR and BENCH_LARGE_MIB shrink the tree (the smoke run of make test)
n_cgroups=${BENCH_CGROUPS:-10} leaves=9 per_dir=${BENCH_FILES_PER_DIR:-1000}
small_per_cgroup=$((10 * per_dir)) large_per_cgroup=10 held_small=$((10 * per_dir < 1000 ? 10 * per_dir : 1000))
small_max=8192 large_size=$((${BENCH_LARGE_MIB:-8} << 20))
runs=${BENCH_RUNS:-7}
base_bin=${BENCH_BASELINE:-}
glob=
[ "${BENCH_PATHS:-walk}" = glob ] && glob='/*'

[ "$(id -u)" -eq 0 ] || { echo "bench-exporter: needs root (cgroups)" >&2; exit 1; }
for t in vmtouch fincore python3 curl; do
	command -v $t >/dev/null || { echo "bench-exporter: $t missing (tests/bench/deps.txt)" >&2; exit 1; }
done
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$cg2" ] || { echo "bench-exporter: no cgroup v2 mounted" >&2; exit 1; }
[ -x "$bin" ] || make -s -C "$top/exporter"
[ -z "$base_bin" ] || [ -x "$base_bin" ] || { echo "bench-exporter: $base_bin is not executable" >&2; exit 1; }

# ---- the tree, cached under BUILD_ROOT by its parameters ----
key=$(echo "$n_cgroups $small_per_cgroup $large_per_cgroup $small_max $large_size v1 $per_dir" | sha256sum | cut -c1-12)
tree=$BUILD_ROOT/bench-exporter/tree-$key
if [ ! -e "$tree/.complete" ]; then
	echo "building the file tree in $tree ..." >&2
	rm -rf "$tree"
	python3 - "$tree" "$n_cgroups" "$small_per_cgroup" "$large_per_cgroup" "$small_max" "$large_size" "$per_dir" <<'PY'
import os, random, sys
tree, ncg, nsmall, nlarge, smax, lsize, per_dir = sys.argv[1], *map(int, sys.argv[2:])
rnd = random.Random(42)
chunk = os.urandom(1 << 20)
for c in range(ncg):
    for d in range(nsmall // per_dir):  # 10 directories
        p = f"{tree}/cg{c}/d{d:02d}"
        os.makedirs(p)
        for i in range(per_dir):
            with open(f"{p}/f{i:04d}", "wb") as f:
                f.write(chunk[: rnd.randint(1, smax)])
    os.makedirs(f"{tree}/cg{c}/large")
    for i in range(nlarge):
        with open(f"{tree}/cg{c}/large/L{i:02d}", "wb") as f:
            for _ in range(lsize >> 20):
                f.write(chunk)
PY
	sync
	touch "$tree/.complete"
fi

work=$(mktemp -d /var/tmp/cse-bench.XXXXXX)
parent=$cg2/cse-bench-$$
holders=()
daemon='' base_daemon=''
cleanup() {
	local p
	for p in $daemon $base_daemon; do kill "$p" 2>/dev/null; done
	for p in "${holders[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${holders[@]}" $daemon $base_daemon; do while kill -0 "$p" 2>/dev/null; do sleep 0.05; done; done
	for c in $(seq 0 $((n_cgroups - 1))); do
		for k in $(seq 0 $((leaves - 1))); do rmdir "$parent/s$c/l$k" 2>/dev/null || true; done
		rmdir "$parent/s$c" 2>/dev/null || true
	done
	rmdir "$parent" 2>/dev/null || true
	umount "$work/ovl/m" 2>/dev/null || true
	rmdir "$parent-ovl/ovl" "$parent-ovl" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir "$parent"

find "$tree" -type f ! -name .complete | sort >"$work/list"
n_files=$(wc -l <"$work/list")
# warm the page cache: every tool then looks at the same, fully cached files
xargs -d '\n' cat <"$work/list" >/dev/null

# ---- holders and config ----
config=$work/config.json
{
	echo '{ "cgroups": ['
	for c in $(seq 0 $((n_cgroups - 1))); do
		sep=,
		[ "$c" -eq $((n_cgroups - 1)) ] && sep=
		echo "  { \"match\": \"/s$c\", \"paths\": [\"$tree/cg$c/large$glob\", \"$tree/cg$c/d09$glob\"] },"
		for k in $(seq 0 $((leaves - 1))); do
			echo "  { \"match\": \"/s$c/l$k\", \"paths\": [\"$tree/cg$c/d0$k$glob\"] },"
		done | sed '$ s/,$//'
		echo "$sep"
	done
	echo '], "limits": { "max_scan_seconds": 120 } }'
} >"$config"
for c in $(seq 0 $((n_cgroups - 1))); do
	mkdir "$parent/s$c"
	for k in $(seq 0 $((leaves - 1))); do mkdir "$parent/s$c/l$k"; done
	python3 - "$parent/s$c/l0" "$tree/cg$c" "$held_small" <<'PY' &
import os, resource, sys, time, glob
cg, d, nheld = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(f"{cg}/cgroup.procs", "w") as f:
    f.write(str(os.getpid()))
resource.setrlimit(resource.RLIMIT_NOFILE, (nheld + 200, nheld + 200))
small = sorted(glob.glob(f"{d}/d*/f*"))[:nheld]
large = sorted(glob.glob(f"{d}/large/*"))
fds = [os.open(p, os.O_RDONLY) for p in small + large]
time.sleep(3600)
PY
	holders+=($!)
done
for p in "${holders[@]}"; do
	for _ in $(seq 200); do
		[ "$(ls /proc/$p/fd 2>/dev/null | wc -l)" -ge $((held_small + large_per_cgroup)) ] && break
		sleep 0.05
	done
done

# ---- measurements: the tools interleaved, $runs rounds; best and median of each ----
# The build machine is shared (a kernel build may run beside), so wall time is noisy: the best
# of the rounds and the CPU time (user + sys) are the steadier figures.
cc -O2 -o "$work/floor" "$top/tests/bench/floor.c"
free_port() { # free_port FIRST: the first port from FIRST on that nothing listens on
	local p
	for p in $(seq "$1" $(($1 + 99))); do
		[ -z "$(ss -Htln "sport = :$p")" ] && { echo "$p"; return; }
	done
	return 1
}
start_daemon() { # start_daemon BINARY PORT LOG: the pid in $started
	"$1" --web.listen-address="127.0.0.1:$2" --path.cgroupfs="$parent" --config.file="$config" 2>"$3" &
	started=$!
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$2/" >/dev/null && break; sleep 0.05; done
	curl -sf -o /dev/null "http://127.0.0.1:$2/metrics"   # first scrape: warm-up
}
port=$(free_port 29551)
start_daemon "$bin" "$port" "$work/daemon.log"
daemon=$started
if [ -n "$base_bin" ]; then
	base_port=$(free_port $((port + 1)))
	start_daemon "$base_bin" "$base_port" "$work/base-daemon.log"
	base_daemon=$started
fi
hz=$(getconf CLK_TCK)

declare -A wall cpu
timed() { # timed NAME COMMAND...: appends "wall cpu" of one run; leaves peak RSS in $work/rss
	local name=$1
	shift
	"$top/tests/bench/timed.py" "$work/t" "$work/$name.out" "$work/$name.err" "$@"
	read -r w u s m <"$work/t"
	wall[$name]+="$w "
	cpu[$name]+="$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }') "
	echo "$m" >>"$work/rss.$name"
}
daemon_cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
scrape() { # scrape NAME PID PORT: appends the wall and CPU time of one scrape
	local c0
	c0=$(daemon_cpu "$2")
	wall[$1]+="$(curl -sf -o /dev/null -w '%{time_total}' "http://127.0.0.1:$3/metrics") "
	cpu[$1]+="$(awk -v a="$c0" -v b="$(daemon_cpu "$2")" -v hz="$hz" 'BEGIN { print (b - a) / hz }') "
}
for _ in $(seq "$runs"); do
	timed floor "$work/floor" "$work/list"
	wall[floor_loop]+="$(cut -d' ' -f2 "$work/floor.out") "
	timed once "$bin" --once --path.cgroupfs="$parent" --config.file="$config"
	timed once_flat "$bin" --once --no-collector.subtree --path.cgroupfs="$parent" --config.file="$config"
	wall[scan]+="$(awk '/^cachestat_scrape_collector_duration_seconds\{collector="cachestat"\}/ { print $2 }' "$work/once.out") "
	scrape scrape "$daemon" "$port"
	if [ -n "$base_bin" ]; then
		timed base_once "$base_bin" --once --path.cgroupfs="$parent" --config.file="$config"
		scrape base_scrape "$base_daemon" "$base_port"
	fi
	timed floor_mincore "$work/floor" --mincore "$work/list"
	timed once_mincore "$bin" --once --cachestat.method=mincore --path.cgroupfs="$parent" --config.file="$config"
	timed vmtouch vmtouch -q "$tree"
	timed fincore sh -c "xargs -d '\n' -n 20000 fincore -b -n -o RES <'$work/list'"
done
floor_cached=$(cut -d' ' -f3 "$work/floor.out")
# the subtree's file count is the JSON report's (no series carries it)
ex_files=$("$bin" --once --format=json --path.cgroupfs="$parent" --config.file="$config" 2>/dev/null |
	python3 -c 'import json, sys; print(next(c["subtree"]["files"] for c in json.load(sys.stdin)["cgroups"] if c["cgroup"] == "/"))')
ex_cached=$(awk '/^cachestat_cgroup_subtree_cached_bytes\{cgroup="\/"\}/ { print $2 }' "$work/once.out")
sum_cached=$(awk '/^cachestat_cgroup_cached_bytes\{/ { s += $2 } END { printf "%.0f\n", s }' "$work/once.out")
# set insertions of the subtree union: a file new to the node, once per level from its cgroup up
inserts=$(awk '/^cachestat_cgroup_files\{/ { gsub(/.*cgroup="|"\}.*/, "", $1); d = gsub(/\//, "/", $1); if ($1 == "/") d = 0; s += $2 * (d + 1) } END { print s }' "$work/once.out")
ex_rss=$(sort -n "$work/rss.once" | tail -n 1)
daemon_rss=$(awk '/^VmHWM/ { print $2 }' /proc/$daemon/status)

best() { tr ' ' '\n' | sed '/^$/d' | sort -g | head -n 1; }
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
fmt() { awk -v a="$1" 'BEGIN { printf "%.4f", a }'; }
fw=$(best <<<"${wall[floor]}") fc=$(best <<<"${cpu[floor]}")
row() { # row LABEL COMMAND NAME: ratios against the floor in fw and fc
	local w m c
	w=$(best <<<"${wall[$3]}") m=$(median <<<"${wall[$3]}")
	c=$(best <<<"${cpu[$3]:-}")
	echo "| $1 | $2 | $(fmt "$w") | $(fmt "$m") | $([ -n "$c" ] && fmt "$c" || echo -) | $(ratio "$w" "$fw") | $([ -n "$c" ] && ratio "$c" "$fc" || echo -) |"
}

echo
echo "exporter benchmark: $n_files files ($((n_cgroups * small_per_cgroup)) small up to $small_max B, $((n_cgroups * large_per_cgroup)) of $((large_size >> 20)) MiB) over a 3-level tree of $((n_cgroups * (leaves + 1))) cgroups ($n_cgroups slices of $leaves leaves), all cached; paths ${BENCH_PATHS:-walk}ed; $runs interleaved rounds; kernel $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "exporter counted $ex_files files, $ex_cached bytes cached in the root's subtree (each inode once); the per-cgroup gauges summed: $sum_cached bytes (the held large files twice); floor $floor_cached bytes over its list (the exporter adds the holders' own mapped files)"
echo "subtree union: at most $inserts set insertions (per-cgroup files x (depth + 1)); its cost is the once row minus the --no-collector.subtree row"
echo
echo "| what | command | best wall (s) | median wall (s) | CPU user+sys (s) | wall vs floor | CPU vs floor |"
echo "|---|---|---:|---:|---:|---:|---:|"
row "floor: open + cachestat + close" '`tests/bench/floor.c LIST`' floor
row "floor, its loop alone" '(timed inside)' floor_loop
row "exporter, one scan" '`cachestat_exporter --once`' once
row "exporter, one scan without subtree totals" '`--once --no-collector.subtree`' once_flat
row "exporter, its cachestat collector alone" '(cachestat_scrape_collector_duration_seconds)' scan
row "exporter daemon, a scrape" '`curl /metrics`' scrape
if [ -n "$base_bin" ]; then
	row "baseline exporter, one scan" '`BENCH_BASELINE --once`' base_once
	row "baseline daemon, a scrape" '`curl /metrics`' base_scrape
fi
row "vmtouch (mincore)" '`vmtouch -q TREE`' vmtouch
row "fincore (mincore)" '`xargs fincore -b -n -o RES < LIST`' fincore

# ---- the mincore method, against its own floor ----
cs_ratio=$(ratio "$(best <<<"${wall[once]}")" "$fw")
fw=$(best <<<"${wall[floor_mincore]}") fc=$(best <<<"${cpu[floor_mincore]}")
mc_cached=$(awk '/^cachestat_cgroup_subtree_cached_bytes\{cgroup="\/"\}/ { print $2 }' "$work/once_mincore.out")
echo
echo "the mincore method: exporter counted $mc_cached bytes cached in the root's subtree (cachestat: $ex_cached); its floor $(cut -d' ' -f3 "$work/floor_mincore.out") bytes over its list"
echo
echo "| what | command | best wall (s) | median wall (s) | CPU user+sys (s) | wall vs mincore floor | CPU vs mincore floor |"
echo "|---|---|---:|---:|---:|---:|---:|"
row "floor: open + mmap + mincore + munmap + close" '`tests/bench/floor.c --mincore LIST`' floor_mincore
row "exporter, one scan, mincore method" '`cachestat_exporter --once --cachestat.method=mincore`' once_mincore
row "vmtouch (mincore)" '`vmtouch -q TREE`' vmtouch
echo
echo "ratios to their own floors (best wall): cachestat path $cs_ratio, mincore path $(ratio "$(best <<<"${wall[once_mincore]}")" "$fw"), vmtouch $(ratio "$(best <<<"${wall[vmtouch]}")" "$fw")"
echo
echo "exporter peak RSS: --once $((ex_rss / 1024)) MiB ($ex_rss KiB); daemon after $((runs + 1)) scrapes $((daemon_rss / 1024)) MiB ($daemon_rss KiB)"

# ---- files on overlayfs: the real file is looked up through the layers ----
ovl=$work/ovl
mkdir -p "$ovl/u" "$ovl/w" "$ovl/m"
if ! mount -t overlay overlay -o "lowerdir=$tree/cg0,upperdir=$ovl/u,workdir=$ovl/w" "$ovl/m"; then
	echo
	echo "overlay: cannot mount overlayfs here; no overlay figures"
	exit 0
fi
mkdir "$parent-ovl" "$parent-ovl/ovl"
python3 - "$parent-ovl/ovl" "$ovl/m" "$held_small" <<'PY' &
import os, resource, sys, time, glob
cg, d, nheld = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(f"{cg}/cgroup.procs", "w") as f:
    f.write(str(os.getpid()))
resource.setrlimit(resource.RLIMIT_NOFILE, (nheld + 200, nheld + 200))
small = sorted(glob.glob(f"{d}/d*/f*"))[:nheld]
large = sorted(glob.glob(f"{d}/large/*"))
fds = [os.open(p, os.O_RDONLY) for p in small + large]
time.sleep(3600)
PY
holders+=($!)
for _ in $(seq 200); do
	[ "$(ls "/proc/${holders[-1]}/fd" 2>/dev/null | wc -l)" -ge $((held_small + large_per_cgroup)) ] && break
	sleep 0.05
done
echo "{ \"cgroups\": [ { \"match\": \"/ovl\", \"paths\": [\"$ovl/m\"] } ], \"limits\": { \"max_scan_seconds\": 120 } }" \
	>"$work/ovl.json"
grep "^$tree/cg0/" "$work/list" >"$work/ovl.list"
for _ in $(seq "$runs"); do
	timed ovl_floor "$work/floor" "$work/ovl.list"
	timed ovl_once "$bin" --once --path.cgroupfs="$parent-ovl" --config.file="$work/ovl.json"
	if [ -n "$base_bin" ]; then
		timed ovl_base "$base_bin" --once --path.cgroupfs="$parent-ovl" --config.file="$work/ovl.json"
	fi
done
fw=$(best <<<"${wall[ovl_floor]}") fc=$(best <<<"${cpu[ovl_floor]}")
ovl_files=$(awk '/^cachestat_cgroup_files\{/ { s += $2 } END { print s }' "$work/ovl_once.out")
ovl_cached=$(awk '/^cachestat_cgroup_cached_bytes\{/ { s += $2 } END { print s }' "$work/ovl_once.out")
ovl_unres=$(awk '/^cachestat_files_skipped_total\{reason="overlay_unresolved"\}/ { print $2 }' "$work/ovl_once.out")
echo
echo "files on overlayfs: $(wc -l <"$work/ovl.list") files of cg0 through an overlay (lower: its directory), held open ($((held_small + large_per_cgroup))) and walked by the config"
echo "exporter counted $ovl_files files, $ovl_cached bytes cached, ${ovl_unres:-?} overlay_unresolved; floor $(cut -d' ' -f3 "$work/ovl_floor.out") bytes over the real files"
echo
echo "| what | command | best wall (s) | median wall (s) | CPU user+sys (s) | wall vs floor | CPU vs floor |"
echo "|---|---|---:|---:|---:|---:|---:|"
row "floor over the real files" '`tests/bench/floor.c LIST`' ovl_floor
row "exporter, one scan through the overlay" '`cachestat_exporter --once`' ovl_once
if [ -n "$base_bin" ]; then
	row "baseline exporter, one scan through the overlay" '`BENCH_BASELINE --once`' ovl_base
fi

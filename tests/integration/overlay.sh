#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Files read through overlayfs, on real overlay mounts of this machine: the exporter must
# report the page cache of the real (upper or lower) file, which fincore (util-linux, mincore-
# based, independent of the exporter) measures on that file, and skip what it cannot find for
# sure (cachestat_files_skipped_total{reason="overlay_unresolved"}) rather than say 0.
#
# Cases, each in its own cgroup with a process holding the file open (or mapped): upper-only,
# lower-only in the third of three lowers, copied-up, a namesake trap (the same path in a
# lower, another file), a whiteout over a file still open (with a namesake in another lower),
# an mmap without a descriptor, metacopy (renamed, so found through its redirect) and a data-
# only lower where the kernel allows them, a container's root file system (pivot_root: the
# layers are named in the host's namespace) and an overlay mounted inside a private mount
# namespace (its layers exist only there), and a userxattr mount whose user sets
# user.overlay.metacopy and .redirect on its own file after opening it, pointing at a secret in
# a lower layer: the user's file is measured, never the secret. Then the daemon's capabilities:
# as nobody with the four it keeps, metacopy (trusted.* xattrs unreadable) is skipped, not zero.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed, N skipped" last.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
bin=${CACHESTAT_EXPORTER:-$top/exporter/cachestat_exporter}
mib=$((1 << 20))
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"
# shellcheck source=tests/integration/lib-subtree.sh
. "$top/tests/integration/lib-subtree.sh"

subtree_setup ov jq busybox fincore unshare setpriv python3

# ---- helpers ---- (ovmount, res, the oracle, and file_cached: lib-subtree.sh)
# snapshot FILE...: the oracle of each file just before a scan, for near. An earlier scan's readings are
# forgotten: near compares a file not taken here with fincore now alone, never with an older, wider range.
declare -A before=()
snapshot() { local f; before=(); for f; do before[$f]=$(res "$f" 2>/dev/null); done; }
# near NAME GOT FILE: GOT, the exporter's bytes, lies between fincore of FILE before the scan and now. A loaded
# machine evicts a few pages while the scan runs, and the scan and fincore each see their own moment.
near() {
	local was=${before[$3]:-} now lo hi
	now=$(res "$3")
	was=${was:-$now}
	lo=$((was < now ? was : now)) hi=$((was > now ? was : now))
	if [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -ge "$lo" ] && [ "$2" -le "$hi" ]; then
		pass "$1 ($2)"
	else
		fail "$1: got '$2', want fincore's $lo..$hi"
	fi
}
mkdata() { head -c "$2" /dev/urandom >"$1"; }              # mkdata FILE BYTES
drop() { python3 -c 'import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)' "$1"; }
xattr() { python3 -c 'import os,sys; print(os.getxattr(sys.argv[1],sys.argv[2]) is not None)' "$1" "$2" 2>/dev/null; }
# hold NAME COMMAND...: runs COMMAND (which ends up sleeping) in cgroup NAME
hold() {
	local name=$1
	shift
	mkdir "$parent/$name"
	# no descriptor of ours: a log file as stdout would be one more regular file of the cgroup
	busybox sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$parent/$name" "$@" \
		</dev/null >/dev/null 2>&1 &
	holders+=($!)
}
# open_hold NAME FILE: a process of cgroup NAME holds FILE open
open_hold() { hold "$1" busybox sh -c 'exec 3<"$1"; exec busybox sleep 3600' sh "$2"; }
wait_fd() { # wait_fd PID PATH: until the process has PATH open or mapped
	local f
	for _ in $(seq 100); do
		grep -qF "$2" "/proc/$1/maps" 2>/dev/null && return 0
		for f in /proc/"$1"/fd/*; do
			case $(readlink "$f" 2>/dev/null) in *"$2"*) return 0 ;; esac
		done
		sleep 0.05
	done
	return 1
}
once() { # once OUT [setpriv args]: a scan of our subtree, as JSON
	local out=$1
	shift
	"$@" "$bin" --once --format=json --path.cgroupfs="$parent" --config.file="$work/config.json" \
		>"$out" 2>"$out.err" || true
}
cg_field() { jq -r --arg c "/$2" --arg f "$3" '.cgroups[] | select(.cgroup == $c) | .[$f]' "$1"; }
unresolved() { jq -r '.files_skipped_total.overlay_unresolved' "$1"; }
echo '{ "per_file_top": 50 }' >"$work/config.json"

# ---- mount A: three lowers and an upper, all on one file system ----
a=$work/a
mkdir -p "$a"/{l1,l2,l3,u,w} "$a/l1/wo" "$a/l2/wo"
mkdata "$a/l3/lower_only.bin" $((8 * mib))
mkdata "$a/l1/copied.bin" $((8 * mib))
mkdata "$a/l1/trap.bin" $((8 * mib))   # the namesake, below
mkdata "$a/u/trap.bin" $((8 * mib))    # the file the overlay shows
mkdata "$a/l1/wo/gone.bin" $((4 * mib))
mkdata "$a/l2/wo/gone.bin" $((4 * mib)) # a namesake under the whiteout
mkdata "$a/l2/mapped.bin" $((8 * mib))
sync # written pages are dirty until written back, and fadvise cannot drop them
if ! ovmount "$a/m" "lowerdir=$a/l1:$a/l2:$a/l3,upperdir=$a/u,workdir=$a/w"; then
	skip_suite "cannot mount overlayfs here"
fi
m=$a/m

# upper-only: written through the overlay, synced, half of it dropped
mkdata "$m/upper_only.bin" $((6 * mib))
sync
python3 -c 'import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); os.posix_fadvise(fd,0,3<<20,os.POSIX_FADV_DONTNEED)' "$a/u/upper_only.bin"
open_hold upper "$m/upper_only.bin"
# lower-only, in the third lower
cat "$m/lower_only.bin" >/dev/null
open_hold lower "$m/lower_only.bin"
# copied-up: chmod copies it up whole (no metacopy here); the lower's pages dropped
chmod 600 "$m/copied.bin"
drop "$a/l1/copied.bin"
cat "$m/copied.bin" >/dev/null
open_hold copied "$m/copied.bin"
# the namesake trap: the lower file fully cached, the upper one (shown) in part
cat "$a/l1/trap.bin" >/dev/null
drop "$a/u/trap.bin"
head -c $((1 * mib)) "$m/trap.bin" >/dev/null
open_hold trap "$m/trap.bin"
# whiteout: held open, then deleted through the overlay; the namesake in l2 is cached
cat "$m/wo/gone.bin" "$a/l2/wo/gone.bin" >/dev/null
open_hold whiteout "$m/wo/gone.bin"
# mapped: mmap, close the descriptor, touch every page
hold mapped python3 -c 'import mmap,os,sys,time
fd=os.open(sys.argv[1],os.O_RDONLY); mm=mmap.mmap(fd,0,prot=mmap.PROT_READ); os.close(fd)
s=sum(mm[i] for i in range(0,len(mm),4096)); time.sleep(3600)' "$m/mapped.bin"
for p in "${holders[@]}"; do wait_fd "$p" "$m/" || true; done
rm "$m/wo/gone.bin"
wait_fd "${holders[5]}" mapped.bin || true

# ---- mount B: metacopy (a chmod copies the metadata up, the data stays below) ----
b=$work/b
mkdir -p "$b"/{l,u,w}
mkdata "$b/l/meta.bin" $((8 * mib))
metacopy=no
if ovmount "$b/m" "lowerdir=$b/l,upperdir=$b/u,workdir=$b/w,metacopy=on,redirect_dir=on"; then
	chmod 600 "$b/m/meta.bin"
	mv "$b/m/meta.bin" "$b/m/meta2.bin" # renamed: the upper file's redirect leads to the data
	[ "$(xattr "$b/u/meta2.bin" trusted.overlay.metacopy)" = True ] && metacopy=yes
	cat "$b/m/meta2.bin" >/dev/null
	open_hold metacopy "$b/m/meta2.bin"
fi

# ---- mount C: a data-only lower, reached by a metacopy file's absolute redirect ----
c=$work/c
mkdir -p "$c"/{l,d}
mkdata "$c/d/blob" $((8 * mib))
truncate -s $((8 * mib)) "$c/l/dm.bin"
touch -r "$c/d/blob" "$c/l/dm.bin"
dataonly=no
if python3 -c 'import os,sys; os.setxattr(sys.argv[1],"trusted.overlay.metacopy",b""); os.setxattr(sys.argv[1],"trusted.overlay.redirect",b"/blob")' "$c/l/dm.bin" &&
	ovmount "$c/m" "lowerdir=$c/l::$c/d,metacopy=on,redirect_dir=follow" 2>/dev/null &&
	cat "$c/m/dm.bin" >/dev/null 2>&1; then
	dataonly=yes
	open_hold dataonly "$c/m/dm.bin"
fi

# ---- mount D: a container's root file system; the process pivot_root()s into it ----
d=$work/d
mkdir -p "$d"/{l/bin,u,w}
cp "$(readlink -f "$(command -v busybox)")" "$d/l/bin/busybox"
mkdata "$d/l/data.bin" $((8 * mib))
ovmount "$d/m" "lowerdir=$d/l,upperdir=$d/u,workdir=$d/w"
mkdir "$d/m/.old"
cat "$d/m/data.bin" >/dev/null
hold container unshare -m --propagation private busybox sh -c \
	'cd "$1" && pivot_root . .old && exec /bin/busybox sh -c "umount -l /.old; exec 3</data.bin; exec /bin/busybox sleep 3600"' \
	sh "$d/m"
# ---- E: an overlay mounted inside a private mount namespace, on layers only it sees ----
e=$work/e
mkdir -p "$e"
hold nested unshare -m --propagation private busybox sh -c '
	mount -t tmpfs none "$1" && mkdir "$1/l" "$1/u" "$1/w" "$1/m" &&
	head -c 4194304 /dev/urandom >"$1/l/inner.bin" &&
	mount -t overlay overlay -o "lowerdir=$1/l,upperdir=$1/u,workdir=$1/w" "$1/m" &&
	cat "$1/m/inner.bin" >/dev/null && exec 3<"$1/m/inner.bin" && exec busybox sleep 3600' sh "$e"
cpid=${holders[-2]} npid=${holders[-1]}
wait_fd "$cpid" /data.bin || true
wait_fd "$npid" "$e/m/inner.bin" || true

# ---- one scan, as root ----
out=$work/once.json
snapshot "$a/u/upper_only.bin" "$a/l3/lower_only.bin" "$a/u/copied.bin" "$a/u/trap.bin" "$a/l2/mapped.bin" \
	"$b/l/meta.bin" "$c/d/blob" "$d/l/data.bin"
once "$out"
if ! jq -e . "$out" >/dev/null 2>&1; then
	fail "--once --format=json prints JSON"
	sed 's/^/    /' "$out.err"
	finish
fi

near "upper-only: exporter = fincore of the upper file" \
	"$(file_cached "$out" upper "$m/upper_only.bin")" "$a/u/upper_only.bin"
near "lower-only (third lower): exporter = fincore of the lower file" \
	"$(file_cached "$out" lower "$m/lower_only.bin")" "$a/l3/lower_only.bin"
n=$(res "$a/l3/lower_only.bin")
if [ "$n" -ge $((4 * mib)) ]; then pass "lower-only: fincore says most of it is cached ($n)"; else
	fail "lower-only: fincore says $n bytes are cached, want at least 4 MiB (the read above)"; fi
near "copied-up: exporter = fincore of the upper copy" \
	"$(file_cached "$out" copied "$m/copied.bin")" "$a/u/copied.bin"
eq "copied-up: the lower file's pages were dropped (not what is measured)" "$(res "$a/l1/copied.bin")" 0
near "namesake trap: exporter = fincore of the upper file" \
	"$(file_cached "$out" trap "$m/trap.bin")" "$a/u/trap.bin"
n=$(res "$a/l1/trap.bin")
if [ "$n" != "$(file_cached "$out" trap "$m/trap.bin")" ]; then
	pass "namesake trap: the lower namesake's cache ($n) is another number"
else
	fail "namesake trap: the lower namesake's cache ($n) is the number reported: no trap"
fi
eq "whiteout: the deleted file is not counted" \
	"$(file_cached "$out" whiteout "$m/wo/gone.bin (deleted)")" absent
eq "whiteout: the cached namesake under it is not counted either" \
	"$(file_cached "$out" whiteout "$a/l2/wo/gone.bin")" absent
eq "whiteout: the cgroup counts busybox alone" "$(cg_field "$out" whiteout files)" 1
near "mapped (no descriptor): exporter = fincore of the lower file" \
	"$(file_cached "$out" mapped "$m/mapped.bin")" "$a/l2/mapped.bin"
if [ "$metacopy" = yes ]; then
	near "metacopy (renamed): exporter = fincore of the lower data file" \
		"$(file_cached "$out" metacopy "$b/m/meta2.bin")" "$b/l/meta.bin"
	eq "metacopy: the upper metadata file holds no page" "$(res "$b/u/meta2.bin")" 0
else
	skip "metacopy" "this kernel made no metacopy file (metacopy=on refused or not used)"
fi
if [ "$dataonly" = yes ]; then
	near "data-only lower: exporter = fincore of the data file" \
		"$(file_cached "$out" dataonly "$c/m/dm.bin")" "$c/d/blob"
else
	skip "data-only lower" "this kernel refused lowerdir=L::DATA"
fi
near "container root (pivot_root): exporter = fincore of the layer file" \
	"$(file_cached "$out" container /data.bin)" "$d/l/data.bin"
eq "overlay inside a mount namespace: exporter = fincore there" \
	"$(file_cached "$out" nested "$e/m/inner.bin")" \
	"$(nsenter -t "$npid" -m fincore -b -n -o RES "$e/l/inner.bin" | tr -d ' ')"
eq "one file skipped as overlay_unresolved (the whiteout)" "$(unresolved "$out")" 1
eq "lower-only: the cgroup counts its file and busybox" "$(cg_field "$out" lower files)" 2

# ---- mount F: userxattr (as an unprivileged user mounts it), xattrs set after the open ----
# A user's own file, sized like a secret in a lower layer the user cannot read, gets
# user.overlay.metacopy and user.overlay.redirect once it is held open. overlayfs never reads
# them on a userxattr mount (redirect_dir=nofollow, metacopy=off): the file measured must be the
# user's, never the secret (an oracle for any file's cache state and size).
f=$work/f
mkdir -p "$f"/{l1,secret,u,w}
mkdata "$f/secret/shadow" 4096
chmod 0600 "$f/secret/shadow"
mkdata "$f/l1/x" 4096
touch -r "$f/secret/shadow" "$f/l1/x"
sync
if ovmount "$f/m" "lowerdir=$f/l1:$f/secret,upperdir=$f/u,workdir=$f/w,userxattr"; then
	drop "$f/l1/x"
	cat "$f/secret/shadow" >/dev/null
	open_hold oracle "$f/m/x"
	wait_fd "${holders[-1]}" "$f/m/x" || fail "userxattr: the holder opened m/x"
	python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.overlay.metacopy", b"");
os.setxattr(sys.argv[1], "user.overlay.redirect", b"/shadow")' "$f/l1/x"
	grep -F "$f/m" /proc/self/mountinfo | grep -q 'userxattr' || fail "userxattr: mountinfo shows the option"
	snapshot "$f/l1/x"
	once "$work/oracle.json"
	eq "userxattr, xattrs set after the open: the secret is cached (oracle)" "$(res "$f/secret/shadow")" 4096
	near "userxattr: exporter = fincore of the user's own file, not the secret" \
		"$(file_cached "$work/oracle.json" oracle "$f/m/x")" "$f/l1/x"
else
	skip "userxattr overlay" "this kernel refused the userxattr option"
fi

# ---- as nobody with the daemon's capabilities: no CAP_SYS_ADMIN, trusted.* unreadable ----
caps=+sys_ptrace,+dac_read_search,+fowner,+checkpoint_restore
nob=$work/nobody.json
snapshot "$a/l3/lower_only.bin" "$a/u/copied.bin"
once "$nob" setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups \
	--inh-caps=-all,"$caps" --ambient-caps=-all,"$caps" --bounding-set=-all,"$caps"
near "as nobody: lower-only still = fincore" \
	"$(file_cached "$nob" lower "$m/lower_only.bin")" "$a/l3/lower_only.bin"
near "as nobody: copied-up still = fincore" \
	"$(file_cached "$nob" copied "$m/copied.bin")" "$a/u/copied.bin"
if [ "$metacopy" = yes ]; then
	eq "as nobody: metacopy is not reported as a zero" \
		"$(file_cached "$nob" metacopy "$b/m/meta2.bin")" absent
	if [ "$dataonly" = yes ]; then
		eq "as nobody: the data-only lower's file is not reported as a zero" \
			"$(file_cached "$nob" dataonly "$c/m/dm.bin")" absent
	fi
	want=$((2 + $([ "$dataonly" = yes ] && echo 1 || echo 0)))
	eq "as nobody: whiteout and metacopy skipped as overlay_unresolved" "$(unresolved "$nob")" "$want"
fi

# ---- mount G: the layers a scan keeps open are its own ----
# A scan keeps each overlay's layers (and the directory of its last file) open until it ends.
# Between two scans of one daemon the overlay is unmounted and another mounted on the same point
# (its mount id may be the freed one): the same names, sizes and mtimes in another lower, cached
# differently. The second scan must measure the new lower's files: a
# layer kept from the first would find the old ones (then skipped, or their numbers).
g=$work/g
mkdir -p "$g"/{l1,l2,u1,w1,u2,w2,m,empty} "$g/l2/many"
for i in 1 2 3; do
	mkdir "$g/l1/d$i" "$g/l2/d$i"
	mkdata "$g/l1/d$i/f" $((8 * mib))
	mkdata "$g/l2/d$i/f" $((8 * mib))
	touch -r "$g/l1/d$i/f" "$g/l2/d$i/f"
done
for i in $(seq 400); do echo "$i" >"$g/l2/many/f$i"; done
sync
mkdir "$parent/stale"
printf '{ "per_file_top": 50, "cgroups": [ { "match": "/stale", "paths": ["%s"] } ] }\n' "$g/m" \
	>"$work/stale.json"
# the daemon's own metrics, scraped: the per-file cached bytes of FILE in cgroup /stale
scraped() { sed -n "s|^cachestat_file_cached_bytes{cgroup=\"/stale\",path=\"$2\"} ||p" "$1"; }
port=$(pick_port $((30000 + $$ % 20000)))
log=$work/daemon.log
cg2=$parent
if ovmount "$g/m" "lowerdir=$g/l1,upperdir=$g/u1,workdir=$g/w1" &&
	start_exporter --config.file="$work/stale.json"; then
	for i in 1 2 3; do cat "$g/m/d$i/f" >/dev/null; done
	snapshot "$g/l1/d1/f" "$g/l1/d3/f"
	curl -s "http://127.0.0.1:$port/metrics" >"$work/stale1.prom" || true
	near "daemon, first overlay: exporter = fincore of its lower file" \
		"$(scraped "$work/stale1.prom" "$g/m/d1/f")" "$g/l1/d1/f"
	id1=$(awk -v m="$g/m" '$5 == m { print $1 }' /proc/self/mountinfo)
	umount "$g/m"
	mounts=("${mounts[@]:1}")
	ovmount "$g/m" "lowerdir=$g/l2,upperdir=$g/u2,workdir=$g/w2" || fail "second overlay mounted"
	id2=$(awk -v m="$g/m" '$5 == m { print $1 }' /proc/self/mountinfo)
	echo "# the two overlays' mount ids: $id1 then $id2"
	for i in 1 2 3; do drop "$g/l2/d$i/f"; done
	# the new files half cached, the old ones whole: a stale layer shows
	for i in 1 2 3; do head -c $((mib)) "$g/m/d$i/f" >/dev/null; done
	snapshot "$g/l2/d1/f" "$g/l2/d3/f"
	curl -s "http://127.0.0.1:$port/metrics" >"$work/stale2.prom" || true
	near "daemon, overlay remounted on the point: exporter = fincore of the new lower's file" \
		"$(scraped "$work/stale2.prom" "$g/m/d1/f")" "$g/l2/d1/f"
	near "daemon, overlay remounted: another directory's file too" \
		"$(scraped "$work/stale2.prom" "$g/m/d3/f")" "$g/l2/d3/f"
	# a counter since the daemon started: the other cases' holders add theirs to both scans
	u1=$(sed -n 's/^cachestat_files_skipped_total{reason="overlay_unresolved"} //p' "$work/stale1.prom")
	u2=$(sed -n 's/^cachestat_files_skipped_total{reason="overlay_unresolved"} //p' "$work/stale2.prom")
	eq "daemon, overlay remounted: the second scan skipped no more as overlay_unresolved than the first" \
		"$((${u2:-0} - ${u1:-0}))" "${u1:-x}"
	stop_exporter
fi

# The cost: system calls of a scan per overlay file (strace -c), 400 files in one directory
# against a scan of an empty one. The mount's entry and layers are read once, not per file.
if ! command -v strace >/dev/null; then
	skip "system calls per overlay file" "strace is not installed"
elif mountpoint -q "$g/m"; then
	calls() { # calls DIR: the system calls of a --once scan whose cgroup walks DIR
		printf '{ "cgroups": [ { "match": "/stale", "paths": ["%s"] } ] }\n' "$1" >"$work/calls.json"
		strace -f -c -o "$work/calls.txt" "$bin" --once --path.cgroupfs="$parent" \
			--config.file="$work/calls.json" >"$work/calls.prom" 2>/dev/null || true
		awk '$NF == "total" { print $4 }' "$work/calls.txt" # % time, seconds, usecs/call, calls
	}
	base=$(calls "$g/empty") many=$(calls "$g/m/many")
	grep -q '^cachestat_cgroup_files{cgroup="/stale"} 400$' "$work/calls.prom" ||
		fail "system calls per overlay file: the scan counted the 400 files"
	per=$(((many - base) / 400))
	check "system calls per overlay file walked: $per (at most 8; 10 when the walk opened each overlay file, 33 when each file read the mount)" \
		test "$per" -le 8
fi

# A walk on overlayfs resolves a name from its statx, without opening it. A file mounted over a
# name of the overlay is the mounted file, measured as any other; looked up in the layers, it
# would be skipped as overlay_unresolved.
if mountpoint -q "$g/m"; then
	mkdata "$work/bound" $((3 * mib))
	sync "$work/bound"
	drop "$work/bound"
	head -c $((mib)) "$work/bound" >/dev/null
	if mount --bind "$work/bound" "$g/m/d2/f"; then
		mounts=("$g/m/d2/f" "${mounts[@]}")
		snapshot "$work/bound"
		"$bin" --once --path.cgroupfs="$parent" --config.file="$work/stale.json" \
			>"$work/bound.prom" 2>"$work/bound.err" || true
		near "a file mounted over a walked overlay name: exporter = fincore of the mounted file" \
			"$(scraped "$work/bound.prom" "$g/m/d2/f")" "$work/bound"
		umount "$g/m/d2/f"
		mounts=("${mounts[@]:1}")
	else
		skip "a file mounted over a walked overlay name" "mount --bind failed here"
	fi
fi

# An overlay of more layers than --scan.max-overlay-layers is not opened, even where no file
# system type is excluded (then the mount tables, which cap it too, are not read): its files are
# skipped as mount_capped, the cap counted.
if mountpoint -q "$g/m"; then
	"$bin" --once --path.cgroupfs="$parent" --config.file="$work/stale.json" \
		--scan.max-overlay-layers=1 --collector.cachestat.fs-types-exclude= \
		>"$work/capped.prom" 2>"$work/capped.err" || true
	eq "two layers past --scan.max-overlay-layers=1: the file not measured" \
		"$(scraped "$work/capped.prom" "$g/m/d1/f")" ""
	capped=$(sed -n 's/^cachestat_files_skipped_total{reason="mount_capped"} //p' "$work/capped.prom")
	check "two layers past --scan.max-overlay-layers=1: its 403 files skipped as mount_capped ($capped)" \
		test "${capped:-0}" -ge 403
	check "two layers past --scan.max-overlay-layers=1: the layers cap counted" \
		grep -q '^cachestat_scan_mounts_capped_total{cap="layers"} [1-9]' "$work/capped.prom"
fi

# shellcheck disable=SC2154 # failed: counted by tests/lib/tap.sh
if [ "$failed" -ne 0 ]; then
	echo "---- exporter stderr"
	sed 's/^/    /' "$out.err" "$nob.err" "$log" 2>/dev/null || true
fi
finish

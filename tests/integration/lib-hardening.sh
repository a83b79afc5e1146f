# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The shared setup of the hardening suites (tests/integration/hardening-*.sh), sourced, not run.
# It checks the tools, (re)builds the exporter, makes a work directory that every user may enter
# and copies there what runs as another user, finds a cgroup v2 mount and a free port, and defines
# the helpers more than one suite uses. Cleanup (the exporter, a FUSE mount, the hostile
# processes and their cgroups, the work directory) runs on exit.
#
# Sets: top, bin (the copy), py, work, hostile (the copied helpers), cg2, port, base, log.

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$top/exporter/cachestat_exporter
py=/usr/bin/python3
# shellcheck source=tests/lib/tap.sh
. "$top/tests/lib/tap.sh"

for tool in curl openssl "$py"; do
	if ! command -v "$tool" >/dev/null; then
		skip_suite "$tool is not installed (see tests/load/deps.txt)"
	fi
done
# (re)built: a stale binary would test old code
make -s -C "$top/exporter" >/dev/null || { fail "the exporter does not build"; finish; }

work=$(mktemp -d /tmp/cse-hard.XXXXXX)
chmod 755 "$work" # the daemon runs as nobody once it has dropped privileges
# What runs as another user (the daemon started as nobody, the hostile helpers) runs from copies
# here: the checkout may lie below a directory only its owner enters (a home directory is 0700
# on Debian 12), where nobody could not reach the originals.
cp "$bin" "$work/cachestat_exporter" && bin=$work/cachestat_exporter
cp -R "$top/tests/integration/hostile" "$work/hostile" && chmod -R a+rX "$work/hostile"
hostile=$work/hostile
cgdir=
hardening_cleanup() {
	stop_exporter
	fuse_cleanup
	hostile_cleanup
	[ -n "$cgdir" ] && rmdir "$cgdir" 2>/dev/null
	rm -rf "$work"
}
trap hardening_cleanup EXIT
trap 'exit 1' INT TERM

# A cgroup v2 mount to walk, else an empty directory: the HTTP tests do not need cgroups.
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ -z "$cg2" ]; then
	cg2=$work/cgroupfs
	mkdir "$cg2" && touch "$cg2/cgroup.procs" # a cgroup directory, as --path.cgroupfs checks
fi

port=$(pick_port) || { fail "no free port"; finish; }
# shellcheck disable=SC2034 # the suites' address
base=http://127.0.0.1:$port
log=$work/exporter.log

# code CURL_ARGS...: the HTTP status of one request, 000 when there is none
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
# metric NAME FILE: the value of an unlabelled sample
metric() { sed -n "s/^$1 //p" "$2" | head -n 1; }
# timed_code CURL_ARGS...: the status and the seconds the request took, from curl itself; the body
# in $work/timed.out
timed_code() { curl -s -o "$work/timed.out" -w '%{http_code} %{time_total}' "$@"; }
# bcrypt PASSWORD: a bcrypt hash ($2b$, cost 5) from crypt(3)
bcrypt() {
	"$py" -W ignore -c 'import crypt, sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=32)))' "$1"
}

# ---- the HTTP process of the running exporter ----
capfield() { awk -v f="$1:" '$1 == f { print $2 }' "$2"; } # capfield FIELD STATUS_FILE
# shellcheck disable=SC2154 # exporter_pid: set by start_exporter (tests/lib/tap.sh)
http_children() { cat "/proc/$exporter_pid/task/"*/children 2>/dev/null | xargs; }
# no HTTP process died since the exporter started (the scanner would start another: a crash
# must not pass for a process still running)
no_http_death() { ! grep -q 'msg="HTTP process \(killed\|exited\);' "$log"; }
# wait_http_child [NOT_PID]: the HTTP process of the running exporter, the one child of the
# scanner, once it has one (other than NOT_PID)
wait_http_child() {
	local c
	for _ in $(seq 100); do
		c=$(http_children)
		[ -n "$c" ] && [ "$c" != "${1:-}" ] && { echo "$c"; return 0; }
		sleep 0.05
	done
	return 1
}

# ---- a FUSE mount (bindfs) whose daemon a case stops ----
fuse_pid='' fuse_mnt=''
fuse_cleanup() {
	[ -n "$fuse_pid" ] && kill -CONT "$fuse_pid" 2>/dev/null
	[ -n "$fuse_mnt" ] && { fusermount -u "$fuse_mnt" 2>/dev/null || umount -l "$fuse_mnt" 2>/dev/null; }
	fuse_pid='' fuse_mnt=''
}

# ---- hostile processes, each case over a cgroup subtree of its own ----
hostile_cgroups=()
hostile_pids=()
hostile_cleanup() {
	local p c
	for p in "${hostile_pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
	for p in "${hostile_pids[@]}"; do wait "$p" 2>/dev/null; done
	hostile_pids=()
	for c in "${hostile_cgroups[@]}"; do
		# the processes they forked too (cgroup.kill: every process of the subtree)
		echo 1 >"$c/cgroup.kill" 2>/dev/null
		for _ in $(seq 50); do
			[ -z "$(find "$c" -name cgroup.procs -exec cat {} + 2>/dev/null)" ] && break
			sleep 0.1
		done
		find "$c" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
		rmdir "$c" 2>/dev/null || echo "  | could not remove $c"
	done
	hostile_cgroups=()
}
# hostile_ready: whether the hostile cases can run here; skips them (one result) if not
hostile_ready() {
	if [ "$(id -u)" -ne 0 ] || ! [ -w "$cg2" ] || ! command -v setpriv >/dev/null; then
		skip "hostile processes" "need root, a writable cgroup v2 at $cg2 and setpriv"
		return 1
	fi
}
# hostile_tree NAME: a fresh cgroup subtree for one case, in $sub (not a subshell: the list of
# subtrees to remove is kept here)
hostile_tree() {
	sub=$cg2/cse-$1-$$
	mkdir "$sub" || return 1
	hostile_cgroups+=("$sub")
}
# in_cgroup CGROUP CMD...: runs CMD in the background inside CGROUP (sets $!)
in_cgroup() {
	local cg=$1
	shift
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$@" &
	hostile_pids+=($!)
}
# shellcheck disable=SC2034 # used by the suites that source this
as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
# no_dup_series FILE WHAT: the exposition has no series twice
no_dup_series() {
	if "$py" "$hostile/dupseries.py" "$1" >"$work/dups.out"; then
		pass "$2: no duplicate series"
	else
		fail "$2: duplicate series"
		sed 's/^/  | /' "$work/dups.out"
	fi
}

#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Runs inside the e2e guest (installed as /usr/local/sbin/e2e-guest): makes cgroups, files and workloads for
# the suite's cases. Every workload runs in the cgroup it is given (a path below /sys/fs/cgroup).
#
#   e2e-guest cgroup CG [MEMORY_MAX]     make the cgroup (and set memory.max)
#   e2e-guest mkfile PATH MIB            write PATH with random data, fsync it, drop it from the page cache
#   e2e-guest hold CG FILE...            detached: read each FILE in CG, then sleep holding them all open
#   e2e-guest write-hold CG FILE MIB     detached: write FILE in CG without fsync, then hold it open
#   e2e-guest read CG FILE [NODE]        read FILE once in CG (memory bound to NUMA node NODE)
#   e2e-guest write CG FILE MIB          write MIB MiB of zeros to FILE in CG with dd, without fsync
#   e2e-guest thrash CG FILE             detached: read FILE over and over in CG
#   e2e-guest reclaim CG BYTES           proactive reclaim (memory.reclaim) in CG
#   e2e-guest remove CG                  kill every process of CG and remove it
#   e2e-guest remove-tree CG             the same for CG and every cgroup below it
#   e2e-guest cleanup N                  remove case N's containers (e2e-N-*) and cgroups (/e2e-N-*)
#   e2e-guest cgroup-path CG             make CG and its parents, the memory controller enabled down to it
#   e2e-guest podman ARGS...             podman as the cases run it (overlay, systemd cgroups, crun)
#   e2e-guest podman-image MIB           import localhost/e2e-data (busybox, /data of MIB MiB and its hard
#                                        link /data.link) unless present; print the layer's real /data,
#                                        dropped from the page cache
#   e2e-guest podman-cgroup NAME         the cgroup of container NAME's first process, from /proc
#   e2e-guest fincore-cgroup CG          fincore's resident bytes of the regular files the processes of CG
#                                        hold open or map (each path once), summed
#   e2e-guest mkfiles DIR N MIN MAX      N files DIR/f-NNN, sizes spread evenly from MIN to MAX KiB (4 KiB
#                                        multiples), random data, fsynced, dropped from the page cache
#   e2e-guest fincore-files FILE...      fincore's resident bytes of each FILE ("BYTES PATH" lines)
#   e2e-guest nginx-site DIR PORT        Debian's nginx serving DIR on 127.0.0.1:PORT with sendfile and no
#                                        open file cache (it opens, sends and closes per request); restarted
#   e2e-guest nginx-off                  remove that site and stop nginx
#   e2e-guest fanotify-on                install the exporter's drop-in read from stdin (the fanotify
#                                        collector), then daemon-reload and restart the exporter
#   e2e-guest fanotify-off               remove that drop-in, daemon-reload, restart the exporter
#   e2e-guest webhook FILE               detached: Alertmanager's webhook receiver on 127.0.0.1:9095
#                                        (tests/e2e/alertmanager.yml), each alert it gets a JSON line in FILE:
#                                        the notification's status, the alert's labels and annotations
set -euo pipefail
cgroot=/sys/fs/cgroup
image=localhost/e2e-data:latest
dropin_dir=/etc/systemd/system/cachestat-exporter.service.d

cg_join() { echo "$BASHPID" >"$cgroot/$1/cgroup.procs"; }

# Rootful podman with the storage driver, cgroup manager and runtime under test named, not defaulted.
pm() { podman --storage-driver=overlay --cgroup-manager=systemd --runtime=crun "$@"; }

# The image: a root file system the suite makes, imported (the guest has no registry to pull from).
podman_image() {
	local tree real
	if ! pm image exists "$image"; then
		tree=$(mktemp -d /scratch/e2e-rootfs.XXXXXX)
		mkdir -p "$tree/bin" "$tree/dev" "$tree/proc" "$tree/sys" "$tree/tmp"
		cp /bin/busybox "$tree/bin/busybox"
		for cmd in sh cat sleep; do ln -s busybox "$tree/bin/$cmd"; done
		dd if=/dev/urandom of="$tree/data" bs=1M count="$1" status=none
		ln "$tree/data" "$tree/data.link"
		tar -C "$tree" -cf - . | pm import - "$image" >/dev/null
		rm -rf "$tree"
	fi
	real=$(pm image inspect --format '{{.GraphDriver.Data.UpperDir}}' "$image")/data
	[ -f "$real" ] || { echo "e2e-guest: no $real" >&2; exit 1; }
	sync "$real"
	dd if="$real" iflag=nocache count=0 status=none
	echo "$real"
}

case $1 in
webhook)
	: >"$2"
	setsid -f python3 -c '
import http.server, json, sys
out = sys.argv[1]
class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        note = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with open(out, "a") as f:
            for alert in note["alerts"]:
                f.write(json.dumps({"status": alert["status"], "labels": alert["labels"],
                                    "annotations": alert["annotations"]}) + "\n")
        self.send_response(200)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", 9095), Receiver).serve_forever()' "$2" </dev/null >/dev/null 2>&1
	;;
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
write)
	(
		cg_join "$2"
		exec dd if=/dev/zero of="$3" bs=1M count="$4" status=none
	)
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
mkfiles)
	mkdir -p "$2"
	for i in $(seq 0 $(($3 - 1))); do
		kib=$(($4 + ($5 - $4) * i / ($3 > 1 ? $3 - 1 : 1)))
		f=$(printf '%s/f-%03d' "$2" "$i")
		dd if=/dev/urandom of="$f" bs=4k count=$((kib / 4)) conv=fsync status=none
		dd if="$f" iflag=nocache count=0 status=none
	done
	;;
fincore-files)
	shift
	fincore --bytes --noheadings --output RES,FILE "$@"
	;;
nginx-site)
	cat >/etc/nginx/conf.d/e2e.conf <<-EOF
		server {
			listen 127.0.0.1:$3;
			root $2;
			sendfile on;
			open_file_cache off;
			access_log /var/log/nginx/e2e.log;
		}
	EOF
	: >/var/log/nginx/e2e.log
	nginx -q -t
	systemctl restart nginx
	;;
nginx-off)
	rm -f /etc/nginx/conf.d/e2e.conf
	systemctl stop nginx
	;;
fanotify-on)
	mkdir -p "$dropin_dir"
	cat >"$dropin_dir/fanotify.conf"
	systemctl daemon-reload
	systemctl restart cachestat-exporter
	;;
fanotify-off)
	rm -f "$dropin_dir/fanotify.conf"
	rmdir --ignore-fail-on-non-empty "$dropin_dir" 2>/dev/null || true
	systemctl daemon-reload
	systemctl restart cachestat-exporter
	;;
cgroup-path)
	dir=$cgroot
	IFS=/ read -ra parts <<<"$2"
	for part in "${parts[@]}"; do
		grep -qw memory "$dir/cgroup.subtree_control" || echo +memory >"$dir/cgroup.subtree_control"
		dir=$dir/$part
		mkdir -p "$dir"
	done
	;;
podman)
	shift
	pm "$@"
	;;
podman-image)
	podman_image "$2"
	;;
podman-cgroup)
	pid=$(pm inspect --format '{{.State.Pid}}' "$2")
	sed -n 's/^0:://p' "/proc/$pid/cgroup"
	;;
fincore-cgroup)
	shift
	for pid in $(for cg; do cat "$cgroot/$cg/cgroup.procs"; done); do
		awk '$6 ~ /^\// && !/ \(deleted\)$/ { print $6 }' "/proc/$pid/maps"
		find "/proc/$pid/fd" -mindepth 1 -exec readlink {} \;
	done | sort -u | while IFS= read -r f; do
		[ -f "$f" ] && printf '%s\0' "$f"
	done | xargs -0 -r fincore --bytes --noheadings --output RES | awk '{ s += $1 } END { print s + 0 }'
	;;
cleanup)
	# podman only when its container list names one of the case's (a podman call costs seconds under TCG).
	if grep -qs "\"e2e-$2-" /var/lib/containers/storage/overlay-containers/containers.json; then
		pm ps -a --format '{{.Names}}' | { grep "^e2e-$2-" || true; } | xargs -r "$0" podman rm -f -t 0 >/dev/null
	fi
	for d in "$cgroot/e2e-$2-"*; do
		[ ! -d "$d" ] || "$0" remove "${d##*/}"
	done
	;;
remove-tree)
	[ -d "$cgroot/$2" ] || exit 0
	echo 1 >"$cgroot/$2/cgroup.kill"
	for _ in $(seq 50); do
		grep -q '^populated 0' "$cgroot/$2/cgroup.events" && break
		sleep 0.1
	done
	find "$cgroot/$2" -depth -type d -exec rmdir {} +
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

# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Kubernetes-shaped nodes as real cgroups, for the benchmarks (sourced by cardinality.sh and
# fleet.sh, not run). The caller sets top, work (a directory of its own under BUILD_ROOT),
# pods, drivers (e.g. (systemd cgroupfs)), v1 and v2 (the hybrid host's memory hierarchy and
# v2 tree), and traps cleanup; holder.c must be built at $work/holder. What a node holds:
# tests/bench/cardinality.sh's header.
# shellcheck disable=SC2154 # top, work, pods, drivers, v1, v2 are the caller's
# node_prefix names the nodes' directories in the hierarchies (<prefix>-<driver>); the files are
# made once under BUILD_ROOT and shared.
node_prefix=${node_prefix:-cachestat-card}
data=${BUILD_ROOT:-/var/tmp/cachestat_exporter}/bench-node-data/$pods

pids=()
# remove_nodes: the nodes' cgroups, once their processes are gone. A v1 memory cgroup whose last
# task has just exited can refuse rmdir for a moment (EBUSY): a few rounds, or a later run would
# walk the stale ones beside its own.
remove_nodes() {
	local d root round
	for round in 1 2 3 4 5 6 7 8 9 10; do
		for d in "${drivers[@]}"; do
			for root in "$v1/$node_prefix-$d" "$v2/$node_prefix-$d"; do
				[ -d "$root" ] && find "$root" -depth -type d -exec rmdir {} + 2>/dev/null
			done
		done
		[ -z "$(for d in "${drivers[@]}"; do ls -d "$v1/$node_prefix-$d" "$v2/$node_prefix-$d"; done 2>/dev/null)" ] &&
			return 0
		sleep "0.$round"
	done
	echo "bench: some cgroups of $node_prefix-* are left (still in use?)" >&2
}
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	remove_nodes
	return 0
}

# ---- files: 10 per container (4 KiB to 128 KiB), 5 images of 2 MiB; kept between runs ----
make_data() {
	[ -e "$data/.complete" ] && return 0
	echo "bench: making the files in $data ..." >&2
	rm -rf "$data"
	python3 - "$data" "$pods" <<'PY'
import os, random, sys
root, pods = sys.argv[1], int(sys.argv[2])
rnd = random.Random(23)
chunk = os.urandom(128 << 10)
for i in range(5):
    os.makedirs(f"{root}/images/img{i}")
    with open(f"{root}/images/img{i}/app", "wb") as f:
        f.write(chunk * 16)
for node in ("systemd", "cgroupfs"):
    for svc in range(14):
        d = f"{root}/{node}/system/s{svc}"
        os.makedirs(d)
        for k in range(4):
            with open(f"{d}/f{k}", "wb") as f:
                f.write(chunk[: rnd.randint(4 << 10, 128 << 10)])
    for p in range(pods):
        for c in range(2):
            d = f"{root}/{node}/pods/p{p}/c{c}"
            os.makedirs(d)
            for k in range(10):
                with open(f"{d}/f{k}", "wb") as f:
                    f.write(chunk[: rnd.randint(4 << 10, 128 << 10)])
open(f"{root}/.complete", "w").close()
PY
}

# ---- cgroups and their processes ----
# mkcg DRIVER PATH: the cgroup in both hierarchies.
mkcg() { mkdir -p "$v1/$node_prefix-$1$2" "$v2/$node_prefix-$1$2"; }
# run_in DRIVER PATH HOLDER-ARGS...: a holder in that cgroup of both hierarchies.
run_in() {
	local d=$1 cg=$2
	shift 2
	mkcg "$d" "$cg"
	"$work/holder" "$@" &
	pids+=($!)
	echo $! >"$v1/$node_prefix-$d$cg/cgroup.procs"
	echo $! >"$v2/$node_prefix-$d$cg/cgroup.procs"
}
hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

build_node() {
	[ ! -d "$v1/$node_prefix-$1" ] || { echo "bench: $v1/$node_prefix-$1 exists: another run?" >&2; return 1; }
	local d=$1 nd=$data/$1 qos uid id p c cg s svcs
	svcs=(containerd kubelet systemd-journald systemd-logind systemd-udevd systemd-networkd
	      systemd-resolved dbus cron ssh chrony rsyslog)
	mkdir -p "$work/tmp/$d"
	for s in "${!svcs[@]}"; do
		run_in "$d" "/system.slice/${svcs[$s]}.service" -t "$work/tmp/$d" -n "journal" \
			"$nd"/system/s"$s"/f*
	done
	run_in "$d" /user.slice/user-1000.slice/session-1.scope "$nd"/system/s12/f*
	run_in "$d" /user.slice/user-1000.slice/user@1000.service/init.scope "$nd"/system/s13/f*
	for ((p = 0; p < pods; p++)); do
		qos=$(echo guaranteed burstable besteffort | cut -d' ' -f$((p % 3 + 1)))
		uid=$(hex 4)-$(hex 2)-$(hex 2)-$(hex 2)-$(hex 6)
		for c in 0 1; do
			id=$(hex 32)
			if [ "$d" = systemd ]; then
				if [ "$qos" = guaranteed ]; then
					cg=/kubepods.slice/kubepods-pod${uid//-/_}.slice
				else
					cg=/kubepods.slice/kubepods-$qos.slice/kubepods-$qos-pod${uid//-/_}.slice
				fi
				cg=$cg/cri-containerd-$id.scope
			elif [ "$qos" = guaranteed ]; then
				cg=/kubepods/pod$uid/$id
			else
				cg=/kubepods/$qos/pod$uid/$id
			fi
			rot=()
			[ $(((p * 2 + c) % 10)) -ne 0 ] || rot=(-r 20)
			run_in "$d" "$cg" -m "$data/images/img$((p % 5))/app" -n "shm-$c" \
				-t "$work/tmp/$d" "${rot[@]}" "$nd/pods/p$p/c$c"/f*
		done
	done
}

# The DaemonSet's arguments, its config from the ConfigMap, this node's tree and port.
exporter_args() {
	local d=$1 port=$2
	# the objects as operators deploy them: the base rendered by kustomize, wherever its files live
	kubectl kustomize "$top/deploy/kubernetes/base" >"$work/rendered.yaml"
	python3 - "$work/rendered.yaml" "$work/config.json" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
ds = next(d for d in docs if d.get("kind") == "DaemonSet")
cm = next(d for d in docs if d.get("kind") == "ConfigMap")
open(sys.argv[2], "w").write(cm["data"]["config.json"])
c = next(c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "cachestat-exporter")
for a in c["args"]:
    if not a.startswith(("--web.listen-address=", "--path.cgroupfs=", "--config.file=")):
        print(a)
PY
	echo "--web.listen-address=127.0.0.1:$port"
	echo "--path.cgroupfs=$v1/$node_prefix-$d"
	echo "--config.file=$work/config.json"
}


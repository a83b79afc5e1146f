# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Kubernetes-shaped nodes as real cgroups, for the benchmarks (sourced by cardinality.sh and
# fleet.sh, not run). The caller sets top, work (a directory of its own under BUILD_ROOT),
# pods, drivers (e.g. (systemd cgroupfs)), v1 and v2 before sourcing, and traps cleanup;
# holder.c must be built at $holder (default $work/holder). What a node holds:
# tests/bench/cardinality.sh's header. Two layouts of the host's cgroups:
#   hybrid (v1 set): the memory controller on cgroup v1 at $v1, the v2 tree at $v2 without it.
#     Every cgroup is made in both and every process put in both; the memory hierarchy is $v1.
#   v2 only (v1 empty): every cgroup under $v2 alone, with +memory in the cgroup.subtree_control
#     of $v2 and of every cgroup from the node's directory down to a leaf's parent, written
#     before a process enters a leaf (a cgroup with processes may not enable a controller for
#     its children). The memory hierarchy is $v2.
# kubelet's memory limits are written into whichever limit file the cgroup has: memory.max (v2)
# or memory.limit_in_bytes (the v1 memory hierarchy, as kubelet writes it there; the exporter
# reads no v1 limit, so on a hybrid host they change no series). 256 MiB on each container of a
# guaranteed or burstable pod and the sum of its containers' on the pod's cgroup; none on a
# best-effort pod (which has no limit by definition) and none on a pause container.
# shellcheck disable=SC2154 # top, work, pods, drivers, v1, v2 are the caller's
# node_prefix names the nodes' directories in the hierarchies (<prefix>-<driver>); the files are
# made once under BUILD_ROOT and shared.
node_prefix=${node_prefix:-cachestat-card}
data=${BUILD_ROOT:-/var/tmp/cachestat_exporter}/bench-node-data/$pods
# mem: the hierarchy with the memory controller, where the exporter reads a node; hierarchies: the
# ones every cgroup is made in.
mem=${v1:-$v2}
hierarchies=("$v2")
[ -z "$v1" ] || hierarchies=("$v1" "$v2")
container_limit=$((256 << 20))

pids=()
# remove_nodes: the nodes' cgroups, once their processes are gone. A v1 memory cgroup whose last
# task has just exited can refuse rmdir for a moment (EBUSY): a few rounds, or a later run would
# walk the stale ones beside its own.
remove_nodes() {
	local d h round left
	for round in 1 2 3 4 5 6 7 8 9 10; do
		left=
		for d in "${drivers[@]}"; do
			for h in "${hierarchies[@]}"; do
				[ -d "$h/$node_prefix-$d" ] || continue
				find "$h/$node_prefix-$d" -depth -type d -exec rmdir {} + 2>/dev/null
				[ ! -d "$h/$node_prefix-$d" ] || left=1
			done
		done
		[ -n "$left" ] || return 0
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

# ---- files: 10 per container (4 KiB to 128 KiB), 5 images of 2 MiB and the pause binary's of
# 700 KiB; kept between runs ----
make_data() {
	if [ ! -e "$data/.complete" ]; then
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
	fi
	# apart from the rest: a data set made before the pause containers lacks it
	if [ ! -e "$data/images/pause" ]; then
		head -c $((700 << 10)) /dev/urandom >"$data/images/pause.tmp"
		mv "$data/images/pause.tmp" "$data/images/pause"
	fi
}

# ---- cgroups and their processes ----
declare -A memory_on=()
# enable_memory DIR: +memory in DIR's cgroup.subtree_control (v2), so that its children have the
# memory controller's files; read first, each directory once.
enable_memory() {
	local ctl
	[ -z "${memory_on[$1]:-}" ] || return 0
	read -r ctl <"$1/cgroup.subtree_control" || ctl=
	[[ " $ctl " == *" memory "* ]] || echo +memory >"$1/cgroup.subtree_control"
	memory_on[$1]=1
}
# mkcg DRIVER PATH: the cgroup in every hierarchy; on v2 alone, with the memory controller
# enabled down to it.
mkcg() {
	local dir part parts
	if [ -n "$v1" ]; then
		mkdir -p "$v1/$node_prefix-$1$2" "$v2/$node_prefix-$1$2"
		return 0
	fi
	dir=$v2/$node_prefix-$1
	enable_memory "$v2"
	[ -d "$dir" ] || mkdir "$dir"
	IFS=/ read -ra parts <<<"${2#/}"
	for part in "${parts[@]}"; do
		enable_memory "$dir"
		dir=$dir/$part
		[ -d "$dir" ] || mkdir "$dir"
	done
}
# set_limit DRIVER PATH BYTES: kubelet's memory limit on that cgroup, in whichever file it has.
set_limit() {
	local h f
	for h in "${hierarchies[@]}"; do
		for f in memory.max memory.limit_in_bytes; do
			[ ! -e "$h/$node_prefix-$1$2/$f" ] || echo "$3" >"$h/$node_prefix-$1$2/$f"
		done
	done
}
# run_in DRIVER PATH LIMIT HOLDER-ARGS...: a holder in that cgroup of every hierarchy, its limit
# LIMIT bytes (none when empty). It enters the cgroup before the holder starts, so that what it
# reads and writes is charged there. With holder_ready set, each holder appends a line to that
# file once it holds its files.
run_in() {
	local d=$1 cg=$2 limit=$3 h ready=()
	shift 3
	mkcg "$d" "$cg"
	[ -z "$limit" ] || set_limit "$d" "$cg" "$limit"
	[ -z "${holder_ready:-}" ] || ready=(-s "$holder_ready")
	(
		for h in "${hierarchies[@]}"; do
			echo "$BASHPID" >"$h/$node_prefix-$d$cg/cgroup.procs" ||
				{ echo "bench: cannot enter $h/$node_prefix-$d$cg" >&2; exit 1; }
		done
		exec "${holder:-$work/holder}" "${ready[@]}" "$@"
	) &
	pids+=($!)
}
# holders_alive: every process started so far still runs (one that could not enter its cgroup
# or open its files has exited, and its cgroup would be counted empty).
holders_alive() {
	local p dead=0
	for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || dead=$((dead + 1)); done
	[ "$dead" -eq 0 ] || { echo "bench: $dead of ${#pids[@]} processes have exited" >&2; return 1; }
}
# hex VAR N: N random bytes in hex into VAR, from a pool read at once (a fork or two per id
# would cost seconds in an emulated guest).
hex_pool='' hex_at=0
hex() {
	if ((hex_at + 2 * $2 > ${#hex_pool})); then
		hex_pool=$(od -An -v -N65536 -tx1 /dev/urandom | tr -d ' \n')
		hex_at=0
	fi
	printf -v "$1" %s "${hex_pool:hex_at:2 * $2}"
	hex_at=$((hex_at + 2 * $2))
}

# build_node DRIVER: the node's cgroups and processes. Lists its kubelet cgroups in
# $work/cgroups-DRIVER.tsv: kind (pod, pause, container), limit in bytes or -, path below the node.
build_node() {
	[ ! -d "$mem/$node_prefix-$1" ] || { echo "bench: $mem/$node_prefix-$1 exists: another run?" >&2; return 1; }
	local d=$1 nd=$data/$1 qos uid id p c pod cg s svcs limit rot u1 u2 u3 u4 u5
	local list=$work/cgroups-$1.tsv qoses=(guaranteed burstable besteffort)
	svcs=(containerd kubelet systemd-journald systemd-logind systemd-udevd systemd-networkd
	      systemd-resolved dbus cron ssh chrony rsyslog)
	mkdir -p "$work/tmp/$d"
	: >"$list"
	for s in "${!svcs[@]}"; do
		run_in "$d" "/system.slice/${svcs[$s]}.service" '' -t "$work/tmp/$d" -n "journal" \
			"$nd"/system/s"$s"/f*
	done
	run_in "$d" /user.slice/user-1000.slice/session-1.scope '' "$nd"/system/s12/f*
	run_in "$d" /user.slice/user-1000.slice/user@1000.service/init.scope '' "$nd"/system/s13/f*
	for ((p = 0; p < pods; p++)); do
		qos=${qoses[p % 3]}
		hex u1 4
		hex u2 2
		hex u3 2
		hex u4 2
		hex u5 6
		uid=$u1-$u2-$u3-$u4-$u5
		if [ "$d" = systemd ] && [ "$qos" = guaranteed ]; then
			pod=/kubepods.slice/kubepods-pod${uid//-/_}.slice
		elif [ "$d" = systemd ]; then
			pod=/kubepods.slice/kubepods-$qos.slice/kubepods-$qos-pod${uid//-/_}.slice
		elif [ "$qos" = guaranteed ]; then
			pod=/kubepods/pod$uid
		else
			pod=/kubepods/$qos/pod$uid
		fi
		limit=$container_limit
		[ "$qos" != besteffort ] || limit=
		# the pod's cgroup first, with its limit, as kubelet makes it before the sandbox
		mkcg "$d" "$pod"
		if [ -n "$limit" ]; then
			set_limit "$d" "$pod" $((2 * limit))
			printf 'pod\t%s\t%s\n' $((2 * limit)) "$pod" >>"$list"
		else
			printf 'pod\t-\t%s\n' "$pod" >>"$list"
		fi
		# the sandbox: the pause container, mapping its small binary and nothing else
		hex id 32
		cg=$pod/$id
		[ "$d" != systemd ] || cg=$pod/cri-containerd-$id.scope
		run_in "$d" "$cg" '' -m "$data/images/pause"
		printf 'pause\t-\t%s\n' "$cg" >>"$list"
		for c in 0 1; do
			hex id 32
			cg=$pod/$id
			[ "$d" != systemd ] || cg=$pod/cri-containerd-$id.scope
			rot=()
			[ $(((p * 2 + c) % 10)) -ne 0 ] || rot=(-r 20)
			run_in "$d" "$cg" "$limit" -m "$data/images/img$((p % 5))/app" -n "shm-$c" \
				-t "$work/tmp/$d" "${rot[@]}" "$nd/pods/p$p/c$c"/f*
			printf 'container\t%s\t%s\n' "${limit:--}" "$cg" >>"$list"
		done
	done
}

# exporter_args DRIVER PORT: the DaemonSet's arguments, its config from the ConfigMap, this node's
# tree and port. The arguments and config are ds_args and ds_config when the caller set them
# (rendered elsewhere, e.g. for a guest without kubectl), else tests/bench/daemonset-args.sh's.
exporter_args() {
	local d=$1 port=$2
	if [ -z "${ds_args:-}" ]; then
		"$top/tests/bench/daemonset-args.sh" "$work/daemonset"
		ds_args=$work/daemonset/args ds_config=$work/daemonset/config.json
	fi
	[ -r "$ds_args" ] && [ -r "$ds_config" ] || { echo "bench: no $ds_args or $ds_config" >&2; return 1; }
	grep -v -e '^--web.listen-address=' -e '^--path.cgroupfs=' -e '^--config.file=' "$ds_args" || true
	echo "--web.listen-address=127.0.0.1:$port"
	echo "--path.cgroupfs=$mem/$node_prefix-$d"
	echo "--config.file=$ds_config"
}

# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The shared setup of the suites that scan a cgroup subtree of their own with files held open
# below real mounts (tests/integration/overlay.sh, mincore.sh), sourced, not run, after
# tests/lib/tap.sh. Call subtree_setup first; the cleanup (the exporter, the holders, the mounts
# in reverse order, the cgroups, the work directory) runs on exit.
#
# Uses: top, bin. Sets: cg2, parent (the suite's cgroup), work, and the arrays mounts (the
# suite adds each mount point it makes, the newest first) and holders (the pids it starts).

# subtree_setup NAME TOOL...: skips the suite without root, one of the TOOLs or a writable
# cgroup v2; makes $parent ($cg2/cse-NAME-PID) and $work (/var/tmp/cse-NAME.XXXXXX), sets the
# cleanup and builds the exporter if it is not there.
subtree_setup() {
	local name=$1 tool
	shift
	[ "$(id -u)" -eq 0 ] || skip_suite "needs root to mount overlayfs and make cgroups"
	for tool; do
		command -v "$tool" >/dev/null || skip_suite "$tool is not installed (tests/integration/deps.txt)"
	done
	cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	parent=$cg2/cse-$name-$$
	if [ -z "$cg2" ] || ! mkdir "$parent" 2>/dev/null; then
		skip_suite "no writable cgroup v2"
	fi
	work=$(mktemp -d "/var/tmp/cse-$name.XXXXXX")
	mounts=() holders=()
	trap subtree_cleanup EXIT
	trap 'exit 1' INT TERM
	# shellcheck disable=SC2154 # top and bin: the suite's
	[ -x "$bin" ] || make -s -C "$top/exporter" >/dev/null
}

subtree_cleanup() {
	local p m
	stop_exporter
	for p in "${holders[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${holders[@]}"; do while kill -0 "$p" 2>/dev/null; do sleep 0.05; done; done
	for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || true; done
	for m in "$parent"/*/; do [ -d "$m" ] && rmdir "$m" 2>/dev/null; done
	rmdir "$parent" 2>/dev/null || true
	rm -rf "$work"
}

ovmount() { # ovmount MERGED OPTIONS: mounts an overlay, remembered for the cleanup
	mkdir -p "$1"
	mount -t overlay overlay -o "$2" "$1" || return 1
	mounts=("$1" "${mounts[@]}")
}
res() { fincore -b -n -o RES "$1" | tr -d ' '; } # cached bytes, by the oracle (fincore: mincore)
file_cached() { # file_cached JSON CGROUP PATH: the per-file cached bytes, or "absent"
	jq -r --arg c "/$2" --arg p "$3" '[.cgroups[] | select(.cgroup == $c) | .top_files[]? |
		select(.path == $p) | .cached_bytes] | if length == 0 then "absent" else .[0] end' "$1"
}

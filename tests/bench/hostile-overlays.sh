#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The mount side of make bench-hostile: the cost of one scan (--once: CPU seconds, peak RSS)
# against the read-only overlays of 10 layers that an unprivileged user mounts in a user and
# mount namespace of its own (unshare -Urm) while holding one file through the first, from 100
# to 20,000. Linear below the caps (--scan.max-mounts, 10000 entries; --scan.max-mountinfo-bytes,
# 8 MiB), flat above: the namespace's files are then skipped as mount_capped. One bomb grows
# through the rows (tests/integration/hostile/mountbomb.py). The tree walked is a directory on a
# tmpfs with a cgroup.procs naming the holder, as hostile.sh's. Needs root (setpriv, the tmpfs)
# and user namespaces. HOSTILE_BIN=PATH measures another build (an older one, for a before and
# after); OVERLAYS="100 1000" other rows.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=${HOSTILE_BIN:-$top/exporter/cachestat_exporter}
py=/usr/bin/python3
rows=${OVERLAYS:-100 1000 2000 5000 10000 15000 20000}
export LC_ALL=C

[ "$(id -u)" -eq 0 ] || { echo "hostile-overlays.sh: needs root" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "hostile-overlays.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
if ! "${nobody[@]}" unshare -Urm true 2>/dev/null; then
	echo "hostile-overlays.sh: an unprivileged user cannot make a user namespace here; no rows" >&2
	exit 0
fi
[ -n "${HOSTILE_BIN:-}" ] || make -s -C "$top/exporter" >/dev/null || exit 1

work=$(mktemp -d /tmp/cse-hostile-ovl.XXXXXX)
bomb=
cleanup() {
	[ -n "$bomb" ] && kill "$bomb" 2>/dev/null && wait "$bomb" 2>/dev/null
	umount "$work/t" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
chmod 755 "$work"
mkdir "$work/t" "$work/mb"
mount -t tmpfs -o size=16m,mode=755 cse-hostile-ovl "$work/t" || exit 1
cp "$top/tests/integration/hostile/mountbomb.py" "$work/mountbomb.py"
chown 65534:65534 "$work/mb"
last=0
for n in $rows; do last=$n; done
"${nobody[@]}" unshare -Urm "$py" "$work/mountbomb.py" "$work/mb/x" "$last" 10 "$work/mb/ready" \
	"$(echo "$rows" | tr ' ' ,)" 2>"$work/bomb.err" &
bomb=$!
mkdir -p "$work/t/tree/tenant"
: >"$work/t/tree/cgroup.procs"

printf '| %-9s | %8s | %8s | %9s | %12s | %-22s |\n' overlays mounts "CPU s" "RSS MiB" mount_capped \
	"mounts capped (cap)"
printf '|%s|%s|%s|%s|%s|%s|\n' "-----------" "----------" "----------" "-----------" \
	"--------------" "------------------------"
status=0
for n in $rows; do
	for _ in $(seq 6000); do [ -s "$work/mb/ready" ] && break; sleep 0.1; done
	made=$(awk '{ print $2 }' "$work/mb/ready" 2>/dev/null)
	[ "${made:-0}" -eq "$n" ] || { echo "the bomb stopped at ${made:-0} overlays:"; cat "$work/bomb.err"; status=1; break; }
	pid=$(pgrep -P "$bomb" | head -n 1)
	pid=${pid:-$bomb}
	echo "$pid" >"$work/t/tree/tenant/cgroup.procs"
	if ! /usr/bin/time -f '%U %S %M' -o "$work/time" "$bin" --once --path.cgroupfs="$work/t/tree" \
		>"$work/out.prom" 2>"$work/err"; then
		echo "hostile-overlays.sh: the scan with $n overlays failed: $(tail -n 3 "$work/err" "$work/time")" >&2
		exit 1
	fi
	read -r u s rss <"$work/time"
	capped=$(awk -F'[{}" ]+' '/^cachestat_scan_mounts_capped_total\{/ && $NF > 0 { printf "%s%s=%s", sep, $3, $NF; sep = "," }' "$work/out.prom")
	printf '| %9s | %8s | %8.2f | %9s | %12s | %-22s |\n' "$n" "$(wc -l <"/proc/$pid/mountinfo")" \
		"$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')" "$((rss / 1024))" \
		"$(sed -n 's/^cachestat_files_skipped_total{reason="mount_capped"} //p' "$work/out.prom")" \
		"${capped:-none}"
	rm -f "$work/mb/ready"
done
# the rows up to where the bomb stopped are printed; the run still failed
exit $status

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Hardening against hostile mounts: a FUSE file system (bindfs) whose daemon is stopped, with
# a process holding a file on it and the config naming it (with the default flags the scan
# touches nothing on it: skipped as fs_type); FUSE below an overlay, its layer named by an
# absolute or a relative path (the overlay excluded for its layer's type); a stopped FUSE mount
# that is not excluded: scrapes answered within their timeout with the last snapshot, the scans
# after the stuck one skip the mount (quarantine, mount_stuck, logged once) and end, all
# recovers on SIGCONT; a stopped FUSE mount inside a walked directory: judged and skipped before
# any open, the rest of the directory reported, the directory's own mount never quarantined.
# HOSTILE_CASES="fuse" runs the first case alone (and the last).
# Ends with "N passed, N failed, N skipped" (tests/lib/tap.sh).
set -uo pipefail
# shellcheck source=tests/integration/lib-hardening.sh
. "$(dirname "$0")/lib-hardening.sh"

# A FUSE file system that stops answering (bindfs, SIGSTOP): with the default flags, a scan
# touches nothing on it, neither a file a process holds open there nor a configured path.
hostile_fuse() {
	local sub src=$work/fuse-src mnt=$work/fuse-mnt bindfs_pid start took rc n
	if ! command -v bindfs >/dev/null; then skip "FUSE" "bindfs is not installed (exporter/deps.txt)"; return; fi
	hostile_tree fuse && mkdir "$sub/f" || { fail "FUSE: no cgroup"; return; }
	mkdir -p "$src" "$mnt"
	head -c 65536 /dev/urandom >"$src/data"
	bindfs -f "$src" "$mnt" 2>"$work/bindfs.err" &
	bindfs_pid=$!
	for _ in $(seq 100); do [ -e "$mnt/data" ] && break; sleep 0.05; done
	[ -e "$mnt/data" ] || { fail "FUSE: bindfs did not mount"; cat "$work/bindfs.err"; kill "$bindfs_pid"; return; }
	in_cgroup "$sub/f" sleep 1000 3<"$mnt/data"
	printf '{ "cgroups": [ { "match": "/f", "paths": ["%s", "%s/*"] } ] }\n' "$mnt" "$mnt" >"$work/fuse.json"
	sleep 0.2
	kill -STOP "$bindfs_pid"
	start=$(date +%s%N)
	timeout -k 2 20 "$bin" --once --path.cgroupfs="$sub" --config.file="$work/fuse.json" \
		>"$work/fuse.prom" 2>"$work/fuse.log"
	rc=$?
	took=$((($(date +%s%N) - start) / 1000000))
	kill -CONT "$bindfs_pid"
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		fail "FUSE: a scan with the daemon stopped hung (killed after 20 s)"
	else
		pass "FUSE: a scan with the daemon stopped finishes (${took} ms, exit $rc)"
	fi
	n=$(sed -n 's/^cachestat_files_skipped_total{reason="fs_type"} //p' "$work/fuse.prom")
	[ "${n:-0}" -ge 2 ] && pass "FUSE: the held file and the configured path are skipped for their fs type ($n)" ||
		fail "FUSE: skipped{reason=fs_type} is '$n', want >= 2"
	grep -q "path=\"$mnt" "$work/fuse.prom" && fail "FUSE: a file on FUSE was reported" ||
		pass "FUSE: nothing on FUSE is reported"
	hostile_cleanup
	fusermount -u "$mnt" 2>/dev/null
	kill "$bindfs_pid" 2>/dev/null
	wait "$bindfs_pid" 2>/dev/null
}

# FUSE below an overlay: overlayfs checks permission on the real inode with the mounter's
# credentials, so opening a file of the overlay asks the FUSE daemon below it, whatever
# --no-allow-other says. With the daemon stopped, the scan must not open the overlay's files: the
# overlay is excluded for its layer's type, whether the layer is named by an absolute path or by
# one relative to the mounter's working directory (mountinfo then cannot place it).
hostile_fuse_overlay() {
	local src=$work/fo-src d=$work/fo mnt=$work/fo/fuse bindfs_pid rc n
	if ! command -v bindfs >/dev/null; then skip "FUSE below overlay" "bindfs is not installed (exporter/deps.txt)"; return; fi
	hostile_tree fuseovl && mkdir "$sub/abs" "$sub/rel" || { fail "FUSE below overlay: no cgroup"; return; }
	mkdir -p "$src/l" "$mnt" "$d/top" "$d/abs" "$d/rel"
	head -c 65536 /dev/urandom >"$src/l/data.bin"
	bindfs -f --no-allow-other "$src" "$mnt" 2>"$work/fo-bindfs.err" &
	bindfs_pid=$!
	for _ in $(seq 100); do [ -e "$mnt/l/data.bin" ] && break; sleep 0.05; done
	if ! [ -e "$mnt/l/data.bin" ]; then
		fail "FUSE below overlay: bindfs did not mount"
		kill "$bindfs_pid"
		hostile_cleanup
		return
	fi
	mount -t overlay overlay -o "lowerdir=$d/top:$mnt/l" "$d/abs" &&
		(cd "$d" && mount -t overlay overlay -o lowerdir=top:fuse/l rel) ||
		{ fail "FUSE below overlay: overlay mounts"; kill "$bindfs_pid"; hostile_cleanup; return; }
	in_cgroup "$sub/abs" sleep 1000 3<"$d/abs/data.bin"
	in_cgroup "$sub/rel" sleep 1000 3<"$d/rel/data.bin"
	sleep 0.3
	kill -STOP "$bindfs_pid"
	timeout -k 2 20 "$bin" --once --path.cgroupfs="$sub" >"$work/fo.prom" 2>"$work/fo.log"
	rc=$?
	kill -CONT "$bindfs_pid"
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		fail "FUSE below overlay: a scan with the daemon stopped hung (killed after 20 s)"
	else
		pass "FUSE below overlay: a scan with the daemon stopped finishes (exit $rc)"
	fi
	grep -q "path=\"$d/" "$work/fo.prom" && fail "FUSE below overlay: a file of the overlays was reported" ||
		pass "FUSE below overlay: no file of the overlays is reported"
	n=$(sed -n 's/^cachestat_files_skipped_total{reason="fs_type"} //p' "$work/fo.prom")
	eq "FUSE below overlay: both held files skipped for their layer's fs type" "${n:-0}" 2
	hostile_cleanup
	umount "$d/abs" "$d/rel" 2>/dev/null
	fusermount -u "$mnt" 2>/dev/null
	kill "$bindfs_pid" 2>/dev/null
	wait "$bindfs_pid" 2>/dev/null
}

# series_value SERIES FILE: the value of one series named with its labels (a path holds '/')
series_value() { awk -v k="$1" 'index($0, k " ") == 1 { print substr($0, length(k) + 2); exit }' "$2"; }

# A stopped allow_other FUSE mount inside a directory the config walks: the walk judges the mount
# before it opens it (statx asks FUSE nothing), skips it for its fs type and reads the rest of
# the directory, in --once as in the daemon, whose later scans must not quarantine the
# directory's own mount (the walk used to wait in an open of the mount's root, inside the
# directory's mount). The scan's deadline is 2 s; a hung open is killed after 20.
hostile_fuse_walk() {
	local d=$work/fw src=$work/fw-src bindfs_pid rc took start a b n i
	if ! command -v bindfs >/dev/null; then skip "FUSE in a walk" "bindfs is not installed (exporter/deps.txt)"; return; fi
	hostile_tree fusewalk || { fail "FUSE in a walk: no cgroup"; return; }
	mkdir -p "$d/sub" "$d/mnt" "$src"
	head -c 65536 /dev/urandom >"$src/data"
	head -c 40960 /dev/urandom >"$d/a.dat"
	head -c 24576 /dev/urandom >"$d/sub/b.dat"
	chmod -R a+rX "$d"
	bindfs -f -o allow_other "$src" "$d/mnt" 2>"$work/fw-bindfs.err" &
	bindfs_pid=$!
	for _ in $(seq 100); do [ -e "$d/mnt/data" ] && break; sleep 0.05; done
	if ! [ -e "$d/mnt/data" ]; then
		fail "FUSE in a walk: bindfs did not mount"
		kill "$bindfs_pid"
		hostile_cleanup
		return
	fi
	cat "$d/a.dat" "$d/sub/b.dat" "$d/mnt/data" >/dev/null
	a=$(fincore -b -n -o RES "$d/a.dat" | tr -d ' ') b=$(fincore -b -n -o RES "$d/sub/b.dat" | tr -d ' ')
	printf '{ "per_file_top": 100, "cgroups": [ { "match": "/", "paths": ["%s"] } ], "limits": { "max_scan_seconds": 2 } }\n' \
		"$d" >"$work/fw.json"
	kill -STOP "$bindfs_pid"
	sleep 1.2 # past FUSE's attribute timeout (1 s): a stat of the mount's root now asks the daemon
	start=$(date +%s%N)
	timeout -k 2 20 "$bin" --once --path.cgroupfs="$sub" --config.file="$work/fw.json" \
		--collector.perfile.families=cached >"$work/fw.prom" 2>"$work/fw.log"
	rc=$?
	took=$((($(date +%s%N) - start) / 1000000))
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] || [ "$took" -ge 4000 ]; then
		fail "FUSE in a walk: the scan did not end inside its 2 s deadline (${took} ms, exit $rc)"
	else
		pass "FUSE in a walk: the scan ends inside its deadline (${took} ms, exit $rc)"
	fi
	eq "FUSE in a walk: the directory's file is reported with fincore's bytes" \
		"$(series_value "cachestat_file_cached_bytes{cgroup=\"/\",path=\"$d/a.dat\"}" "$work/fw.prom")" "$a"
	eq "FUSE in a walk: its subdirectory's file too" \
		"$(series_value "cachestat_file_cached_bytes{cgroup=\"/\",path=\"$d/sub/b.dat\"}" "$work/fw.prom")" "$b"
	eq "FUSE in a walk: the FUSE mount is skipped for its fs type" \
		"$(metric 'cachestat_files_skipped_total{reason="fs_type"}' "$work/fw.prom")" 1
	grep -q "path=\"$d/mnt" "$work/fw.prom" && fail "FUSE in a walk: a file on FUSE was reported" ||
		pass "FUSE in a walk: nothing on FUSE is reported"
	if start_exporter --path.cgroupfs="$sub" --config.file="$work/fw.json" \
		--collector.perfile.families=cached; then
		for i in 1 2 3 4; do
			curl -s -m 8 -H 'X-Prometheus-Scrape-Timeout-Seconds: 6' -o "$work/fw-d$i.prom" "$base/metrics"
			sleep 1.5
		done
		n=$(metric 'cachestat_files_skipped_total{reason="mount_stuck"}' "$work/fw-d4.prom")
		eq "FUSE in a walk: daemon: the directory's own mount is not quarantined (mount_stuck)" "${n:-missing}" 0
		grep -q 'has not answered a call' "$log" && fail "FUSE in a walk: daemon: a mount was quarantined" ||
			pass "FUSE in a walk: daemon: no mount quarantined over 4 scans"
		eq "FUSE in a walk: daemon: the directory's file is still reported" \
			"$(series_value "cachestat_file_cached_bytes{cgroup=\"/\",path=\"$d/a.dat\"}" "$work/fw-d4.prom")" "$a"
		kill -0 "$exporter_pid" 2>/dev/null && pass "FUSE in a walk: daemon: still running" ||
			fail "FUSE in a walk: daemon: the exporter died"
		stop_exporter
	fi
	kill -CONT "$bindfs_pid"
	hostile_cleanup
	fusermount -u "$d/mnt" 2>/dev/null || umount -l "$d/mnt" 2>/dev/null
	kill "$bindfs_pid" 2>/dev/null
	wait "$bindfs_pid" 2>/dev/null
}

# A FUSE file system (bindfs) whose daemon is stopped while a process holds a file in it
# open and the config names it: scrapes answer within their timeout with the last complete
# snapshot, the hung scan is left behind (at most two scanner threads), the scans after it skip
# the mount it waits on (quarantine, logged once) and end, and all recovers on SIGCONT.
hard_hung_fuse() {
	local holder t code secs age threads0 threads1 stuck
	if ! command -v bindfs >/dev/null; then
		skip "hung FUSE" "bindfs is not installed (exporter/deps.txt)"
		return
	fi
	if [ "$(id -u)" -ne 0 ]; then
		skip "hung FUSE" "mounting needs root"
		return
	fi
	mkdir -p "$work/fuse-src" "$work/fuse-mnt"
	head -c 65536 /dev/urandom >"$work/fuse-src/data"
	chmod -R a+rX "$work/fuse-src"
	if ! bindfs -o allow_other "$work/fuse-src" "$work/fuse-mnt"; then
		skip "hung FUSE" "bindfs could not mount"
		return
	fi
	fuse_mnt=$work/fuse-mnt
	fuse_pid=$(pgrep -n -x bindfs)
	sh -c 'exec 3<"$1"; exec sleep 600' sh "$fuse_mnt/data" &
	holder=$!
	printf '{ "cgroups": [ { "match": "/", "paths": ["%s"] } ], "per_file_top": 10000, "limits": { "max_scan_seconds": 1 } }\n' \
		"$fuse_mnt" >"$work/fuse.json"
	# the default excludes FUSE: this case is about a scan that does touch a hung mount
	if start_exporter --config.file="$work/fuse.json" --collector.cachestat.fs-types-exclude=; then
		eq "hung FUSE: a scrape before the hang" "$(code -m 20 "$base/metrics")" 200
		threads0=$(awk '/^Threads:/ { print $2 }' "/proc/$exporter_pid/status")
		kill -STOP "$fuse_pid"
		t=(-m 6 -H 'X-Prometheus-Scrape-Timeout-Seconds: 2' "$base/metrics")
		read -r code secs <<<"$(timed_code "${t[@]}")"
		eq "hung FUSE: a scrape with a 2 s timeout is answered" "$code" 200
		echo "$secs < 2" | bc | grep -q 1 && pass "hung FUSE: within the timeout (${secs}s)" ||
			fail "hung FUSE: took ${secs}s"
		grep -q '^cachestat_build_info' "$work/timed.out" && pass "hung FUSE: the last snapshot is served" ||
			fail "hung FUSE: no snapshot in the answer"
		sleep 3.2 # past max_scan_seconds (1) + the 2 s margin: the hung scan is stuck
		for _ in 1 2 3 4 5; do
			read -r code secs <<<"$(timed_code "${t[@]}")"
			[ "$code" = 200 ] || break
		done
		eq "hung FUSE: scrapes keep being answered" "$code" 200
		# the scans after the stuck one skip the mount it waits on (quarantine) and end
		age=$(metric cachestat_snapshot_age_seconds "$work/timed.out")
		echo "${age:-99} < 2" | bc | grep -q 1 &&
			pass "hung FUSE: the scans beside the stuck one end: a fresh snapshot (${age}s)" ||
			fail "hung FUSE: the snapshot is ${age}s old: the scans after the stuck one do not end"
		n=$(sed -n 's/^cachestat_files_skipped_total{reason="mount_stuck"} //p' "$work/timed.out")
		[ "${n:-0}" -ge 1 ] && pass "hung FUSE: the stuck mount's file is skipped as mount_stuck ($n)" ||
			fail "hung FUSE: skipped{reason=mount_stuck} is '${n}'"
		grep -q "path=\"$fuse_mnt/data\"" "$work/timed.out" &&
			fail "hung FUSE: the file of the stuck mount is reported" ||
			pass "hung FUSE: the file of the stuck mount is not reported meanwhile"
		eq "hung FUSE: the quarantine is logged once over 5 scrapes" \
			"$(grep -c 'has not answered a call' "$log")" 1
		stuck=$(metric cachestat_scans_stuck_total "$work/timed.out")
		eq "hung FUSE: the stuck scan is counted once" "$stuck" 1
		threads1=$(awk '/^Threads:/ { print $2 }' "/proc/$exporter_pid/status")
		# a scan is two threads: the scanner and, waiting on it, the one the scan runs in
		[ "$threads1" -le $((threads0 + 4)) ] &&
			pass "hung FUSE: at most two scans ($threads0 -> $threads1 threads)" ||
			fail "hung FUSE: threads grew from $threads0 to $threads1"
		kill -CONT "$fuse_pid"
		sleep 1
		read -r code secs <<<"$(timed_code -m 20 -H 'X-Prometheus-Scrape-Timeout-Seconds: 10' "$base/metrics")"
		eq "hung FUSE: after SIGCONT a scrape is answered" "$code" 200
		age=$(metric cachestat_snapshot_age_seconds "$work/timed.out")
		echo "${age:-99} < 1" | bc | grep -q 1 && pass "hung FUSE: after SIGCONT the snapshot is fresh (${age}s)" ||
			fail "hung FUSE: after SIGCONT the snapshot is ${age}s old"
		grep -q "path=\"$fuse_mnt/data\"" "$work/timed.out" &&
			pass "hung FUSE: the file on it is scanned again" || fail "hung FUSE: the file is missing"
		grep -q 'answers again' "$log" && pass "hung FUSE: the end of the quarantine is logged" ||
			fail "hung FUSE: the end of the quarantine is not logged"
		kill -0 "$exporter_pid" 2>/dev/null && no_http_death && pass "hung FUSE: still running" || fail "hung FUSE: the exporter died"
		stop_exporter
	fi
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
	fuse_cleanup
}

if hostile_ready; then
	for t in ${HOSTILE_CASES:-fuse fuse_overlay fuse_walk}; do "hostile_$t"; done
fi
hard_hung_fuse
stop_exporter
finish

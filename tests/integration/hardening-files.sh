#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Hardening against hostile files and names: FIFOs, devices, symlink loops and symlinks out of a
# configured directory; the page cache oracle (an unprivileged process holding root's files
# gets published exactly what the kernel lets it ask cachestat about); the check-then-open race
# (descriptors and a configured name swapping between a file, a device and a FIFO: nothing but
# the file opened in 1000 scrapes); labels one-to-one (odd cgroup and file names); pod,
# container and rootless names made below cgroups root does not own (not believed; the same
# names root made are); a setuid program holding what its user chose is judged as its user.
# Each hostile case runs the exporter over a cgroup subtree of its own
# (--path.cgroupfs), so that the scans see the test's processes only; the helpers are in
# tests/integration/hostile/, run from a copy. HOSTILE_CASES="oracle race" runs a few of them.
# Ends with "N passed, N failed, N skipped" (tests/lib/tap.sh).
set -uo pipefail
# shellcheck source=tests/integration/lib-hardening.sh
. "$(dirname "$0")/lib-hardening.sh"

# ==== file safety in configured paths ====
if [ "$(id -u)" -ne 0 ] || ! mkdir "$cg2/cse-hard-$$" 2>/dev/null; then
	skip "file safety" "needs a writable cgroup v2 at $cg2"
else
	cgdir=$cg2/cse-hard-$$
	d=$work/tree
	mkdir -p "$d/sub/deeper" "$work/outside"
	for f in a b sub/c sub/deeper/d; do head -c 5000 /dev/urandom >"$d/$f"; done
	head -c 5000 /dev/urandom >"$work/outside/secret"
	mkfifo "$d/fifo"                      # opening it for reading would block without O_NONBLOCK
	mknod "$d/null" c 1 3                 # a device: never opened
	ln -s loop "$d/loop"                  # a symlink loop
	ln -s . "$d/sub/self"                 # a directory symlink back up
	ln -s "$work/outside" "$d/escape"     # out of the configured directory
	ln -s "$work/outside/secret" "$d/secret-link"
	ln -s "$work/outside" "$d/sub/out"         # matched by the glob below: not followed
	printf '{ "cgroups": [ { "match": "/cse-hard-%s", "paths": ["%s", "%s/*"] } ] }\n' \
		"$$" "$d" "$d/sub" >"$work/files.json"
	# every file of the cgroup named (the default names only the host's top 20)
	if start_exporter --config.file="$work/files.json" --collector.perfile.cgroup-top=100; then
		start=$SECONDS
		curl -s -m 20 "$base/metrics" >"$work/files.prom"
		took=$((SECONDS - start))
		[ "$took" -lt 10 ] && pass "scrape over a FIFO, a device and symlink loops returns (${took}s)" ||
			fail "scrape took ${took}s"
		eq "only the 4 regular files of the directory are counted" \
			"$(sed -n "s|^cachestat_cgroup_files{cgroup=\"/cse-hard-$$\"} ||p" "$work/files.prom")" 4
		grep -q 'path="[^"]*secret' "$work/files.prom" &&
			fail "a file out of the configured directory was reported" ||
			pass "nothing out of the configured directory is reported"
		grep -q "path=\"$d/sub/deeper/d\"" "$work/files.prom" &&
			pass "a file deep in the directory is reported by its path" || fail "deep file missing"
		kill -0 "$exporter_pid" 2>/dev/null && no_http_death && pass "still running" || fail "the exporter died"
	fi
fi

# Page cache oracle: an unprivileged process holding root's files (O_PATH, read-only, mapped)
# must not make the exporter publish their page cache. The oracle is the kernel: the holder
# calls cachestat(2) on its own descriptors (mincore's rule, owner or writer, for mappings);
# exactly the files it may ask about are reported.
hostile_oracle() {
	local sub d=$work/orc expected got files
	hostile_tree oracle && mkdir "$sub/h" || { fail "oracle: no cgroup"; return; }
	mkdir -p "$d" "$work/orc-run" && chown 65534 "$work/orc-run"
	for f in secret public worldw own pubmap ownmap; do head -c 65536 /dev/urandom >"$d/$f"; done
	chmod 600 "$d/secret"
	chmod 644 "$d/public" "$d/pubmap" "$d/own" "$d/ownmap"
	chmod 666 "$d/worldw"
	chown 65534 "$d/own" "$d/ownmap"
	cat "$d"/* >/dev/null # all cached
	in_cgroup "$sub/h" "${as_nobody[@]}" "$py" "$hostile/holder.py" "$work/orc-run/ready" \
		"opath:$d/secret" "rdonly:$d/public" "rdonly:$d/worldw" "rdonly:$d/own" \
		"map:$d/pubmap" "map:$d/ownmap" </dev/null >/dev/null 2>"$work/orc-run/err"
	for _ in $(seq 100); do [ -e "$work/orc-run/ready" ] && break; sleep 0.05; done
	[ -e "$work/orc-run/ready" ] || { fail "oracle: holder did not start"; cat "$work/orc-run/err"; return; }
	sed 's/^/  | kernel says: /' "$work/orc-run/ready"
	expected=$(sed -n 's/^allowed //p' "$work/orc-run/ready" | sort | tr '\n' ' ')
	printf '{ "per_file_top": 100 }\n' >"$work/orc.json"
	start_exporter --path.cgroupfs="$sub" --config.file="$work/orc.json" \
		--collector.perfile.families=cached,size || return
	curl -s "$base/metrics" >"$work/orc.prom"
	got=$(sed -n "s|^cachestat_file_size_bytes{cgroup=\"/h\",path=\"\\($d/[^\"]*\\)\"}.*|\\1|p" \
		"$work/orc.prom" | sort | tr '\n' ' ')
	eq "oracle: the files reported are those the holder may ask cachestat about" "$got" "$expected"
	files=$(sed -n 's|^cachestat_cgroup_files{cgroup="/h"} ||p' "$work/orc.prom")
	# and its stderr file, which it holds open for writing
	eq "oracle: nothing else of the holder is counted (its binary and libraries are root's)" \
		"$files" "$(($(grep -c '^allowed ' "$work/orc-run/ready") + 1))"
	grep -q "path=\"$d/secret\"" "$work/orc.prom" && fail "oracle: the O_PATH secret is published" ||
		pass "oracle: the file held by O_PATH only is not published"
	no_dup_series "$work/orc.prom" "oracle"
	stop_exporter
	hostile_cleanup
}

# Check-then-open race: descriptors 100-103 swap between O_PATH descriptors of a regular file,
# a root-only device node and a FIFO (and, in a second process, a regular file held read-only);
# inotify counts every open of the device and the FIFO.
hostile_race() {
	local sub d=$work/race out n
	if ! cc -O2 -o "$work/racer" "$hostile/racer.c"; then fail "racer.c does not build"; return; fi
	hostile_tree race && mkdir "$sub/r" || { fail "race: no cgroup"; return; }
	mkdir -p "$d"
	head -c 65536 /dev/urandom >"$d/regular"
	mknod -m 600 "$d/device" c 1 3
	mkfifo -m 600 "$d/fifo"
	# a configured directory anyone may write to, where a name flips between a file and a FIFO
	mkdir -m 1777 "$d/swap"
	mkfifo "$d/swap/p"
	head -c 4096 /dev/urandom >"$d/swap/r"
	chown 65534 "$d/swap/p" "$d/swap/r"
	"$py" "$hostile/watch_opens.py" "$d/device" "$d/fifo" "$d/swap/p" "$work/race.stop" >"$work/race.watch" &
	local watcher=$!
	for _ in $(seq 100); do grep -q watching "$work/race.watch" && break; sleep 0.05; done
	in_cgroup "$sub/r" "${as_nobody[@]}" "$work/racer" "$d/regular" "$d/device" "$d/fifo" \
		>"$work/racer.out" 2>&1 </dev/null
	# and one holding its own file read-only, which it may ask cachestat about: the scan gets
	# past the permission check to the open, in the middle of the swaps
	head -c 65536 /dev/urandom >"$d/own"
	chown 65534 "$d/own"
	in_cgroup "$sub/r" "${as_nobody[@]}" "$work/racer" "$d/own" "$d/device" "$d/fifo" rdonly \
		>"$work/racer2.out" 2>&1 </dev/null
	in_cgroup "$sub/r" "${as_nobody[@]}" "$py" "$hostile/flip_names.py" "$d/swap"
	for _ in $(seq 100); do grep -q ready "$work/racer.out" && grep -q ready "$work/racer2.out" && break; sleep 0.05; done
	printf '{ "cgroups": [ { "match": "/r", "paths": ["%s"] } ] }\n' "$d/swap" >"$work/race.json"
	if start_exporter --path.cgroupfs="$sub" --config.file="$work/race.json"; then
		out=$("$py" "$hostile/scrape_loop.py" "$port")
		echo "  | 1000 scrapes: ${out#* } s"
		eq "race: 1000 scrapes answered" "${out%% *}" 1000
	fi
	touch "$work/race.stop"
	wait "$watcher"
	sed 's/^/  | /' "$work/race.watch"
	n=$(awk '$1 == "opens" && $2 == "device" { print $3 }' "$work/race.watch")
	eq "race: opens of the root-only device in 1000 scrapes" "$n" 0
	n=$(awk '$1 == "opens" && $2 == "fifo" { print $3 }' "$work/race.watch")
	eq "race: opens of the FIFO in 1000 scrapes" "$n" 0
	n=$(awk '$1 == "opens" && $2 == "p" { print $3 }' "$work/race.watch")
	eq "race: opens of the FIFO swapped into a configured directory in 1000 scrapes" "$n" 0
	stop_exporter
	hostile_cleanup
}

# Judged by who chose the descriptor: an unprivileged user opens a root-owned file it may read
# but not ask cachestat about, and its own, then execs a setuid-root program that keeps both
# (`exec 5<victim; exec passwd`). The oracle is the kernel asked by the same user holding the
# same files (holder.py): the files published are those it allows, whatever the setuid
# program's effective uid and capabilities.
hostile_setuid() {
	local sub d=$work/suid expected got pid
	if findmnt -T "$work" -no OPTIONS | grep -qw nosuid; then
		skip "setuid" "$work is on a nosuid mount"
		return
	fi
	if ! cc -O2 -o "$work/suidhold" "$hostile/suidhold.c"; then fail "suidhold.c does not build"; return; fi
	chmod 4755 "$work/suidhold"
	hostile_tree setuid && mkdir "$sub/s" || { fail "setuid: no cgroup"; return; }
	mkdir -p "$d" "$work/suid-run" && chown 65534 "$work/suid-run"
	head -c 65536 /dev/urandom >"$d/victim"
	head -c 65536 /dev/urandom >"$d/own"
	chmod 644 "$d/victim" "$d/own"
	chown 65534 "$d/own"
	cat "$d/victim" "$d/own" >/dev/null
	# the oracle, outside the scanned subtree
	"${as_nobody[@]}" "$py" "$hostile/holder.py" "$work/suid-run/ready" "rdonly:$d/victim" "rdonly:$d/own" \
		</dev/null >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 100); do [ -e "$work/suid-run/ready" ] && break; sleep 0.05; done
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	[ -e "$work/suid-run/ready" ] || { fail "setuid: holder did not start"; return; }
	sed 's/^/  | kernel says: /' "$work/suid-run/ready"
	expected=$(sed -n 's/^allowed //p' "$work/suid-run/ready" | sort | tr '\n' ' ')
	in_cgroup "$sub/s" "${as_nobody[@]}" sh -c 'exec 5<"$1" 6<"$2"; exec "$3"' sh \
		"$d/victim" "$d/own" "$work/suidhold" </dev/null >/dev/null 2>&1
	pid=$!
	for _ in $(seq 100); do
		grep -q '^Uid:[[:space:]]*65534[[:space:]]*0[[:space:]]' "/proc/$pid/status" 2>/dev/null && break
		sleep 0.05
	done
	grep -q '^Uid:[[:space:]]*65534[[:space:]]*0[[:space:]]' "/proc/$pid/status" ||
		{ fail "setuid: the setuid holder did not start"; hostile_cleanup; return; }
	printf '{ "per_file_top": 100 }\n' >"$work/suid.json"
	"$bin" --once --path.cgroupfs="$sub" --config.file="$work/suid.json" --collector.perfile.families=size \
		>"$work/suid.prom" 2>/dev/null
	got=$(sed -n "s|^cachestat_file_size_bytes{cgroup=\"/s\",path=\"\\($d/[^\"]*\\)\"}.*|\\1|p" \
		"$work/suid.prom" | sort | tr '\n' ' ')
	eq "setuid: the files a setuid holder publishes are those its user may ask about" "$got" "$expected"
	grep -q "path=\"$d/victim\"" "$work/suid.prom" && fail "setuid: root's file is published" ||
		pass "setuid: root's file handed to a setuid program is not published"
	hostile_cleanup
}

# Labels one-to-one: cgroups named c<0xff> and c\xff (a backslash), and a real file named
# like the suffix that tells two deleted files of the same name apart.
hostile_labels() {
	local sub d=$work/lbl n want
	hostile_tree labels || { fail "labels: no cgroup"; return; }
	mkdir "$sub/c"$'\xff' "$sub/c\\xff" "$sub/p" || { fail "labels: cannot name cgroups"; return; }
	in_cgroup "$sub/c"$'\xff' sleep 1000
	in_cgroup "$sub/c\\xff" sleep 1000
	mkdir -p "$d"
	echo one >"$d/x"
	echo "real file" >"$d/x (deleted) (2)"
	echo odd >"$d/"$'b\\x\xffy'
	in_cgroup "$sub/p" sh -c 'exec 3<"$1/x"; rm "$1/x"; echo two >"$1/x"; exec 4<"$1/x"; rm "$1/x";
		exec 5<"$1/x (deleted) (2)" 6<"$1/$2"; exec sleep 1000' sh "$d" $'b\\x\xffy'
	sleep 0.3
	printf '{ "per_file_top": 100 }\n' >"$work/lbl.json"
	"$bin" --once --path.cgroupfs="$sub" --config.file="$work/lbl.json" --collector.perfile.families=size \
		--collector.perfile.unlinked=keep >"$work/lbl.prom" 2>/dev/null
	n=$(grep -c '^cachestat_cgroup_files{cgroup="/c' "$work/lbl.prom")
	eq "labels: the two c-cgroups have two series" "$n" 2
	n=$(grep -c "^cachestat_file_size_bytes{cgroup=\"/p\",path=\"$d/x" "$work/lbl.prom")
	eq "labels: two deleted files and the real one have three series" "$n" 3
	no_dup_series "$work/lbl.prom" "labels"
	# the label of a name with a backslash and a byte that is not UTF-8, worked out apart from
	# the exporter: the backslash doubled, the byte as the text \xff, then the format's escapes
	want=$("$py" "$hostile/path_label.py" "$d/"$'b\\x\xffy')
	grep -qF "path=\"$want\"" "$work/lbl.prom" && pass "labels: an odd name reads as worked out ($want)" ||
		fail "labels: no path label $want"
	if command -v promtool >/dev/null; then
		promtool check metrics <"$work/lbl.prom" >"$work/lbl.promtool" 2>&1 &&
			pass "labels: promtool check metrics" || { fail "labels: promtool"; cat "$work/lbl.promtool"; }
	fi
	hostile_cleanup
}

# Borrowed identity: a user who owns a delegated cgroup names its children like a pod, a
# container or a rootless container of another user. The oracle is the cgroups' owners (stat):
# below one root does not own, no runtime's or pod's name is believed, but rootless podman's
# below user@UID.service; the same names in root-owned cgroups are.
hostile_borrowed() {
	local sub id=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
	local uid_=5d3a3f2e_8b1c_4e0a_9f6d_2c7b1a0e9d84 uid=5d3a3f2e-8b1c-4e0a-9f6d-2c7b1a0e9d84
	local pod ctl user
	hostile_tree borrowed || { fail "borrowed: no cgroup"; return; }
	pod=deleg.slice/deleg-kubepods.slice/deleg-kubepods-besteffort.slice/deleg-kubepods-besteffort-pod$uid_.slice
	ctl=ctl.slice/ctl-kubepods.slice/ctl-kubepods-besteffort.slice/ctl-kubepods-besteffort-pod$uid_.slice
	user=user.slice/user-65534.slice/user@65534.service
	mkdir -p "$sub/$pod" "$sub/deleg-docker/docker-$id.scope" "$sub/$ctl" "$sub/root-docker/docker-$id.scope" \
		"$sub/$user/user.slice/libpod-$id.scope" "$sub/user.slice/user-65534.slice/x.service/libpod-$id.scope" ||
		{ fail "borrowed: cgroups"; hostile_cleanup; return; }
	chown -R 65534 "$sub/deleg.slice/deleg-kubepods.slice" "$sub/deleg-docker" "$sub/$user" \
		"$sub/user.slice/user-65534.slice/x.service"
	"$bin" --once --path.cgroupfs="$sub" >"$work/borrowed.prom" 2>/dev/null
	borrowed_info() { grep "^cachestat_cgroup_info{cgroup=\"/$1\"[,}]" "$work/borrowed.prom"; }
	borrowed_info "$pod" | grep -q pod_uid= && fail "borrowed: a pod UID below a user's cgroup is believed" ||
		pass "borrowed: no pod UID below a user's cgroup"
	borrowed_info "$ctl" | grep -q "pod_uid=\"$uid\"" && pass "borrowed: the same names root made give the pod UID" ||
		fail "borrowed: the root-owned pod slice has no pod UID"
	borrowed_info "deleg-docker/docker-$id.scope" | grep -q container_id= &&
		fail "borrowed: a container id below a user's cgroup is believed" ||
		pass "borrowed: no container id below a user's cgroup"
	borrowed_info "root-docker/docker-$id.scope" | grep -q "container_runtime=\"docker\",container_id=\"$id\"" &&
		pass "borrowed: the same scope root made is docker's" || fail "borrowed: the root-owned scope has no id"
	borrowed_info "$user/user.slice/libpod-$id.scope" |
		grep -q "container_runtime=\"podman\",container_id=\"$id\",rootless_uid=\"65534\"" &&
		pass "borrowed: rootless podman below user@65534.service, with its uid" ||
		fail "borrowed: rootless podman not recognised: $(borrowed_info "$user/user.slice/libpod-$id.scope")"
	borrowed_info "user.slice/user-65534.slice/x.service/libpod-$id.scope" | grep -q container_id= &&
		fail "borrowed: a podman scope below a user's other service is believed" ||
		pass "borrowed: no container below a user's service that is not its manager"
	no_dup_series "$work/borrowed.prom" "borrowed"
	hostile_cleanup
}

if hostile_ready; then
	for t in ${HOSTILE_CASES:-oracle race setuid labels borrowed}; do "hostile_$t"; done
fi
stop_exporter
finish

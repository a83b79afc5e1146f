#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Churn files and cgroups under a running exporter, for a bounded time.

    churn.py CGROUP_PARENT FILES_DIR SECONDS [FILES]

Keeps about 20 child cgroups of CGROUP_PARENT alive, each with a process holding a few files
of FILES_DIR open (one of them deleted while open), over FILES (default 2000) files made first; every step it removes the oldest cgroup
(process killed, cgroup removed) and makes a new one, and it creates, rewrites, renames and
deletes files in FILES_DIR. CGROUP_PARENT may be "-" to churn files only. Prints what it did
as key=value on exit. Nothing here leaves the machine.
"""
import os
import random
import signal
import subprocess
import sys
import time

parent, files_dir, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
n_files = int(sys.argv[4]) if len(sys.argv) > 4 else 2000
rng = random.Random(1)
ops = {"cgroups_made": 0, "cgroups_removed": 0, "files_made": 0, "files_deleted": 0,
       "files_rewritten": 0, "files_renamed": 0}
stopping = False


def on_term(*_):
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGINT, on_term)


def make_file(name):
    with open(os.path.join(files_dir, name), "wb") as f:
        f.write(os.urandom(rng.choice((4096, 16384, 65536))))
    ops["files_made"] += 1


live_files = []
for i in range(n_files):
    make_file("f%d" % i)
    live_files.append("f%d" % i)
next_file = n_files
stop = time.monotonic() + seconds  # the churn proper, after the files are made

live = []  # (cgroup dir, Popen)
serial = 0


def new_cgroup():
    global serial
    d = os.path.join(parent, "c%d" % serial)
    serial += 1
    os.mkdir(d)
    names = rng.sample(live_files, 4)
    doomed = os.path.join(files_dir, "doomed%d" % serial)
    with open(doomed, "wb") as f:
        f.write(os.urandom(8192))
    # The shell moves itself into the cgroup, opens the files, deletes one of them and becomes
    # a sleep that holds them all.
    script = ('echo $$ > "$1/cgroup.procs" || exit 1; '
              'exec 3<"$2" 4<"$3" 5<"$4" 6<"$5" 7<"$6" || exit 1; rm -f "$6"; exec sleep 600')
    p = subprocess.Popen(["/bin/sh", "-c", script, "sh", d] +
                         [os.path.join(files_dir, n) for n in names] + [doomed],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    live.append((d, p))
    ops["cgroups_made"] += 1


def remove_cgroup():
    d, p = live.pop(0)
    p.kill()
    p.wait()
    for _ in range(100):
        try:
            os.rmdir(d)
            ops["cgroups_removed"] += 1
            return
        except OSError:
            time.sleep(0.01)  # the killed process may not have left the cgroup yet


try:
    while time.monotonic() < stop and not stopping:
        if parent != "-":
            if len(live) >= 20:
                remove_cgroup()
            new_cgroup()
        for _ in range(20):
            op = rng.random()
            if op < 0.3:
                name = "f%d" % next_file
                next_file += 1
                make_file(name)
                live_files.append(name)
            elif op < 0.6 and len(live_files) > n_files // 4:
                name = live_files.pop(rng.randrange(len(live_files)))
                os.unlink(os.path.join(files_dir, name))
                ops["files_deleted"] += 1
            elif op < 0.8:
                name = rng.choice(live_files)
                with open(os.path.join(files_dir, name), "r+b") as f:
                    f.truncate(0)
                    f.write(os.urandom(rng.choice((4096, 32768))))
                ops["files_rewritten"] += 1
            else:
                i = rng.randrange(len(live_files))
                new = "r%d" % next_file
                next_file += 1
                os.rename(os.path.join(files_dir, live_files[i]), os.path.join(files_dir, new))
                live_files[i] = new
                ops["files_renamed"] += 1
        time.sleep(0.05)
finally:
    while live:
        remove_cgroup()
    print(" ".join("%s=%d" % kv for kv in ops.items()), flush=True)

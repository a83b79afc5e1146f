#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A mount bomb, run by an unprivileged user inside `unshare -Urm`: mounts a tmpfs on DIR,
makes LAYERS lower directories in it and N read-only overlays of them all, opens a file through
the first overlay, writes "ready N" to READY and sleeps holding the file (until killed).
With STOPS (counts, comma-separated), it writes "ready K" at each K below N too and goes on
once READY is removed: one bomb measured as it grows.
Usage: mountbomb.py DIR N LAYERS READY [STOPS]"""
import ctypes
import os
import sys
import time

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
MS_RDONLY = 1


def mount(src, target, fstype, flags, data):
    if libc.mount(src, target, fstype, flags, data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), target)


def main():
    d, n, layers, ready = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    stops = {int(k) for k in sys.argv[5].split(",")} if len(sys.argv) > 5 else set()
    os.makedirs(d, exist_ok=True)
    mount(b"tmpfs", d.encode(), b"tmpfs", 0, b"size=16m,nr_inodes=1048576")
    lower = []
    for i in range(layers):
        p = os.path.join(d, "l%d" % i)
        os.mkdir(p)
        lower.append(p)
    with open(os.path.join(lower[0], "held"), "wb") as f:
        f.write(b"x" * 65536)
    opts = ("lowerdir=" + ":".join(lower)).encode()
    made = 0
    held = None
    for i in range(n):
        if made in stops and made:
            with open(ready, "w") as f:
                f.write("ready %d\n" % made)
            while os.path.exists(ready):
                time.sleep(0.05)
        m = os.path.join(d, "m%d" % i)
        os.mkdir(m)
        try:
            mount(b"overlay", m.encode(), b"overlay", MS_RDONLY, opts)
        except OSError as e:
            print("mountbomb: overlay %d: %s" % (i, e), file=sys.stderr)
            break
        made += 1
        if made == 1:
            held = open(os.path.join(d, "m0", "held"), "rb")
            held.read()
    if held is None:
        held = open(os.path.join(d, "m0", "held"), "rb")
    held.read()
    with open(ready, "w") as f:
        f.write("ready %d\n" % made)
    while True:
        time.sleep(1000)


if __name__ == "__main__":
    main()

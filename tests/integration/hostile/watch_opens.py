# SPDX-License-Identifier: Apache-2.0
# Counts every open of each PATH (inotify IN_OPEN) until STOP_FILE exists: prints "watching"
# once the watches are set, then "opens BASENAME N" per path. Usage: watch_opens.py PATH... STOP_FILE
import ctypes, os, select, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
ino = libc.inotify_init1(os.O_NONBLOCK)
IN_OPEN = 0x20
wd = {libc.inotify_add_watch(ino, p.encode(), IN_OPEN): p for p in sys.argv[1:-1]}
opens = {p: 0 for p in sys.argv[1:-1]}
print("watching", flush=True)
while not os.path.exists(sys.argv[-1]):
    select.select([ino], [], [], 0.2)
    try:
        buf = os.read(ino, 65536)
    except BlockingIOError:
        continue
    i = 0
    while i < len(buf):
        w, mask, _, n = struct.unpack_from("iIII", buf, i)
        if mask & IN_OPEN:
            opens[wd[w]] += 1
        i += 16 + n
for p in sys.argv[1:-1]:
    print("opens", os.path.basename(p), opens[p])

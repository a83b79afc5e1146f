# SPDX-License-Identifier: Apache-2.0
# Runs CMD with an inotify IN_OPEN watch on FILE and prints how many opens of FILE the watch
# saw during CMD and SECONDS after it. Usage: count_opens.py FILE SECONDS CMD...
import ctypes, os, select, struct, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
libc.inotify_add_watch(fd, sys.argv[1].encode(), 0x20)  # IN_OPEN
subprocess.run(sys.argv[3:], stdout=subprocess.DEVNULL)
end, n = time.time() + float(sys.argv[2]), 0
while time.time() < end:
    if select.select([fd], [], [], max(0, end - time.time()))[0]:
        buf = os.read(fd, 4096)
        while buf:
            _, _, _, ln = struct.unpack("iIII", buf[:16])
            n, buf = n + 1, buf[16 + ln:]
print(n)

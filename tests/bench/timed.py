#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# timed.py TIMES OUT ERR COMMAND...: runs COMMAND (stdout to OUT, stderr to ERR) and writes
# "wall user system maxrss_kib" to TIMES, to the tenth of a millisecond: /usr/bin/time prints
# hundredths, a tenth of a 0.06 s floor. Exits as COMMAND did.
import os
import sys
import time

times, out, err, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
start = time.monotonic()
pid = os.fork()
if pid == 0:
    os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)
    os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
    try:
        os.execvp(cmd[0], cmd)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
wall = time.monotonic() - start
with open(times, "w") as f:
    f.write(f"{wall:.4f} {usage.ru_utime:.4f} {usage.ru_stime:.4f} {usage.ru_maxrss}\n")
sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)

# SPDX-License-Identifier: Apache-2.0
# Hostile holder for tests/integration/hardening-files.sh (runs as an unprivileged user): holds the
# files given in several ways and asks the kernel itself which of them it may learn the page
# cache state of, the oracle the exporter must agree with. Usage:
#   holder.py READY_FILE KIND:PATH...   KIND: opath, rdonly, map
# Writes to READY_FILE one line per file: "allowed PATH" or "denied PATH", then sleeps.
import ctypes, mmap, os, sys, time

libc = ctypes.CDLL(None, use_errno=True)
NR_CACHESTAT = 451  # x86_64; mainline form: (fd, struct cachestat_range *, struct cachestat *, flags)

class Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]

class Cstat(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("cache", "dirty", "wb", "ev", "rev")]

def cachestat_ok(fd):
    r, c = Range(0, 0), Cstat()
    return libc.syscall(NR_CACHESTAT, fd, ctypes.byref(r), ctypes.byref(c), 0) == 0

keep, lines = [], []
for arg in sys.argv[2:]:
    kind, path = arg.split(":", 1)
    if kind == "map":
        fd = os.open(path, os.O_RDONLY)
        keep.append(mmap.mmap(fd, 0, mmap.MAP_PRIVATE, mmap.PROT_READ))
        os.close(fd)
        # mincore's rule for a mapping of a file (it lies rather than fail): owner or writer
        ok = os.stat(path).st_uid == os.geteuid() or os.access(path, os.W_OK)
    else:
        fd = os.open(path, os.O_PATH if kind == "opath" else os.O_RDONLY)
        keep.append(fd)
        ok = cachestat_ok(fd)
    lines.append(("allowed " if ok else "denied ") + path)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("\n".join(lines) + "\n")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    time.sleep(60)

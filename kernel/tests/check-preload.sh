#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The kernel build's preload (kernel/scripts/hugepage-heap.c, lib-kernel.sh's make_bzimage) must advise huge
# pages on a large anonymous mapping and leave a small one alone; without it, neither is advised. Each mapping
# is looked up in /proc/self/smaps, whose VmFlags says "hg" for MADV_HUGEPAGE. No kernel, no QEMU.
# Prints one line per case and "N passed, N failed, N skipped"; exits non-zero if any case failed.
set -uo pipefail
. "$(dirname "$0")/../scripts/lib-kernel.sh"
. "$(dirname "$0")/../../tests/lib/tap.sh"

# Maps 4 MiB, then 64 KiB, through libc's mmap (where a preload sees it); prints "hg" or "-" for each.
probe() {
	python3 -c '
import ctypes
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
def advised(size):
    addr = libc.mmap(None, size, 3, 0x22, -1, 0)  # PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS
    ours = False
    for line in open("/proc/self/smaps"):
        field = line.split()[0]
        if field == "VmFlags:" and ours:
            return "hg" if "hg" in line.split()[1:] else "-"
        if "-" in field and not field.endswith(":"):
            low, high = (int(x, 16) for x in field.split("-"))
            ours = low <= addr < high
    return "not found"
print(advised(4 << 20), advised(64 << 10))'
}

if ! preload=$(hugepage_preload); then
	fail "hugepage-heap.c compiles"
else
	eq "with the preload, 4 MiB advised huge pages and 64 KiB not" "$(LD_PRELOAD=$preload probe)" "hg -"
	eq "without it, neither" "$(probe)" "- -"
fi
finish

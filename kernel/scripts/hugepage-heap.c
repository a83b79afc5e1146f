// SPDX-License-Identifier: Apache-2.0
/*
 * Preloaded into the kernel build (LD_PRELOAD, set by make_bzimage in lib-kernel.sh): asks for transparent
 * huge pages on every anonymous mapping large enough to hold one, which is where gcc keeps its heap.
 *
 * Where the host's THP mode is "madvise", cc1 otherwise faults its heap in 4 KiB at a time: some 23,000 page
 * faults for one kernel object, and a third of a cold build's CPU time is the kernel's. With this, about 6,000.
 * Advice only: the build's output does not change, and where THP is off or already "always" nothing does.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/types.h>

/* One x86-64 huge page: a smaller mapping cannot hold one. */
#define HUGE_PAGE_BYTES (2UL << 20)

typedef void *mmap_fn(void *addr, size_t len, int prot, int flags, int fd, off_t off);

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	static mmap_fn *next_mmap;
	void *p;

	if (!next_mmap)
		next_mmap = (mmap_fn *)dlsym(RTLD_NEXT, "mmap");
	p = next_mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED && (flags & MAP_ANONYMOUS) && len >= HUGE_PAGE_BYTES)
		madvise(p, len, MADV_HUGEPAGE); /* an error leaves the mapping as it was */
	return p;
}

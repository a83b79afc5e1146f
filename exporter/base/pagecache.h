/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pagecache: the cachestat(2) system call, whichever ABI the running kernel has.
 *
 * Number 451 carries two incompatible ABIs: the seed series' five-argument form
 *   cachestat(fd, off, len, cstat_size, cstat)
 * and mainline (>= 6.5)
 *   cachestat(fd, struct cachestat_range *, cstat, flags).
 * The v3 series serves both on 451: a 4th argument of 0 (a cstat_size of 0, which asks for
 * nothing in the seed's form) selects mainline's form there.
 * pagecache_probe() tells them apart once; pagecache_stat() then makes the right call.
 * Depends on nothing else in the project.
 */
#pragma once

#include <stdint.h>

#define PAGECACHE_NR_CACHESTAT 451

/* Both ABIs fill the same five counters, in pages. Declared here: libc headers lack it. */
struct pagecache_cachestat {
	uint64_t nr_cache;
	uint64_t nr_dirty;
	uint64_t nr_writeback;
	uint64_t nr_evicted;
	uint64_t nr_recently_evicted;
};

/* Mainline's range argument. */
struct pagecache_range {
	uint64_t off;
	uint64_t len;
};

enum pagecache_abi {
	PAGECACHE_ABI_NONE,
	PAGECACHE_ABI_SEED,
	PAGECACHE_ABI_MAINLINE,
	PAGECACHE_ABI_BOTH, /* the v3 series: either form; pagecache_stat() uses mainline's */
};

/* Same shape as syscall(2); tests pass a fake. Returns -1 and sets errno on failure. */
typedef long (*pagecache_syscall_fn)(long nr, ...);

struct pagecache {
	enum pagecache_abi abi;
	pagecache_syscall_fn sys;
};

const char *pagecache_abi_name(enum pagecache_abi abi);

/*
 * Finds out which ABI the kernel speaks by calling it on probe_fd (any regular file or memfd).
 * A seed-form call with off = 0 succeeds on a seed kernel; on mainline it fails with EFAULT
 * (it reads a NULL range pointer; some versions check flags first and say EINVAL). A
 * mainline-form call follows either way, into a struct filled with a pattern no count can
 * have: a seed-only kernel returns 0 and leaves it alone (cstat_size 0), a kernel that
 * serves mainline's form overwrites it. ENOSYS means no cachestat. Returns 0 and fills *ret,
 * or -errno of the call that could not be explained (*ret then says PAGECACHE_ABI_NONE).
 * sys == NULL means syscall(2).
 */
int pagecache_probe(pagecache_syscall_fn sys, int probe_fd, struct pagecache *ret);

/* Probes with a private memfd. */
int pagecache_probe_default(struct pagecache *ret);

/*
 * Page cache state of the whole of fd. Returns 0, or -errno: -ENOSYS when the ABI is none,
 * -EPERM when the kernel refuses to tell, -EOPNOTSUPP for hugetlbfs, -EBADF, -EFAULT, -EINVAL.
 */
int pagecache_stat(const struct pagecache *pc, int fd, struct pagecache_cachestat *ret);

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
 * Where there is no cachestat(2), or the --cachestat.method flag says so, the mincore(2) method
 * (files/mincore.h) measures cached pages alone: pagecache_select() decides which.
 * Depends on nothing else in the project.
 */
#pragma once

#include <stdbool.h>
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
	PAGECACHE_ABI_MINCORE, /* no cachestat(2): mmap(2) and mincore(2), cached pages only */
};

/* --cachestat.method: which call measures the files. */
enum pagecache_method {
	PAGECACHE_METHOD_AUTO,      /* cachestat(2) where the kernel has it, else mincore(2) */
	PAGECACHE_METHOD_CACHESTAT, /* cachestat(2) or nothing */
	PAGECACHE_METHOD_MINCORE,   /* mincore(2) even where cachestat(2) is there */
};

/*
 * The mincore method's caps, in pages of the files' sizes: mincore(2) walks holes too, so a
 * sparse file costs its size, not its data. A page costs 6 to 11 ns on a 6.1 kernel here (a
 * 64 GiB sparse file in 0.1 to 0.18 s), 73 ns in the seed's cover letter (2 TB in 37.5 s):
 * the scan's cap stays under half the default limits.max_scan_seconds even at that rate.
 */
#define PAGECACHE_MINCORE_DEFAULT_MAX_PAGES_PER_FILE (UINT64_C(1) << 24) /* 64 GiB at 4 KiB */
#define PAGECACHE_MINCORE_DEFAULT_MAX_PAGES_PER_SCAN (UINT64_C(1) << 26) /* 256 GiB at 4 KiB */

/* Same shape as syscall(2); tests pass a fake. Returns -1 and sets errno on failure. */
typedef long (*pagecache_syscall_fn)(long nr, ...);

struct pagecache {
	enum pagecache_abi abi;
	pagecache_syscall_fn sys;
	/* PAGECACHE_ABI_MINCORE's caps in pages; 0: the defaults above */
	uint64_t mincore_max_pages_per_file;
	uint64_t mincore_max_pages_per_scan;
};

const char *pagecache_abi_name(enum pagecache_abi abi);

/* "auto", "cachestat" or "mincore" into *ret; -EINVAL for anything else. */
int pagecache_method_parse(const char *s, enum pagecache_method *ret);

/*
 * Whether the method behind abi measures counter f of struct pagecache_cachestat (0 nr_cache,
 * 1 nr_dirty, ... in its order): mincore(2) knows cached pages only, and a family it cannot
 * measure is left out, never sent as zeros.
 */
bool pagecache_measures(enum pagecache_abi abi, unsigned f);

/*
 * The ABI the files are measured with, from the probe's answer (abi, probe_err its -errno or 0):
 * mincore when asked for, or for auto when the kernel has no cachestat(2) (ENOSYS, which the
 * probe answers as PAGECACHE_ABI_NONE without an error). A probe that failed otherwise (a
 * filter's EPERM) keeps PAGECACHE_ABI_NONE: the cause is for a person to look at.
 */
enum pagecache_abi pagecache_select(enum pagecache_method method, enum pagecache_abi abi,
				    int probe_err);

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

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mincore: the cached pages of a file where cachestat(2) is missing (before Linux 6.5), as
 * util-linux's fincore and vmtouch count them: the file is mapped read-only and shared, a
 * window at a time, mincore(2) says which pages of the window are in the page cache, and the
 * window is unmapped. No page is touched: nothing faults in, nothing is read ahead. Dirty,
 * writeback and evicted pages are beyond it.
 */
#pragma once

#include <stdint.h>
#include <sys/stat.h>

#include "base/pagecache.h"

struct files_ctx;
struct files_entry;

/*
 * Pages mapped at once: the mapping's address space, and the vector mincore(2) fills (one byte
 * a page), stay bounded whatever the file's size. 1 GiB at 4 KiB pages.
 */
#define MINCORE_WINDOW_PAGES (UINT64_C(1) << 18)

/* Pages of a file of size bytes: what mincore(2) walks, holes included. */
uint64_t mincore_file_pages(uint64_t size, uint64_t page_size);

/*
 * Makes fd's reads and mappings leave atime alone (O_NOATIME, set on our own open file
 * description). The kernel allows it to the file's owner or a holder of CAP_FOWNER, the rule
 * under which mincore(2) reports a file's page cache at all (since Linux 5.0; for anyone else
 * it reports only the pages mapped in the caller's own page tables, which would read as
 * zeros): -EPERM means the file may not be asked about.
 */
int mincore_prepare(int fd);

/*
 * Resident pages of the first size bytes of fd, into *ret. vec holds MINCORE_WINDOW_PAGES
 * bytes. Returns 0 or -errno of mmap(2) (-ENODEV: a file system that cannot map its files,
 * -EACCES, -ENOMEM) or mincore(2) (-ENOMEM, -EAGAIN).
 */
int mincore_resident(int fd, uint64_t size, uint64_t page_size, unsigned char *vec,
		     uint64_t *ret);

/*
 * The mincore method on an entry of a scan: -EOPNOTSUPP on hugetlbfs (as cachestat(2)), the
 * caps (-E2BIG when the file's pages are over mincore_max_pages_per_file, or over what is left
 * of the scan's), then
 * mincore_prepare() and mincore_resident(); *ret gets nr_cache, the other counters zero
 * (pagecache_measures() says they are not measured). Returns 0 or -errno.
 */
int mincore_stat(struct files_ctx *ctx, const struct pagecache *pc, const struct files_entry *e,
		 struct pagecache_cachestat *ret);

/* SPDX-License-Identifier: Apache-2.0 */
/* mincore: cached pages by mmap(2) and mincore(2), a bounded window at a time (mincore.h). */
#define _GNU_SOURCE
#include "files/mincore.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "files/files.h"

uint64_t mincore_file_pages(uint64_t size, uint64_t page_size)
{
	return size / page_size + (size % page_size != 0);
}

int mincore_prepare(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	if (fl & O_NOATIME)
		return 0;
	if (fcntl(fd, F_SETFL, fl | O_NOATIME) < 0)
		return -errno;
	return 0;
}

/* Resident pages of one window: n pages from byte off. */
static int window_resident(int fd, uint64_t off, uint64_t n, uint64_t page_size,
			   unsigned char *vec, uint64_t *ret)
{
	size_t len = (size_t)(n * page_size);
	uint64_t count = 0;
	void *p;
	int r = 0;

	/* MAP_SHARED: a private mapping of a file may be given anonymous pages, not the file's */
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off);
	if (p == MAP_FAILED)
		return -errno;
	if (mincore(p, len, vec) < 0)
		r = -errno;
	munmap(p, len);
	if (r < 0)
		return r;
	for (uint64_t i = 0; i < n; i++)
		count += vec[i] & 1;
	*ret += count;
	return 0;
}

int mincore_resident(int fd, uint64_t size, uint64_t page_size, unsigned char *vec,
		     uint64_t *ret)
{
	uint64_t pages = mincore_file_pages(size, page_size), done = 0, count = 0;
	int r;

	while (done < pages) {
		uint64_t n = pages - done < MINCORE_WINDOW_PAGES ? pages - done : MINCORE_WINDOW_PAGES;

		r = window_resident(fd, done * page_size, n, page_size, vec, &count);
		if (r < 0)
			return r;
		done += n;
	}
	*ret = count;
	return 0;
}

/*
 * Whether fd is on hugetlbfs: cachestat(2) refuses it (EOPNOTSUPP), and a shared mapping of it
 * would reserve huge pages. Its st_blksize is the huge page size, so only a file whose block
 * size is above the page size (or unknown) costs an fstatfs.
 */
static bool on_hugetlbfs(int fd, const struct stat *st, uint64_t page_size)
{
	struct statfs sfs;

	if (st->st_blksize > 0 && (uint64_t)st->st_blksize <= page_size)
		return false;
	return fstatfs(fd, &sfs) == 0 && sfs.f_type == HUGETLBFS_MAGIC;
}

int mincore_stat(struct files_ctx *ctx, const struct pagecache *pc, const struct files_entry *e,
		 struct pagecache_cachestat *ret)
{
	uint64_t ps = ctx->page_size ? ctx->page_size : (uint64_t)sysconf(_SC_PAGESIZE), pages, resident;
	uint64_t per_file = pc->mincore_max_pages_per_file ? pc->mincore_max_pages_per_file
							   : PAGECACHE_MINCORE_DEFAULT_MAX_PAGES_PER_FILE;
	int r;

	if (on_hugetlbfs(e->fd, e->st, ps))
		return -EOPNOTSUPP;
	pages = mincore_file_pages((uint64_t)e->st->st_size, ps);
	if (pages > per_file || (ctx->mincore_pages_left && pages > *ctx->mincore_pages_left))
		return -E2BIG;
	if (!ctx->mincore_vec) {
		ctx->mincore_vec = malloc(MINCORE_WINDOW_PAGES);
		if (!ctx->mincore_vec)
			return -ENOMEM;
	}
	r = mincore_prepare(e->fd);
	if (r < 0)
		return r;
	/* charged before the walk: a walk that fails half way has cost its pages all the same */
	if (ctx->mincore_pages_left)
		*ctx->mincore_pages_left -= pages;
	r = mincore_resident(e->fd, (uint64_t)e->st->st_size, ps, ctx->mincore_vec, &resident);
	if (r < 0)
		return r;
	*ret = (struct pagecache_cachestat){ .nr_cache = resident };
	return 0;
}

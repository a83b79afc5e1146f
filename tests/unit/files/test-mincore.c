/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mincore: the resident pages of real files (a sparse one across several windows, a window's
 * vector bounded by a guard page), the caps of pages per file and per scan (-E2BIG, charged
 * once), atime left alone, and a file neither owned nor covered by CAP_FOWNER refused (EPERM)
 * rather than counted as the zeros mincore(2) would report for it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "files/files.h"
#include "files/mincore.h"

static uint64_t ps;
static char dir[] = "/var/tmp/cse-mincore-unit.XXXXXX";

static int setup(void **state)
{
	(void)state;
	ps = (uint64_t)sysconf(_SC_PAGESIZE);
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A file of size bytes, sparse but for one written page at each of offs (page numbers). */
static int sparse_file(const char *name, uint64_t size, const uint64_t *offs, size_t n)
{
	char path[256], page[65536];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	assert_true(ps <= sizeof(page));
	memset(page, 'x', sizeof(page));
	/* out of the cache first: only the pages written below are resident */
	assert_int_equal(fdatasync(fd), 0);
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(pwrite(fd, page, ps, (off_t)(offs[i] * ps)), (ssize_t)ps);
	return fd;
}

/*
 * A vector of exactly MINCORE_WINDOW_PAGES bytes with a PROT_NONE page right after it: a walk
 * that asked mincore(2) about more than a window at once would get EFAULT.
 */
static unsigned char *guarded_vec(void **ret_base, size_t *ret_len)
{
	size_t body = (size_t)((MINCORE_WINDOW_PAGES + ps - 1) / ps * ps), len = body + ps;
	unsigned char *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(base != MAP_FAILED);
	assert_int_equal(mprotect(base + body, ps, PROT_NONE), 0);
	*ret_base = base;
	*ret_len = len;
	return base + body - MINCORE_WINDOW_PAGES;
}

static void test_file_pages(void **state)
{
	(void)state;
	assert_int_equal(mincore_file_pages(0, 4096), 0);
	assert_int_equal(mincore_file_pages(1, 4096), 1);
	assert_int_equal(mincore_file_pages(4096, 4096), 1);
	assert_int_equal(mincore_file_pages(4097, 4096), 2);
	assert_int_equal(mincore_file_pages(UINT64_C(2) << 40, 4096), UINT64_C(1) << 29);
}

/*
 * Pages written in the first window, in the third and in the last (short) one of a sparse file
 * of two windows and a half: each counted, none else, the holes walked without a fault.
 */
static void test_resident_windows(void **state)
{
	const uint64_t w = MINCORE_WINDOW_PAGES, size = (2 * w + w / 2) * ps;
	const uint64_t offs[] = { 0, 7, w - 1, w, 2 * w + 3, size / ps - 1 };
	unsigned char *vec;
	uint64_t got = 99;
	size_t len;
	void *base;
	int fd;

	(void)state;
	fd = sparse_file("windows", size, offs, sizeof(offs) / sizeof(offs[0]));
	vec = guarded_vec(&base, &len);
	assert_int_equal(mincore_resident(fd, size, ps, vec, &got), 0);
	assert_int_equal(got, sizeof(offs) / sizeof(offs[0]));
	/* an empty file: no mapping at all (mmap of 0 bytes is EINVAL) */
	assert_int_equal(mincore_resident(fd, 0, ps, vec, &got), 0);
	assert_int_equal(got, 0);
	munmap(base, len);
	close(fd);
}

/* A files_ctx and entry for mincore_stat() on fd. */
static void stat_ctx(struct files_ctx *ctx, uint64_t *left, struct files_entry *e, struct stat *st,
		     int fd)
{
	assert_int_equal(fstat(fd, st), 0);
	*ctx = (struct files_ctx){ .page_size = ps, .mincore_pages_left = left };
	*e = (struct files_entry){ .fd = fd, .st = st };
}

/*
 * The caps: a file of more pages than the per-file cap, or than the scan has left, is -E2BIG
 * and charges nothing; one that fits is charged its size in pages, holes included.
 */
static void test_caps(void **state)
{
	const uint64_t offs[] = { 1, 5 };
	struct pagecache pc = { .abi = PAGECACHE_ABI_MINCORE, .mincore_max_pages_per_file = 100 };
	struct pagecache_cachestat cs;
	struct files_entry e;
	struct files_ctx ctx;
	uint64_t left = 250;
	struct stat st;
	int fd;

	(void)state;
	fd = sparse_file("caps", 100 * ps, offs, 2);
	stat_ctx(&ctx, &left, &e, &st, fd);
	memset(&cs, 0xff, sizeof(cs));
	assert_int_equal(mincore_stat(&ctx, &pc, &e, &cs), 0);
	assert_int_equal(cs.nr_cache, 2);
	assert_int_equal(cs.nr_dirty, 0);
	assert_int_equal(cs.nr_recently_evicted, 0);
	assert_int_equal(left, 150);
	assert_int_equal(mincore_stat(&ctx, &pc, &e, &cs), 0);
	assert_int_equal(left, 50);
	/* 100 pages, 50 left: cut by the scan's cap */
	assert_int_equal(mincore_stat(&ctx, &pc, &e, &cs), -E2BIG);
	assert_int_equal(left, 50);
	/* one page over the file's cap */
	left = 1000;
	assert_int_equal(ftruncate(fd, (off_t)(100 * ps + 1)), 0);
	files_ctx_done(&ctx);
	stat_ctx(&ctx, &left, &e, &st, fd);
	assert_int_equal(mincore_stat(&ctx, &pc, &e, &cs), -E2BIG);
	assert_int_equal(left, 1000);
	/* the default caps where the pagecache gives none */
	pc.mincore_max_pages_per_file = 0;
	assert_int_equal(mincore_stat(&ctx, &pc, &e, &cs), 0);
	assert_int_equal(left, 1000 - 101);
	files_ctx_done(&ctx);
	close(fd);
}

/* A walk leaves atime as it was, where a plain mapping (relatime: atime before mtime) moves it. */
static void test_atime(void **state)
{
	const uint64_t offs[] = { 0 };
	const struct timespec old[2] = { { .tv_sec = 1000000000 }, { .tv_nsec = UTIME_OMIT } };
	struct pagecache pc = { .abi = PAGECACHE_ABI_MINCORE };
	struct pagecache_cachestat cs;
	char path[256];
	struct files_entry e;
	struct files_ctx ctx;
	struct stat st, after;
	uint64_t left = 1000;
	int wfd, fd;
	void *p;

	(void)state;
	wfd = sparse_file("atime", 4 * ps, offs, 1);
	close(wfd);
	snprintf(path, sizeof(path), "%s/atime", dir);
	assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	stat_ctx(&ctx, &left, &e, &st, fd);
	assert_int_equal(mincore_stat(&ctx, &pc, &e, &cs), 0);
	assert_int_equal(cs.nr_cache, 1);
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal(after.st_atim.tv_sec, 1000000000);
	files_ctx_done(&ctx);
	close(fd);

	/* the oracle can tell: a mapping without O_NOATIME moves it */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	p = mmap(NULL, ps, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	munmap(p, ps);
	close(fd);
	assert_int_equal(stat(path, &after), 0);
	assert_true(after.st_atim.tv_sec > 1000000000);
}

/*
 * Neither the owner nor CAP_FOWNER (nobody, no capability): mincore(2) would report only the
 * caller's own mapped pages, zeros; the walk is refused with -EPERM instead. In a child, as
 * the credentials change for good.
 */
static void test_not_owner(void **state)
{
	const uint64_t offs[] = { 0, 1 };
	char path[256];
	pid_t pid;
	int fd, status;

	(void)state;
	if (geteuid() != 0) {
		skip(); /* needs root to become nobody; make test-unit runs as root */
		return;
	}
	fd = sparse_file("owned", 4 * ps, offs, 2);
	assert_int_equal(fchmod(fd, 0644), 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/owned", dir);
	assert_int_equal(chmod(dir, 0755), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct pagecache pc = { .abi = PAGECACHE_ABI_MINCORE };
		struct pagecache_cachestat cs;
		struct files_entry e;
		struct files_ctx ctx;
		uint64_t left = 1000;
		struct stat st;

		/* 65534: nobody; setresuid from root drops every capability */
		if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
			_exit(2);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(3);
		stat_ctx(&ctx, &left, &e, &st, fd);
		_exit(mincore_stat(&ctx, &pc, &e, &cs) == -EPERM && left == 1000 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* hugetlbfs (a hugetlb memfd): refused as cachestat(2) refuses it, never mapped. */
static void test_hugetlbfs(void **state)
{
	struct pagecache pc = { .abi = PAGECACHE_ABI_MINCORE };
	struct pagecache_cachestat cs;
	struct files_entry e;
	struct files_ctx ctx;
	uint64_t left = UINT64_C(1) << 30;
	struct stat st;
	int fd;

	(void)state;
	fd = memfd_create("cse-huge", MFD_CLOEXEC | MFD_HUGETLB);
	if (fd < 0) {
		skip(); /* no hugetlbfs in this kernel */
		return;
	}
	assert_int_equal(ftruncate(fd, 0), 0);
	stat_ctx(&ctx, &left, &e, &st, fd);
	st.st_size = 2 << 20; /* a size, though the memfd has no huge page to grow into */
	assert_int_equal(mincore_stat(&ctx, &pc, &e, &cs), -EOPNOTSUPP);
	assert_int_equal(left, UINT64_C(1) << 30);
	files_ctx_done(&ctx);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_pages),
		cmocka_unit_test(test_resident_windows),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_atime),
		cmocka_unit_test(test_not_owner),
		cmocka_unit_test(test_hugetlbfs),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

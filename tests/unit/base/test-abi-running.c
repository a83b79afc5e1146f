/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ABI probe on the kernel this runs on, against an expectation derived here from raw
 * syscall(2) calls on a memfd of three written pages (not from the code under test): the seed's
 * form fills the struct on a seed (or dual) kernel, the mainline form on a mainline one, and
 * ENOSYS means no cachestat at all.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/pagecache.h"

struct raw_cachestat {
	uint64_t cache, dirty, writeback, evicted, recently_evicted;
};
struct raw_range {
	uint64_t off, len;
};

static int memfd_of_pages(int pages)
{
	long ps = sysconf(_SC_PAGESIZE);
	char buf[65536];
	int fd = memfd_create("abi-running", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_true(ps > 0 && (size_t)ps <= sizeof(buf));
	memset(buf, 'x', (size_t)ps);
	for (int i = 0; i < pages; i++)
		assert_int_equal(write(fd, buf, (size_t)ps), ps);
	return fd;
}

static enum pagecache_abi expected_abi(int fd)
{
	struct raw_cachestat cs = { 0 };
	struct raw_range range = { 0, 0 };

	if (syscall(451, fd, 0L, 0UL, sizeof(cs), &cs) == 0 && cs.cache == 3)
		return PAGECACHE_ABI_SEED;
	if (errno == ENOSYS)
		return PAGECACHE_ABI_NONE;
	memset(&cs, 0, sizeof(cs));
	if (syscall(451, fd, &range, &cs, 0U) == 0 && cs.cache == 3)
		return PAGECACHE_ABI_MAINLINE;
	fail_msg("syscall 451 is neither form of cachestat here (errno %d)", errno);
	return PAGECACHE_ABI_NONE;
}

static void test_probe_finds_the_running_kernels_abi(void **state)
{
	struct pagecache pc;
	struct pagecache_cachestat cs;
	enum pagecache_abi want;
	int fd = memfd_of_pages(3);

	(void)state;
	want = expected_abi(fd);
	print_message("running kernel: %s\n", pagecache_abi_name(want));
	assert_int_equal(pagecache_probe_default(&pc), 0);
	assert_string_equal(pagecache_abi_name(pc.abi), pagecache_abi_name(want));
	if (want != PAGECACHE_ABI_NONE) {
		/* and the calls it chooses count the three pages */
		assert_int_equal(pagecache_stat(&pc, fd, &cs), 0);
		assert_int_equal(cs.nr_cache, 3);
		assert_int_equal(cs.nr_dirty + cs.nr_writeback + cs.nr_evicted, 0);
	}
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe_finds_the_running_kernels_abi),
	};

	return cmocka_run_group_tests_name("abi-running", tests, NULL, NULL);
}

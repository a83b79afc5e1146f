/* SPDX-License-Identifier: Apache-2.0 */
/* The cachestat ABI probe against fake kernels, and the calls it chooses afterwards. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/pagecache.h"

enum fake_kernel { FAKE_SEED, FAKE_MAINLINE, FAKE_MAINLINE_EINVAL, FAKE_BOTH, FAKE_NONE, FAKE_BROKEN };

static enum fake_kernel kernel;
static int calls;

static const struct pagecache_cachestat filled = { 11, 2, 3, 4, 5 };

/*
 * Decodes the arguments the way the kernel in question would. A seed kernel reads
 * (fd, off, len, cstat_size, cstat); a mainline one reads (fd, range *, cstat *, flags); the
 * v3 series reads the mainline form when the 4th argument is 0, the seed form otherwise.
 */
static long fake_syscall(long nr, ...)
{
	unsigned long a1, a2, a3, a4, a5;
	enum fake_kernel kernel_form;
	va_list ap;

	calls++;
	va_start(ap, nr);
	a1 = va_arg(ap, unsigned long);
	a2 = va_arg(ap, unsigned long);
	a3 = va_arg(ap, unsigned long);
	a4 = va_arg(ap, unsigned long);
	a5 = va_arg(ap, unsigned long);
	va_end(ap);
	(void)a1;
	assert_int_equal(nr, 451);

	if (kernel == FAKE_BOTH)
		kernel_form = a4 == 0 ? FAKE_MAINLINE : FAKE_SEED;
	else
		kernel_form = kernel;

	switch (kernel_form) {
	case FAKE_SEED:
		/*
		 * As the seed kernel does: a mainline-form call is a seed-form call with a
		 * pointer as off and cstat_size 0, which succeeds and copies nothing.
		 */
		if ((long)a2 < 0 || a4 > sizeof(struct pagecache_cachestat)) {
			errno = EINVAL;
			return -1;
		}
		memcpy((void *)a5, &filled, a4);
		return 0;
	case FAKE_MAINLINE:
	case FAKE_MAINLINE_EINVAL:
		if (a2 == 0) {
			errno = kernel == FAKE_MAINLINE ? EFAULT : EINVAL;
			return -1;
		}
		if (a4 != 0) {
			errno = EINVAL;
			return -1;
		}
		memcpy((void *)a3, &filled, sizeof(filled));
		return 0;
	case FAKE_NONE:
		errno = ENOSYS;
		return -1;
	case FAKE_BROKEN:
	default:
		errno = EFAULT;
		return -1;
	}
}

/*
 * Probes a fake kernel that has cachestat: the ABI found, its name and the calls it took, then
 * a call in that form fills the struct.
 */
static void probe_and_stat(enum fake_kernel fake, enum pagecache_abi want, const char *want_name,
			   int want_calls)
{
	struct pagecache pc;
	struct pagecache_cachestat cs;

	kernel = fake;
	calls = 0;
	assert_int_equal(pagecache_probe(fake_syscall, 3, &pc), 0);
	assert_int_equal(pc.abi, want);
	assert_int_equal(calls, want_calls);
	assert_string_equal(pagecache_abi_name(pc.abi), want_name);
	memset(&cs, 0, sizeof(cs));
	assert_int_equal(pagecache_stat(&pc, 3, &cs), 0);
	assert_memory_equal(&cs, &filled, sizeof(cs));
}

static void test_probe_seed(void **state)
{
	(void)state;
	probe_and_stat(FAKE_SEED, PAGECACHE_ABI_SEED, "seed", 2);
}

/* The v3 series: both forms answer, and the probe says so. */
static void test_probe_both(void **state)
{
	(void)state;
	probe_and_stat(FAKE_BOTH, PAGECACHE_ABI_BOTH, "both", 2);
}

static void test_probe_mainline(void **state)
{
	(void)state;
	probe_and_stat(FAKE_MAINLINE, PAGECACHE_ABI_MAINLINE, "mainline", 2);
}

/* Some mainline versions check flags before reading the range. */
static void test_probe_mainline_einval(void **state)
{
	struct pagecache pc;

	(void)state;
	kernel = FAKE_MAINLINE_EINVAL;
	assert_int_equal(pagecache_probe(fake_syscall, 3, &pc), 0);
	assert_int_equal(pc.abi, PAGECACHE_ABI_MAINLINE);
}

static void test_probe_none(void **state)
{
	struct pagecache pc;
	struct pagecache_cachestat cs;

	(void)state;
	kernel = FAKE_NONE;
	calls = 0;
	assert_int_equal(pagecache_probe(fake_syscall, 3, &pc), 0);
	assert_int_equal(pc.abi, PAGECACHE_ABI_NONE);
	assert_string_equal(pagecache_abi_name(pc.abi), "none");
	assert_int_equal(pagecache_stat(&pc, 3, &cs), -ENOSYS);
	assert_int_equal(calls, 1); /* no call once the ABI is known to be absent */
}

/* Neither form works: say so, and never guess. */
static void test_probe_unexplained(void **state)
{
	struct pagecache pc;

	(void)state;
	kernel = FAKE_BROKEN;
	assert_int_equal(pagecache_probe(fake_syscall, 3, &pc), -EFAULT);
	assert_int_equal(pc.abi, PAGECACHE_ABI_NONE);
}

static void test_stat_error(void **state)
{
	struct pagecache pc = { .abi = PAGECACHE_ABI_MAINLINE, .sys = fake_syscall };
	struct pagecache_cachestat cs = { 0 };

	(void)state;
	kernel = FAKE_NONE;
	assert_int_equal(pagecache_stat(&pc, 3, &cs), -ENOSYS);
	assert_int_equal(cs.nr_cache, 0);
}

/* The real kernel this runs on: whatever it has, the probe must explain it. */
static void test_probe_running_kernel(void **state)
{
	struct pagecache pc;

	(void)state;
	assert_int_equal(pagecache_probe_default(&pc), 0);
	assert_true(pc.abi == PAGECACHE_ABI_SEED || pc.abi == PAGECACHE_ABI_MAINLINE ||
		    pc.abi == PAGECACHE_ABI_BOTH || pc.abi == PAGECACHE_ABI_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe_seed),
		cmocka_unit_test(test_probe_mainline),
		cmocka_unit_test(test_probe_mainline_einval),
		cmocka_unit_test(test_probe_both),
		cmocka_unit_test(test_probe_none),
		cmocka_unit_test(test_probe_unexplained),
		cmocka_unit_test(test_stat_error),
		cmocka_unit_test(test_probe_running_kernel),
	};

	return cmocka_run_group_tests_name("pagecache", tests, NULL, NULL);
}

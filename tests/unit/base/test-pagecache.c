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
#include "fixture.h"

static const struct pagecache_cachestat filled = { 11, 2, 3, 4, 5 };

/* The fake kernel of fixture.h, answering the probe's calls as well as a scan's. */
static void use_kernel(enum fake_kernel k)
{
	fake.kernel = k;
	fake.whole_file = false;
	fake.pages = filled;
}

/*
 * Probes a fake kernel that has cachestat: the ABI found, its name and the calls it took, then
 * a call in that form fills the struct.
 */
static void probe_and_stat(enum fake_kernel k, enum pagecache_abi want, const char *want_name,
			   int want_calls)
{
	struct pagecache pc;
	struct pagecache_cachestat cs;

	use_kernel(k);
	fake_reset_calls();
	assert_int_equal(pagecache_probe(fake_cachestat, 3, &pc), 0);
	assert_int_equal(pc.abi, want);
	assert_int_equal(fake_calls(), want_calls);
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
	use_kernel(FAKE_MAINLINE_EINVAL);
	assert_int_equal(pagecache_probe(fake_cachestat, 3, &pc), 0);
	assert_int_equal(pc.abi, PAGECACHE_ABI_MAINLINE);
}

static void test_probe_none(void **state)
{
	struct pagecache pc;
	struct pagecache_cachestat cs;

	(void)state;
	use_kernel(FAKE_NONE);
	fake_reset_calls();
	assert_int_equal(pagecache_probe(fake_cachestat, 3, &pc), 0);
	assert_int_equal(pc.abi, PAGECACHE_ABI_NONE);
	assert_string_equal(pagecache_abi_name(pc.abi), "none");
	assert_int_equal(pagecache_stat(&pc, 3, &cs), -ENOSYS);
	assert_int_equal(fake_calls(), 1); /* no call once the ABI is known to be absent */
}

/* Neither form works: say so, and never guess. */
static void test_probe_unexplained(void **state)
{
	struct pagecache pc;

	(void)state;
	use_kernel(FAKE_BROKEN);
	assert_int_equal(pagecache_probe(fake_cachestat, 3, &pc), -EFAULT);
	assert_int_equal(pc.abi, PAGECACHE_ABI_NONE);
}

static void test_stat_error(void **state)
{
	struct pagecache pc = { .abi = PAGECACHE_ABI_MAINLINE, .sys = fake_cachestat };
	struct pagecache_cachestat cs = { 0 };

	(void)state;
	use_kernel(FAKE_NONE);
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

/*
 * --cachestat.method: auto takes mincore where a probe found no cachestat (a fake kernel
 * without it: ENOSYS), and keeps cachestat where there is one; mincore always takes it;
 * cachestat never does. A probe that failed otherwise keeps none.
 */
static void test_method_select(void **state)
{
	struct pagecache_cachestat cs;
	struct pagecache pc;
	enum pagecache_method m;
	int r;

	(void)state;
	use_kernel(FAKE_NONE);
	r = pagecache_probe(fake_cachestat, 3, &pc);
	assert_int_equal(pagecache_select(PAGECACHE_METHOD_AUTO, pc.abi, r), PAGECACHE_ABI_MINCORE);
	assert_string_equal(pagecache_abi_name(PAGECACHE_ABI_MINCORE), "mincore");
	assert_int_equal(pagecache_select(PAGECACHE_METHOD_CACHESTAT, pc.abi, r), PAGECACHE_ABI_NONE);
	assert_int_equal(pagecache_select(PAGECACHE_METHOD_MINCORE, pc.abi, r), PAGECACHE_ABI_MINCORE);

	use_kernel(FAKE_MAINLINE);
	r = pagecache_probe(fake_cachestat, 3, &pc);
	assert_int_equal(pagecache_select(PAGECACHE_METHOD_AUTO, pc.abi, r), PAGECACHE_ABI_MAINLINE);
	assert_int_equal(pagecache_select(PAGECACHE_METHOD_MINCORE, pc.abi, r), PAGECACHE_ABI_MINCORE);

	use_kernel(FAKE_BROKEN);
	r = pagecache_probe(fake_cachestat, 3, &pc);
	assert_int_equal(pagecache_select(PAGECACHE_METHOD_AUTO, pc.abi, r), PAGECACHE_ABI_NONE);

	assert_int_equal(pagecache_method_parse("auto", &m), 0);
	assert_int_equal(m, PAGECACHE_METHOD_AUTO);
	assert_int_equal(pagecache_method_parse("mincore", &m), 0);
	assert_int_equal(m, PAGECACHE_METHOD_MINCORE);
	assert_int_equal(pagecache_method_parse("cachestat", &m), 0);
	assert_int_equal(m, PAGECACHE_METHOD_CACHESTAT);
	assert_int_equal(pagecache_method_parse("Mincore", &m), -EINVAL);
	assert_int_equal(pagecache_method_parse("", &m), -EINVAL);

	/* mincore measures cached pages only; cachestat all five counters */
	assert_true(pagecache_measures(PAGECACHE_ABI_MINCORE, 0));
	for (unsigned f = 1; f < 5; f++) {
		assert_false(pagecache_measures(PAGECACHE_ABI_MINCORE, f));
		assert_true(pagecache_measures(PAGECACHE_ABI_MAINLINE, f));
	}
	/* the mincore ABI is never handed to cachestat(2) */
	pc = (struct pagecache){ .abi = PAGECACHE_ABI_MINCORE, .sys = fake_cachestat };
	fake_reset_calls();
	assert_int_equal(pagecache_stat(&pc, 3, &cs), -ENOSYS);
	assert_int_equal(fake_calls(), 0);
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
		cmocka_unit_test(test_method_select),
	};

	return cmocka_run_group_tests_name("pagecache", tests, NULL, NULL);
}

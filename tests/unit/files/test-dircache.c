/* SPDX-License-Identifier: Apache-2.0 */
/* The directory listings kept between scans: found while the stamps match, dropped else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "files/dircache.h"

static struct stat dir_stat(dev_t dev, ino_t ino, time_t mtime, time_t ctime)
{
	struct stat st = { .st_dev = dev, .st_ino = ino };

	st.st_mtim.tv_sec = mtime;
	st.st_ctim.tv_sec = ctime;
	return st;
}

/* Keeps a listing of n entries "fN" (inode 1000 + N) as the listing of dir. */
static void keep(struct dircache *dc, const struct stat *dir, unsigned n)
{
	struct dircache_builder b;
	char name[16];

	dircache_builder_init(dc, &b);
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		dircache_builder_add(&b, 1000 + i, 8 /* DT_REG */, name);
	}
	assert_int_equal(dircache_store(dc, dir, &b), 0);
}

static void test_found_in_order(void **state)
{
	struct dircache *dc;
	struct stat dir = dir_stat(2049, 77, 100, 100);
	const struct dircache_listing *l;
	struct dircache_entry e;
	size_t pos = 0;
	unsigned i = 0;
	char want[16];

	(void)state;
	assert_int_equal(dircache_new(1 << 20, &dc), 0);
	dircache_begin_scan(dc);
	keep(dc, &dir, 500);
	l = dircache_find(dc, &dir);
	assert_non_null(l);
	while (dircache_next(l, &pos, &e)) {
		snprintf(want, sizeof(want), "f%u", i);
		assert_string_equal(e.name, want);
		assert_int_equal(e.ino, 1000 + i);
		assert_int_equal(e.type, 8);
		i++;
	}
	assert_int_equal(i, 500);
	dircache_free(dc);
}

/* A new mtime or ctime (an entry added, removed, renamed; utimensat() sets ctime) drops it. */
static void test_stale_stamps_drop(void **state)
{
	struct dircache *dc;
	struct stat dir = dir_stat(2049, 77, 100, 100);
	struct stat other = dir_stat(2049, 78, 100, 100);
	struct stat changed = dir;

	(void)state;
	assert_int_equal(dircache_new(1 << 20, &dc), 0);
	dircache_begin_scan(dc);
	keep(dc, &dir, 3);
	assert_null(dircache_find(dc, &other));
	changed.st_ctim.tv_nsec = 1;
	assert_null(dircache_find(dc, &changed));
	assert_null(dircache_find(dc, &dir)); /* dropped, not kept for the old stamps */
	assert_int_equal(dircache_listings(dc), 0);
	keep(dc, &dir, 3);
	changed = dir;
	changed.st_mtim.tv_sec = 101;
	assert_null(dircache_find(dc, &changed));
	assert_int_equal(dircache_bytes(dc), 0);
	dircache_free(dc);
}

/* What a scan did not find again goes at its end; a store replaces the older listing. */
static void test_end_scan_sweeps(void **state)
{
	struct dircache *dc;
	struct stat a = dir_stat(1, 1, 5, 5), b = dir_stat(1, 2, 5, 5);

	(void)state;
	assert_int_equal(dircache_new(1 << 20, &dc), 0);
	dircache_begin_scan(dc);
	keep(dc, &a, 10);
	keep(dc, &b, 10);
	keep(dc, &b, 20);
	assert_int_equal(dircache_listings(dc), 2);
	dircache_end_scan(dc);
	dircache_begin_scan(dc);
	assert_non_null(dircache_find(dc, &a));
	dircache_end_scan(dc);
	assert_int_equal(dircache_listings(dc), 1);
	assert_null(dircache_find(dc, &b));
	dircache_free(dc);
}

/* The budget holds: a listing that does not fit is not kept, and the others stay. */
static void test_budget(void **state)
{
	struct dircache *dc;
	struct stat small = dir_stat(1, 1, 5, 5), big = dir_stat(1, 2, 5, 5);

	(void)state;
	assert_int_equal(dircache_new(4096, &dc), 0);
	dircache_begin_scan(dc);
	keep(dc, &small, 10);
	keep(dc, &big, 1000);
	assert_null(dircache_find(dc, &big));
	assert_non_null(dircache_find(dc, &small));
	assert_true(dircache_bytes(dc) <= 4096);
	dircache_free(dc);
}

/* Many listings: the table grows and every one is found. */
static void test_many(void **state)
{
	struct dircache *dc;

	(void)state;
	assert_int_equal(dircache_new(16 << 20, &dc), 0);
	dircache_begin_scan(dc);
	for (ino_t i = 0; i < 5000; i++) {
		struct stat d = dir_stat(3, i, 9, 9);

		keep(dc, &d, 2);
	}
	for (ino_t i = 0; i < 5000; i++) {
		struct stat d = dir_stat(3, i, 9, 9);

		assert_non_null(dircache_find(dc, &d));
	}
	assert_int_equal(dircache_listings(dc), 5000);
	dircache_free(dc);
}

/* Settled: both stamps at least DIRCACHE_SETTLE_NS old. */
static void test_settled(void **state)
{
	struct stat d = dir_stat(1, 1, 100, 100);
	struct timespec now = { .tv_sec = 102 };

	(void)state;
	assert_true(dircache_settled(&d, &now));
	now.tv_sec = 101;
	now.tv_nsec = 999999999;
	assert_false(dircache_settled(&d, &now));
	d.st_ctim.tv_sec = 101;
	now.tv_sec = 102;
	now.tv_nsec = 0;
	assert_false(dircache_settled(&d, &now)); /* mtime old enough, ctime not */
	d.st_mtim.tv_sec = 101; /* touch -d can put mtime after ctime */
	d.st_ctim.tv_sec = 100;
	now.tv_sec = 102;
	now.tv_nsec = 500000000;
	assert_false(dircache_settled(&d, &now)); /* ctime old enough, mtime not */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_found_in_order),
		cmocka_unit_test(test_stale_stamps_drop),
		cmocka_unit_test(test_end_scan_sweeps),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_settled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

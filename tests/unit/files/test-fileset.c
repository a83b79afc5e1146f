/* SPDX-License-Identifier: Apache-2.0 */
/* Deduplication by (device, inode), and the scan's table of cachestat answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "files/fileset.h"

static void test_add_twice(void **state)
{
	struct fileset s = { 0 };

	(void)state;
	assert_int_equal(fileset_add(&s, 2049, 12), 1);
	assert_int_equal(fileset_add(&s, 2049, 12), 0);
	assert_int_equal(fileset_add(&s, 2050, 12), 1); /* same inode, other device */
	assert_int_equal(fileset_add(&s, 2049, 13), 1);
	assert_true(fileset_contains(&s, 2049, 12));
	assert_false(fileset_contains(&s, 1, 1));
	assert_int_equal(s.n, 3);
	fileset_done(&s);
}

/* (0, 0) is an ordinary key. */
static void test_zero_pair(void **state)
{
	struct fileset s = { 0 };

	(void)state;
	assert_false(fileset_contains(&s, 0, 0));
	assert_int_equal(fileset_add(&s, 0, 0), 1);
	assert_int_equal(fileset_add(&s, 0, 0), 0);
	assert_true(fileset_contains(&s, 0, 0));
	assert_int_equal(fileset_add(&s, 0, 1), 1);
	fileset_clear(&s);
	assert_false(fileset_contains(&s, 0, 0));
	fileset_done(&s);
}

static void test_many_and_clear(void **state)
{
	struct fileset s = { 0 };

	(void)state;
	for (uint64_t i = 0; i < 100000; i++)
		assert_int_equal(fileset_add(&s, 7 + (i & 3), i), 1);
	for (uint64_t i = 0; i < 100000; i++)
		assert_int_equal(fileset_add(&s, 7 + (i & 3), i), 0);
	assert_int_equal(s.n, 100000);
	fileset_clear(&s);
	assert_int_equal(s.n, 0);
	assert_false(fileset_contains(&s, 7, 0));
	assert_int_equal(fileset_add(&s, 7, 0), 1);
	fileset_done(&s);
}

/* Neighbouring inodes share a slot; every one of them is still a key of its own. */
static void test_neighbours(void **state)
{
	struct fileset s = { 0 };

	(void)state;
	for (uint64_t i = 1000; i < 1128; i += 2)
		assert_int_equal(fileset_add(&s, 2049, i), 1);
	assert_int_equal(s.n, 64);
	assert_true(s.used <= 3); /* 1000..1127 spans three blocks of 64 */
	for (uint64_t i = 1000; i < 1128; i++)
		assert_true(fileset_contains(&s, 2049, i) == (i % 2 == 0));
	assert_false(fileset_contains(&s, 2050, 1000));
	assert_int_equal(fileset_add(&s, 2049, 1001), 1);
	assert_int_equal(fileset_add(&s, 2049, 1001), 0);
	assert_int_equal(fileset_add(&s, 2049, UINT64_MAX), 1); /* the last bit of the last block */
	assert_true(fileset_contains(&s, 2049, UINT64_MAX));
	assert_false(fileset_contains(&s, 2049, UINT64_MAX - 1));
	fileset_done(&s);
}

/* The scan's table of cachestat answers: by (device, inode), (0, 0) included, through growth. */
static void test_filecache(void **state)
{
	struct pagecache_cachestat seven = { .nr_cache = 7 };
	struct filecache c = { 0 };
	const struct filecache_entry *e;

	(void)state;
	assert_null(filecache_get(&c, 0, 0));
	for (uint64_t i = 0; i < 1000; i++) {
		struct pagecache_cachestat cs = { .nr_cache = i, .nr_dirty = i * 2 };

		assert_int_equal(filecache_put(&c, i % 3, i, i * 4096, &cs), 0);
	}
	assert_int_equal(c.n, 1000);
	assert_true(c.cap >= 2000);
	for (uint64_t i = 0; i < 1000; i++) {
		e = filecache_get(&c, i % 3, i);
		assert_non_null(e);
		assert_int_equal(e->cs.nr_cache, i);
		assert_int_equal(e->cs.nr_dirty, i * 2);
		assert_int_equal(e->size, i * 4096);
		assert_null(filecache_get(&c, i % 3 + 1, i)); /* same inode, other device */
	}
	/* an update replaces the answer, it adds no entry */
	assert_int_equal(filecache_put(&c, 0, 0, 1, &seven), 0);
	assert_int_equal(c.n, 1000);
	assert_int_equal(filecache_get(&c, 0, 0)->cs.nr_cache, 7);
	filecache_done(&c);
	assert_null(filecache_get(&c, 0, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_twice),
		cmocka_unit_test(test_zero_pair),
		cmocka_unit_test(test_many_and_clear),
		cmocka_unit_test(test_neighbours),
		cmocka_unit_test(test_filecache),
	};

	return cmocka_run_group_tests_name("fileset", tests, NULL, NULL);
}

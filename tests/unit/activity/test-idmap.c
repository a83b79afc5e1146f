/* SPDX-License-Identifier: Apache-2.0 */
/*
 * idmap: a map read in any order, with an id twice (two reads of a CPU's share), found by id,
 * summed, and what no cgroup claimed told apart; the ids are the inodes of real directories
 * (the cgroup v2 rule: a cgroup's id is its directory's st_ino), the oracle their stat().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "activity/idmap.h"

static struct activity_counts counts(uint64_t base)
{
	struct activity_counts c;

	for (unsigned e = 0; e < _ACTIVITY_EVENT_MAX; e++)
		c.events[e] = base + e;
	return c;
}

static void test_claim_by_inode(void **state)
{
	char a[] = "/tmp/test-idmap-XXXXXX", b[] = "/tmp/test-idmap-XXXXXX";
	struct activity_idmap m = { 0 };
	const struct activity_entry *e;
	struct stat sa, sb;
	struct activity_counts c;

	(void)state;
	assert_non_null(mkdtemp(a));
	assert_non_null(mkdtemp(b));
	assert_int_equal(stat(a, &sa), 0);
	assert_int_equal(stat(b, &sb), 0);
	c = counts(100);
	assert_int_equal(activity_idmap_add(&m, (uint64_t)sb.st_ino, &c), 0);
	for (uint64_t id = 1; id < 200; id += 7) { /* ids of cgroups that are gone, or not walked */
		c = counts(id);
		if (id != (uint64_t)sa.st_ino && id != (uint64_t)sb.st_ino)
			assert_int_equal(activity_idmap_add(&m, id, &c), 0);
	}
	c = counts(1000);
	assert_int_equal(activity_idmap_add(&m, (uint64_t)sb.st_ino, &c), 0);
	activity_idmap_sort(&m);

	assert_null(activity_idmap_claim(&m, (uint64_t)sa.st_ino)); /* nothing counted: no entry */
	e = activity_idmap_claim(&m, (uint64_t)sb.st_ino);
	assert_non_null(e);
	for (unsigned i = 0; i < _ACTIVITY_EVENT_MAX; i++)
		assert_int_equal(e->counts.events[i], 1100 + 2 * i);
	for (size_t i = 0; i < m.n; i++) {
		assert_int_equal(m.entries[i].claimed, m.entries[i].id == (uint64_t)sb.st_ino);
		if (i)
			assert_true(m.entries[i - 1].id < m.entries[i].id);
	}
	activity_idmap_free(&m);
	rmdir(a);
	rmdir(b);
}

static void test_empty(void **state)
{
	struct activity_idmap m = { 0 };

	(void)state;
	activity_idmap_sort(&m);
	assert_null(activity_idmap_claim(&m, 1));
	activity_idmap_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_claim_by_inode),
		cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

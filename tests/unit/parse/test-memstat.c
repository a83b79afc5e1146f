/* SPDX-License-Identifier: Apache-2.0 */
/* memory.stat and memory.numa_stat parsers, fed from strings. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "parse/memstat.h"

/* An excerpt of a 6.1 memory.stat. */
static const char stat_61[] = "anon 1540096\n"
			      "file 52588544\n"
			      "kernel 1634304\n"
			      "workingset_refault_anon 7\n"
			      "workingset_refault_file 1234\n"
			      "workingset_activate_anon 0\n"
			      "workingset_activate_file 56\n"
			      "workingset_restore_anon 0\n"
			      "workingset_restore_file 18446744073709551615\n"
			      "workingset_nodereclaim 0\n";

static void test_stat(void **state)
{
	struct memstat m;

	(void)state;
	assert_int_equal(memstat_parse(stat_61, strlen(stat_61), &m), 0);
	assert_true(memstat_has(&m, MEMSTAT_FILE));
	assert_int_equal(m.value[MEMSTAT_FILE], 52588544);
	assert_int_equal(m.value[MEMSTAT_WORKINGSET_REFAULT_FILE], 1234);
	assert_int_equal(m.value[MEMSTAT_WORKINGSET_ACTIVATE_FILE], 56);
	assert_true(m.value[MEMSTAT_WORKINGSET_RESTORE_FILE] == UINT64_MAX);
	assert_int_equal(m.present, (1u << _MEMSTAT_MAX) - 1);
}

/* An older kernel without the _file/_anon split: the keys are absent, not zero. */
static void test_stat_missing_keys(void **state)
{
	static const char old[] = "file 4096\nworkingset_refault 3\n";
	struct memstat m;

	(void)state;
	assert_int_equal(memstat_parse(old, strlen(old), &m), 0);
	assert_true(memstat_has(&m, MEMSTAT_FILE));
	assert_false(memstat_has(&m, MEMSTAT_WORKINGSET_REFAULT_FILE));
	assert_false(memstat_has(&m, MEMSTAT_WORKINGSET_RESTORE_FILE));
}

/* The buffer is not NUL-terminated and has no final newline. */
static void test_stat_unterminated(void **state)
{
	char buf[16];
	struct memstat m;

	(void)state;
	memcpy(buf, "file 12345678999", 16);
	assert_int_equal(memstat_parse(buf, 9, &m), 0); /* "file 1234" */
	assert_int_equal(m.value[MEMSTAT_FILE], 1234);
}

static void test_stat_malformed(void **state)
{
	static const char *const bad[] = {
		"file\n",
		"file 12 13\n",
		"file -1\n",
		"file 0x10\n",
		"file 18446744073709551616\n", /* UINT64_MAX + 1 */
		"anon 1\nfile 1a\n",
	};
	struct memstat m = { .present = 42 };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(memstat_parse(bad[i], strlen(bad[i]), &m), -EINVAL);
	assert_int_equal(m.present, 42); /* untouched on failure */
}

static void test_stat_empty(void **state)
{
	struct memstat m;

	(void)state;
	assert_int_equal(memstat_parse("", 0, &m), 0);
	assert_int_equal(m.present, 0);
}

static void test_numa(void **state)
{
	static const char numa[] = "anon N0=1 N1=2\n"
				   "workingset_refault_file N1=99 N0=1234\n"
				   "workingset_refault_anon N0=0 N1=0\n";
	struct memstat_numa n;

	(void)state;
	assert_int_equal(memstat_parse_numa(numa, strlen(numa), &n), 0);
	assert_int_equal(n.n_nodes, 2);
	assert_int_equal(n.nodes[0].node, 0);
	assert_int_equal(n.nodes[0].workingset_refault_file, 1234);
	assert_int_equal(n.nodes[1].node, 1);
	assert_int_equal(n.nodes[1].workingset_refault_file, 99);
	memstat_numa_done(&n);
}

static void test_numa_absent(void **state)
{
	static const char numa[] = "anon N0=1\n";
	struct memstat_numa n;

	(void)state;
	assert_int_equal(memstat_parse_numa(numa, strlen(numa), &n), 0);
	assert_int_equal(n.n_nodes, 0);
	assert_null(n.nodes);
}

static void test_numa_malformed(void **state)
{
	static const char *const bad[] = {
		"workingset_refault_file\n",
		"workingset_refault_file N0\n",
		"workingset_refault_file 0=1\n",
		"workingset_refault_file N0=x\n",
		"workingset_refault_file N=1\n",
		"workingset_refault_file N0=1 N0=2\n",
		"workingset_refault_file N0=1\nworkingset_refault_file N1=1\n",
		"workingset_refault_file N4294967296=1\n",
	};
	struct memstat_numa n;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(memstat_parse_numa(bad[i], strlen(bad[i]), &n), -EINVAL);
}

/* A cgroup v1 memory.stat as 6.18 prints it (excerpt, with both the local and total_ keys). */
static const char stat_v1[] = "cache 11747328\n"
			      "rss 8507392\n"
			      "shmem 9797632\n"
			      "workingset_refault_anon 0\n"
			      "workingset_refault_file 105\n"
			      "inactive_file 462848\n"
			      "hierarchical_memory_limit 9223372036854771712\n"
			      "total_cache 2324914176\n"
			      "total_rss 28831744\n"
			      "total_workingset_refault_anon 3\n"
			      "total_workingset_refault_file 58709\n"
			      "total_inactive_file 2132717568\n";

/* v1: the hierarchical total_ counters, as v2's are; what v1 lacks stays absent. */
static void test_stat_v1(void **state)
{
	struct memstat m;

	(void)state;
	assert_int_equal(memstat_parse_v1(stat_v1, strlen(stat_v1), &m), 0);
	assert_int_equal(m.value[MEMSTAT_FILE], 2324914176);
	assert_int_equal(m.value[MEMSTAT_WORKINGSET_REFAULT_FILE], 58709);
	assert_int_equal(m.present, 1u << MEMSTAT_FILE | 1u << MEMSTAT_WORKINGSET_REFAULT_FILE);
	assert_false(memstat_has(&m, MEMSTAT_WORKINGSET_ACTIVATE_FILE));
	assert_false(memstat_has(&m, MEMSTAT_WORKINGSET_RESTORE_FILE));
	/*
	 * The v2 parser would take v1's local counters, which leave the descendants out: the
	 * reason v1 has a parser of its own. v1's parser finds none of its names in a v2 file.
	 */
	assert_int_equal(memstat_parse(stat_v1, strlen(stat_v1), &m), 0);
	assert_int_equal(m.value[MEMSTAT_WORKINGSET_REFAULT_FILE], 105);
	assert_false(memstat_has(&m, MEMSTAT_FILE));
	assert_int_equal(memstat_parse_v1(stat_61, strlen(stat_61), &m), 0);
	assert_int_equal(m.present, 0);
}

/* An older v1 without the refault counters, and malformed lines. */
static void test_stat_v1_old_and_malformed(void **state)
{
	static const char old[] = "cache 8192\ntotal_cache 4096\ntotal_rss 0\n";
	static const char bad[] = "total_cache 4096 7\n";
	static const char neg[] = "total_cache -1\n";
	struct memstat m = { .present = 7 };

	(void)state;
	assert_int_equal(memstat_parse_v1(old, strlen(old), &m), 0);
	assert_int_equal(m.present, 1u << MEMSTAT_FILE);
	assert_int_equal(m.value[MEMSTAT_FILE], 4096);
	assert_int_equal(memstat_parse_v1(bad, strlen(bad), &m), -EINVAL);
	assert_int_equal(memstat_parse_v1(neg, strlen(neg), &m), -EINVAL);
	assert_int_equal(m.present, 1u << MEMSTAT_FILE); /* untouched on failure */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stat),
		cmocka_unit_test(test_stat_missing_keys),
		cmocka_unit_test(test_stat_unterminated),
		cmocka_unit_test(test_stat_malformed),
		cmocka_unit_test(test_stat_empty),
		cmocka_unit_test(test_stat_v1),
		cmocka_unit_test(test_stat_v1_old_and_malformed),
		cmocka_unit_test(test_numa),
		cmocka_unit_test(test_numa_absent),
		cmocka_unit_test(test_numa_malformed),
	};

	return cmocka_run_group_tests_name("memstat", tests, NULL, NULL);
}

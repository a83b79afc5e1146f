/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The limits collector over a fake cgroup tree: numbers exported, "max" left out, memory.stat's
 * file taken, a cgroup without the files without series, a malformed file a failure that keeps
 * the scan going.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
static char root[] = "/tmp/cse-limits-XXXXXX";

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(root))
		return -1;
	fixture_sh("mkdir %s/lim %s/none %s/bad", root, root, root);
	tree_write(root, "lim/memory.current", "12345\n");
	tree_write(root, "lim/memory.high", "max\n");
	tree_write(root, "lim/memory.max", "1048576\n");
	tree_write(root, "lim/memory.stat", "anon 4096\nfile 532480\nfile_mapped 8192\n");
	/* an old kernel: memory.stat without file */
	tree_write(root, "bad/memory.stat", "anon 4096\n");
	tree_write(root, "bad/memory.current", "12x\n");
	tree_write(root, "bad/memory.max", "18446744073709551615\n");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tree_remove(root);
}

static void test_limits(void **state)
{
	bool success;
	char *t = scan_one(root, "limits", false, &success);

	(void)state;
	assert_non_null(strstr(t, "# TYPE cachestat_cgroup_memory_current_bytes gauge\n"
				  "cachestat_cgroup_memory_current_bytes{cgroup=\"/lim\"} 12345\n"));
	assert_non_null(strstr(t, "cachestat_cgroup_memory_max_bytes{cgroup=\"/bad\"} 18446744073709551615\n"
				  "cachestat_cgroup_memory_max_bytes{cgroup=\"/lim\"} 1048576\n"));
	assert_non_null(strstr(t, "# TYPE cachestat_cgroup_memory_file_bytes gauge\n"
				  "cachestat_cgroup_memory_file_bytes{cgroup=\"/lim\"} 532480\n#"));
	/* "max" is no number; no cgroup has memory.high: no family at all */
	assert_null(strstr(t, "cachestat_cgroup_memory_high_bytes"));
	/* no files, no series; a malformed file, no series for it */
	assert_null(strstr(t, "cgroup=\"/none\""));
	assert_null(strstr(t, "cachestat_cgroup_memory_current_bytes{cgroup=\"/bad\"}"));
	assert_false(success);
	assert_non_null(strstr(t, "cachestat_scrape_collector_success{collector=\"limits\"} 0\n"));
	free(t);
}

/* The v1 memory hierarchy has no memory.current, memory.high or memory.max: said, not a success. */
static void test_limits_v1(void **state)
{
	char *t = scan_one_with((struct collector_options){ .cgroupfs = root, .procfs = "/proc",
							      .memory_v1 = true },
				"limits", false, NULL);

	(void)state;
	assert_non_null(strstr(t, "cachestat_collector_unavailable_info{collector=\"limits\",reason=\"cgroup_v1\"} 1\n"));
	assert_null(strstr(t, "cachestat_scrape_collector_success{collector=\"limits\"}"));
	assert_null(strstr(t, "cachestat_cgroup_memory_current_bytes"));
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_limits_v1),
	};

	return cmocka_run_group_tests_name("limits", tests, setup, teardown);
}

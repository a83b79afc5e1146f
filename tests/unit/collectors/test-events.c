/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The events collector over a fake cgroup tree, and the memory.events parser: each known key a
 * sample with its event label, unknown keys ignored, a cgroup without the file (the root, a v1
 * hierarchy) without series rather than zeros, a malformed file a failure the scan survives.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "parse/mempressure.h"

static char root[] = "/tmp/cse-events-XXXXXX";

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(root))
		return -1;
	fixture_sh("mkdir %s/svc %s/none %s/bad", root, root, root);
	/* 6.1's memory.events, oom_group_kill included */
	tree_write(root, "svc/memory.events",
		   "low 0\nhigh 4711\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n");
	tree_write(root, "bad/memory.events", "low 0\nhigh -1\n");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tree_remove(root);
}

static void test_events(void **state)
{
	bool success;
	char *t = scan_one(root, "events", false, &success);

	(void)state;
	assert_non_null(strstr(t, "# TYPE cachestat_cgroup_memory_events_total counter\n"
				  "cachestat_cgroup_memory_events_total{cgroup=\"/svc\",event=\"low\"} 0\n"
				  "cachestat_cgroup_memory_events_total{cgroup=\"/svc\",event=\"high\"} 4711\n"
				  "cachestat_cgroup_memory_events_total{cgroup=\"/svc\",event=\"max\"} 12\n"
				  "cachestat_cgroup_memory_events_total{cgroup=\"/svc\",event=\"oom\"} 2\n"
				  "cachestat_cgroup_memory_events_total{cgroup=\"/svc\",event=\"oom_kill\"} 1\n"));
	assert_null(strstr(t, "oom_group_kill"));
	/* the root and /none have no memory.events: no series; /bad is malformed: none either */
	assert_null(strstr(t, "events_total{cgroup=\"/\""));
	assert_null(strstr(t, "cgroup=\"/none\""));
	assert_null(strstr(t, "cgroup=\"/bad\""));
	assert_false(success);
	assert_non_null(strstr(t, "cachestat_scrape_collector_success{collector=\"events\"} 0\n"));
	free(t);
}

static void test_parse_events(void **state)
{
	struct mempressure_events ev;
	const char ok[] = "high 3\n\nmax 18446744073709551615";

	(void)state;
	/* no trailing newline, an empty line: fine; absent keys stay absent */
	assert_int_equal(mempressure_parse_events(ok, strlen(ok), &ev), 0);
	assert_int_equal(ev.present, 1u << MEMPRESSURE_EVENT_HIGH | 1u << MEMPRESSURE_EVENT_MAX);
	assert_int_equal(ev.value[MEMPRESSURE_EVENT_HIGH], 3);
	assert_true(ev.value[MEMPRESSURE_EVENT_MAX] == UINT64_MAX);
	assert_int_equal(mempressure_parse_events("max 18446744073709551616\n", 25, &ev), -EINVAL);
	assert_int_equal(mempressure_parse_events("high 1 2\n", 9, &ev), -EINVAL);
	assert_int_equal(mempressure_parse_events("high\n", 5, &ev), -EINVAL);
	assert_int_equal(mempressure_parse_events("high 1\nhigh 2\n", 14, &ev), -EINVAL);
	assert_int_equal(mempressure_parse_events("high +1\n", 8, &ev), -EINVAL);
	/* the length bounds the parse, not a NUL */
	assert_int_equal(mempressure_parse_events("oom 7junk", 5, &ev), 0);
	assert_int_equal(ev.value[MEMPRESSURE_EVENT_OOM], 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_parse_events),
	};

	return cmocka_run_group_tests_name("events", tests, setup, teardown);
}

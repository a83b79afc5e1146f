/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The events collector over a fake cgroup tree, and the memory.events parser: each key of
 * --collector.events.include (high and max by default) a sample with its event label, unknown keys
 * ignored, a cgroup without the file (the root, a v1
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
	fixture_sh("mkdir %s/svc %s/none %s/bad %s/idle %s/limited", root, root, root, root, root);
	/* 6.1's memory.events, oom_group_kill included */
	tree_write(root, "svc/memory.events",
		   "low 0\nhigh 4711\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n");
	tree_write(root, "bad/memory.events", "low 0\nhigh -1\n");
	/* no limit of its own: high and max are 0 by construction */
	tree_write(root, "idle/memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
	tree_write(root, "idle/memory.high", "max\n");
	tree_write(root, "idle/memory.max", "max\n");
	/* memory.max set, not yet reached: its max counter is sent at 0, high is not */
	tree_write(root, "limited/memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
	tree_write(root, "limited/memory.high", "max\n");
	tree_write(root, "limited/memory.max", "268435456\n");
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
	/* by default high and max: the others are cAdvisor's (oom_kill) or read by nothing */
	assert_non_null(strstr(t, "# TYPE cachestat_cgroup_memory_events_total counter\n"
				  "cachestat_cgroup_memory_events_total{cgroup=\"/limited\","));
	assert_non_null(strstr(t, "\ncachestat_cgroup_memory_events_total{cgroup=\"/svc\",event=\"high\"} 4711\n"
				  "cachestat_cgroup_memory_events_total{cgroup=\"/svc\",event=\"max\"} 12\n"));
	assert_null(strstr(t, "event=\"low\""));
	assert_null(strstr(t, "event=\"oom"));
	/* a zero that no limit of the cgroup's can change is left out; one under a limit is sent */
	assert_null(strstr(t, "cgroup=\"/idle\""));
	assert_non_null(strstr(t, "cachestat_cgroup_memory_events_total{cgroup=\"/limited\",event=\"max\"} 0\n"));
	assert_null(strstr(t, "{cgroup=\"/limited\",event=\"high\"}"));
	/* the root and /none have no memory.events: no series; /bad is malformed: none either */
	assert_null(strstr(t, "events_total{cgroup=\"/\""));
	assert_null(strstr(t, "cgroup=\"/none\""));
	assert_null(strstr(t, "cgroup=\"/bad\""));
	assert_false(success);
	assert_non_null(strstr(t, "cachestat_scrape_collector_success{collector=\"events\"} 0\n"));
	free(t);
}

/* --collector.events.include: the keys named, in memory.events' order; a bad list refused. */
static void test_events_include(void **state)
{
	const struct collector_flag *flag = NULL;
	char *t;

	(void)state;
	collector_flag_set("collector.events.include", "oom_kill,low,oom,max,high");
	t = scan_one(root, "events", false, NULL);
	assert_non_null(strstr(t, "cachestat_cgroup_memory_events_total{cgroup=\"/svc\",event=\"low\"} 0\n"
				  "cachestat_cgroup_memory_events_total{cgroup=\"/svc\",event=\"high\"} 4711\n"
				  "cachestat_cgroup_memory_events_total{cgroup=\"/svc\",event=\"max\"} 12\n"
				  "cachestat_cgroup_memory_events_total{cgroup=\"/svc\",event=\"oom\"} 2\n"
				  "cachestat_cgroup_memory_events_total{cgroup=\"/svc\",event=\"oom_kill\"} 1\n"));
	assert_null(strstr(t, "oom_group_kill"));
	/* the others have no limit behind them: sent at 0 */
	assert_non_null(strstr(t, "cachestat_cgroup_memory_events_total{cgroup=\"/idle\",event=\"low\"} 0\n"
				  "cachestat_cgroup_memory_events_total{cgroup=\"/idle\",event=\"oom\"} 0\n"));
	free(t);

	collector_flag_set("collector.events.include", "oom_kill");
	t = scan_one(root, "events", false, NULL);
	assert_non_null(strstr(t, "cachestat_cgroup_memory_events_total{cgroup=\"/svc\",event=\"oom_kill\"} 1\n"));
	assert_null(strstr(t, "event=\"high\""));
	free(t);

	for (size_t i = 0; i < registry_flag_count(); i++)
		if (strcmp(registry_flag(i)->name, "collector.events.include") == 0)
			flag = registry_flag(i);
	assert_non_null(flag);
	assert_int_equal(flag->parse("high,oom_group_kill"), -EINVAL);
	assert_int_equal(flag->parse(","), -EINVAL);
	assert_int_equal(flag->parse(""), -EINVAL);
	collector_flag_set("collector.events.include", "high,max");
}

/*
 * A tree whose cgroups cannot have memory.events (the v1 memory hierarchy, a v2 tree without
 * the memory controller) says so, with no success and no series; with the controller it reads.
 */
static void test_events_unavailable(void **state)
{
	char tree[] = "/tmp/cse-events-v1-XXXXXX";
	struct collector_options o = { .cgroupfs = tree, .procfs = "/proc", .memory_v1 = true };
	const char *success = "cachestat_scrape_collector_success{collector=\"events\"}";
	json_t *j;
	char *t;

	(void)state;
	assert_non_null(mkdtemp(tree));
	fixture_sh("mkdir %s/svc", tree);
	tree_write(tree, "svc/memory.stat", "cache 4096\ntotal_cache 4096\n"); /* v1's */
	t = scan_one_with(o, "events", false, NULL);
	assert_non_null(strstr(t, "# TYPE cachestat_collector_unavailable_info gauge\n"
				  "cachestat_collector_unavailable_info{collector=\"events\",reason=\"cgroup_v1\"} 1\n"));
	assert_null(strstr(t, success));
	assert_null(strstr(t, "cachestat_cgroup_memory_events_total"));
	free(t);
	t = scan_one_with(o, "events", true, NULL);
	j = json_loads(t, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(json_object_get(j, "collectors"), "events"), "unavailable")),
			    "cgroup_v1");
	json_decref(j);
	free(t);

	o.memory_v1 = false;
	tree_write(tree, "cgroup.controllers", "cpuset cpu io pids\n");
	tree_write(tree, "svc/memory.events", "low 0\nhigh 1\n");
	t = scan_one_with(o, "events", false, NULL);
	assert_non_null(strstr(t, "cachestat_collector_unavailable_info{collector=\"events\",reason=\"no_memory_controller\"} 1\n"));
	assert_null(strstr(t, success));
	free(t);

	tree_write(tree, "cgroup.controllers", "cpuset cpu io memory pids\n");
	t = scan_one_with(o, "events", false, NULL);
	assert_null(strstr(t, "cachestat_collector_unavailable_info"));
	assert_non_null(strstr(t, "cachestat_scrape_collector_success{collector=\"events\"} 1\n"));
	assert_non_null(strstr(t, "cachestat_cgroup_memory_events_total{cgroup=\"/svc\",event=\"high\"} 1\n"));
	free(t);
	assert_int_equal(tree_remove(tree), 0);
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
		cmocka_unit_test(test_events_include),
		cmocka_unit_test(test_events_unavailable),
		cmocka_unit_test(test_parse_events),
	};

	return cmocka_run_group_tests_name("events", tests, setup, teardown);
}

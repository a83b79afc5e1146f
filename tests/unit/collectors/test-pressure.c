/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pressure collector over a fake cgroup tree, and the PSI parser: the some and full totals
 * (microseconds in the file) as seconds with every digit, a cgroup without memory.pressure
 * without series rather than zeros, a malformed file a failure the scan survives.
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

static char root[] = "/tmp/cse-pressure-XXXXXX";

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(root))
		return -1;
	fixture_sh("mkdir %s/svc %s/idle %s/none %s/bad", root, root, root, root);
	tree_write(root, "svc/memory.pressure",
		   "some avg10=12.50 avg60=3.10 avg300=0.70 total=83456789\n"
		   "full avg10=4.00 avg60=1.00 avg300=0.20 total=1000007\n");
	tree_write(root, "idle/memory.pressure",
		   "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
		   "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	tree_write(root, "bad/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00\n");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tree_remove(root);
}

static void test_pressure(void **state)
{
	bool success;
	char *t = scan_one(root, "pressure", false, &success);

	(void)state;
	assert_non_null(strstr(t, "# TYPE cachestat_cgroup_memory_pressure_some_seconds_total counter\n"
				  "cachestat_cgroup_memory_pressure_some_seconds_total{cgroup=\"/idle\"} 0.000000\n"
				  "cachestat_cgroup_memory_pressure_some_seconds_total{cgroup=\"/svc\"} 83.456789\n"));
	assert_non_null(strstr(t, "# TYPE cachestat_cgroup_memory_pressure_full_seconds_total counter\n"
				  "cachestat_cgroup_memory_pressure_full_seconds_total{cgroup=\"/idle\"} 0.000000\n"
				  "cachestat_cgroup_memory_pressure_full_seconds_total{cgroup=\"/svc\"} 1.000007\n"));
	/* the root and /none have no memory.pressure, /bad has no total: no series */
	assert_null(strstr(t, "seconds_total{cgroup=\"/\""));
	assert_null(strstr(t, "cgroup=\"/none\""));
	assert_null(strstr(t, "cgroup=\"/bad\""));
	assert_false(success);
	assert_non_null(strstr(t, "cachestat_scrape_collector_success{collector=\"pressure\"} 0\n"));
	free(t);
}

/*
 * No PSI to read: the v1 memory hierarchy (memory.pressure_level is no PSI), a kernel without
 * /proc/pressure (CONFIG_PSI off, psi=0). Said, with no success and no series.
 */
static void test_pressure_unavailable(void **state)
{
	char proc[] = "/tmp/cse-pressure-proc-XXXXXX";
	struct collector_options o = { .cgroupfs = root, .procfs = proc, .memory_v1 = true };
	const char *success = "cachestat_scrape_collector_success{collector=\"pressure\"}";
	char *t;

	(void)state;
	assert_non_null(mkdtemp(proc));
	fixture_sh("mkdir %s/pressure", proc);
	tree_write(proc, "pressure/memory", "some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n");
	t = scan_one_with(o, "pressure", false, NULL);
	assert_non_null(strstr(t, "cachestat_collector_unavailable_info{collector=\"pressure\",reason=\"cgroup_v1\"} 1\n"));
	assert_null(strstr(t, success));
	assert_null(strstr(t, "cachestat_cgroup_memory_pressure_some_seconds_total"));
	free(t);

	o.memory_v1 = false; /* v2, PSI in the kernel: read */
	t = scan_one_with(o, "pressure", false, NULL);
	assert_null(strstr(t, "cachestat_collector_unavailable_info"));
	assert_non_null(strstr(t, "cachestat_cgroup_memory_pressure_some_seconds_total{cgroup=\"/svc\"} 83.456789\n"));
	free(t);

	fixture_sh("rm -r %s/pressure", proc); /* v2, no PSI in the kernel */
	t = scan_one_with(o, "pressure", false, NULL);
	assert_non_null(strstr(t, "cachestat_collector_unavailable_info{collector=\"pressure\",reason=\"no_psi\"} 1\n"));
	assert_null(strstr(t, success));
	assert_null(strstr(t, "cachestat_cgroup_memory_pressure_some_seconds_total"));
	free(t);
	assert_int_equal(tree_remove(proc), 0);
}

static void test_parse_psi(void **state)
{
	struct mempressure_psi psi;
	const char some_only[] = "some avg10=0.00 avg60=0.00 avg300=0.00 total=5";
	const char cpu_root[] = "some avg10=0.00 avg60=0.00 avg300=0.00 total=9\nfull total=1\n";

	(void)state;
	/* a file without full (cpu.pressure before 5.13): some alone */
	assert_int_equal(mempressure_parse_psi(some_only, strlen(some_only), &psi), 0);
	assert_int_equal(psi.present, 1u << MEMPRESSURE_PSI_SOME);
	assert_int_equal(psi.total_us[MEMPRESSURE_PSI_SOME], 5);
	assert_int_equal(mempressure_parse_psi(cpu_root, strlen(cpu_root), &psi), 0);
	assert_int_equal(psi.total_us[MEMPRESSURE_PSI_FULL], 1);
	assert_int_equal(mempressure_parse_psi("some total=1 total=2\n", 21, &psi), -EINVAL);
	assert_int_equal(mempressure_parse_psi("some total=1\nsome total=2\n", 26, &psi), -EINVAL);
	assert_int_equal(mempressure_parse_psi("full total=\n", 12, &psi), -EINVAL);
	assert_int_equal(mempressure_parse_psi("full total=1.5\n", 15, &psi), -EINVAL);
	/* other kinds of line are not ours */
	assert_int_equal(mempressure_parse_psi("partial total=x\n", 16, &psi), 0);
	assert_int_equal(psi.present, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pressure),
		cmocka_unit_test(test_pressure_unavailable),
		cmocka_unit_test(test_parse_psi),
	};

	return cmocka_run_group_tests_name("pressure", tests, setup, teardown);
}

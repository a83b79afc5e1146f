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

#include "collect.h"
#include "registry.h"
#include "cgstat.h"
#include "render.h"

static char root[] = "/tmp/cse-pressure-XXXXXX";

static void write_file(const char *rel, const char *content)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	f = fopen(p, "we");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static int setup(void **state)
{
	char cmd[256];

	(void)state;
	if (!mkdtemp(root))
		return -1;
	snprintf(cmd, sizeof(cmd), "mkdir %s/svc %s/idle %s/none %s/bad", root, root, root, root);
	if (system(cmd) != 0)
		return -1;
	write_file("svc/memory.pressure",
		   "some avg10=12.50 avg60=3.10 avg300=0.70 total=83456789\n"
		   "full avg10=4.00 avg60=1.00 avg300=0.20 total=1000007\n");
	write_file("idle/memory.pressure",
		   "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
		   "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	write_file("bad/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* One scan with the limits collector alone, rendered as text. */
static char *scan_text(bool *ret_success)
{
	struct collector_options o = { .cgroupfs = root, .procfs = "/proc" };
	struct pagecache pc = { .abi = PAGECACHE_ABI_NONE };
	const struct render_meta meta = { "1", "r" };
	struct collector *c = NULL;
	struct snapshot *s = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int idx = registry_find("pressure");

	assert_true(idx >= 0);
	o.enable[idx] = true;
	assert_int_equal(collector_new(&o, &pc, config_new_default(), &c), 0);
	assert_int_equal(collector_scan(c, &s), 0);
	*ret_success = s->collectors[idx].success;
	assert_true(s->collectors[idx].reported);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(render_text(f, s, &meta), 0);
	fclose(f);
	snapshot_unref(s);
	collector_free(c);
	return buf;
}

static void test_pressure(void **state)
{
	bool success;
	char *t = scan_text(&success);

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

static void test_parse_psi(void **state)
{
	struct cgstat_psi psi;
	const char some_only[] = "some avg10=0.00 avg60=0.00 avg300=0.00 total=5";
	const char cpu_root[] = "some avg10=0.00 avg60=0.00 avg300=0.00 total=9\nfull total=1\n";

	(void)state;
	/* a file without full (cpu.pressure before 5.13): some alone */
	assert_int_equal(cgstat_parse_psi(some_only, strlen(some_only), &psi), 0);
	assert_int_equal(psi.present, 1u << CGSTAT_PSI_SOME);
	assert_int_equal(psi.total_us[CGSTAT_PSI_SOME], 5);
	assert_int_equal(cgstat_parse_psi(cpu_root, strlen(cpu_root), &psi), 0);
	assert_int_equal(psi.total_us[CGSTAT_PSI_FULL], 1);
	assert_int_equal(cgstat_parse_psi("some total=1 total=2\n", 21, &psi), -EINVAL);
	assert_int_equal(cgstat_parse_psi("some total=1\nsome total=2\n", 26, &psi), -EINVAL);
	assert_int_equal(cgstat_parse_psi("full total=\n", 12, &psi), -EINVAL);
	assert_int_equal(cgstat_parse_psi("full total=1.5\n", 15, &psi), -EINVAL);
	/* other kinds of line are not ours */
	assert_int_equal(cgstat_parse_psi("partial total=x\n", 16, &psi), 0);
	assert_int_equal(psi.present, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pressure),
		cmocka_unit_test(test_parse_psi),
	};

	return cmocka_run_group_tests_name("pressure", tests, setup, teardown);
}

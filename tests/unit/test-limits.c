/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The limits collector over a fake cgroup tree: numbers exported, "max" left out, a cgroup
 * without the files without series, a malformed file a failure that keeps the scan going.
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

#include "collect.h"
#include "registry.h"
#include "render.h"

static char root[] = "/tmp/cse-limits-XXXXXX";

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
	snprintf(cmd, sizeof(cmd), "mkdir %s/lim %s/none %s/bad", root, root, root);
	if (system(cmd) != 0)
		return -1;
	write_file("lim/memory.current", "12345\n");
	write_file("lim/memory.high", "max\n");
	write_file("lim/memory.max", "1048576\n");
	write_file("bad/memory.current", "12x\n");
	write_file("bad/memory.max", "18446744073709551615\n");
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
	int idx = registry_find("limits");

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

static void test_limits(void **state)
{
	bool success;
	char *t = scan_text(&success);

	(void)state;
	assert_non_null(strstr(t, "# TYPE cachestat_cgroup_memory_current_bytes gauge\n"
				  "cachestat_cgroup_memory_current_bytes{cgroup=\"/lim\"} 12345\n"));
	assert_non_null(strstr(t, "cachestat_cgroup_memory_max_bytes{cgroup=\"/bad\"} 18446744073709551615\n"
				  "cachestat_cgroup_memory_max_bytes{cgroup=\"/lim\"} 1048576\n"));
	/* "max" is no number; no cgroup has memory.high: no family at all */
	assert_null(strstr(t, "cachestat_cgroup_memory_high_bytes"));
	/* no files, no series; a malformed file, no series for it */
	assert_null(strstr(t, "cgroup=\"/none\""));
	assert_null(strstr(t, "cachestat_cgroup_memory_current_bytes{cgroup=\"/bad\"}"));
	assert_false(success);
	assert_non_null(strstr(t, "cachestat_scrape_collector_success{collector=\"limits\"} 0\n"));
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests_name("limits", tests, setup, teardown);
}

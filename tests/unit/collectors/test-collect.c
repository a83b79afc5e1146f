/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One scan over a fake cgroup tree (an ordinary directory with cgroup.procs and memory.stat
 * files) with a fake cachestat; limits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "scan/engine.h"
#include "fixture.h"
#include "collectors/cachestat.h"
#include "collectors/memstat.h"
#include "collectors/perfile.h"
#include "scan/registry.h"

static char root[] = "/tmp/cse-collect-XXXXXX";
static char data[64];

static int setup(void **state)
{
	char pid[32];

	(void)state;
	if (!mkdtemp(root))
		return -1;
	snprintf(data, sizeof(data), "%s.data", root);
	tree_cgroups(root, ". a b b/sub");
	fixture_sh("mkdir -p %s && for i in 1 2 3 4 5; do echo $i > %s/f$i; done", data, data);
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	tree_write(root, "a/cgroup.procs", pid);
	tree_write(root, "a/memory.stat", "file 8192\nworkingset_refault_file 5\n");
	tree_write(root, "a/memory.numa_stat", "workingset_refault_file N0=2 N1=3\n");
	tree_write(root, "b/memory.stat", "file 0\n");
	/* these cases are about each cgroup's own top (per_file_top) */
	collector_flag_set("collector.perfile.node-top", "0");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tree_remove(root) | tree_remove(data);
}

static const char *procfs = "/proc";

static struct scan_engine *make(enum pagecache_abi abi, const char *config_json)
{
	struct collector_options o = { .cgroupfs = root, .procfs = procfs };
	struct pagecache pc = { .abi = abi, .sys = fake_cachestat };
	struct scan_engine *c = NULL;
	struct config *cfg = NULL;
	char *err = NULL;

	for (size_t i = 0; i < registry_count(); i++) /* fanotify watches the host: not here */
		o.enable[i] = strcmp(registry_get(i)->name, "fanotify") != 0;
	if (config_json) {
		if (config_parse(config_json, strlen(config_json), "t", &cfg, &err) < 0)
			fail_msg("config: %s", err);
	} else {
		cfg = config_new_default();
	}
	assert_int_equal(scan_engine_new(&o, &pc, cfg, &c), 0);
	return c;
}

/* What the collectors found in cg (NULL: absent); files of a cgroup not scanned count 0. */
static const struct cachestat_cgroup *cs_of(const struct snap_cgroup *cg)
{
	return snap_cgroup_data(cg, "cachestat");
}

static const struct memstat_cgroup *ms_of(const struct snap_cgroup *cg)
{
	return snap_cgroup_data(cg, "memstat");
}

static size_t n_top(const struct snap_cgroup *cg)
{
	const struct perfile_cgroup *p = snap_cgroup_data(cg, "perfile");

	return p ? p->n_top : 0;
}

static uint64_t files_of(const struct snap_cgroup *cg)
{
	return cs_of(cg) ? cs_of(cg)->files : 0;
}

static char *config_for_b(const char *extra)
{
	char *json;

	assert_true(asprintf(&json, "{ \"cgroups\": [ { \"match\": \"/b\", \"paths\": [\"%s\"] } ]%s }",
			     data, extra) > 0);
	return json;
}

static void test_scan(void **state)
{
	char *json = config_for_b(", \"per_file_top\": 2");
	struct scan_engine *c = make(PAGECACHE_ABI_MAINLINE, json);
	struct snapshot *s = NULL;
	const struct snap_cgroup *a, *b, *sub;
	long ps = sysconf(_SC_PAGESIZE);

	(void)state;
	assert_int_equal(scan_engine_run(c, &s), 0);
	assert_null(s->problem);
	assert_int_equal(s->n_cgroups, 4);
	assert_string_equal(s->cgroups[0].name, "/"); /* sorted */
	a = find_cgroup(s, "/a");
	b = find_cgroup(s, "/b");
	sub = find_cgroup(s, "/b/sub");

	/* /a: this process's files; memory.stat present */
	assert_non_null(cs_of(a));
	assert_true(files_of(a) > 0);
	assert_int_equal(cs_of(a)->c.cached, files_of(a) * 3 * (uint64_t)ps);
	assert_int_equal(cs_of(a)->c.recently_evicted, files_of(a) * (uint64_t)ps);
	assert_non_null(ms_of(a));
	assert_int_equal(ms_of(a)->memstat.value[MEMSTAT_FILE], 8192);
	assert_non_null(snap_cgroup_data(a, "numa"));
	assert_int_equal(((const struct memstat_numa *)snap_cgroup_data(a, "numa"))->n_nodes, 2);
	assert_int_equal(n_top(a), 2);

	/* /b: the five assigned files; "/b" does not match "/b/sub" (FNM_PATHNAME) */
	assert_non_null(cs_of(b));
	assert_int_equal(files_of(b), 5);
	assert_int_equal(cs_of(b)->files_size, 10);
	assert_int_equal(cs_of(b)->c.dirty, 5 * (uint64_t)ps);
	assert_int_equal(n_top(b), 2);
	assert_non_null(ms_of(b));
	assert_false(memstat_has(&ms_of(b)->memstat, MEMSTAT_WORKINGSET_REFAULT_FILE));
	assert_null(cs_of(sub)); /* no file: no cachestat series, not seven zeros */
	assert_null(ms_of(sub)); /* no memory.stat: absent, not zero */

	/* the root has no cgroup.procs content and no memory.stat */
	assert_null(cs_of(&s->cgroups[0]));
	assert_true(snapshot_collector(s, "cachestat")->success);
	assert_true(snapshot_collector(s, "memstat")->success);
	snapshot_unref(s);
	scan_engine_free(c);
	free(json);
}

static void test_limits(void **state)
{
	char *json = config_for_b(", \"limits\": { \"max_files_per_cgroup\": 2 }");
	struct scan_engine *c = make(PAGECACHE_ABI_MAINLINE, json);
	struct snapshot *s = NULL;

	(void)state;
	assert_int_equal(scan_engine_run(c, &s), 0);
	assert_int_equal(files_of(find_cgroup(s, "/b")), 2);
	assert_true(s->skipped[SKIP_LIMIT] >= 3);
	snapshot_unref(s);
	/* the skipped counters add up from scan to scan */
	assert_int_equal(scan_engine_run(c, &s), 0);
	assert_true(s->skipped[SKIP_LIMIT] >= 6);
	snapshot_unref(s);
	scan_engine_free(c);
	free(json);
}

/* Once max_files_per_scan is spent, the cgroups left get no cachestat series (not zeros). */
static void test_scan_cap(void **state)
{
	char *json = config_for_b(", \"limits\": { \"max_files_per_scan\": 1 }");
	struct scan_engine *c = make(PAGECACHE_ABI_MAINLINE, json);
	struct snapshot *s = NULL;
	const struct snap_cgroup *a, *b, *sub;

	(void)state;
	assert_int_equal(scan_engine_run(c, &s), 0);
	a = find_cgroup(s, "/a");
	b = find_cgroup(s, "/b");
	sub = find_cgroup(s, "/b/sub");
	/* whichever child came first got the one file; the others are left out */
	assert_int_equal((cs_of(a) != NULL) + (cs_of(b) != NULL) + (cs_of(sub) != NULL), 1);
	assert_int_equal(files_of(a) + files_of(b), 1);
	assert_null(cs_of(sub));
	assert_true(s->skipped[SKIP_LIMIT] > 0);
	snapshot_unref(s);
	scan_engine_free(c);
	free(json);
}

/* No cachestat: no cachestat numbers at all (never zeros), memory.stat still served. */
static void test_abi_none(void **state)
{
	struct scan_engine *c = make(PAGECACHE_ABI_NONE, NULL);
	struct snapshot *s = NULL;

	(void)state;
	fake_reset_calls();
	assert_int_equal(scan_engine_run(c, &s), 0);
	for (size_t i = 0; i < s->n_cgroups; i++)
		assert_null(cs_of(&s->cgroups[i]));
	assert_non_null(ms_of(find_cgroup(s, "/a")));
	assert_false(snapshot_collector(s, "cachestat")->reported);
	assert_string_equal(snapshot_collector(s, "cachestat")->unavailable, "no_cachestat");
	assert_string_equal(scan_engine_unavailable(c, (size_t)registry_find("cachestat")), "no_cachestat");
	assert_int_equal(fake_calls(), 0);
	snapshot_unref(s);
	scan_engine_free(c);
}

/*
 * A v2 tree whose root lists no memory controller has no memory.stat anywhere: memstat says so
 * instead of a success, and the file scan goes on.
 */
static void test_no_memory_controller(void **state)
{
	struct scan_engine *c = make(PAGECACHE_ABI_MAINLINE, NULL);
	struct snapshot *s = NULL;

	(void)state;
	tree_write(root, "cgroup.controllers", "cpu io hugetlb pids\n");
	assert_int_equal(scan_engine_run(c, &s), 0);
	fixture_sh("rm %s/cgroup.controllers", root);
	assert_string_equal(snapshot_collector(s, "memstat")->unavailable, "no_memory_controller");
	assert_false(snapshot_collector(s, "memstat")->reported);
	assert_null(ms_of(find_cgroup(s, "/a")));
	assert_true(snapshot_collector(s, "cachestat")->success);
	assert_null(snapshot_collector(s, "cachestat")->unavailable);
	assert_non_null(cs_of(find_cgroup(s, "/a")));
	snapshot_unref(s);
	scan_engine_free(c);
}

/* A collector that fails as its scan begins (cachestat without /proc) reports the failure. */
static void test_fail_at_begin(void **state)
{
	struct scan_engine *c;
	struct snapshot *s = NULL;

	(void)state;
	procfs = "/nonexistent-procfs";
	c = make(PAGECACHE_ABI_MAINLINE, NULL);
	procfs = "/proc";
	assert_int_equal(scan_engine_run(c, &s), 0);
	assert_false(snapshot_collector(s, "cachestat")->success);
	assert_true(snapshot_collector(s, "memstat")->success);
	assert_non_null(s->problem);
	snapshot_unref(s);
	scan_engine_free(c);
}

/* A config swapped in between scans applies to the next one. */
static void test_set_config(void **state)
{
	struct scan_engine *c = make(PAGECACHE_ABI_MAINLINE, NULL);
	char *json = config_for_b("");
	struct config *cfg = NULL;
	struct snapshot *s = NULL;
	char *err = NULL;

	(void)state;
	assert_int_equal(scan_engine_run(c, &s), 0);
	assert_int_equal(files_of(find_cgroup(s, "/b")), 0);
	snapshot_unref(s);
	assert_int_equal(config_parse(json, strlen(json), "t", &cfg, &err), 0);
	scan_engine_set_config(c, cfg);
	assert_int_equal(scan_engine_run(c, &s), 0);
	assert_int_equal(files_of(find_cgroup(s, "/b")), 5);
	snapshot_unref(s);
	scan_engine_free(c);
	free(json);
}

/* Whether a's per-file list names a file whose name starts with prefix or ends with suffix. */
static bool names_in_top(const struct snap_cgroup *cg, const char *prefix, const char *suffix)
{
	const struct perfile_cgroup *p = snap_cgroup_data(cg, "perfile");

	for (size_t i = 0; p && i < p->n_top; i++) {
		size_t n = strlen(p->top[i].path);

		if ((prefix && strncmp(p->top[i].path, prefix, strlen(prefix)) == 0) ||
		    (suffix && n >= strlen(suffix) && strcmp(p->top[i].path + n - strlen(suffix), suffix) == 0))
			return true;
	}
	return false;
}

/*
 * A memfd and a deleted file held by this process (in /a): counted in /a's sums either way,
 * named in per-file series only with --collector.perfile.unlinked=keep.
 */
static void test_unlinked(void **state)
{
	struct scan_engine *c = make(PAGECACHE_ABI_MAINLINE, "{ \"per_file_top\": 10000 }");
	char tmp[] = "/tmp/cse-unlinked-XXXXXX";
	int mfd = memfd_create("cse-unlinked", MFD_CLOEXEC), tfd = mkstemp(tmp);
	struct snapshot *s = NULL;
	uint64_t files_skip;

	(void)state;
	assert_true(mfd >= 0 && tfd >= 0);
	assert_int_equal(write(mfd, "x", 1), 1);
	assert_int_equal(write(tfd, "x", 1), 1);
	assert_int_equal(unlink(tmp), 0);

	assert_int_equal(scan_engine_run(c, &s), 0);
	files_skip = files_of(find_cgroup(s, "/a"));
	assert_false(names_in_top(find_cgroup(s, "/a"), "/memfd:cse-unlinked", NULL));
	assert_false(names_in_top(find_cgroup(s, "/a"), NULL, " (deleted)"));
	assert_true(n_top(find_cgroup(s, "/a")) > 0);
	snapshot_unref(s);

	collector_flag_set("collector.perfile.unlinked", "keep");
	assert_int_equal(scan_engine_run(c, &s), 0);
	assert_int_equal(files_of(find_cgroup(s, "/a")), files_skip); /* the sums are the same */
	assert_true(names_in_top(find_cgroup(s, "/a"), "/memfd:cse-unlinked", NULL));
	assert_true(names_in_top(find_cgroup(s, "/a"), NULL, " (deleted)"));
	snapshot_unref(s);
	collector_flag_set("collector.perfile.unlinked", "skip");
	close(mfd);
	close(tfd);
	scan_engine_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_scan_cap),
		cmocka_unit_test(test_abi_none),
		cmocka_unit_test(test_no_memory_controller),
		cmocka_unit_test(test_fail_at_begin),
		cmocka_unit_test(test_set_config),
		cmocka_unit_test(test_unlinked),
	};

	return cmocka_run_group_tests_name("collect", tests, setup, teardown);
}

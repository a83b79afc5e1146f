/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One scan with exact oracles: the fake cachestat answers distinct non-zero page counts for each
 * of the five counters, in the form of the ABI the collector was given, so that every byte total
 * of a cgroup and of a file is known exactly; and the skip counters, by reason, exactly.
 * The files come from the config alone (no process sits in the fake tree).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "scan/engine.h"
#include "fixture.h"
#include "collectors/cachestat.h"
#include "collectors/perfile.h"
#include "scan/registry.h"

/* Pages per file: cached, dirty, writeback, evicted, recently evicted; all different. */
enum { P_CACHE = 7, P_DIRTY = 5, P_WRITEBACK = 3, P_EVICTED = 11, P_RECENT = 2 };

/* fixture.h's fake cachestat, for the file behind fd: by its name, an error or the counts. */
static long answer(int fd, struct pagecache_cachestat *cs)
{
	char link[64], path[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	assert_true(n > 0);
	path[n] = '\0';
	if (strstr(path, "/eperm")) {
		errno = EPERM;
		return -1;
	}
	if (strstr(path, "/hugetlb")) {
		errno = EOPNOTSUPP;
		return -1;
	}
	*cs = (struct pagecache_cachestat){ P_CACHE, P_DIRTY, P_WRITEBACK, P_EVICTED, P_RECENT };
	return 0;
}

static char root[] = "/tmp/cse-exact-XXXXXX";
static char data[64];

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(root))
		return -1;
	snprintf(data, sizeof(data), "%s.data", root);
	tree_cgroups(root, ". a b");
	/* five files of 1, 2, 3, 4 and 5 bytes; eperm and hugetlb beside them in "odd" */
	fixture_sh("mkdir -p %1$s/odd && for i in 1 2 3 4 5; do head -c $i /dev/zero > %1$s/f$i; done"
		   " && head -c 100 /dev/zero > %1$s/odd/eperm && head -c 200 /dev/zero > %1$s/odd/hugetlb"
		   " && head -c 300 /dev/zero > %1$s/odd/plain", data);
	collector_flag_set("collector.perfile.node-top", "0"); /* test_node_top sets its own */
	fake.answer = answer;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tree_remove(root) | tree_remove(data);
}

/* A collector over the fake tree, with the config printed from fmt. */
__attribute__((format(printf, 2, 3))) static struct scan_engine *make(enum pagecache_abi abi,
								    const char *fmt, ...)
{
	struct collector_options o = { .cgroupfs = root, .procfs = "/proc" };
	struct pagecache pc = { .abi = abi, .sys = fake_cachestat };
	struct scan_engine *c = NULL;
	struct config *cfg = NULL;
	char *json, *err = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&json, fmt, ap);
	va_end(ap);
	assert_true(n > 0);
	if (config_parse(json, strlen(json), "t", &cfg, &err) < 0)
		fail_msg("config: %s", err);
	free(json);
	/* the fake kernel takes the form of the ABI under test alone (both: the mainline one) */
	fake.kernel = abi == PAGECACHE_ABI_SEED ? FAKE_SEED : FAKE_MAINLINE;
	for (size_t i = 0; i < registry_count(); i++) /* fanotify watches the host: not here */
		o.enable[i] = strcmp(registry_get(i)->name, "fanotify") != 0;
	assert_int_equal(scan_engine_new(&o, &pc, cfg, &c), 0);
	return c;
}

/* What the cachestat and perfile collectors found in cg; the test fails where it is absent. */
static const struct cachestat_cgroup *cs_of(const struct snap_cgroup *cg)
{
	const struct cachestat_cgroup *cs = snap_cgroup_data(cg, "cachestat");

	if (!cs)
		fail_msg("%s has no cachestat numbers", cg->name);
	return cs;
}

static const struct perfile_cgroup *pf_of(const struct snap_cgroup *cg)
{
	const struct perfile_cgroup *p = snap_cgroup_data(cg, "perfile");

	if (!p)
		fail_msg("%s has no per-file numbers", cg->name);
	return p;
}

static void assert_counts(const struct snap_counts *c, uint64_t files)
{
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);

	assert_int_equal(c->cached, files * P_CACHE * ps);
	assert_int_equal(c->dirty, files * P_DIRTY * ps);
	assert_int_equal(c->writeback, files * P_WRITEBACK * ps);
	assert_int_equal(c->evicted, files * P_EVICTED * ps);
	assert_int_equal(c->recently_evicted, files * P_RECENT * ps);
}

static void assert_skipped(const struct snapshot *s, const uint64_t want[_SKIP_MAX])
{
	for (int i = 0; i < _SKIP_MAX; i++) {
		if (s->skipped[i] != want[i])
			fail_msg("skipped{reason=\"%s\"} = %ju, want %ju", skip_reason_name(i),
				 (uintmax_t)s->skipped[i], (uintmax_t)want[i]);
	}
}

/* Every byte total of the cgroup and of each of its files, for one ABI. */
static void scan_exact(enum pagecache_abi abi)
{
	struct scan_engine *c = make(abi, "{ \"cgroups\": [ { \"match\": \"/b\", \"paths\": [\"%s\"] } ],"
					" \"per_file_top\": 10 }", data);
	const struct snap_cgroup *b;
	struct snapshot *s = NULL;

	fake_reset_calls();
	assert_int_equal(scan_engine_run(c, &s), 0);
	assert_null(s->problem);
	assert_int_equal(s->abi, abi);
	b = find_cgroup(s, "/b");
	assert_non_null(snap_cgroup_data(b, "cachestat"));
	/* the directory walk finds f1..f5 and the three files of odd/: two of them refused */
	assert_int_equal(cs_of(b)->files, 6);
	assert_int_equal(cs_of(b)->files_size, 1 + 2 + 3 + 4 + 5 + 300);
	assert_counts(&cs_of(b)->c, 6);
	assert_int_equal(pf_of(b)->n_top, 6);
	for (size_t i = 0; i < pf_of(b)->n_top; i++) {
		assert_counts(&pf_of(b)->top[i].c, 1);
		assert_non_null(pf_of(b)->top[i].path);
	}
	assert_int_equal(fake_calls(), 8);
	/* /a has no process and no path: scanned, no file, so no series rather than zeros */
	assert_null(snap_cgroup_data(find_cgroup(s, "/a"), "cachestat"));
	{
		uint64_t want[_SKIP_MAX] = { 0 };

		want[SKIP_EPERM] = 1;
		want[SKIP_UNSUPPORTED] = 1;
		assert_skipped(s, want);
	}
	snapshot_unref(s);
	scan_engine_free(c);
}

static void test_exact_mainline(void **state)
{
	(void)state;
	scan_exact(PAGECACHE_ABI_MAINLINE);
}

static void test_exact_seed(void **state)
{
	(void)state;
	scan_exact(PAGECACHE_ABI_SEED);
}

/* The top N keeps N files, each with its own exact numbers and size. */
static void test_exact_top(void **state)
{
	struct scan_engine *c = make(PAGECACHE_ABI_MAINLINE,
				   "{ \"cgroups\": [ { \"match\": \"/b\", \"paths\": [\"%s/f1\", \"%s/f5\", \"%s/f3\"] } ],"
				   " \"per_file_top\": 2 }", data, data, data);
	const struct snap_cgroup *b;
	struct snapshot *s = NULL;
	uint64_t sizes = 0;

	(void)state;
	assert_int_equal(scan_engine_run(c, &s), 0);
	b = find_cgroup(s, "/b");
	assert_int_equal(cs_of(b)->files, 3);
	assert_int_equal(cs_of(b)->files_size, 1 + 5 + 3);
	assert_counts(&cs_of(b)->c, 3);
	assert_int_equal(pf_of(b)->n_top, 2);
	for (size_t i = 0; i < pf_of(b)->n_top; i++) {
		assert_counts(&pf_of(b)->top[i].c, 1);
		sizes += pf_of(b)->top[i].size;
	}
	/* equal page counts: the choice among equals is stable, but any two of 1, 5, 3 */
	assert_true(sizes == 6 || sizes == 8 || sizes == 4);
	snapshot_unref(s);
	scan_engine_free(c);
}

/* (dev, ino) of data/fN, from stat(2). */
static void file_id(int n, uint64_t *ret_dev, uint64_t *ret_ino)
{
	char p[128];
	struct stat st;

	snprintf(p, sizeof(p), "%s/f%d", data, n);
	assert_int_equal(stat(p, &st), 0);
	*ret_dev = st.st_dev;
	*ret_ino = st.st_ino;
}

/*
 * The node's top: with equal page counts the files of smallest (dev, ino) win, whatever cgroup
 * holds them, each in its own cgroup's list and in no other; per_file_top unset adds none.
 */
static void test_node_top(void **state)
{
	struct scan_engine *c;
	struct snapshot *s = NULL;
	uint64_t dev[6], ino[6];
	int best[2] = { 0, 0 }, kept = 0;

	(void)state;
	collector_flag_set("collector.perfile.node-top", "2");
	c = make(PAGECACHE_ABI_MAINLINE,
		 "{ \"cgroups\": [ { \"match\": \"/a\", \"paths\": [\"%s/f1\", \"%s/f2\"] },"
		 " { \"match\": \"/b\", \"paths\": [\"%s/f3\", \"%s/f4\", \"%s/f5\"] } ] }",
		 data, data, data, data, data);
	for (int i = 1; i <= 5; i++)
		file_id(i, &dev[i], &ino[i]);
	for (int i = 1; i <= 5; i++) /* the two smallest (dev, ino) */
		for (int k = 0; k < 2; k++)
			if (!best[k] || dev[i] < dev[best[k]] ||
			    (dev[i] == dev[best[k]] && ino[i] < ino[best[k]])) {
				if (k == 0)
					best[1] = best[0];
				best[k] = i;
				break;
			}
	assert_int_equal(scan_engine_run(c, &s), 0);
	for (size_t i = 0; i < s->n_cgroups; i++) {
		const struct perfile_cgroup *p = snap_cgroup_data(&s->cgroups[i], "perfile");

		for (size_t j = 0; p && j < p->n_top; j++) {
			int n = atoi(strrchr(p->top[j].path, '/') + 2);

			assert_true(n == best[0] || n == best[1]);
			assert_string_equal(s->cgroups[i].name, n <= 2 ? "/a" : "/b");
			assert_int_equal(p->top[j].size, n);
			assert_counts(&p->top[j].c, 1);
			kept++;
		}
	}
	assert_int_equal(kept, 2);
	snapshot_unref(s);
	scan_engine_free(c);
	collector_flag_set("collector.perfile.node-top", "0");
}

/* Skips by reason, exactly, and added up from scan to scan: never counted twice. */
static void test_exact_skips(void **state)
{
	struct scan_engine *c = make(PAGECACHE_ABI_MAINLINE,
				   "{ \"cgroups\": [ { \"match\": \"/b\", \"paths\": [\"%s/f1\", \"%s/f2\","
				   " \"%s/no-such-file\", \"/dev/null\"] } ],"
				   " \"limits\": { \"max_files_per_cgroup\": 1 } }", data, data, data);
	uint64_t want[_SKIP_MAX] = { 0 };
	struct snapshot *s = NULL;

	(void)state;
	assert_int_equal(scan_engine_run(c, &s), 0);
	assert_int_equal(cs_of(find_cgroup(s, "/b"))->files, 1);
	assert_counts(&cs_of(find_cgroup(s, "/b"))->c, 1);
	want[SKIP_LIMIT] = 1;      /* f2 */
	want[SKIP_NOT_FOUND] = 1;  /* no-such-file */
	want[SKIP_NOT_REGULAR] = 1; /* /dev/null */
	assert_skipped(s, want);
	snapshot_unref(s);

	assert_int_equal(scan_engine_run(c, &s), 0);
	want[SKIP_LIMIT] = 2;
	want[SKIP_NOT_FOUND] = 2;
	want[SKIP_NOT_REGULAR] = 2;
	assert_skipped(s, want);
	snapshot_unref(s);
	scan_engine_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_mainline),
		cmocka_unit_test(test_exact_seed),
		cmocka_unit_test(test_exact_top),
		cmocka_unit_test(test_node_top),
		cmocka_unit_test(test_exact_skips),
	};

	return cmocka_run_group_tests_name("collect-exact", tests, setup, teardown);
}

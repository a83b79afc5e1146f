/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The subtree collector over fake cgroup trees (directories with cgroup.procs) whose files the
 * config assigns, with a fake cachestat that reports each file's size as its cached pages: a
 * shared file counts once in a parent and once in each child, a grandchild's file reaches the
 * root, leaves have no subtree series, a cgroup not counted leaves its ancestors without
 * totals. The expected numbers are worked out by hand from the file sizes below.
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "scan/engine.h"
#include "collectors/cachestat.h"
#include "collectors/subtree.h"
#include "parse/meminfo.h"
#include "scan/registry.h"
#include "scan/render.h"

/* fixture.h's fake cachestat: nr_cache = size in bytes, nr_dirty = 1, nr_evicted = 2,
 * nr_recently_evicted = 1. */
static long by_size(int fd, struct pagecache_cachestat *cs)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	*cs = (struct pagecache_cachestat){ (uint64_t)st.st_size, 1, 0, 2, 1 };
	return 0;
}

static char root[] = "/tmp/cse-subtree-XXXXXX";
static char tree[300], files[300], proc[300];

/*
 * Files of n bytes each: shared 10, f1 20, f2 30, f3 40, f4 50, f5 60. The tree: /p/c1 and
 * /p/c2 both hold shared; /q/r/g holds f3 (a grandchild's file); /leaf holds f4 and shared;
 * the root itself f5. Every cgroup has an empty cgroup.procs but those named in gone.
 */
static void make_tree(const char *gone)
{
	fixture_sh("rm -rf %1$s && mkdir %1$s", tree);
	tree_cgroups(tree, ". p p/c1 p/c2 q q/r q/r/g leaf");
	if (gone)
		fixture_sh("rm %s/%s/cgroup.procs", tree, gone);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(root))
		return -1;
	snprintf(tree, sizeof(tree), "%s/tree", root);
	snprintf(files, sizeof(files), "%s/files", root);
	snprintf(proc, sizeof(proc), "%s/proc", root);
	fixture_sh("mkdir -p %s %s && cd %s && head -c 10 /dev/zero > shared && head -c 20 /dev/zero > f1"
		   " && head -c 30 /dev/zero > f2 && head -c 40 /dev/zero > f3 && head -c 50 /dev/zero > f4"
		   " && head -c 60 /dev/zero > f5", files, proc, files);
	fixture_sh("printf 'MemTotal: 100 kB\\nCached:      10000 kB\\nShmem:  300 kB\\n' > %s/meminfo", proc);
	/* the scan reads mountinfo through self/ (the file system type of each file) */
	fixture_sh("ln -s /proc/self %s/self", proc);
	fake.answer = by_size;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tree_remove(root);
}

static struct snapshot *scan(void)
{
	struct collector_options o = { .cgroupfs = tree, .procfs = proc };
	struct pagecache pc = { .abi = PAGECACHE_ABI_MAINLINE, .sys = fake_cachestat };
	struct scan_engine *c = NULL;
	struct config *cfg = NULL;
	struct snapshot *s = NULL;
	char *json = NULL, *err = NULL;

	for (size_t i = 0; i < registry_count(); i++) /* fanotify watches the host: not here */
		o.enable[i] = strcmp(registry_get(i)->name, "fanotify") != 0;
	assert_true(asprintf(&json, "{ \"cgroups\": ["
			     "{ \"match\": \"/\", \"paths\": [\"%1$s/f5\"] },"
			     "{ \"match\": \"/p/c1\", \"paths\": [\"%1$s/shared\", \"%1$s/f1\"] },"
			     "{ \"match\": \"/p/c2\", \"paths\": [\"%1$s/shared\", \"%1$s/f2\"] },"
			     "{ \"match\": \"/q/r/g\", \"paths\": [\"%1$s/f3\"] },"
			     "{ \"match\": \"/leaf\", \"paths\": [\"%1$s/f4\", \"%1$s/shared\"] } ] }",
			     files) > 0);
	if (config_parse(json, strlen(json), "t", &cfg, &err) < 0)
		fail_msg("config: %s", err);
	free(json);
	assert_int_equal(scan_engine_new(&o, &pc, cfg, &c), 0);
	assert_int_equal(scan_engine_run(c, &s), 0);
	scan_engine_free(c);
	return s;
}

static const struct subtree_cgroup *st(const struct snapshot *s, const char *name)
{
	const struct subtree_cgroup *t = snap_cgroup_data(find_cgroup(s, name), "subtree");

	return t && t->has_subtree ? t : NULL;
}

static uint64_t own_cached(const struct snapshot *s, const char *name)
{
	const struct cachestat_cgroup *c = snap_cgroup_data(find_cgroup(s, name), "cachestat");

	assert_non_null(c);
	return c->c.cached;
}

/* In pages of the fake (one per byte of the file); the sums a reader can check by hand. */
static void assert_subtree(const struct snapshot *s, const char *name, uint64_t pages, uint64_t n)
{
	const struct subtree_cgroup *t = st(s, name);
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);

	if (!t)
		fail_msg("%s has no subtree totals", name);
	assert_int_equal(t->c.cached, pages * ps);
	assert_int_equal(t->files_size, pages);
	assert_int_equal(t->files, n);
	assert_int_equal(t->c.dirty, n * ps);
	assert_int_equal(t->c.evicted, 2 * n * ps);
	assert_int_equal(t->c.recently_evicted, n * ps);
	assert_int_equal(t->c.writeback, 0);
}

static void test_union(void **state)
{
	struct snapshot *s;
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);

	(void)state;
	make_tree(NULL);
	s = scan();
	/* shared once in each child, once in the parent: 10 + 20 + 30, not 10 + 20 + 10 + 30 */
	assert_int_equal(own_cached(s, "/p/c1"), 30 * ps);
	assert_int_equal(own_cached(s, "/p/c2"), 40 * ps);
	assert_subtree(s, "/p", 60, 3);
	/* the grandchild's file reaches its parent, grandparent and the root */
	assert_subtree(s, "/q/r", 40, 1);
	assert_subtree(s, "/q", 40, 1);
	/* the root: f5 + shared + f1 + f2 + f3 + f4, shared once though three cgroups hold it */
	assert_subtree(s, "/", 210, 6);
	/* leaves: no duplicate of their own numbers */
	assert_null(st(s, "/p/c1"));
	assert_null(st(s, "/q/r/g"));
	assert_null(st(s, "/leaf"));
	assert_null(snap_cgroup_data(find_cgroup(s, "/leaf"), "subtree"));
	snapshot_unref(s);
}

static char *text(const struct snapshot *s)
{
	struct render_meta meta = { "v", "r" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(render_text(f, s, &meta), 0);
	fclose(f);
	return buf;
}

static char *json(const struct snapshot *s)
{
	struct render_meta meta = { "v", "r" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(render_json(f, s, &meta), 0);
	fclose(f);
	return buf;
}

static void test_rendered(void **state)
{
	struct snapshot *s;
	char *t, *j, line[200];
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);

	(void)state;
	make_tree(NULL);
	s = scan();
	t = text(s);
	snprintf(line, sizeof(line), "\ncachestat_cgroup_subtree_cached_bytes{cgroup=\"/p\"} %llu\n",
		 (unsigned long long)(60 * ps));
	assert_non_null(strstr(t, line));
	assert_non_null(strstr(t, "\ncachestat_cgroup_subtree_recently_evicted_bytes{cgroup=\"/p\"} "));
	assert_null(strstr(t, "subtree_cached_bytes{cgroup=\"/leaf\"}"));
	assert_null(strstr(t, "subtree_cached_bytes{cgroup=\"/p/c1\"}"));
	/* two families as series; the other counters are the JSON's only */
	assert_null(strstr(t, "cachestat_cgroup_subtree_files"));
	assert_null(strstr(t, "cachestat_cgroup_subtree_dirty_bytes"));
	assert_null(strstr(t, "cachestat_cgroup_subtree_evicted_bytes"));
	assert_non_null(strstr(t, "\n# TYPE cachestat_cgroup_subtree_cached_bytes gauge\n"));
	/* meminfo: 10000 kB cached, 300 kB shmem; unattributed = cached - the root's 210 pages */
	assert_non_null(strstr(t, "\ncachestat_node_memory_cached_bytes 10240000\n"));
	assert_non_null(strstr(t, "\ncachestat_node_memory_shmem_bytes 307200\n"));
	snprintf(line, sizeof(line), "\ncachestat_node_unattributed_cached_bytes %llu\n",
		 (unsigned long long)(10240000 - 210 * ps));
	assert_non_null(strstr(t, line));
	free(t);
	/* JSON: a "subtree" object where there are children, "node" on the root */
	j = json(s);
	snprintf(line, sizeof(line), "\"cached_bytes\": %llu", (unsigned long long)(60 * ps));
	assert_non_null(strstr(j, "\"subtree\""));
	assert_non_null(strstr(strstr(j, "\"subtree\""), line));
	assert_non_null(strstr(j, "\"files\": 6,"));
	assert_non_null(strstr(j, "\"files_size_bytes\": 40"));
	assert_non_null(strstr(j, "\"unattributed_cached_bytes\": "));
	free(j);
	snapshot_unref(s);
}

/* /q/r/g's cgroup.procs is a directory: cachestat cannot count it, so /q/r, /q and / get none. */
static void test_incomplete(void **state)
{
	struct snapshot *s;
	char *t;

	(void)state;
	make_tree(NULL);
	fixture_sh("rm %s/q/r/g/cgroup.procs && mkdir %s/q/r/g/cgroup.procs", tree, tree);
	s = scan();
	assert_null(snap_cgroup_data(find_cgroup(s, "/q/r/g"), "cachestat"));
	assert_null(st(s, "/q/r"));
	assert_null(st(s, "/q"));
	assert_null(st(s, "/"));
	assert_subtree(s, "/p", 60, 3); /* a sibling's subtree is whole */
	t = text(s);
	assert_non_null(strstr(t, "\ncachestat_node_memory_cached_bytes 10240000\n"));
	assert_null(strstr(t, "cachestat_node_unattributed_cached_bytes"));
	free(t);
	snapshot_unref(s);
}

/* A cgroup removed during the scan holds no file in use: its ancestors' totals stand without it. */
static void test_removed(void **state)
{
	struct snapshot *s;

	(void)state;
	make_tree("q/r/g");
	s = scan();
	assert_null(snap_cgroup_data(find_cgroup(s, "/q/r/g"), "cachestat"));
	assert_subtree(s, "/q/r", 0, 0);
	assert_subtree(s, "/", 170, 5);
	snapshot_unref(s);
}

static void test_meminfo(void **state)
{
	const char ok[] = "MemTotal:  8000 kB\nCached:  1000 kB\nSwapCached:  7 kB\nShmem:   20 kB\n";
	struct meminfo m = { 0 };

	(void)state;
	assert_int_equal(meminfo_parse(ok, strlen(ok), &m), 0);
	assert_int_equal(m.cached, 1024000);
	assert_int_equal(m.shmem, 20480);
	assert_int_equal(meminfo_parse("Cached: 1 kB\n", 13, &m), -ENOENT);
	assert_int_equal(meminfo_parse("Cached: x kB\nShmem: 1 kB\n", 25, &m), -EINVAL);
	assert_int_equal(meminfo_parse("Cached: 1\nShmem: 1 kB\n", 22, &m), -EINVAL);
	assert_int_equal(meminfo_parse("Cached: 1 kB x\nShmem: 1 kB\n", 27, &m), -EINVAL);
	/* 2^54 kB is 2^64 bytes, one past what fits */
	assert_int_equal(meminfo_parse("Cached: 18014398509481984 kB\nShmem: 1 kB\n", 41, &m), -ERANGE);
	assert_int_equal(m.cached, 1024000); /* untouched on failure */
	/* 2^54 - 1 kB is the most that fits */
	assert_int_equal(meminfo_parse("Cached: 18014398509481983 kB\nShmem: 1 kB\n", 41, &m), 0);
	assert_true(m.cached == 18014398509481983ULL * 1024);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_union),
		cmocka_unit_test(test_rendered),
		cmocka_unit_test(test_incomplete),
		cmocka_unit_test(test_removed),
		cmocka_unit_test(test_meminfo),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

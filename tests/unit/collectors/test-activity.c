/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The activity collector over a fake cgroup tree, with the BPF loader and the kernel's function
 * list faked (this file defines them, so the linker takes these and not activity/loader.o's or
 * activity/symbols.o's): the attach points chosen and started, each walked cgroup given the
 * counts of its directory's inode, a cgroup without an entry without series, the node's dropped
 * events and map size, the JSON report, unclaimed entries pruned after three scans and claimed
 * ones kept, cgroup v1 said, and a refused attach's start line naming what the kernel wants.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "activity/loader.h"
#include "activity/symbols.h"
#include "scan/registry.h"
#include "fixture.h"

static char root[] = "/tmp/cse-activity-XXXXXX";
static uint64_t ino_a, ino_bc; /* the ids of /a and /b/c: their directories' inodes */
#define ID_GONE 424242          /* an id no walked cgroup has */

/* ---- the fakes ---- */

static const char *started[_ACTIVITY_EVENT_MAX];
static int starts, forgotten_claimed;
static bool denied; /* activity_start fails as perf_event_open does without the capability */
#define ID_LEFT 525252 /* an id test_prune adds to the map, until it is forgotten */
static bool left_in_map;
static int left_forgotten;

int activity_read_functions(char **ret_buf, size_t *ret_len, const char **ret_source)
{
	/* 6.1's list: both families, folio_account_dirtied inlined away */
	*ret_buf = strdup("mark_page_accessed\nfolio_mark_accessed\nadd_to_page_cache_lru\n"
			  "filemap_add_folio\n__folio_mark_dirty\nmark_buffer_dirty\n");
	*ret_len = strlen(*ret_buf);
	*ret_source = "kallsyms";
	return 0;
}

bool activity_built(void)
{
	return true;
}

int activity_start(const char *const names[_ACTIVITY_EVENT_MAX], struct activity **ret,
		   char **ret_error)
{
	static int token;

	*ret_error = NULL;
	if (denied) {
		*ret_error = strdup("attaching a kprobe to folio_mark_accessed: Permission denied");
		return -EACCES;
	}
	memcpy(started, names, sizeof(started));
	starts++;
	*ret = (struct activity *)&token;
	return 0;
}

static void add(struct activity_idmap *m, uint64_t id, uint64_t acc, uint64_t added, uint64_t dirtied,
		uint64_t bufdirty)
{
	struct activity_counts c = { .events = { [ACTIVITY_ACCESSED] = acc, [ACTIVITY_ADDED] = added,
						 [ACTIVITY_DIRTIED] = dirtied,
						 [ACTIVITY_BUFFER_DIRTIED] = bufdirty } };

	assert_int_equal(activity_idmap_add(m, id, &c), 0);
}

int activity_read(struct activity *a, struct activity_idmap *m)
{
	(void)a;
	/* /a's counts on two CPUs, /b/c's on one, and a cgroup's that no walk finds */
	add(m, ino_a, 60, 10, 3, 1);
	add(m, ID_GONE, 1, 1, 1, 1);
	add(m, ino_bc, 7, 0, 0, 0);
	add(m, ino_a, 40, 0, 0, 0);
	if (left_in_map)
		add(m, ID_LEFT, 2, 0, 0, 0);
	m->dropped = 5;
	return 0;
}

int activity_forget(struct activity *a, uint64_t id)
{
	(void)a;
	if (id == ino_a || id == ino_bc)
		forgotten_claimed++;
	if (id == ID_LEFT) {
		left_forgotten++;
		left_in_map = false;
	}
	return 0;
}

void activity_stop(struct activity *a)
{
	(void)a;
}

/* ---- the tests ---- */

static uint64_t inode_of(const char *rel)
{
	char p[512];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	assert_int_equal(stat(p, &st), 0);
	return (uint64_t)st.st_ino;
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(root))
		return -1;
	tree_cgroups(root, ". a b b/c");
	ino_a = inode_of("a");
	ino_bc = inode_of("b/c");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tree_remove(root);
}

static void test_counts(void **state)
{
	bool success;
	char *t = scan_one(root, "activity", false, &success);

	(void)state;
	assert_int_equal(starts, 1);
	assert_string_equal(started[ACTIVITY_ACCESSED], "folio_mark_accessed");
	assert_string_equal(started[ACTIVITY_ADDED], "filemap_add_folio");
	assert_string_equal(started[ACTIVITY_DIRTIED], "__folio_mark_dirty");
	assert_string_equal(started[ACTIVITY_BUFFER_DIRTIED], "mark_buffer_dirty");
	assert_true(success);
	/* the two CPUs' counts of /a summed; the cgroups in the walk's order */
	assert_non_null(strstr(t, "# TYPE cachestat_cgroup_pagecache_accesses_total counter\n"
				  "cachestat_cgroup_pagecache_accesses_total{cgroup=\"/a\"} 100\n"
				  "cachestat_cgroup_pagecache_accesses_total{cgroup=\"/b/c\"} 7\n#"));
	assert_non_null(strstr(t, "cachestat_cgroup_pagecache_added_pages_total{cgroup=\"/a\"} 10\n"
				  "cachestat_cgroup_pagecache_added_pages_total{cgroup=\"/b/c\"} 0\n"));
	assert_non_null(strstr(t, "cachestat_cgroup_pagecache_dirtied_pages_total{cgroup=\"/a\"} 3\n"));
	assert_non_null(strstr(t, "cachestat_cgroup_pagecache_buffer_dirtied_total{cgroup=\"/a\"} 1\n"));
	/* no entry, no series: neither the root nor /b, whose child has one */
	assert_null(strstr(t, "{cgroup=\"/\"}"));
	assert_null(strstr(t, "{cgroup=\"/b\"}"));
	assert_non_null(strstr(t, "\ncachestat_pagecache_activity_dropped_total 5\n"));
	assert_non_null(strstr(t, "\ncachestat_pagecache_activity_cgroups 3\n"));
	/* an entry a walked cgroup claimed stays in the map */
	assert_int_equal(forgotten_claimed, 0);
	free(t);
}

static void test_json(void **state)
{
	char *t = scan_one(root, "activity", true, NULL);

	(void)state;
	assert_non_null(strstr(t, "\"cgroup\": \"/a\",\n      \"pagecache_activity_total\": {\n"
				  "        \"accessed\": 100,\n        \"added\": 10,\n"
				  "        \"dirtied\": 3,\n        \"buffer_dirtied\": 1\n      }"));
	/* no entry, no object: the root's numbers are the node's, not the cgroup's */
	assert_null(strstr(t, "\"cgroup\": \"/\",\n      \"pagecache_activity_total\""));
	assert_int_equal(starts, 1); /* started once a process, whatever the engines */
	free(t);
}

/*
 * An entry no walked cgroup claims leaves the map at the end of its third scan, and only then;
 * the claimed ones stay.
 */
static void test_prune(void **state)
{
	(void)state;
	left_in_map = true;
	for (int scan = 1; scan <= 3; scan++) {
		free(scan_one(root, "activity", false, NULL));
		assert_int_equal(left_forgotten, scan == 3);
	}
	free(scan_one(root, "activity", false, NULL));
	assert_int_equal(left_forgotten, 1);
	assert_int_equal(forgotten_claimed, 0);
}

/* The program's ids are cgroup v2's: on the v1 memory hierarchy nothing is matched, and it says so. */
static void test_v1(void **state)
{
	char *t = scan_one_with((struct collector_options){ .cgroupfs = root, .procfs = "/proc",
							      .memory_v1 = true },
				"activity", false, NULL);

	(void)state;
	assert_non_null(strstr(t, "cachestat_collector_unavailable_info{collector=\"activity\",reason=\"cgroup_v1\"} 1\n"));
	assert_null(strstr(t, "cachestat_cgroup_pagecache_accesses_total"));
	free(t);
}

/*
 * The collector's start line after a refused attach, in a child (the collector starts once a
 * process): reason no_bpf_permission, and what the kernel's perf_event_paranoid level wants.
 */
static char *denied_start_line(const char *paranoid)
{
	char procfs[] = "/tmp/cse-activity-proc-XXXXXX", line[1024] = "";
	int fds[2];
	ssize_t n;
	pid_t pid;
	int status;

	assert_non_null(mkdtemp(procfs));
	fixture_sh("mkdir -p '%s/sys/kernel'", procfs);
	tree_write(procfs, "sys/kernel/perf_event_paranoid", paranoid);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const struct collector_def *def = registry_get((size_t)registry_find("activity"));
		char *t;

		denied = true;
		t = scan_one_with((struct collector_options){ .cgroupfs = root, .procfs = procfs }, "activity",
				  false, NULL);
		def->describe(NULL, line, sizeof(line));
		if (!strstr(t, "cachestat_collector_unavailable_info{collector=\"activity\",reason=\"no_bpf_permission\"} 1\n"))
			snprintf(line, sizeof(line), "no reason no_bpf_permission in the scan");
		n = write(fds[1], line, strlen(line));
		_exit(n == (ssize_t)strlen(line) ? 0 : 1);
	}
	close(fds[1]);
	n = read(fds[0], line, sizeof(line) - 1);
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_true(n > 0);
	line[n] = '\0';
	assert_int_equal(tree_remove(procfs), 0);
	return strdup(line);
}

static void test_denied(void **state)
{
	char *paranoid3 = denied_start_line("3\n"), *paranoid2 = denied_start_line("2\n");

	(void)state;
	assert_string_equal(paranoid3, "not attached (no_bpf_permission): attaching a kprobe to folio_mark_accessed: "
				       "Permission denied (kernel.perf_event_paranoid is 3: a kprobe wants "
				       "CAP_SYS_ADMIN at this level)");
	assert_non_null(strstr(paranoid2, "Permission denied (kernel.perf_event_paranoid is 2: a kprobe wants "
					  "CAP_BPF and CAP_PERFMON)"));
	free(paranoid3);
	free(paranoid2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_denied),
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_prune),
		cmocka_unit_test(test_v1),
	};

	return cmocka_run_group_tests_name("activity", tests, setup, teardown);
}

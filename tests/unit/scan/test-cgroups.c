/* SPDX-License-Identifier: Apache-2.0 */
/* cgroup.procs parsing and the tree walk (on an ordinary directory tree). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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
#include "scan/cgroups.h"

static void test_procs(void **state)
{
	static const char procs[] = "42\n7\n42\n100000\n";
	pid_t *pids = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(cgroups_parse_procs(procs, strlen(procs), &pids, &n), 0);
	assert_int_equal(n, 3); /* listed twice during a migration: once */
	assert_int_equal(pids[0], 7);
	assert_int_equal(pids[1], 42);
	assert_int_equal(pids[2], 100000);
	free(pids);

	assert_int_equal(cgroups_parse_procs("", 0, &pids, &n), 0);
	assert_int_equal(n, 0);
	free(pids);
	assert_int_equal(cgroups_parse_procs("5", 1, &pids, &n), 0); /* no final newline */
	assert_int_equal(n, 1);
	free(pids);
}

static void test_procs_malformed(void **state)
{
	static const char *const bad[] = { "x\n", "12 \n", "-1\n", "0\n", "99999999999\n", "1\n2x\n" };
	pid_t *pids = NULL;
	size_t n = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(cgroups_parse_procs(bad[i], strlen(bad[i]), &pids, &n), -EINVAL);
}

struct labels {
	int n;
	char v[16][64];
};

static int collect_label(int dirfd, const char *label, void *userdata)
{
	struct labels *l = userdata;

	assert_true(dirfd >= 0);
	if (l->n < 16)
		snprintf(l->v[l->n++], sizeof(l->v[0]), "%s", label);
	return 0;
}

static int stop_at_b(int dirfd, const char *label, void *userdata)
{
	(void)dirfd;
	(void)userdata;
	return strcmp(label, "/b") == 0 ? -ECANCELED : 0;
}

/* Prunes below /a, and the rest of /b after the first child of it visited. */
static int prune_some(int dirfd, const char *label, void *userdata)
{
	struct labels *l = userdata;
	int r = collect_label(dirfd, label, userdata);

	if (r == 0 && strcmp(label, "/a") == 0)
		return CGROUPS_WALK_PRUNE;
	if (r == 0 && strncmp(label, "/b/", 3) == 0 && l->n > 0)
		return CGROUPS_WALK_PRUNE_REST;
	return r;
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void test_walk(void **state)
{
	char dir[] = "/tmp/cse-cg-XXXXXX";
	struct labels l = { 0 };
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	fixture_sh("cd %s && mkdir -p a/x a/y b && touch a/cgroup.procs && ln -s a c", dir);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(cgroups_walk(fd, collect_label, &l), 0);
	qsort(l.v, (size_t)l.n, sizeof(l.v[0]), label_cmp);
	assert_int_equal(l.n, 5); /* the symlink c is not a cgroup */
	assert_string_equal(l.v[0], "/");
	assert_string_equal(l.v[1], "/a");
	assert_string_equal(l.v[2], "/a/x");
	assert_string_equal(l.v[3], "/a/y");
	assert_string_equal(l.v[4], "/b");
	assert_int_equal(cgroups_walk(fd, stop_at_b, NULL), -ECANCELED);
	close(fd);
	/* a prune skips below; a prune of the rest skips the siblings not reached yet */
	fixture_sh("cd %s && mkdir b/p b/q b/r", dir);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	memset(&l, 0, sizeof(l));
	assert_int_equal(cgroups_walk(fd, prune_some, &l), 0);
	assert_int_equal(l.n, 4); /* "/", /a, /b and one of /b's three */
	qsort(l.v, (size_t)l.n, sizeof(l.v[0]), label_cmp);
	assert_string_equal(l.v[1], "/a");
	assert_string_equal(l.v[2], "/b");
	assert_memory_equal(l.v[3], "/b/", 3);
	close(fd);
	assert_false(cgroups_is_v2(open("/", O_RDONLY | O_CLOEXEC)));
	assert_int_equal(tree_remove(dir), 0);
}

static void test_controllers(void **state)
{
	static const char c[] = "cpuset cpu io memory hugetlb pids rdma misc\n";
	static const char none[] = "\n";

	(void)state;
	assert_true(cgroups_controllers_has(c, strlen(c), "memory"));
	assert_true(cgroups_controllers_has(c, strlen(c), "cpuset"));
	assert_true(cgroups_controllers_has(c, strlen(c), "misc"));
	assert_false(cgroups_controllers_has(c, strlen(c), "mem"));
	assert_false(cgroups_controllers_has(c, strlen(c), "memory hugetlb"));
	assert_false(cgroups_controllers_has(none, strlen(none), "memory"));
	assert_false(cgroups_controllers_has(c, strlen("cpuset cpu io memo"), "memory"));
}

/* A directory that is no cgroup file system is walked as given, with a warning. */
static void test_resolve_plain_dir(void **state)
{
	char dir[] = "/tmp/cse-cg-XXXXXX";
	struct cgroups_root root;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(cgroups_resolve_root(dir, true, &root), 0);
	assert_string_equal(root.path, dir);
	assert_int_equal(root.layout, CGROUPS_V2);
	assert_true(root.note_warn);
	assert_non_null(strstr(root.note, dir));
	cgroups_root_done(&root);
	assert_null(root.path);
	/* a path that does not exist is kept: the scan reports it */
	assert_int_equal(cgroups_resolve_root("/nonexistent/cg", true, &root), 0);
	assert_string_equal(root.path, "/nonexistent/cg");
	assert_null(root.note);
	cgroups_root_done(&root);
	assert_int_equal(rmdir(dir), 0);
}

/* On a hybrid host (the build machines): the default finds the v1 memory hierarchy. */
static void test_resolve_hybrid_host(void **state)
{
	struct cgroups_root root;
	char buf[64] = "";
	FILE *f;

	(void)state;
	f = fopen("/sys/fs/cgroup/unified/cgroup.controllers", "re");
	if (!f || !cgroups_is_v2(fileno(f)) || access("/sys/fs/cgroup/memory/memory.stat", F_OK) != 0) {
		if (f)
			fclose(f);
		skip(); /* not this layout */
	}
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	if (cgroups_controllers_has(buf, strlen(buf), "memory"))
		skip();
	assert_int_equal(cgroups_resolve_root("/sys/fs/cgroup", false, &root), 0);
	assert_string_equal(root.path, "/sys/fs/cgroup/memory");
	assert_int_equal(root.layout, CGROUPS_V1_MEMORY);
	assert_false(root.note_warn);
	cgroups_root_done(&root);
	/* given as the v2 mount, it is walked as asked */
	assert_int_equal(cgroups_resolve_root("/sys/fs/cgroup/unified", true, &root), 0);
	assert_string_equal(root.path, "/sys/fs/cgroup/unified");
	assert_int_equal(root.layout, CGROUPS_V2);
	cgroups_root_done(&root);
}

/*
 * The path /proc/PID/cgroup gives a tree's root, from mountinfo: the mount's root in the
 * hierarchy (a bind mount of a subtree, a container's namespace) then the path below the mount
 * point; and a cgroup's, from its label.
 */
static void test_ns_path(void **state)
{
	static const char mi[] =
		"30 25 0:26 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw\n"
		"31 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
		"40 22 0:26 /kubepods/pod1 /host/cg rw - cgroup2 cgroup2 rw\n"
		"41 22 0:26 /../.. /ns/cg rw - cgroup2 cgroup2 rw\n"
		"50 22 8:1 / / rw - ext4 /dev/sda1 rw\n";
	char *p = NULL;

	(void)state;
	assert_int_equal(cgroups_ns_path_of(mi, strlen(mi), 30, "/sys/fs/cgroup/unified", &p), 0);
	assert_string_equal(p, "/");
	free(p);
	assert_int_equal(cgroups_ns_path_of(mi, strlen(mi), 30, "/sys/fs/cgroup/unified/t/a", &p), 0);
	assert_string_equal(p, "/t/a");
	free(p);
	assert_int_equal(cgroups_ns_path_of(mi, strlen(mi), 31, "/sys/fs/cgroup/memory/x", &p), 0);
	assert_string_equal(p, "/x");
	free(p);
	assert_int_equal(cgroups_ns_path_of(mi, strlen(mi), 40, "/host/cg", &p), 0);
	assert_string_equal(p, "/kubepods/pod1");
	free(p);
	assert_int_equal(cgroups_ns_path_of(mi, strlen(mi), 40, "/host/cg/c1", &p), 0);
	assert_string_equal(p, "/kubepods/pod1/c1");
	free(p);
	assert_int_equal(cgroups_ns_path_of(mi, strlen(mi), 41, "/ns/cg/a", &p), 0);
	assert_string_equal(p, "/../../a");
	free(p);
	/* not a cgroup file system; not below the mount point; no such mount */
	assert_int_equal(cgroups_ns_path_of(mi, strlen(mi), 50, "/srv/tree", &p), -ENOMEDIUM);
	assert_int_equal(cgroups_ns_path_of(mi, strlen(mi), 40, "/host/cgx", &p), -EINVAL);
	assert_int_equal(cgroups_ns_path_of(mi, strlen(mi), 99, "/x", &p), -ENOENT);

	p = cgroups_label_path("/", "/");
	assert_string_equal(p, "/");
	free(p);
	p = cgroups_label_path("/", "/a/b");
	assert_string_equal(p, "/a/b");
	free(p);
	p = cgroups_label_path("/t", "/");
	assert_string_equal(p, "/t");
	free(p);
	p = cgroups_label_path("/t", "/a");
	assert_string_equal(p, "/t/a");
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_procs),
		cmocka_unit_test(test_procs_malformed),
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_controllers),
		cmocka_unit_test(test_resolve_plain_dir),
		cmocka_unit_test(test_resolve_hybrid_host),
		cmocka_unit_test(test_ns_path),
	};

	return cmocka_run_group_tests_name("cgroups", tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Top-N selection of per-file series: the right N, best first, ties by (dev, ino) whatever the
 * order of the offers, unique labels.
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

#include "scan/topn.h"

static uint64_t next_ino = 1000;

static void offer_ino(struct topn *t, const char *path, uint64_t cached, uint64_t ino)
{
	struct snap_file f = { .size = 1, .c = { .cached = cached }, .dev = 8, .ino = ino };

	if (topn_wants(t, &f)) {
		f.path = strdup(path);
		topn_offer(t, &f);
	}
}

static void offer(struct topn *t, const char *path, uint64_t cached, uint64_t recent)
{
	struct snap_file f = { .size = 1, .c = { .cached = cached, .recently_evicted = recent },
			       .dev = 8, .ino = next_ino++ };

	if (topn_wants(t, &f)) {
		f.path = strdup(path);
		topn_offer(t, &f);
	}
}

static void test_keeps_the_largest(void **state)
{
	struct topn t;
	struct snap_file *f;
	size_t n;

	(void)state;
	assert_int_equal(topn_init(&t, 3), 0);
	/* 100 files; file i has key i*10 (split between cached and recently evicted) */
	for (int i = 0; i < 100; i++) {
		char name[32];

		snprintf(name, sizeof(name), "/f%03d", (i * 37) % 100);
		offer(&t, name, (uint64_t)((i * 37) % 100) * 7, (uint64_t)((i * 37) % 100) * 3);
	}
	assert_int_equal(topn_take(&t, &f, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(f[0].path, "/f099");
	assert_string_equal(f[1].path, "/f098");
	assert_string_equal(f[2].path, "/f097");
	assert_int_equal(f[0].c.cached, 99 * 7);
	for (size_t i = 0; i < n; i++)
		snap_file_done(&f[i]);
	free(f);
	topn_done(&t);
}

/* Equal keys: the smaller inode wins, whatever the order of the offers; shown by path. */
static void test_ties(void **state)
{
	static const uint64_t orders[2][4] = { { 4, 3, 2, 1 }, { 1, 2, 3, 4 } };
	static const char *const names[5] = { "", "/z-ino1", "/a-ino2", "/m-ino3", "/b-ino4" };

	(void)state;
	for (int o = 0; o < 2; o++) {
		struct topn t;
		struct snap_file *f;
		size_t n;

		assert_int_equal(topn_init(&t, 2), 0);
		for (int i = 0; i < 4; i++)
			offer_ino(&t, names[orders[o][i]], 4096, orders[o][i]);
		assert_int_equal(topn_take(&t, &f, &n), 0);
		assert_int_equal(n, 2);
		assert_string_equal(f[0].path, "/a-ino2");
		assert_string_equal(f[1].path, "/z-ino1");
		for (size_t i = 0; i < n; i++)
			snap_file_done(&f[i]);
		free(f);
		topn_done(&t);
	}
}

static void test_zero_keeps_nothing(void **state)
{
	struct topn t;
	struct snap_file *f;
	size_t n;
	struct snap_file x = { .path = strdup("/x"), .c = { .cached = 1 } };

	(void)state;
	assert_int_equal(topn_init(&t, 0), 0);
	assert_false(topn_wants(&t, &x));
	assert_int_equal(topn_offer(&t, &x), 0); /* frees the path */
	assert_int_equal(topn_take(&t, &f, &n), 0);
	assert_int_equal(n, 0);
	assert_null(f);
	topn_done(&t);
}

static void test_fewer_than_n(void **state)
{
	struct topn t;
	struct snap_file *f;
	size_t n;

	(void)state;
	assert_int_equal(topn_init(&t, 10), 0);
	offer(&t, "/small", 1, 0);
	offer(&t, "/big", 100, 0);
	assert_int_equal(topn_take(&t, &f, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(f[0].path, "/big");
	assert_string_equal(f[1].path, "/small");
	for (size_t i = 0; i < n; i++)
		snap_file_done(&f[i]);
	free(f);
	/* reusable after take */
	offer(&t, "/again", 5, 0);
	assert_int_equal(topn_take(&t, &f, &n), 0);
	assert_int_equal(n, 1);
	snap_file_done(&f[0]);
	free(f);
	topn_done(&t);
}

/* Two deleted files of the same name would make two identical series. */
/* Two files, one path: the smallest case of the same, also told apart. */
static void test_two_same_paths(void **state)
{
	struct topn t;
	struct snap_file *f;
	size_t n;

	(void)state;
	assert_int_equal(topn_init(&t, 5), 0);
	offer(&t, "/tmp/z (deleted)", 300, 0);
	offer(&t, "/tmp/z (deleted)", 200, 0);
	assert_int_equal(topn_take(&t, &f, &n), 0);
	assert_int_equal(n, 2);
	assert_string_not_equal(f[0].path, f[1].path);
	for (size_t i = 0; i < n; i++)
		snap_file_done(&f[i]);
	free(f);
	topn_done(&t);
}

/*
 * The node's top: one file held in two cgroups is two series told apart by their cgroup label,
 * so each keeps its plain name; two of one name in one cgroup still get the suffix.
 */
static void test_same_path_two_cgroups(void **state)
{
	struct snap_file a = { .size = 1, .c = { .cached = 300 }, .dev = 8, .ino = 1, .cgroup = 4 };
	struct snap_file b = { .size = 1, .c = { .cached = 300 }, .dev = 8, .ino = 1, .cgroup = 7 };
	struct snap_file c = { .size = 1, .c = { .cached = 100 }, .dev = 8, .ino = 2, .cgroup = 7 };
	struct topn t;
	struct snap_file *f;
	size_t n, suffixed = 0;

	(void)state;
	assert_int_equal(topn_init(&t, 5), 0);
	a.path = strdup("/srv/shared");
	b.path = strdup("/srv/shared");
	c.path = strdup("/srv/shared");
	topn_offer(&t, &a);
	topn_offer(&t, &b);
	topn_offer(&t, &c);
	assert_int_equal(topn_take(&t, &f, &n), 0);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++) {
		if (f[i].ino == 1)
			assert_string_equal(f[i].path, "/srv/shared");
		else
			assert_string_equal(f[i].path, "/srv/shared\\#2");
		suffixed += strcmp(f[i].path, "/srv/shared") != 0;
	}
	assert_int_equal(suffixed, 1);
	for (size_t i = 0; i < n; i++)
		snap_file_done(&f[i]);
	free(f);
	topn_done(&t);
}

static void test_same_path_made_unique(void **state)
{
	struct topn t;
	struct snap_file *f;
	size_t n;

	(void)state;
	assert_int_equal(topn_init(&t, 5), 0);
	offer(&t, "/tmp/x (deleted)", 300, 0);
	offer(&t, "/tmp/x (deleted)", 200, 0);
	offer(&t, "/tmp/x (deleted)", 100, 0);
	offer(&t, "/tmp/y", 50, 0);
	assert_int_equal(topn_take(&t, &f, &n), 0);
	assert_int_equal(n, 4);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			assert_string_not_equal(f[i].path, f[j].path);
	assert_string_equal(f[3].path, "/tmp/y");
	for (size_t i = 0; i < n; i++)
		snap_file_done(&f[i]);
	free(f);
	topn_done(&t);
}

/*
 * A byte that is not UTF-8 and its escaped spelling come out different; two files of one name
 * get a suffix that no real name can have, not even one spelled like it.
 */
static void test_sanitized_collision(void **state)
{
	struct topn t;
	struct snap_file *f;
	size_t n;

	(void)state;
	assert_int_equal(topn_init(&t, 5), 0);
	offer(&t, "/d/\xff", 300, 0);
	offer(&t, "/d/\\xff", 200, 0);
	assert_int_equal(topn_take(&t, &f, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(f[0].path, "/d/\\xff");
	assert_string_equal(f[1].path, "/d/\\\\xff");
	for (size_t i = 0; i < n; i++)
		snap_file_done(&f[i]);
	free(f);
	topn_done(&t);

	assert_int_equal(topn_init(&t, 5), 0);
	offer(&t, "/d/x (deleted)", 300, 0);
	offer(&t, "/d/x (deleted)", 200, 0);
	offer(&t, "/d/x (deleted) (2)", 100, 0);
	offer(&t, "/d/x (deleted)\\#2", 50, 0);
	assert_int_equal(topn_take(&t, &f, &n), 0);
	assert_int_equal(n, 4);
	assert_string_equal(f[0].path, "/d/x (deleted)");
	assert_string_equal(f[1].path, "/d/x (deleted)\\#2");
	assert_string_equal(f[2].path, "/d/x (deleted) (2)");
	assert_string_equal(f[3].path, "/d/x (deleted)\\\\#2");
	for (size_t i = 0; i < n; i++)
		snap_file_done(&f[i]);
	free(f);
	topn_done(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keeps_the_largest),
		cmocka_unit_test(test_ties),
		cmocka_unit_test(test_zero_keeps_nothing),
		cmocka_unit_test(test_fewer_than_n),
		cmocka_unit_test(test_same_path_made_unique),
		cmocka_unit_test(test_same_path_two_cgroups),
		cmocka_unit_test(test_two_same_paths),
		cmocka_unit_test(test_sanitized_collision),
	};

	return cmocka_run_group_tests_name("topn", tests, NULL, NULL);
}

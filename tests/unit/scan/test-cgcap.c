/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The caps on the cgroups of a scan, on a tree given as (depth, uid) in walk order: root's own
 * kept first, the rest shared max-min fairly among the owners of delegated subtrees, and the
 * walk told to leave out what is over (the owner that is over, not what comes last).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "scan/cgcap.h"
#include "scan/cgroups.h"

struct node {
	unsigned depth;
	uid_t uid;
};

/*
 * Walks nodes as cgroups_walk() would with the returns given: a prune skips what lies below,
 * a prune of the rest its parent's remaining children too. kept[i]: whether node i was visited.
 */
static void walk(struct cgcap *c, const struct node *n, size_t len, bool admit, bool *kept)
{
	unsigned skip_below = ~0u; /* skip nodes deeper than this */

	for (size_t i = 0; i < len; i++) {
		int r;

		kept[i] = false;
		if (n[i].depth > skip_below)
			continue;
		skip_below = ~0u;
		r = admit ? cgcap_admit(c, n[i].depth, n[i].uid) : cgcap_count(c, n[i].depth, n[i].uid);
		if (r == -ECANCELED)
			return;
		assert_true(r >= 0);
		kept[i] = r == 0;
		if (r == CGROUPS_WALK_PRUNE)
			skip_below = n[i].depth;
		else if (r == CGROUPS_WALK_PRUNE_REST)
			skip_below = n[i].depth - 1;
	}
}

static size_t run(const struct cgcap_limits *lim, const struct node *n, size_t len, bool *kept,
		  struct cgcap **ret)
{
	size_t k = 0;

	assert_int_equal(cgcap_new(lim, ret), 0);
	walk(*ret, n, len, false, kept);
	cgcap_plan(*ret);
	walk(*ret, n, len, true, kept);
	for (size_t i = 0; i < len; i++)
		k += kept[i];
	return k;
}

/* "/", /sys (root's, 2 below it), /a owned by 1000 (5 below), /b owned by 1001 (1 below). */
static const struct node tree[] = {
	{ 0, 0 },
	{ 1, 0 },    { 2, 0 },    { 2, 0 },
	{ 1, 1000 }, { 2, 1000 }, { 2, 1000 }, { 3, 100000 }, { 2, 1000 }, { 2, 1000 },
	{ 1, 1001 }, { 2, 1001 },
	{ 1, 0 },
};
#define N (sizeof(tree) / sizeof(tree[0]))

static void test_no_cap(void **state)
{
	struct cgcap_limits lim = { .max_cgroups = 100, .max_per_owner = 100 };
	struct cgcap *c;
	bool kept[N];

	(void)state;
	assert_int_equal(run(&lim, tree, N, kept, &c), N);
	assert_false(cgcap_node_cut(c));
	assert_int_equal(cgcap_owners_cut(c, NULL, 0), 0);
	cgcap_free(c);
}

/* The owner over its cap loses its cgroups past it; the other owner and root keep theirs. */
static void test_owner_cap(void **state)
{
	struct cgcap_limits lim = { .max_cgroups = 100, .max_per_owner = 3 };
	struct cgcap *c;
	bool kept[N];
	uid_t uids[4];

	(void)state;
	assert_int_equal(run(&lim, tree, N, kept, &c), N - 3);
	for (size_t i = 0; i < 4; i++)
		assert_true(kept[i]);
	/* 1000's first three in walk order (the subuid's cgroup counts as 1000's) */
	assert_true(kept[4] && kept[5] && kept[6]);
	assert_false(kept[7] || kept[8] || kept[9]);
	assert_true(kept[10] && kept[11] && kept[12]);
	assert_false(cgcap_node_cut(c));
	assert_int_equal(cgcap_owners_cut(c, uids, 4), 1);
	assert_int_equal(uids[0], 1000);
	cgcap_free(c);
}

/* Over the node's cap: root's first, the rest shared fairly (1001 needs 2, 1000 gets 3). */
static void test_node_cap(void **state)
{
	struct cgcap_limits lim = { .max_cgroups = 10, .max_per_owner = 100 };
	struct cgcap *c;
	bool kept[N];
	uid_t uids[4];

	(void)state;
	assert_int_equal(run(&lim, tree, N, kept, &c), 10);
	assert_true(kept[0] && kept[1] && kept[2] && kept[3] && kept[12]);
	assert_true(kept[4] && kept[5] && kept[6]);
	assert_false(kept[7] || kept[8] || kept[9]);
	assert_true(kept[10] && kept[11]); /* walked after the bomb, kept all the same */
	assert_true(cgcap_node_cut(c));
	assert_int_equal(cgcap_owners_cut(c, uids, 4), 1);
	assert_int_equal(uids[0], 1000);
	cgcap_free(c);

	/* 7: two left for two owners, one each */
	lim.max_cgroups = 7;
	assert_int_equal(run(&lim, tree, N, kept, &c), 7);
	assert_true(kept[4] && !kept[5] && kept[10] && !kept[11]);
	assert_int_equal(cgcap_owners_cut(c, uids, 4), 2);
	cgcap_free(c);

	/* root's own over the cap: no owner keeps any */
	lim.max_cgroups = 3;
	assert_int_equal(run(&lim, tree, N, kept, &c), 3);
	assert_true(kept[0] && kept[1] && kept[2]);
	assert_false(kept[4] || kept[10]);
	assert_true(cgcap_node_cut(c));
	cgcap_free(c);
}

/*
 * Cgroups made between the two passes (a pod started mid-scan, a user's new scope) are kept
 * while the node has room and their owner is under its cap, and nothing is said to be cut;
 * past the room they are left out, and that is said.
 */
static void test_born_between_passes(void **state)
{
	/* the tree with one more of root's own at the end and one more of 1001's */
	static const struct node later[] = {
		{ 0, 0 },
		{ 1, 0 },    { 2, 0 },    { 2, 0 },
		{ 1, 1000 }, { 2, 1000 }, { 2, 1000 }, { 3, 100000 }, { 2, 1000 }, { 2, 1000 },
		{ 1, 1001 }, { 2, 1001 }, { 2, 1001 },
		{ 1, 0 },    { 1, 0 },
	};
	struct cgcap_limits lim = { .max_cgroups = 100, .max_per_owner = 100 };
	bool kept[N], kept_later[sizeof(later) / sizeof(later[0])];
	uid_t uids[4];
	struct cgcap *c;

	(void)state;
	assert_int_equal(cgcap_new(&lim, &c), 0);
	walk(c, tree, N, false, kept);
	cgcap_plan(c);
	walk(c, later, sizeof(later) / sizeof(later[0]), true, kept_later);
	for (size_t i = 0; i < sizeof(later) / sizeof(later[0]); i++)
		assert_true(kept_later[i]);
	assert_false(cgcap_node_cut(c));
	assert_int_equal(cgcap_owners_cut(c, uids, 4), 0);
	cgcap_free(c);

	/* a node cap the first pass filled exactly: no room, the newcomers are left out and said */
	lim.max_cgroups = N;
	assert_int_equal(cgcap_new(&lim, &c), 0);
	walk(c, tree, N, false, kept);
	cgcap_plan(c);
	walk(c, later, sizeof(later) / sizeof(later[0]), true, kept_later);
	assert_false(kept_later[12]); /* 1001's newcomer */
	assert_false(kept_later[14]); /* root's newcomer */
	assert_true(cgcap_node_cut(c));
	assert_int_equal(cgcap_owners_cut(c, uids, 4), 1);
	assert_int_equal(uids[0], 1001);
	cgcap_free(c);
}

/* The first pass stops reading an owner's directories past its cap: bounded whatever it made. */
static void test_count_bounded(void **state)
{
	struct cgcap_limits lim = { .max_cgroups = 100, .max_per_owner = 2 };
	struct node big[1 + 1 + 1000];
	unsigned calls = 0;
	struct cgcap *c;

	(void)state;
	big[0] = (struct node){ 0, 0 };
	big[1] = (struct node){ 1, 1000 };
	for (size_t i = 2; i < 1002; i++)
		big[i] = (struct node){ 2, 1000 };
	assert_int_equal(cgcap_new(&lim, &c), 0);
	for (size_t i = 0; i < 1002; i++) {
		int r = cgcap_count(c, big[i].depth, big[i].uid);

		calls++;
		if (r == CGROUPS_WALK_PRUNE_REST)
			break; /* the walk reads no more of /a */
	}
	assert_int_equal(calls, 4); /* "/", /a, one child, the one over */
	cgcap_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_cap),
		cmocka_unit_test(test_owner_cap),
		cmocka_unit_test(test_node_cap),
		cmocka_unit_test(test_count_bounded),
		cmocka_unit_test(test_born_between_passes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

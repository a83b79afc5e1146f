/* SPDX-License-Identifier: Apache-2.0 */
/* pathglob: matches, links below the prefix not followed, links in it followed, mounts, cap. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files/pathglob.h"

#define MAX_SEEN 256

/* What one expansion reported, and how the test's ops answer. */
struct seen {
	char *matched[MAX_SEEN];
	bool matched_dir[MAX_SEEN];
	size_t n_matched;
	int skipped[MAX_SEEN];
	size_t n_skipped;
	uint64_t entered[MAX_SEEN];
	size_t n_entered, n_left;
	int refuse_mount; /* enter_mount's answer for a mount other than the first it saw */
	size_t stop_after; /* stopped() says yes from this call on; 0: never */
	size_t stopped_calls;
};

static int rec_enter(void *arg, uint64_t mnt_id, uint64_t *ret_token)
{
	struct seen *s = arg;

	if (s->refuse_mount && s->n_entered > 0 && mnt_id != s->entered[0])
		return s->refuse_mount;
	assert_true(s->n_entered < MAX_SEEN);
	s->entered[s->n_entered++] = mnt_id;
	*ret_token = mnt_id + 1;
	return 0;
}

static void rec_leave(void *arg, uint64_t token)
{
	struct seen *s = arg;

	assert_true(token >= 1);
	s->n_left++;
}

static bool rec_stopped(void *arg)
{
	struct seen *s = arg;

	return s->stop_after && ++s->stopped_calls >= s->stop_after;
}

static int rec_matched(void *arg, const struct pathglob_match *m)
{
	struct seen *s = arg;
	struct stat st, dir;

	/* the name is there in dirfd, and not followed: what the callee would open O_NOFOLLOW */
	assert_int_equal(fstatat(m->dirfd, m->name, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_false(S_ISLNK(st.st_mode));
	assert_int_equal(m->type, IFTODT(st.st_mode));
	/* the directory's owner and mode, for the caller's cheaper path through sealed ones */
	assert_int_equal(fstat(m->dirfd, &dir), 0);
	assert_int_equal(m->dir_uid, dir.st_uid);
	assert_int_equal(m->dir_mode, dir.st_mode);
	assert_true(s->n_matched < MAX_SEEN);
	s->matched_dir[s->n_matched] = m->fd >= 0;
	s->matched[s->n_matched++] = strdup(m->path);
	if (m->fd >= 0)
		close(m->fd);
	return 0;
}

static void rec_skipped(void *arg, int err)
{
	struct seen *s = arg;

	assert_true(s->n_skipped < MAX_SEEN);
	s->skipped[s->n_skipped++] = err;
}

static const struct pathglob_ops rec_ops = {
	.enter_mount = rec_enter,
	.leave_mount = rec_leave,
	.stopped = rec_stopped,
	.matched = rec_matched,
	.skipped = rec_skipped,
};

static void seen_done(struct seen *s)
{
	for (size_t i = 0; i < s->n_matched; i++)
		free(s->matched[i]);
	*s = (struct seen){ 0 };
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The matches, sorted, as "a b c" with root cut off their front. */
static const char *matches(struct seen *s, const char *root)
{
	static char buf[4096];
	size_t used = 0, rl = strlen(root);

	qsort(s->matched, s->n_matched, sizeof(char *), cmp_str);
	buf[0] = '\0';
	for (size_t i = 0; i < s->n_matched; i++) {
		const char *p = strncmp(s->matched[i], root, rl) == 0 ? s->matched[i] + rl : s->matched[i];

		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s", i ? " " : "", p);
	}
	return buf;
}

static int expand(struct seen *s, size_t max_entries, struct pathglob *ret, const char *fmt, ...)
{
	char pattern[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(pattern, sizeof(pattern), fmt, ap);
	va_end(ap);
	*ret = (struct pathglob){ .ops = &rec_ops, .arg = s, .max_entries = max_entries };
	return pathglob_expand(ret, pattern);
}

static void put(const char *root, const char *rel)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs("x", f);
	fclose(f);
}

static void dir(const char *root, const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void link_to(const char *root, const char *rel, const char *target)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	assert_int_equal(symlink(target, p), 0);
}

/*
 * The tree of the attack: hst/alice/logs is a link out (to secret/), hst/bob/logs a directory,
 * hst/bob/logs/out a link to a file out of it; real/ and a link to it for the prefix.
 */
static int setup_tree(void **state)
{
	static char root[] = "/tmp/test-pathglob.XXXXXX";
	char target[PATH_MAX];

	strcpy(root, "/tmp/test-pathglob.XXXXXX");
	assert_non_null(mkdtemp(root));
	dir(root, "hst");
	dir(root, "hst/alice");
	dir(root, "hst/bob");
	dir(root, "hst/bob/logs");
	dir(root, "hst/bob/logs/sub");
	dir(root, "hst/carol");
	dir(root, "hst/carol/logs");
	dir(root, "secret");
	put(root, "secret/root.key");
	put(root, "hst/bob/logs/app.log");
	put(root, "hst/bob/logs/.hidden");
	put(root, "hst/carol/logs/c.log");
	snprintf(target, sizeof(target), "%s/secret", root);
	link_to(root, "hst/alice/logs", target);
	snprintf(target, sizeof(target), "%s/secret/root.key", root);
	link_to(root, "hst/bob/logs/out", target);
	dir(root, "many");
	for (int i = 0; i < 50; i++) {
		char rel[32];

		snprintf(rel, sizeof(rel), "many/f%02d", i);
		put(root, rel);
	}
	link_to(root, "hstlink", "hst");
	*state = root;
	return 0;
}

static int teardown_tree(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", (char *)*state);
	return system(cmd) == 0 ? 0 : -1;
}

static size_t count_skipped(const struct seen *s, int err)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n_skipped; i++)
		n += s->skipped[i] == err;
	return n;
}

/* The attack: a link in a globbed component is not followed, the other matches are found. */
static void test_link_below_prefix_not_followed(void **state)
{
	const char *root = *state;
	struct seen s = { 0 };
	struct pathglob g;

	assert_int_equal(expand(&s, 0, &g, "%s/hst/*/logs/*", root), 0);
	assert_string_equal(matches(&s, root), "/hst/bob/logs/app.log /hst/bob/logs/sub "
					       "/hst/carol/logs/c.log");
	/* alice/logs (a directory link) and bob/logs/out (a file link): both counted, neither opened */
	assert_int_equal(count_skipped(&s, -ELOOP), 2);
	assert_int_equal(s.n_skipped, 2);
	assert_false(g.capped);
	seen_done(&s);
}

/* A literal component after a glob is no more followed than a globbed one. */
static void test_literal_component_link_not_followed(void **state)
{
	const char *root = *state;
	struct seen s = { 0 };
	struct pathglob g;

	assert_int_equal(expand(&s, 0, &g, "%s/hst/[a]lice/logs/root.key", root), 0);
	assert_int_equal(s.n_matched, 0);
	assert_int_equal(count_skipped(&s, -ELOOP), 1);
	seen_done(&s);
	assert_int_equal(expand(&s, 0, &g, "%s/hst/b?b/logs/app.log", root), 0);
	assert_string_equal(matches(&s, root), "/hst/bob/logs/app.log");
	seen_done(&s);
}

/* The operator's prefix may hold a link: it is followed. */
static void test_link_in_prefix_followed(void **state)
{
	const char *root = *state;
	struct seen s = { 0 };
	struct pathglob g;

	assert_int_equal(expand(&s, 0, &g, "%s/hstlink/c*/logs/*.log", root), 0);
	assert_string_equal(matches(&s, root), "/hstlink/carol/logs/c.log");
	seen_done(&s);
}

/* glob(3)'s rules: a leading dot by a dot only, a trailing slash for directories only. */
static void test_glob_rules(void **state)
{
	const char *root = *state;
	struct seen s = { 0 };
	struct pathglob g;

	assert_int_equal(expand(&s, 0, &g, "%s/hst/bob/logs/.*", root), 0);
	assert_string_equal(matches(&s, root), "/hst/bob/logs/.hidden");
	seen_done(&s);
	assert_int_equal(expand(&s, 0, &g, "%s/hst/bob/logs/*/", root), 0);
	assert_string_equal(matches(&s, root), "/hst/bob/logs/sub");
	assert_true(s.matched_dir[0]);
	seen_done(&s);
	assert_int_equal(expand(&s, 0, &g, "%s/nowhere/*", root), 0);
	assert_int_equal(s.n_matched + s.n_skipped, 0);
	seen_done(&s);
	assert_int_equal(expand(&s, 0, &g, "relative/*"), -EINVAL);
}

/* The cap: names read, matched or not, counted as they are read; the rest is never read. */
static void test_cap(void **state)
{
	const char *root = *state;
	struct seen s = { 0 };
	struct pathglob g;

	assert_int_equal(expand(&s, 10, &g, "%s/many/*", root), 0);
	assert_true(g.capped);
	assert_int_equal(g.entries, 10);
	assert_int_equal(s.n_matched, 10);
	seen_done(&s);
	/* names that do not match count all the same */
	assert_int_equal(expand(&s, 10, &g, "%s/many/nothing*", root), 0);
	assert_true(g.capped);
	assert_int_equal(s.n_matched, 0);
	seen_done(&s);
	/* exactly as many names as the cap: nothing left out */
	assert_int_equal(expand(&s, 50, &g, "%s/many/*", root), 0);
	assert_false(g.capped);
	assert_int_equal(s.n_matched, 50);
	seen_done(&s);
	assert_int_equal(expand(&s, 0, &g, "%s/many/f[0-4]?", root), 0);
	assert_false(g.capped);
	assert_int_equal(s.n_matched, 50);
	seen_done(&s);
}

/* The deadline is asked at every name: the expansion stops where it says. */
static void test_stopped(void **state)
{
	const char *root = *state;
	struct seen s = { .stop_after = 6 };
	struct pathglob g;

	assert_int_equal(expand(&s, 0, &g, "%s/many/*", root), 0);
	assert_int_equal(s.n_matched, 5);
	assert_false(g.capped);
	seen_done(&s);
}

/* The prefix's mount is judged, and each mount crossed; every one entered is left. */
static void test_mounts(void **state)
{
	const char *root = *state;
	struct statx dev, shm;
	struct seen s = { 0 };
	struct pathglob g;

	assert_int_equal(expand(&s, 0, &g, "%s/hst/*/logs/*", root), 0);
	assert_int_equal(s.n_entered, 1); /* the prefix; nothing below it is on another mount */
	assert_int_equal(s.n_left, s.n_entered);
	seen_done(&s);
	if (statx(AT_FDCWD, "/dev", 0, STATX_MNT_ID, &dev) < 0 ||
	    statx(AT_FDCWD, "/dev/shm", AT_SYMLINK_NOFOLLOW, STATX_MNT_ID | STATX_TYPE, &shm) < 0 ||
	    !(shm.stx_mask & STATX_MNT_ID) || !S_ISDIR(shm.stx_mode) ||
	    dev.stx_mnt_id == shm.stx_mnt_id) {
		skip(); /* no /dev/shm mount to cross here */
		return;
	}
	assert_int_equal(expand(&s, 0, &g, "/dev/sh[m]/"), 0);
	assert_int_equal(s.n_entered, 2);
	assert_true(s.entered[1] == shm.stx_mnt_id);
	assert_int_equal(s.n_matched, 1);
	assert_int_equal(s.n_left, 2);
	seen_done(&s);
	/* refused: not read, not matched, counted */
	s.refuse_mount = -EXDEV;
	assert_int_equal(expand(&s, 0, &g, "/dev/sh[m]/*"), 0);
	assert_int_equal(s.n_matched, 0);
	assert_int_equal(count_skipped(&s, -EXDEV), 1);
	assert_int_equal(s.n_left, s.n_entered);
	seen_done(&s);
}

/* /proc/self is a (magic) link: not followed below the prefix. */
static void test_magic_link(void **state)
{
	struct seen s = { 0 };
	struct pathglob g;

	(void)state;
	assert_int_equal(expand(&s, 0, &g, "/proc/sel[f]/status"), 0);
	assert_int_equal(s.n_matched, 0);
	assert_int_equal(count_skipped(&s, -ELOOP), 1);
	seen_done(&s);
}

static void test_prefix_len(void **state)
{
	(void)state;
	assert_int_equal(pathglob_prefix_len("/srv/hst/*/logs/*"), strlen("/srv/hst"));
	assert_int_equal(pathglob_prefix_len("/*/x"), 1);
	assert_int_equal(pathglob_prefix_len("/a/b\\*c/d"), strlen("/a"));
	assert_int_equal(pathglob_prefix_len("/a/b/c"), strlen("/a/b/c"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_link_below_prefix_not_followed),
		cmocka_unit_test(test_literal_component_link_not_followed),
		cmocka_unit_test(test_link_in_prefix_followed),
		cmocka_unit_test(test_glob_rules),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_stopped),
		cmocka_unit_test(test_mounts),
		cmocka_unit_test(test_magic_link),
		cmocka_unit_test(test_prefix_len),
	};

	return cmocka_run_group_tests(tests, setup_tree, teardown_tree);
}

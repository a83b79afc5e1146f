/* SPDX-License-Identifier: Apache-2.0 */
/*
 * overlay: the layer list read from super options, fed from strings, and the lookup through a
 * layer tree made in a temporary directory. The tree uses user.overlay.* xattrs (an overlay
 * mounted with userxattr), which need no privilege; the overlay file's stat, which overlayfs
 * would report, is made from the real files' stats the way ovl_getattr() makes it.
 */
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
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "parse/mountinfo.h"
#include "files/overlay.h"
#include "fixture.h"

/* ---- the layer list ---- */

static void test_layers_legacy(void **state)
{
	struct overlay_layers l;

	(void)state;
	/* as mountinfo prints "lowerdir=/a\,b\:c:/l2::/d1::/d2" with upperdir "/u p" */
	assert_int_equal(overlay_parse_layers("rw,lowerdir=/a\\134\\054b\\134:c:/l2::/d1::/d2,"
					      "upperdir=/u\\040p,workdir=/w,metacopy=on",
					      &l),
			 0);
	assert_int_equal(l.n_lower, 2);
	assert_string_equal(l.lower[0], "/a,b:c");
	assert_string_equal(l.lower[1], "/l2");
	assert_int_equal(l.n_data, 2);
	assert_string_equal(l.data[0], "/d1");
	assert_string_equal(l.data[1], "/d2");
	assert_string_equal(l.upper, "/u p");
	assert_false(l.userxattr);
	overlay_layers_done(&l);
}

static void test_layers_new_api(void **state)
{
	struct overlay_layers l;

	(void)state;
	/* fsconfig(2)'s lowerdir+ and datadir+ take one layer each, literally */
	assert_int_equal(overlay_parse_layers("rw,lowerdir+=/a\\054b:c,lowerdir+=/x\\134y,"
					      "datadir+=/d1,upperdir=/u\\134\\054q,userxattr",
					      &l),
			 0);
	assert_int_equal(l.n_lower, 2);
	assert_string_equal(l.lower[0], "/a,b:c");
	assert_string_equal(l.lower[1], "/x\\y");
	assert_int_equal(l.n_data, 1);
	assert_string_equal(l.upper, "/u,q"); /* overlayfs unescapes upperdir in both forms */
	assert_true(l.userxattr);
	overlay_layers_done(&l);

	assert_int_equal(overlay_parse_layers("ro,lowerdir=/only", &l), 0);
	assert_null(l.upper);
	assert_int_equal(l.n_lower, 1);
	overlay_layers_done(&l);
}

/* What the mount's options and the module's defaults let overlayfs follow, as in the kernel. */
static void test_layers_policy(void **state)
{
	static const struct {
		const char *options;
		enum overlay_follow dir_def, always_follow, metacopy_def, redirect, metacopy;
	} cases[] = {
#define UNK OVERLAY_FOLLOW_UNKNOWN
#define NO OVERLAY_FOLLOW_NO
#define YES OVERLAY_FOLLOW_YES
		/* an unprivileged user's mount: the kernel forces nofollow and no metacopy */
		{ "rw,lowerdir=/h/l1:/etc,redirect_dir=nofollow,userxattr", YES, YES, YES, NO, NO },
		{ "rw,lowerdir=/h/l1:/etc,userxattr,metacopy=on,redirect_dir=on", YES, YES, YES, NO, NO },
		/* Debian's defaults shown nowhere: redirects followed, no metacopy */
		{ "rw,lowerdir=/l", NO, YES, NO, YES, NO },
		{ "rw,lowerdir=/l", NO, NO, YES, NO, NO },
		{ "rw,lowerdir=/l,redirect_dir=on,metacopy=on", NO, NO, NO, YES, YES },
		{ "rw,lowerdir=/l,redirect_dir=follow", NO, NO, NO, YES, NO },
		{ "rw,lowerdir=/l,redirect_dir=off,metacopy=on", YES, YES, YES, NO, NO },
		/* defaults unreadable: not known, so nothing that needs them is followed */
		{ "rw,lowerdir=/l", UNK, UNK, UNK, UNK, UNK },
		{ "rw,lowerdir=/l,metacopy=on", UNK, UNK, UNK, UNK, UNK },
#undef UNK
#undef NO
#undef YES
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct overlay_layers l;

		assert_int_equal(overlay_parse_layers(cases[i].options, &l), 0);
		overlay_layers_policy(&l, cases[i].dir_def, cases[i].always_follow, cases[i].metacopy_def);
		if (l.redirect != cases[i].redirect || l.metacopy != cases[i].metacopy)
			fail_msg("%s: redirect %d metacopy %d, want %d %d", cases[i].options, l.redirect,
				 l.metacopy, cases[i].redirect, cases[i].metacopy);
		overlay_layers_done(&l);
	}
}

static void test_layers_bad(void **state)
{
	static const char *const bad[] = {
		"rw,upperdir=/u,workdir=/w", /* no lower */
		"rw,lowerdir=",
		"rw,lowerdir=/a:",
		"rw,lowerdir=/a::",
		"rw,lowerdir=/a:::/b",
		"rw,lowerdir=:/a",
		"rw,lowerdir=/a\\9",
		"rw,lowerdir=/a,upperdir=",
	};
	struct overlay_layers l = { .n_lower = 42 };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(overlay_parse_layers(bad[i], &l), -EINVAL);
		assert_int_equal(l.n_lower, 42);
	}
}

/* ---- the lookup, on a tree ---- */

enum { UPPER, LOWER1, LOWER2, DATA, N_LAYERS };
static const char *const layer_names[N_LAYERS] = { "upper", "lower1", "lower2", "data" };

struct tree {
	char dir[64];
	int fds[N_LAYERS];
	struct overlay_stack s;
};

static void mkfile(struct tree *t, int layer, const char *rel, size_t size)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", t->dir, layer_names[layer], rel);
	f = fopen(path, "w");
	assert_non_null(f);
	for (size_t i = 0; i < size; i++)
		fputc('a' + (int)(i % 26), f);
	assert_int_equal(fclose(f), 0);
}

static void mkdir_in(struct tree *t, int layer, const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s/%s", t->dir, layer_names[layer], rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static void xattr(struct tree *t, int layer, const char *rel, const char *name, const char *v)
{
	char path[512], key[64];

	snprintf(path, sizeof(path), "%s/%s/%s", t->dir, layer_names[layer], rel);
	snprintf(key, sizeof(key), "user.overlay.%s", name);
	assert_int_equal(setxattr(path, key, v, strlen(v), 0), 0);
}

static struct stat stat_of(struct tree *t, int layer, const char *rel)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s/%s", t->dir, layer_names[layer], rel);
	assert_int_equal(lstat(path, &st), 0);
	return st;
}

/* Sets a file's mtime, so that a namesake can be made to agree in everything but its inode. */
static void set_mtime(struct tree *t, int layer, const char *rel, time_t sec)
{
	char path[512];
	struct timespec ts[2] = { { .tv_sec = sec }, { .tv_sec = sec } };

	snprintf(path, sizeof(path), "%s/%s/%s", t->dir, layer_names[layer], rel);
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static int setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));
	char path[512];

	assert_non_null(t);
	snprintf(t->dir, sizeof(t->dir), "/var/tmp/test-overlay.XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	for (int i = 0; i < N_LAYERS; i++) {
		snprintf(path, sizeof(path), "%s/%s", t->dir, layer_names[i]);
		assert_int_equal(mkdir(path, 0755), 0);
		t->fds[i] = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		assert_true(t->fds[i] >= 0);
	}
	t->s = (struct overlay_stack){ .fds = t->fds, .n = N_LAYERS, .n_merge = DATA,
				     .upper = true, .userxattr = true,
				     .redirect = OVERLAY_FOLLOW_YES, .metacopy = OVERLAY_FOLLOW_YES };
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tree *t = *state;

	for (int i = 0; i < N_LAYERS; i++)
		close(t->fds[i]);
	assert_int_equal(tree_remove(t->dir), 0);
	free(t);
	return 0;
}

/* Looks rel up; returns the layer the file was found in, or the error. */
static int lookup(struct tree *t, const char *rel, const struct stat *ovl)
{
	struct stat rst;
	int fd = -1, r;

	r = overlay_lookup(&t->s, rel, ovl, &fd, &rst);
	if (r < 0) {
		assert_int_equal(fd, -1); /* untouched */
		return r;
	}
	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	close(fd);
	for (int i = 0; i < N_LAYERS; i++) {
		struct stat lst;

		if (fstatat(t->fds[i], rel + (rel[0] == '/'), &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
		    lst.st_dev == rst.st_dev && lst.st_ino == rst.st_ino)
			return i;
	}
	return 100; /* found elsewhere (a redirect): the caller checks the inode */
}

static void test_upper_lower(void **state)
{
	struct tree *t = *state;
	struct stat ovl;

	mkfile(t, UPPER, "u", 10);
	mkfile(t, LOWER2, "l", 20);
	ovl = stat_of(t, UPPER, "u");
	assert_int_equal(lookup(t, "u", &ovl), UPPER);
	ovl = stat_of(t, LOWER2, "l");
	assert_int_equal(lookup(t, "l", &ovl), LOWER2);
	assert_int_equal(lookup(t, "/l", &ovl), LOWER2); /* from a mount root "/" */
	assert_int_equal(lookup(t, "missing", &ovl), -EXDEV);
}

/* A copied-up file: overlayfs reports the lower origin's inode number, the upper's the rest. */
static void test_copied_up(void **state)
{
	struct tree *t = *state;
	struct stat ovl;

	mkdir_in(t, UPPER, "d");
	mkdir_in(t, LOWER1, "d");
	mkfile(t, LOWER1, "d/f", 100);
	mkfile(t, UPPER, "d/f", 100);
	ovl = stat_of(t, UPPER, "d/f");
	ovl.st_ino = stat_of(t, LOWER1, "d/f").st_ino;
	assert_int_equal(lookup(t, "d/f", &ovl), UPPER);
	/* xino: the layer's index above bit 54 */
	ovl.st_ino |= (ino_t)1 << 59;
	assert_int_equal(lookup(t, "d/f", &ovl), UPPER);
	/* an inode number neither of them has */
	ovl.st_ino = stat_of(t, LOWER1, "d/f").st_ino + 1000003;
	assert_int_equal(lookup(t, "d/f", &ovl), -EXDEV);
}

/* The same name in another layer, agreeing in size and mtime, is not the file. */
static void test_namesake(void **state)
{
	struct tree *t = *state;
	struct stat ovl, real;

	mkfile(t, LOWER2, "n", 64);
	set_mtime(t, LOWER2, "n", 1700000000);
	real = stat_of(t, LOWER2, "n");
	mkfile(t, LOWER1, "n", 64); /* hides it: the overlay shows this one */
	set_mtime(t, LOWER1, "n", 1700000000);
	/* the process's file was the lower2 one (since hidden, e.g. a layer was added) */
	assert_int_equal(lookup(t, "n", &real), -EXDEV);
	/* a different mtime, a different size */
	ovl = stat_of(t, LOWER1, "n");
	assert_int_equal(lookup(t, "n", &ovl), LOWER1);
	ovl.st_mtim.tv_nsec++;
	assert_int_equal(lookup(t, "n", &ovl), -EXDEV);
	ovl = stat_of(t, LOWER1, "n");
	ovl.st_size++;
	assert_int_equal(lookup(t, "n", &ovl), -EXDEV);
}

/* A whiteout in a layer hides the name below it; an empty file marked as one does too. */
static void test_whiteout(void **state)
{
	struct tree *t = *state;
	char path[512];
	struct stat ovl;

	mkfile(t, LOWER2, "w", 30);
	mkfile(t, LOWER1, "w", 0);
	xattr(t, LOWER1, "w", "whiteout", "");
	ovl = stat_of(t, LOWER2, "w");
	assert_int_equal(lookup(t, "w", &ovl), -EXDEV);

	mkfile(t, LOWER2, "c", 30);
	snprintf(path, sizeof(path), "%s/upper/c", t->dir);
	if (mknod(path, S_IFCHR, makedev(0, 0)) < 0) {
		print_message("skip: a 0/0 whiteout needs CAP_MKNOD\n");
		return;
	}
	ovl = stat_of(t, LOWER2, "c");
	assert_int_equal(lookup(t, "c", &ovl), -EXDEV);
}

/* An opaque directory ends the merge: what is below it is not in the overlay. */
static void test_opaque(void **state)
{
	struct tree *t = *state;
	struct stat ovl;

	mkdir_in(t, UPPER, "o");
	xattr(t, UPPER, "o", "opaque", "y");
	mkdir_in(t, LOWER1, "o");
	mkfile(t, LOWER1, "o/x", 5);
	ovl = stat_of(t, LOWER1, "o/x");
	assert_int_equal(lookup(t, "o/x", &ovl), -EXDEV);
	/* not opaque: found */
	xattr(t, UPPER, "o", "opaque", "n");
	assert_int_equal(lookup(t, "o/x", &ovl), LOWER1);
}

/* A non-directory hides a directory of the same name below it. */
static void test_file_hides_dir(void **state)
{
	struct tree *t = *state;
	struct stat ovl;

	mkfile(t, UPPER, "h", 1);
	mkdir_in(t, LOWER1, "h");
	mkfile(t, LOWER1, "h/x", 5);
	ovl = stat_of(t, LOWER1, "h/x");
	assert_int_equal(lookup(t, "h/x", &ovl), -EXDEV);
}

/* A merged directory renamed: the upper one says where the lower one is. */
static void test_redirect_dir(void **state)
{
	struct tree *t = *state;
	struct stat ovl;

	mkdir_in(t, UPPER, "new");
	xattr(t, UPPER, "new", "redirect", "/old");
	mkdir_in(t, LOWER1, "old");
	mkfile(t, LOWER1, "old/x", 5);
	ovl = stat_of(t, LOWER1, "old/x");
	assert_int_equal(lookup(t, "new/x", &ovl), 100);
	/* relative redirect: a name in the same directory */
	mkdir_in(t, UPPER, "rel");
	xattr(t, UPPER, "rel", "redirect", "old");
	assert_int_equal(lookup(t, "rel/x", &ovl), 100);
}

/*
 * A metacopy file: the upper holds the metadata (size set, no data), the data is in a data-only
 * layer at its redirect, or at the same name below.
 */
static void test_metacopy(void **state)
{
	struct tree *t = *state;
	char path[512];
	struct stat ovl, data;

	mkfile(t, DATA, "blob", 8192);
	data = stat_of(t, DATA, "blob");
	snprintf(path, sizeof(path), "%s/upper/m", t->dir);
	mkfile(t, UPPER, "m", 0);
	assert_int_equal(truncate(path, 8192), 0);
	set_mtime(t, UPPER, "m", data.st_mtim.tv_sec);
	set_mtime(t, DATA, "blob", data.st_mtim.tv_sec);
	data = stat_of(t, DATA, "blob");
	ovl = stat_of(t, UPPER, "m");
	ovl.st_blocks = data.st_blocks; /* ovl_getattr(): the data's blocks */
	ovl.st_ino = data.st_ino;	/* and its origin's inode number */

	/* no xattr readable (trusted.* without CAP_SYS_ADMIN): the blocks tell */
	assert_int_equal(lookup(t, "m", &ovl), -EXDEV);

	xattr(t, UPPER, "m", "metacopy", "");
	xattr(t, UPPER, "m", "redirect", "/blob");
	{
		struct stat rst;
		int fd = -1;

		assert_int_equal(overlay_lookup(&t->s, "m", &ovl, &fd, &rst), 0);
		assert_int_equal(rst.st_ino, data.st_ino);
		close(fd);
	}
	/* without the redirect: the same name below, in the layers lookups go through */
	mkfile(t, LOWER2, "m", 8192);
	set_mtime(t, LOWER2, "m", data.st_mtim.tv_sec);
	assert_int_equal(removexattr(path, "user.overlay.redirect"), 0);
	ovl.st_ino = stat_of(t, LOWER2, "m").st_ino;
	ovl.st_blocks = stat_of(t, LOWER2, "m").st_blocks;
	assert_int_equal(lookup(t, "m", &ovl), LOWER2);
	/* the data-only layer is not one of them */
	assert_int_equal(unlink(strcat(strcpy(path, t->dir), "/lower2/m")), 0);
	mkfile(t, DATA, "m", 8192);
	assert_int_equal(lookup(t, "m", &ovl), -EXDEV);
}

/*
 * On a mount that follows neither (userxattr, say), the xattrs a user sets on its own files after
 * opening them change nothing: its metacopy file is the data, its redirected directory is not
 * resolved. Following them would measure a file of a lower layer the user cannot read.
 */
static void test_no_follow(void **state)
{
	struct tree *t = *state;
	struct stat ovl;

	t->s.redirect = OVERLAY_FOLLOW_NO;
	t->s.metacopy = OVERLAY_FOLLOW_NO;
	mkfile(t, LOWER2, "shadow", 4096);
	mkfile(t, LOWER1, "x", 4096);
	xattr(t, LOWER1, "x", "metacopy", "");
	xattr(t, LOWER1, "x", "redirect", "/shadow");
	ovl = stat_of(t, LOWER1, "x");
	assert_int_equal(lookup(t, "x", &ovl), LOWER1);

	mkdir_in(t, UPPER, "new");
	xattr(t, UPPER, "new", "redirect", "/old");
	mkdir_in(t, LOWER1, "old");
	mkfile(t, LOWER1, "old/y", 5);
	ovl = stat_of(t, LOWER1, "old/y");
	assert_int_equal(lookup(t, "new/y", &ovl), -EXDEV);

	/* not known: a metacopy xattr cannot be told from data, so the file is not measured */
	t->s.metacopy = OVERLAY_FOLLOW_UNKNOWN;
	ovl = stat_of(t, LOWER1, "x");
	assert_int_equal(lookup(t, "x", &ovl), -EXDEV);
}

/*
 * From a mountinfo line to the file: the layers named in a fake mountinfo of an overlay whose
 * layers are this tree (escaped as the kernel escapes them), opened, and the file looked up.
 */
static void test_from_mountinfo(void **state)
{
	struct tree *t = *state;
	char buf[2048];
	struct overlay_layers ly;
	struct mountinfo m;
	struct overlay_stack s;
	struct stat ovl, rst;
	int fds[N_LAYERS], fd = -1;

	snprintf(buf, sizeof(buf),
		 "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
		 "49 27 0:40 / /srv/merged rw,relatime shared:9 - overlay overlay rw,"
		 "lowerdir=%s/lower1:%s/lower2::%s/data,upperdir=%s/upper,workdir=/w,userxattr\n",
		 t->dir, t->dir, t->dir, t->dir);
	assert_int_equal(mountinfo_find(buf, strlen(buf), 49, &m), 0);
	assert_string_equal(m.fstype, "overlay");
	assert_int_equal(overlay_parse_layers(m.super_options, &ly), 0);
	assert_non_null(ly.upper);
	assert_int_equal(ly.n_lower, 2);
	assert_int_equal(ly.n_data, 1);
	assert_true(ly.userxattr);
	fds[0] = open(ly.upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
	fds[1] = open(ly.lower[0], O_PATH | O_DIRECTORY | O_CLOEXEC);
	fds[2] = open(ly.lower[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
	fds[3] = open(ly.data[0], O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (int i = 0; i < N_LAYERS; i++)
		assert_true(fds[i] >= 0);
	s = (struct overlay_stack){ .fds = fds, .n = N_LAYERS, .n_merge = N_LAYERS - ly.n_data,
				    .upper = true, .userxattr = ly.userxattr,
				    .redirect = OVERLAY_FOLLOW_YES, .metacopy = OVERLAY_FOLLOW_YES };
	mkdir_in(t, LOWER2, "etc");
	mkfile(t, LOWER2, "etc/os-release", 300);
	ovl = stat_of(t, LOWER2, "etc/os-release");
	assert_int_equal(overlay_lookup(&s, "/etc/os-release", &ovl, &fd, &rst), 0);
	assert_int_equal(rst.st_ino, ovl.st_ino);
	close(fd);
	for (int i = 0; i < N_LAYERS; i++)
		close(fds[i]);
	overlay_layers_done(&ly);
	mountinfo_done(&m);
}

static void test_is_overlay(void **state)
{
	struct tree *t = *state;
	struct stat st;

	(void)t;
	assert_int_equal(fstat(t->fds[UPPER], &st), 0);
	assert_false(overlay_is_overlay(t->fds[UPPER], &st));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layers_legacy),
		cmocka_unit_test(test_layers_new_api),
		cmocka_unit_test(test_layers_policy),
		cmocka_unit_test(test_layers_bad),
		cmocka_unit_test_setup_teardown(test_upper_lower, setup, teardown),
		cmocka_unit_test_setup_teardown(test_copied_up, setup, teardown),
		cmocka_unit_test_setup_teardown(test_namesake, setup, teardown),
		cmocka_unit_test_setup_teardown(test_whiteout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_opaque, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_hides_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_redirect_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metacopy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_follow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_from_mountinfo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_is_overlay, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

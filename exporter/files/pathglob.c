/* SPDX-License-Identifier: Apache-2.0 */
/* pathglob: a configured glob expanded per component, no symlink followed below its prefix. */
#define _GNU_SOURCE
#include "files/pathglob.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "parse/config.h"

/* Components below the prefix at most: each level holds a directory open while it is read. */
#define PATHGLOB_MAX_COMPONENTS CONFIG_MAX_GLOB_COMPONENTS

struct expansion {
	struct pathglob *g;
	char *comps[PATHGLOB_MAX_COMPONENTS];
	size_t n;
	bool dirs_only; /* the pattern ends in '/': its last component matches directories only */
	bool stop;      /* the cap or the deadline: nothing more is read */
	char path[PATH_MAX];
	size_t len;
};

/* A directory open for reading, its owner and mode, and the mount it entered, if it did. */
struct opened {
	int fd;
	uint64_t mnt;
	uid_t uid;
	mode_t mode;
	bool entered;
	uint64_t token;
};

static bool component_is_literal(const char *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strchr("*?[\\", c[i]))
			return false;
	return true;
}

size_t pathglob_prefix_len(const char *pattern)
{
	size_t last_slash = 0;

	for (const char *c = pattern; *c;) {
		size_t n;

		if (*c == '/') {
			last_slash = (size_t)(c - pattern);
			c++;
			continue;
		}
		n = strcspn(c, "/");
		if (!component_is_literal(c, n))
			return last_slash > 0 ? last_slash : 1;
		c += n;
	}
	return strlen(pattern);
}

/* Appends /name to the path; false when it would not fit in PATH_MAX. */
static bool path_push(struct expansion *x, const char *name, size_t *ret_old)
{
	size_t n = strlen(name), sep = x->len > 0 && x->path[x->len - 1] != '/';

	if (x->len + sep + n >= sizeof(x->path))
		return false;
	*ret_old = x->len;
	if (sep)
		x->path[x->len++] = '/';
	memcpy(x->path + x->len, name, n + 1);
	x->len += n;
	return true;
}

static void path_pop(struct expansion *x, size_t old)
{
	x->len = old;
	x->path[old] = '\0';
}

static void skipped(struct expansion *x, int err)
{
	if (x->g->ops->skipped)
		x->g->ops->skipped(x->g->arg, err);
}

static void opened_leave(struct expansion *x, const struct opened *o)
{
	if (o->entered)
		x->g->ops->leave_mount(x->g->arg, o->token);
}

/*
 * Opens name in dirfd as a directory to read: O_PATH first, which asks its file system nothing,
 * and O_NOFOLLOW unless follow (the prefix): a symlink is then opened as itself and refused
 * (-ELOOP), whatever readdir said of the name. It is then judged by its mount when that is not
 * parent_mnt (enter_mount), and only then opened for reading, through that descriptor: "."
 * cannot be swapped for another directory meanwhile. 0 with *ret, else -errno.
 */
static int dir_open(struct expansion *x, int dirfd, const char *name, bool follow,
		    uint64_t parent_mnt, struct opened *ret)
{
	_cleanup_close_ int pfd = -1;
	struct opened o = { .fd = -1 };
	struct statx sx;
	int r;

	pfd = openat(dirfd, name, O_PATH | O_CLOEXEC | (follow ? O_DIRECTORY : O_NOFOLLOW));
	if (pfd < 0)
		return -errno;
	if (statx(pfd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC,
		  STATX_TYPE | STATX_MODE | STATX_UID | STATX_MNT_ID, &sx) < 0)
		return -errno;
	if (S_ISLNK(sx.stx_mode))
		return -ELOOP;
	if (!S_ISDIR(sx.stx_mode))
		return -ENOTDIR;
	o.mnt = (sx.stx_mask & STATX_MNT_ID) ? sx.stx_mnt_id : PATHGLOB_NO_MOUNT;
	o.uid = sx.stx_uid;
	o.mode = sx.stx_mode;
	o.entered = o.mnt != parent_mnt || o.mnt == PATHGLOB_NO_MOUNT;
	if (o.entered) {
		r = x->g->ops->enter_mount(x->g->arg, o.mnt, &o.token);
		if (r < 0)
			return r;
	}
	o.fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
	if (o.fd < 0) {
		r = -errno;
		opened_leave(x, &o);
		return r;
	}
	*ret = o;
	return 0;
}

/* One more name may be read: false once the cap or the deadline says stop. */
static bool take_entry(struct expansion *x)
{
	struct pathglob *g = x->g;

	if (x->stop || (g->ops->stopped && g->ops->stopped(g->arg))) {
		x->stop = true;
		return false;
	}
	if (g->max_entries && g->entries >= g->max_entries) {
		g->capped = true;
		x->stop = true;
		return false;
	}
	g->entries++;
	return true;
}

static int expand_in(struct expansion *x, const struct opened *dir, size_t i);

/* The type of name in dirfd, asking its file system nothing it has not cached; DT_UNKNOWN: gone. */
static unsigned char entry_type(struct expansion *x, int dirfd, const char *name)
{
	struct statx sx;

	if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC,
		  STATX_TYPE, &sx) < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			skipped(x, -errno);
		return DT_UNKNOWN;
	}
	return IFTODT(sx.stx_mode);
}

/* A name of the directory dir that component i matches, of readdir's type. */
static int visit_name(struct expansion *x, const struct opened *dir, size_t i, const char *name,
		      unsigned char type)
{
	struct pathglob_match m = { .dirfd = dir->fd, .name = name, .path = x->path, .fd = -1,
				    .dir_uid = dir->uid, .dir_mode = dir->mode };
	bool last = i + 1 == x->n;
	struct opened o;
	size_t old;
	int r;

	if (type == DT_UNKNOWN)
		type = entry_type(x, dir->fd, name);
	if (type == DT_UNKNOWN)
		return 0;
	/* a link, on the way or as the match, goes to dir_open(), which refuses it */
	if (type != DT_DIR && type != DT_LNK && (!last || x->dirs_only))
		return 0;
	if (!path_push(x, name, &old)) {
		skipped(x, -ENAMETOOLONG);
		return 0;
	}
	if (type != DT_DIR && type != DT_LNK) {
		m.type = type;
		r = x->g->ops->matched(x->g->arg, &m);
		path_pop(x, old);
		return r;
	}
	r = dir_open(x, dir->fd, name, false, dir->mnt, &o);
	if (r < 0) {
		if (r != -ENOENT)
			skipped(x, r); /* -ELOOP: a link; -ENOTDIR: replaced since readdir */
		path_pop(x, old);
		return 0;
	}
	if (last) {
		m.fd = o.fd;
		m.type = DT_DIR;
		r = x->g->ops->matched(x->g->arg, &m);
	} else {
		r = expand_in(x, &o, i + 1);
	}
	opened_leave(x, &o);
	path_pop(x, old);
	return r;
}

/* Component i in the directory dir, whose descriptor it takes. */
static int expand_in(struct expansion *x, const struct opened *dir, size_t i)
{
	_cleanup_closedir_ DIR *d = NULL;
	const char *c = x->comps[i];
	struct opened in = *dir;
	struct dirent *de;

	if (component_is_literal(c, strlen(c))) {
		int r = take_entry(x) ? visit_name(x, dir, i, c, DT_UNKNOWN) : 0;

		close(dir->fd);
		return r;
	}
	d = fdopendir(dir->fd);
	if (!d) {
		skipped(x, -errno);
		close(dir->fd);
		return 0;
	}
	in.fd = dirfd(d);
	while ((de = readdir(d))) {
		int r;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (!take_entry(x))
			return 0;
		/* glob(3)'s rule: a leading dot is matched by a dot only */
		if (fnmatch(c, de->d_name, FNM_PERIOD) != 0)
			continue;
		r = visit_name(x, &in, i, de->d_name, de->d_type);
		if (r < 0 || x->stop)
			return r;
	}
	return 0;
}

/* Splits the components after the prefix (in rest, modified) into x. -EINVAL: too many. */
static int split(struct expansion *x, char *rest)
{
	size_t n = strlen(rest);

	x->dirs_only = n > 0 && rest[n - 1] == '/';
	for (char *save = NULL, *c = strtok_r(rest, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (x->n == PATHGLOB_MAX_COMPONENTS)
			return -EINVAL;
		x->comps[x->n++] = c;
	}
	return x->n > 0 ? 0 : -EINVAL;
}

int pathglob_expand(struct pathglob *g, const char *pattern)
{
	_cleanup_free_ struct expansion *x = NULL;
	_cleanup_free_ char *rest = NULL;
	size_t plen;
	struct opened o;
	int r;

	g->entries = 0;
	g->capped = false;
	if (pattern[0] != '/')
		return -EINVAL;
	plen = pathglob_prefix_len(pattern);
	x = calloc(1, sizeof(*x));
	rest = strdup(pattern + plen);
	if (!x || !rest)
		return -ENOMEM;
	x->g = g;
	r = split(x, rest);
	if (r < 0 || plen >= sizeof(x->path))
		return -EINVAL;
	memcpy(x->path, pattern, plen);
	x->path[plen] = '\0';
	x->len = plen;
	/* the prefix is the operator's: followed, and judged by its mount as every directory is */
	r = dir_open(x, AT_FDCWD, x->path, true, PATHGLOB_NO_MOUNT, &o);
	if (r == -ENOENT || r == -ENOTDIR)
		return 0; /* no match, as glob(3) says */
	if (r < 0) {
		skipped(x, r);
		return 0;
	}
	r = expand_in(x, &o, 0);
	opened_leave(x, &o);
	return r;
}

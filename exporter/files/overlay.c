/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "files/overlay.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/xattr.h>

#include "parse/mountinfo.h"
#include "base/util.h"

/* ---- the layers, from the super options ---- */

static int push(char ***arr, size_t *n, char *s)
{
	char **t = realloc(*arr, (*n + 1) * sizeof(**arr));

	if (!t) {
		free(s);
		return -ENOMEM;
	}
	t[(*n)++] = s;
	*arr = t;
	return 0;
}

/* overlayfs' own escape: "\" takes the next character as it is (ovl_unescape()). */
static char *ovl_unescape(const char *p, const char **ret_end, bool stop_at_colon)
{
	char *buf = malloc(strlen(p) + 1), *o = buf;

	if (!buf)
		return NULL;
	while (*p && !(stop_at_colon && *p == ':')) {
		if (*p == '\\' && p[1])
			p++;
		*o++ = *p++;
	}
	*o = '\0';
	if (ret_end)
		*ret_end = p;
	return buf;
}

/* A legacy "lowerdir=" value: ":" between layers, "::" before the data-only ones. */
static int split_lowerdir(const char *p, struct overlay_layers *l)
{
	bool data = false;

	for (;;) {
		char *layer = ovl_unescape(p, &p, true);
		int r;

		if (!layer)
			return -ENOMEM;
		if (!*layer) { /* "", "a::", "a:" */
			free(layer);
			return -EINVAL;
		}
		r = data ? push(&l->data, &l->n_data, layer) : push(&l->lower, &l->n_lower, layer);
		if (r < 0 || *p == '\0')
			return r;
		if (*++p == ':') {
			data = true;
			p++;
		}
	}
}

void overlay_layers_done(struct overlay_layers *l)
{
	free(l->upper);
	for (size_t i = 0; i < l->n_lower; i++)
		free(l->lower[i]);
	free(l->lower);
	for (size_t i = 0; i < l->n_data; i++)
		free(l->data[i]);
	free(l->data);
	*l = (struct overlay_layers){ 0 };
}

static int layers_option(struct overlay_layers *l, const char *key, const char *value)
{
	char *s;

	if (strcmp(key, "userxattr") == 0) {
		l->userxattr = true;
		return 0;
	}
	if (!value)
		return 0;
	if (strcmp(key, "redirect_dir") == 0) {
		l->redirect = strcmp(value, "on") == 0 || strcmp(value, "follow") == 0 ? OVERLAY_FOLLOW_YES :
											OVERLAY_FOLLOW_NO;
		return 0;
	}
	if (strcmp(key, "metacopy") == 0) {
		l->metacopy = strcmp(value, "on") == 0 ? OVERLAY_FOLLOW_YES : OVERLAY_FOLLOW_NO;
		return 0;
	}
	if (strcmp(key, "lowerdir") == 0)
		return split_lowerdir(value, l);
	if (strcmp(key, "upperdir") != 0 && strcmp(key, "lowerdir+") != 0 &&
	    strcmp(key, "datadir+") != 0)
		return 0;
	if (!*value)
		return -EINVAL;
	/* upperdir is unescaped by overlayfs whichever way it was given; the "+" ones never are */
	s = key[0] == 'u' ? ovl_unescape(value, NULL, false) : strdup(value);
	if (!s)
		return -ENOMEM;
	if (key[0] == 'u') {
		free(l->upper);
		l->upper = s;
		return 0;
	}
	return key[0] == 'l' ? push(&l->lower, &l->n_lower, s) : push(&l->data, &l->n_data, s);
}

int overlay_parse_layers(const char *super_options, struct overlay_layers *ret)
{
	struct overlay_layers l = { 0 };
	const char *cursor = super_options;
	int r;

	for (;;) {
		_cleanup_free_ char *key = NULL;
		const char *value;

		r = mountinfo_next_option(&cursor, &key, &value);
		if (r <= 0)
			break;
		r = layers_option(&l, key, value);
		if (r < 0)
			break;
	}
	if (r == 0 && l.n_lower == 0)
		r = -EINVAL;
	if (r < 0) {
		overlay_layers_done(&l);
		return r;
	}
	*ret = l;
	return 0;
}

void overlay_layers_policy(struct overlay_layers *l, enum overlay_follow redirect_dir_def,
			   enum overlay_follow redirect_always_follow, enum overlay_follow metacopy_def)
{
	if (l->redirect == OVERLAY_FOLLOW_UNKNOWN) /* ovl_redirect_mode_def() */
		l->redirect = redirect_dir_def == OVERLAY_FOLLOW_YES ? OVERLAY_FOLLOW_YES :
			      redirect_dir_def == OVERLAY_FOLLOW_NO ? redirect_always_follow :
								      OVERLAY_FOLLOW_UNKNOWN;
	if (l->metacopy == OVERLAY_FOLLOW_UNKNOWN)
		l->metacopy = metacopy_def;
	if (l->userxattr) {
		l->redirect = OVERLAY_FOLLOW_NO;
		l->metacopy = OVERLAY_FOLLOW_NO;
	}
	if (l->redirect == OVERLAY_FOLLOW_NO)
		l->metacopy = OVERLAY_FOLLOW_NO;
	else if (l->redirect == OVERLAY_FOLLOW_UNKNOWN && l->metacopy == OVERLAY_FOLLOW_YES)
		l->metacopy = OVERLAY_FOLLOW_UNKNOWN;
}

/* A boolean parameter of the overlay module ("Y" or "N"), read again with each mount. */
static enum overlay_follow module_param(const char *name)
{
	char path[96], v[4] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/overlay/parameters/%s", name);
	f = fopen(path, "re");
	if (!f)
		return OVERLAY_FOLLOW_UNKNOWN;
	if (!fgets(v, sizeof(v), f))
		v[0] = '\0';
	fclose(f);
	return v[0] == 'Y' ? OVERLAY_FOLLOW_YES : v[0] == 'N' ? OVERLAY_FOLLOW_NO : OVERLAY_FOLLOW_UNKNOWN;
}

/* ---- the lookup through the layers ---- */

/*
 * overlayfs' inode numbers (ovl_map_dev_ino()): with all layers on one file system, a non-
 * directory's st_ino is its real inode's; with xino, the layer's index sits in the top bits
 * (at most 10 of them: ilog2(500 layers) + 2).
 */
#define XINO_LOW (UINT64_C(1) << 54)

/* Whether openat2(2) is there (no: an old kernel, or a seccomp filter that answers ENOSYS). */
static int have_openat2 = -1;

static int openat2_path(int dirfd, const char *path, int flags, uint64_t resolve)
{
	struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC), .resolve = resolve };
	int fd;

	if (have_openat2 == 0)
		return -ENOSYS;
	fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS) {
		have_openat2 = 0;
		return -ENOSYS;
	}
	if (fd >= 0)
		have_openat2 = 1;
	return fd < 0 ? -errno : fd;
}

/*
 * Opens one name in a layer directory, following no symlink and staying on the layer's file
 * system (overlayfs does not see mounts inside a layer), and fstat()s it. A directory is opened
 * for reading (its xattrs are read through the descriptor; anything else is then -ENOTDIR,
 * never opened), anything else O_PATH.
 */
static int open_child(int dirfd, dev_t layer_dev, const char *name, bool dir,
		      struct stat *ret_st)
{
	int flags = dir ? O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_NOFOLLOW : O_PATH | O_NOFOLLOW;
	_cleanup_close_ int fd = -1;

	if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EXDEV;
	fd = openat2_path(dirfd, name, flags,
			  RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
				  RESOLVE_NO_XDEV);
	if (fd == -ENOSYS) {
		fd = openat(dirfd, name, flags | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
	}
	if (fd == -ELOOP || fd == -ENOTDIR) /* a symlink, or a non-directory for dir */
		return dir ? -ENOTDIR : -ENOENT;
	if (fd < 0)
		return fd;
	if (fstat(fd, ret_st) < 0)
		return -errno;
	if (ret_st->st_dev != layer_dev)
		return -EXDEV; /* a mount point inside the layer */
	return TAKE_FD(fd);
}

/* Opens an absolute path inside a layer ("/a/b" from its root), a name at a time. */
static int open_below(int rootfd, dev_t layer_dev, const char *path, bool dir,
		      struct stat *ret_st)
{
	_cleanup_free_ char *copy = strdup(path);
	_cleanup_close_ int parent = -1;
	char *name, *save = NULL;
	int fd = -ENOENT;

	if (!copy)
		return -ENOMEM;
	for (name = strtok_r(copy, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
		bool last = strspn(save, "/") == strlen(save);

		fd = open_child(parent >= 0 ? parent : rootfd, layer_dev, name, last && dir, ret_st);
		if (fd < 0)
			return fd;
		closep(&parent);
		parent = fd;
	}
	return fd < 0 ? fd : TAKE_FD(parent);
}

/*
 * Reads the overlay xattr NAME ("opaque", "redirect", "metacopy", "whiteout") of a descriptor
 * (O_PATH ones through /proc/thread-self/fd: fgetxattr() refuses them) into buf (NUL-terminated).
 * Returns its length, -ENODATA when it is absent, or -EXDEV when it cannot be read (a seccomp
 * filter; trusted.* reads as absent without CAP_SYS_ADMIN, which verify() stands in for).
 */
static ssize_t ovl_xattr(int fd, bool opath, bool user, const char *name, char *buf, size_t size)
{
	char proc[64], key[64];
	ssize_t n;

	snprintf(key, sizeof(key), "%s.overlay.%s", user ? "user" : "trusted", name);
	if (opath) {
		snprintf(proc, sizeof(proc), "/proc/thread-self/fd/%d", fd);
		n = getxattr(proc, key, buf, size - 1);
	} else {
		n = fgetxattr(fd, key, buf, size - 1);
	}
	if (n < 0)
		return errno == ENODATA || errno == ENOTSUP ? -ENODATA : -EXDEV;
	buf[n] = '\0';
	return n;
}

/* A whiteout: a 0/0 character device, or an empty file marked as one (nested overlays). */
static int is_whiteout(int fd, const struct stat *st, bool user)
{
	char v[8];
	ssize_t n;

	if (S_ISCHR(st->st_mode))
		return st->st_rdev == makedev(0, 0);
	if (!S_ISREG(st->st_mode) || st->st_size != 0)
		return 0;
	n = ovl_xattr(fd, true, user, "whiteout", v, sizeof(v));
	return n >= 0 ? 1 : n == -ENODATA ? 0 : (int)n;
}

/*
 * A directory's opaque flag and redirect (into buf, length returned; 0 for none). One
 * flistxattr() tells whether there is anything to read: most directories have no overlay xattr.
 */
static ssize_t dir_xattrs(int fd, bool user, bool *ret_opaque, char *buf, size_t size)
{
	const char *prefix = user ? "user.overlay." : "trusted.overlay.";
	bool opaque = false, redirect = false;
	char names[1024], v[8];
	ssize_t n;

	n = flistxattr(fd, names, sizeof(names));
	if (n < 0 && errno != ERANGE)
		return errno == ENOTSUP ? 0 : -EXDEV;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1) {
		if (strncmp(names + i, prefix, strlen(prefix)) != 0)
			continue;
		opaque = opaque || strcmp(names + i + strlen(prefix), "opaque") == 0;
		redirect = redirect || strcmp(names + i + strlen(prefix), "redirect") == 0;
	}
	if (n < 0) /* too many names to list here: ask for both */
		opaque = redirect = true;
	if (opaque) {
		n = ovl_xattr(fd, false, user, "opaque", v, sizeof(v));
		if (n == -EXDEV)
			return n;
		*ret_opaque = n > 0 && v[0] == 'y';
	}
	if (!redirect)
		return 0;
	n = ovl_xattr(fd, false, user, "redirect", buf, size);
	return n == -ENODATA ? 0 : n;
}

struct lookup {
	const struct overlay_stack *s;
	const dev_t *dev; /* of each layer root */
	dev_t *dev_own;   /* dev, when lookup_init() had to fstat the roots */
	/*
	 * Per merge layer: the directory reached so far, -1 once the layer is out. A layer root
	 * (s->fds[i]) is borrowed, never closed; dir_kept: the array is a kept mount's (mount_lookup()).
	 */
	int *dir;
	bool dir_kept;
};

/* Closes a directory the lookup reached, unless it is the layer root it borrows. */
static void dir_put(const struct lookup *lk, size_t i, int fd)
{
	if (fd >= 0 && fd != lk->s->fds[i])
		close(fd);
}

/* An entry found for a name, in layer `layer`. */
struct entry {
	int fd; /* O_PATH */
	struct stat st;
	size_t layer;
};

/*
 * The first entry from layer `from` on: of `name` in the directories reached, or of the
 * absolute path `abs` from the layer roots (data-only layers included, as for a metacopy
 * redirect). A whiteout ends the search. Returns 0, -ENOENT, -EXDEV, -ENOMEM.
 */
static int find_entry(struct lookup *lk, size_t from, const char *name, const char *abs,
		      struct entry *ret)
{
	size_t end = abs ? lk->s->n : lk->s->n_merge;

	for (size_t i = from; i < end; i++) {
		struct stat st;
		int fd, r;

		if (abs)
			fd = open_below(lk->s->fds[i], lk->dev[i], abs, false, &st);
		else if (lk->dir[i] >= 0)
			fd = open_child(lk->dir[i], lk->dev[i], name, false, &st);
		else
			continue;
		if (fd == -ENOENT)
			continue;
		if (fd < 0)
			return fd == -ENOMEM ? fd : -EXDEV;
		r = is_whiteout(fd, &st, lk->s->userxattr);
		if (r != 0) {
			close(fd);
			return r < 0 ? r : -ENOENT;
		}
		*ret = (struct entry){ .fd = fd, .st = st, .layer = i };
		return 0;
	}
	return -ENOENT;
}

/*
 * Goes one directory down, name, in every layer still in the merge, as ovl_lookup() does: a
 * whiteout or a non-directory hides the layers below, an opaque directory ends the merge, a
 * redirect sends the layers below to another name (relative) or path (absolute, from their
 * roots: the directory was renamed after it was merged).
 */
static int step_dir(struct lookup *lk, const char *name)
{
	_cleanup_free_ char *abs = NULL, *rel = NULL;
	char v[PATH_MAX];
	bool stop = false;

	for (size_t i = 0; i < lk->s->n_merge; i++) {
		int parent = lk->dir[i];
		struct stat st;
		ssize_t n;
		int fd;

		lk->dir[i] = -1;
		if (stop || (parent < 0 && !abs)) {
			dir_put(lk, i, parent);
			continue;
		}
		fd = abs ? open_below(lk->s->fds[i], lk->dev[i], abs, true, &st)
			 : open_child(parent, lk->dev[i], rel ? rel : name, true, &st);
		dir_put(lk, i, parent);
		if (fd == -ENOENT)
			continue;
		if (fd == -ENOTDIR) { /* a whiteout or another non-directory */
			stop = true;
			continue;
		}
		if (fd < 0)
			return fd == -ENOMEM ? fd : -EXDEV;
		lk->dir[i] = fd;
		if (i + 1 == lk->s->n_merge)
			break; /* no layer below to stop or redirect */
		n = dir_xattrs(fd, lk->s->userxattr, &stop, v, sizeof(v));
		if (n < 0)
			return n;
		if (n == 0)
			continue;
		if (lk->s->redirect != OVERLAY_FOLLOW_YES)
			return -EXDEV; /* the kernel refuses the lookup (EPERM) or we cannot tell */
		if (v[0] == '/' || abs) {
			/* a relative redirect below an absolute one replaces its last name */
			char *slash = abs ? strrchr(abs, '/') : NULL;
			char *t = NULL;

			if (v[0] == '/' ? !(t = strdup(v)) :
			    asprintf(&t, "%.*s/%s", (int)(slash - abs), abs, v) < 0)
				return -ENOMEM;
			free(abs);
			abs = t;
		} else {
			free(rel);
			rel = strdup(v);
			if (!rel)
				return -ENOMEM;
		}
	}
	return 0;
}

/*
 * A metacopy file holds the metadata only; its data is in a lower layer: at its redirect
 * (absolute from the layer roots, data-only layers included, or a name in the same directory)
 * or else at the same name further down. Returns 1 and the next entry, 0 for a file with its
 * data, -EXDEV, -ENOMEM.
 */
static int next_data(struct lookup *lk, const struct entry *e, const char *name,
		     struct entry *ret)
{
	char v[PATH_MAX];
	ssize_t n;
	int r;

	if (lk->s->metacopy == OVERLAY_FOLLOW_NO)
		return 0; /* the kernel never reads the xattr: this file holds the data */
	n = ovl_xattr(e->fd, true, lk->s->userxattr, "metacopy", v, sizeof(v));
	if (n == -ENODATA)
		return 0;
	if (n < 0 || lk->s->metacopy != OVERLAY_FOLLOW_YES)
		return -EXDEV;
	n = ovl_xattr(e->fd, true, lk->s->userxattr, "redirect", v, sizeof(v));
	if (n == -EXDEV)
		return -EXDEV;
	if (n > 0 && v[0] == '/')
		r = find_entry(lk, e->layer + 1, NULL, v, ret);
	else
		r = find_entry(lk, e->layer + 1, n > 0 ? v : name, NULL, ret);
	if (r < 0)
		return r == -ENOMEM ? r : -EXDEV;
	if (!S_ISREG(ret->st.st_mode)) {
		close(ret->fd);
		return -EXDEV;
	}
	return 1;
}

static bool ino_matches(uint64_t ovl, uint64_t real)
{
	return ovl == real || (real < XINO_LOW && (ovl & (XINO_LOW - 1)) == real);
}

/*
 * Whether the file found is the overlay file's, not a namesake. overlayfs' stat of a
 * non-directory (ovl_getattr()) is the stat of the top entry (the upper file, or the lower one
 * if not copied up), except st_blocks, which is the data file's (for metacopy), st_ino, which is
 * the top entry's or that of its origin in a lower layer (a copied-up file keeps its lower
 * inode number), and st_dev, the overlay's or a pseudo device per layer (never the real one).
 * So: the top entry's mode, size and mtime (to the nanosecond) are the overlay's; the data
 * file's size and blocks too; and st_ino is the top entry's, or for an upper one that of its
 * origin (the metacopy chain below it, or the next entry of its name), up to the xino bits.
 */
static bool verify(const struct stat *ovl, const struct stat *top, const struct stat *data,
		   const uint64_t *inos, size_t n_inos)
{
	bool ino = false;

	if (top->st_mode != ovl->st_mode || top->st_size != ovl->st_size ||
	    top->st_mtim.tv_sec != ovl->st_mtim.tv_sec ||
	    top->st_mtim.tv_nsec != ovl->st_mtim.tv_nsec)
		return false;
	if (!S_ISREG(data->st_mode) || data->st_size != ovl->st_size ||
	    data->st_blocks != ovl->st_blocks)
		return false;
	for (size_t i = 0; i < n_inos; i++)
		ino = ino || ino_matches((uint64_t)ovl->st_ino, inos[i]);
	return ino;
}

/*
 * The file `name` in the directories reached: its top entry, and the entry that holds its data
 * (the same but for a metacopy file). inos gets their inode numbers, and those of the metacopy
 * chain between them (room for s->n + 1).
 */
static int find_file(struct lookup *lk, const char *name, struct entry *top, struct entry *data,
		     uint64_t *inos, size_t *n_inos)
{
	struct entry cur, next;
	int r;

	r = find_entry(lk, 0, name, NULL, top);
	if (r < 0)
		return r == -ENOMEM ? r : -EXDEV;
	if (!S_ISREG(top->st.st_mode)) {
		close(top->fd);
		return -EXDEV;
	}
	inos[(*n_inos)++] = (uint64_t)top->st.st_ino;
	cur = *top;
	/* each step goes at least one layer down: at most s->n steps */
	while ((r = next_data(lk, &cur, name, &next)) > 0) {
		if (cur.fd != top->fd)
			close(cur.fd);
		cur = next;
		inos[(*n_inos)++] = (uint64_t)cur.st.st_ino;
	}
	if (r < 0) {
		if (cur.fd != top->fd)
			close(cur.fd);
		close(top->fd);
		return r;
	}
	*data = cur;
	return 0;
}

/* The inode number of the origin of a copied-up file: the next entry of its name below. */
static void add_origin(struct lookup *lk, const struct entry *top, const char *name,
		       uint64_t *inos, size_t *n_inos)
{
	struct entry next;

	if (find_entry(lk, top->layer + 1, name, NULL, &next) < 0)
		return;
	inos[(*n_inos)++] = (uint64_t)next.st.st_ino;
	close(next.fd);
}

/*
 * Reopens an O_PATH descriptor of a regular file for cachestat (fd_dir: /proc/thread-self/fd
 * open, or -1). The link resolves to the O_PATH descriptor's own dentry, which we hold: the file
 * opened is that inode, whose fstat st is, whatever became of its name meanwhile.
 */
static int reopen(int fd_dir, int fd, const struct stat *st, int *ret_fd, struct stat *ret_st)
{
	char proc[64];
	int rfd;

	if (fd_dir >= 0) {
		snprintf(proc, sizeof(proc), "%d", fd);
		rfd = openat(fd_dir, proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	} else {
		snprintf(proc, sizeof(proc), "/proc/thread-self/fd/%d", fd);
		rfd = open(proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	}
	if (rfd < 0)
		return errno == ENOMEM ? -ENOMEM : -EXDEV;
	*ret_fd = rfd;
	*ret_st = *st;
	return 0;
}

static void lookup_done(struct lookup *lk)
{
	for (size_t i = 0; lk->dir && !lk->dir_kept && i < lk->s->n_merge; i++)
		dir_put(lk, i, lk->dir[i]);
	if (!lk->dir_kept)
		free(lk->dir);
	free(lk->dev_own);
}

/* Starts a lookup at the layer roots (borrowed); their devices are s->dev, else fstat()ed. */
/*
 * The devices of the n layer roots fds, each checked to be a directory, into *ret: allocated
 * here and the caller's to free, on failure too.
 */
static int layer_root_devs(const int *fds, size_t n, dev_t **ret)
{
	dev_t *dev = calloc(n, sizeof(*dev));

	*ret = dev;
	if (!dev)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (fstat(fds[i], &st) < 0 || !S_ISDIR(st.st_mode))
			return -EXDEV;
		dev[i] = st.st_dev;
	}
	return 0;
}

static int lookup_init(struct lookup *lk, const struct overlay_stack *s)
{
	int r;

	*lk = (struct lookup){ .s = s, .dev = s->dev };
	lk->dir = malloc(s->n_merge * sizeof(*lk->dir));
	if (!lk->dir)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_merge; i++)
		lk->dir[i] = s->fds[i];
	if (lk->dev)
		return 0;
	r = layer_root_devs(s->fds, s->n, &lk->dev_own);
	lk->dev = lk->dev_own;
	return r;
}

/* Steps through the directories of dir ("a/b", "" for none) in every layer. */
static int lookup_dirs(struct lookup *lk, const char *dir)
{
	_cleanup_free_ char *copy = strdup(dir);
	char *name, *save = NULL;
	int r;

	if (!copy)
		return -ENOMEM;
	for (name = strtok_r(copy, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
		r = step_dir(lk, name);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The file name in the directories reached, checked against ovl and reopened (see reopen()). */
static int lookup_file(struct lookup *lk, const char *name, const struct stat *ovl, int fd_dir,
		       int *ret_fd, struct stat *ret_st)
{
	_cleanup_free_ uint64_t *inos = calloc(lk->s->n + 2, sizeof(*inos));
	struct entry top, data;
	size_t n_inos = 0;
	bool ok;
	int r;

	if (!inos)
		return -ENOMEM;
	if (!*name || strchr(name, '/'))
		return -EXDEV;
	r = find_file(lk, name, &top, &data, inos, &n_inos);
	if (r < 0)
		return r;
	if (!lk->s->upper || top.layer != 0)
		n_inos = 1; /* a lower file has its own inode number, metacopy or not */
	else if (data.fd == top.fd && !ino_matches((uint64_t)ovl->st_ino, inos[0]))
		add_origin(lk, &top, name, inos, &n_inos);
	ok = verify(ovl, &top.st, &data.st, inos, n_inos);
	r = ok ? reopen(fd_dir, data.fd, &data.st, ret_fd, ret_st) : -EXDEV;
	if (data.fd != top.fd)
		close(data.fd);
	close(top.fd);
	return r;
}

/* relpath split at its last "/": its directory (in place) and its name. NULL: no name. */
static char *split_name(char *relpath)
{
	char *slash;

	while (*relpath && relpath[strlen(relpath) - 1] == '/')
		relpath[strlen(relpath) - 1] = '\0';
	slash = strrchr(relpath, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	return slash[1] ? slash + 1 : NULL;
}

int overlay_lookup(const struct overlay_stack *s, const char *relpath, const struct stat *ovl,
		   int *ret_fd, struct stat *ret_st)
{
	_cleanup_(lookup_done) struct lookup lk = { .s = s };
	_cleanup_free_ char *copy = NULL;
	char *name;
	int r;

	if (asprintf(&copy, "/%s", relpath) < 0)
		return -ENOMEM;
	name = split_name(copy);
	if (!name)
		return -EXDEV;
	r = lookup_init(&lk, s);
	if (r == 0)
		r = lookup_dirs(&lk, copy);
	if (r == 0)
		r = lookup_file(&lk, name, ovl, -1, ret_fd, ret_st);
	return r;
}

/* ---- from a process's file to its layers ---- */

bool overlay_is_overlay(int fd, const struct stat *st)
{
	struct statfs sfs;

	/* overlayfs reports an anonymous device (its own, or a pseudo one per layer): a file on a
	 * block device is not on it, and costs nothing more here */
	if (major(st->st_dev) != 0)
		return false;
	return fstatfs(fd, &sfs) == 0 && (unsigned long)sfs.f_type == OVERLAYFS_SUPER_MAGIC;
}

static int mount_id_of(int fd, int *ret)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) < 0 ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return -EXDEV;
	*ret = (int)stx.stx_mnt_id;
	return 0;
}

/* Mount id, as process pid's mountinfo describes it; -EMEDIUMTYPE when not an overlay. */
static int find_mount(int procfs_fd, pid_t pid, int id, struct mountinfo *ret)
{
	_cleanup_free_ char *buf = NULL;
	char rel[64];
	size_t len;
	int r;

	snprintf(rel, sizeof(rel), "%d/mountinfo", (int)pid);
	r = pid ? read_file_at(procfs_fd, rel, &buf, &len)
		: read_file_at(AT_FDCWD, "/proc/self/mountinfo", &buf, &len);
	if (r == -ENOENT || r == -ESRCH)
		return -ESRCH;
	if (r < 0)
		return r == -ENOMEM ? r : -EXDEV;
	r = mountinfo_find(buf, len, id, ret);
	if (r < 0)
		return r == -ENOMEM ? r : -EXDEV;
	if (strcmp(ret->fstype, "overlay") != 0) {
		mountinfo_done(ret);
		return -EMEDIUMTYPE;
	}
	return 0;
}

/*
 * The path of the file inside the overlay ("a/b/file"): path below the mount point, under the
 * mount's root (a bind mount of a directory of the overlay). NULL when path is not below it.
 */
static char *path_in_overlay(const struct mountinfo *m, const char *path)
{
	size_t n = strlen(m->mount_point);
	const char *rest;
	char *out;

	if (strcmp(m->mount_point, "/") == 0)
		rest = path;
	else if (strncmp(path, m->mount_point, n) == 0 && path[n] == '/')
		rest = path + n;
	else
		return NULL;
	if (asprintf(&out, "%s%s", m->root, rest) < 0)
		return NULL;
	return out;
}

/*
 * Whether path, from process pid's root, is the file st describes: the path is the one the
 * kernel printed for the process's descriptor, so a renamed or deleted file fails here.
 */
static int same_file_in_ns(int procfs_fd, pid_t pid, const char *path, const struct stat *st)
{
	_cleanup_free_ char *rel = NULL;
	struct stat fst;
	int r;

	/* a stat of the name, not followed if a symlink: what an O_PATH|O_NOFOLLOW open sees */
	if (pid) {
		if (asprintf(&rel, "%d/root%s", (int)pid, path) < 0)
			return -ENOMEM;
		r = fstatat(procfs_fd, rel, &fst, AT_SYMLINK_NOFOLLOW);
	} else {
		r = fstatat(AT_FDCWD, path, &fst, AT_SYMLINK_NOFOLLOW);
	}
	if (r < 0)
		return errno == ENOMEM ? -ENOMEM : -EXDEV;
	if (fst.st_dev != st->st_dev || fst.st_ino != st->st_ino)
		return -EXDEV;
	return 0;
}

/*
 * Opens a layer directory named by the mount options, from base (a root directory). Symlinks on
 * the way are followed inside that root (overlayfs followed them when it was mounted).
 */
static int open_layer(int basefd, const char *path)
{
	int fd;

	if (path[0] != '/')
		return -EXDEV; /* relative to the working directory of whoever mounted it */
	fd = openat2_path(basefd, path, O_DIRECTORY, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
	if (fd == -ENOSYS) {
		/* an absolute symlink on the way then leads out of base: the checks catch that */
		fd = openat(basefd, path + 1, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
	}
	return fd;
}

struct layer_fds {
	int *fds;
	size_t n;
};

static void layer_fds_done(struct layer_fds *l)
{
	for (size_t i = 0; i < l->n; i++)
		closep(&l->fds[i]);
	free(l->fds);
	*l = (struct layer_fds){ 0 };
}

/* Opens every layer from one root: all of them, or none. */
static int open_layers(int basefd, const struct overlay_layers *ly, struct layer_fds *ret)
{
	size_t n = (ly->upper ? 1 : 0) + ly->n_lower + ly->n_data;
	struct layer_fds l = { .fds = calloc(n, sizeof(int)) };

	if (!l.fds)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t k = ly->upper ? i - 1 : i;
		const char *path = ly->upper && i == 0 ? ly->upper
				   : k < ly->n_lower  ? ly->lower[k]
						      : ly->data[k - ly->n_lower];
		int fd = open_layer(basefd, path);

		if (fd < 0) {
			layer_fds_done(&l);
			return fd == -ENOMEM ? fd : -EXDEV;
		}
		l.fds[l.n++] = fd;
	}
	*ret = l;
	return 0;
}

/*
 * The layers opened from the root of process pid (an overlay mounted inside its container),
 * else from our own root, else from the root of pid 1 of procfs (the host, where container
 * runtimes mount, when the exporter runs in a container of its own). *base: the root that
 * worked last time for this mount, tried first (-1: none yet); set to the one that works.
 */
static int open_stack(int procfs_fd, pid_t pid, const struct overlay_layers *ly, int *base,
		      struct layer_fds *ret)
{
	int order[4] = { *base, 0, 1, 2 };
	char rel[32];
	int r = -EXDEV;

	for (size_t k = 0; k < ELEMENTSOF(order); k++) {
		_cleanup_close_ int fd = -1;
		int i = order[k];

		if (i < 0 || (k > 0 && i == *base) || (i == 0 && !pid))
			continue;
		snprintf(rel, sizeof(rel), "%d/root", i == 0 ? (int)pid : 1);
		fd = i == 1 ? open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)
			    : openat(procfs_fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			if (i == 0 && (errno == ENOENT || errno == ESRCH))
				return -ESRCH;
			continue;
		}
		r = open_layers(fd, ly, ret);
		if (r != -EXDEV) {
			if (r == 0)
				*base = i;
			return r;
		}
	}
	return r;
}


/* ---- the scan's mounts, their layers open ---- */

/* What a file on overlayfs needs of its statx: overlay_lookup()'s checks. */
#define OVERLAY_STATX_NEEDED \
	(STATX_TYPE | STATX_MODE | STATX_INO | STATX_SIZE | STATX_BLOCKS | STATX_MTIME)

/*
 * And its mount: a kernel with unique mount ids gives that one (and not the other), an older
 * one the mount id, so that no second statx asks for it.
 */
const unsigned int overlay_statx_mask = OVERLAY_STATX_NEEDED | STATX_MNT_ID | STATX_MNT_ID_UNIQUE;

/*
 * One overlay mount of a mount namespace, its layers open: what every file of the mount shares.
 * Keyed by the mount's unique id where the kernel gives one; else by its id, which a new mount
 * takes once the old one is gone, so then trusted for a second only, as the files of a process
 * come one after another (every file is still checked).
 */
struct mount_entry {
	uint64_t ns_dev, ns_ino;
	uint64_t key;       /* the unique mount id, or the mount id */
	bool unique;
	uint64_t until_ns;  /* !unique: refilled after this */
	uint64_t used;      /* the cache's tick at its last use */
	struct mountinfo m; /* its root and mount point */
	struct overlay_layers ly;
	int *fds;           /* the layer roots (struct overlay_stack's order), n of them */
	dev_t *dev;
	size_t n;
	char *dir;          /* the directory of the last file, below the overlay's root ("" none) */
	int *dir_fds;       /* it in each merge layer (lookup's dir), or NULL */
	char *path_dir;     /* the directory of the last file's path in our view (pid 0), or NULL */
	int path_dir_fd;    /* it, O_PATH */
	uint64_t path_dir_dev, path_dir_ino; /* its identity */
	size_t cost;        /* descriptors it may hold: n, n_merge for dir_fds, path_dir_fd */
};

/* At most so many mounts, holding at most so many descriptors, kept by a scan at once. */
#define OVERLAY_CACHE_MOUNTS 8
#define OVERLAY_CACHE_FDS 256

struct overlay_cache {
	struct mount_entry e[OVERLAY_CACHE_MOUNTS];
	size_t n, fds, max_layers;
	uint64_t tick;
	bool policy_read; /* the module's defaults, read once a scan */
	enum overlay_follow redirect_dir, redirect_always_follow, metacopy;
	uint64_t self_ns_dev, self_ns_ino; /* our mount namespace; 0: not read yet */
	int fd_dir;                        /* /proc/thread-self/fd, -1 until opened */
};

int overlay_cache_new(size_t max_layers, struct overlay_cache **ret)
{
	struct overlay_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->max_layers = max_layers;
	c->fd_dir = -1;
	*ret = c;
	return 0;
}

static void mount_dir_drop(struct mount_entry *e)
{
	size_t n_merge = e->n - e->ly.n_data;

	for (size_t i = 0; e->dir_fds && i < n_merge; i++)
		if (e->dir_fds[i] >= 0 && e->dir_fds[i] != e->fds[i])
			close(e->dir_fds[i]);
	free(e->dir_fds);
	free(e->dir);
	e->dir_fds = NULL;
	e->dir = NULL;
}

static void mount_path_dir_drop(struct mount_entry *e)
{
	if (e->path_dir)
		close(e->path_dir_fd);
	free(e->path_dir);
	e->path_dir = NULL;
}

static void mount_done(struct mount_entry *e)
{
	mount_dir_drop(e);
	mount_path_dir_drop(e);
	for (size_t i = 0; e->fds && i < e->n; i++)
		close(e->fds[i]);
	free(e->fds);
	free(e->dev);
	mountinfo_done(&e->m);
	overlay_layers_done(&e->ly);
	*e = (struct mount_entry){ 0 };
}

void overlay_cache_free(struct overlay_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		mount_done(&c->e[i]);
	if (c->fd_dir >= 0)
		close(c->fd_dir);
	free(c);
}

/* The entry for key in the namespace, if kept and still to be trusted. */
static struct mount_entry *cache_find(struct overlay_cache *c, const struct stat *ns, uint64_t key,
				      bool unique)
{
	uint64_t now = unique ? 0 : monotonic_ns();

	for (size_t i = 0; i < c->n; i++) {
		struct mount_entry *e = &c->e[i];

		if (e->ns_dev != (uint64_t)ns->st_dev || e->ns_ino != (uint64_t)ns->st_ino ||
		    e->key != key || e->unique != unique)
			continue;
		if (!unique && now >= e->until_ns)
			return NULL;
		e->used = ++c->tick;
		return e;
	}
	return NULL;
}

/* Drops entry i, the slot taken by the last. */
static void cache_drop(struct overlay_cache *c, size_t i)
{
	c->fds -= c->e[i].cost;
	mount_done(&c->e[i]);
	c->e[i] = c->e[--c->n];
	c->e[c->n] = (struct mount_entry){ 0 };
}

/*
 * Keeps *e (taken over, zeroed), dropping the least recently used mounts (and a stale one of the
 * same key) to stay under the caps; NULL when it alone is over them: the caller uses and frees it.
 */
static struct mount_entry *cache_put(struct overlay_cache *c, struct mount_entry *e)
{
	if (e->cost > OVERLAY_CACHE_FDS)
		return NULL;
	for (size_t i = 0; i < c->n; i++)
		if (c->e[i].ns_dev == e->ns_dev && c->e[i].ns_ino == e->ns_ino &&
		    c->e[i].key == e->key && c->e[i].unique == e->unique) {
			cache_drop(c, i);
			break;
		}
	while (c->n == OVERLAY_CACHE_MOUNTS || c->fds + e->cost > OVERLAY_CACHE_FDS) {
		size_t old = 0;

		for (size_t i = 1; i < c->n; i++)
			if (c->e[i].used < c->e[old].used)
				old = i;
		cache_drop(c, old);
	}
	e->used = ++c->tick;
	c->fds += e->cost;
	c->e[c->n] = *e;
	*e = (struct mount_entry){ 0 };
	return &c->e[c->n++];
}

/* The layer roots' devices, each checked to be a directory. */
static int layer_devs(struct mount_entry *e)
{
	return layer_root_devs(e->fds, e->n, &e->dev);
}

/*
 * Reads mount id of process pid's namespace into e: its mountinfo entry, its layers (at most
 * max_layers: -E2BIG past it), opened from the first root that has them all (open_stack()).
 */
static int mount_fill(struct overlay_cache *c, int procfs_fd, pid_t pid, int id,
		      struct mount_entry *e)
{
	struct layer_fds l = { 0 };
	int base = -1, r;

	r = find_mount(procfs_fd, pid, id, &e->m);
	if (r < 0)
		return r;
	r = overlay_parse_layers(e->m.super_options, &e->ly);
	if (r < 0)
		return r == -ENOMEM ? r : -EXDEV;
	if ((e->ly.upper ? 1 : 0) + e->ly.n_lower + e->ly.n_data > c->max_layers)
		return -E2BIG;
	if (!c->policy_read) {
		c->redirect_dir = module_param("redirect_dir");
		c->redirect_always_follow = module_param("redirect_always_follow");
		c->metacopy = module_param("metacopy");
		c->policy_read = true;
	}
	overlay_layers_policy(&e->ly, c->redirect_dir, c->redirect_always_follow, c->metacopy);
	r = open_stack(procfs_fd, pid, &e->ly, &base, &l);
	if (r < 0)
		return r;
	e->fds = l.fds;
	e->n = l.n;
	e->cost = 2 * e->n - e->ly.n_data + 1;
	return layer_devs(e);
}

/*
 * The mount of fd in namespace ns, kept or read (then kept if it fits: *ret_own set when the
 * caller must free it). stx: fd's statx, with the unique mount id where the kernel has one.
 */
static int mount_get(struct overlay_cache *c, int procfs_fd, pid_t pid, int fd,
		     const struct stat *ns, const struct statx *stx, struct mount_entry **ret,
		     struct mount_entry *own)
{
	bool unique = stx->stx_mask & STATX_MNT_ID_UNIQUE;
	struct mount_entry *e;
	int id = 0, r;

	if (!unique && (stx->stx_mask & STATX_MNT_ID))
		id = (int)stx->stx_mnt_id;
	else if (!unique && (r = mount_id_of(fd, &id)) < 0)
		return r;
	e = cache_find(c, ns, unique ? stx->stx_mnt_id : (uint64_t)id, unique);
	if (e) {
		*ret = e;
		return 0;
	}
	if (unique && (r = mount_id_of(fd, &id)) < 0)
		return r;
	*own = (struct mount_entry){ .ns_dev = (uint64_t)ns->st_dev, .ns_ino = (uint64_t)ns->st_ino,
				     .key = unique ? stx->stx_mnt_id : (uint64_t)id, .unique = unique,
				     .until_ns = unique ? 0 : monotonic_ns() + 1000000000u };
	r = mount_fill(c, procfs_fd, pid, id, own);
	if (r < 0) {
		mount_done(own);
		return r;
	}
	e = cache_put(c, own);
	*ret = e ? e : own;
	return 0;
}

/*
 * The directory of path (our own view) kept open in e for the files after it, with its
 * identity: *ret_name is path's last name. -EXDEV for a path without one.
 */
static int path_dir_here(struct mount_entry *e, const char *path, const char **ret_name)
{
	const char *slash = strrchr(path, '/');
	_cleanup_free_ char *dir = NULL;
	struct stat st;
	int fd;

	if (!slash || !slash[1] || slash == path)
		return -EXDEV;
	if (e->path_dir && strlen(e->path_dir) == (size_t)(slash - path) &&
	    strncmp(e->path_dir, path, (size_t)(slash - path)) == 0) {
		*ret_name = slash + 1;
		return 0;
	}
	dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return -ENOMEM;
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOMEM ? -ENOMEM : -EXDEV;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -EXDEV;
	}
	mount_path_dir_drop(e);
	e->path_dir = TAKE_PTR(dir);
	e->path_dir_fd = fd;
	e->path_dir_dev = (uint64_t)st.st_dev;
	e->path_dir_ino = (uint64_t)st.st_ino;
	*ret_name = slash + 1;
	return 0;
}

/*
 * same_file_in_ns() for our own view, the directory of path kept open for the files after it:
 * each file's name is then looked up in that directory, as its path named it at the scan's
 * first file there (the layers' directories are kept alike: mount_lookup()). dir: the
 * directory the caller found the file's name in (a walk's), or NULL; when it is the
 * directory path names, the name needs no second look.
 */
static int same_file_here(struct mount_entry *e, const char *path, const struct stat *st,
			  const struct stat *dir)
{
	const char *name;
	struct stat fst;
	int r;

	if (!strchr(path + 1, '/'))
		return same_file_in_ns(-1, 0, path, st);
	r = path_dir_here(e, path, &name);
	if (r < 0)
		return r;
	if (dir && (uint64_t)dir->st_dev == e->path_dir_dev &&
	    (uint64_t)dir->st_ino == e->path_dir_ino)
		return 0;
	if (fstatat(e->path_dir_fd, name, &fst, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOMEM ? -ENOMEM : -EXDEV;
	if (fst.st_dev != st->st_dev || fst.st_ino != st->st_ino)
		return -EXDEV;
	return 0;
}

/*
 * A statx (of what overlay_statx_mask asks) as the struct stat overlay_lookup() checks; -EXDEV
 * when it lacks something.
 */
static int ovl_stat_of(const struct statx *stx, struct stat *st)
{
	if ((stx->stx_mask & OVERLAY_STATX_NEEDED) != OVERLAY_STATX_NEEDED)
		return -EXDEV;
	*st = (struct stat){ .st_dev = makedev(stx->stx_dev_major, stx->stx_dev_minor),
			     .st_ino = (ino_t)stx->stx_ino, .st_mode = stx->stx_mode,
			     .st_nlink = stx->stx_nlink, .st_uid = stx->stx_uid,
			     .st_gid = stx->stx_gid, .st_size = (off_t)stx->stx_size,
			     .st_blocks = (blkcnt_t)stx->stx_blocks,
			     .st_mtim = { .tv_sec = stx->stx_mtime.tv_sec,
					  .tv_nsec = stx->stx_mtime.tv_nsec } };
	return 0;
}

/* The mount namespace of process pid (0: ours, read once a scan). */
static int ns_of(struct overlay_cache *c, int procfs_fd, pid_t pid, struct stat *ret)
{
	char rel[64];

	if (!pid && c->self_ns_ino) {
		*ret = (struct stat){ .st_dev = (dev_t)c->self_ns_dev, .st_ino = (ino_t)c->self_ns_ino };
		return 0;
	}
	snprintf(rel, sizeof(rel), "%d/ns/mnt", (int)pid);
	if (pid ? fstatat(procfs_fd, rel, ret, 0) : stat("/proc/self/ns/mnt", ret))
		return errno == ENOENT || errno == ESRCH ? -ESRCH : -EXDEV;
	if (!pid) {
		c->self_ns_dev = (uint64_t)ret->st_dev;
		c->self_ns_ino = (uint64_t)ret->st_ino;
	}
	return 0;
}

/*
 * The file inner (below the overlay's root) in mount e's layers. Files come a directory at a
 * time: the directory of the last one is kept in each layer, and stepped into again only for
 * another. Every file is still looked up by its name in it and checked against ovl.
 */
static int mount_lookup(struct overlay_cache *c, struct mount_entry *e, const char *inner,
			const struct stat *ovl, int *ret_fd, struct stat *ret_st)
{
	struct overlay_stack s = { .fds = e->fds, .dev = e->dev, .n = e->n,
				   .n_merge = e->n - e->ly.n_data, .upper = e->ly.upper != NULL,
				   .userxattr = e->ly.userxattr, .redirect = e->ly.redirect,
				   .metacopy = e->ly.metacopy };
	_cleanup_(lookup_done) struct lookup lk = { .s = &s };
	_cleanup_free_ char *copy = NULL;
	char *name;
	int r;

	if (asprintf(&copy, "/%s", inner) < 0)
		return -ENOMEM;
	name = split_name(copy);
	if (!name)
		return -EXDEV;
	if (c->fd_dir < 0)
		c->fd_dir = open("/proc/thread-self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = lookup_init(&lk, &s);
	if (r < 0)
		return r;
	if (e->dir && strcmp(e->dir, copy) == 0) {
		free(lk.dir);
		lk.dir = e->dir_fds;
		lk.dir_kept = true;
	} else if (*copy) {
		r = lookup_dirs(&lk, copy);
		if (r < 0)
			return r;
		mount_dir_drop(e);
		e->dir = TAKE_PTR(copy);
		e->dir_fds = lk.dir;
		lk.dir_kept = true;
	}
	return lookup_file(&lk, name, ovl, c->fd_dir, ret_fd, ret_st);
}

/*
 * The real file of the overlay file whose statx is stx, at path as process pid sees it (pid 0:
 * our view; dir: the directory we found its name in, or NULL). fd: a descriptor on its mount.
 */
static int resolve(struct overlay_cache *c, int procfs_fd, pid_t pid, const char *path, int fd,
		   const struct statx *stx, const struct stat *dir, int *ret_fd, struct stat *ret_st)
{
	_cleanup_(mount_done) struct mount_entry own = { 0 };
	_cleanup_free_ char *inner = NULL;
	struct mount_entry *e;
	struct stat ovl, ns;
	int r;

	r = ovl_stat_of(stx, &ovl);
	if (r < 0)
		return r;
	if (!S_ISREG(ovl.st_mode))
		return -EXDEV;
	r = ns_of(c, procfs_fd, pid, &ns);
	if (r < 0)
		return r;
	r = mount_get(c, procfs_fd, pid, fd, &ns, stx, &e, &own);
	if (r < 0)
		return r;
	inner = path_in_overlay(&e->m, path);
	if (!inner)
		return -EXDEV;
	r = pid ? same_file_in_ns(procfs_fd, pid, path, &ovl) : same_file_here(e, path, &ovl, dir);
	if (r < 0)
		return r;
	return mount_lookup(c, e, inner, &ovl, ret_fd, ret_st);
}

int overlay_resolve(struct overlay_cache *c, int procfs_fd, pid_t pid, const char *path, int fd,
		    int *ret_fd, struct stat *ret_st)
{
	struct statx stx;

	if (!path || path[0] != '/')
		return -EXDEV;
	if (statx(fd, "", AT_EMPTY_PATH, overlay_statx_mask, &stx) < 0)
		return errno == ENOMEM ? -ENOMEM : -EXDEV;
	return resolve(c, procfs_fd, pid, path, fd, &stx, NULL, ret_fd, ret_st);
}

int overlay_resolve_at(struct overlay_cache *c, int procfs_fd, int dirfd, const struct stat *dir,
		       const char *path, const struct statx *stx, int *ret_fd, struct stat *ret_st)
{
	if (!path || path[0] != '/')
		return -EXDEV;
	return resolve(c, procfs_fd, 0, path, dirfd, stx, dir, ret_fd, ret_st);
}

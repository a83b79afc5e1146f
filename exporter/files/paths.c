/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paths: the files the config names (--collector.cachestat.paths and kin): a file, a directory
 * walked recursively on its own file system without following symlinks, or a glob, expanded
 * per component with no symlink followed below its literal prefix (pathglob.h), its matches
 * visited or walked as they are found. Each file is opened O_PATH (O_NOFOLLOW where it must
 * not lead out) and admitted (admit.h) with no permission step: the operator named it. A
 * directory only root can change is walked on a cheaper path (visit_sealed()).
 */
#define _GNU_SOURCE
#include "files/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "files/admit.h"
#include "files/pathglob.h"
#include "files/quarantine.h"
#include "files/source.h"
#include "parse/config.h"

/* Directory trees deeper than this are cut (each level holds two descriptors). */
#define FILES_MAX_DEPTH 128

/* A growable path for the directory walk, so that per-file labels cost no syscall. */
struct pathbuf {
	char *s;
	size_t len;
	size_t cap;
};

static int pathbuf_push(struct pathbuf *p, const char *name, size_t *ret_oldlen)
{
	size_t n = strlen(name), need = p->len + 1 + n + 1;

	if (need > p->cap) {
		size_t ncap = p->cap ? p->cap : 256;
		char *t;

		while (ncap < need)
			ncap *= 2;
		t = realloc(p->s, ncap);
		if (!t)
			return -ENOMEM;
		p->s = t;
		p->cap = ncap;
	}
	*ret_oldlen = p->len;
	if (p->len == 0 || p->s[p->len - 1] != '/')
		p->s[p->len++] = '/';
	memcpy(p->s + p->len, name, n + 1);
	p->len += n;
	return 0;
}

static void pathbuf_pop(struct pathbuf *p, size_t oldlen)
{
	p->len = oldlen;
	p->s[oldlen] = '\0';
}

/* The file system a configured directory lives on; the walk stays on it. */
struct walk_root {
	dev_t dev;
	uint64_t mnt_id; /* QUARANTINE_NO_MOUNT: statx did not say */
	/*
	 * Whether readdir's d_ino is the inode that stat() reports, so that a file counted
	 * already (open by a process of the cgroup) can be passed over without opening it.
	 * True of the common local file systems; not of overlayfs, where d_ino may come from a
	 * lower layer.
	 */
	bool d_ino_is_st_ino;
	bool overlay; /* on overlayfs: files_visit_overlay_at() */
};

/* The walk_root facts that come from the file system's type. */
static void walk_root_fs_type(int fd, struct walk_root *root)
{
	struct statfs sfs;

	if (fstatfs(fd, &sfs) < 0)
		return;
	switch ((unsigned long)sfs.f_type) {
	case EXT4_SUPER_MAGIC: /* also ext2 and ext3 */
	case XFS_SUPER_MAGIC:
	case TMPFS_MAGIC:
	case BTRFS_SUPER_MAGIC:
		root->d_ino_is_st_ino = true;
		break;
	case OVERLAYFS_SUPER_MAGIC:
		root->overlay = true;
		break;
	default:
		break;
	}
}

static int walk_dir(struct files_ctx *ctx, int fd, const struct walk_root *root,
		    struct pathbuf *path, unsigned depth);

/*
 * A configured file, dirfd/name: opened O_PATH (nofollow: O_NOFOLLOW) and admitted, where the
 * caller deduplicated it already (claimed, by readdir's inode) as that file.
 */
static int visit_path(struct files_ctx *ctx, int dirfd, const char *name, bool nofollow,
		      const struct stat *claimed, const char *path)
{
	_cleanup_close_ int pfd = -1;

	pfd = openat(dirfd, name, O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
	return files_admit(ctx, &(const struct files_admission){
		.pfd = pfd >= 0 ? pfd : -errno,
		.piddir = -1,
		.claimed = claimed,
		.path = path,
	});
}

/*
 * Whether only root may change the entries of the directory of st (owned by root, no write
 * for group or others; a POSIX ACL granting write shows in the group bits): then no one the
 * scan guards against can swap a name between readdir and open.
 */
static bool dir_sealed(const struct stat *st)
{
	return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/*
 * The stat of a regular entry of a sealed directory opened as fd, readdir having said what it is
 * (a regular file, the inode in expect): only root can have put another file at that name since,
 * so readdir is believed and only the size is asked, by lseek, which costs half an fstat (the
 * call that fetches and copies every attribute was 7% of a scan) and fails on a FIFO or socket.
 * -ENXIO for what is no regular file.
 */
static int sealed_stat(int fd, const struct stat *expect, struct stat *ret)
{
	off_t size = lseek(fd, 0, SEEK_END);

	if (size < 0)
		return errno == ESPIPE ? -ENXIO : -errno;
	*ret = (struct stat){
		.st_dev = expect->st_dev,
		.st_ino = expect->st_ino,
		.st_mode = S_IFREG,
		.st_size = size,
	};
	return 0;
}

/*
 * A regular entry of a sealed directory, opened directly (O_NOFOLLOW): where the caller
 * deduplicated it by readdir's inode (expect), readdir is believed (sealed_stat()); else fstat
 * checks it is a regular file and gives the identity to deduplicate it by. Half the system
 * calls of visit_path()'s O_PATH open and reopen.
 */
static int visit_sealed(struct files_ctx *ctx, int dirfd, const char *name,
			const struct stat *expect, const char *path)
{
	_cleanup_close_ int fd = -1;
	struct files_entry e;
	struct stat st;
	int r;

	fd = openat(dirfd, name, FILES_OPEN_FLAGS | O_NOFOLLOW);
	if (fd < 0) {
		files_skip(ctx, files_skip_reason_of(errno));
		return 0;
	}
	if (expect) {
		r = sealed_stat(fd, expect, &st);
	} else {
		r = files_fstat(fd, &st) < 0 ? -errno : 0;
		if (r == 0 && !S_ISREG(st.st_mode))
			r = -ENXIO;
	}
	if (r < 0) {
		files_skip(ctx, r == -ENXIO ? SKIP_NOT_REGULAR : SKIP_ERROR);
		return 0;
	}
	r = files_claim(ctx, &st, expect);
	if (r <= 0)
		return r;
	e = (struct files_entry){ .fd = fd, .st = &st, .path = path };
	return files_visit_open(ctx, &e);
}

/*
 * Whether the directory open as pfd (O_PATH) may be walked: on the walk's own file system. One
 * on another mount is judged by that mount before anything asks its file system: excluded
 * (fs_type) or quarantined (mount_stuck) is skipped and counted; any other mount point is not
 * walked either. statx with AT_STATX_DONT_SYNC answers from the kernel's caches: a stopped
 * FUSE daemon or a dead server is not asked, where an open or a stat of its root would wait.
 */
static bool subdir_on_root(struct files_ctx *ctx, int pfd, const struct walk_root *root)
{
	struct statx sx;
	uint64_t mnt_id;

	if (statx(pfd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_MNT_ID, &sx) < 0) {
		files_skip(ctx, files_skip_reason_of(errno));
		return false;
	}
	if (!S_ISDIR(sx.stx_mode)) {
		files_skip(ctx, SKIP_NOT_REGULAR); /* replaced since readdir */
		return false;
	}
	mnt_id = (sx.stx_mask & STATX_MNT_ID) ? sx.stx_mnt_id : QUARANTINE_NO_MOUNT;
	/* (without a mount id, before Linux 5.8, the device alone keeps the walk on its own) */
	if (mnt_id != QUARANTINE_NO_MOUNT && mnt_id != root->mnt_id) {
		enum skip_reason why = files_mount_skip(ctx, -1, mnt_id);

		if (why == _SKIP_MAX && quarantine_holds(mnt_id))
			why = SKIP_MOUNT_STUCK;
		if (why != _SKIP_MAX) {
			files_skip(ctx, why);
			return false;
		}
	}
	return makedev(sx.stx_dev_major, sx.stx_dev_minor) == root->dev;
}

/*
 * A directory entry that is a directory: walked unless it is a mount point or too deep. Opened
 * O_PATH first, which asks its file system nothing, and judged (subdir_on_root()) before it is
 * opened for reading through that descriptor.
 */
static int walk_subdir(struct files_ctx *ctx, int dirfd, const char *name,
		       const struct walk_root *root, struct pathbuf *path, unsigned depth)
{
	_cleanup_close_ int pfd = -1, fd = -1;
	struct stat st;
	size_t oldlen;
	int r;

	if (depth >= FILES_MAX_DEPTH)
		return 0;
	pfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0) {
		files_skip(ctx, files_skip_reason_of(errno));
		return 0;
	}
	if (!subdir_on_root(ctx, pfd, root))
		return 0;
	fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		files_skip(ctx, files_skip_reason_of(errno));
		return 0;
	}
	if (files_fstat(fd, &st) < 0 || st.st_dev != root->dev)
		return 0; /* a mount point: stay on this file system */
	r = pathbuf_push(path, name, &oldlen);
	if (r < 0)
		return r;
	r = walk_dir(ctx, TAKE_FD(fd), root, path, depth + 1);
	pathbuf_pop(path, oldlen);
	return r;
}

/* A regular entry of a walk on overlayfs, in dirfd (dir). */
static int visit_overlay_entry(struct files_ctx *ctx, int dirfd, const struct stat *dir,
			       const char *name, const struct walk_root *root, const char *path)
{
	int r = files_visit_overlay_at(ctx, root->mnt_id, dirfd, dir, name, path);

	return r == -EXDEV ? visit_path(ctx, dirfd, name, true, NULL, path) : r;
}

static int walk_entry(struct files_ctx *ctx, int dirfd, const struct stat *dir,
		      const struct dircache_entry *de, const struct walk_root *root,
		      struct pathbuf *path, unsigned depth)
{
	const char *name = de->name;
	unsigned char type = de->type;
	dev_t dev = root->dev;
	struct stat expect;
	size_t oldlen;
	int r;

	if (type == DT_UNKNOWN) {
		struct statx sx;

		/* a mount point's root is not asked (walk_subdir()) */
		if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC,
			  STATX_TYPE, &sx) < 0) {
			files_skip(ctx, files_skip_reason_of(errno));
			return 0;
		}
		type = S_ISDIR(sx.stx_mode) ? DT_DIR : S_ISREG(sx.stx_mode) ? DT_REG : DT_LNK;
	}
	if (type == DT_DIR)
		return walk_subdir(ctx, dirfd, name, root, path, depth);
	if (type != DT_REG) {
		files_skip(ctx, SKIP_NOT_REGULAR);
		return 0;
	}
	if (root->d_ino_is_st_ino) {
		/* deduplicated before opening; visit_path() checks the inode is still that one */
		expect.st_dev = dev;
		expect.st_ino = de->ino;
		r = fileset_add(&ctx->seen, (uint64_t)dev, de->ino);
		if (r <= 0)
			return r;
	}
	if (!files_charge(ctx))
		return 0;
	r = pathbuf_push(path, name, &oldlen);
	if (r < 0)
		return r;
	/* O_NOFOLLOW: the entry may have been replaced by a symlink since readdir */
	if (root->overlay)
		r = visit_overlay_entry(ctx, dirfd, dir, name, root, path->s);
	else if (dir_sealed(dir))
		r = visit_sealed(ctx, dirfd, name, root->d_ino_is_st_ino ? &expect : NULL, path->s);
	else
		r = visit_path(ctx, dirfd, name, true, root->d_ino_is_st_ino ? &expect : NULL,
			       path->s);
	pathbuf_pop(path, oldlen);
	return r;
}

/* The entries of a kept listing (dircache.h). */
static int walk_listing(struct files_ctx *ctx, int fd, const struct stat *st,
			const struct dircache_listing *l, const struct walk_root *root,
			struct pathbuf *path, unsigned depth)
{
	struct dircache_entry de;
	size_t pos = 0;

	while (dircache_next(l, &pos, &de) && !files_stopped(ctx)) {
		int r = walk_entry(ctx, fd, st, &de, root, path, depth);

		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * The entries readdir gives, kept as the directory's listing when it may be (ctx->dircache,
 * a file system whose d_ino is the inode, a directory settled before the read, all of it read).
 */
static int walk_readdir(struct files_ctx *ctx, DIR *d, const struct stat *st,
			const struct walk_root *root, struct pathbuf *path, unsigned depth)
{
	_cleanup_(dircache_builder_done) struct dircache_builder b = { .overflow = true };
	struct timespec now;
	struct dirent *de;

	clock_gettime(CLOCK_REALTIME, &now);
	if (ctx->dircache && root->d_ino_is_st_ino && dircache_settled(st, &now))
		dircache_builder_init(ctx->dircache, &b);
	while ((de = readdir(d))) {
		struct dircache_entry e = { .ino = de->d_ino, .type = de->d_type, .name = de->d_name };
		int r;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (files_stopped(ctx))
			return 0; /* not all of it: not kept */
		dircache_builder_add(&b, e.ino, e.type, e.name);
		r = walk_entry(ctx, dirfd(d), st, &e, root, path, depth);
		if (r < 0)
			return r;
	}
	if (!b.overflow)
		(void)dircache_store(ctx->dircache, st, &b); /* out of memory: read again next time */
	return 0;
}

/* Takes ownership of fd. */
static int walk_dir(struct files_ctx *ctx, int fd, const struct walk_root *root,
		    struct pathbuf *path, unsigned depth)
{
	_cleanup_closedir_ DIR *d = NULL;
	const struct dircache_listing *l = NULL;
	struct stat st;

	if (files_fstat(fd, &st) < 0) {
		close(fd);
		files_skip(ctx, SKIP_ERROR);
		return 0;
	}
	if (ctx->dircache && root->d_ino_is_st_ino)
		l = dircache_find(ctx->dircache, &st);
	if (l) {
		int r = walk_listing(ctx, fd, &st, l, root, path, depth);

		close(fd);
		return r;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		files_skip(ctx, SKIP_ERROR);
		return 0;
	}
	return walk_readdir(ctx, d, &st, root, path, depth);
}

/*
 * A directory to walk, open as fd (taken), whose path is name: not on an excluded file system,
 * and walked on its own.
 */
static int walk_root_dir(struct files_ctx *ctx, int fd, const char *name)
{
	struct pathbuf path = { 0 };
	struct walk_root root;
	uint64_t mnt_id;
	struct stat st;
	int r;

	r = files_stat_opath(fd, &st, &mnt_id);
	if (r < 0 || files_mount_excluded(ctx, -1, mnt_id)) {
		close(fd);
		files_skip(ctx, r < 0 ? SKIP_ERROR : SKIP_FS_TYPE);
		return 0;
	}
	path.s = strdup(name);
	if (!path.s) {
		close(fd);
		return -ENOMEM;
	}
	path.len = strlen(name);
	path.cap = path.len + 1;
	while (path.len > 1 && path.s[path.len - 1] == '/')
		path.s[--path.len] = '\0';
	root = (struct walk_root){ .dev = st.st_dev, .mnt_id = mnt_id };
	walk_root_fs_type(fd, &root);
	r = walk_dir(ctx, fd, &root, &path, 0);
	free(path.s);
	return r;
}

/* One name from the config that is no glob, followed if a symlink: the operator named it. */
static int walk_one_path(struct files_ctx *ctx, const char *name)
{
	struct stat st;
	int fd;

	if (stat(name, &st) < 0) {
		files_skip(ctx, errno == ENOENT ? SKIP_NOT_FOUND : files_skip_reason_of(errno));
		return 0;
	}
	if (S_ISREG(st.st_mode)) {
		if (!files_charge(ctx))
			return 0;
		return visit_path(ctx, AT_FDCWD, name, false, NULL, name);
	}
	if (!S_ISDIR(st.st_mode)) {
		files_skip(ctx, SKIP_NOT_REGULAR);
		return 0;
	}
	fd = open(name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		files_skip(ctx, files_skip_reason_of(errno));
		return 0;
	}
	return walk_root_dir(ctx, fd, name);
}

/* Whether a configured path lies on an excluded file system (before anything touches it). */
static bool path_excluded(struct files_ctx *ctx, const char *path)
{
	if (!ctx->fstypes || !ctx->fstypes->active)
		return false;
	files_load_mounts(ctx);
	return fstypes_path_excluded(ctx->fstypes, path);
}

/*
 * Whether the configured path (or pattern) may be looked up: not on an excluded file system, nor
 * on a mount a scan left behind is stuck on. Its mount is then entered (quarantine.h): the
 * lookup and the walk wait on it. *outer: what quarantine_leave() restores.
 */
static bool path_enter(struct files_ctx *ctx, const char *path, uint64_t *outer)
{
	uint64_t mnt_id;

	if (path_excluded(ctx, path)) {
		files_skip(ctx, SKIP_FS_TYPE);
		return false;
	}
	mnt_id = QUARANTINE_NO_MOUNT;
	if (ctx->fstypes) {
		/* path_excluded() loads the tables only when something is excluded */
		files_load_mounts(ctx);
		mnt_id = fstypes_path_mount(ctx->fstypes, path);
	}
	if (quarantine_holds(mnt_id)) {
		files_skip(ctx, SKIP_MOUNT_STUCK);
		return false;
	}
	*outer = quarantine_enter(mnt_id);
	return true;
}

static int scan_one_path(struct files_ctx *ctx, const char *name)
{
	uint64_t outer;
	int r;

	if (files_stopped(ctx) || !path_enter(ctx, name, &outer))
		return 0;
	r = walk_one_path(ctx, name);
	quarantine_leave(outer);
	return r;
}

/* ---- a glob, expanded per component (pathglob.h) ---- */

static int glob_enter_mount(void *arg, uint64_t mnt_id, uint64_t *ret_token)
{
	struct files_ctx *ctx = arg;

	if (files_mount_excluded(ctx, -1, mnt_id))
		return -EXDEV;
	if (quarantine_holds(mnt_id))
		return -EBUSY;
	*ret_token = quarantine_enter(mnt_id);
	return 0;
}

static void glob_leave_mount(void *arg, uint64_t token)
{
	(void)arg;
	quarantine_leave(token);
}

static bool glob_stopped(void *arg)
{
	return !files_in_time(arg);
}

static void glob_skipped(void *arg, int err)
{
	errno = -err; /* for the skip hook */
	files_skip(arg, err == -EXDEV ? SKIP_FS_TYPE
			: err == -EBUSY ? SKIP_MOUNT_STUCK
					: files_skip_reason_of(-err));
}

/*
 * A match: a directory, walked; a regular file of a directory only root can change, opened
 * directly as the walk opens one (visit_sealed(): readdir's type is believed there); anything
 * else opened O_PATH and O_NOFOLLOW, and admitted.
 */
static int glob_matched(void *arg, const struct pathglob_match *m)
{
	struct files_ctx *ctx = arg;
	const struct stat dir = { .st_uid = m->dir_uid, .st_mode = m->dir_mode };

	if (m->fd >= 0)
		return walk_root_dir(ctx, m->fd, m->path);
	if (!files_charge(ctx))
		return 0;
	if (m->type == DT_REG && dir_sealed(&dir))
		return visit_sealed(ctx, m->dirfd, m->name, NULL, m->path);
	return visit_path(ctx, m->dirfd, m->name, true, NULL, m->path);
}

static const struct pathglob_ops glob_ops = {
	.enter_mount = glob_enter_mount,
	.leave_mount = glob_leave_mount,
	.stopped = glob_stopped,
	.matched = glob_matched,
	.skipped = glob_skipped,
};

int files_scan_path(struct files_ctx *ctx, const char *pattern)
{
	struct pathglob g = { .ops = &glob_ops, .arg = ctx, .max_entries = ctx->glob_max_entries };
	_cleanup_free_ char *prefix = NULL;
	uint64_t outer;
	int r;

	ctx->pid = 0;
	if (!config_path_is_glob(pattern))
		return scan_one_path(ctx, pattern);
	/* the prefix is looked up by its name: not on an excluded or stuck file system */
	prefix = strndup(pattern, pathglob_prefix_len(pattern));
	if (!prefix)
		return -ENOMEM;
	if (files_stopped(ctx) || !path_enter(ctx, prefix, &outer))
		return 0;
	r = pathglob_expand(&g, pattern);
	quarantine_leave(outer);
	if (g.capped && !ctx->glob_capped)
		ctx->glob_capped = pattern;
	if (r == -EINVAL) {
		files_skip(ctx, SKIP_ERROR);
		return 0;
	}
	return r;
}

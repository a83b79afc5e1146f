/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/pidfd.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <time.h>

#include "config.h"
#include "overlay.h"
#include "util.h"

/* Directory trees deeper than this are cut (each level holds two descriptors). */
#define FILES_MAX_DEPTH 128

/*
 * O_NONBLOCK: a FIFO or a device that slipped past the type check must not hang the scan.
 * No O_NOATIME: open, fstat, cachestat and close never change atime (only reading the data or
 * mapping it does, which the scan never does), and O_NOATIME would cost a permission check
 * (ownership or CAP_FOWNER) on every file.
 */
#define FILES_OPEN_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)

uint64_t files_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * fstat() through the plain system call: glibc >= 2.33 makes fstat() an fstatat(fd, "",
 * AT_EMPTY_PATH), which costs the kernel a path copy and lookup; once per file in a scan that
 * is measurable. x86_64's and the generic struct stat are the kernel's.
 */
static int fstat_fd(int fd, struct stat *st)
{
#if defined(SYS_fstat) && (defined(__x86_64__) || defined(__aarch64__))
	return (int)syscall(SYS_fstat, fd, st);
#else
	return fstat(fd, st);
#endif
}

static void skip(struct files_ctx *ctx, enum skip_reason r)
{
	ctx->skipped[r]++;
}

static enum skip_reason skip_reason_of(int err)
{
	switch (err) {
	case EPERM:
	case EACCES:
		return SKIP_EPERM;
	case ENOENT:
	case ESTALE:
	case ESRCH: /* the process exited while its fd or map_files entry was being opened */
		return SKIP_VANISHED;
	case ENXIO:
	case ELOOP:
	case ENOTDIR:
	case EISDIR:
		return SKIP_NOT_REGULAR;
	case EMFILE: /* RLIMIT_NOFILE: the scan goes on, one descriptor at a time */
	case ENFILE:
		return SKIP_LIMIT;
	default:
		return SKIP_ERROR;
	}
}

/* Whether another file may be opened: the budget and the clock. */
static bool admit(struct files_ctx *ctx)
{
	if (ctx->timed_out)
		return false;
	if (ctx->deadline_ns && files_now_ns() > ctx->deadline_ns) {
		ctx->timed_out = true;
		return false;
	}
	if (ctx->budget == 0) {
		skip(ctx, SKIP_LIMIT);
		return false;
	}
	return true;
}

/* fstat()s an open descriptor: true for a regular file, else counts the skip. */
static bool fstat_regular(struct files_ctx *ctx, int fd, struct stat *st)
{
	if (fstat_fd(fd, st) < 0) {
		skip(ctx, SKIP_ERROR);
		return false;
	}
	if (!S_ISREG(st->st_mode)) {
		skip(ctx, SKIP_NOT_REGULAR);
		return false;
	}
	return true;
}

/*
 * Adds a file to the cgroup's set and asks for a place in the budget: 1 when the file is new
 * and may be looked at, 0 when it was counted already or may not be (then the skip is
 * counted), or -ENOMEM.
 */
static int claim(struct files_ctx *ctx, const struct stat *st)
{
	int r = fileset_add(&ctx->seen, (uint64_t)st->st_dev, (uint64_t)st->st_ino);

	if (r <= 0)
		return r;
	return admit(ctx) ? 1 : 0;
}

/*
 * A file on overlayfs: cachestat(2) of the overlay inode sees no pages (they are on the real
 * upper or lower inode), so the real file is visited in its place, deduplicated by its own
 * (dev, ino); one that cannot be found for sure is skipped, never counted as a zero.
 */
static int visit_overlay(struct files_ctx *ctx, const struct files_entry *e)
{
	char link[64], name[PATH_MAX];
	_cleanup_close_ int fd = -1;
	struct files_entry real = *e;
	struct stat st;
	int pid = 0, r;
	ssize_t n;

	/* the path as the kernel prints it for our descriptor: the process's, for its files */
	snprintf(link, sizeof(link), "/proc/self/fd/%d", e->fd);
	n = readlink(link, name, sizeof(name) - 1);
	if (n < 0) {
		skip(ctx, SKIP_OVERLAY_UNRESOLVED);
		return 0;
	}
	name[n] = '\0';
	if (e->proc_link && sscanf(e->proc_link, "%d/", &pid) != 1)
		pid = 0;
	r = overlay_resolve(ctx->procfs_fd, pid, name, e->fd, e->st, &fd, &st);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		skip(ctx, r == -ESRCH ? SKIP_VANISHED : SKIP_OVERLAY_UNRESOLVED);
		return 0;
	}
	r = fileset_add(&ctx->seen, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
	if (r <= 0)
		return r;
	real.fd = fd;
	real.st = &st;
	return ctx->visit(ctx, &real);
}

/* Hands an open regular file to the visitor. */
static int visit_open(struct files_ctx *ctx, const struct files_entry *e)
{
	if (overlay_is_overlay(e->fd, e->st))
		return visit_overlay(ctx, e);
	return ctx->visit(ctx, e);
}

/*
 * Opens dirfd/name, checks it is the regular file expect describes (when given: the caller
 * deduplicated it already) and visits it. The descriptor is closed before returning.
 */
static int visit_file(struct files_ctx *ctx, int dirfd, const char *name, int extra,
		      const struct stat *expect, const char *path, const char *proc_link,
		      bool map_files)
{
	_cleanup_close_ int fd = -1;
	struct files_entry e;
	struct stat st;

	fd = openat(dirfd, name, FILES_OPEN_FLAGS | extra);
	if (fd < 0) {
		if (map_files && files_map_files_closed(errno))
			return -EPERM;
		skip(ctx, skip_reason_of(errno));
		return 0;
	}
	ctx->budget--;
	if (!fstat_regular(ctx, fd, &st))
		return 0;
	if (expect) {
		/* The fd number or the mapping was reused for another file since the stat. */
		if (st.st_dev != expect->st_dev || st.st_ino != expect->st_ino) {
			skip(ctx, SKIP_VANISHED);
			return 0;
		}
	} else {
		int r = fileset_add(&ctx->seen, (uint64_t)st.st_dev, (uint64_t)st.st_ino);

		if (r < 0)
			return r;
		if (r == 0)
			return 0;
	}
	e = (struct files_entry){ .fd = fd, .st = &st, .path = path, .proc_link = proc_link };
	return visit_open(ctx, &e);
}

bool files_map_files_closed(int err)
{
	/*
	 * Following a map_files link needs CAP_CHECKPOINT_RESTORE (or CAP_SYS_ADMIN) in the
	 * initial user namespace: without it, listing the directory still works but every stat
	 * or open of an entry fails with EPERM. Not being allowed to read one file is EACCES,
	 * and the ptrace check on the process fails the directory itself.
	 */
	return err == EPERM;
}

/*
 * Visits the file behind a proc link (an fd or map_files entry). The link is stat()ed first: a
 * device must never be opened (opening some, like a watchdog, has effects), and a file seen
 * already is not opened again. With map_files set, an error that means the directory is closed
 * to us is returned (-EPERM) rather than counted, so that the caller reads maps instead.
 */
static int visit_proc_link(struct files_ctx *ctx, int dirfd, const char *name,
			   const char *proc_link, bool map_files)
{
	struct stat st;
	int r;

	if (fstatat(dirfd, name, &st, 0) < 0) {
		if (map_files && files_map_files_closed(errno))
			return -EPERM;
		skip(ctx, skip_reason_of(errno));
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		skip(ctx, SKIP_NOT_REGULAR);
		return 0;
	}
	r = claim(ctx, &st);
	if (r <= 0)
		return r;
	return visit_file(ctx, dirfd, name, 0, &st, NULL, proc_link, map_files);
}

/*
 * Visits the file behind descriptor targetfd of the process pidfd refers to, duplicated with
 * pidfd_getfd(2): nothing is opened (no device open, no FIFO to block on, no atime), and it
 * costs one call where the proc link costs a stat and a reopen. Returns -EPERM or -ENOSYS when
 * the caller should use the proc link instead, else 0 or a fatal -errno.
 */
static int visit_getfd(struct files_ctx *ctx, int pidfd, int targetfd, const char *proc_link)
{
	_cleanup_close_ int fd = -1;
	struct files_entry e;
	struct stat st;
	int r;

	fd = pidfd_getfd(pidfd, targetfd, 0);
	if (fd < 0) {
		if (errno == EPERM || errno == ENOSYS)
			return -errno;
		skip(ctx, errno == EBADF || errno == ESRCH ? SKIP_VANISHED : skip_reason_of(errno));
		return 0;
	}
	if (!fstat_regular(ctx, fd, &st))
		return 0;
	/* an O_PATH descriptor cannot be asked about its pages: reopen it through proc */
	if (fcntl(fd, F_GETFL) & O_PATH)
		return -EPERM;
	r = claim(ctx, &st);
	if (r <= 0)
		return r;
	ctx->budget--;
	e = (struct files_entry){ .fd = fd, .st = &st, .proc_link = proc_link };
	return visit_open(ctx, &e);
}

/* A descriptor number as /proc/PID/fd names it. */
static bool parse_fd(const char *s, int *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > INT_MAX)
		return false;
	*ret = (int)v;
	return true;
}

/* Whether procfs_fd is the procfs of our own pid namespace, where pids mean what they say. */
static bool procfs_is_ours(int procfs_fd)
{
	char buf[32], want[32];
	ssize_t n;

	n = readlinkat(procfs_fd, "self", buf, sizeof(buf) - 1);
	if (n < 0)
		return false;
	buf[n] = '\0';
	snprintf(want, sizeof(want), "%d", (int)getpid());
	return strcmp(buf, want) == 0;
}

/*
 * Every entry of PID/SUB (fd or map_files). -errno when the directory cannot be opened, and
 * -EPERM when map_files can be listed but its entries cannot be followed.
 */
static int scan_proc_dir(struct files_ctx *ctx, pid_t pid, const char *sub)
{
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_close_ int pidfd = -1;
	char rel[64], link[64 + 256 + 2];
	bool map_files = strcmp(sub, "map_files") == 0;
	struct dirent *de;
	size_t rel_len;
	int fd;

	if (!map_files) {
		if (ctx->getfd == FILES_GETFD_UNKNOWN)
			ctx->getfd = procfs_is_ours(ctx->procfs_fd) ? FILES_GETFD_YES : FILES_GETFD_NO;
		if (ctx->getfd == FILES_GETFD_YES)
			pidfd = pidfd_open(pid, 0);
	}

	rel_len = (size_t)snprintf(rel, sizeof(rel), "%d/%s/", (int)pid, sub);
	memcpy(link, rel, rel_len);
	rel[rel_len - 1] = '\0';
	fd = openat(ctx->procfs_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		int err = errno;

		close(fd);
		return -err;
	}
	while ((de = readdir(d))) {
		int r, target;

		if (de->d_name[0] == '.')
			continue;
		if (ctx->timed_out)
			break;
		/* "PID/SUB/" is in place: an entry costs a copy of its name, not a snprintf() */
		memcpy(link + rel_len, de->d_name, strnlen(de->d_name, sizeof(de->d_name) - 1) + 1);
		if (pidfd >= 0 && parse_fd(de->d_name, &target)) {
			r = visit_getfd(ctx, pidfd, target, link);
			if (r == -ENOSYS)
				ctx->getfd = FILES_GETFD_NO;
			if (r == -EPERM || r == -ENOSYS)
				r = visit_proc_link(ctx, dirfd(d), de->d_name, link, false);
		} else {
			r = visit_proc_link(ctx, dirfd(d), de->d_name, link, map_files);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Where map_files is closed to us (following its links needs CAP_CHECKPOINT_RESTORE), the file
 * mappings come from PID/maps: "start-end perms offset major:minor inode path". A mapping of a
 * deleted file cannot be reached that way; it is counted as vanished.
 */
static int scan_maps(struct files_ctx *ctx, pid_t pid)
{
	_cleanup_free_ char *buf = NULL;
	char rel[64];
	size_t len;
	char *line, *save = NULL;
	int r;

	snprintf(rel, sizeof(rel), "%d/maps", (int)pid);
	r = read_file_at(ctx->procfs_fd, rel, &buf, &len);
	if (r < 0)
		return r == -ENOENT || r == -ESRCH ? 0 : r;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned maj, min;
		unsigned long long ino;
		int off = 0;
		const char *path;
		struct stat st;

		if (sscanf(line, "%*s %*s %*s %x:%x %llu %n", &maj, &min, &ino, &off) != 3 ||
		    off == 0 || ino == 0)
			continue;
		path = line + off;
		if (path[0] != '/')
			continue;
		if (fileset_contains(&ctx->seen, (uint64_t)makedev(maj, min), ino))
			continue;
		{
			size_t n = strlen(path);
			static const char deleted[] = " (deleted)";

			if (n > sizeof(deleted) - 1 &&
			    strcmp(path + n - (sizeof(deleted) - 1), deleted) == 0) {
				skip(ctx, SKIP_VANISHED);
				continue;
			}
		}
		if (stat(path, &st) < 0) {
			skip(ctx, skip_reason_of(errno));
			continue;
		}
		if (!S_ISREG(st.st_mode)) {
			skip(ctx, SKIP_NOT_REGULAR);
			continue;
		}
		if (st.st_ino != ino) {
			skip(ctx, SKIP_VANISHED);
			continue;
		}
		r = fileset_add(&ctx->seen, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
		if (r < 0)
			return r;
		if (r == 0)
			continue;
		/* maps prints the device the kernel keeps; remember that form too */
		r = fileset_add(&ctx->seen, (uint64_t)makedev(maj, min), ino);
		if (r < 0)
			return r;
		if (!admit(ctx))
			continue;
		r = visit_file(ctx, AT_FDCWD, path, 0, &st, path, NULL, false);
		if (r < 0)
			return r;
	}
	return 0;
}

int files_scan_pid(struct files_ctx *ctx, pid_t pid)
{
	int r;

	r = scan_proc_dir(ctx, pid, "fd");
	if (r < 0 && r != -ENOENT && r != -ESRCH && r != -EACCES && r != -EPERM)
		return r;
	if (r == -ENOENT || r == -ESRCH)
		return 0; /* exited */
	/*
	 * map_files reaches mappings of deleted files too, but needs CAP_CHECKPOINT_RESTORE; the
	 * capability is the same for every process, so once refused it is not tried again in
	 * this scan.
	 */
	r = -EPERM;
	if (!ctx->map_files_closed)
		r = scan_proc_dir(ctx, pid, "map_files");
	if (r == -EPERM)
		ctx->map_files_closed = true;
	if (r == -EPERM || r == -EACCES)
		r = scan_maps(ctx, pid);
	if (r == -ENOENT || r == -ESRCH)
		return 0;
	return r;
}

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
	/*
	 * Whether readdir's d_ino is the inode that stat() reports, so that a file counted
	 * already (open by a process of the cgroup) can be passed over without opening it.
	 * True of the common local file systems; not of overlayfs, where d_ino may come from a
	 * lower layer.
	 */
	bool d_ino_is_st_ino;
};

static bool fs_d_ino_is_st_ino(int fd)
{
	struct statfs sfs;

	if (fstatfs(fd, &sfs) < 0)
		return false;
	switch ((unsigned long)sfs.f_type) {
	case EXT4_SUPER_MAGIC: /* also ext2 and ext3 */
	case XFS_SUPER_MAGIC:
	case TMPFS_MAGIC:
	case BTRFS_SUPER_MAGIC:
		return true;
	default:
		return false;
	}
}

static int walk_dir(struct files_ctx *ctx, int fd, const struct walk_root *root,
		    struct pathbuf *path, unsigned depth);

static int walk_entry(struct files_ctx *ctx, int dirfd, const struct dirent *de,
		      const struct walk_root *root, struct pathbuf *path, unsigned depth)
{
	const char *name = de->d_name;
	unsigned char type = de->d_type;
	dev_t dev = root->dev;
	struct stat expect;
	size_t oldlen;
	int r;

	if (type == DT_UNKNOWN) {
		struct stat st;

		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			skip(ctx, skip_reason_of(errno));
			return 0;
		}
		type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
	}
	if (type == DT_DIR) {
		_cleanup_close_ int fd = -1;
		struct stat st;

		if (depth >= FILES_MAX_DEPTH)
			return 0;
		fd = openat(dirfd, name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0) {
			skip(ctx, skip_reason_of(errno));
			return 0;
		}
		if (fstat(fd, &st) < 0 || st.st_dev != dev)
			return 0; /* a mount point: stay on this file system */
		r = pathbuf_push(path, name, &oldlen);
		if (r < 0)
			return r;
		r = walk_dir(ctx, TAKE_FD(fd), root, path, depth + 1);
		pathbuf_pop(path, oldlen);
		return r;
	}
	if (type != DT_REG) {
		skip(ctx, SKIP_NOT_REGULAR);
		return 0;
	}
	if (root->d_ino_is_st_ino) {
		/* deduplicated before opening; visit_file() checks the inode is still that one */
		expect.st_dev = dev;
		expect.st_ino = de->d_ino;
		r = fileset_add(&ctx->seen, (uint64_t)dev, (uint64_t)de->d_ino);
		if (r <= 0)
			return r;
	}
	if (!admit(ctx))
		return 0;
	r = pathbuf_push(path, name, &oldlen);
	if (r < 0)
		return r;
	/* O_NOFOLLOW: the entry may have been replaced by a symlink since readdir */
	r = visit_file(ctx, dirfd, name, O_NOFOLLOW, root->d_ino_is_st_ino ? &expect : NULL,
		       path->s, NULL, false);
	pathbuf_pop(path, oldlen);
	return r;
}

/* Takes ownership of fd. */
static int walk_dir(struct files_ctx *ctx, int fd, const struct walk_root *root,
		    struct pathbuf *path, unsigned depth)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;

	d = fdopendir(fd);
	if (!d) {
		close(fd);
		skip(ctx, SKIP_ERROR);
		return 0;
	}
	while ((de = readdir(d))) {
		int r;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (ctx->timed_out)
			break;
		r = walk_entry(ctx, dirfd(d), de, root, path, depth);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * One name from the config, followed if a symlink (the user named it), or a match of a glob,
 * not followed if a symlink: a link planted in a globbed directory must not lead the scan out
 * of it (nofollow).
 */
static int scan_one_path(struct files_ctx *ctx, const char *name, bool nofollow)
{
	struct pathbuf path = { 0 };
	struct walk_root root;
	struct stat st;
	int fd, r;

	if ((nofollow ? lstat(name, &st) : stat(name, &st)) < 0) {
		skip(ctx, errno == ENOENT ? SKIP_NOT_FOUND : skip_reason_of(errno));
		return 0;
	}
	if (S_ISREG(st.st_mode)) {
		if (!admit(ctx))
			return 0;
		return visit_file(ctx, AT_FDCWD, name, nofollow ? O_NOFOLLOW : 0, NULL, name, NULL,
				  false);
	}
	if (!S_ISDIR(st.st_mode)) {
		skip(ctx, SKIP_NOT_REGULAR);
		return 0;
	}
	fd = open(name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK | (nofollow ? O_NOFOLLOW : 0));
	if (fd < 0) {
		skip(ctx, skip_reason_of(errno));
		return 0;
	}
	if (fstat(fd, &st) < 0) {
		close(fd);
		skip(ctx, SKIP_ERROR);
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
	root = (struct walk_root){ .dev = st.st_dev, .d_ino_is_st_ino = fs_d_ino_is_st_ino(fd) };
	r = walk_dir(ctx, fd, &root, &path, 0);
	free(path.s);
	return r;
}

int files_scan_path(struct files_ctx *ctx, const char *pattern)
{
	glob_t g;
	int r;

	if (!config_path_is_glob(pattern))
		return scan_one_path(ctx, pattern, false);

	r = glob(pattern, GLOB_NOSORT, NULL, &g);
	if (r == GLOB_NOMATCH)
		return 0;
	if (r == GLOB_NOSPACE)
		return -ENOMEM;
	if (r != 0) {
		skip(ctx, SKIP_ERROR);
		return 0;
	}
	r = 0;
	for (size_t i = 0; i < g.gl_pathc && r >= 0 && !ctx->timed_out; i++)
		r = scan_one_path(ctx, g.gl_pathv[i], true);
	globfree(&g);
	return r;
}

char *files_entry_name(const struct files_ctx *ctx, const struct files_entry *e)
{
	char buf[PATH_MAX];
	ssize_t n;

	if (e->path)
		return strdup(e->path);
	if (!e->proc_link)
		return NULL;
	n = readlinkat(ctx->procfs_fd, e->proc_link, buf, sizeof(buf) - 1);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return strdup(buf);
}

/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "files/files.h"

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

#include "base/util.h"
#include "files/overlay.h"
#include "files/quarantine.h"
#include "parse/config.h"

/* Directory trees deeper than this are cut (each level holds two descriptors). */
#define FILES_MAX_DEPTH 128

/*
 * O_NONBLOCK: a FIFO or a device that slipped past the type check must not hang the scan.
 * No O_NOATIME: open, fstat, cachestat and close never change atime (only reading the data or
 * mapping it does, which the scan never does), and O_NOATIME would cost a permission check
 * (ownership or CAP_FOWNER) on every file.
 */
#define FILES_OPEN_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)

/*
 * Files from this size on have their cachestat answer remembered for the scan: the call visits
 * every cached page (about 17 us per MiB here), more than the open it spares as well; smaller
 * files would fill the table for little.
 */
#define FILES_CACHE_MIN_SIZE (1 << 20)

/*
 * The clock is read at every so many files charged, not at each: a scan's files cost
 * microseconds each, and reading the clock in a guest was 0.6% of a scan.
 */
#define FILES_CLOCK_EVERY 16

uint64_t files_now_ns(void)
{
	return monotonic_ns();
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
	int err = errno;

	ctx->skipped[r]++;
	if (ctx->on_skip)
		ctx->on_skip(ctx, r, err);
	errno = err;
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

void files_cgroup_begin(struct files_ctx *ctx, uint64_t budget, size_t cgroups_left)
{
	uint64_t now = files_now_ns();

	ctx->budget = budget;
	ctx->slice_out = false;
	ctx->clock_skip = 0;
	ctx->slice_deadline_ns = 0;
	if (ctx->deadline_ns > now) {
		uint64_t left = ctx->deadline_ns - now, n = cgroups_left ? cgroups_left : 1;
		uint64_t keep = ctx->reserve_ns * (n - 1), equal = left / n;

		ctx->slice_deadline_ns = now + (left > keep && left - keep > equal ? left - keep : equal);
	}
	fileset_clear(&ctx->seen);
}

bool files_stopped(const struct files_ctx *ctx)
{
	return ctx->timed_out || ctx->slice_out;
}

void files_ctx_done(struct files_ctx *ctx)
{
	if (ctx->self_fd_dir > 0)
		close(ctx->self_fd_dir);
	ctx->self_fd_dir = 0;
	fileset_done(&ctx->seen);
	filecache_done(&ctx->cache);
	if (ctx->fstypes)
		fstypes_reset(ctx->fstypes);
}

/*
 * Whether the scan and this cgroup's share still have time, the clock being read at a cgroup's
 * first file and then every FILES_CLOCK_EVERY; sets timed_out or slice_out when not.
 */
static bool in_time(struct files_ctx *ctx)
{
	uint64_t now;

	if (ctx->clock_skip > 0) {
		ctx->clock_skip--;
		return true;
	}
	ctx->clock_skip = FILES_CLOCK_EVERY - 1;
	now = files_now_ns();
	if (ctx->deadline_ns && now > ctx->deadline_ns)
		ctx->timed_out = true;
	else if (ctx->slice_deadline_ns && now > ctx->slice_deadline_ns)
		ctx->slice_out = true;
	return !files_stopped(ctx);
}

/*
 * Charges one descriptor, mapping or file to the cgroup's budget, every duplicate included
 * (each costs system calls), and checks the time: false when the cgroup may look at no more
 * (over the budget: counted as a limit skip).
 */
static bool charge(struct files_ctx *ctx)
{
	if (files_stopped(ctx) || !in_time(ctx))
		return false;
	if (ctx->budget == 0) {
		skip(ctx, SKIP_LIMIT);
		return false;
	}
	ctx->budget--;
	return true;
}

/*
 * stat of what an O_PATH descriptor refers to, without asking its file system anything it
 * has not cached (AT_STATX_DONT_SYNC: a hung NFS server or FUSE daemon is not asked), with the
 * id of its mount. -errno on failure.
 */
static int stat_opath(int fd, struct stat *st, uint64_t *ret_mnt_id)
{
	struct statx sx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC,
		  STATX_TYPE | STATX_MODE | STATX_UID | STATX_GID | STATX_INO | STATX_SIZE |
			  STATX_MNT_ID,
		  &sx) < 0)
		return -errno;
	*st = (struct stat){
		.st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor),
		.st_ino = sx.stx_ino,
		.st_mode = sx.stx_mode,
		.st_uid = sx.stx_uid,
		.st_gid = sx.stx_gid,
		.st_size = (off_t)sx.stx_size,
	};
	*ret_mnt_id = (sx.stx_mask & STATX_MNT_ID) ? sx.stx_mnt_id : UINT64_MAX;
	return 0;
}

static int load_mountinfo(struct files_ctx *ctx, int dirfd, const char *name, bool points)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = read_file_at(dirfd, name, &buf, &len);
	if (r < 0)
		return r;
	return fstypes_add_mountinfo(ctx->fstypes, buf, len, points);
}

/*
 * Once per scan: the host's mount table (pid 1's, where container runtimes mount the layers of
 * the overlays they give containers), then our own. Unreadable, a table is left out: the
 * mounts it would have named are then unknown, and excluded.
 */
static void load_self(struct files_ctx *ctx)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;

	if (ctx->fstypes->loaded_self)
		return;
	ctx->fstypes->loaded_self = true;
	if (read_file_at(ctx->procfs_fd, "1/mountinfo", &buf, &len) == 0)
		fstypes_set_host_mountinfo(ctx->fstypes, buf, len);
	load_mountinfo(ctx, ctx->procfs_fd, "self/mountinfo", true);
}

/*
 * Whether a file on mount mnt_id must not be touched. A mount not in our mountinfo is looked
 * up in that of the process holding it (piddir, or -1); one found nowhere (detached) is
 * excluded, as what cannot be named cannot be cleared.
 */
static bool mount_excluded(struct files_ctx *ctx, int piddir, uint64_t mnt_id)
{
	int r;

	if (!ctx->fstypes || !ctx->fstypes->active)
		return false;
	r = fstypes_mount_excluded(ctx->fstypes, mnt_id);
	if (r == -ENOENT && !ctx->fstypes->loaded_self) {
		load_self(ctx);
		r = fstypes_mount_excluded(ctx->fstypes, mnt_id);
	}
	if (r == -ENOENT && piddir >= 0) {
		load_mountinfo(ctx, piddir, "mountinfo", false);
		r = fstypes_mount_excluded(ctx->fstypes, mnt_id);
	}
	return r != 0;
}

/* Whether a configured path lies on an excluded file system (before anything touches it). */
static bool path_excluded(struct files_ctx *ctx, const char *path)
{
	if (!ctx->fstypes || !ctx->fstypes->active)
		return false;
	load_self(ctx);
	return fstypes_path_excluded(ctx->fstypes, path);
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
	struct stat ovl, st;
	int pid = 0, r;
	ssize_t n;

	/* the path as the kernel prints it for our descriptor: the process's, for its files */
	snprintf(link, sizeof(link), "/proc/thread-self/fd/%d", e->fd);
	n = readlink(link, name, sizeof(name) - 1);
	/* e->st may hold the identity, type and size alone; the layers are checked on all of it */
	if (n < 0 || fstat_fd(e->fd, &ovl) < 0) {
		skip(ctx, SKIP_OVERLAY_UNRESOLVED);
		return 0;
	}
	name[n] = '\0';
	if (e->proc_link && sscanf(e->proc_link, "%d/", &pid) != 1)
		pid = 0;
	r = overlay_resolve(ctx->procfs_fd, pid, name, e->fd, &ovl, &fd, &st);
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

/* A file files_cachestat() knows the answer for: visited without opening it again. */
static int visit_known(struct files_ctx *ctx, const struct stat *st, const char *path,
		       const char *proc_link)
{
	const struct files_entry e = { .fd = -1, .st = st, .path = path, .proc_link = proc_link };

	return ctx->visit(ctx, &e);
}

static bool known(const struct files_ctx *ctx, const struct stat *st)
{
	return st->st_size >= FILES_CACHE_MIN_SIZE &&
	       filecache_get(&ctx->cache, (uint64_t)st->st_dev, (uint64_t)st->st_ino);
}

int files_cachestat(struct files_ctx *ctx, const struct pagecache *pc, const struct files_entry *e,
		    struct pagecache_cachestat *ret)
{
	const struct filecache_entry *k = NULL;
	int r;

	if (e->st->st_size >= FILES_CACHE_MIN_SIZE || e->fd < 0)
		k = filecache_get(&ctx->cache, (uint64_t)e->st->st_dev, (uint64_t)e->st->st_ino);
	if (k) {
		*ret = k->cs;
		return 0;
	}
	if (e->fd < 0)
		return -EBADF;
	r = pagecache_stat(pc, e->fd, ret);
	if (r == 0 && e->st->st_size >= FILES_CACHE_MIN_SIZE)
		/* out of memory, it is asked about again next time: no error */
		(void)filecache_put(&ctx->cache, (uint64_t)e->st->st_dev, (uint64_t)e->st->st_ino,
				    (uint64_t)e->st->st_size, ret);
	return r;
}

/* Hands an open regular file to the visitor. */
static int visit_open(struct files_ctx *ctx, const struct files_entry *e)
{
	if (overlay_is_overlay(e->fd, e->st))
		return visit_overlay(ctx, e);
	return ctx->visit(ctx, e);
}

/*
 * Opens the regular file that the O_PATH descriptor pfd refers to (st, from stat_opath()),
 * read-only, through /proc/thread-self/fd, and visits it. The link resolves to pfd's own dentry,
 * which we hold and nobody else can change: the file opened is that inode, whatever became of
 * its name meanwhile, so it needs no second fstat.
 */
static int visit_reopened(struct files_ctx *ctx, int pfd, const struct stat *st,
			  const char *path, const char *proc_link)
{
	_cleanup_close_ int fd = -1;
	struct files_entry e;
	char name[16];

	if (known(ctx, st))
		return visit_known(ctx, st, path, proc_link);
	/*
	 * A directory descriptor of /proc/thread-self/fd spares a walk of four names per file;
	 * thread-self, as the scan has a descriptor table of its own (scheduler.c)
	 */
	if (ctx->self_fd_dir <= 0)
		ctx->self_fd_dir = open("/proc/thread-self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ctx->self_fd_dir < 0) {
		skip(ctx, SKIP_ERROR);
		ctx->self_fd_dir = 0; /* tried again next time */
		return 0;
	}
	snprintf(name, sizeof(name), "%d", pfd);
	fd = openat(ctx->self_fd_dir, name, FILES_OPEN_FLAGS);
	if (fd < 0) {
		skip(ctx, skip_reason_of(errno));
		return 0;
	}
	e = (struct files_entry){ .fd = fd, .st = st, .path = path, .proc_link = proc_link };
	return visit_open(ctx, &e);
}

/*
 * visit_reopened() watched for a mount that stops answering: the reopen, cachestat and close are
 * the calls that wait on its file system. A mount that a scan left behind is stuck on is
 * skipped instead (quarantine.h).
 */
static int visit_watched(struct files_ctx *ctx, uint64_t mnt_id, int pfd, const struct stat *st,
			 const char *path, const char *proc_link)
{
	uint64_t outer;
	int r;

	if (quarantine_holds(mnt_id)) {
		skip(ctx, SKIP_MOUNT_STUCK);
		return 0;
	}
	outer = quarantine_enter(mnt_id);
	r = visit_reopened(ctx, pfd, st, path, proc_link);
	quarantine_leave(outer);
	return r;
}

/*
 * A file found by name: the one readdir saw (expect, the caller deduplicated it already; else the
 * entry was replaced meanwhile: vanished), or a new (dev, ino) for the set. 1 to go on, 0 when
 * skipped or already counted, -ENOMEM.
 */
static int match_or_claim(struct files_ctx *ctx, const struct stat *st, const struct stat *expect)
{
	if (!expect)
		return fileset_add(&ctx->seen, (uint64_t)st->st_dev, (uint64_t)st->st_ino);
	if (st->st_dev != expect->st_dev || st->st_ino != expect->st_ino) {
		skip(ctx, SKIP_VANISHED);
		return 0;
	}
	return 1;
}

/*
 * What an O_PATH descriptor (or -1, errno set) holds: 1 with its stat and mount id when a
 * regular file on a file system not excluded, else 0, skipped and counted. Nothing is opened but
 * that descriptor.
 */
static int check_opath(struct files_ctx *ctx, int pfd, struct stat *st, uint64_t *ret_mnt_id)
{
	uint64_t mnt_id;

	if (pfd < 0 || stat_opath(pfd, st, &mnt_id) < 0) {
		skip(ctx, skip_reason_of(errno));
		return 0;
	}
	if (!S_ISREG(st->st_mode)) {
		skip(ctx, SKIP_NOT_REGULAR);
		return 0;
	}
	if (mount_excluded(ctx, -1, mnt_id)) {
		skip(ctx, SKIP_FS_TYPE);
		return 0;
	}
	*ret_mnt_id = mnt_id;
	return 1;
}

/*
 * A configured file, dirfd/name: opened O_PATH (nofollow: O_NOFOLLOW), checked to be a regular
 * file on a file system not excluded, deduplicated (expect: the caller did it already, by
 * readdir's inode) and visited.
 */
static int visit_path(struct files_ctx *ctx, int dirfd, const char *name, bool nofollow,
		      const struct stat *expect, const char *path)
{
	_cleanup_close_ int pfd = -1;
	uint64_t mnt_id;
	struct stat st;
	int r;

	pfd = openat(dirfd, name, O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
	if (!check_opath(ctx, pfd, &st, &mnt_id))
		return 0;
	r = match_or_claim(ctx, &st, expect);
	if (r <= 0)
		return r;
	return visit_watched(ctx, mnt_id, pfd, &st, path, NULL);
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

/* One process being scanned: its /proc directory (tied to it, not to its pid) and creds. */
struct proc {
	pid_t pid;
	int dirfd;
	struct creds creds;
};

/*
 * Parses "flags:", "mnt_id:" and "ino:" of /proc/PID/fdinfo/N. One read: procfs formats the
 * record whole, and these lines come first (lock and file-specific lines follow), so the
 * first kilobyte holds them and a read to the end would cost one more call per file.
 */
static int read_fdinfo(int fdinfo_dir, const char *name, int *ret_flags, uint64_t *ret_mnt_id,
		       uint64_t *ret_ino)
{
	_cleanup_close_ int fd = -1;
	unsigned long long mnt, ino;
	unsigned flags;
	char buf[1024];
	const char *p;
	ssize_t n;

	fd = openat(fdinfo_dir, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	p = strstr(buf, "flags:");
	if (!p || sscanf(p, "flags: %o", &flags) != 1)
		return -EINVAL;
	p = strstr(buf, "mnt_id:");
	if (!p || sscanf(p, "mnt_id: %llu", &mnt) != 1)
		return -EINVAL;
	p = strstr(buf, "ino:");
	if (!p || sscanf(p, "ino: %llu", &ino) != 1)
		return -EINVAL;
	*ret_flags = (int)flags;
	*ret_mnt_id = mnt;
	*ret_ino = ino;
	return 0;
}

/*
 * The open mode of the process's descriptor name, as creds_may_cachestat() takes it, from the
 * mode procfs gives the descriptor's link: owner read and write for FMODE_READ and FMODE_WRITE,
 * neither for O_PATH. Unlike fdinfo, this is not tied to the file we hold: the process may put
 * another file at that number meanwhile. -errno on failure.
 */
static int link_open_mode(int fd_dir, const char *name, int *ret_flags)
{
	struct stat st;

	if (fstatat(fd_dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (!S_ISLNK(st.st_mode))
		return -EINVAL;
	if (st.st_mode & S_IWUSR)
		*ret_flags = st.st_mode & S_IRUSR ? O_RDWR : O_WRONLY;
	else
		*ret_flags = st.st_mode & S_IRUSR ? O_RDONLY : O_PATH;
	return 0;
}

/*
 * Whether the process could have asked cachestat about the file of its descriptor name, st and
 * mnt_id being those of our O_PATH descriptor of it. Where its credentials suffice whatever
 * descriptor it holds (owner, CAP_FOWNER, CAP_DAC_OVERRIDE, write permission), only O_PATH is
 * ruled out, by the link's mode: a swap of the descriptor meanwhile could make us count a file
 * that the process may ask about anyway, never another. Else the open mode comes from fdinfo,
 * read at once with the inode and mount it describes, which must be those we hold. *fdinfo_dir
 * is opened at the first need. 1 when it could, else 0 with the skip counted.
 */
static int fd_may_cachestat(struct files_ctx *ctx, const struct proc *p, int fd_dir,
			    int *fdinfo_dir, const char *name, const struct stat *st,
			    uint64_t mnt_id)
{
	uint64_t info_mnt = UINT64_MAX, info_ino = UINT64_MAX;
	int flags = O_PATH, r; /* what nothing was read gives: nothing */

	if (creds_may_cachestat_any_mode(&p->creds, st)) {
		r = link_open_mode(fd_dir, name, &flags);
	} else {
		if (*fdinfo_dir < 0)
			*fdinfo_dir = openat(p->dirfd, "fdinfo",
					     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = *fdinfo_dir < 0 ? -errno
				    : read_fdinfo(*fdinfo_dir, name, &flags, &info_mnt, &info_ino);
		if (r == 0 && (info_ino != (uint64_t)st->st_ino || info_mnt != mnt_id))
			r = -ESTALE;
	}
	if (r < 0) {
		skip(ctx, SKIP_VANISHED);
		return 0;
	}
	if (!creds_may_cachestat(&p->creds, flags, st)) {
		skip(ctx, SKIP_NO_ACCESS);
		return 0;
	}
	return 1;
}

/*
 * Descriptor name of a process. The magic link is followed with O_PATH, which opens nothing
 * (no device open, no FIFO, nothing asked of a FUSE daemon) and pins the inode, and the file is
 * reopened read-only through our own descriptor only if the process could have asked cachestat
 * about it (fd_may_cachestat()).
 */
static int visit_fd(struct files_ctx *ctx, const struct proc *p, int fd_dir, int *fdinfo_dir,
		    const char *name, const char *proc_link)
{
	_cleanup_close_ int pfd = -1;
	uint64_t mnt_id;
	struct stat st;
	int r;

	pfd = openat(fd_dir, name, O_PATH | O_CLOEXEC);
	if (pfd < 0 || stat_opath(pfd, &st, &mnt_id) < 0) {
		skip(ctx, skip_reason_of(errno));
		return 0;
	}
	if (!S_ISREG(st.st_mode)) { /* a socket, pipe or device: never reopened */
		skip(ctx, SKIP_NOT_REGULAR);
		return 0;
	}
	if (mount_excluded(ctx, p->dirfd, mnt_id)) {
		skip(ctx, SKIP_FS_TYPE);
		return 0;
	}
	if (fileset_contains(&ctx->seen, (uint64_t)st.st_dev, (uint64_t)st.st_ino))
		return 0;
	if (!fd_may_cachestat(ctx, p, fd_dir, fdinfo_dir, name, &st, mnt_id))
		return 0;
	r = fileset_add(&ctx->seen, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
	if (r <= 0)
		return r;
	return visit_watched(ctx, mnt_id, pfd, &st, NULL, proc_link);
}

/* Every open descriptor of the process. -errno when its fd directory cannot be opened. */
static int scan_fds(struct files_ctx *ctx, const struct proc *p)
{
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_close_ int fdinfo = -1;
	char link[64 + 256 + 2];
	struct dirent *de;
	size_t rel_len;
	int fd;

	fd = openat(p->dirfd, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		int err = errno;

		close(fd);
		return -err;
	}
	rel_len = (size_t)snprintf(link, sizeof(link), "%d/fd/", (int)p->pid);
	while ((de = readdir(d))) {
		int r;

		if (de->d_name[0] == '.')
			continue;
		if (!charge(ctx)) {
			if (files_stopped(ctx))
				break;
			continue; /* over the budget: each counted */
		}
		/* "PID/fd/" is in place: an entry costs a copy of its name, not a snprintf() */
		memcpy(link + rel_len, de->d_name, strnlen(de->d_name, sizeof(de->d_name) - 1) + 1);
		r = visit_fd(ctx, p, dirfd(d), &fdinfo, de->d_name, link);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A line of maps: "start-end perms offset major:minor inode path". */
struct mapping {
	unsigned long start, end;
	char perms[8];
	dev_t dev;
	unsigned long long ino;
	const char *path;
};

static bool parse_mapping(char *line, struct mapping *m)
{
	unsigned maj, min;
	int off = 0;

	if (sscanf(line, "%lx-%lx %7s %*s %x:%x %llu %n", &m->start, &m->end, m->perms, &maj, &min,
		   &m->ino, &off) != 6 ||
	    off == 0 || m->ino == 0 || line[off] != '/')
		return false;
	m->dev = makedev(maj, min);
	m->path = line + off;
	return true;
}

static bool path_deleted(const char *path)
{
	static const char deleted[] = " (deleted)";
	size_t n = strlen(path);

	return n > sizeof(deleted) - 1 && strcmp(path + n - (sizeof(deleted) - 1), deleted) == 0;
}

/*
 * An O_PATH descriptor of a mapped file: through PID/map_files (which reaches deleted files
 * too) unless it is closed to us, else through the path maps printed, not following a symlink
 * put in its place. -EPERM when map_files turns out closed.
 */
static int open_mapping(struct files_ctx *ctx, const struct proc *p, const struct mapping *m,
			char *link, size_t link_size)
{
	char rel[64];
	int fd;

	if (!ctx->map_files_closed) {
		snprintf(rel, sizeof(rel), "map_files/%lx-%lx", m->start, m->end);
		fd = openat(p->dirfd, rel, O_PATH | O_CLOEXEC);
		if (fd < 0 && !files_map_files_closed(errno))
			return -errno;
		if (fd >= 0) {
			snprintf(link, link_size, "%d/%s", (int)p->pid, rel);
			return fd;
		}
		ctx->map_files_closed = true;
	}
	link[0] = '\0';
	if (path_deleted(m->path))
		return -ENOENT; /* cannot be reached by its name */
	fd = openat(AT_FDCWD, m->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

/*
 * One file mapping. Mappings follow mincore(2)'s rule (a shared writable mapping implies a
 * descriptor open for writing; otherwise owner, or write permission).
 */
static int visit_mapping(struct files_ctx *ctx, const struct proc *p, const struct mapping *m)
{
	_cleanup_close_ int pfd = -1;
	char link[128];
	uint64_t mnt_id;
	struct stat st;
	int r;

	pfd = open_mapping(ctx, p, m, link, sizeof(link));
	if (pfd < 0 || stat_opath(pfd, &st, &mnt_id) < 0) {
		skip(ctx, skip_reason_of(pfd < 0 ? -pfd : errno));
		return 0;
	}
	/* map_files names the mapped file itself; a path is checked to be it, device and inode */
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_ino != m->ino ||
	    (!link[0] && st.st_dev != m->dev)) {
		skip(ctx, S_ISREG(st.st_mode) ? SKIP_VANISHED : SKIP_NOT_REGULAR);
		return 0;
	}
	if (mount_excluded(ctx, p->dirfd, mnt_id)) {
		skip(ctx, SKIP_FS_TYPE);
		return 0;
	}
	if (fileset_contains(&ctx->seen, (uint64_t)st.st_dev, (uint64_t)st.st_ino))
		return 0;
	if (!creds_may_cachestat_mapping(&p->creds, m->perms, &st)) {
		skip(ctx, SKIP_NO_ACCESS);
		return 0;
	}
	r = fileset_add(&ctx->seen, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
	if (r <= 0)
		return r;
	/* maps prints the device the kernel keeps; remember that form too */
	r = fileset_add(&ctx->seen, (uint64_t)m->dev, m->ino);
	if (r < 0)
		return r;
	return visit_watched(ctx, mnt_id, pfd, &st, link[0] ? NULL : m->path, link[0] ? link : NULL);
}

/* Every file mapping of the process, from PID/maps (one line per mapping, in address order). */
static int scan_mappings(struct files_ctx *ctx, const struct proc *p)
{
	_cleanup_free_ char *buf = NULL;
	char *line, *save = NULL;
	size_t len;
	int r;

	r = read_file_at(p->dirfd, "maps", &buf, &len);
	if (r < 0)
		return r;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct mapping m;

		if (!parse_mapping(line, &m) || fileset_contains(&ctx->seen, (uint64_t)m.dev, m.ino))
			continue;
		if (!charge(ctx)) {
			if (files_stopped(ctx))
				break;
			continue;
		}
		r = visit_mapping(ctx, p, &m);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The credentials a process checks files with (creds_read()), our user namespace read once. */
static int read_creds(struct files_ctx *ctx, int piddir, struct creds *ret)
{
	if (!ctx->self_userns[0]) {
		ssize_t n = readlinkat(ctx->procfs_fd, "self/ns/user", ctx->self_userns,
				       sizeof(ctx->self_userns) - 1);

		ctx->self_userns[n > 0 ? n : 0] = '\0';
	}
	return creds_read(piddir, ctx->self_userns, ret);
}

static bool proc_gone(int r)
{
	return r == -ENOENT || r == -ESRCH;
}

int files_scan_pid(struct files_ctx *ctx, pid_t pid)
{
	_cleanup_close_ int piddir = -1;
	struct proc p = { .pid = pid };
	char name[16];
	int r;

	ctx->pid = pid;
	if (files_stopped(ctx))
		return 0;
	snprintf(name, sizeof(name), "%d", (int)pid);
	piddir = openat(ctx->procfs_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (piddir < 0)
		return proc_gone(-errno) ? 0 : -errno;
	r = read_creds(ctx, piddir, &p.creds);
	if (r < 0)
		return proc_gone(r) ? 0 : r;
	p.dirfd = piddir;
	r = scan_fds(ctx, &p);
	if (r < 0 && !proc_gone(r) && r != -EACCES && r != -EPERM) {
		creds_done(&p.creds);
		return r;
	}
	r = proc_gone(r) ? 0 : scan_mappings(ctx, &p);
	creds_done(&p.creds);
	return proc_gone(r) ? 0 : r;
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
		skip(ctx, skip_reason_of(errno));
		return 0;
	}
	if (expect) {
		r = sealed_stat(fd, expect, &st);
	} else {
		r = fstat_fd(fd, &st) < 0 ? -errno : 0;
		if (r == 0 && !S_ISREG(st.st_mode))
			r = -ENXIO;
	}
	if (r < 0) {
		skip(ctx, r == -ENXIO ? SKIP_NOT_REGULAR : SKIP_ERROR);
		return 0;
	}
	r = match_or_claim(ctx, &st, expect);
	if (r <= 0)
		return r;
	e = (struct files_entry){ .fd = fd, .st = &st, .path = path };
	return visit_open(ctx, &e);
}

/* A directory entry that is a directory: walked unless it is a mount point or too deep. */
static int walk_subdir(struct files_ctx *ctx, int dirfd, const char *name,
		       const struct walk_root *root, struct pathbuf *path, unsigned depth)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	size_t oldlen;
	int r;

	if (depth >= FILES_MAX_DEPTH)
		return 0;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		skip(ctx, skip_reason_of(errno));
		return 0;
	}
	if (fstat(fd, &st) < 0 || st.st_dev != root->dev)
		return 0; /* a mount point: stay on this file system */
	r = pathbuf_push(path, name, &oldlen);
	if (r < 0)
		return r;
	r = walk_dir(ctx, TAKE_FD(fd), root, path, depth + 1);
	pathbuf_pop(path, oldlen);
	return r;
}

static int walk_entry(struct files_ctx *ctx, int dirfd, bool sealed,
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
		struct stat st;

		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			skip(ctx, skip_reason_of(errno));
			return 0;
		}
		type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
	}
	if (type == DT_DIR)
		return walk_subdir(ctx, dirfd, name, root, path, depth);
	if (type != DT_REG) {
		skip(ctx, SKIP_NOT_REGULAR);
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
	if (!charge(ctx))
		return 0;
	r = pathbuf_push(path, name, &oldlen);
	if (r < 0)
		return r;
	/* O_NOFOLLOW: the entry may have been replaced by a symlink since readdir */
	if (sealed)
		r = visit_sealed(ctx, dirfd, name, root->d_ino_is_st_ino ? &expect : NULL, path->s);
	else
		r = visit_path(ctx, dirfd, name, true, root->d_ino_is_st_ino ? &expect : NULL,
			       path->s);
	pathbuf_pop(path, oldlen);
	return r;
}

/* The entries of a kept listing (dircache.h). */
static int walk_listing(struct files_ctx *ctx, int fd, bool sealed,
			const struct dircache_listing *l, const struct walk_root *root,
			struct pathbuf *path, unsigned depth)
{
	struct dircache_entry de;
	size_t pos = 0;

	while (dircache_next(l, &pos, &de) && !files_stopped(ctx)) {
		int r = walk_entry(ctx, fd, sealed, &de, root, path, depth);

		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * The entries readdir gives, kept as the directory's listing when it may be (ctx->dircache,
 * a file system whose d_ino is the inode, a directory settled before the read, all of it read).
 */
static int walk_readdir(struct files_ctx *ctx, DIR *d, bool sealed, const struct stat *st,
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
		r = walk_entry(ctx, dirfd(d), sealed, &e, root, path, depth);
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
	bool sealed;

	if (fstat_fd(fd, &st) < 0) {
		close(fd);
		skip(ctx, SKIP_ERROR);
		return 0;
	}
	sealed = dir_sealed(&st);
	if (ctx->dircache && root->d_ino_is_st_ino)
		l = dircache_find(ctx->dircache, &st);
	if (l) {
		int r = walk_listing(ctx, fd, sealed, l, root, path, depth);

		close(fd);
		return r;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		skip(ctx, SKIP_ERROR);
		return 0;
	}
	return walk_readdir(ctx, d, sealed, &st, root, path, depth);
}

/*
 * One name from the config, followed if a symlink (the user named it), or a match of a glob,
 * not followed if a symlink: a link planted in a globbed directory must not lead the scan out
 * of it (nofollow).
 */
static int walk_one_path(struct files_ctx *ctx, const char *name, bool nofollow)
{
	struct pathbuf path = { 0 };
	struct walk_root root;
	uint64_t mnt_id;
	struct stat st;
	int fd, r;

	if ((nofollow ? lstat(name, &st) : stat(name, &st)) < 0) {
		skip(ctx, errno == ENOENT ? SKIP_NOT_FOUND : skip_reason_of(errno));
		return 0;
	}
	if (S_ISREG(st.st_mode)) {
		if (!charge(ctx))
			return 0;
		return visit_path(ctx, AT_FDCWD, name, nofollow, NULL, name);
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
	r = stat_opath(fd, &st, &mnt_id);
	if (r < 0 || mount_excluded(ctx, -1, mnt_id)) {
		close(fd);
		skip(ctx, r < 0 ? SKIP_ERROR : SKIP_FS_TYPE);
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

/*
 * Whether the configured path (or pattern) may be looked up: not on an excluded file system, nor
 * on a mount a scan left behind is stuck on. Its mount is then entered (quarantine.h): the
 * lookup and the walk wait on it. *outer: what quarantine_leave() restores.
 */
static bool path_enter(struct files_ctx *ctx, const char *path, uint64_t *outer)
{
	uint64_t mnt_id;

	if (path_excluded(ctx, path)) {
		skip(ctx, SKIP_FS_TYPE);
		return false;
	}
	mnt_id = QUARANTINE_NO_MOUNT;
	if (ctx->fstypes) {
		load_self(ctx); /* path_excluded() loads the tables only when something is excluded */
		mnt_id = fstypes_path_mount(ctx->fstypes, path);
	}
	if (quarantine_holds(mnt_id)) {
		skip(ctx, SKIP_MOUNT_STUCK);
		return false;
	}
	*outer = quarantine_enter(mnt_id);
	return true;
}

static int scan_one_path(struct files_ctx *ctx, const char *name, bool nofollow)
{
	uint64_t outer;
	int r;

	if (files_stopped(ctx) || !path_enter(ctx, name, &outer))
		return 0;
	r = walk_one_path(ctx, name, nofollow);
	quarantine_leave(outer);
	return r;
}

int files_scan_path(struct files_ctx *ctx, const char *pattern)
{
	uint64_t outer;
	glob_t g;
	int r;

	ctx->pid = 0;
	if (!config_path_is_glob(pattern))
		return scan_one_path(ctx, pattern, false);
	/* glob() reads the directories it matches in: not on an excluded or stuck file system */
	if (!path_enter(ctx, pattern, &outer))
		return 0;
	r = glob(pattern, GLOB_NOSORT, NULL, &g);
	quarantine_leave(outer);
	if (r == GLOB_NOMATCH)
		return 0;
	if (r == GLOB_NOSPACE)
		return -ENOMEM;
	if (r != 0) {
		skip(ctx, SKIP_ERROR);
		return 0;
	}
	r = 0;
	for (size_t i = 0; i < g.gl_pathc && r >= 0 && !files_stopped(ctx); i++)
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

int files_scan_handle(struct files_ctx *ctx, int mount_fd, struct file_handle *fh,
		      const struct creds *creds)
{
	_cleanup_close_ int pfd = -1;
	uint64_t mnt_id;
	char link[32];
	struct stat st;
	int r;

	ctx->pid = 0;
	if (!charge(ctx))
		return 0;
	pfd = open_by_handle_at(mount_fd, fh, O_PATH | O_CLOEXEC);
	if (!check_opath(ctx, pfd, &st, &mnt_id))
		return 0;
	if (fileset_contains(&ctx->seen, (uint64_t)st.st_dev, (uint64_t)st.st_ino))
		return 0;
	if (!creds_may_cachestat(creds, O_RDONLY, &st)) {
		skip(ctx, SKIP_NO_ACCESS);
		return 0;
	}
	r = fileset_add(&ctx->seen, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
	if (r <= 0)
		return r;
	snprintf(link, sizeof(link), "thread-self/fd/%d", pfd);
	return visit_watched(ctx, mnt_id, pfd, &st, NULL, link);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * files: what every source of files shares (source.h): the scan's context, the budget and the
 * clock, the skips, the mount tables the exclusion reads, and the visit an admitted file ends
 * in (quarantine, the reopen through our own descriptor, overlayfs, the cachestat answers kept).
 * The sources are held.c, mapped.c, paths.c and handle.c; the rule they share is admit.c.
 */
#define _GNU_SOURCE
#include "files/files.h"
#include "files/source.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/util.h"
#include "files/mincore.h"
#include "files/overlay.h"
#include "files/quarantine.h"

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
int files_fstat(int fd, struct stat *st)
{
#if defined(SYS_fstat) && (defined(__x86_64__) || defined(__aarch64__))
	return (int)syscall(SYS_fstat, fd, st);
#else
	return fstat(fd, st);
#endif
}

void files_skip(struct files_ctx *ctx, enum skip_reason r)
{
	int err = errno;

	ctx->skipped[r]++;
	if (ctx->on_skip)
		ctx->on_skip(ctx, r, err);
	errno = err;
}

enum skip_reason files_skip_reason_of(int err)
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
	free(ctx->mincore_vec);
	ctx->mincore_vec = NULL;
	overlay_cache_free(ctx->overlays);
	ctx->overlays = NULL;
	if (ctx->fstypes)
		fstypes_reset(ctx->fstypes);
}

/*
 * Whether the scan and this cgroup's share still have time, the clock being read at a cgroup's
 * first file and then every FILES_CLOCK_EVERY; sets timed_out or slice_out when not.
 */
bool files_in_time(struct files_ctx *ctx)
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

bool files_charge(struct files_ctx *ctx)
{
	if (files_stopped(ctx) || !files_in_time(ctx))
		return false;
	if (ctx->budget == 0) {
		files_skip(ctx, SKIP_LIMIT);
		return false;
	}
	ctx->budget--;
	return true;
}

/* The inode of the mount namespace of dirfd's process (dirfd/ns/mnt); 0 if unknown. */
static uint64_t mount_ns(int dirfd, const char *self)
{
	char name[32];
	struct stat st;

	snprintf(name, sizeof(name), "%sns/mnt", self);
	return fstatat(dirfd, name, &st, 0) == 0 ? (uint64_t)st.st_ino : 0;
}

/*
 * Adds the mount table of dirfd's process (prefix: "" for a /proc/PID directory, "self/" for
 * procfs) to the exclusion's (fstypes.h), once a scan for each mount namespace; the deadline
 * is the scan's. Returns 0, -E2BIG when the namespace's table is over a cap, or a negative
 * errno.
 */
static int load_mountinfo(struct files_ctx *ctx, int dirfd, const char *prefix, bool points)
{
	_cleanup_free_ char *buf = NULL;
	uint64_t ns = mount_ns(dirfd, prefix);
	char name[32];
	size_t len;
	int r;

	r = fstypes_has_ns(ctx->fstypes, ns);
	if (r != 0)
		return r < 0 ? r : 0;
	snprintf(name, sizeof(name), "%smountinfo", prefix);
	r = read_file_at_max(dirfd, name, ctx->fstypes->lim.max_bytes, &buf, &len);
	if (r < 0)
		return r;
	ctx->fstypes->deadline_ns = ctx->deadline_ns;
	r = fstypes_add_mountinfo_ns(ctx->fstypes, buf, len, ns, points);
	if (ctx->fstypes->timed_out)
		ctx->timed_out = true;
	if (r == 0 && fstypes_has_ns(ctx->fstypes, ns) < 0)
		r = -E2BIG;
	return r;
}

/*
 * Once per scan: the host's mount table (pid 1's, where container runtimes mount the layers of
 * the overlays they give containers), then our own. Unreadable, a table is left out: the
 * mounts it would have named are then unknown, and excluded.
 */
void files_load_mounts(struct files_ctx *ctx)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;

	if (ctx->fstypes->loaded_self)
		return;
	ctx->fstypes->loaded_self = true;
	ctx->fstypes->deadline_ns = ctx->deadline_ns;
	if (read_file_at_max(ctx->procfs_fd, "1/mountinfo", ctx->fstypes->lim.max_bytes, &buf,
			     &len) == 0)
		fstypes_set_host_mountinfo_ns(ctx->fstypes, buf, len, mount_ns(ctx->procfs_fd, "1/"));
	load_mountinfo(ctx, ctx->procfs_fd, "self/", true);
}

enum skip_reason files_mount_skip(struct files_ctx *ctx, int piddir, uint64_t mnt_id)
{
	int r;

	if (!ctx->fstypes || !ctx->fstypes->active)
		return _SKIP_MAX;
	ctx->fstypes->deadline_ns = ctx->deadline_ns;
	r = fstypes_mount_excluded(ctx->fstypes, mnt_id);
	if (r == -ENOENT && !ctx->fstypes->loaded_self) {
		files_load_mounts(ctx);
		r = fstypes_mount_excluded(ctx->fstypes, mnt_id);
	}
	if (r == -ENOENT && piddir >= 0) {
		int l = load_mountinfo(ctx, piddir, "", false);

		r = l == -E2BIG ? l : fstypes_mount_excluded(ctx->fstypes, mnt_id);
	}
	if (ctx->fstypes->timed_out)
		ctx->timed_out = true;
	if (r == 0)
		return _SKIP_MAX;
	return r == -E2BIG ? SKIP_MOUNT_CAPPED : SKIP_FS_TYPE;
}

bool files_mount_excluded(struct files_ctx *ctx, int piddir, uint64_t mnt_id)
{
	return files_mount_skip(ctx, piddir, mnt_id) != _SKIP_MAX;
}

/* The scan's overlay mounts (overlay.h), made at the first file on overlayfs. */
static int overlay_cache_get(struct files_ctx *ctx)
{
	if (ctx->overlays)
		return 0;
	return overlay_cache_new(ctx->fstypes ? ctx->fstypes->lim.max_layers
					      : FSTYPES_DEFAULT_MAX_LAYERS, &ctx->overlays);
}

/*
 * The real file of e, a file on overlayfs (see overlay_resolve()). A configured path's file is
 * looked up by the path the exporter opened it by, then, where that fails (a symlink on the
 * way, a bind mount), by the path the kernel prints for the descriptor, as a process's is.
 */
static int resolve_overlay(struct files_ctx *ctx, const struct files_entry *e, int *ret_fd,
			   struct stat *ret_st)
{
	char link[64], name[PATH_MAX];
	int pid = 0, r = -EXDEV;
	ssize_t n;

	if (e->proc_link && sscanf(e->proc_link, "%d/", &pid) != 1)
		pid = 0;
	/* e->st may hold the identity, type and size alone: the resolver stats it whole */
	if (!e->proc_link && e->path && e->path[0] == '/')
		r = overlay_resolve(ctx->overlays, ctx->procfs_fd, 0, e->path, e->fd, ret_fd, ret_st);
	if (r != -EXDEV)
		return r;
	snprintf(link, sizeof(link), "/proc/thread-self/fd/%d", e->fd);
	n = readlink(link, name, sizeof(name) - 1);
	if (n < 0)
		return -EXDEV;
	name[n] = '\0';
	if (!e->proc_link && e->path && strcmp(name, e->path) == 0)
		return -EXDEV; /* the same path: no other answer */
	return overlay_resolve(ctx->overlays, ctx->procfs_fd, pid, name, e->fd, ret_fd, ret_st);
}

/*
 * Visits the real file (fd, st) that resolving e gave, r being what the resolver returned:
 * deduplicated by its own identity; one not found for sure is skipped and counted.
 */
static int visit_resolved(struct files_ctx *ctx, const struct files_entry *e, int r, int fd,
			  const struct stat *st)
{
	struct files_entry real = *e;

	if (r == -ENOMEM)
		return r;
	if (r == -E2BIG && ctx->fstypes)
		ctx->fstypes->capped[FSTYPES_CAP_LAYERS]++;
	if (r < 0) {
		files_skip(ctx, r == -ESRCH ? SKIP_VANISHED : r == -E2BIG ? SKIP_MOUNT_CAPPED
								       : SKIP_OVERLAY_UNRESOLVED);
		return 0;
	}
	r = fileset_add(&ctx->seen, (uint64_t)st->st_dev, (uint64_t)st->st_ino);
	if (r <= 0)
		return r;
	real.fd = fd;
	real.st = st;
	return ctx->visit(ctx, &real);
}

/*
 * A file on overlayfs: cachestat(2) of the overlay inode sees no pages (they are on the real
 * upper or lower inode), so the real file is visited in its place, deduplicated by its own
 * (dev, ino); one that cannot be found for sure is skipped, never counted as a zero.
 * memo: e was taken for an overlay's by its device alone (-EMEDIUMTYPE: it is not).
 */
static int visit_overlay(struct files_ctx *ctx, const struct files_entry *e, bool memo)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	r = overlay_cache_get(ctx);
	if (r < 0)
		return r;
	r = resolve_overlay(ctx, e, &fd, &st);
	if (r == -EMEDIUMTYPE && memo)
		return r;
	return visit_resolved(ctx, e, r, fd, &st);
}

/*
 * The statx of name in dirfd that files_visit_overlay_at() needs: 1, or 0 when skipped (counted),
 * or -EXDEV for a name on another mount.
 */
static int overlay_entry_statx(struct files_ctx *ctx, int dirfd, const char *name,
			       struct statx *ret)
{
	if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC,
		  overlay_statx_mask, ret) < 0) {
		files_skip(ctx, files_skip_reason_of(errno));
		return 0;
	}
	/* a file mounted over the name, or a kernel that cannot say */
	if (!(ret->stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
	    (ret->stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return -EXDEV;
	if (!S_ISREG(ret->stx_mode)) {
		files_skip(ctx, SKIP_NOT_REGULAR);
		return 0;
	}
	return 1;
}

int files_visit_overlay_at(struct files_ctx *ctx, uint64_t mnt_id, int dirfd,
			   const struct stat *dir, const char *name, const char *path)
{
	_cleanup_close_ int fd = -1;
	struct statx stx;
	struct stat st;
	uint64_t outer;
	int r;

	r = overlay_entry_statx(ctx, dirfd, name, &stx);
	if (r <= 0)
		return r;
	/* deduplicated by the overlay's identity too, as files_admit() does */
	r = fileset_add(&ctx->seen, makedev(stx.stx_dev_major, stx.stx_dev_minor), stx.stx_ino);
	if (r <= 0)
		return r;
	r = overlay_cache_get(ctx);
	if (r < 0)
		return r;
	if (quarantine_holds(mnt_id)) {
		files_skip(ctx, SKIP_MOUNT_STUCK);
		return 0;
	}
	outer = quarantine_enter(mnt_id);
	r = overlay_resolve_at(ctx->overlays, ctx->procfs_fd, dirfd, dir, path, &stx, &fd, &st);
	r = visit_resolved(ctx, &(const struct files_entry){ .fd = -1, .path = path }, r, fd, &st);
	quarantine_leave(outer);
	return r;
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
	if (pc->abi == PAGECACHE_ABI_MINCORE)
		r = mincore_stat(ctx, pc, e, ret);
	else
		r = pagecache_stat(pc, e->fd, ret);
	if (r == 0 && e->st->st_size >= FILES_CACHE_MIN_SIZE)
		/* out of memory, it is asked about again next time: no error */
		(void)filecache_put(&ctx->cache, (uint64_t)e->st->st_dev, (uint64_t)e->st->st_ino,
				    (uint64_t)e->st->st_size, ret);
	return r;
}

/*
 * Whether e is on overlayfs: an fstatfs() per file, but for the device of the last overlay file
 * (a directory's files come one after another). *ret_memo: said by the device alone.
 */
static bool on_overlay(struct files_ctx *ctx, const struct files_entry *e, bool *ret_memo)
{
	*ret_memo = ctx->overlay_dev && e->st->st_dev == ctx->overlay_dev;
	if (!*ret_memo && !overlay_is_overlay(e->fd, e->st))
		return false;
	ctx->overlay_dev = e->st->st_dev;
	return true;
}

/*
 * Visits the real file of e, a file on overlayfs. A device number is given again once its
 * file system is gone: a file taken for an overlay's by its device alone is told apart by its
 * mount, and asked about again (-EMEDIUMTYPE: it is not on overlayfs after all).
 */
static int visit_on_overlay(struct files_ctx *ctx, const struct files_entry *e, bool memo)
{
	int r = visit_overlay(ctx, e, memo);

	if (r != -EMEDIUMTYPE)
		return r;
	ctx->overlay_dev = 0;
	return overlay_is_overlay(e->fd, e->st) ? visit_overlay(ctx, e, false) : -EMEDIUMTYPE;
}

int files_visit_open(struct files_ctx *ctx, const struct files_entry *e)
{
	bool memo;
	int r;

	if (!on_overlay(ctx, e, &memo))
		return ctx->visit(ctx, e);
	r = visit_on_overlay(ctx, e, memo);
	return r == -EMEDIUMTYPE ? ctx->visit(ctx, e) : r;
}

/*
 * Opens the regular file that the O_PATH descriptor pfd refers to (st, from files_stat_opath()),
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
	bool memo;
	int r;

	if (known(ctx, st))
		return visit_known(ctx, st, path, proc_link);
	/*
	 * A file on overlayfs is resolved from the O_PATH descriptor: opening it would have
	 * overlayfs open its real file too, which the resolver opens again.
	 */
	e = (struct files_entry){ .fd = pfd, .st = st, .path = path, .proc_link = proc_link };
	if (on_overlay(ctx, &e, &memo)) {
		r = visit_on_overlay(ctx, &e, memo);
		if (r != -EMEDIUMTYPE)
			return r;
	}
	/*
	 * A directory descriptor of /proc/thread-self/fd spares a walk of four names per file;
	 * thread-self, as the scan has a descriptor table of its own (scheduler.c)
	 */
	if (ctx->self_fd_dir <= 0)
		ctx->self_fd_dir = open("/proc/thread-self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ctx->self_fd_dir < 0) {
		files_skip(ctx, SKIP_ERROR);
		ctx->self_fd_dir = 0; /* tried again next time */
		return 0;
	}
	snprintf(name, sizeof(name), "%d", pfd);
	fd = openat(ctx->self_fd_dir, name, FILES_OPEN_FLAGS);
	if (fd < 0) {
		files_skip(ctx, files_skip_reason_of(errno));
		return 0;
	}
	e = (struct files_entry){ .fd = fd, .st = st, .path = path, .proc_link = proc_link };
	return ctx->visit(ctx, &e);
}

/*
 * visit_reopened() watched for a mount that stops answering: the reopen, cachestat and close are
 * the calls that wait on its file system. A mount that a scan left behind is stuck on is
 * skipped instead (quarantine.h).
 */
int files_visit_watched(struct files_ctx *ctx, uint64_t mnt_id, int pfd, const struct stat *st,
			const char *path, const char *proc_link)
{
	uint64_t outer;
	int r;

	if (quarantine_holds(mnt_id)) {
		files_skip(ctx, SKIP_MOUNT_STUCK);
		return 0;
	}
	outer = quarantine_enter(mnt_id);
	r = visit_reopened(ctx, pfd, st, path, proc_link);
	quarantine_leave(outer);
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

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * held: the files a process holds open, from /proc/PID/fd, and the process scan that goes on to
 * its mappings (mapped.c). Each descriptor's magic link is followed O_PATH and admitted
 * (admit.h) with the permission step of a held descriptor: its open mode, read where the
 * process's credentials alone do not decide.
 */
#define _GNU_SOURCE
#include "files/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "files/admit.h"
#include "files/source.h"
#include "parse/proccgroup.h"

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

/* A descriptor of a process: its directory PID/fd and its name there. */
struct held_fd {
	const struct files_proc *p;
	int fd_dir;
	int *fdinfo_dir; /* PID/fdinfo, opened at the first need; -1 until then */
	const char *name;
};

/*
 * Whether the process could have asked cachestat about the file of its descriptor name, st and
 * mnt_id being those of our O_PATH descriptor of it. Where its credentials suffice whatever
 * descriptor it holds (owner, CAP_FOWNER, CAP_DAC_OVERRIDE, write permission), only O_PATH is
 * ruled out, by the link's mode: a swap of the descriptor meanwhile could make us count a file
 * that the process may ask about anyway, never another. Else the open mode comes from fdinfo,
 * read at once with the inode and mount it describes, which must be those we hold. *fdinfo_dir
 * is opened at the first need. 1 when it could, else 0 with the skip counted.
 */
static int fd_may_cachestat(struct files_ctx *ctx, const struct stat *st, uint64_t mnt_id,
			    const void *arg)
{
	const struct held_fd *h = arg;
	const struct files_proc *p = h->p;
	uint64_t info_mnt = UINT64_MAX, info_ino = UINT64_MAX;
	int flags = O_PATH, r; /* what nothing was read gives: nothing */

	if (creds_may_cachestat_any_mode(&p->creds, st)) {
		r = link_open_mode(h->fd_dir, h->name, &flags);
	} else {
		if (*h->fdinfo_dir < 0)
			*h->fdinfo_dir = openat(p->dirfd, "fdinfo",
						O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = *h->fdinfo_dir < 0
			    ? -errno
			    : read_fdinfo(*h->fdinfo_dir, h->name, &flags, &info_mnt, &info_ino);
		if (r == 0 && (info_ino != (uint64_t)st->st_ino || info_mnt != mnt_id))
			r = -ESTALE;
	}
	if (r < 0) {
		files_skip(ctx, SKIP_VANISHED);
		return 0;
	}
	if (!creds_may_cachestat(&p->creds, flags, st)) {
		files_skip(ctx, SKIP_NO_ACCESS);
		return 0;
	}
	return 1;
}

/*
 * Descriptor name of a process: the magic link followed O_PATH and admitted, reopened through
 * our own descriptor only if the process could have asked cachestat about it.
 */
static int visit_fd(struct files_ctx *ctx, const struct files_proc *p, int fd_dir,
		    int *fdinfo_dir, const char *name, const char *proc_link)
{
	const struct held_fd h = {
		.p = p, .fd_dir = fd_dir, .fdinfo_dir = fdinfo_dir, .name = name
	};
	_cleanup_close_ int pfd = -1;

	pfd = openat(fd_dir, name, O_PATH | O_CLOEXEC);
	return files_admit(ctx, &(const struct files_admission){
		.pfd = pfd >= 0 ? pfd : -errno,
		.piddir = p->dirfd,
		.may = fd_may_cachestat,
		.may_arg = &h,
		.proc_link = proc_link,
	});
}

/* Every open descriptor of the process. -errno when its fd directory cannot be opened. */
static int scan_fds(struct files_ctx *ctx, const struct files_proc *p)
{
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_close_ int fdinfo = -1;
	char link[64 + 256 + 2];
	struct dirent *de;
	uint64_t seen = 0;
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
		if (ctx->max_fds_per_process && ++seen > ctx->max_fds_per_process) {
			/* a million descriptors cost what the cap allows, not a readdir of them all */
			ctx->fds_capped = true;
			errno = EMFILE;
			files_skip(ctx, SKIP_PROCESS_CAP);
			break;
		}
		if (!files_charge(ctx)) {
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

/*
 * Whether the process of piddir is in the cgroup being scanned (ctx->cgroup), read through the
 * directory we hold, which stays that process's: cgroup.procs listed a pid, and a process of
 * another cgroup may have got it before the directory was opened. 1, 0, or -errno.
 */
static int in_scanned_cgroup(const struct files_ctx *ctx, int piddir)
{
	_cleanup_free_ char *buf = NULL;
	const char *path;
	size_t len;
	int r;

	if (!ctx->cgroup)
		return 1;
	r = read_file_at(piddir, "cgroup", &buf, &len);
	if (r < 0)
		return r;
	path = proccgroup_path(buf, ctx->cgroup_memory_v1);
	return path && strcmp(path, ctx->cgroup) == 0;
}

int files_scan_pid(struct files_ctx *ctx, pid_t pid)
{
	_cleanup_close_ int piddir = -1;
	struct files_proc p = { .pid = pid };
	char name[16];
	int r;

	ctx->pid = pid;
	if (files_stopped(ctx))
		return 0;
	snprintf(name, sizeof(name), "%d", (int)pid);
	piddir = openat(ctx->procfs_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (piddir < 0)
		return proc_gone(-errno) ? 0 : -errno;
	r = in_scanned_cgroup(ctx, piddir);
	if (r == 0) {
		errno = ESTALE; /* for the skip hook: no call failed */
		files_skip(ctx, SKIP_VANISHED);
	}
	if (r <= 0)
		return r == 0 || proc_gone(r) ? 0 : r;
	r = read_creds(ctx, piddir, &p.creds);
	if (r < 0)
		return proc_gone(r) ? 0 : r;
	p.dirfd = piddir;
	r = scan_fds(ctx, &p);
	if (r < 0 && !proc_gone(r) && r != -EACCES && r != -EPERM) {
		creds_done(&p.creds);
		return r;
	}
	r = proc_gone(r) ? 0 : files_scan_mappings(ctx, &p);
	creds_done(&p.creds);
	return proc_gone(r) ? 0 : r;
}

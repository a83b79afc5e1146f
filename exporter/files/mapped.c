/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mapped: the files a process maps, from /proc/PID/maps. Each is opened O_PATH through
 * PID/map_files (which reaches deleted files too), or by the path maps prints where map_files
 * is closed to us, and admitted (admit.h) as the file maps names, by mincore(2)'s rule.
 */
#define _GNU_SOURCE
#include "files/files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/lines.h"
#include "base/util.h"
#include "files/admit.h"
#include "files/source.h"

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
static int open_mapping(struct files_ctx *ctx, const struct files_proc *p, const struct mapping *m,
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

/* The permission step of a mapping (arg: the process and its mapping). */
struct mapped_file {
	const struct files_proc *p;
	const struct mapping *m;
};

static int mapped_may_cachestat(struct files_ctx *ctx, const struct stat *st, uint64_t mnt_id,
				const void *arg)
{
	const struct mapped_file *f = arg;

	(void)mnt_id;
	/*
	 * On overlayfs the device maps printed was not compared (admit.h): the line's mode may
	 * be another object's, so the credentials alone decide, as for a private mapping.
	 */
	if (!creds_may_cachestat_mapping(&f->p->creds, st->st_dev == f->m->dev ? f->m->perms : "---p",
					 st)) {
		files_skip(ctx, SKIP_NO_ACCESS);
		return 0;
	}
	return 1;
}

/*
 * One file mapping. Mappings follow mincore(2)'s rule (a shared writable mapping implies a
 * descriptor open for writing; otherwise owner, or write permission).
 */
static int visit_mapping(struct files_ctx *ctx, const struct files_proc *p, const struct mapping *m)
{
	const struct mapped_file f = { .p = p, .m = m };
	const struct stat want = { .st_dev = m->dev, .st_ino = (ino_t)m->ino };
	_cleanup_close_ int pfd = -1;
	char link[128];

	link[0] = '\0';
	pfd = open_mapping(ctx, p, m, link, sizeof(link));
	return files_admit(ctx, &(const struct files_admission){
		.pfd = pfd,
		.piddir = p->dirfd,
		.want = &want,
		.want_dev = !link[0], /* a path, not map_files: the device even on overlayfs */
		.may = mapped_may_cachestat,
		.may_arg = &f,
		.path = link[0] ? NULL : m->path,
		.proc_link = link[0] ? link : NULL,
	});
}

/*
 * A maps line is at most a path of PATH_MAX bytes, its newlines printed as "\012", after 100 or
 * so of addresses and numbers: a longer one is no file's, and is skipped.
 */
#define MAPS_LINE_MAX (4 * PATH_MAX + 256)

/*
 * PID/maps has one line per mapping, in address order; up to vm.max_map_count of them, so it is
 * read a line at a time (a process with 200,000 mappings of long paths has a maps file of
 * hundreds of megabytes), and at most max_maps_per_process lines of it.
 */
int files_scan_mappings(struct files_ctx *ctx, const struct files_proc *p)
{
	_cleanup_(lines_done) struct lines maps = { .fd = -1 };
	uint64_t n = 0;
	char *line;
	int r;

	r = lines_open_at(&maps, p->dirfd, "maps", MAPS_LINE_MAX);
	if (r < 0)
		return r;
	while ((r = lines_next(&maps, &line)) > 0) {
		struct mapping m;

		if (ctx->max_maps_per_process && ++n > ctx->max_maps_per_process) {
			ctx->maps_capped = true;
			errno = E2BIG;
			files_skip(ctx, SKIP_PROCESS_CAP);
			return 0;
		}
		if (!parse_mapping(line, &m) || fileset_contains(&ctx->seen, (uint64_t)m.dev, m.ino))
			continue;
		if (!files_charge(ctx)) {
			if (files_stopped(ctx))
				break;
			continue;
		}
		r = visit_mapping(ctx, p, &m);
		if (r < 0)
			return r;
	}
	return r < 0 ? r : 0;
}

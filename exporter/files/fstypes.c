/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "files/fstypes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parse/mountinfo.h"

/* The mount a memfd of ours lives on: the one memfds, SysV shm and shared /dev/zero use. */
static void find_shm_mount(struct fstypes *f)
{
	struct statx sx;
	int fd = memfd_create("cachestat-exporter-probe", MFD_CLOEXEC);

	if (fd < 0)
		return;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID)) {
		f->shm_mnt_id = sx.stx_mnt_id;
		f->shm_known = true;
	}
	close(fd);
}

int fstypes_init(struct fstypes *f, const char *regex)
{
	*f = (struct fstypes){ 0 };
	if (!regex || !*regex)
		return 0;
	if (regcomp(&f->exclude, regex, REG_EXTENDED | REG_NOSUB) != 0)
		return -EINVAL;
	f->active = true;
	find_shm_mount(f);
	return 0;
}

void fstypes_reset(struct fstypes *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->mounts[i].point);
	f->n = 0;
	f->loaded_self = false;
}

void fstypes_done(struct fstypes *f)
{
	fstypes_reset(f);
	free(f->mounts);
	if (f->active)
		regfree(&f->exclude);
	*f = (struct fstypes){ 0 };
}

bool fstypes_name_excluded(const struct fstypes *f, const char *fstype)
{
	return f->active && regexec(&f->exclude, fstype, 0, NULL, 0) == 0;
}

/* The index where mnt_id is or would go. */
static size_t find(const struct fstypes *f, uint64_t mnt_id)
{
	size_t lo = 0, hi = f->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->mounts[mid].mnt_id < mnt_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int fstypes_mount_excluded(const struct fstypes *f, uint64_t mnt_id)
{
	size_t i = find(f, mnt_id);

	if (f->shm_known && mnt_id == f->shm_mnt_id)
		return fstypes_name_excluded(f, "tmpfs") ? 1 : 0;
	if (i == f->n || f->mounts[i].mnt_id != mnt_id)
		return -ENOENT;
	return f->mounts[i].excluded ? 1 : 0;
}

static int add(struct fstypes *f, uint64_t mnt_id, bool excluded, const char *point)
{
	size_t i = find(f, mnt_id);

	if (i < f->n && f->mounts[i].mnt_id == mnt_id) {
		if (point && !f->mounts[i].point)
			f->mounts[i].point = strdup(point);
		return 0;
	}
	if (f->n == f->cap) {
		size_t ncap = f->cap ? f->cap * 2 : 64;
		struct fstypes_mount *m = realloc(f->mounts, ncap * sizeof(*m));

		if (!m)
			return -ENOMEM;
		f->mounts = m;
		f->cap = ncap;
	}
	memmove(f->mounts + i + 1, f->mounts + i, (f->n - i) * sizeof(*f->mounts));
	f->mounts[i] = (struct fstypes_mount){ .mnt_id = mnt_id, .excluded = excluded };
	f->n++;
	if (point) {
		f->mounts[i].point = strdup(point);
		if (!f->mounts[i].point)
			return -ENOMEM;
	}
	return 0;
}

/*
 * One line of mountinfo, read by its parser (parse/mountinfo.h): the mount, excluded or not by
 * its type. A line the parser refuses is passed over; only running out of memory is an error.
 */
static int add_line(struct fstypes *f, const char *line, size_t len, bool with_points)
{
	struct mountinfo m;
	int r = mountinfo_parse_line(line, len, &m);

	if (r < 0)
		return r == -ENOMEM ? r : 0;
	r = add(f, (uint64_t)m.mount_id, fstypes_name_excluded(f, m.fstype),
		with_points ? m.mount_point : NULL);
	mountinfo_done(&m);
	return r;
}

int fstypes_add_mountinfo(struct fstypes *f, const char *buf, size_t len, bool with_points)
{
	const char *p = buf, *end = buf + len;
	int r = 0;

	while (p < end && r == 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (n > 0)
			r = add_line(f, p, n, with_points);
		p += n + 1;
	}
	return r;
}

/* Whether point is path or a directory above it. */
static size_t prefix_len(const char *point, const char *path)
{
	size_t n = strlen(point);

	if (strcmp(point, "/") == 0)
		return 1;
	if (strncmp(point, path, n) != 0 || (path[n] != '/' && path[n] != '\0'))
		return 0;
	return n;
}

bool fstypes_path_excluded(const struct fstypes *f, const char *path)
{
	size_t best = 0;
	bool excluded = false;

	/* mounts stacked on one point: the later (larger id, as a rule) is on top */
	for (size_t i = 0; i < f->n; i++) {
		size_t n;

		if (!f->mounts[i].point)
			continue;
		n = prefix_len(f->mounts[i].point, path);
		if (n > 0 && n >= best) {
			best = n;
			excluded = f->mounts[i].excluded;
		}
	}
	return excluded;
}

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

/* mountinfo escapes space, tab, newline and backslash as \ooo; undone in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
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
 * "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue": mount id,
 * parent, dev, root, mount point, options, optional fields up to "-", then the type.
 */
static int add_line(struct fstypes *f, char *line, bool with_points)
{
	char *save = NULL, *tok, *point = NULL;
	unsigned long long id = 0;
	int i = 0;

	for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save), i++) {
		if (i == 0)
			id = strtoull(tok, NULL, 10);
		else if (i == 4)
			point = tok;
		else if (i > 5 && strcmp(tok, "-") == 0)
			break;
	}
	tok = strtok_r(NULL, " ", &save);
	if (!tok || !point)
		return 0;
	if (with_points)
		unescape(point);
	return add(f, id, fstypes_name_excluded(f, tok), with_points ? point : NULL);
}

int fstypes_add_mountinfo(struct fstypes *f, const char *buf, size_t len, bool with_points)
{
	char *copy = strndup(buf, len), *save = NULL;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	for (char *line = strtok_r(copy, "\n", &save); line && r == 0;
	     line = strtok_r(NULL, "\n", &save))
		r = add_line(f, line, with_points);
	free(copy);
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

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
#include "files/overlay.h"

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

static void table_free(struct fstypes_table *t);

void fstypes_reset(struct fstypes *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->mounts[i].point);
	f->n = 0;
	f->loaded_self = false;
	table_free(f->host);
	f->host = NULL;
}

void fstypes_done(struct fstypes *f)
{
	fstypes_reset(f);
	free(f->mounts);
	if (f->active && !f->rules_shared)
		regfree(&f->exclude);
	*f = (struct fstypes){ 0 };
}

void fstypes_scan_init(struct fstypes *scan, const struct fstypes *rules)
{
	*scan = (struct fstypes){ .exclude = rules->exclude, .active = rules->active,
				  .shm_mnt_id = rules->shm_mnt_id, .shm_known = rules->shm_known,
				  .rules_shared = true };
}

void fstypes_scan_done(struct fstypes *scan)
{
	fstypes_reset(scan);
	free(scan->mounts);
	*scan = (struct fstypes){ 0 };
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

/* ---- one namespace's mount table, to place the layers of its overlays ---- */

/* Overlays on overlay layers: the kernel stacks two deep; past this, a loop of names. */
#define FSTYPES_MAX_OVERLAY_DEPTH 3

struct fstypes_table {
	struct mountinfo *m; /* in the order mountinfo lists them: a later one on a point is on top */
	size_t n;
};

static void table_free(struct fstypes_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		mountinfo_done(&t->m[i]);
	free(t->m);
	free(t);
}

/* Parses a whole mountinfo; malformed lines are passed over. NULL when out of memory. */
static struct fstypes_table *table_parse(const char *buf, size_t len)
{
	struct fstypes_table *t = calloc(1, sizeof(*t));
	struct mountinfo m;
	size_t cap = 0;

	if (!t)
		return NULL;
	/* a line out of memory is passed over too: the mount is unknown, the caller fails closed */
	for (const char *pos = buf; mountinfo_next(&pos, buf + len, &m) > 0;) {
		if (t->n == cap) {
			struct mountinfo *nm = realloc(t->m, (cap ? cap * 2 : 64) * sizeof(*nm));

			if (!nm) {
				mountinfo_done(&m);
				table_free(t);
				return NULL;
			}
			t->m = nm;
			cap = cap ? cap * 2 : 64;
		}
		t->m[t->n++] = m;
	}
	return t;
}

/*
 * The mount that path lies on in t, other than the mount not (an overlay is not on itself: a
 * container's root overlay is the longest prefix of every host path in its own table). NULL
 * when no mount point is above it.
 */
static const struct mountinfo *table_place(const struct fstypes_table *t, const char *path,
					   const struct mountinfo *not)
{
	const struct mountinfo *best = NULL;
	size_t best_len = 0;

	for (size_t i = 0; i < t->n; i++) {
		size_t n;

		if (not && t->m[i].mount_id == not->mount_id)
			continue;
		n = prefix_len(t->m[i].mount_point, path);
		if (n > 0 && n >= best_len) {
			best = &t->m[i];
			best_len = n;
		}
	}
	return best;
}

static bool overlay_excluded(const struct fstypes *f, const struct fstypes_table *t,
			     const struct mountinfo *m, unsigned depth);

/* Whether mount m of table t is excluded: its type, or for an overlay, a layer's. */
static bool mount_excluded_in(const struct fstypes *f, const struct fstypes_table *t,
			      const struct mountinfo *m, unsigned depth)
{
	if (!f->active)
		return false;
	if (fstypes_name_excluded(f, m->fstype))
		return true;
	return strcmp(m->fstype, "overlay") == 0 && overlay_excluded(f, t, m, depth);
}

/* Whether path is absolute with no empty, "." or ".." component: its mount found by its name. */
static bool placeable(const char *path)
{
	if (path[0] != '/')
		return false;
	for (const char *c = path + 1;; c++) {
		size_t n = strcspn(c, "/");

		if ((n == 0 && c[n] == '/') || (n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += n;
		if (!*c)
			return true;
	}
}

/*
 * Whether the layer named path of the overlay m (in table t) may lie on an excluded file system.
 * The path is the mounter's: placed in the overlay's own namespace and in the host's (where
 * container runtimes mount), excluded if either places it on an excluded mount. A path that
 * cannot be placed by its name is excluded: relative (to the mounter's working directory then),
 * or with an empty, "." or ".." component. A symlink on the way, or a directory renamed since the
 * mount, can still mislead this: a scan stuck on such a mount is left behind, and the mount
 * quarantined (quarantine.h).
 */
static bool layer_excluded(const struct fstypes *f, const struct fstypes_table *t,
			   const struct mountinfo *m, const char *path, unsigned depth)
{
	const struct mountinfo *on;

	if (!placeable(path))
		return true;
	on = table_place(t, path, m);
	if (on && mount_excluded_in(f, t, on, depth + 1))
		return true;
	if (f->host && f->host != t) {
		on = table_place(f->host, path, m);
		if (on && mount_excluded_in(f, f->host, on, depth + 1))
			return true;
	}
	return false;
}

/*
 * Whether any layer of the overlay m lies on an excluded file system: overlayfs checks
 * permission on the real inode with the mounter's credentials, so opening a file of an overlay
 * asks a FUSE daemon below it however the FUSE mount restricts others. Unreadable options fail
 * closed.
 */
static bool overlay_excluded(const struct fstypes *f, const struct fstypes_table *t,
			     const struct mountinfo *m, unsigned depth)
{
	struct overlay_layers ly;
	bool excluded = false;

	if (depth >= FSTYPES_MAX_OVERLAY_DEPTH || overlay_parse_layers(m->super_options, &ly) < 0)
		return true;
	if (ly.upper)
		excluded = layer_excluded(f, t, m, ly.upper, depth);
	for (size_t i = 0; i < ly.n_lower && !excluded; i++)
		excluded = layer_excluded(f, t, m, ly.lower[i], depth);
	for (size_t i = 0; i < ly.n_data && !excluded; i++)
		excluded = layer_excluded(f, t, m, ly.data[i], depth);
	overlay_layers_done(&ly);
	return excluded;
}

int fstypes_set_host_mountinfo(struct fstypes *f, const char *buf, size_t len)
{
	struct fstypes_table *t = table_parse(buf, len);

	if (!t)
		return -ENOMEM;
	table_free(f->host);
	f->host = t;
	return 0;
}

int fstypes_add_mountinfo(struct fstypes *f, const char *buf, size_t len, bool with_points)
{
	struct fstypes_table *t = table_parse(buf, len);
	int r = 0;

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < t->n && r == 0; i++)
		r = add(f, (uint64_t)t->m[i].mount_id, mount_excluded_in(f, t, &t->m[i], 0),
			with_points ? t->m[i].mount_point : NULL);
	table_free(t);
	return r;
}

/* The mount of our namespace that path lies on (its longest mount point prefix), or NULL. */
static const struct fstypes_mount *path_mount(const struct fstypes *f, const char *path)
{
	const struct fstypes_mount *best = NULL;
	size_t best_len = 0;

	/* mounts stacked on one point: the later (larger id, as a rule) is on top */
	for (size_t i = 0; i < f->n; i++) {
		size_t n;

		if (!f->mounts[i].point)
			continue;
		n = prefix_len(f->mounts[i].point, path);
		if (n > 0 && n >= best_len) {
			best_len = n;
			best = &f->mounts[i];
		}
	}
	return best;
}

bool fstypes_path_excluded(const struct fstypes *f, const char *path)
{
	const struct fstypes_mount *m = path_mount(f, path);

	return m && m->excluded;
}

uint64_t fstypes_path_mount(const struct fstypes *f, const char *path)
{
	const struct fstypes_mount *m = path_mount(f, path);

	return m ? m->mnt_id : UINT64_MAX;
}

/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "files/fstypes.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
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

/* ---- one namespace's mount table, indexed by mount id and by mount point ---- */

/* Overlays on overlay layers: the kernel stacks two deep; past this, a loop of names. */
#define FSTYPES_MAX_OVERLAY_DEPTH 3

/* The clock is read every so many mountinfo lines. */
#define FSTYPES_CLOCK_EVERY 256

struct fstypes_table {
	unsigned refs;       /* under cache_lock: the scans that hold it, and the cache */
	struct mountinfo *m; /* in the order mountinfo lists them: a later one on a point is on top */
	size_t n;
	uint32_t *by_id;    /* indexes into m, by mount id */
	uint32_t *by_point; /* indexes into m, by mount point, then by order */
	uint64_t ns_ino;
	bool capped; /* cut at a cap: its mounts are not judged */
	int capped_by; /* which cap (enum fstypes_cap) */
	size_t max_mounts, max_bytes; /* the caps it was parsed under */
};

/*
 * Tables kept across scans by mount namespace: one is used again while its namespace's
 * mountinfo reads byte for byte as it did (a mount or unmount changes the text), so a tenant's
 * table is parsed and indexed once, not every scan. Verdicts are not kept: they depend on the
 * host's table too, and are cheap once the tables are indexed.
 */
struct fstypes_cache_entry {
	uint64_t ns_ino;
	char *text;
	size_t len;
	struct fstypes_table *t;
	uint64_t used; /* the tick of its last use, to drop the least recently used */
};

struct fstypes_cache {
	struct fstypes_cache_entry e[FSTYPES_CACHE_MAX_TABLES];
	size_t n, bytes;
	uint64_t tick;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether the deadline passed (and sets timed_out). */
static bool late(struct fstypes *f)
{
	if (!f->timed_out && f->deadline_ns && now_ns() > f->deadline_ns)
		f->timed_out = true;
	return f->timed_out;
}

/* Drops a reference to t. Under cache_lock. */
static void table_unref_locked(struct fstypes_table *t)
{
	if (!t || --t->refs > 0)
		return;
	for (size_t i = 0; i < t->n; i++)
		mountinfo_done(&t->m[i]);
	free(t->m);
	free(t->by_id);
	free(t->by_point);
	free(t);
}

static void table_free(struct fstypes_table *t)
{
	pthread_mutex_lock(&cache_lock);
	table_unref_locked(t);
	pthread_mutex_unlock(&cache_lock);
}

static void judged_clear(struct fstypes *f)
{
	free(f->judged);
	f->judged = NULL;
	f->n_judged = f->cap_judged = 0;
}

int fstypes_init(struct fstypes *f, const char *regex)
{
	*f = (struct fstypes){ 0 };
	fstypes_set_limits(f, &(struct fstypes_limits){ 0 });
	if (!regex || !*regex)
		return 0;
	if (regcomp(&f->exclude, regex, REG_EXTENDED | REG_NOSUB) != 0)
		return -EINVAL;
	f->active = true;
	f->cache = calloc(1, sizeof(*f->cache)); /* none: every scan parses its tables */
	find_shm_mount(f);
	return 0;
}

void fstypes_set_limits(struct fstypes *f, const struct fstypes_limits *lim)
{
	f->lim = *lim;
	if (!f->lim.max_mounts)
		f->lim.max_mounts = FSTYPES_DEFAULT_MAX_MOUNTS;
	if (!f->lim.max_bytes)
		f->lim.max_bytes = FSTYPES_DEFAULT_MAX_MOUNTINFO_BYTES;
	if (!f->lim.max_layers)
		f->lim.max_layers = FSTYPES_DEFAULT_MAX_LAYERS;
}

void fstypes_reset(struct fstypes *f)
{
	for (size_t i = 0; i < f->n_tables; i++)
		table_free(f->tables[i]);
	free(f->tables);
	f->tables = NULL;
	f->n_tables = 0;
	f->host = f->self = NULL;
	f->loaded_self = false;
	f->timed_out = false;
	judged_clear(f);
}

static void cache_free(struct fstypes_cache *c);

void fstypes_done(struct fstypes *f)
{
	fstypes_reset(f);
	if (!f->rules_shared)
		cache_free(f->cache);
	if (f->active && !f->rules_shared)
		regfree(&f->exclude);
	*f = (struct fstypes){ 0 };
}

void fstypes_scan_init(struct fstypes *scan, const struct fstypes *rules)
{
	*scan = (struct fstypes){ .exclude = rules->exclude, .active = rules->active,
				  .lim = rules->lim, .shm_mnt_id = rules->shm_mnt_id,
				  .shm_known = rules->shm_known, .rules_shared = true,
				  .cache = rules->cache };
}

void fstypes_scan_done(struct fstypes *scan)
{
	fstypes_reset(scan);
	*scan = (struct fstypes){ 0 };
}

bool fstypes_name_excluded(const struct fstypes *f, const char *fstype)
{
	return f->active && regexec(&f->exclude, fstype, 0, NULL, 0) == 0;
}

/* ---- the verdicts of a scan, by mount id ---- */

static size_t judged_slot(const struct fstypes *f, uint64_t mnt_id)
{
	size_t mask = f->cap_judged - 1, i = (size_t)((mnt_id * 0x9e3779b97f4a7c15ull) >> 32) & mask;

	while (f->judged[i].mnt_id != UINT64_MAX && f->judged[i].mnt_id != mnt_id)
		i = (i + 1) & mask;
	return i;
}

static const struct fstypes_judged *judged_get(const struct fstypes *f, uint64_t mnt_id)
{
	size_t i;

	if (!f->cap_judged)
		return NULL;
	i = judged_slot(f, mnt_id);
	return f->judged[i].mnt_id == mnt_id ? &f->judged[i] : NULL;
}

/* Keeps a verdict; out of memory it is only not kept (judged again when asked again). */
static void judged_put(struct fstypes *f, uint64_t mnt_id, int verdict)
{
	size_t i;

	if (mnt_id == UINT64_MAX)
		return;
	if ((f->n_judged + 1) * 2 > f->cap_judged) {
		size_t ncap = f->cap_judged ? f->cap_judged * 2 : 64;
		struct fstypes_judged *old = f->judged, *nj = malloc(ncap * sizeof(*nj));
		size_t ocap = f->cap_judged;

		if (!nj)
			return;
		for (size_t k = 0; k < ncap; k++)
			nj[k].mnt_id = UINT64_MAX;
		f->judged = nj;
		f->cap_judged = ncap;
		for (size_t k = 0; k < ocap; k++)
			if (old[k].mnt_id != UINT64_MAX)
				f->judged[judged_slot(f, old[k].mnt_id)] = old[k];
		free(old);
	}
	i = judged_slot(f, mnt_id);
	if (f->judged[i].mnt_id != mnt_id)
		f->n_judged++;
	f->judged[i] = (struct fstypes_judged){ .mnt_id = mnt_id, .verdict = verdict };
}

/* ---- the indexes ---- */

static const struct fstypes_table *sort_table; /* qsort has no context argument */

static int by_id_cmp(const void *a, const void *b)
{
	int x = sort_table->m[*(const uint32_t *)a].mount_id;
	int y = sort_table->m[*(const uint32_t *)b].mount_id;

	return (x > y) - (x < y);
}

static int by_point_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = strcmp(sort_table->m[x].mount_point, sort_table->m[y].mount_point);

	return c ? c : (x > y) - (x < y);
}

static int table_index(struct fstypes_table *t)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

	t->by_id = malloc((t->n ? t->n : 1) * sizeof(*t->by_id));
	t->by_point = malloc((t->n ? t->n : 1) * sizeof(*t->by_point));
	if (!t->by_id || !t->by_point)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++)
		t->by_id[i] = t->by_point[i] = (uint32_t)i;
	pthread_mutex_lock(&lock);
	sort_table = t;
	qsort(t->by_id, t->n, sizeof(*t->by_id), by_id_cmp);
	qsort(t->by_point, t->n, sizeof(*t->by_point), by_point_cmp);
	sort_table = NULL;
	pthread_mutex_unlock(&lock);
	return 0;
}

/* The entry of mount_id in t, or NULL. */
static const struct mountinfo *table_get(const struct fstypes_table *t, uint64_t mnt_id)
{
	size_t lo = 0, hi = t->n;

	if (mnt_id > INT_MAX)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((uint64_t)t->m[t->by_id[mid]].mount_id < mnt_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->n && (uint64_t)t->m[t->by_id[lo]].mount_id == mnt_id ? &t->m[t->by_id[lo]]
									      : NULL;
}

/* point against the first len bytes of path, as strcmp() orders them. */
static int point_cmp(const char *point, const char *path, size_t len)
{
	int c = strncmp(point, path, len);

	if (c)
		return c;
	return point[len] ? 1 : 0; /* strncmp stops at a NUL of point before len: then c < 0 */
}

/*
 * The mount on top of the mount point path[0..len) in t other than the mount not, or NULL:
 * the last in mountinfo order of those on that point.
 */
static const struct mountinfo *table_on_point(const struct fstypes_table *t, const char *path,
					      size_t len, const struct mountinfo *not)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) { /* the first point after path[0..len) */
		size_t mid = lo + (hi - lo) / 2;

		if (point_cmp(t->m[t->by_point[mid]].mount_point, path, len) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo > 0) {
		const struct mountinfo *m = &t->m[t->by_point[--lo]];

		if (point_cmp(m->mount_point, path, len) != 0)
			return NULL;
		if (!not || m->mount_id != not->mount_id)
			return m;
	}
	return NULL;
}

/*
 * The mount that path lies on in t, other than the mount not (an overlay is not on itself: a
 * container's root overlay is the longest prefix of every host path in its own table): its
 * longest mount point prefix, looked up one component at a time from the end, each a binary
 * search. NULL when no mount point is above it.
 */
static const struct mountinfo *table_place(const struct fstypes_table *t, const char *path,
					   const struct mountinfo *not)
{
	const struct mountinfo *m;
	size_t len = strlen(path);

	for (;;) {
		m = table_on_point(t, path, len ? len : 1, not);
		if (m || len <= 1)
			return m;
		while (len > 0 && path[len - 1] != '/')
			len--;
		if (len > 1)
			len--; /* the prefix without its slash; "/" itself last */
		else
			len = 1;
	}
}

/*
 * Parses the lines of [buf, end) into t, at most max_mounts (capped past it); malformed lines
 * are passed over. Returns 0, -ETIME past the deadline, -ENOMEM.
 */
static int table_lines(struct fstypes *f, struct fstypes_table *t, const char *buf,
		       const char *end)
{
	struct mountinfo m;
	size_t cap = 0;

	/* a line out of memory is passed over too: the mount is unknown, the caller fails closed */
	for (const char *pos = buf; pos < end;) {
		if (t->n % FSTYPES_CLOCK_EVERY == 0 && late(f))
			return -ETIME;
		if (t->n == f->lim.max_mounts) {
			t->capped = true;
			t->capped_by = FSTYPES_CAP_MOUNTS;
			f->capped[FSTYPES_CAP_MOUNTS]++;
			return 0;
		}
		if (mountinfo_next(&pos, end, &m) <= 0)
			return 0;
		if (t->n == cap) {
			struct mountinfo *nm = realloc(t->m, (cap ? cap * 2 : 64) * sizeof(*nm));

			if (!nm) {
				mountinfo_done(&m);
				return -ENOMEM;
			}
			t->m = nm;
			cap = cap ? cap * 2 : 64;
		}
		t->m[t->n++] = m;
	}
	return 0;
}

/*
 * Parses a whole mountinfo, at most max_mounts lines and max_bytes bytes (capped past either),
 * then indexes it. NULL when out of memory or late.
 */
static struct fstypes_table *table_parse(struct fstypes *f, const char *buf, size_t len)
{
	struct fstypes_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->refs = 1;
	t->max_mounts = f->lim.max_mounts;
	t->max_bytes = f->lim.max_bytes;
	if (len > f->lim.max_bytes) {
		t->capped = true;
		t->capped_by = FSTYPES_CAP_BYTES;
		f->capped[FSTYPES_CAP_BYTES]++;
	}
	if (table_lines(f, t, buf, buf + (len > f->lim.max_bytes ? f->lim.max_bytes : len)) < 0 ||
	    table_index(t) < 0) {
		table_free(t);
		return NULL;
	}
	return t;
}

static int table_keep(struct fstypes *f, struct fstypes_table *t)
{
	struct fstypes_table **nt = realloc(f->tables, (f->n_tables + 1) * sizeof(*nt));

	if (!nt) {
		table_free(t);
		return -ENOMEM;
	}
	f->tables = nt;
	f->tables[f->n_tables++] = t;
	return 0;
}

static int overlay_verdict(struct fstypes *f, const struct fstypes_table *t,
			   const struct mountinfo *m, unsigned depth);

/*
 * The verdict on mount m of table t: its type, or for an overlay, a layer's (1 excluded, 0
 * not, -E2BIG or -ETIME). Kept for the scan by mount id.
 */
static int mount_verdict(struct fstypes *f, const struct fstypes_table *t,
			 const struct mountinfo *m, unsigned depth)
{
	const struct fstypes_judged *j = judged_get(f, (uint64_t)m->mount_id);
	int v;

	if (j)
		return j->verdict;
	if (!f->active)
		v = 0;
	else if (fstypes_name_excluded(f, m->fstype))
		v = 1;
	else if (strcmp(m->fstype, "overlay") == 0)
		v = overlay_verdict(f, t, m, depth);
	else
		v = 0;
	if (v != -ETIME)
		judged_put(f, (uint64_t)m->mount_id, v);
	return v;
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
 * The verdict on the layer named path of the overlay m (in table t): whether it may lie on an
 * excluded file system. The path is the mounter's: placed in the overlay's own namespace and in
 * the host's (where container runtimes mount), excluded if either places it on an excluded
 * mount. A path that cannot be placed by its name is excluded: relative (to the mounter's
 * working directory then), or with an empty, "." or ".." component. A symlink on the way, or a
 * directory renamed since the mount, can still mislead this: a scan stuck on such a mount is
 * left behind, and the mount quarantined (quarantine.h).
 */
static int layer_verdict(struct fstypes *f, const struct fstypes_table *t,
			 const struct mountinfo *m, const char *path, unsigned depth)
{
	const struct mountinfo *on;
	int v;

	if (late(f))
		return -ETIME;
	if (!placeable(path))
		return 1;
	on = table_place(t, path, m);
	if (on && (v = mount_verdict(f, t, on, depth + 1)) != 0)
		return v;
	if (f->host && f->host != t) {
		on = table_place(f->host, path, m);
		if (on && (v = mount_verdict(f, f->host, on, depth + 1)) != 0)
			return v;
	}
	return 0;
}

/*
 * Whether any layer of the overlay m lies on an excluded file system: overlayfs checks
 * permission on the real inode with the mounter's credentials, so opening a file of an overlay
 * asks a FUSE daemon below it however the FUSE mount restricts others. Unreadable options fail
 * closed; more than max_layers layers is -E2BIG.
 */
static int overlay_verdict(struct fstypes *f, const struct fstypes_table *t,
			   const struct mountinfo *m, unsigned depth)
{
	struct overlay_layers ly;
	int v = 0;

	if (depth >= FSTYPES_MAX_OVERLAY_DEPTH || overlay_parse_layers(m->super_options, &ly) < 0)
		return 1;
	if (ly.n_lower + ly.n_data + (ly.upper ? 1 : 0) > f->lim.max_layers) {
		overlay_layers_done(&ly);
		f->capped[FSTYPES_CAP_LAYERS]++;
		return -E2BIG;
	}
	if (ly.upper)
		v = layer_verdict(f, t, m, ly.upper, depth);
	for (size_t i = 0; i < ly.n_lower && v == 0; i++)
		v = layer_verdict(f, t, m, ly.lower[i], depth);
	for (size_t i = 0; i < ly.n_data && v == 0; i++)
		v = layer_verdict(f, t, m, ly.data[i], depth);
	overlay_layers_done(&ly);
	return v;
}

static void cache_drop(struct fstypes_cache *c, size_t i)
{
	c->bytes -= c->e[i].len;
	free(c->e[i].text);
	table_unref_locked(c->e[i].t);
	c->e[i] = c->e[--c->n];
}

static void cache_free(struct fstypes_cache *c)
{
	pthread_mutex_lock(&cache_lock);
	while (c && c->n)
		cache_drop(c, c->n - 1);
	pthread_mutex_unlock(&cache_lock);
	free(c);
}

/* The table kept for namespace ns_ino if its text is buf's, referenced; else NULL. */
static struct fstypes_table *cache_get(const struct fstypes *f, uint64_t ns_ino, const char *buf,
				       size_t len)
{
	struct fstypes_cache *c = f->cache;
	struct fstypes_table *t = NULL;

	if (!c || !ns_ino)
		return NULL;
	pthread_mutex_lock(&cache_lock);
	for (size_t i = 0; i < c->n; i++) {
		if (c->e[i].ns_ino != ns_ino)
			continue;
		if (c->e[i].len == len && memcmp(c->e[i].text, buf, len) == 0 &&
		    c->e[i].t->max_mounts == f->lim.max_mounts &&
		    c->e[i].t->max_bytes == f->lim.max_bytes) {
			t = c->e[i].t;
			t->refs++;
			c->e[i].used = ++c->tick;
		}
		break;
	}
	pthread_mutex_unlock(&cache_lock);
	return t;
}

/* Keeps t (parsed from buf) for namespace ns_ino, in place of what was kept for it. */
static void cache_put(struct fstypes_cache *c, uint64_t ns_ino, const char *buf, size_t len,
		      struct fstypes_table *t)
{
	char *text;

	if (!c || !ns_ino || len > FSTYPES_CACHE_MAX_BYTES || !(text = malloc(len ? len : 1)))
		return;
	memcpy(text, buf, len);
	pthread_mutex_lock(&cache_lock);
	for (size_t i = 0; i < c->n; i++)
		if (c->e[i].ns_ino == ns_ino) {
			cache_drop(c, i);
			break;
		}
	while (c->n == FSTYPES_CACHE_MAX_TABLES || (c->n && c->bytes + len > FSTYPES_CACHE_MAX_BYTES)) {
		size_t old = 0;

		for (size_t i = 1; i < c->n; i++)
			if (c->e[i].used < c->e[old].used)
				old = i;
		cache_drop(c, old);
	}
	t->refs++;
	c->e[c->n++] = (struct fstypes_cache_entry){ .ns_ino = ns_ino, .text = text, .len = len,
						     .t = t, .used = ++c->tick };
	c->bytes += len;
	pthread_mutex_unlock(&cache_lock);
}

/* The table of buf: the one kept for its namespace, or parsed (and kept). NULL as table_parse. */
static struct fstypes_table *table_of(struct fstypes *f, const char *buf, size_t len,
				      uint64_t ns_ino)
{
	struct fstypes_table *t = cache_get(f, ns_ino, buf, len);

	if (t) {
		if (t->capped)
			f->capped[t->capped_by]++;
		return t;
	}
	t = table_parse(f, buf, len);
	if (!t)
		return NULL;
	t->ns_ino = ns_ino;
	cache_put(f->cache, ns_ino, buf, len, t);
	return t;
}

/* t (NULL: it could not be made) as the host's table, kept with the others. */
static int set_host(struct fstypes *f, struct fstypes_table *t)
{
	if (!t || table_keep(f, t) < 0)
		return -ENOMEM;
	f->host = t;
	return 0;
}

int fstypes_set_host_mountinfo_ns(struct fstypes *f, const char *buf, size_t len,
				  uint64_t ns_ino)
{
	return set_host(f, table_of(f, buf, len, ns_ino));
}

int fstypes_set_host_mountinfo(struct fstypes *f, const char *buf, size_t len)
{
	return set_host(f, table_parse(f, buf, len));
}

int fstypes_add_mountinfo_ns(struct fstypes *f, const char *buf, size_t len, uint64_t ns_ino,
			     bool with_points)
{
	struct fstypes_table *t = table_of(f, buf, len, ns_ino);

	if (!t)
		return f->timed_out ? -ETIME : -ENOMEM;
	if (table_keep(f, t) < 0)
		return -ENOMEM;
	if (with_points)
		f->self = t;
	return 0;
}

int fstypes_add_mountinfo(struct fstypes *f, const char *buf, size_t len, bool with_points)
{
	return fstypes_add_mountinfo_ns(f, buf, len, 0, with_points);
}

int fstypes_has_ns(const struct fstypes *f, uint64_t ns_ino)
{
	for (size_t i = 0; ns_ino && i < f->n_tables; i++)
		if (f->tables[i]->ns_ino == ns_ino)
			return f->tables[i]->capped ? -E2BIG : 1;
	return 0;
}

int fstypes_mount_excluded(struct fstypes *f, uint64_t mnt_id)
{
	const struct fstypes_judged *j;

	if (f->shm_known && mnt_id == f->shm_mnt_id)
		return fstypes_name_excluded(f, "tmpfs") ? 1 : 0;
	j = judged_get(f, mnt_id);
	if (j)
		return j->verdict;
	for (size_t i = 0; i < f->n_tables; i++) {
		const struct fstypes_table *t = f->tables[i];
		const struct mountinfo *m = table_get(t, mnt_id);

		if (!m)
			continue;
		if (t->capped) {
			judged_put(f, mnt_id, -E2BIG);
			return -E2BIG;
		}
		return mount_verdict(f, t, m, 0);
	}
	return -ENOENT;
}

/* The mount of our namespace that path lies on (its longest mount point prefix), or NULL. */
static const struct mountinfo *path_mount(const struct fstypes *f, const char *path)
{
	if (!f->self || path[0] != '/')
		return NULL;
	return table_place(f->self, path, NULL);
}

bool fstypes_path_excluded(struct fstypes *f, const char *path)
{
	const struct mountinfo *m = path_mount(f, path);

	return m && fstypes_mount_excluded(f, (uint64_t)m->mount_id) != 0;
}

uint64_t fstypes_path_mount(const struct fstypes *f, const char *path)
{
	const struct mountinfo *m = path_mount(f, path);

	return m ? (uint64_t)m->mount_id : UINT64_MAX;
}

/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "scan/engine.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "scan/cgcap.h"
#include "scan/cgroups.h"
#include "files/dircache.h"
#include "files/files.h"
#include "scan/registry.h"
#include "base/util.h"

struct config_ref {
	struct config *cfg;
	int refs;
};

struct scan_engine {
	struct collector_options opts;
	char *cgroupfs;
	char *procfs;
	struct pagecache pc;
	long page_size;
	struct fstypes fstypes; /* the rules: each scan has a copy with its own mount cache */
	struct dircache *dircache; /* under lock; NULL while a scan has it, or none is kept */

	pthread_mutex_t lock;
	struct config_ref *cfg;      /* under lock */
	uint64_t skipped[_SKIP_MAX]; /* cumulative; under lock */
	uint64_t capped[_SNAP_CAP_MAX]; /* cumulative; under lock */
	struct snap_cap_note *cap_note; /* the last scan's, to log only a change; under lock */
	uint64_t globs_capped;          /* cumulative; under lock */
	bool glob_cutting;              /* the last scan's glob cap cut a pattern; under lock */
	uint64_t mounts_capped[SNAP_MOUNT_CAPS]; /* cumulative; under lock */
	unsigned mounts_cap_bit; /* the mount caps that bit in the last scan; under lock */
};

static void config_ref_drop(struct config_ref *r)
{
	if (r && --r->refs == 0) {
		config_free(r->cfg);
		free(r);
	}
}

void scan_problem(struct collect_scan *scan, const char *fmt, ...)
{
	va_list ap;

	if (scan->snap->problem)
		return; /* the first one says most */
	va_start(ap, fmt);
	if (vasprintf(&scan->snap->problem, fmt, ap) < 0)
		scan->snap->problem = NULL;
	va_end(ap);
}

int scan_read_cgroup_file(struct collect_scan *scan, int dirfd, const struct snap_cgroup *cg,
			  const char *name, bool unsupported_is_absent, char **ret_buf,
			  size_t *ret_len)
{
	int r = read_file_at(dirfd, name, ret_buf, ret_len);

	if (r == -ENOENT || (r == -EOPNOTSUPP && unsupported_is_absent))
		return 0;
	if (r < 0) {
		scan_problem(scan, "reading %s/%s: %s", cg->name, name, strerror(-r));
		return r;
	}
	return 1;
}

int scan_parsed(struct collect_scan *scan, const struct snap_cgroup *cg, const char *name, int r)
{
	if (r < 0)
		scan_problem(scan, "parsing %s/%s: %s", cg->name, name, strerror(-r));
	return r;
}

bool scan_has_memory_controller(const struct collect_scan *scan)
{
	_cleanup_close_ int root = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len;

	if (scan->memory_v1)
		return true; /* the hierarchy is the memory controller's */
	root = open(scan->cgroupfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* no cgroup.controllers: not a v2 tree we can judge */
	if (root < 0 || read_file_at(root, "cgroup.controllers", &buf, &len) < 0)
		return true;
	for (char *save = NULL, *w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
		if (strcmp(w, "memory") == 0)
			return true;
	return false;
}

bool scan_has_psi(const struct collect_scan *scan)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int fd = -1;

	/* a kernel without CONFIG_PSI, or booted with psi=0, has no /proc/pressure */
	if (asprintf(&path, "%s/pressure/memory", scan->procfs) < 0)
		return true;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 || (errno != ENOENT && errno != EOPNOTSUPP);
}

const char *scan_memory_v2_unavailable(const struct collect_scan *scan)
{
	if (scan->memory_v1)
		return "cgroup_v1";
	return scan_has_memory_controller(scan) ? NULL : "no_memory_controller";
}

void scan_fail(struct collect_scan *scan, size_t idx)
{
	scan->snap->collectors[idx].success = false;
}

bool scan_active(const struct collect_scan *scan, const char *name, size_t *ret_idx)
{
	int i = registry_find(name);

	if (i < 0 || !scan->active[i])
		return false;
	*ret_idx = (size_t)i;
	return true;
}

void scan_file_counted(struct collect_scan *scan, const struct collect_file *f)
{
	/* once per file counted: the registry is asked only about the collectors taking part */
	for (size_t i = 0, n = registry_count(); i < n; i++) {
		const struct collector_def *def;

		if (!scan->active[i])
			continue;
		def = registry_get(i);
		if (def->file_counted)
			def->file_counted(scan->state[i], f);
	}
}

static double seconds_since(uint64_t start_ns)
{
	return (double)(files_now_ns() - start_ns) / 1e9;
}

struct walk {
	struct collect_scan *scan;
	struct cgcap *cap;
	size_t cap_cgroups;
};

/* The depth of a cgroup by its label: 0 for "/", 1 for "/a". */
static unsigned label_depth(const char *label)
{
	unsigned d = 0;

	if (label[1] == '\0')
		return 0;
	for (const char *p = label; *p; p++)
		d += *p == '/';
	return d;
}

/* The owner of a cgroup's directory; root's when it cannot be told (it is gone anyway). */
static uid_t dir_owner(int dirfd)
{
	struct stat st;

	return fstat(dirfd, &st) == 0 ? st.st_uid : 0;
}

/* Room for one more cgroup in the snapshot; returns it, zeroed but for its name, or NULL. */
static struct snap_cgroup *add_cgroup(struct walk *w, const char *label)
{
	struct snapshot *snap = w->scan->snap;
	struct snap_cgroup *cg;

	if (snap->n_cgroups == w->cap_cgroups) {
		size_t ncap = w->cap_cgroups ? w->cap_cgroups * 2 : 64;
		struct snap_cgroup *a = realloc(snap->cgroups, ncap * sizeof(*a));

		if (!a)
			return NULL;
		snap->cgroups = a;
		w->cap_cgroups = ncap;
	}
	cg = &snap->cgroups[snap->n_cgroups];
	*cg = (struct snap_cgroup){ .name = strdup(label) };
	if (!cg->name)
		return NULL;
	snap->n_cgroups++;
	return cg;
}

/* Runs every active collector over one cgroup: scan_cgroup (timed), then cgroup_done. */
static int visit_cgroup(int dirfd, const char *label, void *userdata)
{
	struct walk *w = userdata;
	struct collect_scan *scan = w->scan;
	struct snap_cgroup *cg;
	size_t n = registry_count();
	int r;

	r = cgcap_admit(w->cap, label_depth(label), dir_owner(dirfd));
	if (r != 0)
		return r;
	cg = add_cgroup(w, label);
	if (!cg)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct collector_def *def = registry_get(i);
		uint64_t t = files_now_ns();

		if (!scan->active[i] || !def->scan_cgroup)
			continue;
		r = def->scan_cgroup(scan, i, scan->state[i], dirfd, cg);
		scan->seconds[i] += seconds_since(t);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			scan_fail(scan, i);
	}
	for (size_t i = 0; i < n; i++) {
		const struct collector_def *def = registry_get(i);

		if (!scan->active[i] || !def->cgroup_done)
			continue;
		r = def->cgroup_done(scan, i, scan->state[i], cg);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			scan_fail(scan, i);
	}
	return 0;
}

/* scan_begin of every enabled collector, in registry order. */
static int scan_begin(struct collect_scan *scan, const struct collector_options *opts)
{
	for (size_t i = 0; i < registry_count(); i++) {
		const struct collector_def *def = registry_get(i);
		int r = 1;

		if (!opts->enable[i])
			continue;
		/* before scan_begin, which may already fail it */
		scan->snap->collectors[i] = (struct snap_collector){ .success = true };
		if (def->unavailable)
			scan->snap->collectors[i].unavailable = def->unavailable(scan);
		if (scan->snap->collectors[i].unavailable)
			continue; /* no success, no series: the reason says it */
		if (def->scan_begin)
			r = def->scan_begin(scan, i, &scan->state[i]);
		if (r < 0)
			return r;
		scan->active[i] = r > 0;
		scan->snap->collectors[i].enabled = r > 0;
		scan->snap->collectors[i].reported = r > 0 && def->reported;
	}
	return 0;
}

static void scan_end(struct collect_scan *scan)
{
	for (size_t i = 0; i < registry_count(); i++) {
		if (!scan->active[i])
			continue;
		if (registry_get(i)->scan_end)
			registry_get(i)->scan_end(scan, scan->state[i]);
		scan->snap->collectors[i].seconds = scan->seconds[i];
	}
}

/* A walk that could not be done fails every collector that takes part. */
static void fail_all(struct collect_scan *scan)
{
	for (size_t i = 0; i < registry_count(); i++)
		if (scan->active[i])
			scan_fail(scan, i);
}

/* The walk over the cgroup tree: -ENOMEM, else 0 with what failed in the snapshot. */
static int scan_walk(struct collect_scan *scan, struct cgcap *cap)
{
	struct walk w = { .scan = scan, .cap = cap };
	_cleanup_close_ int root = -1;
	int r;

	root = open(scan->cgroupfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		scan_problem(scan, "opening %s: %m", scan->cgroupfs);
		fail_all(scan);
		return 0;
	}
	r = cgroups_walk(root, visit_cgroup, &w);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		scan_problem(scan, "walking %s: %s", scan->cgroupfs, strerror(-r));
		fail_all(scan);
	}
	return 0;
}

static int count_cgroup(int dirfd, const char *label, void *userdata)
{
	return cgcap_count(userdata, label_depth(label), dir_owner(dirfd));
}

/*
 * The first pass of the caps (cgcap.h): the cgroups in the tree now, as far as the caps let
 * any be kept; then the plan. Returns the cgroups the scan will visit at most (0 when the tree
 * cannot be walked: scan_walk says why), or -ENOMEM.
 */
static ssize_t count_cgroups(const char *cgroupfs, struct cgcap *cap)
{
	_cleanup_close_ int root = open(cgroupfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (root >= 0 && cgroups_walk(root, count_cgroup, cap) == -ENOMEM)
		return -ENOMEM;
	cgcap_plan(cap);
	return (ssize_t)cgcap_planned(cap);
}

/* Which caps bit (NULL: none, or out of memory), and the counters they move. */
static struct snap_cap_note *cap_report(const struct scan_engine *c, const struct cgcap *cap,
					struct snapshot *snap)
{
	uid_t uids[16];
	size_t n = cgcap_owners_cut(cap, uids, ELEMENTSOF(uids)), used = 0;
	struct snap_cap_note *note;

	bool process = snap->process_capped[SNAP_PROCESS_CAP_FDS] ||
		       snap->process_capped[SNAP_PROCESS_CAP_MAPS];

	snap->capped[SNAP_CAP_NODE] = cgcap_node_cut(cap);
	snap->capped[SNAP_CAP_OWNER] = n > 0;
	if (!snap->capped[SNAP_CAP_NODE] && n == 0 && !process)
		return NULL;
	note = calloc(1, sizeof(*note));
	if (!note)
		return NULL;
	*note = (struct snap_cap_note){ .max_cgroups = c->opts.max_cgroups,
					.max_per_owner = c->opts.max_cgroups_per_owner,
					.node = snap->capped[SNAP_CAP_NODE], .owners_cut = n };
	memcpy(note->process, snap->process_capped, sizeof(note->process));
	for (size_t i = 0; i < n && i < ELEMENTSOF(uids); i++)
		used += (size_t)snprintf(note->uids + used, sizeof(note->uids) - used, "%s%u",
					 i ? "," : "", (unsigned)uids[i]);
	if (n > ELEMENTSOF(uids))
		snprintf(note->uids + used, sizeof(note->uids) - used, ",...");
	if (n == 0)
		snprintf(note->uids, sizeof(note->uids), "none");
	return note;
}

static int cgroup_cmp(const void *a, const void *b)
{
	const struct snap_cgroup *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* One scan. Always returns a snapshot unless memory runs out. */
static struct snapshot *scan_run(struct scan_engine *c, const struct config *cfg,
				  struct dircache *dircache)
{
	_cleanup_(snapshot_unrefp) struct snapshot *snap = registry_snapshot_new();
	_cleanup_(fstypes_scan_done) struct fstypes fstypes;
	struct collect_scan scan = {
		.cfg = cfg,
		.pc = &c->pc,
		.cgroupfs = c->cgroupfs,
		.memory_v1 = c->opts.memory_v1,
		.procfs = c->procfs,
		.page_size = c->page_size,
		.fstypes = &fstypes,
		.dircache = dircache,
		.snap = snap,
		.mincore_pages_left = c->pc.mincore_max_pages_per_scan
					      ? c->pc.mincore_max_pages_per_scan
					      : PAGECACHE_MINCORE_DEFAULT_MAX_PAGES_PER_SCAN,
	};
	_cleanup_(cgcap_freep) struct cgcap *cap = NULL;
	const struct cgcap_limits lim = { .max_cgroups = c->opts.max_cgroups,
					  .max_per_owner = c->opts.max_cgroups_per_owner };
	ssize_t planned;
	int r;

	fstypes_scan_init(&fstypes, &c->fstypes);
	if (!snap || cgcap_new(&lim, &cap) < 0)
		return NULL;
	planned = count_cgroups(c->cgroupfs, cap);
	if (planned < 0)
		return NULL;
	scan.n_cgroups = (size_t)planned;
	snap->abi = c->pc.abi;
	r = scan_begin(&scan, &c->opts);
	if (r == 0)
		r = scan_walk(&scan, cap);
	scan_end(&scan);
	if (r < 0)
		return NULL;
	snap->cap_note = cap_report(c, cap, snap);
	for (int i = 0; i < SNAP_MOUNT_CAPS; i++)
		snap->mounts_capped[i] = fstypes.capped[i];
	if (snap->n_cgroups > 1)
		qsort(snap->cgroups, snap->n_cgroups, sizeof(*snap->cgroups), cgroup_cmp);
	return TAKE_PTR(snap);
}

const char *scan_engine_unavailable(struct scan_engine *c, size_t idx)
{
	const struct collector_def *def = registry_get(idx);
	const struct collect_scan scan = { .pc = &c->pc, .cgroupfs = c->cgroupfs,
					   .memory_v1 = c->opts.memory_v1, .procfs = c->procfs };

	return def->unavailable ? def->unavailable(&scan) : NULL;
}

int scan_engine_new(const struct collector_options *opts, const struct pagecache *pc,
		  struct config *cfg, struct scan_engine **ret)
{
	struct scan_engine *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->opts = *opts;
	c->cgroupfs = strdup(opts->cgroupfs);
	c->procfs = strdup(opts->procfs);
	c->cfg = calloc(1, sizeof(*c->cfg));
	if (!c->cgroupfs || !c->procfs || !c->cfg) {
		free(c->cgroupfs);
		free(c->procfs);
		free(c->cfg);
		free(c);
		return -ENOMEM;
	}
	c->opts.cgroupfs = c->cgroupfs;
	c->opts.procfs = c->procfs;
	if (!c->opts.max_cgroups)
		c->opts.max_cgroups = SCAN_DEFAULT_MAX_CGROUPS;
	if (!c->opts.max_cgroups_per_owner)
		c->opts.max_cgroups_per_owner = SCAN_DEFAULT_MAX_CGROUPS_PER_OWNER;
	c->cfg->cfg = cfg;
	c->cfg->refs = 1;
	c->pc = *pc;
	c->page_size = sysconf(_SC_PAGESIZE);
	if (c->page_size <= 0)
		c->page_size = 4096;
	c->opts.fs_types_exclude = NULL;
	pthread_mutex_init(&c->lock, NULL);
	if (fstypes_init(&c->fstypes, opts->fs_types_exclude ? opts->fs_types_exclude
							     : FSTYPES_DEFAULT_EXCLUDE) < 0) {
		scan_engine_free(c); /* frees cfg too: it was handed over */
		return -EINVAL;
	}
	fstypes_set_limits(&c->fstypes, &opts->mounts);
	if (opts->keep_listings && dircache_new(DIRCACHE_MAX_BYTES, &c->dircache) < 0) {
		scan_engine_free(c);
		return -ENOMEM;
	}
	for (size_t i = 0; i < registry_count(); i++) {
		if (opts->enable[i] && registry_get(i)->setup && registry_get(i)->setup(opts) < 0) {
			scan_engine_free(c);
			return -ENOMEM;
		}
	}
	*ret = c;
	return 0;
}

void scan_engine_set_config(struct scan_engine *c, struct config *cfg)
{
	struct config_ref *n = calloc(1, sizeof(*n)), *old;

	if (!n) {
		config_free(cfg);
		return;
	}
	n->cfg = cfg;
	n->refs = 1;
	pthread_mutex_lock(&c->lock);
	old = c->cfg;
	c->cfg = n;
	config_ref_drop(old);
	pthread_mutex_unlock(&c->lock);
}

/* Under lock: keeps snap's cap note only when it differs from the last scan's (logged once). */
static void cap_note_changed(struct scan_engine *c, struct snapshot *snap)
{
	bool same = (!c->cap_note && !snap->cap_note) ||
		    (c->cap_note && snap->cap_note &&
		     memcmp(c->cap_note, snap->cap_note, sizeof(*c->cap_note)) == 0);

	free(c->cap_note);
	c->cap_note = snap->cap_note ? malloc(sizeof(*c->cap_note)) : NULL;
	if (c->cap_note)
		*c->cap_note = *snap->cap_note;
	if (same) {
		free(snap->cap_note);
		snap->cap_note = NULL;
	}
}

/* Under lock: the glob cap's counter, and its note kept only when it starts to cut (logged once). */
static void glob_note_changed(struct scan_engine *c, struct snapshot *snap)
{
	bool cutting = snap->globs_capped > 0;

	c->globs_capped += snap->globs_capped;
	snap->globs_capped = c->globs_capped;
	if (c->glob_cutting) {
		free(snap->glob_note);
		snap->glob_note = NULL;
	}
	c->glob_cutting = cutting;
}

/* Under lock: the mount caps' counters, and which of them began to bite (logged once). */
static void mounts_capped_add(struct scan_engine *c, struct snapshot *snap)
{
	const size_t lim[SNAP_MOUNT_CAPS] = { c->fstypes.lim.max_mounts, c->fstypes.lim.max_bytes,
					      c->fstypes.lim.max_layers };
	unsigned bit = 0;

	for (int i = 0; i < SNAP_MOUNT_CAPS; i++) {
		if (snap->mounts_capped[i])
			bit |= 1u << i;
		c->mounts_capped[i] += snap->mounts_capped[i];
		snap->mounts_capped[i] = c->mounts_capped[i];
		snap->mounts_cap_limits[i] = lim[i];
	}
	snap->mounts_cap_new = bit & ~c->mounts_cap_bit;
	c->mounts_cap_bit = bit;
}

int scan_engine_run(struct scan_engine *c, struct snapshot **ret)
{
	struct dircache *dircache; /* one scan at a time has it: a scan left behind keeps it */
	struct config_ref *cfg;
	struct snapshot *snap;

	pthread_mutex_lock(&c->lock);
	cfg = c->cfg;
	cfg->refs++;
	dircache = TAKE_PTR(c->dircache);
	pthread_mutex_unlock(&c->lock);

	if (dircache)
		dircache_begin_scan(dircache);
	snap = scan_run(c, cfg->cfg, dircache);
	if (dircache)
		dircache_end_scan(dircache);

	pthread_mutex_lock(&c->lock);
	config_ref_drop(cfg);
	if (!c->dircache)
		c->dircache = TAKE_PTR(dircache);
	if (snap) {
		for (int i = 0; i < _SKIP_MAX; i++) {
			c->skipped[i] += snap->skipped[i];
			snap->skipped[i] = c->skipped[i];
		}
		for (int i = 0; i < _SNAP_CAP_MAX; i++) {
			c->capped[i] += snap->capped[i];
			snap->capped[i] = c->capped[i];
		}
		cap_note_changed(c, snap);
		glob_note_changed(c, snap);
		mounts_capped_add(c, snap);
	}
	pthread_mutex_unlock(&c->lock);
	dircache_free(dircache); /* a newer scan's came back first */
	if (!snap)
		return -ENOMEM;
	*ret = snap;
	return 0;
}

double scan_engine_max_scan_seconds(struct scan_engine *c)
{
	double v;

	pthread_mutex_lock(&c->lock);
	v = c->cfg->cfg->max_scan_seconds;
	pthread_mutex_unlock(&c->lock);
	return v;
}

void scan_engine_free(struct scan_engine *c)
{
	if (!c)
		return;
	config_ref_drop(c->cfg);
	fstypes_done(&c->fstypes);
	dircache_free(c->dircache);
	free(c->cap_note);
	pthread_mutex_destroy(&c->lock);
	free(c->cgroupfs);
	free(c->procfs);
	free(c);
}
